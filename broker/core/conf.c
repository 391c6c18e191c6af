/*
 * conf.c - the broker's settings: one table, and everything that follows
 * from it.
 *
 * CONF_SETTINGS below has one line per setting: its INI key, a second INI
 * key if any, the long and short option, the INI section, how its value is
 * read (its type), the member of conf it sets, the default, the bounds, the
 * placeholder shown in --help and the help text. From that list come the
 * defaults (conf_defaults parses each default with the setting's own
 * parser), the getopt_long table, the INI file's keys, sluiced --help, the
 * manual pages sluiced(8) and sluice.conf(5) (conf_help.c) and every bounds
 * check; tests/e2e/test_install.c checks the man pages against --help. A
 * new ordinary setting is one line here and a member in conf; one that a
 * SIGHUP applies at once is also named in CONF_LIVE.
 *
 * Layers, later ones winning: the defaults, the INI file (--config), the
 * command line. Nothing is opened before everything has been read and
 * checked; every error names the setting as the user wrote it (--lease-ms on
 * the command line, lease_ms and file:line in the INI file).
 *
 * A default in parentheses describes a value derived by conf_finish once the
 * number of levels is known (level names, the default level, the map's
 * ceiling); it is shown, never parsed. In the INI file a key is accepted in
 * any section but [tag_rules], which holds only rule lines: the section in
 * the table is where the key is documented. The sections that declare live
 * settings ([level NAME], [pool NAME], [tag NAME]) reach inih as blank lines
 * (ini_read), and the [sink] keys that are not the table's are skipped:
 * admin/decl.c reads both (conf_decl.h holds their keys).
 *
 * Costs: a lookup walks the table (about thirty lines); this runs once.
 */
#include "conf.h"

#include <errno.h>
#include <getopt.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define DAY_MS (24ULL * 3600 * 1000)

