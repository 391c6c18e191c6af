/*
 * auth.c - the principal table and the check every command passes.
 *
 * Owns: the table read from the auth file (--auth), one principal per line
 *
 *     NAME ROLE PUBLIC-KEY [levels=L1,L2] [tags=GLOB,...]    # comment
 *
 * ("#" starts a comment at the start of a line or after a blank: Z85 keys
 * may contain "#"),
 * sorted by public key, and the decision for each incoming message. The
 * table is read whole before it is used: a malformed line stops the broker
 * at start, and is refused on reload (SIGHUP) with the old table kept, so
 * the broker never runs on half a file. On a good reload the new table
 * replaces the old between two passes, the ZAP handler gets the new key set
 * (refusing new handshakes of removed keys), consumers whose key is gone
 * are dropped at once (their deliveries go back uncharged), and the web
 * console's sessions of removed keys end (http_sessions_refresh). The open
 * connections of removed keys are closed (peers.c: the descriptor each
 * key's messages came in on); one that has sent nothing yet is closed at
 * its first command, which, like any command of a removed key, is refused.
 *
 * The decision: the connection's User-Id (set by zap.c, the client's public
 * key) names the principal; no User-Id or an unknown one is refused. The
 * role a message needs comes from proto's PROTO_MSG_ROLES, an ADMIN's from
 * PROTO_CMD_ROLES (so a new command cannot be added without a role); a
 * HELLO that subscribes needs consumer. admin passes everything. A PUT must
 * go to one of the principal's levels (after the default level and tag
 * rules, as admit would place it) with a tag matching one of its globs; a
 * subscription may name only its levels and gets them when it names none.
 *
 * With --admin-listen, the endpoint is checked first, auth or not: what
 * needs the admin role is served on the admin endpoint only, publishing and
 * consuming on the main endpoint only, so admin can stay on a local socket.
 * The stream endpoint (--stream-listen) is the main one's twin here.
 *
 * Refusals answer SL_EPERM, are counted (auth_refused in STATS) and logged
 * at a limited rate (the first ten, then one in a thousand).
 *
 * Costs: a load is O(lines log lines); a check is one binary search
 * (O(log principals)) plus O(tags) glob matches for a PUT.
 */
#include "auth.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "admit.h"
#include "grow.h"
#include "http.h"
#include "log.h"
#include "member.h"
#include "peers.h"
#include "settle.h"
#include "zap.h"

#define LINE_MAX_BYTES 8192

/* ---- the file ---- */

typedef struct parse {
    const char *path;
    unsigned line;
    const conf *cfg;
    char *err;
    size_t errlen;
} parse;

__attribute__((format(printf, 2, 3))) static int bad(parse *p, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errlen, "%s:%u: %s", p->path, p->line, msg);
    return SL_EINVAL;
}

static int level_of(const conf *c, const char *text)
{
    for (unsigned l = 0; l < c->levels; l++)
        if (!strcmp(c->level_names[l], text))
            return (int)l;
    char *end;
    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    return text[0] >= '0' && text[0] <= '9' && !*end && !errno && v < c->levels ? (int)v : -1;
}

static int parse_levels(parse *p, char *list, auth_principal *pr)
{
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int l = level_of(p->cfg, tok);
        if (l < 0)
            return bad(p, "levels: '%s' is not a level name or a number from 0 to %u", tok, p->cfg->levels - 1);
        pr->levels_mask |= 1u << l;
    }
    return pr->levels_mask ? SL_OK : bad(p, "levels= names no level");
}

static int parse_tags(parse *p, char *list, auth_principal *pr)
{
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (pr->ntags == AUTH_MAX_TAGS || strlen(tok) > PROTO_MAX_TAG)
            return bad(p, "tags: at most %d globs of at most %d bytes", AUTH_MAX_TAGS, PROTO_MAX_TAG);
        strcpy(pr->tags[pr->ntags++], tok);
    }
    return pr->ntags ? SL_OK : bad(p, "tags= names no glob");
}

