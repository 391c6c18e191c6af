/*
 * test_http_api.c - the JSON API of sluiced --http, over libcurl as any
 * HTTP client would speak it: logins from `sluice web login`'s tokens (once
 * each, rate limited), sessions that end idle, at their ttl and when their
 * key leaves the auth file; every write route refuses a missing or wrong
 * CSRF token, a cross-site request, a body that is not JSON and a role
 * without the right, and changes nothing then; the roles as on ZeroMQ;
 * publish over HTTP (confirmed after the durable commit: it survives kill
 * -9 at once); dead letters with a dry run; find by id; the open console
 * without --auth; HTTPS with a certificate; an address beyond loopback
 * without TLS refused.
 */
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "sluice.h"
#include "th_http.h"

/* ---- the rig: a broker with CURVE, principals and --http ---- */

enum { K_ADMIN, K_MONITOR, K_PRODUCER, K_COUNT };
static const char *const roles[K_COUNT] = {"admin", "monitor", "producer"};

typedef struct rig {
    th_broker b;
    char server_pub[SL_KEY_BYTES], server_sec[SL_KEY_BYTES];
    char pub[K_COUNT][SL_KEY_BYTES], sec[K_COUNT][SL_KEY_BYTES];
    char auth_path[300], key_path[300];
    unsigned port;
    int tls;
} rig;

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

/* auth_write lists every principal but without (-1: none). */
static void auth_write(rig *r, int without)
{
    char text[2048] = "";
    for (int i = 0; i < K_COUNT; i++)
        if (i != without)
            snprintf(text + strlen(text), sizeof text - strlen(text), "%s %s %s\n", roles[i], roles[i], r->pub[i]);
    write_text(r->auth_path, text);
}

/* rig_new starts a broker with auth (or without, auth 0) and --http, plus
 * extra arguments (NULL-terminated, may be NULL). */
static rig *rig_new(int auth, const char *const *extra)
{
    rig *r = calloc(1, sizeof *r);
    assert_non_null(r);
    assert_int_equal(th_broker_init(&r->b, NULL), 0);
    int n = 0;
    r->b.extra[n++] = "--http";
    r->b.extra[n++] = "127.0.0.1:0";
    if (auth) {
        char text[300];
        assert_int_equal(sl_keygen(r->server_pub, r->server_sec), SL_OK);
        for (int i = 0; i < K_COUNT; i++)
            assert_int_equal(sl_keygen(r->pub[i], r->sec[i]), SL_OK);
        snprintf(r->key_path, sizeof r->key_path, "%s/broker.key", r->b.dir);
        snprintf(r->auth_path, sizeof r->auth_path, "%s/auth.txt", r->b.dir);
        snprintf(text, sizeof text, "public = %s\nsecret = %s\n", r->server_pub, r->server_sec);
        write_text(r->key_path, text);
        chmod(r->key_path, 0600);
        auth_write(r, -1);
        r->b.extra[n++] = "--curve-secret";
        r->b.extra[n++] = r->key_path;
        r->b.extra[n++] = "--auth";
        r->b.extra[n++] = r->auth_path;
    }
    for (int i = 0; extra && extra[i]; i++)
        r->b.extra[n++] = extra[i];
    for (int i = 0; i < n; i++)
        r->tls |= !strcmp(r->b.extra[i], "--http-cert");
    assert_int_equal(th_broker_start(&r->b), 0);
    r->port = th_http_port(&r->b);
    assert_true(r->port > 0);
    return r;
}

static void rig_destroy(rig **r)
{
    if ((*r)->b.pid)
        assert_int_equal(th_broker_stop(&(*r)->b), 0);
    th_broker_fini(&(*r)->b);
    free(*r);
    *r = NULL;
}

/* client_as connects with principal k's keys (-1: none). */
static sl_client *client_as(const rig *r, int k)
{
    sl_client *c = NULL;
    sl_options o = {.timeout_ms = 5000, .heartbeat_ms = 200};
    if (k >= 0)
        o.server_key = r->server_pub, o.public_key = r->pub[k], o.secret_key = r->sec[k];
    assert_int_equal(sl_connect(r->b.endpoint, &o, &c), SL_OK);
    return c;
}

