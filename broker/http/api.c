/*
 * api.c - the JSON API under /api/v1/: who may ask, and what each route
 * answers (proto/HTTP.md is its reference).
 *
 * Every API request passes, in order (gate): the Host check (a loopback
 * server answers only to loopback names, against DNS rebinding); the
 * cross-site check (an Origin other than this server's, or a Sec-Fetch-Site
 * other than same-origin or none: 403); for a write (POST, PUT, DELETE) a
 * JSON body (415 otherwise); the session (401 without one, with --auth);
 * for a write the session's X-CSRF-Token (403). They need only the
 * headers: http.c runs them as soon as the headers are in, so a refused
 * write's body is never read. Then the route:
 *
 *   POST /login, /logout; GET /session     session.c
 *   GET /overview, /events, /history       the ticker's (live.c): from the
 *                                          snapshot, never the loop
 *   GET /stats                             STATS, through the loop
 *   POST /levels/{level}/messages          PUT, through the loop: answered
 *                                          {"id": N} after the durable commit
 *   the admin commands                     route.c's paths, through the loop
 *   GET /                                  the routes themselves
 *
 * What goes through the loop is a protocol message with the session's
 * principal: the loop's decoder, auth check and handlers answer it as they
 * answer a ZeroMQ client, and the answer becomes JSON by the model
 * (proto_json.c). Reads from the snapshot need the role STATS needs
 * (proto_role_allows, the rule auth.c applies).
 *
 * Errors are {"error": {"code": "SL_...", "message": ...}} with the status
 * reply_status_of gives (http.c).
 */
#include "api.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "live.h"
#include "log.h"
#include "proto_json.h"
#include "route.h"
#include "session.h"

#define API_PREFIX "/api/v1"
#define QUERY_ARENA 16384

/* ---- who may ask ---- */

/* host_ok: a server on loopback answers only to a loopback Host (a page
 * whose name was rebound to 127.0.0.1 sends its own name). */
static int host_ok(hreq *r)
{
    if (strncmp(r->h->host, "127.", 4))
        return 1;
    const char *host = http_header(r, "Host");
    if (!host)
        return 1; /* HTTP/1.0 without Host: not a browser */
    size_t n = strcspn(host, ":");
    if (host[0] == '[')
        return !strncmp(host, "[::1]", 5);
    return (n == 9 && !strncasecmp(host, "localhost", 9)) || (n >= 4 && !strncmp(host, "127.", 4));
}

static int cross_site(hreq *r)
{
    const char *site = http_header(r, "Sec-Fetch-Site");
    if (site && strcmp(site, "same-origin") && strcmp(site, "none"))
        return 1;
    const char *origin = http_header(r, "Origin"), *host = http_header(r, "Host");
    if (!origin)
        return 0;
    const char *scheme = r->h->tls ? "https://" : "http://";
    size_t sl = strlen(scheme);
    return !host || strncmp(origin, scheme, sl) || strcmp(origin + sl, host);
}

static int json_body(hreq *r)
{
    const char *ct = http_header(r, "Content-Type");
    return ct && !strncasecmp(ct, "application/json", 16) && (ct[16] == '\0' || ct[16] == ';' || ct[16] == ' ');
}

static int may_read(const hreq *r)
{
    return proto_role_allows(r->role, proto_msg_role(PROTO_STATS));
}

/* ---- answers ---- */

static enum MHD_Result json_out(hreq *r, proto_wbuf *o, int rc)
{
    if (rc != SL_OK) {
        proto_wbuf_free(o);
        return reply_error(r, SL_ENOMEM, "out of memory");
    }
    return reply_json(r, MHD_HTTP_OK, o->data, o->len);
}

/* answer turns the loop's answer into the response: ERROR as an error,
 * PUT_OK as {"id": N}, anything else as its fields by the model. */