/* parse_line reads one non-empty line (comments cut) into pr. */
static int parse_line(parse *p, char *line, auth_principal *pr)
{
    char *save = NULL, *name = strtok_r(line, " \t", &save), *role = strtok_r(NULL, " \t", &save),
         *key = strtok_r(NULL, " \t", &save), *opt;
    char pub[AUTH_KEY_LEN + 1], text[80];
    memset(pr, 0, sizeof *pr);
    if (!role || !key)
        return bad(p, "expected NAME ROLE PUBLIC-KEY [levels=L1,L2] [tags=GLOB,...]");
    if (strlen(name) > PROTO_MAX_NAME)
        return bad(p, "the name '%s' is longer than %d bytes", name, PROTO_MAX_NAME);
    int r = proto_role_of(role, strlen(role));
    if (r < 0 || r == PROTO_ROLE_ANY)
        return bad(p, "'%s' is not a role (producer, consumer, monitor, admin or replica)", role);
    snprintf(text, sizeof text, "public = %s", key);
    if (strlen(key) != AUTH_KEY_LEN || proto_key_parse(text, pub, NULL) != SL_OK)
        return bad(p, "'%s' is not a public key (40 Z85 characters, as in a .pub file)", key);
    strcpy(pr->name, name);
    strcpy(pr->key, pub);
    pr->role = (proto_role)r;
    while ((opt = strtok_r(NULL, " \t", &save))) {
        int rc = !strncmp(opt, "levels=", 7) && !pr->levels_mask ? parse_levels(p, opt + 7, pr)
                 : !strncmp(opt, "tags=", 5) && !pr->ntags    ? parse_tags(p, opt + 5, pr)
                                                             : bad(p, "'%s': expected levels=... or tags=..., once each", opt);
        if (rc != SL_OK)
            return rc;
    }
    return SL_OK;
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const auth_principal *)a)->key, ((const auth_principal *)b)->key);
}

int auth_table_load(const char *path, const conf *cfg, auth_table *out, char *err, size_t errlen)
{
    parse p = {.path = path, .cfg = cfg, .err = err, .errlen = errlen};
    auth_table t = {0};
    size_t cap = 0;
    char line[LINE_MAX_BYTES];
    int rc = SL_OK;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return SL_ENOTFOUND;
    }
    while (rc == SL_OK && fgets(line, sizeof line, f)) {
        p.line++;
        if (!strchr(line, '\n') && !feof(f)) {
            rc = bad(&p, "line longer than %d bytes", LINE_MAX_BYTES - 2);
            break;
        }
        line[strcspn(line, "\r\n")] = '\0';
        for (char *h = line; (h = strchr(h, '#')); h++) /* a comment; Z85 keys may hold '#' */
            if (h == line || h[-1] == ' ' || h[-1] == '\t') {
                *h = '\0';
                break;
            }
        if (line[strspn(line, " \t")] == '\0')
            continue;
        if (t.n == cap) {
            auth_principal *v = t.n < AUTH_MAX_PRINCIPALS ? grow_array(t.v, &cap, t.n + 1, sizeof *v, 16) : NULL;
            if (!v) {
                rc = t.n >= AUTH_MAX_PRINCIPALS ? bad(&p, "more than %d principals", AUTH_MAX_PRINCIPALS) : SL_ENOMEM;
                break;
            }
            t.v = v;
        }
        if ((rc = parse_line(&p, line, &t.v[t.n])) == SL_OK) {
            for (size_t i = 0; i < t.n && rc == SL_OK; i++)
                if (!strcmp(t.v[i].name, t.v[t.n].name) || !strcmp(t.v[i].key, t.v[t.n].key))
                    rc = bad(&p, "%s '%s' appears twice", strcmp(t.v[i].name, t.v[t.n].name) ? "key" : "name",
                             strcmp(t.v[i].name, t.v[t.n].name) ? t.v[t.n].key : t.v[t.n].name);
            t.n++;
        }
    }
    if (rc == SL_OK && ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        rc = SL_ENOTFOUND;
    }
    fclose(f);
    if (rc != SL_OK) {
        if (rc == SL_ENOMEM)
            snprintf(err, errlen, "%s: out of memory", path);
        free(t.v);
        return rc;
    }
    if (t.n)
        qsort(t.v, t.n, sizeof *t.v, by_key);
    *out = t;
    return SL_OK;
}