static const char *api(const rig *r, const char *path)
{
    static char buf[4][512];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "%s://127.0.0.1:%u/api/v1%.400s", r->tls ? "https" : "http", r->port, path);
    return buf[i];
}

/* A console session: its cookie jar and CSRF token. */
typedef struct sess {
    char jar[320];
    char csrf[64];
} sess;

/* mint asks the broker, as principal k over ZeroMQ, for a login token. */
static void mint(const rig *r, int k, uint64_t ttl_ms, char *token, size_t len)
{
    sl_client *c = client_as(r, k);
    sl_web_link link;
    assert_int_equal(sl_web_login(c, ttl_ms, &link), SL_OK);
    assert_string_equal(link.role, roles[k]);
    assert_non_null(strstr(link.url, "127.0.0.1"));
    snprintf(token, len, "%s", link.token);
    sl_close(&c);
}

static void login(const rig *r, int k, uint64_t ttl_ms, sess *s)
{
    char token[128], body[256];
    th_resp *resp = malloc(sizeof *resp);
    mint(r, k, ttl_ms, token, sizeof token);
    snprintf(s->jar, sizeof s->jar, "%s/jar-%s-%d", r->b.dir, roles[k], rand());
    snprintf(body, sizeof body, "{\"token\": \"%s\"}", token);
    th_req q = {.method = "POST", .url = api(r, "/login"), .body = body, .jar = s->jar, .insecure = 1,
                .headers = (const char *const[]){"Content-Type: application/json", NULL}};
    th_http(&q, resp);
    if (resp->status != 200)
        fail_msg("login as %s: %ld %s", roles[k], resp->status, resp->body);
    assert_int_equal(th_json_str(resp->body, "csrf", s->csrf, sizeof s->csrf), 0);
    char role[32];
    assert_int_equal(th_json_str(resp->body, "role", role, sizeof role), 0);
    assert_string_equal(role, roles[k]);
    assert_non_null(strstr(resp->headers, "HttpOnly"));
    assert_non_null(strstr(resp->headers, "SameSite=Strict"));
    free(resp);
}

/* get and post: requests of session s (NULL: none). */
static long get(const rig *r, const sess *s, const char *path, th_resp *out)
{
    th_req q = {.method = "GET", .url = api(r, path), .jar = s ? s->jar : NULL, .insecure = 1};
    th_http(&q, out);
    return out->status;
}

static long post(const rig *r, const sess *s, const char *path, const char *body, th_resp *out)
{
    char csrf[128];
    snprintf(csrf, sizeof csrf, "X-CSRF-Token: %s", s ? s->csrf : "");
    const char *hs[] = {"Content-Type: application/json", csrf, NULL};
    th_req q = {.method = "POST", .url = api(r, path), .jar = s ? s->jar : NULL, .insecure = 1, .headers = hs,
                .body = body};
    th_http(&q, out);
    return out->status;
}

static int level_paused(const rig *r, unsigned level)
{
    sl_client *c = client_as(r, r->server_pub[0] ? K_ADMIN : -1);
    sl_level_info lv[SL_MAX_LEVELS];
    unsigned n = 0;
    assert_int_equal(sl_level_list(c, lv, &n), SL_OK);
    sl_close(&c);
    return lv[level].paused;
}

/* ---- logins, sessions, roles ---- */

