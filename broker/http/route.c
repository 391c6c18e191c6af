/*
 * route.c - where each admin command lives in the JSON API, derived from
 * proto's PROTO_ADMIN_CMDS and PROTO_CMD_ROLES by one rule, so a command
 * added there is served here without a line of its own:
 *
 *   - "noun.verb": the collection is "nouns" when a field is named after
 *     the noun (level, pool, tag), else "noun" (sink, dead);
 *   - a command that requires that field names it in the path:
 *       /api/v1/levels/{level}/pause      level.pause
 *       /api/v1/pools/{pool}/resize       pool.resize
 *       /api/v1/tags/{tag}/set            tag.set
 *   - any other: the collection, then the verb, which list and show omit:
 *       /api/v1/levels        level.list   /api/v1/sink/set   sink.set
 *       /api/v1/dead          dead.list    /api/v1/dead/purge dead.purge
 *   - a command without a dot is its own name: /api/v1/explain;
 *   - a read (a command the monitor role may send) is a GET with its
 *     arguments in the query; anything else a POST with a JSON body.
 *
 * web.login is not served: its link is minted over ZeroMQ with the
 * caller's own key, never by a session.
 *
 * Costs: O(commands) per match, one name split each.
 */
#include "route.h"

#include <stdio.h>
#include <string.h>

/* field_named returns the field whose key is name[0..len), or -1. */
static int field_named(const char *name, size_t len)
{
    for (int f = 0; f < PROTO_F_COUNT_; f++) {
        const char *k = proto_field_key((proto_field)f);
        if (strlen(k) == len && !memcmp(k, name, len))
            return f;
    }
    return -1;
}

/* A command's place: its collection, whether it names its key, its verb. */
typedef struct place {
    char coll[PROTO_MAX_NAME + 2];
    int key;          /* the field named in the path, or -1 */
    const char *verb; /* NULL: none (list, show, or no dot) */
} place;

static int place_of(proto_cmd c, place *p)
{
    const char *name = proto_cmd_name(c), *dot = strchr(name, '.');
    proto_mask req;
    if (!strcmp(name, "web.login"))
        return -1;
    proto_cmd_def(c, &req, NULL, NULL, NULL);
    p->key = -1;
    p->verb = NULL;
    if (!dot) {
        snprintf(p->coll, sizeof p->coll, "%s", name);
        return 0;
    }
    size_t nl = (size_t)(dot - name);
    int f = field_named(name, nl);
    snprintf(p->coll, sizeof p->coll, "%.*s%s", (int)nl, name, f >= 0 ? "s" : "");
    if (f >= 0 && (req & ((proto_mask)1 << f)))
        p->key = f;
    if (strcmp(dot + 1, "list") && strcmp(dot + 1, "show"))
        p->verb = dot + 1;
    return 0;
}

int route_path(proto_cmd c, char *buf, size_t len)
{
    place p;
    if (place_of(c, &p) != 0)
        return -1;
    snprintf(buf, len, "/%s%s%s%s%s%s", p.coll, p.key >= 0 ? "/{" : "", p.key >= 0 ? proto_field_key(p.key) : "",
             p.key >= 0 ? "}" : "", p.verb ? "/" : "", p.verb ? p.verb : "");
    return proto_cmd_role(c) == PROTO_ROLE_MONITOR;
}

long route_unescape(const char *s, size_t len, char *out, size_t cap, int plus)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '%') {
            int hi, lo;
            if (i + 2 >= len)
                return -1;
            hi = s[i + 1], lo = s[i + 2];
            hi = hi >= '0' && hi <= '9' ? hi - '0' : hi >= 'a' && hi <= 'f' ? hi - 'a' + 10 : hi >= 'A' && hi <= 'F' ? hi - 'A' + 10 : -1;
            lo = lo >= '0' && lo <= '9' ? lo - '0' : lo >= 'a' && lo <= 'f' ? lo - 'a' + 10 : lo >= 'A' && lo <= 'F' ? lo - 'A' + 10 : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                return -1;
            c = (char)(hi << 4 | lo);
            i += 2;
        } else if (c == '+' && plus) {
            c = ' ';
        }
        if (n >= cap)
            return -1;
        out[n++] = c;
    }
    return (long)n;
}

int route_of(const char *path, route_hit *hit)
{
    if (*path != '/')
        return 0;
    path++;
    const char *s1 = strchr(path, '/');
    size_t l0 = s1 ? (size_t)(s1 - path) : strlen(path);
    for (int c = 0; c < PROTO_CMD_COUNT_; c++) {
        place p;
        if (place_of((proto_cmd)c, &p) != 0 || strlen(p.coll) != l0 || memcmp(p.coll, path, l0))
            continue;
        const char *rest = s1 ? s1 + 1 : NULL; /* after "coll/" */
        const char *key = NULL;
        size_t key_len = 0;
        if (p.key >= 0) {
            if (!rest || !*rest)
                continue;
            const char *s2 = strchr(rest, '/');
            key = rest;
            key_len = s2 ? (size_t)(s2 - rest) : strlen(rest);
            rest = s2 ? s2 + 1 : NULL;
        }
        if (p.verb ? !rest || strcmp(rest, p.verb) : rest != NULL)
            continue;
        hit->cmd = (proto_cmd)c;
        hit->get = proto_cmd_role((proto_cmd)c) == PROTO_ROLE_MONITOR;
        hit->key = p.key >= 0 ? (proto_field)p.key : PROTO_F_COUNT_;
        hit->key_len = 0;
        if (key) {
            long n = route_unescape(key, key_len, hit->key_text, sizeof hit->key_text - 1, 0);
            if (n <= 0)
                continue;
            hit->key_len = (size_t)n;
            hit->key_text[n] = '\0';
        }
        return 1;
    }
    return 0;
}
