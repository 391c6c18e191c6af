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
 * The levels, sink, pools and tags the file declares (admin/decl.c) are
 * read again and applied where they differ from the running ones: the file
 * wins again for what it declares (reload_declared).
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
 * SIGHUPs are coalesced: the handler counts them, and a reload runs at most
 * once every RELOAD_GAP_NS. The first SIGHUP after a quiet second reloads
 * at the end of the pass; the ones that follow within the second are one
 * reload when the second is over (the loop wakes for it: reload_wake_ns),
 * whose "done" line says how many SIGHUPs it answered. A storm of 2,000
 * SIGHUPs is a reload or two and a handful of log lines, and the last
 * SIGHUP is always answered by a reload that starts after it.
 *
 * Costs: one parse of the config file and a walk of the settings table
 * (about thirty lines) per reload, at most one a second.
 */
#include "reload.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bk.h"
#include "auth.h"
#include "conf.h"
#include "decl.h"
#include "log.h"
#include "notify.h"

static int reload_log(bk *b, const conf *fresh);
static int reload_settings(bk *b, const conf *fresh);
static int reload_auth(bk *b, const conf *fresh);
static int reload_declared(bk *b, const conf *fresh);

/* X(name, function): what a SIGHUP runs, in this order. */
#define RELOAD_HOOKS(X)                                                                                    \
    X(log, reload_log)                                                                                     \
    X(settings, reload_settings)                                                                           \
    X(declared, reload_declared)                                                                           \
    X(auth, reload_auth)

#define RELOAD_GAP_NS 1000000000ull /* at most one reload a second */

static volatile sig_atomic_t hups; /* SIGHUPs received: only the handler writes it */
static sig_atomic_t answered;      /* the SIGHUPs reloads have answered: only the loop writes it */
static uint64_t last_ns;           /* when the last reload ran (the loop's clock), 0: never */
static int saved_argc;
static char **saved_argv;

void reload_init(int argc, char **argv)
{
    saved_argc = argc;
    saved_argv = argv;
}

void reload_request(void)
{
    hups++; /* the handler is not re-entered: SIGHUP is blocked while it runs */
}

int reload_due(uint64_t now_ns)
{
    return hups != answered && (!last_ns || now_ns - last_ns >= RELOAD_GAP_NS);
}

uint64_t reload_wake_ns(void)
{
    return hups != answered && last_ns ? last_ns + RELOAD_GAP_NS : UINT64_MAX;
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
static unsigned coalesced; /* the SIGHUPs the running reload answers */

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
    if (coalesced > 1)
        log_info("reload", "done: %u settings changed live (%u SIGHUPs answered by this reload)", applied,
                 coalesced);
    else
        log_info("reload", "done: %u settings changed live", applied);
    return 0;
}

void reload_run(bk *b)
{
    sig_atomic_t upto = hups;
    coalesced = (unsigned)(upto - answered);
    answered = upto;
    last_ns = b->mono_ns ? b->mono_ns : 1;
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

/* reload_declared applies the levels, sink, pools and tags the config file
 * declares (decl.c): the file wins again for what it declares, over changes
 * made with the CLI since. Levels are named as the running broker names
 * them; a file that does not read changes nothing. */
static int reload_declared(bk *b, const conf *fresh)
{
    char err[1024];
    decl_list *l = NULL;
    if (!fresh)
        return -1;
    if (decl_read(&b->cfg, fresh->config_file, &l, err, sizeof err) != SL_OK) {
        log_error("reload", "%s: the declared settings stay as they are", err);
        decl_free(&l);
        return -1;
    }
    decl_apply(b, l);
    decl_free(&l);
    return 0;
}