static enum MHD_Result answer(hreq *r, int rc, const void *reply, size_t len)
{
    proto_msg m;
    const char *why = NULL;
    if (rc != SL_OK)
        return reply_error(r, rc, "%s", rc == SL_ETIMEDOUT ? "the broker did not answer in time" : proto_strerror(rc));
    if (proto_decode(reply, len, &m, &why) != SL_OK)
        return reply_error(r, SL_EIO, "the broker's answer does not decode: %s", why ? why : "?");
    if (m.type == PROTO_ERROR)
        return reply_error(r, (int)m.code, "%.*s", (int)m.msg.len, m.msg.ptr);
    proto_wbuf o = {0};
    if (m.type == PROTO_PUT_OK)
        return json_out(r, &o, proto_json_printf(&o, "{\"id\": %llu%s}", (unsigned long long)m.id,
                                                 (m.present & PF(duplicate)) && m.duplicate ? ", \"duplicate\": true" : ""));
    return json_out(r, &o, proto_json_msg(&o, &m, 0));
}

/* ---- arguments ---- */

/* level_number resolves a level's name or number from the snapshot. */
static int level_number(hreq *r, const char *text, size_t len, uint64_t *out)
{
    char names[PROTO_MAX_LEVELS][PROTO_MAX_NAME + 1];
    unsigned n = http_level_names(r->h, names);
    for (unsigned l = 0; l < n; l++)
        if (strlen(names[l]) == len && !memcmp(names[l], text, len))
            return *out = l, SL_OK;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9' || v > 1000)
            return SL_ENOLEVEL;
        v = v * 10 + (uint64_t)(text[i] - '0');
    }
    return len ? (*out = v, SL_OK) : SL_ENOLEVEL;
}

typedef struct query {
    hreq *r;
    proto_msg *m;
    proto_mask allowed;
    char *arena;
    size_t used;
    int rc;
    char why[256];
} query;

static enum MHD_Result query_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    query *q = cls;
    char k[PROTO_MAX_NAME + 1];
    (void)kind;
    long kl = route_unescape(key, strlen(key), k, sizeof k - 1, 1);
    int f = -1;
    if (kl > 0) {
        k[kl] = '\0';
        for (int i = 0; i < PROTO_F_COUNT_ && f < 0; i++)
            if (!strcmp(proto_field_key((proto_field)i), k))
                f = i;
    }
    if (f < 0 || !(q->allowed & ((proto_mask)1 << f))) {
        snprintf(q->why, sizeof q->why, "this request takes no argument '%.64s'", kl > 0 ? k : key);
        q->rc = SL_EINVAL;
        return MHD_NO;
    }
    value = value ? value : "";
    char *v = q->arena + q->used;
    long vl = route_unescape(value, strlen(value), v, QUERY_ARENA - q->used - 1, 1);
    if (vl < 0) {
        snprintf(q->why, sizeof q->why, "'%s' is not a well-escaped value, or the query is too long", k);
        q->rc = SL_EINVAL;
        return MHD_NO;
    }
    v[vl] = '\0'; /* strtoull stops here */
    q->used += (size_t)vl + 1;
    proto_field pf = (proto_field)f;
    uint64_t n;
    if (!strcmp(k, "level") || !strcmp(k, "to_level")) {
        if (level_number(q->r, v, (size_t)vl, &n) != SL_OK) {
            snprintf(q->why, sizeof q->why, "'%s': no level named %.*s", k, (int)(vl > 64 ? 64 : vl), v);
            q->rc = SL_ENOLEVEL;
            return MHD_NO;
        }
        proto_set_u64(q->m, pf, n);
    } else if (proto_field_type(pf) == PROTO_T_U64) {
        char *end;
        if (vl == 0 || v[0] < '0' || v[0] > '9' || (n = strtoull(v, &end, 10), end != v + vl)) {
            snprintf(q->why, sizeof q->why, "'%s' must be a whole number", k);
            q->rc = SL_EINVAL;
            return MHD_NO;
        }
        proto_set_u64(q->m, pf, n);
    } else if (proto_field_type(pf) == PROTO_T_STR) {
        proto_set_str(q->m, pf, v, (size_t)vl);
    } else {
        snprintf(q->why, sizeof q->why, "'%s' is given in a JSON body (POST), not in the query", k);
        q->rc = SL_EINVAL;
        return MHD_NO;
    }
    q->m->present |= (proto_mask)1 << f;
    return MHD_YES;
}

