/*
 * conf.h - the broker's configuration: what sluiced was started with, and
 * the one table of settings it comes from (conf.c).
 */
#ifndef SLUICE_CONF_H
#define SLUICE_CONF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "proto.h"

#define CONF_MAX_TAG_RULES 64

/* A tag rule: messages whose tag matches the glob go to level. */
typedef struct conf_tag_rule {
    char pattern[PROTO_MAX_TAG + 1];
    unsigned level;
    char level_text[PROTO_MAX_NAME + 1];                  /* as given; conf_finish resolves it */
} conf_tag_rule;

/* What sluiced does once its arguments are read. */
enum conf_action { CONF_RUN = 0, CONF_HELP, CONF_VERSION, CONF_MAN };

typedef struct conf {
    char data_dir[4096];
    char listen[1024];
    char curve_secret_file[4096];                         /* "" when CURVE is off */
    char auth_file[4096];                                 /* "" when auth is off */
    int insecure;                                         /* may listen beyond loopback without auth */
    char admin_listen[1024];                              /* "" when there is no admin endpoint */
    char stream_listen[1024];                             /* "" when there is no stream endpoint */
    unsigned levels;                                      /* 1..16 */
    char level_names[PROTO_MAX_LEVELS][PROTO_MAX_NAME + 1];
    unsigned default_level;
    uint32_t lease_ms;
    uint32_t ack_flush_ms;                                /* longest an ACK's delete waits for a commit */
    uint32_t max_attempts;
    uint32_t heartbeat_ms;
    uint64_t map_bytes;
    uint64_t wal_bytes;                                   /* the write-ahead log's ring; 0 = none */
    int wal_buffered;                                     /* log records through the page cache and fdatasync */
    uint32_t checkpoint_ms;                               /* with the log: LMDB commits at least this often */
    uint32_t max_body;
    unsigned soft_limit_pct;                              /* refuse PUT above this map use */
    unsigned overdue_share_pct;                           /* most overdue picks per 100 */
    uint32_t throttle_backoff_ms;                         /* pause after THROTTLED without retry-after */
    uint32_t max_throttle_pause_ms;                       /* the longest sink or level pause one THROTTLED causes */
    uint32_t max_lease_ms;                                /* the longest lease a TOUCH may ask for */
    uint64_t max_nack_delay_ms;                           /* the longest delay a NACK may ask for */
    uint32_t breaker_threshold_pct;                       /* 0: no circuit breaker */
    uint32_t breaker_window;
    uint32_t breaker_cooldown_ms;
    uint64_t idem_window_ms;                              /* how long an idempotency key is remembered */
    uint64_t level_max_messages;                          /* per level; 0 = no limit */
    uint64_t level_max_bytes;                             /* per level, pages on disk; 0 = no limit */
    uint32_t consumer_max_inflight;                       /* deliveries one consumer may hold */
    uint32_t pool_max;                                    /* the most pools */
    uint32_t pool_reap_ms;                                /* an idle, unconfigured pool lives this long */
    uint64_t map_max_bytes;                               /* the map grows up to this */
    uint64_t dead_max_messages;                           /* dead letters kept in all; 0 = no limit */
    uint64_t dead_max_age_s;                              /* dead letters kept this long; 0 = for ever */
    char http[64];                                        /* ADDR:PORT of the console, API, /metrics; "" = none */
    char http_cert[4096], http_key[4096];                 /* TLS, both or neither; "" = plain HTTP */
    uint32_t http_max_conns, http_max_conns_per_addr;     /* connection limits (total, per address) */
    uint32_t http_header_timeout_ms;                      /* a whole request within this of idle */
    uint32_t http_idle_timeout_ms;                        /* nothing moving for this long: closed */
    uint32_t http_session_idle_ms;                        /* a console session unused this long ends */
    char coord_url[1024];                                 /* "" = not coordinated */
    char coord_name[PROTO_MAX_NAME + 1];
    uint64_t reserved_rate;                               /* units per second */
    uint32_t coord_ttl_ms;
    uint32_t coord_slices;
    char coord_user[128];
    char coord_password_file[4096];
    char ha_url[1024];                                    /* "" = no high availability */
    char ha_group[PROTO_MAX_NAME + 1], ha_node[PROTO_MAX_NAME + 1];
    char repl_listen[1024];                               /* the replication stream's endpoint */
    char advertise[1024], repl_advertise[1024];           /* as the others reach them; "": --listen, --repl-listen */
    char repl_key_file[4096];                             /* a standby's own stream key pair; "": the group's */
    uint32_t ha_ttl_ms;                                   /* the primary's lease */
    uint32_t repl_standby_timeout_ms;                     /* no ack this long: sync = none */
    int repl_strict;                                      /* never confirm alone */
    uint64_t repl_buffer_bytes;                           /* the stream kept for a resume */
    conf_tag_rule tag_rules[CONF_MAX_TAG_RULES];
    unsigned ntag_rules;
    int tag_rules_override;                               /* a matching rule beats an explicit level */

    /* Read by main, not by the broker. */
    int log_level;                                        /* enum log_level */
    int ready_fd;                                         /* -1: none */
    char salvage_dir[4096];                               /* --salvage: "" = serve */
    char salvage_to[4096];
    char log_file[4096];                                  /* "" = stderr */
    int action;                                           /* enum conf_action */
    unsigned man_section;                                 /* with CONF_MAN: 8 (sluiced) or 5 (sluice.conf) */
    char config_file[4096];                               /* "" when none */
    /* Kept as given until the number of levels is known (conf_finish). */
    char default_level_text[PROTO_MAX_NAME + 1];          /* "" = the middle level */
    unsigned level_names_given;                           /* 0 = the default names */
} conf;

