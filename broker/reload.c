/*
 * reload.c - what SIGHUP does, in one place.
 *
 * The signal handler only sets a flag (reload_request); the loop notices it
 * at the end of a pass, after the commit, and calls reload_run, which re-reads
 * the configuration as at start (defaults, then the --config file, then the
 * command line kept by reload_init, so the command line still wins) and then
 * runs RELOAD_HOOKS in order. A hook gets the broker and the fresh
 * configuration (NULL when the file no longer parses: each hook then keeps
 * what it has). A new kind of reload (an auth file, say) is one line in
 * RELOAD_HOOKS and its function in its own module.
 *
 * Which settings change live is the settings table's CONF_LIVE (conf.c,
 * also what sluice.conf(5) lists as live): the ones read where they are
 * used, so that a new value simply applies to what comes next (the next
 * delivery's lease, the next publish's limits, the next log line); each
 * change is logged with its old and new value. Any other setting that
 * differs in the file keeps its value and is named in a warning: it needs a
 * restart (the endpoint, the levels, the store's map, the HTTP address,
 * the breaker's policy and heartbeats, whose values live in other objects).
 *
 * Costs: one parse of the config file and a walk of the settings table
 * (about thirty lines) per SIGHUP.
 */
#include "reload.h"

#include <stdlib.h>
#include <string.h>

#include "bk.h"
#include "auth.h"
#include "conf.h"
#include "log.h"
#include "notify.h"

static int reload_log(bk *b, const conf *fresh);
static int reload_settings(bk *b, const conf *fresh);
static int reload_auth(bk *b, const conf *fresh);

/* X(name, function): what a SIGHUP runs, in this order. */
#define RELOAD_HOOKS(X)                                                                                    \
    X(log, reload_log)                                                                                     \
    X(settings, reload_settings)                                                                           \
    X(auth, reload_auth)

static volatile sig_atomic_t requested;
static int saved_argc;
static char **saved_argv;

void reload_init(int argc, char **argv)
{
    saved_argc = argc;
    saved_argv = argv;
}

void reload_request(void)
{
    requested = 1;
}

int reload_pending(void)
{
    return requested != 0;
}

/* reload_log reopens the log file (the old one may have been rotated). The
 * file's name is the one the broker started with: a new name needs a
 * restart, like any setting not in CONF_LIVE. */
static int reload_log(bk *b, const conf *fresh)
{
    (void)fresh;
    if (b->cfg.log_file[0] && log_open_file(b->cfg.log_file) == 0)
        log_info("reload", "log file %s reopened", b->cfg.log_file);
    return 0;
}

/* value_text writes a setting's value for the log: numbers as numbers, the
 * rest as a short text. */
static void value_text(const conf_setting *s, const conf *c, char *buf, size_t len)
{
    const char *m = (const char *)c + s->offset;
    if (s->type == CONF_NUM || s->type == CONF_MB || s->type == CONF_BOOL || s->type == CONF_LOG_LEVEL) {
        uint64_t v = 0;
        if (s->size == 8)
            memcpy(&v, m, 8);
        else {
            uint32_t v32;
            memcpy(&v32, m, 4);
            v = v32;
        }
        snprintf(buf, len, "%llu", (unsigned long long)v);
    } else if (s->type == CONF_STR) {
        snprintf(buf, len, "'%s'", m);
    } else if (s->type == CONF_RULE) {
        snprintf(buf, len, "%u rules", c->ntag_rules);
    } else {
        snprintf(buf, len, "(changed)");
    }
}

static int differs(const conf_setting *s, const conf *a, const conf *b)
{
    if (s->type == CONF_RULE && a->ntag_rules != b->ntag_rules)
        return 1;
    return memcmp((const char *)a + s->offset, (const char *)b + s->offset, s->size) != 0;
}

/* reload_settings applies the live settings that changed and names the
 * others that did. */
static int reload_settings(bk *b, const conf *fresh)
{
    if (!fresh)
        return -1;
    unsigned applied = 0;
    char restart[512] = "", was[64], now[64];
    for (size_t i = 0; i < conf_setting_count(); i++) {
        const conf_setting *s = conf_setting_at(i);
        if (!s->section || !differs(s, &b->cfg, fresh))
            continue;
        if (!conf_setting_live(s)) {
            size_t used = strlen(restart);
            snprintf(restart + used, sizeof restart - used, "%s%s", used ? ", " : "", s->key);
            continue;
        }
        value_text(s, &b->cfg, was, sizeof was);
        value_text(s, fresh, now, sizeof now);
        memcpy((char *)&b->cfg + s->offset, (const char *)fresh + s->offset, s->size);
        if (s->type == CONF_RULE)
            b->cfg.ntag_rules = fresh->ntag_rules;
        log_info("reload", "%s: %s -> %s", s->key, was, now);
        applied++;
    }
    log_set_level((enum log_level)b->cfg.log_level);
    if (restart[0])
        log_warn("reload", "changed in the config file but kept until a restart: %s", restart);
    log_info("reload", "done: %u settings changed live", applied);
    return 0;
}

void reload_run(bk *b)
{
    requested = 0;
    notify_send(&b->notify, "RELOADING=1\nSTATUS=reloading");
    static conf fresh; /* large: off the stack */
    char err[1024];
    const conf *ok = &fresh;
    conf_defaults(&fresh);
    if (!saved_argv || conf_parse_args(&fresh, saved_argc, saved_argv, err, sizeof err) != SL_OK) {
        log_error("reload", "the configuration no longer reads (%s): every setting stays as it was",
                  saved_argv ? err : "no command line kept");
        ok = NULL;
    }
#define RELOAD_RUN_(name, fn)                                                                              \
    if (fn(b, ok) != 0 && ok)                                                                              \
        log_warn("reload", "%s: not reloaded", #name);
    RELOAD_HOOKS(RELOAD_RUN_)
#undef RELOAD_RUN_
    notify_send(&b->notify, "READY=1\nSTATUS=serving (reloaded)");
}

/* reload_auth re-reads the auth file (auth.c): a removed key's next command
 * is refused. It reads the file named at start, whatever fresh says. */
static int reload_auth(bk *b, const conf *fresh)
{
    (void)fresh;
    return auth_reload(b) == SL_OK ? 0 : -1;
}