static void logins_open_sessions_once_and_roles_follow_the_principal(void **state)
{
    (void)state;
    rig *r = rig_new(1, NULL);
    th_resp *o = malloc(sizeof *o);
    sess admin, monitor, producer;
    assert_int_equal(get(r, NULL, "/overview", o), 401);
    assert_non_null(strstr(o->body, "\"code\": \"SL_EPERM\""));

    char token[128], body[256];
    mint(r, K_ADMIN, 0, token, sizeof token);
    snprintf(body, sizeof body, "{\"token\": \"%s\"}", token);
    snprintf(admin.jar, sizeof admin.jar, "%s/jar-admin", r->b.dir);
    th_req q = {.method = "POST", .url = api(r, "/login"), .body = body, .jar = admin.jar,
                .headers = (const char *const[]){"Content-Type: application/json", NULL}};
    th_http(&q, o);
    assert_int_equal(o->status, 200);
    assert_int_equal(th_json_str(o->body, "csrf", admin.csrf, sizeof admin.csrf), 0);
    th_http(&q, o); /* once */
    assert_int_equal(o->status, 401);

    assert_int_equal(get(r, &admin, "/overview", o), 200);
    for (const char *const *k = (const char *const[]){"\"levels\"", "\"level\": 0", "\"name\": \"high\"", "\"ready\"",
                                                        "\"inflight\"", "\"delayed\"", "\"dead\"", "\"paused\": false",
                                                        "\"sink\"", NULL};
         *k; k++)
        if (!strstr(o->body, *k))
            fail_msg("the overview lacks %s: %s", *k, o->body);
    assert_int_equal(get(r, &admin, "/session", o), 200);
    assert_non_null(strstr(o->body, "\"change\": true"));

    /* admin pauses and resumes by name and by number */
    assert_int_equal(post(r, &admin, "/levels/high/pause", "{}", o), 200);
    assert_true(level_paused(r, 0));
    assert_int_equal(post(r, &admin, "/levels/0/resume", "{}", o), 200);
    assert_false(level_paused(r, 0));

    /* a monitor reads, and its writes are refused: 403, nothing changes */
    login(r, K_MONITOR, 0, &monitor);
    assert_int_equal(get(r, &monitor, "/overview", o), 200);
    assert_int_equal(get(r, &monitor, "/levels", o), 200);
    assert_int_equal(get(r, &monitor, "/session", o), 200);
    assert_non_null(strstr(o->body, "\"change\": false"));
    assert_int_equal(post(r, &monitor, "/levels/high/pause", "{}", o), 403);
    assert_false(level_paused(r, 0));
    assert_int_equal(post(r, &monitor, "/levels/high/messages", "{\"body\": \"m\"}", o), 403);

    /* a producer may only publish */
    login(r, K_PRODUCER, 0, &producer);
    assert_int_equal(get(r, &producer, "/overview", o), 403);
    assert_int_equal(post(r, &producer, "/levels/high/pause", "{}", o), 403);
    assert_int_equal(post(r, &producer, "/levels/low/messages", "{\"body\": \"from a producer\"}", o), 200);
    assert_true(th_json_num(o->body, "id") >= 1);

    /* a write without a session is refused on its headers: the 100 MB it announces is never awaited */
    int fd = th_tcp_connect(NULL, r->port);
    const char big[] = "POST /api/v1/levels/high/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       "Content-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{\"body\": \"";
    assert_true(fd >= 0);
    assert_int_equal(send(fd, big, sizeof big - 1, MSG_NOSIGNAL), (ssize_t)sizeof big - 1);
    char head[256] = "";
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&pf, 1, 3000), 1);
    assert_true(recv(fd, head, sizeof head - 1, 0) > 12);
    assert_non_null(strstr(head, "HTTP/1.1 401"));
    close(fd);

    /* logout ends the session */
    assert_int_equal(post(r, &monitor, "/logout", "{}", o), 200);
    assert_int_equal(get(r, &monitor, "/overview", o), 401);
    free(o);
    rig_destroy(&r);
}

