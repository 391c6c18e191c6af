/*
 * session.c - who is at the console: one-time login tokens, the sessions
 * they open, their cookie and CSRF token, and how fast logins may be tried.
 *
 * Without --auth the console is open, like the CLI: every request acts as
 * principal "anonymous" with the admin role, and no session is needed.
 *
 * With --auth, a principal runs `sluice web login` over ZeroMQ with its own
 * key; the loop's web.login command calls http_login_mint, which keeps a
 * token (32 random bytes, base64url) for that principal: its name, its
 * CURVE key and its role. The link is usable once, for at most
 * SESSION_LINK_MS (or its ttl when shorter). POST /api/v1/login with the
 * token opens a session: a random id in an HttpOnly, SameSite=Strict cookie
 * (Secure over HTTPS; named for the port, so brokers on one host keep
 * theirs apart) and a random CSRF token the page sends back in
 * X-CSRF-Token with every write. A session ends after session_idle_ms
 * unused, at its ttl after the login, at logout, or when its key leaves the
 * auth file (session_refresh, on SIGHUP: the loop calls it after reloading
 * the table, and a role changed there applies to the session at once).
 * Every request the session sends to the loop carries its key, so the
 * loop's auth check decides with the table of the moment anyway.
 *
 * Logins are limited per address (LOGIN_PER_MIN a minute) and in all
 * (LOGIN_ALL_PER_MIN), counted whether they succeed or not: 429 with a
 * Retry-After past it. Ids and tokens are compared in constant time.
 *
 * Threads: the loop mints and refreshes; libmicrohttpd's thread looks up,
 * logs in and out; the ticker sweeps. One mutex. Costs: O(sessions) per
 * lookup (SESSION_MAX at most, a compare each).
 */
#include "session.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "log.h"
#include "units.h"

#define LOGIN_PER_MIN 10
#define LOGIN_ALL_PER_MIN 120
#define LOGIN_ADDRS 64
#define ID_CHARS HTTP_TOKEN_CHARS

typedef struct token_rec {
    char token[ID_CHARS + 1];   /* "" : a free slot */
    char principal[PROTO_MAX_NAME + 1];
    char key[48];
    proto_role role;
    uint64_t link_end_ns;
    uint64_t ttl_ns;
} token_rec;

typedef struct session_rec {
    char id[ID_CHARS + 1];      /* "" : a free slot */
    char csrf[ID_CHARS + 1];
    char principal[PROTO_MAX_NAME + 1];
    char key[48];
    proto_role role;
    uint64_t last_ns, end_ns;
} session_rec;

typedef struct login_rate {
    uint8_t addr[16];
    uint8_t alen;
    uint64_t minute;
    unsigned count;
} login_rate;

struct sessions {
    pthread_mutex_t lock;
    token_rec tokens[SESSION_MAX_TOKENS];
    session_rec *v;             /* SESSION_MAX */
    login_rate rate[LOGIN_ADDRS];
    uint64_t all_minute;
    unsigned all_count;
    char cookie[32];            /* the cookie's name: sluice_session_PORT */
    uint64_t idle_ns;
};

/* random_id writes 32 random bytes in base64url (43 characters and a NUL). */
static int random_id(char *out)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned char b[33];
    if (getrandom(b, 32, 0) != 32)
        return SL_EIO;
    b[32] = 0;
    for (int i = 0, o = 0; i < 32; i += 3) {
        uint32_t v = (uint32_t)b[i] << 16 | (uint32_t)b[i + 1] << 8 | (i + 2 < 32 ? b[i + 2] : 0);
        out[o++] = abc[v >> 18 & 63];
        out[o++] = abc[v >> 12 & 63];
        if (o < ID_CHARS)
            out[o++] = abc[v >> 6 & 63];
        if (o < ID_CHARS)
            out[o++] = abc[v & 63];
    }
    out[ID_CHARS] = '\0';
    return SL_OK;
}

/* same compares a NUL-terminated secret with s[0..len) in constant time
 * for the secret's length. */
static int same(const char *secret, const char *s, size_t len)
{
    size_t n = strlen(secret);
    unsigned char d = n != len || n == 0;
    for (size_t i = 0; i < n; i++)
        d |= (unsigned char)(secret[i] ^ (i < len ? s[i] : 0));
    return d == 0;
}

int session_open(http *h)
{
    struct sessions *ss = calloc(1, sizeof *ss);
    if (!ss || !(ss->v = calloc(SESSION_MAX, sizeof *ss->v))) {
        free(ss);
        return SL_ENOMEM;
    }
    pthread_mutex_init(&ss->lock, NULL);
    ss->idle_ns = (uint64_t)h->cfg.session_idle_ms * NS_PER_MS;
    h->sessions = ss;
    return SL_OK;
}

void session_close(http *h)
{
    struct sessions *ss = h->sessions;
    if (!ss)
        return;
    pthread_mutex_destroy(&ss->lock);
    memset(ss->v, 0, SESSION_MAX * sizeof *ss->v);
    free(ss->v);
    free(ss);
    h->sessions = NULL;
}

