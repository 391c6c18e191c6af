/*
 * reply.c - how the server answers: the security headers every response
 * carries, the session's cookie and a Retry-After when there is one, and
 * errors as one JSON object whose status fits the error's code.
 *
 * The headers: a Content-Security-Policy that allows scripts, styles,
 * images and connections from this origin only and nothing inline (the
 * console is one page, one ES module, one style sheet), nosniff, no
 * referrer, no framing, same-origin opener and resource policies, HSTS over
 * HTTPS, and never a CORS header. API answers are not cached; the console's
 * files are revalidated.
 *
 * Statuses: a client's mistake is a 4xx, the broker's state a 503 (or 507,
 * 504), and only the broker's own failure (SL_EIO, SL_ECORRUPT) a 500.
 *
 * Runs on libmicrohttpd's thread. Costs: a few header copies per response.
 */
#include "http_int.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "assets.h"
#include "session.h"

/* The headers of every response. The console is one page, one ES module
 * and one style sheet from this origin: nothing inline, nothing from
 * elsewhere. */
static void secure(http *h, struct MHD_Response *rs)
{
    MHD_add_response_header(rs, "Content-Security-Policy",
                            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                            "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    MHD_add_response_header(rs, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(rs, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(rs, "X-Frame-Options", "DENY");
    MHD_add_response_header(rs, "Cross-Origin-Opener-Policy", "same-origin");
    MHD_add_response_header(rs, "Cross-Origin-Resource-Policy", "same-origin");
    if (h->tls)
        MHD_add_response_header(rs, "Strict-Transport-Security", "max-age=31536000");
}

enum MHD_Result reply_queue(hreq *r, unsigned status, const char *ctype, struct MHD_Response *rs)
{
    if (!rs)
        return MHD_NO;
    secure(r->h, rs);
    if (ctype)
        MHD_add_response_header(rs, "Content-Type", ctype);
    MHD_add_response_header(rs, "Cache-Control", assets_find(r->path) ? "no-cache" : "no-store");
    if (r->retry_after) {
        char after[16];
        snprintf(after, sizeof after, "%u", r->retry_after);
        MHD_add_response_header(rs, "Retry-After", after);
    }
    session_headers(r, rs);
    r->handled = 1;
    enum MHD_Result rc = MHD_queue_response(r->c, status, rs);
    MHD_destroy_response(rs);
    return rc;
}

enum MHD_Result reply_static(hreq *r, unsigned status, const char *ctype, const void *body, size_t len)
{
    return reply_queue(r, status, ctype, MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_PERSISTENT));
}

enum MHD_Result reply_free(hreq *r, unsigned status, const char *ctype, char *body, size_t len)
{
    struct MHD_Response *rs = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!rs)
        free(body);
    return reply_queue(r, status, ctype, rs);
}

enum MHD_Result reply_json(hreq *r, unsigned status, char *json, size_t len)
{
    if (!json)
        return reply_static(r, MHD_HTTP_SERVICE_UNAVAILABLE, "application/json",
                          "{\"error\": {\"code\": \"SL_ENOMEM\", \"message\": \"out of memory\"}}\n", 61);
    return reply_free(r, status, "application/json", json, len);
}

unsigned reply_status_of(int code)
{
    switch (code) {
    case SL_OK: return MHD_HTTP_OK;
    case SL_EINVAL: case SL_EPROTO: case SL_EVERSION: return MHD_HTTP_BAD_REQUEST;
    case SL_ETOOBIG: return MHD_HTTP_CONTENT_TOO_LARGE;
    case SL_ENOSPC: return MHD_HTTP_INSUFFICIENT_STORAGE;
    case SL_EFULL: case SL_ETHROTTLED: return MHD_HTTP_TOO_MANY_REQUESTS;
    case SL_ESTALE: case SL_ESTATE: return MHD_HTTP_CONFLICT;
    case SL_ENOLEVEL: case SL_ENOTFOUND: case SL_EUNKNOWN: return MHD_HTTP_NOT_FOUND;
    case SL_ESHUTDOWN: case SL_ECONNECT: case SL_ENOMEM: return MHD_HTTP_SERVICE_UNAVAILABLE;
    case SL_ETIMEDOUT: return MHD_HTTP_GATEWAY_TIMEOUT;
    case SL_EPERM: return MHD_HTTP_FORBIDDEN;
    default: return MHD_HTTP_INTERNAL_SERVER_ERROR; /* SL_EIO, SL_ECORRUPT: the broker's own failure */
    }
}

/* error_object answers {"error": {"code", "message"}} with status. */
static enum MHD_Result error_object(hreq *r, unsigned status, int code, const char *text)
{
    proto_wbuf o = {0};
    int ok = proto_json_raw(&o, "{\"error\": {\"code\": ") == SL_OK &&
             proto_json_str(&o, proto_errname(code), strlen(proto_errname(code))) == SL_OK &&
             proto_json_raw(&o, ", \"message\": ") == SL_OK && proto_json_str(&o, text, strlen(text)) == SL_OK &&
             proto_json_raw(&o, "}}\n") == SL_OK;
    if (!ok) {
        proto_wbuf_free(&o);
        return reply_json(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, 0);
    }
    if (code == SL_ENOSPC && !r->retry_after)
        r->retry_after = 1;
    return reply_json(r, status, o.data, o.len);
}

enum MHD_Result reply_error(hreq *r, int code, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return error_object(r, code == SL_EPERM && !r->authed ? MHD_HTTP_UNAUTHORIZED : reply_status_of(code), code, text);
}

enum MHD_Result reply_fail(hreq *r, unsigned status, int code, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return error_object(r, status, code, text);
}

