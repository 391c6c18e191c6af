/*
 * main.c - sluiced: arguments, configuration, signals. Nothing else.
 *
 * Settings come from three layers, later ones winning: the embedded defaults
 * (conf_defaults), the INI file named by --config, and the command line.
 * Everything is validated before the broker opens anything, and every
 * problem is reported with the setting's name (and file:line for the INI).
 *
 * Exit status: 0 after a clean shutdown, 1 when the broker failed while
 * running (for example a failed commit), 2 for a usage or configuration error.
 */
#include <errno.h>
#include <getopt.h>
#include <ini.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bk.h"
#include "log.h"
#include "loop.h"

#define SLUICED_VERSION "1.0.0"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: sluiced [options]\n"
"\n"
"sluiced is the Sluice broker: a persistent priority message queue. Producers\n"
"publish to priority levels (0 = highest); each publish is confirmed only after\n"
"it is durably committed to LMDB. Consumers pull with credit and acknowledge\n"
"each delivery within its lease.\n"
"\n"
"Options (command line beats --config, which beats the defaults):\n"
"  -d, --data DIR          data directory (default ./sluice-data); created if missing\n"
"  -l, --listen ENDPOINT   ZeroMQ endpoint to bind (default tcp://127.0.0.1:7470);\n"
"                          for example tcp://0.0.0.0:7470 or ipc:///run/sluice.sock\n"
"  -c, --config FILE       INI file with the settings below (see README)\n"
"      --levels N          number of priority levels, 1..16 (default 3)\n"
"      --level-names LIST  comma-separated names, one per level\n"
"                          (default high,normal,low for 3 levels, else p0,p1,...)\n"
"      --default-level L   level for publishes that name none (name or number;\n"
"                          default: the middle level, 'normal')\n"
"      --lease-ms MS       how long a consumer holds a delivery (default 30000)\n"
"      --max-attempts N    deliveries before a message becomes a dead letter (default 5)\n"
"      --ack-flush-ms MS   longest an acknowledgement waits to be made durable (default 10);\n"
"                          0 makes every ACK's reply wait for its commit\n"
"      --heartbeat-ms MS   heartbeat interval; a peer silent 3 intervals is gone (default 1000)\n"
"      --map-size-mb MB    LMDB map size (default 8192); the file grows as used\n"
"      --max-body BYTES    largest message body accepted (default 1048576)\n"
"      --map-max-mb MB     the map grows, when 75%% used and the disk has room, up to\n"
"                          this (default 4 x --map-size-mb); publishes stop at 90%%\n"
"      --level-max-messages N  refuse publishes to a level holding N messages\n"
"                          (SL_EFULL; default 0, no limit)\n"
"      --level-max-bytes B refuse publishes to a level using B bytes of pages\n"
"                          (default 0, no limit)\n"
"      --consumer-max-inflight N  deliveries one consumer may hold (default 10000)\n"
"      --idem-window-ms MS how long an idempotency key is remembered (default 300000)\n"
"      --overdue-share PCT most deliveries in 100 that may go to overdue messages,\n"
"                          which jump the queue (default 50)\n"
"      --tag-rule GLOB=LEVEL  a publish whose tag matches GLOB (fnmatch) goes to LEVEL;\n"
"                          repeatable, the first match wins; rules apply to publishes\n"
"                          that name no level\n"
"      --tag-rules-override   rules apply to publishes that name a level too\n"
"      --throttle-backoff-ms MS  pause after a THROTTLED that gives no retry-after\n"
"                          (default 1000)\n"
"      --breaker-threshold PCT   open the circuit breaker when more than PCT %% of\n"
"                          the last deliveries failed (NACK or expired lease); 0 = off\n"
"                          (default 50)\n"
"      --breaker-window N  deliveries the breaker looks back over (default 20)\n"
"      --breaker-cooldown-ms MS  how long an open breaker waits before one probe\n"
"                          (default 5000)\n"
"      --log-level LEVEL   error, warn, info or debug (default info)\n"
"      --ready-fd FD       write \"READY\\n\" to FD once serving, then close it\n"
"  -h, --help              show this help\n"
"      --version           show the version\n"
"\n"
"Signals: SIGTERM or SIGINT finish the current commit, confirm or refuse every\n"
"pending publish, and close the store.\n"
"\n"
"Examples:\n"
"  sluiced                                    # defaults: ./sluice-data on 127.0.0.1:7470\n"
"  sluiced -d /var/lib/sluice -l tcp://0.0.0.0:7470 --levels 5\n"
"  sluiced --config /etc/sluice/sluiced.ini --log-level debug\n");
}