void auth_table_fini(auth_table *t)
{
    free(t->v);
    t->v = NULL;
    t->n = 0;
}

const auth_principal *auth_find(const auth_table *t, const char *user_id, size_t len)
{
    auth_principal probe;
    if (!t->n || len != AUTH_KEY_LEN)
        return NULL;
    memcpy(probe.key, user_id, len);
    probe.key[len] = '\0';
    return bsearch(&probe, t->v, t->n, sizeof *t->v, by_key);
}

/* ---- the broker's table ---- */

int auth_table_admit(const auth_table *t, zap *z)
{
    if (!z)
        return SL_OK;
    const char **keys = t->n ? malloc(t->n * sizeof *keys) : NULL;
    if (t->n && !keys)
        return SL_ENOMEM;
    for (size_t i = 0; i < t->n; i++)
        keys[i] = t->v[i].key;
    int rc = zap_set_keys(z, keys, t->n);
    free(keys);
    return rc;
}

/* install makes t the broker's table and hands its keys to the ZAP handler. */
static int install(bk *b, auth_table *t)
{
    int rc = auth_table_admit(t, net_zap(b->net));
    if (rc != SL_OK)
        return rc;
    if (b->auth)
        auth_table_fini(b->auth);
    else if (!(b->auth = malloc(sizeof *b->auth)))
        return SL_ENOMEM;
    *b->auth = *t;
    return SL_OK;
}

int auth_open(bk *b)
{
    char err[600];
    auth_table t;
    if (!b->cfg.auth_file[0])
        return SL_OK;
    int rc = auth_table_load(b->cfg.auth_file, &b->cfg, &t, err, sizeof err);
    if (rc != SL_OK) {
        log_error("auth", "%s", err);
        return rc;
    }
    if ((rc = install(b, &t)) != SL_OK) {
        auth_table_fini(&t);
        return rc;
    }
    log_info("auth", "%zu principals from %s", t.n, b->cfg.auth_file);
    return SL_OK;
}

/* still_known tells peers_drop whether a connection's key is still in the
 * table. */
static int still_known(void *ctx, const char *user_id)
{
    bk *b = ctx;
    return auth_find(b->auth, user_id, strlen(user_id)) != NULL;
}

/* role_now tells the role key's principal has now, or -1 when the key is
 * gone (for the console's sessions). */
static int role_now(void *ctx, const char *key)
{
    const bk *b = ctx;
    const auth_principal *p = auth_find(b->auth, key, strlen(key));
    return p ? (int)p->role : -1;
}

int auth_reload(bk *b)
{
    char err[600];
    auth_table t;
    if (!b->auth)
        return SL_OK;
    int rc = auth_table_load(b->cfg.auth_file, &b->cfg, &t, err, sizeof err);
    if (rc == SL_OK && (rc = install(b, &t)) != SL_OK)
        auth_table_fini(&t);
    if (rc != SL_OK) {
        log_error("auth", "reload refused, the previous principals stay: %s",
                  rc == SL_ENOMEM ? "out of memory" : err);
        return rc;
    }
    unsigned dropped = 0;
    for (size_t i = b->conns.len; i-- > 0;) {
        conn *c = b->conns.all[i];
        if (!c->user_id[0])
            continue;
        const auth_principal *p = auth_find(b->auth, c->user_id, strlen(c->user_id));
        /* a removed key, or a consumer whose role no longer consumes: its
         * deliveries go back uncharged; a narrowed levels= applies at once */
        if (!p || (c->consumer && p->role != PROTO_ROLE_CONSUMER && p->role != PROTO_ROLE_ADMIN)) {
            settle_drop_conn(b, c, SETTLE_END_LEFT);
            dropped++;
        } else {
            c->allowed_mask = p->levels_mask && p->role != PROTO_ROLE_ADMIN ? p->levels_mask & b->all_mask
                                                                             : b->all_mask;
            c->levels_mask &= c->allowed_mask;
        }
    }
    unsigned closed = peers_drop(b->peers, still_known, b);
    http_sessions_refresh(b->http, role_now, b); /* console sessions of removed keys end; the others take their role */
    log_info("auth", "reloaded %s: %zu principals; %u consumers of removed keys or roles dropped; %u connections of "
             "removed keys closed", b->cfg.auth_file, b->auth->n, dropped, closed);
    return SL_OK;
}