/* X(key, INI alias, long option, short, section, type, member, default, min, max, unit, help) */
#define CONF_SETTINGS(X)                                                                                   \
    X(data, NULL, "data", 'd', "broker", STR, data_dir, "./sluice-data", 0, 0, "DIR", "data directory, created if missing; one broker per directory (locked)") \
    X(listen, NULL, "listen", 'l', "broker", STR, listen, "tcp://127.0.0.1:7470", 0, 0, "ENDPOINT", "ZeroMQ endpoint to bind, e.g. tcp://0.0.0.0:7470 or ipc:///run/sluice.sock") \
    X(curve_secret, NULL, "curve-secret", 0, "broker", STR, curve_secret_file, NULL, 0, 0, "FILE", "the broker's key file (sluice keygen NAME writes NAME.key): CURVE-encrypt every connection; needs --auth") \
    X(auth, NULL, "auth", 0, "broker", STR, auth_file, NULL, 0, 0, "FILE", "principals, one a line: NAME ROLE PUBLIC-KEY, optionally levels=L1,L2 and tags=GLOB,...; roles producer, consumer, monitor, admin, replica (a standby's --repl-key); re-read on SIGHUP") \
    X(admin_listen, NULL, "admin-listen", 0, "broker", STR, admin_listen, NULL, 0, 0, "ENDPOINT", "a second endpoint, such as ipc:///run/sluice-admin.sock: admin commands are then served there only, and publishing and consuming on --listen only") \
    X(stream_listen, NULL, "stream-listen", 0, "broker", STR, stream_listen, NULL, 0, 0, "ENDPOINT", "a plain-socket endpoint beside --listen, tcp://HOST:PORT or ipc:///PATH, for producers and requests (clients name it stream+tcp:// or stream+ipc://): no ZeroMQ I/O threads between a request and the loop, so a publish that waits for its confirmation returns sooner; no CURVE, so not with --auth; consumers use --listen") \
    X(insecure, NULL, "insecure", 0, "broker", BOOL, insecure, "off", 0, 0, NULL, "allow listening on a non-loopback address without --auth, and serving --http beyond loopback without TLS") \
    X(log_level, NULL, "log-level", 0, "broker", LOG_LEVEL, log_level, "info", 0, 0, "LEVEL", "error, warn, info or debug; logs go to stderr") \
    X(log_file, NULL, "log-file", 0, "broker", STR, log_file, NULL, 0, 0, "FILE", "append the log to FILE instead of stderr; SIGHUP reopens it (after rotation)") \
    X(map_size_mb, NULL, "map-size-mb", 0, "broker", MB, map_bytes, "8192", 1, 1ULL << 24, "MB", "LMDB map size; the file grows as used (kept at most 12 MiB ahead)") \
    X(map_max_mb, NULL, "map-max-mb", 0, "broker", MB, map_max_bytes, "(4 x --map-size-mb)", 1, 1ULL << 24, "MB", "the map grows up to this when 75% used and the disk has room; publishes stop at 90%") \
    X(wal_mb, NULL, "wal-mb", 0, "broker", MB, wal_bytes, "64", 0, 1ULL << 16, "MB", "the write-ahead log: a batch is confirmed after one flush of its record there, and LMDB commits what it holds at checkpoints; 0 = no log (each batch an LMDB commit: two flushes)") \
    X(wal_buffered, NULL, "wal-buffered", 0, "broker", BOOL, wal_buffered, "off", 0, 0, NULL, "write each log record through the page cache and flush it with fdatasync; by default records are written with O_DIRECT | O_DSYNC, durable when the write returns (no page cache, no separate fdatasync), where the file system allows it") \
    X(checkpoint_ms, NULL, "checkpoint-ms", 0, "broker", NUM, checkpoint_ms, "500", 1, 60000, "MS", "with the log: commit what it holds into LMDB at least this often (and when it is half used)") \
    X(max_body, NULL, "max-body", 0, "broker", NUM, max_body, "1048576", 1, PROTO_MAX_BODY, "BYTES", "largest message body accepted") \
    X(idem_window_ms, NULL, "idem-window-ms", 0, "broker", NUM, idem_window_ms, "300000", 1, 7 * DAY_MS, "MS", "how long an idempotency key is remembered") \
    X(levels, "count", "levels", 0, "levels", NUM, levels, "3", 1, PROTO_MAX_LEVELS, "N", "number of priority levels; 0 is the highest") \
    X(level_names, "names", "level-names", 0, "levels", NAMES, level_names, "(high,normal,low for 3 levels, else p0,p1,...)", 0, 0, "LIST", "comma-separated names, one per level") \
    X(default_level, "default", "default-level", 0, "levels", LEVEL, default_level_text, "(the middle level)", 0, 0, "L", "level for publishes that name none, by name or number") \
    X(overdue_share_pct, NULL, "overdue-share", 0, "levels", NUM, overdue_share_pct, "50", 1, 100, "PCT", "most deliveries in 100 that may go to overdue messages, which jump the queue") \
    X(level_max_messages, NULL, "level-max-messages", 0, "levels", NUM, level_max_messages, "0", 0, UINT64_MAX, "N", "refuse publishes (SL_EFULL) to a level holding N messages; 0 = no limit") \
    X(level_max_bytes, NULL, "level-max-bytes", 0, "levels", NUM, level_max_bytes, "0", 0, UINT64_MAX, "B", "refuse publishes to a level whose pages hold B bytes; 0 = no limit") \
    X(tag_rules_override, NULL, "tag-rules-override", 0, "levels", BOOL, tag_rules_override, "off", 0, 0, NULL, "tag rules apply to publishes that name a level too") \
    X(lease_ms, NULL, "lease-ms", 0, "leases", NUM, lease_ms, "30000", 100, DAY_MS, "MS", "how long a consumer holds a delivery") \
    X(max_attempts, NULL, "max-attempts", 0, "leases", NUM, max_attempts, "5", 1, 1000000, "N", "deliveries before a message becomes a dead letter") \
    X(max_lease_ms, NULL, "max-lease", 0, "leases", NUM, max_lease_ms, "3600000", 100, DAY_MS, "MS", "the longest lease a TOUCH may ask for (never less than --lease-ms); its OK says the lease granted") \
    X(max_nack_delay_ms, NULL, "max-nack-delay", 0, "leases", NUM, max_nack_delay_ms, "86400000", 0, PROTO_MAX_TIME_MS, "MS", "the longest delay a NACK may ask for; a longer one is cut to this") \
    X(heartbeat_ms, NULL, "heartbeat-ms", 0, "leases", NUM, heartbeat_ms, "1000", 100, 60000, "MS", "heartbeat interval; a peer silent three intervals is gone") \
    X(ack_flush_ms, NULL, "ack-flush-ms", 0, "leases", NUM, ack_flush_ms, "10", 0, 1000, "MS", "longest an acknowledgement's delete waits for a commit; 0 = every ACK's OK waits for its commit") \
    X(consumer_max_inflight, NULL, "consumer-max-inflight", 0, "leases", NUM, consumer_max_inflight, "10000", 1, 100000, "N", "deliveries one consumer may hold, whatever its credit") \
    X(pool_reap_ms, NULL, "pool-reap-ms", 0, "leases", NUM, pool_reap_ms, "60000", 100, 86400000, "MS", "an empty pool nothing was set on (size, pause, autoscale) goes away after this long idle") \
    X(pool_max, NULL, "pool-max", 0, "leases", NUM, pool_max, "64", 1, PROTO_MAX_POOLS, "N", "the most consumer pools; see --pool-reap-ms for the pools that go away by themselves") \
    X(dead_max_messages, NULL, "dead-max-messages", 0, "leases", NUM, dead_max_messages, "0", 0, UINT64_MAX, "N", "keep at most N dead letters in all; past it the oldest (smallest id) go first; 0 = no limit") \
    X(dead_max_age, NULL, "dead-max-age", 0, "leases", NUM, dead_max_age_s, "0", 0, 100ULL * 365 * 86400, "S", "drop dead letters that died more than S seconds ago; 0 = keep them") \
    X(throttle_backoff_ms, NULL, "throttle-backoff-ms", 0, "sink", NUM, throttle_backoff_ms, "1000", 1, 3600000, "MS", "dispatch pause after a THROTTLED that gives no retry-after") \
    X(max_throttle_pause_ms, NULL, "max-throttle-pause", 0, "sink", NUM, max_throttle_pause_ms, "300000", 1, DAY_MS, "MS", "the longest pause of the sink or of a level that one THROTTLED may cause, whatever its retry-after (a tag's own pause: a day); sluice sink resume and level resume end one at once") \
    X(breaker_threshold_pct, NULL, "breaker-threshold", 0, "sink", NUM, breaker_threshold_pct, "50", 0, 100, "PCT", "open the circuit breaker when more than PCT% of the last deliveries failed (NACK or expired lease); 0 = off") \
    X(breaker_window, NULL, "breaker-window", 0, "sink", NUM, breaker_window, "20", 2, 1024, "N", "deliveries the breaker looks back over") \
    X(breaker_cooldown_ms, NULL, "breaker-cooldown-ms", 0, "sink", NUM, breaker_cooldown_ms, "5000", 1, 3600000, "MS", "how long an open breaker waits before one probe") \
    X(coord, NULL, "coord", 0, "coord", STR, coord_url, NULL, 0, 0, "URL", "Redis holding the sink's capacity leases, shared with other brokers: redis://HOST:PORT[/DB] or unix:///PATH[?db=N]; unset = this broker alone meters the sink") \
    X(coord_name, NULL, "coord-name", 0, "coord", STR, coord_name, "sink", 0, 0, "SINK", "the shared sink's name: brokers naming the same one share its rate") \
    X(reserved_rate, NULL, "reserved-rate", 0, "coord", NUM, reserved_rate, "0", 0, 100000000, "RATE", "units per second this broker may always send to the shared sink, Redis or not") \
    X(coord_ttl_ms, NULL, "coord-ttl-ms", 0, "coord", NUM, coord_ttl_ms, "3000", 300, 600000, "MS", "lifetime of a capacity lease; renewed every third of it") \
    X(coord_slices, NULL, "coord-slices", 0, "coord", NUM, coord_slices, "100", 1, 10000, "N", "slices the shared rate is cut into (the same on every broker)") \
    X(coord_user, NULL, "coord-user", 0, "coord", STR, coord_user, NULL, 0, 0, "USER", "Redis ACL user (or SLUICE_COORD_USER)") \
    X(coord_password_file, NULL, "coord-password-file", 0, "coord", STR, coord_password_file, NULL, 0, 0, "FILE", "file holding the Redis password (or SLUICE_COORD_PASSWORD); never on the command line") \
    X(ha, NULL, "ha", 0, "ha", STR, ha_url, NULL, 0, 0, "URL", "Redis deciding which node of a high-availability group is the primary (URL forms as --coord): this node replicates to, or from, its group's other node; needs --ha-group, --ha-node, --repl-listen and the write-ahead log; unset = no replication") \
    X(ha_group, NULL, "ha-group", 0, "ha", STR, ha_group, NULL, 0, 0, "NAME", "the group's name: the two nodes of a group name the same one") \
    X(ha_node, NULL, "ha-node", 0, "ha", STR, ha_node, NULL, 0, 0, "NAME", "this node's name in its group (unique, stable across restarts)") \
    X(repl_listen, NULL, "repl-listen", 0, "ha", STR, repl_listen, NULL, 0, 0, "ENDPOINT", "ZeroMQ endpoint this node serves its replication stream on while primary, as the other node reaches it (e.g. tcp://10.0.0.1:7480)") \
    X(advertise, NULL, "advertise", 0, "ha", STR, advertise, NULL, 0, 0, "ENDPOINT", "where clients reach this node, as a standby's redirect and ha status give it (default: --listen); needed when --listen binds every address (tcp://0.0.0.0:7470) or clients come through NAT or a proxy") \
    X(repl_advertise, NULL, "repl-advertise", 0, "ha", STR, repl_advertise, NULL, 0, 0, "ENDPOINT", "where the other node reaches this node's replication stream (default: --repl-listen); needed when --repl-listen binds every address or the stream goes through NAT or a proxy") \
    X(ha_ttl_ms, NULL, "ha-ttl-ms", 0, "ha", NUM, ha_ttl_ms, "5000", 600, 600000, "MS", "lifetime of the primary's lease in Redis; renewed every third of it") \
    X(repl_standby_timeout_ms, NULL, "repl-standby-timeout-ms", 0, "ha", NUM, repl_standby_timeout_ms, "2000", 100, 600000, "MS", "a primary whose standby acknowledged nothing for this long records sync = none in Redis and confirms alone") \
    X(repl_strict, NULL, "repl-strict", 0, "ha", BOOL, repl_strict, "off", 0, 0, NULL, "never confirm alone: without an in-sync standby, publishes wait (and time out at the client) instead") \
    X(repl_key, NULL, "repl-key", 0, "ha", STR, repl_key_file, NULL, 0, 0, "FILE", "with --curve-secret: the key pair (sluice keygen) this node presents on the replication stream as a standby, instead of the group's; its public key must be in the primary's --auth file with the role replica") \
    X(repl_buffer_mb, NULL, "repl-buffer-mb", 0, "ha", MB, repl_buffer_bytes, "64", 1, 1ULL << 14, "MB", "the primary keeps this much of its recent stream in memory, for a standby that reconnects to resume from") \
    X(http, NULL, "http", 0, "http", STR, http, NULL, 0, 0, "ADDR:PORT", "serve the web console at http://ADDR:PORT/, its JSON API under /api/v1/ and Prometheus metrics at /metrics (IPv4, e.g. 127.0.0.1:9470; port 0 picks one and logs it); off by default; beyond loopback it needs --http-cert and --http-key, or --insecure") \
    X(metrics, NULL, "metrics", 0, "http", STR, http, NULL, 0, 0, "ADDR:PORT", "the same as --http (its name when the server served only /metrics)") \
    X(http_cert, NULL, "http-cert", 0, "http", STR, http_cert, NULL, 0, 0, "FILE", "serve HTTPS: the certificate chain (PEM); needs --http-key") \
    X(http_key, NULL, "http-key", 0, "http", STR, http_key, NULL, 0, 0, "FILE", "the private key of --http-cert (PEM, unencrypted); keep it mode 0600") \
    X(http_max_conns, NULL, "http-max-conns", 0, "http", NUM, http_max_conns, "1024", 16, 65536, "N", "the most HTTP connections at once; a new one past it closes the one idle longest, or is refused") \
    X(http_max_conns_per_addr, NULL, "http-max-conns-per-addr", 0, "http", NUM, http_max_conns_per_addr, "64", 1, 65536, "N", "the most HTTP connections from one address; a new one past it closes that address's connection idle longest, or is refused") \
    X(http_header_timeout_ms, NULL, "http-header-timeout-ms", 0, "http", NUM, http_header_timeout_ms, "10000", 100, 600000, "MS", "a connection must send a whole request (headers and body) within this long of opening or of its last reply, else it is closed") \
    X(http_idle_timeout_ms, NULL, "http-idle-timeout-ms", 0, "http", NUM, http_idle_timeout_ms, "60000", 1000, 3600000, "MS", "close a connection on which nothing moved for this long") \
    X(http_session_idle_ms, NULL, "http-session-idle-ms", 0, "http", NUM, http_session_idle_ms, "1800000", 1000, 7 * DAY_MS, "MS", "with --auth: a console session unused this long ends (each lasts at most the --ttl of its sluice web login)") \
    X(rule, NULL, "tag-rule", 0, "tag_rules", RULE, tag_rules, NULL, 0, 0, "GLOB=LEVEL", "a publish that names no level and whose tag matches GLOB (fnmatch) goes to LEVEL; repeatable, the first match wins; in the INI file: rule = GLOB LEVEL") \
    X(config, NULL, "config", 'c', NULL, FILE, config_file, NULL, 0, 0, "FILE", "INI file with the settings above, such as /etc/sluice/sluice.conf (sluice.conf(5)); the command line wins over it") \
    X(ready_fd, NULL, "ready-fd", 0, NULL, NUM, ready_fd, NULL, 0, INT_MAX, "FD", "write \"READY\\n\" to FD once serving, then close it (for supervisors and tests)") \
    X(salvage, NULL, "salvage", 0, NULL, STR, salvage_dir, NULL, 0, 0, "DIR", "do not serve: read the stopped broker's data directory DIR without LMDB (every page checked, damaged pages read record by record, then its log), copy every record whose checksum holds into a new store in --to NEWDIR, say what could not be recovered, and exit (`sluice salvage` runs this)") \
    X(salvage_to, NULL, "to", 0, NULL, STR, salvage_to, NULL, 0, 0, "NEWDIR", "with --salvage: the new data directory, made if missing (it must not hold a store); then run sluiced --data NEWDIR") \
    X(man, NULL, "man", 0, NULL, ACTION, action, NULL, CONF_MAN, CONF_MAN, NULL, "write the manual page sluiced(8), in roff, to standard output; --man=sluice.conf writes sluice.conf(5), the config file and its keys (make builds and installs both)") \
    X(help, NULL, "help", 'h', NULL, ACTION, action, NULL, CONF_HELP, CONF_HELP, NULL, "show this help") \
    X(version, NULL, "version", 0, NULL, ACTION, action, NULL, CONF_VERSION, CONF_VERSION, NULL, "show the version")