typedef struct settings {
    conf cfg;
    int names_set;
    char rule_levels[CONF_MAX_TAG_RULES][PROTO_MAX_NAME + 1]; /* resolved after names */
    char default_level[PROTO_MAX_NAME + 1]; /* resolved after names are known */
    int ready_fd;
    int log_level;
} settings;

/* ---- value parsers: each reports its own error ---- */

static int parse_u64(const char *what, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi) {
        fprintf(stderr, "sluiced: %s: '%s' is not a number from %llu to %llu\n", what, s,
                (unsigned long long)lo, (unsigned long long)hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int set_names(settings *st, const char *list)
{
    char buf[PROTO_MAX_LEVELS * (PROTO_MAX_NAME + 2)];
    unsigned n = 0;
    if (strlen(list) >= sizeof buf) {
        fprintf(stderr, "sluiced: level names: list too long\n");
        return -1;
    }
    strcpy(buf, list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == PROTO_MAX_LEVELS || strlen(tok) > PROTO_MAX_NAME || !*tok ||
            strspn(tok, "0123456789") == strlen(tok)) {
            fprintf(stderr, "sluiced: level names: '%s' must be 1..64 characters, not all digits, at most 16 names\n", tok);
            return -1;
        }
        for (unsigned j = 0; j < n; j++)
            if (strcmp(st->cfg.level_names[j], tok) == 0) {
                fprintf(stderr, "sluiced: level names: '%s' appears twice\n", tok);
                return -1;
            }
        strcpy(st->cfg.level_names[n++], tok);
    }
    st->names_set = (int)n;
    return 0;
}

/* apply sets one setting by its INI key; the command line maps onto the same keys. */
static int apply(settings *st, const char *key, const char *val)
{
    uint64_t v;
    conf *c = &st->cfg;
    if (!strcmp(key, "data")) {
        if (strlen(val) >= sizeof c->data_dir || !*val)
            return fprintf(stderr, "sluiced: data: path empty or too long\n"), -1;
        strcpy(c->data_dir, val);
    } else if (!strcmp(key, "listen")) {
        if (strlen(val) >= sizeof c->listen || !*val)
            return fprintf(stderr, "sluiced: listen: endpoint empty or too long\n"), -1;
        strcpy(c->listen, val);
    } else if (!strcmp(key, "levels") || !strcmp(key, "count")) {
        if (parse_u64("levels", val, 1, PROTO_MAX_LEVELS, &v))
            return -1;
        c->levels = (unsigned)v;
    } else if (!strcmp(key, "level_names") || !strcmp(key, "names")) {
        return set_names(st, val);
    } else if (!strcmp(key, "default_level") || !strcmp(key, "default")) {
        if (strlen(val) > PROTO_MAX_NAME)
            return fprintf(stderr, "sluiced: default level: too long\n"), -1;
        strcpy(st->default_level, val);
    } else if (!strcmp(key, "lease_ms")) {
        if (parse_u64("lease_ms", val, 100, 24ULL * 3600 * 1000, &v))
            return -1;
        c->lease_ms = (uint32_t)v;
    } else if (!strcmp(key, "ack_flush_ms")) {
        if (parse_u64("ack_flush_ms", val, 0, 1000, &v))
            return -1;
        c->ack_flush_ms = (uint32_t)v;
    } else if (!strcmp(key, "max_attempts")) {
        if (parse_u64("max_attempts", val, 1, 1000000, &v))
            return -1;
        c->max_attempts = (uint32_t)v;
    } else if (!strcmp(key, "heartbeat_ms")) {
        if (parse_u64("heartbeat_ms", val, 100, 60000, &v))
            return -1;
        c->heartbeat_ms = (uint32_t)v;
    } else if (!strcmp(key, "map_size_mb")) {
        if (parse_u64("map_size_mb", val, 1, 1ULL << 24, &v))
            return -1;
        c->map_bytes = v << 20;
    } else if (!strcmp(key, "max_body")) {
        if (parse_u64("max_body", val, 1, PROTO_MAX_BODY, &v))
            return -1;
        c->max_body = (uint32_t)v;
    } else if (!strcmp(key, "overdue_share_pct")) {
        if (parse_u64("overdue_share_pct", val, 1, 100, &v))
            return -1;
        c->overdue_share_pct = (unsigned)v;
    } else if (!strcmp(key, "map_max_mb")) {
        if (parse_u64("map_max_mb", val, 1, 1ULL << 24, &v))
            return -1;
        c->map_max_bytes = v << 20;
    } else if (!strcmp(key, "level_max_messages")) {
        if (parse_u64("level_max_messages", val, 0, UINT64_MAX, &v))
            return -1;
        c->level_max_messages = v;
    } else if (!strcmp(key, "level_max_bytes")) {
        if (parse_u64("level_max_bytes", val, 0, UINT64_MAX, &v))
            return -1;
        c->level_max_bytes = v;
    } else if (!strcmp(key, "consumer_max_inflight")) {
        if (parse_u64("consumer_max_inflight", val, 1, 100000, &v))
            return -1;
        c->consumer_max_inflight = (uint32_t)v;
    } else if (!strcmp(key, "idem_window_ms")) {
        if (parse_u64("idem_window_ms", val, 1, 7ULL * 24 * 3600 * 1000, &v))
            return -1;
        c->idem_window_ms = v;
    } else if (!strcmp(key, "throttle_backoff_ms")) {
        if (parse_u64("throttle_backoff_ms", val, 1, 3600000, &v))
            return -1;
        c->throttle_backoff_ms = (uint32_t)v;
    } else if (!strcmp(key, "breaker_threshold_pct")) {
        if (parse_u64("breaker_threshold_pct", val, 0, 100, &v))
            return -1;
        c->breaker_threshold_pct = (uint32_t)v;
    } else if (!strcmp(key, "breaker_window")) {
        if (parse_u64("breaker_window", val, 2, 1024, &v))
            return -1;
        c->breaker_window = (uint32_t)v;
    } else if (!strcmp(key, "breaker_cooldown_ms")) {
        if (parse_u64("breaker_cooldown_ms", val, 1, 3600000, &v))
            return -1;
        c->breaker_cooldown_ms = (uint32_t)v;
    } else if (!strcmp(key, "tag_rules_override")) {
        if (strcmp(val, "yes") && strcmp(val, "no") && strcmp(val, "true") && strcmp(val, "false"))
            return fprintf(stderr, "sluiced: tag_rules_override: '%s' is not yes or no\n", val), -1;
        c->tag_rules_override = !strcmp(val, "yes") || !strcmp(val, "true");
    } else if (!strcmp(key, "log_level")) {
        int lvl = log_parse_level(val);
        if (lvl < 0)
            return fprintf(stderr, "sluiced: log_level: '%s' is not error, warn, info or debug\n", val), -1;
        st->log_level = lvl;
    } else {
        return fprintf(stderr, "sluiced: unknown setting '%s'\n", key), -1;
    }
    return 0;
}

/* add_rule keeps GLOB and the level's text; finish() resolves the level. */
static int add_rule(settings *st, const char *glob, const char *level)
{
    conf *c = &st->cfg;
    if (c->ntag_rules == CONF_MAX_TAG_RULES)
        return fprintf(stderr, "sluiced: more than %d tag rules\n", CONF_MAX_TAG_RULES), -1;
    if (!*glob || strlen(glob) > PROTO_MAX_TAG || !*level || strlen(level) > PROTO_MAX_NAME)
        return fprintf(stderr, "sluiced: tag rule '%s = %s': a glob of 1..255 bytes and a level, please\n",
                       glob, level), -1;
    strcpy(c->tag_rules[c->ntag_rules].pattern, glob);
    strcpy(st->rule_levels[c->ntag_rules], level);
    c->ntag_rules++;
    return 0;
}

static int ini_cb(void *user, const char *section, const char *name, const char *value)
{
    static const char *const sections[] = {"broker", "levels", "leases", "sink", NULL};
    if (!strcmp(section, "tag_rules")) {
        /* rule = GLOB LEVEL: the value, because inih splits keys at ':' too */
        char buf[PROTO_MAX_TAG + PROTO_MAX_NAME + 2];
        const char *sp = strrchr(value, ' ');
        if (strcmp(name, "rule") || !sp || strlen(value) >= sizeof buf) {
            fprintf(stderr, "sluiced: [tag_rules] takes lines 'rule = GLOB LEVEL'\n");
            return 0;
        }
        strcpy(buf, value);
        buf[sp - value] = '\0';
        return add_rule(user, buf, buf + (sp - value) + 1) == 0;
    }
    int known = 0;
    for (int i = 0; sections[i]; i++)
        known |= !strcmp(section, sections[i]);
    if (!known) {
        fprintf(stderr, "sluiced: unknown section [%s]\n", section);
        return 0;
    }
    return apply(user, name, value) == 0;
}

/* level_of resolves a level name or number; -1 (reported) when unknown. */
static int level_of(const conf *c, const char *what, const char *text)
{
    uint64_t v;
    for (unsigned l = 0; l < c->levels; l++)
        if (!strcmp(c->level_names[l], text))
            return (int)l;
    if (parse_u64(what, text, 0, c->levels - 1, &v))
        return -1;
    return (int)v;
}

/* finish fills level names and the default level once the count is known. */
static int finish(settings *st)
{
    conf *c = &st->cfg;
    if (st->names_set && (unsigned)st->names_set != c->levels) {
        fprintf(stderr, "sluiced: %d level names given for %u levels\n", st->names_set, c->levels);
        return -1;
    }
    if (!st->names_set) {
        static const char *const three[] = {"high", "normal", "low"};
        for (unsigned l = 0; l < c->levels; l++) {
            if (c->levels == 3)
                strcpy(c->level_names[l], three[l]);
            else
                snprintf(c->level_names[l], sizeof c->level_names[l], "p%u", l);
        }
    }
    if (!c->map_max_bytes)
        c->map_max_bytes = c->map_bytes * 4;
    if (c->map_max_bytes < c->map_bytes)
        c->map_max_bytes = c->map_bytes;
    c->default_level = c->levels / 2;
    if (st->default_level[0]) {
        int l = level_of(c, "default level", st->default_level);
        if (l < 0)
            return -1;
        c->default_level = (unsigned)l;
    }
    for (unsigned i = 0; i < c->ntag_rules; i++) {
        int l = level_of(c, "tag rule level", st->rule_levels[i]);
        if (l < 0)
            return -1;
        c->tag_rules[i].level = (unsigned)l;
    }
    return 0;
}

enum { OPT_LEVELS = 256, OPT_NAMES, OPT_DEFAULT, OPT_LEASE, OPT_ATTEMPTS, OPT_HB, OPT_MAP,
       OPT_BODY, OPT_ACKFLUSH, OPT_OVERDUE, OPT_BACKOFF, OPT_BTHRESH, OPT_BWINDOW, OPT_BCOOL,
       OPT_MAPMAX, OPT_LMAXMSG, OPT_LMAXBYTES, OPT_CMAX, OPT_IDEM, OPT_LOG,
       OPT_READY, OPT_VERSION, OPT_RULE, OPT_OVERRIDE };

static const struct option options[] = {
    {"data", required_argument, NULL, 'd'},
    {"listen", required_argument, NULL, 'l'},
    {"config", required_argument, NULL, 'c'},
    {"levels", required_argument, NULL, OPT_LEVELS},
    {"level-names", required_argument, NULL, OPT_NAMES},
    {"default-level", required_argument, NULL, OPT_DEFAULT},
    {"lease-ms", required_argument, NULL, OPT_LEASE},
    {"max-attempts", required_argument, NULL, OPT_ATTEMPTS},
    {"heartbeat-ms", required_argument, NULL, OPT_HB},
    {"map-size-mb", required_argument, NULL, OPT_MAP},
    {"max-body", required_argument, NULL, OPT_BODY},
    {"ack-flush-ms", required_argument, NULL, OPT_ACKFLUSH},
    {"overdue-share", required_argument, NULL, OPT_OVERDUE},
    {"tag-rule", required_argument, NULL, OPT_RULE},
    {"throttle-backoff-ms", required_argument, NULL, OPT_BACKOFF},
    {"breaker-threshold", required_argument, NULL, OPT_BTHRESH},
    {"breaker-window", required_argument, NULL, OPT_BWINDOW},
    {"breaker-cooldown-ms", required_argument, NULL, OPT_BCOOL},
    {"map-max-mb", required_argument, NULL, OPT_MAPMAX},
    {"level-max-messages", required_argument, NULL, OPT_LMAXMSG},
    {"level-max-bytes", required_argument, NULL, OPT_LMAXBYTES},
    {"consumer-max-inflight", required_argument, NULL, OPT_CMAX},
    {"idem-window-ms", required_argument, NULL, OPT_IDEM},
    {"tag-rules-override", no_argument, NULL, OPT_OVERRIDE},
    {"log-level", required_argument, NULL, OPT_LOG},
    {"ready-fd", required_argument, NULL, OPT_READY},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

static const char *const opt_keys[] = {
    [OPT_LEVELS - OPT_LEVELS] = "levels", [OPT_NAMES - OPT_LEVELS] = "level_names",
    [OPT_DEFAULT - OPT_LEVELS] = "default_level", [OPT_LEASE - OPT_LEVELS] = "lease_ms",
    [OPT_ATTEMPTS - OPT_LEVELS] = "max_attempts", [OPT_HB - OPT_LEVELS] = "heartbeat_ms",
    [OPT_MAP - OPT_LEVELS] = "map_size_mb", [OPT_BODY - OPT_LEVELS] = "max_body",
    [OPT_ACKFLUSH - OPT_LEVELS] = "ack_flush_ms", [OPT_OVERDUE - OPT_LEVELS] = "overdue_share_pct",
    [OPT_BACKOFF - OPT_LEVELS] = "throttle_backoff_ms", [OPT_BTHRESH - OPT_LEVELS] = "breaker_threshold_pct",
    [OPT_BWINDOW - OPT_LEVELS] = "breaker_window", [OPT_BCOOL - OPT_LEVELS] = "breaker_cooldown_ms",
    [OPT_MAPMAX - OPT_LEVELS] = "map_max_mb", [OPT_LMAXMSG - OPT_LEVELS] = "level_max_messages",
    [OPT_LMAXBYTES - OPT_LEVELS] = "level_max_bytes", [OPT_CMAX - OPT_LEVELS] = "consumer_max_inflight",
    [OPT_IDEM - OPT_LEVELS] = "idem_window_ms",
    [OPT_LOG - OPT_LEVELS] = "log_level",
};

/* parse_args reads the command line twice: first for --config and --help,
 * then (after the file) for everything else, so that flags win. */
static int parse_args(int argc, char **argv, settings *st)
{
    const char *config = NULL;
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "d:l:c:h", options, NULL)) != -1) {
        if (opt == 'h') {
            usage(stdout);
            exit(0);
        } else if (opt == OPT_VERSION) {
            printf("sluiced %s (protocol %d, store format %d)\n", SLUICED_VERSION, PROTO_VERSION, STORE_FORMAT);
            exit(0);
        } else if (opt == 'c') {
            config = optarg;
        } else if (opt == '?') {
            fprintf(stderr, "sluiced: unknown or incomplete option '%s'; try sluiced --help\n", argv[optind - 1]);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sluiced: unexpected argument '%s'; try sluiced --help\n", argv[optind]);
        return -1;
    }
    if (config) {
        int line = ini_parse(config, ini_cb, st);
        if (line < 0) {
            fprintf(stderr, "sluiced: cannot read config file %s: %s\n", config, strerror(errno));
            return -1;
        }
        if (line > 0) {
            fprintf(stderr, "sluiced: %s:%d: invalid setting (see above)\n", config, line);
            return -1;
        }
    }
    optind = 0;
    while ((opt = getopt_long(argc, argv, "d:l:c:h", options, NULL)) != -1) {
        int rc = 0;
        uint64_t v;
        if (opt == 'd')
            rc = apply(st, "data", optarg);
        else if (opt == 'l')
            rc = apply(st, "listen", optarg);
        else if (opt == OPT_READY) {
            rc = parse_u64("--ready-fd", optarg, 0, INT_MAX, &v);
            st->ready_fd = (int)v;
        } else if (opt == OPT_RULE) {
            char buf[PROTO_MAX_TAG + PROTO_MAX_NAME + 2];
            char *eq = strrchr(optarg, '=');
            if (!eq || strlen(optarg) >= sizeof buf) {
                fprintf(stderr, "sluiced: --tag-rule '%s': expected GLOB=LEVEL\n", optarg);
                return -1;
            }
            strcpy(buf, optarg);
            buf[eq - optarg] = '\0';
            rc = add_rule(st, buf, buf + (eq - optarg) + 1);
        } else if (opt == OPT_OVERRIDE) {
            st->cfg.tag_rules_override = 1;
        } else if (opt >= OPT_LEVELS && opt <= OPT_LOG)
            rc = apply(st, opt_keys[opt - OPT_LEVELS], optarg);
        if (rc)
            return -1;
    }
    return finish(st);
}

static void signal_ready(int fd)
{
    if (fd < 0)
        return;
    if (write(fd, "READY\n", 6) != 6)
        log_warn("main", "cannot write to --ready-fd %d: %s", fd, strerror(errno));
    close(fd);
}

int main(int argc, char **argv)
{
    settings st = {.ready_fd = -1, .log_level = LOG_INFO};
    conf_defaults(&st.cfg);
    if (parse_args(argc, argv, &st) != 0)
        return 2;
    log_set_level((enum log_level)st.log_level);

    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    bk *b = NULL;
    if (bk_open(&st.cfg, loop_now_mono(), loop_now_wall(), &b) != SL_OK) {
        log_error("main", "cannot start; see the messages above");
        return 2;
    }
    signal_ready(st.ready_fd);
    int rc = loop_run(b, &stop_flag);
    log_info("main", "shutting down (%s)", rc == SL_OK ? "signal" : proto_strerror(rc));
    bk_close(&b);
    return rc == SL_OK ? 0 : 1;
}
