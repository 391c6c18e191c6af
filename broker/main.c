/*
 * main.c - sluiced: arguments -> conf -> open -> loop -> close, plus signals
 * --ready-fd, READY/STOPPING to the service manager (notify.c), and SIGHUP
 * asking for a reload (reload.c); or, with --salvage, one salvage of a
 * stopped broker's store (store_salvage.c) and its report. With --ha, Redis
 * is asked first which role this node has: the primary opens the broker
 * (ha_node.c), the standby follows (standby.c); a promotion or a deposition
 * starts sluiced again in place (exec), in its new role, carrying the
 * promotions this node made (its metrics) in SLUICE_HA_PROMOTIONS.
 *
 * What the settings are, their defaults, bounds and help live in one table in
 * conf.c (defaults < INI file < command line); everything is read and checked
 * there before the broker opens anything. The live settings a config file
 * declares (levels, the sink, pools, tags: admin/decl.c) are read then too,
 * and applied once the broker is open, over what its store holds.
 *
 * Exit status: 0 after a clean shutdown (or --help, --version, a salvage
 * done), 1 when the broker failed while running (for example a failed
 * commit), 2 for a usage or configuration error, or when the broker cannot
 * start (or the salvage could not make the new store).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bk.h"
#include "conf.h"
#include "decl.h"
#include "ha_epoch.h"
#include "ha_lease.h"
#include "ha_node.h"
#include "standby.h"
#include "standby_http.h"
#include "log.h"
#include "loop.h"
#include "notify.h"
#include "reload.h"
#include "store.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static void on_hup(int sig)
{
    (void)sig;
    reload_request();
}

/* salvage runs --salvage DIR --to NEWDIR and prints what it recovered:
 * the lines of the log as it goes (stderr), a summary on stdout. */
static int salvage(const conf *cfg)
{
    store_salvage_report r;
    int rc = store_salvage(cfg->salvage_dir, cfg->salvage_to, cfg->map_bytes, &r);
    if (rc != SL_OK) {
        fprintf(stderr, "sluiced: salvage of %s failed (%s); see the messages above\n", cfg->salvage_dir,
                proto_strerror(rc));
        return 2;
    }
    printf("salvaged %s into %s: %llu messages in %u levels (next id %llu)\n", cfg->salvage_dir, cfg->salvage_to,
           (unsigned long long)r.records, r.levels, (unsigned long long)r.next_id);
    for (unsigned l = 0; l < r.levels; l++)
        printf("  level %u: %llu messages (queued, delayed and dead letters)\n", l, (unsigned long long)r.per_level[l]);
    printf("not recovered: %llu records that failed their check (the damaged ones), %llu meta values "
           "(settings fall back to their defaults)\n", (unsigned long long)r.records_bad, (unsigned long long)r.meta_bad);
    printf("read: %llu pages, %llu of them node by node (%llu trees failed a check); %llu log records replayed; "
           "%llu copies met twice\n", (unsigned long long)r.pages, (unsigned long long)r.pages_carved,
           (unsigned long long)r.trees_bad, (unsigned long long)r.log_records, (unsigned long long)r.dupes);
    printf("start it with: sluiced --data %s (with the same --levels and settings as before)\n", cfg->salvage_to);
    return 0;
}

/* ha_password reads the Redis password of --coord-password-file (shared
 * by --ha) or SLUICE_COORD_PASSWORD. */
static void ha_password(const conf *cfg, char *out, size_t cap)
{
    const char *env = getenv("SLUICE_COORD_PASSWORD");
    out[0] = '\0';
    if (cfg->coord_password_file[0]) {
        FILE *f = fopen(cfg->coord_password_file, "r");
        if (f && fgets(out, (int)cap, f))
            out[strcspn(out, "\r\n")] = '\0';
        if (f)
            fclose(f);
    } else if (env)
        snprintf(out, cap, "%s", env);
}

/* ha_ask asks Redis for this node's role, waiting (not a loop yet: nothing
 * else to serve) until it answers or *stop. Returns the role. */