/* Every route that changes something, with a body it accepts. */
static void write_routes(const rig *r, const sess *s, char paths[][160], char bodies[][96], int *n)
{
    th_resp *o = malloc(sizeof *o);
    assert_int_equal(get(r, s, "/", o), 200);
    *n = 0;
    for (char *p = o->body; (p = strstr(p, "{\"method\": \"POST\", \"path\": \"/api/v1")); p++) {
        char path[160];
        sscanf(p + strlen("{\"method\": \"POST\", \"path\": \"/api/v1"), "%159[^\"]", path);
        if (!strcmp(path, "/login") || !strcmp(path, "/logout"))
            continue;
        char out[160] = "";
        for (const char *q = path; *q;) { /* fill in the path's names */
            const char *b = strchr(q, '{');
            if (!b) {
                strcat(out, q);
                break;
            }
            strncat(out, q, (size_t)(b - q));
            strcat(out, !strncmp(b, "{level}", 7) ? "high" : !strncmp(b, "{pool}", 6) ? "p1" : "t1");
            q = strchr(b, '}') + 1;
        }
        snprintf(paths[*n], 160, "%s", out);
        snprintf(bodies[*n], 96, "%s", strstr(out, "/messages") ? "{\"body\": \"x\"}"
                                        : strstr(out, "/resize") ? "{\"size\": 3}"
                                        : strstr(out, "/dead/peek") ? "{\"id\": 1}"
                                        : strstr(out, "/dead/") ? "{\"level\": \"high\"}" : "{}");
        (*n)++;
    }
    free(o);
}

static void every_write_refuses_csrf_cross_site_non_json_and_role(void **state)
{
    (void)state;
    rig *r = rig_new(1, NULL);
    th_resp *o = malloc(sizeof *o);
    sess admin, monitor;
    login(r, K_ADMIN, 0, &admin);
    login(r, K_MONITOR, 0, &monitor);
    static char paths[64][160], bodies[64][96];
    int n = 0;
    write_routes(r, &admin, paths, bodies, &n);
    assert_true(n >= 15); /* every change the admin model has, and publish */
    for (int i = 0; i < n; i++) {
        char csrf[128];
        snprintf(csrf, sizeof csrf, "X-CSRF-Token: %s", admin.csrf);
        struct {
            const char *why;
            const char *hs[4];
            const char *body;
            long status;
        } bad[] = {
            {"no CSRF token", {"Content-Type: application/json", NULL}, bodies[i], 403},
            {"a wrong CSRF token", {"Content-Type: application/json", "X-CSRF-Token: nope", NULL}, bodies[i], 403},
            {"another origin", {"Content-Type: application/json", csrf, "Origin: http://evil.example", NULL}, bodies[i], 403},
            {"a cross-site fetch", {"Content-Type: application/json", csrf, "Sec-Fetch-Site: cross-site", NULL}, bodies[i], 403},
            {"a form body", {"Content-Type: application/x-www-form-urlencoded", csrf, NULL}, "a=1", 415},
            {"no content type", {csrf, NULL}, bodies[i], 415},
            {"a body that is not JSON", {"Content-Type: application/json", csrf, NULL}, "{\"level\": ", 400},
        };
        for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            th_req q = {.method = "POST", .url = api(r, paths[i]), .jar = admin.jar, .headers = bad[k].hs,
                        .body = bad[k].body};
            th_http(&q, o);
            if (o->status != bad[k].status || !strstr(o->body, "\"error\""))
                fail_msg("POST %s with %s: %ld (wanted %ld) %s", paths[i], bad[k].why, o->status, bad[k].status,
                         o->body);
        }
        if (post(r, &monitor, paths[i], bodies[i], o) != 403)
            fail_msg("POST %s as a monitor: %ld (wanted 403) %s", paths[i], o->status, o->body);
        th_req g = {.method = "GET", .url = api(r, paths[i]), .jar = admin.jar};
        th_http(&g, o);
        if (o->status != 405 && o->status != 404)
            fail_msg("GET %s: %ld (a write is never a GET)", paths[i], o->status);
    }
    /* nothing changed: no level paused, no pool made, nothing published, the sink as it was */
    sl_client *c = client_as(r, K_ADMIN);
    sl_stats st;
    assert_int_equal(sl_stats_get(c, &st), SL_OK);
    for (unsigned l = 0; l < st.nlevels; l++)
        assert_int_equal(st.level[l].enqueued, 0);
    sl_close(&c);
    assert_false(level_paused(r, 0));
    assert_int_equal(get(r, &admin, "/pools", o), 200);
    assert_null(strstr(o->body, "\"p1\""));
    assert_int_equal(get(r, &admin, "/tags", o), 200);
    assert_null(strstr(o->body, "\"t1\""));
    /* a cross-site read is refused too */
    th_req x = {.method = "GET", .url = api(r, "/overview"), .jar = admin.jar,
                .headers = (const char *const[]){"Origin: http://evil.example", NULL}};
    th_http(&x, o);
    assert_int_equal(o->status, 403);
    free(o);
    rig_destroy(&r);
}

