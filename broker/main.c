/*
 * main.c - sluiced: arguments -> conf -> open -> loop -> close, plus signals
 * --ready-fd, READY/STOPPING to the service manager (notify.c), and SIGHUP
 * asking for a reload (reload.c); or, with --salvage, one salvage of a
 * stopped broker's store (store_salvage.c) and its report. Nothing else.
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
#include <string.h>
#include <unistd.h>

#include "bk.h"
#include "conf.h"
#include "decl.h"
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

    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    struct sigaction hup = {.sa_handler = on_hup};
    sigemptyset(&hup.sa_mask);
    sigaction(SIGHUP, &hup, NULL);
    signal(SIGPIPE, SIG_IGN);

    bk *b = NULL;
    if (bk_open(&cfg, loop_now_mono(), loop_now_wall(), &b) != SL_OK) {
        log_error("main", "cannot start; see the messages above");
        decl_free(&decls);
        return 2;
    }
    decl_apply(b, decls); /* over the stored settings: the file wins for what it declares */
    decl_free(&decls);
    signal_ready(cfg.ready_fd);
    notify_sendf(&b->notify, "READY=1\nSTATUS=serving %u levels on %s\nMAINPID=%d", cfg.levels, cfg.listen,
                 (int)getpid());
    int rc = loop_run(b, &stop_flag);
    notify_sendf(&b->notify, "STOPPING=1\nSTATUS=stopping (%s)", rc == SL_OK ? "signal" : proto_strerror(rc));
    log_info("main", "shutting down (%s)", rc == SL_OK ? "signal" : proto_strerror(rc));
    bk_close(&b);
    return rc == SL_OK ? 0 : 1;
}