/* The INI sections, in the order --help shows them. */
const conf_section conf_sections[] = {{"broker", "The broker and its store"}, {"levels", "Priority levels"},
                {"leases", "Deliveries and leases"},
                {"sink", "Protecting the sink: throttling and the circuit breaker"},
                {"coord", "Several brokers sharing one sink (capacity leases in Redis)"},
                {"ha", "High availability: a primary and a synchronous standby (leadership in Redis)"},
                {"http", "The web console, the JSON API and /metrics"},
                {"tag_rules", "Tag rules"}, {NULL, "Command line only"}};
const size_t conf_nsections = sizeof conf_sections / sizeof conf_sections[0];

enum {
#define CONF_INDEX_(key, ...) I_##key,
    CONF_SETTINGS(CONF_INDEX_)
#undef CONF_INDEX_
    I_COUNT,
    OPT_BASE = 256 /* getopt values of options without a short form: OPT_BASE + index */
};

static const conf_setting table[] = {
#define CONF_LINE_(key, alias, lopt, sopt, sect, type, member, def, lo, hi, unit, help)                     \
    {#key, alias, lopt, sopt, sect, CONF_##type, offsetof(conf, member), sizeof(((conf *)0)->member), def, \
     lo, hi, unit, help},
    CONF_SETTINGS(CONF_LINE_)
#undef CONF_LINE_
};