void auth_close(bk *b)
{
    peers_destroy(&b->peers);
    if (!b->auth)
        return;
    auth_table_fini(b->auth);
    free(b->auth);
    b->auth = NULL;
}

void auth_note_conn(bk *b, conn *c, const net_in *in)
{
    const auth_principal *p = b->auth && in->user_id ? auth_find(b->auth, in->user_id, in->user_id_len) : NULL;
    if (!p || !c)
        return;
    memcpy(c->user_id, p->key, sizeof p->key);
    snprintf(c->principal, sizeof c->principal, "%s", p->name);
    c->allowed_mask = p->levels_mask && p->role != PROTO_ROLE_ADMIN ? p->levels_mask & b->all_mask : b->all_mask;
    c->levels_mask &= c->allowed_mask;
}

int auth_secret_load(const char *path, char *secret, char *err, size_t errlen)
{
    char text[4096];
    struct stat st;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return SL_ENOTFOUND;
    }
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    if (fstat(fileno(f), &st) == 0 && (st.st_mode & 077))
        log_warn("auth", "%s is readable by others (mode %03o): it holds the broker's secret key; chmod 600 it",
                 path, (unsigned)(st.st_mode & 0777));
    fclose(f);
    int rc = n < sizeof text - 1 ? proto_key_parse(text, NULL, secret) : SL_EINVAL;
    if (rc == SL_OK && !secret[0])
        rc = SL_EINVAL;
    if (rc != SL_OK)
        snprintf(err, errlen, "%s: not a key file with a secret key (as `sluice keygen` writes: secret = <40 Z85 characters>)",
                 path);
    return rc;
}

/* ---- the check ---- */

static int tag_allowed(const auth_principal *p, const proto_msg *m)
{
    char tag[PROTO_MAX_TAG + 1];
    if (!p->ntags)
        return 1;
    if (m->tag.len) /* an untagged PUT is checked as tag "" */
        memcpy(tag, m->tag.ptr, m->tag.len);
    tag[m->tag.len] = '\0';
    for (unsigned i = 0; i < p->ntags; i++)
        if (fnmatch(p->tags[i], tag, 0) == 0)
            return 1;
    return 0;
}

/* scope_check keeps a PUT or a subscription within p's levels and tags. */
static int scope_check(const bk *b, const auth_principal *p, const proto_msg *m, char *text, size_t len)
{
    if (m->type == PROTO_PUT) {
        uint64_t l = admit_level(b, m);
        if (p->levels_mask && l < b->cfg.levels && !(p->levels_mask & (1u << l))) {
            snprintf(text, len, "PUT to level %s is not permitted for %s (role %s, levels limited)",
                     b->cfg.level_names[l], p->name, proto_role_name(p->role));
            return SL_EPERM;
        }
        if (!tag_allowed(p, m)) {
            snprintf(text, len, "PUT with tag '%.*s' is not permitted for %s (role %s, tags limited)",
                     (int)m->tag.len, m->tag.ptr, p->name, proto_role_name(p->role));
            return SL_EPERM;
        }
    }
    if (m->type == PROTO_HELLO && p->levels_mask && (m->present & PF(levels)))
        for (uint32_t i = 0; i < m->levels.n; i++)
            if (m->levels.v[i] < b->cfg.levels && !(p->levels_mask & (1u << m->levels.v[i]))) {
                snprintf(text, len, "subscribing to level %s is not permitted for %s (role %s, levels limited)",
                         b->cfg.level_names[m->levels.v[i]], p->name, proto_role_name(p->role));
                return SL_EPERM;
            }
    return SL_OK;
}

/* needed returns the role m needs. */
static proto_role needed(const proto_msg *m)
{
    if (m->type == PROTO_ADMIN) {
        int c = proto_cmd_of(m->cmd.ptr, m->cmd.len);
        return c < 0 ? PROTO_ROLE_ADMIN : proto_cmd_role((proto_cmd)c);
    }
    if (m->type == PROTO_HELLO && (m->present & (PF(pool) | PF(levels) | PF(credit))))
        return PROTO_ROLE_CONSUMER;
    return proto_msg_role(m->type);
}