/* body_args reads r's JSON body into m: the fields in allowed. *arena is
 * where its strings live (the caller frees it after the call). */
static int body_args(hreq *r, proto_msg *m, proto_mask allowed, char **arena, char *why, size_t why_len)
{
    char names[PROTO_MAX_LEVELS][PROTO_MAX_NAME + 1];
    const char *ptrs[PROTO_MAX_LEVELS];
    proto_json_names nm = {ptrs, http_level_names(r->h, names)};
    for (unsigned l = 0; l < nm.nlevels; l++)
        ptrs[l] = names[l];
    proto_json_doc *doc = malloc(sizeof *doc);
    *arena = malloc(r->body_len + 1);
    if (!doc || !*arena) {
        free(doc);
        snprintf(why, why_len, "out of memory");
        return SL_ENOMEM;
    }
    int rc = proto_json_parse(r->body ? r->body : "", r->body_len, doc, why, why_len);
    if (rc == SL_OK)
        rc = proto_json_read(doc, 0, allowed, &nm, m, *arena, r->body_len + 1, why, why_len);
    free(doc);
    return rc;
}

/* ---- routes ---- */

static enum MHD_Result admin(hreq *r, const route_hit *hit)
{
    proto_mask req, opt;
    char why[512] = "", *arena = NULL;
    proto_cmd_def(hit->cmd, &req, &opt, NULL, NULL);
    proto_mask allowed = (req | opt) & ~(PF(op) | PF(seq) | PF(cmd));
    if (hit->get ? r->method != HM_GET && r->method != HM_HEAD : r->method != HM_POST)
        return reply_fail(r, MHD_HTTP_METHOD_NOT_ALLOWED, SL_EINVAL, "%s takes %s", proto_cmd_name(hit->cmd),
                         hit->get ? "GET" : "POST with a JSON body");
    proto_msg *m = malloc(sizeof *m);
    if (!m)
        return reply_error(r, SL_ENOMEM, "out of memory");
    proto_init(m, PROTO_ADMIN);
    const char *name = proto_cmd_name(hit->cmd);
    proto_set_str(m, PROTO_F_cmd, name, strlen(name));
    if (hit->key < PROTO_F_COUNT_)
        allowed &= ~((proto_mask)1 << hit->key); /* the path names it */
    int rc;
    if (hit->get) {
        query q = {.r = r, .m = m, .allowed = allowed, .arena = malloc(QUERY_ARENA)};
        arena = q.arena;
        rc = arena ? SL_OK : SL_ENOMEM;
        if (rc == SL_OK)
            MHD_get_connection_values(r->c, MHD_GET_ARGUMENT_KIND, query_arg, &q);
        if (rc == SL_OK && (rc = q.rc) != SL_OK)
            snprintf(why, sizeof why, "%s", q.why);
    } else {
        rc = body_args(r, m, allowed, &arena, why, sizeof why);
    }
    if (rc == SL_OK && hit->key < PROTO_F_COUNT_) {
        if (hit->key == PROTO_F_level) {
            uint64_t l;
            if ((rc = level_number(r, hit->key_text, hit->key_len, &l)) != SL_OK)
                snprintf(why, sizeof why, "no level named %.64s", hit->key_text);
            else
                proto_set(m, level, l);
        } else {
            proto_set_str(m, hit->key, hit->key_text, hit->key_len);
        }
    }
    enum MHD_Result res = rc != SL_OK ? reply_error(r, rc, "%s", why) : call_loop(r, m, answer);
    free(arena);
    free(m);
    return res;
}