/* A number's member must hold its largest value (MB: in bytes). */
#define CONF_FITS_(key, alias, lopt, sopt, sect, type, member, def, lo, hi, ...)                            \
    _Static_assert((CONF_##type != CONF_NUM && CONF_##type != CONF_MB) || sizeof(((conf *)0)->member) == 8 || \
                       (uint64_t)(hi) << (CONF_##type == CONF_MB ? 20 : 0) <= UINT32_MAX,                  \
                   #key ": its member is too small for its bounds");
CONF_SETTINGS(CONF_FITS_)
#undef CONF_FITS_

/* Flags and actions take no value, but --man may name its page (--man=sluice.conf). */
static const struct option options[] = {
#define CONF_OPT_(key, alias, lopt, sopt, sect, type, member, def, lo, ...)                                \
    {lopt,                                                                                                 \
     CONF_##type == CONF_ACTION && (lo) == CONF_MAN                           ? optional_argument          \
     : CONF_##type == CONF_BOOL || CONF_##type == CONF_ACTION                 ? no_argument                \
                                                                              : required_argument,         \
     NULL, sopt ? sopt : OPT_BASE + I_##key},
    CONF_SETTINGS(CONF_OPT_)
#undef CONF_OPT_
    {NULL, 0, NULL, 0},
};

/* ---- one parse function per type ---- */

/* The setting being set, how the user named it, and where errors go. */
typedef struct pctx {
    conf *c;
    const conf_setting *s;
    const char *as;   /* "--lease-ms" or "lease_ms" */
    int ini;
    char *err;
    size_t errlen;
} pctx;

__attribute__((format(printf, 2, 3))) static int fail(pctx *p, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errlen, "%s: %s", p->as, msg);
    return SL_EINVAL;
}

static void *member(pctx *p)
{
    return (char *)p->c + p->s->offset;
}

static int number(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    if (s[0] < '0' || s[0] > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_str(pctx *p, const char *v)
{
    if (!*v || strlen(v) >= p->s->size)
        return fail(p, "must be 1..%zu characters", p->s->size - 1);
    strcpy(member(p), v);
    return SL_OK;
}

static int parse_num(pctx *p, const char *v)
{
    uint64_t n;
    if (number(v, p->s->min, p->s->max, &n))
        return fail(p, "'%s' is not a number from %llu to %llu", v, (unsigned long long)p->s->min,
                    (unsigned long long)p->s->max);
    if (p->s->type == CONF_MB)
        n <<= 20;
    if (p->s->size == sizeof(uint64_t)) {
        memcpy(member(p), &n, sizeof n);
    } else {
        uint32_t n32 = (uint32_t)n; /* unsigned, uint32_t and int members; max fits (CONF_FITS_) */
        memcpy(member(p), &n32, sizeof n32);
    }
    return SL_OK;
}

static int parse_bool(pctx *p, const char *v)
{
    static const char *const words[] = {"no", "yes", "false", "true", "off", "on"};
    int i = 0;
    while (v && i < 6 && strcmp(v, words[i]))
        i++;
    if (v && i == 6)
        return fail(p, "'%s' is not yes or no", v);
    *(int *)member(p) = v ? i % 2 : 1; /* no value: a flag on the command line */
    return SL_OK;
}

static int parse_log_level(pctx *p, const char *v)
{
    int lvl = log_parse_level(v);
    if (lvl < 0)
        return fail(p, "'%s' is not error, warn, info or debug", v);
    *(int *)member(p) = lvl;
    return SL_OK;
}

static int parse_names(pctx *p, const char *v)
{
    char buf[PROTO_MAX_LEVELS * (PROTO_MAX_NAME + 2)];
    conf *c = p->c;
    unsigned n = 0;
    if (strlen(v) >= sizeof buf)
        return fail(p, "list too long");
    strcpy(buf, v);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == PROTO_MAX_LEVELS || strlen(tok) > PROTO_MAX_NAME || strspn(tok, "0123456789") == strlen(tok))
            return fail(p, "'%s': names are 1..%d characters, not all digits, at most %d of them", tok,
                        PROTO_MAX_NAME, PROTO_MAX_LEVELS);
        for (unsigned j = 0; j < n; j++)
            if (!strcmp(c->level_names[j], tok))
                return fail(p, "'%s' appears twice", tok);
        strcpy(c->level_names[n++], tok);
    }
    if (!n)
        return fail(p, "no names given");
    c->level_names_given = n;
    return SL_OK;
}

static int parse_level(pctx *p, const char *v)
{
    if (!*v || strlen(v) > PROTO_MAX_NAME)
        return fail(p, "'%s' is not a level name or number", v);
    strcpy(member(p), v);
    return SL_OK;
}

static int parse_rule(pctx *p, const char *v)
{
    conf *c = p->c;
    const char *sep = strrchr(v, p->ini ? ' ' : '=');
    if (!sep)
        return fail(p, p->ini ? "'%s': expected GLOB LEVEL" : "'%s': expected GLOB=LEVEL", v);
    size_t glob_len = (size_t)(sep - v);
    if (c->ntag_rules == CONF_MAX_TAG_RULES)
        return fail(p, "more than %d tag rules", CONF_MAX_TAG_RULES);
    if (!glob_len || glob_len > PROTO_MAX_TAG || !sep[1] || strlen(sep + 1) > PROTO_MAX_NAME)
        return fail(p, "'%s': a glob of 1..%d bytes and a level, please", v, PROTO_MAX_TAG);
    conf_tag_rule *r = &c->tag_rules[c->ntag_rules++];
    memcpy(r->pattern, v, glob_len);
    r->pattern[glob_len] = '\0';
    strcpy(r->level_text, sep + 1);
    return SL_OK;
}

/* parse_action sets the action; --man's value, if any, names the page. */
static int parse_action(pctx *p, const char *v)
{
    if (p->s->min == CONF_MAN) {
        if (!v || !strcmp(v, "sluiced"))
            p->c->man_section = 8;
        else if (!strcmp(v, "sluice.conf"))
            p->c->man_section = 5;
        else
            return fail(p, "'%s' is no page of sluiced: sluiced or sluice.conf", v);
    }
    *(int *)member(p) = (int)p->s->min;
    return SL_OK;
}

static int (*const parsers[])(pctx *, const char *) = {
    [CONF_STR] = parse_str,         [CONF_NUM] = parse_num,     [CONF_MB] = parse_num,
    [CONF_BOOL] = parse_bool,       [CONF_LOG_LEVEL] = parse_log_level,
    [CONF_NAMES] = parse_names,     [CONF_LEVEL] = parse_level, [CONF_RULE] = parse_rule,
    [CONF_FILE] = parse_str,        [CONF_ACTION] = parse_action,
};

static int set(pctx *p, const conf_setting *s, const char *as, const char *value)
{
    p->s = s;
    p->as = as;
    return parsers[s->type](p, value);
}

/* ---- the table ---- */

/* The settings a SIGHUP applies at once, by INI key: those read where they
 * are used, so that a new value applies to what comes next. reload.c keeps
 * the same list as RELOAD_LIVE; the documentation reads this one. */
#define CONF_LIVE(X)                                                                                       \
    X(log_level) X(lease_ms) X(max_attempts) X(ack_flush_ms) X(consumer_max_inflight)                      \
    X(throttle_backoff_ms) X(level_max_messages) X(level_max_bytes) X(idem_window_ms) X(rule)              \
    X(tag_rules_override) X(max_lease_ms) X(max_nack_delay_ms) X(max_throttle_pause_ms)

#define CONF_LIVE_CHECK_(k) _Static_assert(I_##k < I_COUNT, #k ": CONF_LIVE names no setting");
CONF_LIVE(CONF_LIVE_CHECK_)
#undef CONF_LIVE_CHECK_

int conf_setting_live(const conf_setting *s)
{
    static const char *const live[] = {
#define CONF_LIVE_KEY_(k) #k,
        CONF_LIVE(CONF_LIVE_KEY_)
#undef CONF_LIVE_KEY_
    };
    for (size_t i = 0; s->section && i < sizeof live / sizeof live[0]; i++)
        if (!strcmp(live[i], s->key))
            return 1;
    return 0;
}

size_t conf_setting_count(void)
{
    return I_COUNT;
}

const conf_setting *conf_setting_at(size_t i)
{
    return i < I_COUNT ? &table[i] : NULL;
}

const char *conf_default_text(const conf_setting *s, char *buf, size_t len)
{
    const char *d = s->def ? s->def : "";
    if (d[0] == '(')
        snprintf(buf, len, "%.*s", (int)strlen(d) - 2, d + 1);
    else
        snprintf(buf, len, "%s", d);
    return buf;
}

void conf_default_names(conf *c)
{
    static const char *const three[] = {"high", "normal", "low"};
    for (unsigned l = 0; l < PROTO_MAX_LEVELS; l++)
        if (c->levels == 3 && l < 3)
            strcpy(c->level_names[l], three[l]);
        else
            snprintf(c->level_names[l], sizeof c->level_names[l], "p%u", l);
}

void conf_defaults(conf *cfg)
{
    char err[256];
    pctx p = {.c = cfg, .err = err, .errlen = sizeof err};
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < I_COUNT; i++) {
        const conf_setting *s = &table[i];
        /* a default that does not parse is a bug in the table: stop at once */
        if (s->def && s->def[0] != '(' && set(&p, s, s->key, s->def) != SL_OK) {
            fprintf(stderr, "conf.c: bad default: %s\n", err);
            abort();
        }
    }
    conf_default_names(cfg);
    cfg->default_level = cfg->levels / 2;
    cfg->soft_limit_pct = 90; /* not a setting: publishes stop at 90 % of the map */
    cfg->ready_fd = -1;
    cfg->man_section = 8;
}

/* ---- the INI file ---- */

typedef struct ini_state {
    pctx p;
    int failed;
} ini_state;

static const conf_setting *ini_find(const char *section, const char *key)
{
    int rules = !strcmp(section, "tag_rules");
    for (size_t i = 0; i < I_COUNT; i++) {
        const conf_setting *s = &table[i];
        if (!s->section || rules != !strcmp(s->section, "tag_rules"))
            continue;
        if (!strcmp(s->key, key) || (s->alias && !strcmp(s->alias, key)))
            return s;
    }
    return NULL;
}

int conf_ini_known(const char *section, const char *key)
{
    return ini_find(section, key) != NULL;
}

/* declared_section tells whether the section header line (its text after
 * '[') opens a declaration: [level NAME], [pool NAME], [tag NAME]. */
int conf_declared_section(const char *name)
{
    static const char *const kinds[] = {"level", "pool", "tag"};
    while (*name == ' ' || *name == '\t')
        name++;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        size_t n = strlen(kinds[i]);
        if (!strncmp(name, kinds[i], n) && (name[n] == ' ' || name[n] == '\t'))
            return 1;
    }
    return 0;
}

static int ini_cb(void *user, const char *section, const char *key, const char *value)
{
    ini_state *st = user;
    if (st->failed)
        return 0; /* keep the first error; inih reports its line */
    int known = 0;
    for (size_t i = 0; conf_sections[i].name; i++)
        known |= !strcmp(section, conf_sections[i].name);
    const conf_setting *s = known ? ini_find(section, key) : NULL;
    if (!s && !strcmp(section, "sink"))
        return 1; /* the sink's limits, declared in the CLI's syntax: decl.c reads them, and refuses the unknown */
    if (!section[0])
        snprintf(st->p.err, st->p.errlen, "'%s' comes before any [section]", key);
    else if (!known)
        snprintf(st->p.err, st->p.errlen, "unknown section [%s]; sections are [broker], [levels], "
                 "[leases], [sink], [coord], [ha], [http] and [tag_rules]", section);
    else if (!s)
        snprintf(st->p.err, st->p.errlen, "unknown key '%s' in [%s]; see sluiced --help", key, section);
    st->failed = !s || set(&st->p, s, key, value) != SL_OK;
    return !st->failed;
}

/* The file as inih reads it: the lines of declaration sections ([level
 * NAME], [pool NAME], [tag NAME]: admin/decl.c reads them, names of any
 * length included) become empty lines, so that inih sees only the broker's
 * own sections and its line numbers stay the file's. */
typedef struct ini_lines {
    FILE *f;
    char *line;      /* the line being handed out, in pieces of inih's size */
    size_t cap, at, len;
    int declared;    /* inside a declaration section */
} ini_lines;

static char *ini_read(char *str, int num, void *stream)
{
    ini_lines *r = stream;
    if (r->at >= r->len) {
        ssize_t n = getline(&r->line, &r->cap, r->f);
        if (n <= 0)
            return NULL;
        r->len = (size_t)n;
        r->at = 0;
        const char *p = r->line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '[')
            r->declared = conf_declared_section(p + 1);
        if (r->declared) {
            r->len = 0;
            snprintf(str, (size_t)num, "\n");
            return str;
        }
    }
    size_t take = r->len - r->at < (size_t)num - 1 ? r->len - r->at : (size_t)num - 1; /* as fgets would */
    memcpy(str, r->line + r->at, take);
    str[take] = '\0';
    r->at += take;
    return str;
}

