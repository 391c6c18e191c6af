/*
 * campaign_powerloss.c - cut the power under the broker's LMDB store, over
 * and over, and prove that every confirmed message survives.
 *
 *   campaign_powerloss [TRIALS] [--shim PATH] [--control] [--quiet]
 *
 * Each trial starts the real sluiced ($SLUICE_BIN, default bin/) with
 * powerloss_shim.so preloaded (see that file for the model: it logs every
 * write to data.mdb since the last sync, with the bytes it replaced), and
 * publishes with up to WINDOW publishes in flight. At a random point the
 * power goes: odd trials send SIGUSR1 after a random number of confirmations
 * (0..MAX_CONFIRMS), even trials set POWERLOSS_AFTER_SYNCS to a random
 * 1..MAX_SYNCS so that the loss replaces a sync. The shim undoes a random
 * subset of the unsynced writes and exits with status 9. The broker is then
 * started without the shim on the same directory: it must open the store
 * (a failed open is a finding) and deliver every confirmed message, which a
 * drain (consume, ack, until the broker's statistics show nothing left)
 * checks against the trial's history (history.h). The broker is stopped
 * with SIGTERM and the next trial reuses the directory, so trials also start
 * from stores that were recovered before.
 *
 * --control runs, after the trials, the same trial with the shim in control
 * mode: syncs are skipped and nothing counts as durable, as if the broker
 * committed without syncing. Twice: first with every unsynced write undone
 * (the store goes back to where this broker found it, so it opens, and the
 * drain must miss everything confirmed since), then with a random half
 * undone (up to CONTROL_TRIES times; the store usually no longer opens,
 * which loses everything too). Both must show confirmed messages lost: this
 * proves that the campaign can see a loss at all.
 *
 * Exit status: 0 when no normal trial lost a confirmed message or delivered
 * anything unexpected or corrupt, every store opened and drained, every
 * broker ended by the shim's hand, and the control (if asked for) showed its
 * loss both times; 1 otherwise; 2 when the campaign could not run or was
 * interrupted. Every broker is started and stopped by its PID (and dies with
 * the campaign); the directory under /tmp is removed at the end. Seeded by
 * $SLUICE_SEED: the same seed gives the same trigger points and the same
 * choice of writes to undo, though not the same timing.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "campaign.h"
#include "harness.h"
#include "history.h"
#include "proc.h"
#include "sluice.h"

#define WINDOW          128
#define MAX_CONFIRMS    2000   /* signal trials: confirmations before the loss */
#define MAX_SYNCS       40     /* sync trials: the loss replaces sync 1..MAX_SYNCS */
#define CONTROL_MIN     300    /* control trials: confirmations before the loss */
#define CONTROL_TRIES   5
#define READY_MS        20000
#define TRIGGER_MS      10000  /* a sync trial not done by then gets SIGUSR1 */
#define DEATH_MS        5000   /* after SIGUSR1, the most a loss may take */
#define TRIAL_MS        30000
#define DRAIN_MS        20000
#define STOP_MS         20000
#define HISTORY_SLOTS   200000
#define SHIM_EXIT       9

typedef struct opts {
    unsigned trials;
    int control, quiet;
    char shim[PATH_MAX];
} opts;

typedef struct trial {
    unsigned n;
    int control;
    int by_signal;        /* else after a number of syncs */
    unsigned at;          /* confirmations, or syncs */
    unsigned keep_pct;    /* unsynced writes the loss keeps, percent */
    /* outcome */
    history_report r;
    int shim_exit;        /* the shim ended the broker (status 9) */
    int other_death;      /* the broker ended some other way */
    int missed;           /* the trigger never fired: killed with SIGKILL */
    int failed_open;
    int undrained;        /* the restarted broker still held messages */
    uint64_t pieces, undone;
    char shim_line[256];
} trial;

typedef struct totals {
    unsigned trials, by_signal, failed_opens, other_deaths, missed, undrained, stop_failures;
    uint64_t attempted, confirmed, delivered, lost, duplicated, unexpected, corrupt, pieces, undone;
} totals;

/* ---- one broker process, by PID ---- */

static pid_t live = -1; /* the broker this program started and has not reaped */
static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void reap_live(void)
{
    if (live > 0) {
        kill(live, SIGKILL);
        waitpid(live, NULL, 0);
        live = -1;
    }
}

/* spawn starts sluiced on b's directory with the given extra environment
 * (NULL-terminated "NAME=value"; may be NULL) and waits for READY. The log
 * is truncated when truncate_log. Returns 0; -1 when it did not get ready
 * (then it has been reaped). */