static enum MHD_Result publish(hreq *r, const char *level, size_t level_len)
{
    proto_mask req, opt;
    char why[512] = "", *arena = NULL, lv[PROTO_MAX_NAME * 3 + 1];
    uint64_t l;
    if (r->method != HM_POST)
        return reply_fail(r, MHD_HTTP_METHOD_NOT_ALLOWED, SL_EINVAL, "a publish is a POST with a JSON body");
    long n = route_unescape(level, level_len, lv, sizeof lv - 1, 0);
    if (n <= 0 || level_number(r, lv, (size_t)n, &l) != SL_OK)
        return reply_error(r, SL_ENOLEVEL, "no level named %.*s", n > 0 ? (int)(n > 64 ? 64 : n) : 0, lv);
    proto_msg *m = malloc(sizeof *m);
    if (!m)
        return reply_error(r, SL_ENOMEM, "out of memory");
    proto_init(m, PROTO_PUT);
    proto_fields_of(PROTO_PUT, &req, &opt);
    int rc = body_args(r, m, (req | opt) & ~(PF(seq) | PF(level)), &arena, why, sizeof why);
    if (rc == SL_OK && !(m->present & PF(body))) {
        rc = SL_EINVAL;
        snprintf(why, sizeof why, "a message needs \"body\" (text) or \"body_base64\"");
    }
    if (rc == SL_OK && (m->present & PF(headers))) /* refused here with its reason, as the loop would */
        rc = proto_hdrs_explain(&m->headers, why, sizeof why);
    proto_set(m, level, l);
    enum MHD_Result res = rc != SL_OK ? reply_error(r, rc, "%s", why) : call_loop(r, m, answer);
    free(arena);
    free(m);
    return res;
}

static enum MHD_Result session_json(hreq *r)
{
    proto_wbuf o = {0};
    int rc = proto_json_raw(&o, "{\"principal\": ");
    if (rc == SL_OK)
        rc = proto_json_str(&o, r->principal, strlen(r->principal));
    if (rc == SL_OK)
        rc = proto_json_printf(&o, ", \"role\": \"%s\", \"csrf\": \"%s\", \"auth\": %s, \"may\": {\"read\": %s, "
                               "\"publish\": %s, \"change\": %s, \"bodies\": %s}}",
                               proto_role_name(r->role), r->csrf, r->h->cfg.auth ? "true" : "false",
                               may_read(r) ? "true" : "false",
                               proto_role_allows(r->role, proto_msg_role(PROTO_PUT)) ? "true" : "false",
                               proto_role_allows(r->role, PROTO_ROLE_ADMIN) ? "true" : "false",
                               proto_role_allows(r->role, proto_cmd_role(PROTO_CMD_dead_peek)) ? "true" : "false");
    char names[PROTO_MAX_LEVELS][PROTO_MAX_NAME + 1]; /* as WELCOME gives them to any principal */
    unsigned n = http_level_names(r->h, names);
    if (rc == SL_OK) {
        o.len--; /* reopen the object */
        rc = proto_json_raw(&o, ", \"levels\": [");
    }
    for (unsigned l = 0; l < n && rc == SL_OK; l++)
        if ((rc = proto_json_raw(&o, l ? ", " : "")) == SL_OK)
            rc = proto_json_str(&o, names[l], strlen(names[l]));
    if (rc == SL_OK)
        rc = proto_json_raw(&o, "]}");
    return json_out(r, &o, rc);
}