int conf_load_ini(conf *cfg, const char *path, char *err, size_t errlen)
{
    char msg[512] = "";
    ini_state st = {.p = {.c = cfg, .ini = 1, .err = msg, .errlen = sizeof msg}};
    ini_lines r = {.f = fopen(path, "re")};
    int line = r.f ? ini_parse_stream(ini_read, &r, ini_cb, &st) : -1;
    int read_errno = errno;
    if (r.f)
        fclose(r.f);
    free(r.line);
    if (line < 0) {
        snprintf(err, errlen, "cannot read config file %s: %s", path,
                 line == -1 ? strerror(read_errno) : "out of memory");
        return SL_ENOTFOUND;
    }
    if (line > 0) {
        snprintf(err, errlen, "%s:%d: %s", path, line, msg[0] ? msg : "expected [section] or key = value");
        return SL_EINVAL;
    }
    return SL_OK;
}

/* ---- the command line ---- */

static const conf_setting *by_getopt(int opt)
{
    if (opt >= OPT_BASE)
        return opt - OPT_BASE < I_COUNT ? &table[opt - OPT_BASE] : NULL;
    for (size_t i = 0; i < I_COUNT; i++)
        if (table[i].short_opt == opt)
            return &table[i];
    return NULL;
}

static int takes_no_value(const char *name, size_t len)
{
    for (size_t i = 0; i < I_COUNT; i++)
        if (strlen(table[i].long_opt) == len && !strncmp(table[i].long_opt, name, len))
            return options[i].has_arg == no_argument;
    return 0;
}