/* How a setting's value is read. Ordinary settings are NUM (an integer
 * stored in a member of 4 or 8 bytes, within [min, max]) or STR; the others
 * each have one parse function in conf.c. */
typedef enum conf_type {
    CONF_STR,       /* non-empty text that fits the member */
    CONF_NUM,       /* decimal integer within [min, max] */
    CONF_MB,        /* MiB within [min, max], stored as bytes (u64) */
    CONF_BOOL,      /* a flag on the command line; yes/no, true/false, on/off in the INI */
    CONF_LOG_LEVEL, /* error, warn, info, debug */
    CONF_NAMES,     /* comma-separated level names, one per level */
    CONF_LEVEL,     /* a level by name or number, resolved by conf_finish */
    CONF_RULE,      /* GLOB=LEVEL (INI: rule = GLOB LEVEL), repeatable */
    CONF_FILE,      /* the INI file: command line only, read before the other options */
    CONF_ACTION,    /* sets conf.action to min (help, version, man); --man=PAGE names the page */
} conf_type;

/* One line of the settings table. */
typedef struct conf_setting {
    const char *key;       /* INI key (in section), and the setting's name */
    const char *alias;     /* a second INI key, or NULL */
    const char *long_opt;  /* --long-opt, without the dashes */
    int short_opt;         /* 'd', or 0 */
    const char *section;   /* INI section; NULL: command line only */
    conf_type type;
    size_t offset, size;   /* the member of conf that it sets */
    const char *def;       /* default as text; "(...)" describes one derived by conf_finish; NULL: none */
    uint64_t min, max;     /* bounds of NUM and MB */
    const char *unit;      /* the value's placeholder in --help (MS, N, DIR), or NULL */
    const char *help;
} conf_setting;

/* An INI section and its title in --help. conf_sections lists them in the
 * order --help shows them; the last has name NULL (command line only). */
typedef struct conf_section {
    const char *name, *title;
} conf_section;
extern const conf_section conf_sections[];
extern const size_t conf_nsections;

/* conf_defaults fills the embedded defaults from the settings table:
 * ./sluice-data, tcp://127.0.0.1:7470, three levels high/normal/low (default
 * normal), 30 s leases, 5 attempts, 1 s heartbeats, 8 GiB map, 1 MiB bodies. */
void conf_defaults(conf *cfg);

/* conf_parse_args reads sluiced's command line over cfg (already holding the
 * defaults): first --help, --version and --config, then the INI file, then
 * every other option, so that the command line wins over the file, which wins
 * over the defaults; then conf_finish. --help and --version only set
 * cfg->action. SL_OK, or SL_EINVAL with a message naming the setting (and
 * file:line for the INI file) in err. */
int conf_parse_args(conf *cfg, int argc, char **argv, char *err, size_t errlen);

/* conf_load_ini applies the settings of the INI file at path to cfg. SL_OK;
 * SL_EINVAL with "path:line: ..." in err for an unknown section or key or a
 * bad value; SL_ENOTFOUND when the file cannot be read. Call conf_finish
 * after it (conf_parse_args does). */
int conf_load_ini(conf *cfg, const char *path, char *err, size_t errlen);

/* conf_declared_section tells whether a section header's text (after its
 * '[') opens a declaration of live settings ([level NAME], [pool NAME],
 * [tag NAME]), which conf_load_ini leaves to admin/decl.c; in [sink], keys
 * that are not the broker's settings (conf_ini_known) are left to it too. */
int conf_declared_section(const char *name);

/* conf_ini_known tells whether key is a setting of the table in section. */
int conf_ini_known(const char *section, const char *key);

/* conf_finish resolves what depends on the number of levels (names, the
 * default level, the tag rules' levels) and the map's ceiling. SL_OK or
 * SL_EINVAL with the reason in err. */
int conf_finish(conf *cfg, char *err, size_t errlen);

/* conf_default_names names the levels high, normal, low when there are
 * three, else p0, p1, ... (conf_defaults, and conf_finish when none were
 * given). */
void conf_default_names(conf *c);

/* conf_usage writes sluiced --help to f: the options grouped by INI section,
 * each with its unit, default and bounds, and examples. */
void conf_usage(FILE *f);

/* conf_man_page writes manual page section to f, in roff (conf_help.c): 8 is
 * sluiced(8), whose OPTIONS come from the settings table as --help's do; 5
 * is sluice.conf(5), the INI file: its syntax and every key of the table
 * with its section, value, default, bounds and whether SIGHUP applies it.
 * Any other section writes nothing and returns SL_EINVAL; else SL_OK. */
int conf_man_page(FILE *f, unsigned section);

/* conf_setting_count and conf_setting_at walk the settings table (i <
 * count), for the manual pages and anything that lists settings. */
size_t conf_setting_count(void);
const conf_setting *conf_setting_at(size_t i);

/* conf_setting_live tells whether a SIGHUP applies s's new value from the
 * config file at once (1) or s keeps its value until a restart (0): the
 * documentation's word, which must agree with RELOAD_LIVE in reload.c. */
int conf_setting_live(const conf_setting *s);

/* conf_default_text writes s's default as shown to users (a derived default
 * without its parentheses; "" when none) into buf and returns buf. */
const char *conf_default_text(const conf_setting *s, char *buf, size_t len);

#endif /* SLUICE_CONF_H */