static void a_removed_key_ends_its_sessions_and_sessions_expire(void **state)
{
    (void)state;
    const char *extra[] = {"--http-session-idle-ms", "1500", NULL};
    rig *r = rig_new(1, extra);
    th_resp *o = malloc(sizeof *o);
    sess monitor, admin, brief;
    login(r, K_MONITOR, 0, &monitor);
    login(r, K_ADMIN, 0, &admin);
    assert_int_equal(get(r, &monitor, "/overview", o), 200);
    auth_write(r, K_MONITOR);
    assert_int_equal(kill(r->b.pid, SIGHUP), 0);
    long st = 200;
    for (uint64_t until = th_now_ms() + 5000; th_now_ms() < until && st != 401; usleep(50 * 1000))
        st = get(r, &monitor, "/overview", o);
    assert_int_equal(st, 401); /* its key left the auth file */
    assert_int_equal(get(r, &admin, "/overview", o), 200);

    /* idle: used within 1.5 s it lives on; left alone it ends */
    for (int i = 0; i < 3; i++) {
        usleep(700 * 1000);
        assert_int_equal(get(r, &admin, "/overview", o), 200);
    }
    usleep(2500 * 1000);
    assert_int_equal(get(r, &admin, "/overview", o), 401);

    /* absolute: a link of ttl 1 s makes a session of 1 s, however busy */
    login(r, K_ADMIN, 1000, &brief);
    assert_int_equal(get(r, &brief, "/overview", o), 200);
    usleep(600 * 1000);
    assert_int_equal(get(r, &brief, "/overview", o), 200);
    usleep(600 * 1000);
    assert_int_equal(get(r, &brief, "/overview", o), 401);
    free(o);
    rig_destroy(&r);
}

static void logins_are_rate_limited_per_address(void **state)
{
    (void)state;
    rig *r = rig_new(1, NULL);
    th_resp *o = malloc(sizeof *o);
    const char *hs[] = {"Content-Type: application/json", NULL};
    th_req q = {.method = "POST", .url = api(r, "/login"), .headers = hs,
                .body = "{\"token\": \"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}"};
    int refused = 0, limited = 0;
    for (int i = 0; i < 15; i++) {
        th_http(&q, o);
        refused += o->status == 401;
        limited += o->status == 429;
    }
    assert_true(refused <= 10);
    assert_true(limited >= 5);
    assert_non_null(strstr(o->headers, "Retry-After"));
    /* another address still logs in */
    char token[128], body[256];
    mint(r, K_ADMIN, 0, token, sizeof token);
    snprintf(body, sizeof body, "{\"token\": \"%s\"}", token);
    th_req other = {.method = "POST", .url = api(r, "/login"), .headers = hs, .body = body, .from = "127.0.0.2"};
    th_http(&other, o);
    assert_int_equal(o->status, 200);
    free(o);
    rig_destroy(&r);
}

/* ---- publish, dead letters, find ---- */