static ha_role ha_ask(ha_lease *l, uint64_t known, volatile sig_atomic_t *stop)
{
    int logged = 0;
    uint64_t t0 = loop_now_mono();
    while (!*stop) {
        uint64_t now = loop_now_mono(), next = ha_lease_tick(l, now, known, NULL, 0);
        const ha_view *v = ha_lease_view(l);
        if (v->answers)
            return v->role;
        if (!logged && now > t0 + NS_PER_S) {
            log_warn("main", "waiting for Redis to say which node is primary");
            logged = 1;
        }
        short ev = 0;
        int fd = ha_lease_pollfd(l, &ev);
        struct pollfd p = {.fd = fd, .events = ev};
        uint64_t ms = next > now ? (next - now) / NS_PER_MS + 1 : 0;
        poll(&p, fd >= 0 ? 1 : 0, (int)(ms > 100 ? 100 : ms));
    }
    return HA_ROLE_UNKNOWN;
}

static void signal_ready(int fd)
{
    if (fd < 0)
        return;
    if (write(fd, "READY\n", 6) != 6)
        log_warn("main", "cannot write to --ready-fd %d: %s", fd, strerror(errno));
    close(fd);
}

static int ready_fd_saved = -1;

/* The times this node went from standby to primary, across the restarts in
 * place a role change makes (the environment carries it into the next). */
#define PROMOTIONS_ENV "SLUICE_HA_PROMOTIONS"
static uint64_t promotions;

static void promotions_load(void)
{
    const char *v = getenv(PROMOTIONS_ENV);
    promotions = v ? strtoull(v, NULL, 10) : 0;
    unsetenv(PROMOTIONS_ENV); /* (a child started by this process does not inherit it) */
}

static void standby_ready(const conf *cfg)
{
    (void)cfg;
    signal_ready(ready_fd_saved);
    ready_fd_saved = -1;
}

/* restart_in_place starts sluiced again with the same arguments (a
 * promotion, a deposition): the new process opens the store in its new
 * role. --ready-fd is not passed on: it was written once. Returns only on
 * failure, exiting 1. */
static void restart_in_place(char **argv)
{
    log_info("main", "starting again in place, in the new role");
    char *args[512];
    int n = 0;
    for (int i = 0; argv[i] && n < 510; i++) {
        if (!strcmp(argv[i], "--ready-fd") && argv[i + 1]) {
            i++;
            continue;
        }
        if (!strncmp(argv[i], "--ready-fd=", 11))
            continue;
        args[n++] = argv[i];
    }
    args[n] = NULL;
    char count[24];
    snprintf(count, sizeof count, "%llu", (unsigned long long)promotions);
    setenv(PROMOTIONS_ENV, count, 1);
    execv("/proc/self/exe", args);
    log_error("main", "cannot start again in place: %s", strerror(errno));
    exit(1);
}

