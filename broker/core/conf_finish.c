/*
 * conf_finish.c - what the settings decide once all are read: the checks
 * that look at several settings together, and what depends on the number
 * of levels.
 *
 * conf.c reads every setting from its one table (defaults, the INI file,
 * the command line), each checked on its own. What only their combination
 * can say is here: --auth and --curve-secret go together, and so do
 * --http-cert and --http-key; a listener other machines can reach needs
 * them or --insecure; --salvage needs --to, another directory; --ha needs
 * its group, node and replication endpoint, and the write-ahead log. Then
 * the level names (given, or high/normal/low, p0, p1, ...), the default
 * level and each tag rule's level are resolved by name or number, and the
 * map's ceiling is derived. Every error names the settings as the user
 * wrote them. Costs: once, at start and on each reload's parse.
 */
#include "conf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* level_of resolves a level name or number; -1 when it names no level. */
static int level_of(const conf *c, const char *text)
{
    for (unsigned l = 0; l < c->levels; l++)
        if (!strcmp(c->level_names[l], text))
            return (int)l;
    char *end;
    if (text[0] < '0' || text[0] > '9')
        return -1;
    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    return errno || *end || v >= c->levels ? -1 : (int)v;
}

/* exposed reports whether endpoint may be reached from other machines
 * (anything but ipc://, inproc:// and tcp:// on a loopback address). */
static int exposed(const char *endpoint)
{
    if (!strncmp(endpoint, "ipc://", 6) || !strncmp(endpoint, "inproc://", 9))
        return 0;
    if (strncmp(endpoint, "tcp://", 6))
        return 1;
    const char *host = endpoint + 6, *colon = strrchr(host, ':');
    size_t len = colon ? (size_t)(colon - host) : strlen(host);
    if (len >= 2 && host[0] == '[' && host[len - 1] == ']')
        host++, len -= 2;
    return !((len >= 4 && !strncmp(host, "127.", 4)) || (len == 9 && !strncmp(host, "localhost", 9)) ||
             (len == 3 && !strncmp(host, "::1", 3)));
}

/* wildcard reports whether endpoint binds every address of its machine
 * (a tcp:// endpoint whose host is 0.0.0.0, an asterisk, [::] or ::): no
 * other machine can reach it by that name. */
static int wildcard(const char *endpoint)
{
    if (strncmp(endpoint, "tcp://", 6))
        return 0;
    const char *host = endpoint + 6, *colon = strrchr(host, ':');
    size_t len = colon ? (size_t)(colon - host) : strlen(host);
    return (len == 1 && host[0] == '*') || (len == 7 && !strncmp(host, "0.0.0.0", 7)) ||
           (len == 4 && !strncmp(host, "[::]", 4)) || (len == 2 && !strncmp(host, "::", 2));
}

/* check_advertised: a node of a group tells the other node and the
 * clients where it is reached (the addresses it records in Redis, which a
 * standby's redirect and ha status give); by default what it binds, which
 * cannot be a wildcard: the address is given instead. */
static int check_advertised(conf *c, char *err, size_t errlen)
{
    struct {
        char *adv;
        const char *bound, *opt, *adv_opt, *who;
    } a[] = {{c->advertise, c->listen, "--listen", "--advertise", "clients the other node redirects"},
             {c->repl_advertise, c->repl_listen, "--repl-listen", "--repl-advertise", "the other node"}};
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
        int given = a[i].adv[0] != '\0';
        if (!given)
            snprintf(a[i].adv, sizeof c->advertise, "%s", a[i].bound);
        if (wildcard(a[i].adv)) {
            snprintf(err, errlen,
                     "%s %s binds every address, which %s cannot reach by that name: give %s with this "
                     "node's address (e.g. tcp://10.0.0.1:PORT)",
                     given ? a[i].adv_opt : a[i].opt, a[i].adv, a[i].who, a[i].adv_opt);
            return SL_EINVAL;
        }
    }
    return SL_OK;
}

/* http_exposed reports whether --http's ADDR:PORT may be reached from
 * other machines: any address but 127.x.x.x and localhost. */
static int http_exposed(const char *addr_port)
{
    const char *colon = strrchr(addr_port, ':');
    size_t len = colon ? (size_t)(colon - addr_port) : strlen(addr_port);
    return !((len >= 4 && !strncmp(addr_port, "127.", 4)) || (len == 9 && !strncmp(addr_port, "localhost", 9)));
}

/* check_security: --auth and --curve-secret go together, and a listener
 * other machines can reach needs them (or --insecure); --http-cert and
 * --http-key go together, and an --http other machines can reach needs
 * them (or --insecure). */