static int spawn(const th_broker *b, const char *const *vars, int truncate_log)
{
    const char *envp[512];
    int ne = 0;
    for (char **e = environ; *e && ne < 480; e++)
        if (strncmp(*e, "LD_PRELOAD=", 11) != 0 && strncmp(*e, "POWERLOSS_", 10) != 0)
            envp[ne++] = *e;
    for (int i = 0; vars && vars[i] && ne < 510; i++)
        envp[ne++] = vars[i];
    envp[ne] = NULL;
    const char *argv[32] = {th_bin("sluiced"), "--data", b->data, "--listen", b->endpoint};
    int n = 5;
    for (int i = 0; b->extra[i] && n < 31; i++)
        argv[n++] = b->extra[i];
    argv[n] = NULL;
    const proc_spec spec = {.argv = argv,
                            .env = envp,
                            .err_path = b->log,
                            .truncate = truncate_log != 0,
                            .ready = true,
                            .ready_ms = READY_MS,
                            .die_with_parent = true, /* never outlive the campaign */
                            .quiet = true}; /* a store that does not open is a counted outcome */
    proc p;
    if (proc_start(&p, "sluiced", &spec) != 0)
        return -1; /* nothing left running */
    live = p.pid;
    return 0;
}

/* wait_exit waits up to ms for the live broker to exit, reaps it and
 * returns its wait status, or -1 if it did not exit in time. */
static int wait_exit(unsigned ms)
{
    uint64_t end = th_now_ms() + ms;
    int status;
    while (live > 0) {
        pid_t r = waitpid(live, &status, WNOHANG);
        if (r == live) {
            live = -1;
            return status;
        }
        if (r < 0 || th_now_ms() > end)
            return -1;
        campaign_sleep_ms(2);
    }
    return -1;
}