/* what_of names m for a refusal ("PUT", "ADMIN pool.resize"): formatted
 * only when a message is refused, not for every message checked. */
#define WHAT_BYTES (PROTO_MAX_NAME + 16)
static const char *what_of(const proto_msg *m, char *what)
{
    if (m->type == PROTO_ADMIN)
        snprintf(what, WHAT_BYTES, "ADMIN %.*s", (int)(m->cmd.len > PROTO_MAX_NAME ? PROTO_MAX_NAME : m->cmd.len),
                 m->cmd.ptr);
    else
        snprintf(what, WHAT_BYTES, "%s", proto_name(m->type));
    return what;
}

static int refuse(bk *b, const net_in *in, const char *text)
{
    b->auth_refused++;
    if (b->auth_refused <= 10 || b->auth_refused % 1000 == 0)
        log_warn("auth", "refused #%llu: %s", (unsigned long long)b->auth_refused, text);
    conn *c = b->auth && in->sock == NET_MAIN ? member_find(b, in) : NULL;
    if (c && (!in->user_id || !auth_find(b->auth, in->user_id, in->user_id_len)))
        settle_drop_conn(b, c, SETTLE_END_LEFT);
    if (b->auth && in->user_id && !auth_find(b->auth, in->user_id, in->user_id_len)) /* a revoked key */
        peers_drop_fd(b->peers, in->fd, in->user_id, in->user_id_len);
    return SL_EPERM;
}

/* endpoint_refuses applies --admin-listen: what needs admin is served on
 * the admin endpoint only, and publishing and consuming on the main one
 * (and the stream one) only. */
static int endpoint_refuses(const bk *b, const net_in *in, proto_role need, const proto_msg *m, char *text,
                            size_t len)
{
    char what[WHAT_BYTES];
    if (!b->cfg.admin_listen[0])
        return 0;
    if ((in->sock == NET_MAIN || in->sock == NET_STREAM) && need == PROTO_ROLE_ADMIN) {
        snprintf(text, len, "%s is not permitted here: admin commands are served on the admin endpoint only",
                 what_of(m, what));
        return 1;
    }
    if (in->sock == NET_ADMIN && (need == PROTO_ROLE_PRODUCER || need == PROTO_ROLE_CONSUMER)) {
        snprintf(text, len, "%s is not permitted on the admin endpoint (role %s): publish and consume on the main one",
                 what_of(m, what), proto_role_name(need));
        return 1;
    }
    return 0;
}

int auth_check(bk *b, const net_in *in, const proto_msg *m, char *text, size_t len)
{
    char what[WHAT_BYTES];
    if (!b->auth && !b->cfg.admin_listen[0])
        return SL_OK;
    proto_role need = needed(m);
    if (endpoint_refuses(b, in, need, m, text, len))
        return refuse(b, in, text);
    if (!b->auth)
        return SL_OK;
    if (in->user_id && in->fd >= 0) /* which connection is whose, for revocation */
        peers_note(&b->peers, in->fd, in->user_id, in->user_id_len);
    const auth_principal *p = in->user_id ? auth_find(b->auth, in->user_id, in->user_id_len) : NULL;
    if (!p) {
        snprintf(text, len, "%s is not permitted: %s", what_of(m, what),
                 in->user_id ? "this connection's key is not (or no longer) in the auth file"
                             : "this connection has no User-Id (auth is on: CURVE keys required)");
        return refuse(b, in, text);
    }
    if (!proto_role_allows(p->role, need)) {
        snprintf(text, len, "%s is not permitted for %s (role %s; it needs %s)", what_of(m, what), p->name,
                 proto_role_name(p->role), proto_role_name(need));
        return refuse(b, in, text);
    }
    if (p->role != PROTO_ROLE_ADMIN && scope_check(b, p, m, text, len) != SL_OK)
        return refuse(b, in, text);
    return SL_OK;
}