/* cookie_name is set once the port is known. */
static const char *cookie_name(http *h)
{
    struct sessions *ss = h->sessions;
    if (!ss->cookie[0])
        snprintf(ss->cookie, sizeof ss->cookie, "sluice_session_%u", h->port);
    return ss->cookie;
}

int session_mint(http *h, const char *principal, const char *key, proto_role role, uint64_t ttl_ms,
                 uint64_t now_ns, char *token)
{
    struct sessions *ss = h->sessions;
    if (ttl_ms == 0 || ttl_ms > HTTP_MAX_TTL_MS)
        ttl_ms = HTTP_MAX_TTL_MS;
    int rc = random_id(token);
    if (rc != SL_OK)
        return rc;
    pthread_mutex_lock(&ss->lock);
    token_rec *free_slot = NULL;
    for (unsigned i = 0; i < SESSION_MAX_TOKENS && !free_slot; i++)
        if (!ss->tokens[i].token[0] || ss->tokens[i].link_end_ns <= now_ns)
            free_slot = &ss->tokens[i];
    if (free_slot) {
        *free_slot = (token_rec){.role = role, .ttl_ns = ttl_ms * NS_PER_MS,
                                 .link_end_ns = now_ns + (ttl_ms < SESSION_LINK_MS ? ttl_ms : SESSION_LINK_MS) * NS_PER_MS};
        memcpy(free_slot->token, token, ID_CHARS + 1);
        snprintf(free_slot->principal, sizeof free_slot->principal, "%s", principal);
        snprintf(free_slot->key, sizeof free_slot->key, "%s", key);
    }
    pthread_mutex_unlock(&ss->lock);
    return free_slot ? SL_OK : SL_EFULL;
}

void session_refresh(http *h, http_role_fn role_of, void *ctx)
{
    struct sessions *ss = h->sessions;
    unsigned ended = 0;
    pthread_mutex_lock(&ss->lock);
    for (unsigned i = 0; i < SESSION_MAX + SESSION_MAX_TOKENS; i++) {
        int is_tok = i >= SESSION_MAX;
        char *id = is_tok ? ss->tokens[i - SESSION_MAX].token : ss->v[i].id;
        const char *key = is_tok ? ss->tokens[i - SESSION_MAX].key : ss->v[i].key;
        if (!id[0] || !key[0])
            continue;
        int role = role_of(ctx, key);
        if (role < 0) {
            ended += !is_tok;
            memset(is_tok ? (void *)&ss->tokens[i - SESSION_MAX] : (void *)&ss->v[i], 0,
                   is_tok ? sizeof ss->tokens[0] : sizeof ss->v[0]);
        } else if (is_tok) {
            ss->tokens[i - SESSION_MAX].role = (proto_role)role;
        } else {
            ss->v[i].role = (proto_role)role;
        }
    }
    pthread_mutex_unlock(&ss->lock);
    if (ended)
        log_info("http", "%u console session%s ended: %s key left the auth file", ended, ended == 1 ? "" : "s",
                 ended == 1 ? "its" : "their");
}

void session_sweep(http *h, uint64_t now_ns)
{
    struct sessions *ss = h->sessions;
    pthread_mutex_lock(&ss->lock);
    for (unsigned i = 0; i < SESSION_MAX; i++)
        if (ss->v[i].id[0] && (now_ns >= ss->v[i].end_ns || now_ns >= ss->v[i].last_ns + ss->idle_ns))
            memset(&ss->v[i], 0, sizeof ss->v[i]);
    for (unsigned i = 0; i < SESSION_MAX_TOKENS; i++)
        if (ss->tokens[i].token[0] && now_ns >= ss->tokens[i].link_end_ns)
            memset(&ss->tokens[i], 0, sizeof ss->tokens[i]);
    pthread_mutex_unlock(&ss->lock);
}

/* caller copies session s into r. */
static void caller(hreq *r, const session_rec *s)
{
    r->authed = 1;
    memcpy(r->principal, s->principal, sizeof r->principal);
    memcpy(r->key, s->key, sizeof r->key);
    memcpy(r->csrf, s->csrf, sizeof r->csrf);
    r->role = s->role;
}

int session_who(hreq *r)
{
    http *h = r->h;
    struct sessions *ss = h->sessions;
    if (!h->cfg.auth) {
        r->authed = 1;
        strcpy(r->principal, "anonymous");
        r->key[0] = r->csrf[0] = '\0';
        r->role = PROTO_ROLE_ADMIN;
        return 1;
    }
    const char *id = MHD_lookup_connection_value(r->c, MHD_COOKIE_KIND, cookie_name(h));
    if (!id || strlen(id) != ID_CHARS)
        return 0;
    uint64_t now = http_now_ns();
    int found = 0;
    pthread_mutex_lock(&ss->lock);
    for (unsigned i = 0; i < SESSION_MAX; i++) {
        session_rec *s = &ss->v[i];
        if (!s->id[0] || !same(s->id, id, ID_CHARS))
            continue;
        if (now >= s->end_ns || now >= s->last_ns + ss->idle_ns) {
            memset(s, 0, sizeof *s);
            break;
        }
        s->last_ns = now;
        caller(r, s);
        found = 1;
        break;
    }
    pthread_mutex_unlock(&ss->lock);
    return found;
}