static int check_security(const conf *c, char *err, size_t errlen)
{
    if (!c->auth_file[0] != !c->curve_secret_file[0]) {
        snprintf(err, errlen, "%s needs %s too (principals are known by their CURVE keys)",
                 c->auth_file[0] ? "--auth" : "--curve-secret", c->auth_file[0] ? "--curve-secret" : "--auth");
        return SL_EINVAL;
    }
    if (!c->auth_file[0] && !c->insecure && c->admin_listen[0] && exposed(c->admin_listen)) {
        snprintf(err, errlen, "--admin-listen %s is reachable from other machines: give --auth and --curve-secret, "
                 "or --insecure", c->admin_listen);
        return SL_EINVAL;
    }
    if (c->stream_listen[0] && c->auth_file[0]) {
        snprintf(err, errlen, "--stream-listen %s carries no CURVE, so it cannot serve a broker with --auth: "
                 "clients with keys connect to --listen", c->stream_listen);
        return SL_EINVAL;
    }
    if (!c->insecure && c->stream_listen[0] && exposed(c->stream_listen)) {
        snprintf(err, errlen, "--stream-listen %s is reachable from other machines, and it carries no CURVE: "
                 "bind it to loopback or an ipc:// path, or give --insecure", c->stream_listen);
        return SL_EINVAL;
    }
    if (!c->http_cert[0] != !c->http_key[0]) {
        snprintf(err, errlen, "%s needs %s too (HTTPS takes a certificate and its key)",
                 c->http_cert[0] ? "--http-cert" : "--http-key", c->http_cert[0] ? "--http-key" : "--http-cert");
        return SL_EINVAL;
    }
    if (c->http[0] && !c->http_cert[0] && !c->insecure && http_exposed(c->http)) {
        snprintf(err, errlen,
                 "--http %s is reachable from other machines: give --http-cert and --http-key (HTTPS), or "
                 "--insecure to serve plain HTTP there (sessions and message bodies would cross the network "
                 "unencrypted)",
                 c->http);
        return SL_EINVAL;
    }
    if (!c->auth_file[0] && !c->insecure && exposed(c->listen)) {
        snprintf(err, errlen,
                 "--listen %s is reachable from other machines: give --auth and --curve-secret, or --insecure "
                 "to serve anyone who can reach it",
                 c->listen);
        return SL_EINVAL;
    }
    return SL_OK;
}

int conf_finish(conf *c, char *err, size_t errlen)
{
    if (!c->salvage_dir[0] != !c->salvage_to[0]) {
        snprintf(err, errlen, "--salvage DIR and --to NEWDIR go together (sluiced --salvage DIR --to NEWDIR)");
        return SL_EINVAL;
    }
    if (c->salvage_dir[0] && strcmp(c->salvage_dir, c->salvage_to) == 0) {
        snprintf(err, errlen, "--to must name another directory than --salvage: the damaged store is never written");
        return SL_EINVAL;
    }
    if (check_security(c, err, errlen) != SL_OK)
        return SL_EINVAL;
    if (c->ha_url[0] && (!c->ha_group[0] || !c->ha_node[0] || !c->repl_listen[0])) {
        snprintf(err, errlen, "--ha needs --ha-group, --ha-node and --repl-listen");
        return SL_EINVAL;
    }
    if (c->ha_url[0] && check_advertised(c, err, errlen) != SL_OK)
        return SL_EINVAL;
    if (c->repl_key_file[0] && !c->curve_secret_file[0]) {
        snprintf(err, errlen, "--repl-key needs --curve-secret (the group's key pair, which the stream is encrypted with)");
        return SL_EINVAL;
    }
    if (c->ha_url[0] && !c->wal_bytes) {
        snprintf(err, errlen, "--ha needs the write-ahead log (--wal-mb above 0): its records are the replication stream");
        return SL_EINVAL;
    }
    if (c->level_names_given && c->level_names_given != c->levels) {
        snprintf(err, errlen, "level names: %u names given for %u levels (--levels)", c->level_names_given,
                 c->levels);
        return SL_EINVAL;
    }
    if (!c->level_names_given)
        conf_default_names(c);
    if (!c->map_max_bytes)
        c->map_max_bytes = c->map_bytes * 4;
    if (c->map_max_bytes < c->map_bytes)
        c->map_max_bytes = c->map_bytes;
    c->default_level = c->levels / 2;
    if (c->default_level_text[0]) {
        int l = level_of(c, c->default_level_text);
        if (l < 0) {
            snprintf(err, errlen, "default level: '%s' is not a level name or a number from 0 to %u",
                     c->default_level_text, c->levels - 1);
            return SL_EINVAL;
        }
        c->default_level = (unsigned)l;
    }
    for (unsigned i = 0; i < c->ntag_rules; i++) {
        int l = level_of(c, c->tag_rules[i].level_text);
        if (l < 0) {
            snprintf(err, errlen, "tag rule '%s': '%s' is not a level name or a number from 0 to %u",
                     c->tag_rules[i].pattern, c->tag_rules[i].level_text, c->levels - 1);
            return SL_EINVAL;
        }
        c->tag_rules[i].level = (unsigned)l;
    }
    return SL_OK;
}