/* stop sends SIGTERM and returns the exit status, or -1 (killed). */
static int stop(void)
{
    if (live <= 0)
        return -1;
    kill(live, SIGTERM);
    int status = wait_exit(STOP_MS);
    if (status == -1) {
        reap_live();
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* shim_line finds the shim's report in the broker's log. */
static void shim_line(const th_broker *b, trial *t)
{
    char line[512];
    FILE *f = fopen(b->log, "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "powerloss: ", 11) == 0) {
            line[strcspn(line, "\n")] = '\0';
            line[sizeof t->shim_line - 1] = '\0';
            memcpy(t->shim_line, line, sizeof t->shim_line);
            const char *p = strstr(line, " pieces=");
            const char *u = strstr(line, " undone=");
            if (p)
                t->pieces = strtoull(p + 8, NULL, 10);
            if (u)
                t->undone = strtoull(u + 8, NULL, 10);
        }
    fclose(f);
}

static void log_tail(const th_broker *b)
{
    char buf[3000];
    FILE *f = fopen(b->log, "r");
    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size > (long)sizeof buf - 1 ? size - (long)sizeof buf + 1 : 0, SEEK_SET);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    fprintf(stderr, "---- end of %s ----\n%s\n", b->log, buf);
}

/* ---- one trial ---- */

/* publish publishes until the broker dies of the shim's loss, triggering it
 * by signal when t->by_signal. The publisher stays open: its last queued
 * publishes reach the next broker when it closes. */
static void publish(campaign_pub *pub, trial *t, pid_t pid)
{
    uint64_t start = th_now_ms(), signalled = 0;
    for (;;) {
        uint64_t now = th_now_ms();
        if (campaign_exited(pid, NULL) == 1)
            return;
        if (!signalled && ((t->by_signal && pub->confirmed >= t->at) || now > start + TRIGGER_MS)) {
            kill(pid, SIGUSR1);
            signalled = now;
        }
        if ((signalled && now > signalled + DEATH_MS) || now > start + TRIAL_MS || interrupted) {
            t->missed = 1;
            kill(pid, SIGKILL);
            return;
        }
        campaign_pub_fill(pub, now);
        campaign_pub_collect(pub, 2);
    }
}

static int run_trial(th_broker *b, const char *shim, unsigned seed, trial *t)
{
    history_cfg hc = {.max_msgs = HISTORY_SLOTS, .tag = seed * 2654435761u + t->n, .body_min = 24,
                      .body_max = 3000, .big_every = 40, .big_bytes = 12000};
    history *h = NULL;
    if (history_new(&hc, &h) != 0)
        return -1;
    char v_syncs[64], v_seed[64], v_keep[64];
    snprintf(v_syncs, sizeof v_syncs, "POWERLOSS_AFTER_SYNCS=%u", t->by_signal ? 0 : t->at);
    snprintf(v_keep, sizeof v_keep, "POWERLOSS_KEEP_PCT=%u", t->keep_pct);
    snprintf(v_seed, sizeof v_seed, "POWERLOSS_SEED=%u", seed + t->n * 7919u);
    char preload[PATH_MAX + 16];
    const char *vars[] = {preload, v_syncs, v_seed, v_keep, t->control ? "POWERLOSS_CONTROL=1" : NULL, NULL};
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", shim);
    if (spawn(b, vars, 1) != 0) {
        fprintf(stderr, "powerloss: trial %u: sluiced with the shim did not start\n", t->n);
        log_tail(b);
        history_destroy(&h);
        return -1;
    }
    pid_t pid = live;
    campaign_pub pub;
    if (campaign_pub_open(&pub, b->endpoint, h, WINDOW, TRIAL_MS, seed + t->n) != 0) {
        history_destroy(&h);
        return -1;
    }
    publish(&pub, t, pid);
    int status = wait_exit(STOP_MS);
    if (status == -1)
        reap_live();
    t->shim_exit = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == SHIM_EXIT;
    t->other_death = !t->shim_exit && !t->missed;
    shim_line(b, t);
    if (t->other_death) {
        fprintf(stderr, "powerloss: trial %u: the broker ended with wait status %d, not by the shim\n", t->n,
                status);
        log_tail(b);
    }

    /* The power is back: the broker must open the store and hold every
     * confirmed message. */
    t->failed_open = spawn(b, NULL, 0) != 0;
    campaign_pub_close(&pub);
    campaign_drain_result dr = {0};
    if (!t->failed_open) {
        campaign_drain(b->endpoint, h, 64, DRAIN_MS, live, &dr);
        t->undrained = !dr.empty;
        if (dr.broker_gone) {
            wait_exit(STOP_MS);
            t->failed_open = 1; /* it opened, but could not serve what it held */
        }
    }
    history_classify(h, &t->r); /* a store that did not open lost all it confirmed */
    history_destroy(&h);
    return 0;
}

static void report_trial(const trial *t, unsigned seed)
{
    printf("powerloss: trial %u (%s, %s %u): lost %" PRIu64 " unexpected %" PRIu64 " corrupt %" PRIu64
           " of %" PRIu64 " confirmed%s%s%s\n",
           t->n, t->control ? "control" : "normal", t->by_signal ? "SIGUSR1 after confirmations" : "at sync",
           t->at, t->r.lost, t->r.unexpected, t->r.corrupt, t->r.confirmed,
           t->failed_open ? "; the store did not open" : "", t->undrained ? "; not drained" : "",
           t->missed ? "; trigger missed" : "");
    if (t->shim_line[0])
        printf("powerloss:   %s\n", t->shim_line);
    if (!t->control && (history_bad(&t->r) || t->failed_open || t->other_death)) {
        history_print(&t->r, "powerloss:   ", stdout);
        printf("powerloss:   replay the same trigger points (timing aside): SLUICE_SEED=%u SLUICE_BIN=bin "
               "build/rel/tests/campaign/campaign_powerloss %u\n",
               seed, t->n);
    }
}

static void add(totals *s, const trial *t)
{
    s->trials++;
    s->by_signal += (unsigned)t->by_signal;
    s->failed_opens += (unsigned)t->failed_open;
    s->other_deaths += (unsigned)t->other_death;
    s->missed += (unsigned)t->missed;
    s->undrained += (unsigned)t->undrained;
    s->attempted += t->r.attempted;
    s->confirmed += t->r.confirmed;
    s->delivered += t->r.delivered;
    s->lost += t->r.lost;
    s->duplicated += t->r.duplicated;
    s->unexpected += t->r.unexpected;
    s->corrupt += t->r.corrupt;
    s->pieces += t->pieces;
    s->undone += t->undone;
}

static int parse(int argc, char **argv, opts *o)
{
    *o = (opts){.trials = 1000};
    snprintf(o->shim, sizeof o->shim, "build/rel/tests/campaign/powerloss_shim.so");
    for (int i = 1; i < argc; i++) {
        char *end;
        if (strcmp(argv[i], "--control") == 0) {
            o->control = 1;
        } else if (strcmp(argv[i], "--quiet") == 0) {
            o->quiet = 1;
        } else if (strcmp(argv[i], "--shim") == 0 && i + 1 < argc) {
            snprintf(o->shim, sizeof o->shim, "%s", argv[++i]);
        } else {
            unsigned long n = strtoul(argv[i], &end, 10);
            if (*argv[i] == '\0' || *end != '\0' || n > 1000000) {
                fprintf(stderr, "usage: campaign_powerloss [TRIALS] [--shim PATH] [--control] [--quiet]\n");
                return -1;
            }
            o->trials = (unsigned)n;
        }
    }
    char abs[PATH_MAX];
    if (!realpath(o->shim, abs)) {
        fprintf(stderr, "campaign_powerloss: no shim at %s: %s\n", o->shim, strerror(errno));
        return -1;
    }
    snprintf(o->shim, sizeof o->shim, "%s", abs);
    return 0;
}

int main(int argc, char **argv)
{
    static opts o;
    if (parse(argc, argv, &o) != 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_interrupt);
    signal(SIGTERM, on_interrupt);
    atexit(reap_live);
    unsigned seed = th_seed();
    srand(seed);
    static const char *const extra[] = {"--max-attempts", "1000", NULL};
    th_broker b;
    if (th_broker_init(&b, extra) != 0) {
        fprintf(stderr, "powerloss: cannot make a temporary directory\n");
        return 2;
    }
    int broken = 0;
    totals s = {0};
    uint64_t start = th_now_ms();
    for (unsigned i = 1; i <= o.trials && !broken && !interrupted; i++) {
        trial t = {.n = i, .by_signal = i % 2 == 1, .keep_pct = 50};
        t.at = t.by_signal ? (unsigned)rand() % (MAX_CONFIRMS + 1) : 1 + (unsigned)rand() % MAX_SYNCS;
        if (run_trial(&b, o.shim, seed, &t) != 0) {
            broken = 1;
            break;
        }
        add(&s, &t);
        int bad = history_bad(&t.r) || t.failed_open || t.other_death;
        if (bad || (!o.quiet && t.undrained))
            report_trial(&t, seed);
        if (t.failed_open)
            th_rmrf(b.data); /* start the next trial from a fresh store */
        else if (stop() != 0)
            s.stop_failures++;
        if (!o.quiet && i % 50 == 0) {
            printf("powerloss: %u/%u trials, %" PRIu64 " confirmed, lost %" PRIu64 ", %.0f s\n", i, o.trials,
                   s.confirmed, s.lost, (double)(th_now_ms() - start) / 1000);
            fflush(stdout);
        }
    }

    /* The control: first every unsynced write undone (the store goes back
     * to where this broker found it, so it opens and the drain must miss
     * what was confirmed since), then half of them at random (up to
     * CONTROL_TRIES times). Each must show a loss. */
    trial ct[2];
    int control_seen[2] = {0, 0};
    for (int c = 0; o.control && !broken && !interrupted && c < 2; c++) {
        for (unsigned k = 1; !control_seen[c] && k <= (c ? CONTROL_TRIES : 1); k++) {
            ct[c] = (trial){.n = o.trials + 1 + (unsigned)c, .control = 1, .by_signal = 1,
                            .keep_pct = c ? 50 : 0};
            ct[c].at = CONTROL_MIN + (unsigned)rand() % (MAX_CONFIRMS - CONTROL_MIN + 1);
            if (run_trial(&b, o.shim, seed, &ct[c]) != 0) {
                broken = 1;
                break;
            }
            control_seen[c] = ct[c].r.lost > 0 && ct[c].r.confirmed > 0;
            if (!o.quiet || !control_seen[c])
                report_trial(&ct[c], seed);
            if (!ct[c].failed_open)
                stop();
            th_rmrf(b.data); /* the control leaves a store nobody should trust */
        }
    }
    reap_live();
    th_broker_fini(&b);
    if (interrupted) {
        fprintf(stderr, "powerloss: interrupted after %u trials; broker stopped, directory removed\n", s.trials);
        return 2;
    }

    printf("powerloss: %u trials (%u by SIGUSR1, %u at a sync), %" PRIu64 " attempted, %" PRIu64
           " confirmed, %" PRIu64 " delivered; unsynced writes undone %" PRIu64 " of %" PRIu64 "\n",
           s.trials, s.by_signal, s.trials - s.by_signal, s.attempted, s.confirmed, s.delivered, s.undone,
           s.pieces);
    printf("powerloss: lost %" PRIu64 " unexpected %" PRIu64 " corrupt %" PRIu64 " failed opens %u"
           " (duplicated %" PRIu64 ", other broker deaths %u, triggers missed %u, not drained %u)\n",
           s.lost, s.unexpected, s.corrupt, s.failed_opens, s.duplicated, s.other_deaths, s.missed,
           s.undrained);
    for (int c = 0; o.control && !broken && c < 2; c++)
        printf("powerloss: control %d (syncs skipped, %s writes undone): %s: lost %" PRIu64 " of %" PRIu64
               " confirmed, %s\n",
               c + 1, c ? "a random half of the" : "all", control_seen[c] ? "loss detected" : "NO LOSS DETECTED",
               ct[c].r.lost, ct[c].r.confirmed,
               ct[c].failed_open ? "the store did not open" : "the store opened");
    int fail = broken || s.lost || s.unexpected || s.corrupt || s.failed_opens || s.other_deaths ||
               s.undrained || (o.control && !(control_seen[0] && control_seen[1])) || s.trials < o.trials;
    printf("powerloss: %s (seed %u)\n", fail ? "FAIL" : "ok", seed);
    return fail ? 1 : 0;
}