static void publish_over_http_is_durable_once_confirmed(void **state)
{
    (void)state;
    const char *extra[] = {"--max-body", "64", NULL};
    rig *r = rig_new(0, extra);
    th_resp *o = malloc(sizeof *o);
    assert_int_equal(post(r, NULL, "/levels/high/messages", "{\"body\": \"hello <b>\", \"tag\": \"t1\", \"cost\": 2, "
                          "\"headers\": {\"traceparent\": \"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\", "
                          "\"X-Text\": \"caf\\u00e9\"}}", o), 200);
    uint64_t id1 = (uint64_t)th_json_num(o->body, "id");
    assert_int_equal(post(r, NULL, "/levels/2/messages", "{\"body_base64\": \"AAEC/w==\", \"key\": \"k1\"}", o), 200);
    uint64_t id2 = (uint64_t)th_json_num(o->body, "id");
    assert_int_equal(post(r, NULL, "/levels/2/messages", "{\"body_base64\": \"AAEC/w==\", \"key\": \"k1\"}", o), 200);
    assert_int_equal((uint64_t)th_json_num(o->body, "id"), id2); /* the idempotency key */
    assert_non_null(strstr(o->body, "\"duplicate\": true"));
    assert_int_equal(post(r, NULL, "/levels/normal/messages", "{\"body\": \"later\", \"delay_ms\": 60000}", o), 200);
    /* errors, as JSON with the code */
    assert_int_equal(post(r, NULL, "/levels/nope/messages", "{\"body\": \"x\"}", o), 404);
    assert_non_null(strstr(o->body, "SL_ENOLEVEL"));
    assert_int_equal(post(r, NULL, "/levels/high/messages", "{\"body\": \"0123456789012345678901234567890123456789"
                                                            "0123456789012345678901234567890123456789\"}", o), 413);
    assert_non_null(strstr(o->body, "SL_ETOOBIG"));
    assert_int_equal(post(r, NULL, "/levels/high/messages", "{\"body\": \"x\", \"ttl_ms\": 999999999999999}", o), 400);
    assert_int_equal(post(r, NULL, "/levels/high/messages", "{\"tag\": \"x\"}", o), 400);
    assert_int_equal(post(r, NULL, "/levels/high/messages", "{\"body\": \"x\", \"cost\": -1}", o), 400);
    assert_int_equal(post(r, NULL, "/levels/high/messages", "[1]", o), 400);
    /* headers: the rules of proto_hdrs.h, with their codes and reasons */
    assert_int_equal(post(r, NULL, "/levels/high/messages", "{\"body\": \"x\", \"headers\": {\"Connection\": \"close\"}}",
                          o), 400);
    assert_non_null(strstr(o->body, "hop-by-hop"));
    assert_non_null(strstr(o->body, "SL_EINVAL"));
    assert_int_equal(post(r, NULL, "/levels/high/messages", "{\"body\": \"x\", \"headers\": [\"a\"]}", o), 400);
    assert_int_equal(post(r, NULL, "/levels/high/messages", "{\"body\": \"x\", \"headers\": {\"a\": 1}}", o), 400);
    char many[1024] = "{\"body\": \"x\", \"headers\": {";
    for (int i = 0; i < 33; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%s\"h%d\": \"v\"", i ? ", " : "", i);
    strcat(many, "}}");
    assert_int_equal(post(r, NULL, "/levels/high/messages", many, o), 413);
    assert_non_null(strstr(o->body, "more than 32 headers"));

    /* confirmed means stored: kill -9 at once, restart, consume */
    th_broker_kill9(&r->b);
    assert_int_equal(th_broker_start(&r->b), 0);
    sl_client *c = client_as(r, -1);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 4), SL_OK);
    sl_delivery *d = NULL;
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    assert_int_equal(d->id, id1);
    assert_string_equal(d->tag, "t1");
    assert_int_equal(d->cost, 2);
    assert_memory_equal(d->body, "hello <b>", 9);
    assert_int_equal(d->nheaders, 2); /* as published, in their order */
    assert_string_equal(d->headers[0].name, "traceparent");
    assert_string_equal(d->headers[0].value, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    assert_string_equal(d->headers[1].name, "X-Text");
    assert_string_equal(d->headers[1].value, "caf\xc3\xa9");
    assert_int_equal(sl_ack(c, d), SL_OK);
    sl_delivery_free(&d);
    assert_int_equal(sl_recv(c, 5000, &d), SL_OK);
    assert_int_equal(d->id, id2);
    assert_int_equal(d->body_len, 4);
    assert_memory_equal(d->body, "\x00\x01\x02\xff", 4);
    assert_int_equal(sl_ack(c, d), SL_OK);
    sl_delivery_free(&d);
    assert_int_equal(sl_recv(c, 300, &d), SL_ETIMEDOUT); /* the delayed one waits */
    sl_close(&c);
    free(o);
    rig_destroy(&r);
}