static enum MHD_Result login(hreq *r)
{
    char why[256];
    char token[HTTP_TOKEN_CHARS + 8];
    size_t len = 0;
    unsigned retry = 0;
    if (r->method != HM_POST)
        return reply_fail(r, MHD_HTTP_METHOD_NOT_ALLOWED, SL_EINVAL, "log in with POST {\"token\": TOKEN}");
    proto_json_doc *doc = malloc(sizeof *doc);
    if (!doc)
        return reply_error(r, SL_ENOMEM, "out of memory");
    int rc = proto_json_parse(r->body ? r->body : "", r->body_len, doc, why, sizeof why);
    int t = rc == SL_OK ? proto_json_get(doc, 0, "token") : -1;
    if (rc == SL_OK && (t < 0 || proto_json_string(doc, t, token, sizeof token, &len) != SL_OK)) {
        rc = SL_EINVAL;
        snprintf(why, sizeof why, "log in with {\"token\": TOKEN}, the TOKEN of `sluice web login`'s link");
    }
    free(doc);
    if (rc != SL_OK)
        return reply_error(r, rc, "%s", why);
    if (!r->h->cfg.auth) {
        session_who(r);
        return session_json(r);
    }
    rc = session_login(r, token, len, &retry);
    if (rc == SL_ETHROTTLED) {
        char after[16];
        snprintf(after, sizeof after, "%u", retry);
        r->retry_after = retry;
        return reply_error(r, rc, "too many logins from this address; retry in %s s", after);
    }
    if (rc != SL_OK)
        return reply_error(r, rc, "%s", rc == SL_EPERM ? "this login link is unknown, used or expired: run "
                                                       "`sluice web login` for a new one" : proto_strerror(rc));
    return session_json(r);
}

static enum MHD_Result routes(hreq *r)
{
    proto_wbuf o = {0};
    static const char *const fixed[][3] = {
        {"POST", "/login", "any"}, {"POST", "/logout", "any"}, {"GET", "/session", "any"},
        {"GET", "/overview", "monitor"}, {"GET", "/events", "monitor"}, {"GET", "/history", "monitor"},
        {"GET", "/stats", "monitor"}, {"POST", "/levels/{level}/messages", "producer"}};
    int rc = proto_json_raw(&o, "{\"routes\": [");
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] && rc == SL_OK; i++)
        rc = proto_json_printf(&o, "%s{\"method\": \"%s\", \"path\": \"" API_PREFIX "%s\", \"role\": \"%s\"}",
                               i ? ", " : "", fixed[i][0], fixed[i][1], fixed[i][2]);
    for (int c = 0; c < PROTO_CMD_COUNT_ && rc == SL_OK; c++) {
        char path[128];
        int get = route_path((proto_cmd)c, path, sizeof path);
        if (get >= 0)
            rc = proto_json_printf(&o, ", {\"method\": \"%s\", \"path\": \"" API_PREFIX "%s\", \"command\": \"%s\", "
                                   "\"role\": \"%s\"}", get ? "GET" : "POST", path, proto_cmd_name((proto_cmd)c),
                                   proto_role_name(proto_cmd_role((proto_cmd)c)));
    }
    if (rc == SL_OK)
        rc = proto_json_raw(&o, "]}");
    return json_out(r, &o, rc);
}

/* reads answers the routes served from the snapshot; -1 when p is none. */
static int reads(hreq *r, const char *p, enum MHD_Result *res)
{
    int overview = !strcmp(p, "/overview"), events = !strcmp(p, "/events"), history = !strcmp(p, "/history");
    if (!overview && !events && !history)
        return -1;
    if (r->method != HM_GET && r->method != HM_HEAD)
        *res = reply_fail(r, MHD_HTTP_METHOD_NOT_ALLOWED, SL_EINVAL, "%s takes GET", p);
    else if (!may_read(r))
        *res = reply_error(r, SL_EPERM, "%s is not permitted for %s (role %s; it needs monitor)", p, r->principal,
                          proto_role_name(r->role));
    else if (events)
        *res = live_stream(r);
    else if (overview) {
        size_t len = 0;
        char *json = live_overview(r->h, &len);
        if (!json)
            r->retry_after = 1;
        *res = json ? reply_json(r, MHD_HTTP_OK, json, len)
                    : reply_fail(r, MHD_HTTP_SERVICE_UNAVAILABLE, SL_ESTATE,
                                "the broker's first figures are not in yet; retry in a second");
    } else {
        const char *span = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "span");
        proto_wbuf o = {0};
        if (span && strcmp(span, "15m") && strcmp(span, "24h"))
            *res = reply_error(r, SL_EINVAL, "span is 15m (a point a second) or 24h (a point a minute)");
        else
            *res = json_out(r, &o, live_history(r->h, span && !strcmp(span, "24h"), &o));
    }
    return 0;
}