int conf_parse_args(conf *cfg, int argc, char **argv, char *err, size_t errlen)
{
    char shorts[2 * I_COUNT + 2] = ":", as[80];
    pctx p = {.c = cfg, .err = err, .errlen = errlen};
    for (size_t i = 0, n = 1; i < I_COUNT; i++)
        if (table[i].short_opt) {
            shorts[n++] = (char)table[i].short_opt;
            if (options[i].has_arg)
                shorts[n++] = ':';
        }
    /* pass 1: help, version, config file; pass 2: everything else */
    for (int pass = 1; pass <= 2; pass++) {
        int opt, rc;
        opterr = 0;
        optind = 0;
        while ((opt = getopt_long(argc, argv, shorts, options, NULL)) != -1) {
            const conf_setting *s = by_getopt(opt);
            if (opt == '?' || opt == ':') {
                const char *arg = argv[optind - 1], *eq = strchr(arg, '=');
                snprintf(err, errlen, opt == ':' ? "option '%s' needs a value; try sluiced --help"
                         : eq && !strncmp(arg, "--", 2) && takes_no_value(arg + 2, (size_t)(eq - arg - 2))
                             ? "option '%s' takes no value; try sluiced --help"
                             : "unknown option '%s'; try sluiced --help",
                         arg);
                return SL_EINVAL;
            }
            int early = s->type == CONF_ACTION || s->type == CONF_FILE;
            if (early != (pass == 1))
                continue;
            snprintf(as, sizeof as, "--%s", s->long_opt);
            if ((rc = set(&p, s, as, optarg)) != SL_OK)
                return rc;
            if (cfg->action != CONF_RUN)
                return SL_OK;
        }
        if (optind < argc) {
            snprintf(err, errlen, "unexpected argument '%s'; try sluiced --help", argv[optind]);
            return SL_EINVAL;
        }
        if (pass == 1 && cfg->config_file[0] && conf_load_ini(cfg, cfg->config_file, err, errlen) != SL_OK)
            return SL_EINVAL;
    }
    return conf_finish(cfg, err, errlen);
}