static void dead_letters_count_dry_then_requeue_and_find_explains(void **state)
{
    (void)state;
    rig *r = rig_new(0, NULL);
    th_resp *o = malloc(sizeof *o);
    for (int i = 0; i < 3; i++)
        assert_int_equal(post(r, NULL, "/levels/high/messages", "{\"body\": \"d\", \"ttl_ms\": 1, \"tag\": \"x\"}", o), 200);
    uint64_t id = (uint64_t)th_json_num(o->body, "id");
    for (uint64_t until = th_now_ms() + 10000; th_now_ms() < until; usleep(50 * 1000))
        if (get(r, NULL, "/dead?level=high", o) == 200 && strstr(o->body, "\"id\": 3"))
            break;
    assert_non_null(strstr(o->body, "\"dead_rows\""));
    assert_int_equal(post(r, NULL, "/dead/requeue", "{\"level\": \"high\", \"dry_run\": true}", o), 200);
    assert_int_equal(th_json_num(o->body, "n"), 3);
    assert_int_equal(post(r, NULL, "/dead/purge", "{\"level\": \"high\", \"dry_run\": 1}", o), 200);
    assert_int_equal(th_json_num(o->body, "n"), 3);
    assert_int_equal(get(r, NULL, "/dead?level=0&n=2", o), 200); /* still all there */
    assert_non_null(strstr(o->body, "\"id\": 2"));
    assert_int_equal(post(r, NULL, "/dead/requeue", "{\"level\": \"high\", \"to_level\": \"low\"}", o), 200);
    assert_int_equal(th_json_num(o->body, "n"), 3);
    char path[64];
    snprintf(path, sizeof path, "/explain?id=%llu", (unsigned long long)id);
    assert_int_equal(get(r, NULL, path, o), 200);
    assert_non_null(strstr(o->body, "\"state\": \"ready\""));
    assert_non_null(strstr(o->body, "\"msg\": \"no consumer pool"));
    assert_int_equal(get(r, NULL, "/explain?id=abc", o), 400);
    assert_int_equal(get(r, NULL, "/explain", o), 400);
    free(o);
    rig_destroy(&r);
}

/* ---- the open console, HTTPS, beyond loopback ---- */

static void without_auth_the_console_is_open_but_not_cross_site(void **state)
{
    (void)state;
    rig *r = rig_new(0, NULL);
    th_resp *o = malloc(sizeof *o);
    assert_int_equal(get(r, NULL, "/overview", o), 200);
    assert_int_equal(get(r, NULL, "/session", o), 200);
    assert_non_null(strstr(o->body, "\"principal\": \"anonymous\""));
    assert_int_equal(post(r, NULL, "/levels/low/pause", "{}", o), 200);
    assert_true(level_paused(r, 2));
    const char *hs[] = {"Content-Type: application/json", "Origin: http://evil.example", NULL};
    th_req q = {.method = "POST", .url = api(r, "/levels/low/resume"), .headers = hs, .body = "{}"};
    th_http(&q, o);
    assert_int_equal(o->status, 403);
    assert_true(level_paused(r, 2));
    const char *plain[] = {"Content-Type: text/plain", NULL};
    th_req p = {.method = "POST", .url = api(r, "/levels/low/resume"), .headers = plain, .body = "{}"};
    th_http(&p, o);
    assert_int_equal(o->status, 415);
    /* a page whose name was rebound to loopback is refused */
    const char *rebound[] = {"Host: evil.example:80", NULL};
    th_req h = {.method = "GET", .url = api(r, "/overview"), .headers = rebound};
    th_http(&h, o);
    assert_int_equal(o->status, 403);
    /* the headers every answer carries */
    th_req page = {.method = "GET", .url = api(r, "/overview")};
    th_http(&page, o);
    assert_non_null(strstr(o->headers, "Content-Security-Policy: default-src 'none'; script-src 'self'"));
    assert_non_null(strstr(o->headers, "X-Content-Type-Options: nosniff"));
    assert_non_null(strstr(o->headers, "Referrer-Policy: no-referrer"));
    assert_null(strstr(o->headers, "Access-Control-Allow"));
    free(o);
    rig_destroy(&r);
}