/* rate_ok counts a login attempt from r's address and in all. */
static int rate_ok(struct sessions *ss, const conn_rec *c, uint64_t now_ns, unsigned *retry_s)
{
    uint64_t minute = now_ns / (60 * NS_PER_S);
    *retry_s = (unsigned)(60 - (now_ns / NS_PER_S) % 60);
    if (ss->all_minute != minute)
        ss->all_minute = minute, ss->all_count = 0;
    if (++ss->all_count > LOGIN_ALL_PER_MIN)
        return 0;
    if (!c)
        return 1;
    login_rate *slot = NULL, *oldest = &ss->rate[0];
    for (unsigned i = 0; i < LOGIN_ADDRS && !slot; i++) {
        login_rate *e = &ss->rate[i];
        if (e->alen == c->alen && !memcmp(e->addr, c->addr, c->alen) && e->minute)
            slot = e;
        else if (e->minute < oldest->minute)
            oldest = e;
    }
    if (!slot) {
        slot = oldest;
        *slot = (login_rate){.alen = c->alen, .minute = minute};
        memcpy(slot->addr, c->addr, c->alen);
    }
    if (slot->minute != minute)
        slot->minute = minute, slot->count = 0;
    return ++slot->count <= LOGIN_PER_MIN;
}

static void set_cookie(hreq *r, const char *value, int clear)
{
    snprintf(r->set_cookie, sizeof r->set_cookie, "%s=%s; Path=/; HttpOnly; SameSite=Strict%s%s",
             cookie_name(r->h), value, r->h->tls ? "; Secure" : "", clear ? "; Max-Age=0" : "");
}

int session_login(hreq *r, const char *token, size_t len, unsigned *retry_s)
{
    http *h = r->h;
    struct sessions *ss = h->sessions;
    uint64_t now = http_now_ns();
    session_rec fresh = {0};
    if (random_id(fresh.id) != SL_OK || random_id(fresh.csrf) != SL_OK)
        return SL_EIO;
    pthread_mutex_lock(&ss->lock);
    if (!rate_ok(ss, r->conn, now, retry_s)) {
        pthread_mutex_unlock(&ss->lock);
        return SL_ETHROTTLED;
    }
    token_rec *t = NULL;
    for (unsigned i = 0; i < SESSION_MAX_TOKENS && !t; i++)
        if (ss->tokens[i].token[0] && same(ss->tokens[i].token, token, len))
            t = &ss->tokens[i];
    if (!t || now >= t->link_end_ns) {
        if (t)
            memset(t, 0, sizeof *t);
        pthread_mutex_unlock(&ss->lock);
        return SL_EPERM;
    }
    session_rec *slot = NULL;
    for (unsigned i = 0; i < SESSION_MAX; i++) { /* a free slot, else the one unused longest */
        if (!ss->v[i].id[0]) {
            slot = &ss->v[i];
            break;
        }
        if (!slot || ss->v[i].last_ns < slot->last_ns)
            slot = &ss->v[i];
    }
    memcpy(fresh.principal, t->principal, sizeof fresh.principal);
    memcpy(fresh.key, t->key, sizeof fresh.key);
    fresh.role = t->role;
    fresh.last_ns = now;
    fresh.end_ns = now + t->ttl_ns;
    *slot = fresh;
    memset(t, 0, sizeof *t); /* once */
    caller(r, slot);
    pthread_mutex_unlock(&ss->lock);
    set_cookie(r, fresh.id, 0);
    log_info("http", "console session opened for %s (role %s)", fresh.principal, proto_role_name(fresh.role));
    return SL_OK;
}

void session_logout(hreq *r)
{
    http *h = r->h;
    struct sessions *ss = h->sessions;
    const char *id = MHD_lookup_connection_value(r->c, MHD_COOKIE_KIND, cookie_name(h));
    if (id && strlen(id) == ID_CHARS) {
        pthread_mutex_lock(&ss->lock);
        for (unsigned i = 0; i < SESSION_MAX; i++)
            if (ss->v[i].id[0] && same(ss->v[i].id, id, ID_CHARS))
                memset(&ss->v[i], 0, sizeof ss->v[i]);
        pthread_mutex_unlock(&ss->lock);
    }
    if (h->cfg.auth)
        set_cookie(r, "", 1);
}

int session_csrf_ok(hreq *r)
{
    if (!r->h->cfg.auth)
        return 1;
    const char *t = http_header(r, "X-CSRF-Token");
    return t && r->csrf[0] && same(r->csrf, t, strlen(t));
}

void session_headers(hreq *r, struct MHD_Response *rs)
{
    if (r->set_cookie[0])
        MHD_add_response_header(rs, "Set-Cookie", r->set_cookie);
}