int main(int argc, char **argv)
{
    static conf cfg; /* large: kept off the stack */
    char err[1024];
    conf_defaults(&cfg);
    if (conf_parse_args(&cfg, argc, argv, err, sizeof err) != SL_OK) {
        fprintf(stderr, "sluiced: %s\n", err);
        return 2;
    }
    if (cfg.action == CONF_HELP) {
        conf_usage(stdout);
        return 0;
    }
    if (cfg.action == CONF_MAN) {
        conf_man_page(stdout, cfg.man_section);
        return 0;
    }
    if (cfg.action == CONF_VERSION) {
        printf("sluiced %s (protocol %d, store format %d)\n", SLUICE_VERSION, PROTO_VERSION, STORE_FORMAT);
        return 0;
    }
    decl_list *decls = NULL; /* levels, the sink, pools and tags declared in the file: checked now, applied once open */
    if (decl_read(&cfg, cfg.config_file, &decls, err, sizeof err) != SL_OK) {
        fprintf(stderr, "sluiced: %s\n", err);
        decl_free(&decls);
        return 2;
    }
    log_set_level((enum log_level)cfg.log_level);
    if (cfg.log_file[0] && log_open_file(cfg.log_file) != 0) {
        decl_free(&decls);
        return 2;
    }
    if (cfg.salvage_dir[0]) {
        decl_free(&decls); /* salvage opens no broker: nothing to apply them to */
        return salvage(&cfg);
    }
    reload_init(argc, argv);
    ready_fd_saved = cfg.ready_fd;
    promotions_load();

    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    struct sigaction hup = {.sa_handler = on_hup};
    sigemptyset(&hup.sa_mask);
    sigaction(SIGHUP, &hup, NULL);
    signal(SIGPIPE, SIG_IGN);

    ha_lease *hl = NULL;
    uint64_t epoch = 0;
    if (cfg.ha_url[0]) { /* which role: Redis decides */
        char password[512], lerr[600];
        ha_password(&cfg, password, sizeof password);
        const char *user = cfg.coord_user[0] ? cfg.coord_user : getenv("SLUICE_COORD_USER");
        ha_lease_cfg lc = {.url = cfg.ha_url, .group = cfg.ha_group, .node = cfg.ha_node, .user = user,
                           .password = password[0] ? password : NULL, .client_ep = cfg.advertise,
                           .repl_ep = cfg.repl_advertise, .ttl_ms = cfg.ha_ttl_ms};
        mkdir(cfg.data_dir, 0750);
        int rc = ha_epoch_load(cfg.data_dir, &epoch);
        if (rc == SL_OK)
            rc = ha_lease_new(&lc, &hl, lerr, sizeof lerr);
        memset(password, 0, sizeof password);
        if (rc != SL_OK) {
            if (rc == SL_EINVAL)
                fprintf(stderr, "sluiced: %s\n", lerr);
            decl_free(&decls);
            return 2;
        }
        ha_role role = ha_ask(hl, epoch, &stop_flag);
        const ha_view *v = ha_lease_view(hl);
        if (role == HA_ROLE_PRIMARY && v->epoch > epoch && epoch > 0)
            promotions++; /* promoted as it started: it had followed an earlier epoch */
        if (role == HA_ROLE_PRIMARY && v->epoch > epoch && ha_epoch_save(cfg.data_dir, v->epoch) != SL_OK)
            role = HA_ROLE_UNKNOWN;
        if (role != HA_ROLE_PRIMARY) { /* a standby (or Redis lost its data: follow nobody until recovered) */
            decl_free(&decls);
            if (role == HA_ROLE_UNKNOWN) {
                ha_lease_destroy(&hl);
                return stop_flag ? 0 : 2;
            }
            standby_http *web = NULL;
            if (standby_http_open(&cfg, promotions, &web) != SL_OK) {
                ha_lease_destroy(&hl);
                log_error("main", "cannot start as a standby; see the messages above");
                return 2;
            }
            int rc2 = standby_run(&cfg, hl, epoch, &stop_flag, standby_ready, web);
            standby_http_close(&web); /* (the process started in place serves the same address) */
            ha_lease_destroy(&hl);
            if (rc2 == STANDBY_PROMOTED || rc2 == STANDBY_RELOAD) { /* promoted; or on a copy of the primary's store */
                promotions += rc2 == STANDBY_PROMOTED;
                restart_in_place(argv);
            }
            log_info("main", "standby stopped (%s)", rc2 == SL_OK ? "signal" : proto_strerror(rc2));
            return rc2 == SL_OK ? 0 : 1;
        }
        epoch = v->epoch;
    }
    bk *b = NULL;
    if (bk_open(&cfg, loop_now_mono(), loop_now_wall(), &b) != SL_OK) {
        ha_lease_destroy(&hl);
        log_error("main", "cannot start; see the messages above");
        decl_free(&decls);
        return 2;
    }
    if (hl && ha_node_start(b, hl, epoch, promotions) != SL_OK) { /* (it owns the lease from here) */
        log_error("main", "cannot start as the primary; see the messages above");
        decl_free(&decls);
        bk_close(&b);
        return 2;
    }
    decl_apply(b, decls); /* over the stored settings: the file wins for what it declares */
    decl_free(&decls);
    signal_ready(cfg.ready_fd);
    cfg.ready_fd = -1;
    notify_sendf(&b->notify, "READY=1\nSTATUS=serving %u levels on %s\nMAINPID=%d", cfg.levels, cfg.listen,
                 (int)getpid());
    int rc = loop_run(b, &stop_flag);
    notify_sendf(&b->notify, "STOPPING=1\nSTATUS=stopping (%s)", rc == SL_OK ? "signal" : proto_strerror(rc));
    if (rc == SL_EDEPOSED) {
        store_abandon(b->st); /* nothing unreplicated reaches the store: it must equal the new primary's */
        ha_node_stop(b);
        bk_close(&b);
        restart_in_place(argv); /* and follow the new primary */
    }
    log_info("main", "shutting down (%s)", rc == SL_OK ? "signal" : proto_strerror(rc));
    ha_node_stop(b);
    bk_close(&b);
    return rc == SL_OK ? 0 : 1;
}