static void https_with_a_certificate_and_loopback_unless_told(void **state)
{
    (void)state;
    th_broker probe;
    assert_int_equal(th_broker_init(&probe, NULL), 0);
    if (th_cert_make(probe.dir) != 0) {
        th_broker_fini(&probe);
        skip(); /* no openssl to make a certificate with */
    }
    char cert[320], key[320], out[2048];
    snprintf(cert, sizeof cert, "%s/cert.pem", probe.dir);
    snprintf(key, sizeof key, "%s/key.pem", probe.dir);
    const char *extra[] = {"--http-cert", cert, "--http-key", key, NULL};
    rig *r = rig_new(1, extra);
    th_resp *o = malloc(sizeof *o);
    sess admin;
    login(r, K_ADMIN, 0, &admin);
    char token[128], body[256];
    mint(r, K_ADMIN, 0, token, sizeof token);
    snprintf(body, sizeof body, "{\"token\": \"%s\"}", token);
    th_req q = {.method = "POST", .url = api(r, "/login"), .body = body, .insecure = 1,
                .headers = (const char *const[]){"Content-Type: application/json", NULL}};
    th_http(&q, o);
    assert_int_equal(o->status, 200);
    assert_non_null(strstr(o->headers, "; Secure"));
    assert_non_null(strstr(o->headers, "Strict-Transport-Security"));
    assert_int_equal(get(r, &admin, "/overview", o), 200);
    char plain[128];
    snprintf(plain, sizeof plain, "http://127.0.0.1:%u/metrics", r->port);
    th_req p = {.method = "GET", .url = plain, .timeout_ms = 3000};
    th_http(&p, o);
    assert_true(o->status != 200); /* no plain HTTP beside HTTPS */
    free(o);
    rig_destroy(&r);

    /* beyond loopback: refused without TLS or --insecure, before anything opens (stderr read through sh) */
    const char *sh = "exec \"$0\" \"$@\" 2>&1";
    const char *argv1[] = {"/bin/sh", "-c", sh, th_bin("sluiced"), "-d", probe.data, "-l", probe.endpoint, "--http", "0.0.0.0:0", NULL};
    assert_int_equal(th_run(argv1, NULL, out, sizeof out), 2);
    assert_non_null(strstr(out, "--http-cert"));
    const char *argv2[] = {"/bin/sh", "-c", sh, th_bin("sluiced"), "-d", probe.data, "-l", probe.endpoint, "--http", "127.0.0.1:0",
                           "--http-cert", cert, NULL};
    assert_int_equal(th_run(argv2, NULL, out, sizeof out), 2);
    assert_non_null(strstr(out, "--http-key"));
    /* --insecure passes the check (192.0.2.1 is no address of this machine: it cannot listen there) */
    const char *argv3[] = {"/bin/sh", "-c", sh, th_bin("sluiced"), "-d", probe.data, "-l", probe.endpoint, "--http", "192.0.2.1:0",
                           "--insecure", NULL};
    assert_int_equal(th_run(argv3, NULL, out, sizeof out), 2);
    assert_null(strstr(out, "reachable from other machines"));
    assert_non_null(strstr(out, "cannot serve"));
    th_broker_fini(&probe);
}

int main(void)
{
    th_seed();
    th_timeout_s = 120;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(logins_open_sessions_once_and_roles_follow_the_principal, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(every_write_refuses_csrf_cross_site_non_json_and_role, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(a_removed_key_ends_its_sessions_and_sessions_expire, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(logins_are_rate_limited_per_address, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(publish_over_http_is_durable_once_confirmed, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(dead_letters_count_dry_then_requeue_and_find_explains, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(without_auth_the_console_is_open_but_not_cross_site, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(https_with_a_certificate_and_loopback_unless_told, th_timeout_arm,
                                        th_timeout_disarm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