/* gate applies the checks every API request passes, in order, and answers
 * a refusal (returns 1 with *res set); 0 lets r through to its route. They
 * need only the headers: http.c runs them as soon as those are in, before a
 * body is read, and again with the whole request. */
static int gate(hreq *r, enum MHD_Result *res)
{
    const char *p = r->path + 7;
    int write = r->method == HM_POST || r->method == HM_PUT || r->method == HM_DELETE;
    if (strncmp(r->path, API_PREFIX, 7) || (r->path[7] && r->path[7] != '/'))
        *res = reply_error(r, SL_ENOTFOUND, "the API is under " API_PREFIX "/");
    else if (!host_ok(r))
        *res = reply_fail(r, MHD_HTTP_FORBIDDEN, SL_EPERM, "this server answers to a loopback name only");
    else if (cross_site(r))
        *res = reply_fail(r, MHD_HTTP_FORBIDDEN, SL_EPERM, "a request from another site is refused");
    else if (write && !json_body(r))
        *res = reply_fail(r, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, SL_EINVAL,
                          "a write takes a JSON body (Content-Type: application/json)");
    else if (!strcmp(p, "/login") || !*p || !strcmp(p, "/"))
        return 0; /* before any session */
    else if (!session_who(r))
        *res = reply_error(r, SL_EPERM, "no session: open the link `sluice web login` prints");
    else if (write && !session_csrf_ok(r))
        *res = reply_fail(r, MHD_HTTP_FORBIDDEN, SL_EPERM, "a write needs its session's X-CSRF-Token header");
    else
        return 0;
    return 1;
}

int api_early(hreq *r, enum MHD_Result *res)
{
    return gate(r, res);
}

enum MHD_Result api_route(hreq *r)
{
    const char *p = r->path + 7;
    enum MHD_Result res;
    if (gate(r, &res))
        return res;
    if (!strcmp(p, "/login"))
        return login(r);
    if (!*p || !strcmp(p, "/"))
        return routes(r);
    if (!strcmp(p, "/logout")) {
        if (r->method != HM_POST)
            return reply_fail(r, MHD_HTTP_METHOD_NOT_ALLOWED, SL_EINVAL, "log out with POST");
        session_logout(r);
        return reply_static(r, MHD_HTTP_OK, "application/json", "{}\n", 3);
    }
    if (!strcmp(p, "/session"))
        return r->method == HM_GET || r->method == HM_HEAD
                   ? session_json(r)
                   : reply_fail(r, MHD_HTTP_METHOD_NOT_ALLOWED, SL_EINVAL, "/session takes GET");
    if (reads(r, p, &res) == 0)
        return res;
    if (!strcmp(p, "/stats")) {
        if (r->method != HM_GET && r->method != HM_HEAD)
            return reply_fail(r, MHD_HTTP_METHOD_NOT_ALLOWED, SL_EINVAL, "/stats takes GET");
        proto_msg *m = malloc(sizeof *m);
        if (!m)
            return reply_error(r, SL_ENOMEM, "out of memory");
        proto_init(m, PROTO_STATS);
        res = call_loop(r, m, answer);
        free(m);
        return res;
    }
    size_t n = strlen(p);
    if (!strncmp(p, "/levels/", 8) && n > 17 && !strcmp(p + n - 9, "/messages") && !memchr(p + 8, '/', n - 17))
        return publish(r, p + 8, n - 17);
    route_hit hit;
    if (route_of(p, &hit))
        return admin(r, &hit);
    return reply_error(r, SL_ENOTFOUND, "no route %s; GET " API_PREFIX "/ lists them", p);
}
