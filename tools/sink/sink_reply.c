/*
 * sink_reply.c - the answers sluice-sink gives (sink_reply.h): a text or
 * JSON body with its status, a 429 with Retry-After and what refused it.
 * Each is one libmicrohttpd response, queued and released. Costs: a copy
 * of the body (MHD_RESPMEM_MUST_COPY) but for the fixed 429 text.
 */
#include "sink_reply.h"

#include <string.h>

/* sink_reply queues a response; `extra` is the value of Retry-After (for a 429)
 * or of Allow (for a 405), else NULL. */
enum MHD_Result sink_reply(struct MHD_Connection *c, unsigned status, const char *type, const char *text,
                           const char *extra)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    enum MHD_Result ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (ok == MHD_YES && extra && status == MHD_HTTP_TOO_MANY_REQUESTS)
        ok = MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, extra);
    if (ok == MHD_YES && extra && status == MHD_HTTP_METHOD_NOT_ALLOWED)
        ok = MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, extra);
    if (ok == MHD_YES)
        ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

/* sink_reply_429 queues a 429 with its Retry-After and, when scope is not NULL,
 * X-Limit-Scope and (when key_text is not NULL) X-Limit-Key. */
enum MHD_Result sink_reply_429(struct MHD_Connection *c, const char *retry, const char *scope,
                                    const char *key_text)
{
    static const char text[] = "throttled\n";
    struct MHD_Response *r = MHD_create_response_from_buffer(sizeof text - 1, (void *)text, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    enum MHD_Result ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
    if (ok == MHD_YES)
        ok = MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, retry);
    if (ok == MHD_YES && scope)
        ok = MHD_add_response_header(r, "X-Limit-Scope", scope);
    if (ok == MHD_YES && key_text)
        ok = MHD_add_response_header(r, "X-Limit-Key", key_text);
    if (ok == MHD_YES)
        ok = MHD_queue_response(c, MHD_HTTP_TOO_MANY_REQUESTS, r);
    MHD_destroy_response(r);
    return ok;
}

enum MHD_Result sink_reply_json(struct MHD_Connection *c, unsigned status, const char *json)
{
    return sink_reply(c, status, "application/json", json, NULL);
}
