/*
 * campaign_corrupt.c - one flipped byte in a stopped broker's store, over
 * and over: the broker never crashes, never loops, never hides a message,
 * and salvage brings back all but the record the flip hit.
 *
 *   campaign_corrupt [TRIALS] [--quiet]
 *
 * Once: a broker in a fresh directory (3 levels, level 1 fair by tag) is
 * given known messages (MSGS of them: bodies that name their number, most
 * small, every BIG_EVERY-th large enough for overflow pages, some tagged,
 * some with a time to live or an idempotency key, some delayed for a second
 * or two so that the delayed tree holds them) and stopped with SIGTERM: its
 * data directory is the master.
 *
 * Each trial copies the master, XORs one byte at a random offset of
 * data.mdb past its two meta pages and before the end of its last page in
 * use with a random non-zero value (the offset and the value are printed),
 * keeps that damaged copy, and starts the real sluiced ($SLUICE_BIN) on a
 * second copy of it. Then:
 *
 *   - it must either get READY, or exit by itself with status 2 and a log
 *     line saying it does not start on a corrupt store and naming `sluice
 *     salvage`; dying of a signal, or hanging, fails the trial;
 *   - started, it is drained (consume, ack, until STATS shows nothing
 *     ready, in flight or delayed): every body delivered must be one that
 *     was published, byte for byte, once; and every message must be
 *     delivered, or a dead letter (a copy of a record that failed its
 *     check), or counted in STATS as "quarantined" (held in a level whose
 *     trees failed their checks): delivered + dead + quarantined = MSGS.
 *     Then SIGTERM must end it with status 0, and it must start again (no
 *     restart loop) with the same dead letters and quarantine and nothing
 *     more to deliver;
 *   - `sluiced --salvage` reads the damaged copy into a new directory (it
 *     must exit 0), a broker started there must deliver every published
 *     message but at most one (the one the flip hit), byte for byte, and
 *     nothing else.
 *
 * Exit status: 0 when every trial held; 1 otherwise; 2 when the campaign
 * could not run. Every broker is started and stopped by its PID and dies
 * with the campaign; the directory under /tmp is removed at the end. Seeded
 * by $SLUICE_SEED (printed): the same seed flips the same bytes of the same
 * master, though the master's own layout can differ between runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "campaign.h"
#include "harness.h"
#include "sluice.h"

#define MSGS        630
#define BIG_EVERY   50
#define DELAYED     20          /* the last DELAYED messages are delayed */
#define LEVELS      3
#define TAGS        10
#define READY_MS    20000
#define DRAIN_MS    30000
#define STOP_MS     20000
#define SALVAGE_MS  60000
#define PSIZE       4096

static volatile sig_atomic_t interrupted;
static pid_t live = -1; /* the child this program started and has not reaped */

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

/* ---- messages ---- */

static size_t body_of(unsigned i, char *buf, size_t cap)
{
    size_t len = i % BIG_EVERY == BIG_EVERY - 1 ? 2500 + (i * 7919u) % 6000 : 32 + (i * 131u) % 180;
    if (len >= cap)
        len = cap - 1;
    int n = snprintf(buf, cap, "corrupt-campaign msg %06u ", i);
    for (size_t k = (size_t)n; k < len; k++)
        buf[k] = (char)('a' + (i + k) % 26);
    return len;
}

/* ---- processes ---- */

/* start runs sluiced with args (NULL-terminated, after the program), its
 * stderr to log, --ready-fd a pipe when ready_fd is not NULL (*ready_fd
 * gets the reading end). Returns its PID (also in live). */
static pid_t start(const char *const *args, const char *log, int *ready_fd)
{
    int p[2] = {-1, -1};
    if (ready_fd && pipe(p) != 0)
        return -1;
    char fdtext[16];
    snprintf(fdtext, sizeof fdtext, "%d", p[1]);
    const char *argv[24] = {th_bin("sluiced")};
    int n = 1;
    for (int i = 0; args[i] && n < 20; i++)
        argv[n++] = args[i];
    if (ready_fd) {
        argv[n++] = "--ready-fd";
        argv[n++] = fdtext;
    }
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (fd >= 0)
            dup2(fd, 2);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
        }
        if (p[0] >= 0)
            close(p[0]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    if (p[1] >= 0)
        close(p[1]);
    if (pid < 0) {
        if (p[0] >= 0)
            close(p[0]);
        return -1;
    }
    if (ready_fd)
        *ready_fd = p[0];
    live = pid;
    return pid;
}

/* wait_status waits up to ms for the live child to exit and reaps it:
 * its wait status, or -1 when it still runs. */
static int wait_status(int ms)
{
    uint64_t end = th_now_ms() + (uint64_t)ms;
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

typedef enum { STARTED, EXITED, HUNG } start_result;

/* broker_start starts a broker on data at endpoint and waits for READY or
 * its exit (*status). */
static start_result broker_start(const char *data, const char *endpoint, const char *log, int *status)
{
    const char *args[] = {"--data", data, "--listen", endpoint, "--levels", "3", NULL};
    int fd = -1;
    if (start(args, log, &fd) < 0)
        return HUNG;
    char buf[16];
    ssize_t got = 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, READY_MS) > 0)
        got = read(fd, buf, sizeof buf);
    close(fd);
    if (got >= 5 && memcmp(buf, "READY", 5) == 0)
        return STARTED;
    *status = wait_status(got == 0 ? STOP_MS : 1000); /* EOF: it exited, or is about to */
    if (*status == -1) {
        reap_live();
        return HUNG;
    }
    return EXITED;
}

/* broker_stop sends SIGTERM: the wait status, or -1 when it had to be killed. */
static int broker_stop(void)
{
    if (live <= 0)
        return -1;
    kill(live, SIGTERM);
    int status = wait_status(STOP_MS);
    if (status == -1)
        reap_live();
    return status;
}

static int log_has(const char *log, const char *what)
{
    static char text[1 << 20];
    th_read_file(log, text, sizeof text);
    return strstr(text, what) != NULL;
}

/* ---- files ---- */

static int copy_file(const char *from, const char *to)
{
    char buf[1 << 16];
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return errno == ENOENT ? 0 : -1;
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640), rc = out < 0 ? -1 : 0;
    ssize_t n;
    while (rc == 0 && (n = read(in, buf, sizeof buf)) > 0)
        rc = write(out, buf, (size_t)n) == n ? 0 : -1;
    close(in);
    if (out >= 0 && close(out) != 0)
        rc = -1;
    return rc;
}

/* copy_store copies a stopped broker's data directory (its data file and log). */
static int copy_store(const char *from, const char *to)
{
    char a[PATH_MAX + 16], b[PATH_MAX + 16];
    th_rmrf(to);
    if (mkdir(to, 0750) != 0)
        return -1;
    static const char *const files[] = {"data.mdb", "wal.log"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s/%s", from, files[i]);
        snprintf(b, sizeof b, "%s/%s", to, files[i]);
        if (copy_file(a, b) != 0)
            return -1;
    }
    return 0;
}

/* last_page reads the data file's last page in use from the meta page in
 * use (as LMDB picks it: the larger transaction id). */
static uint64_t last_page(const char *data)
{
    char path[PATH_MAX + 16];
    unsigned char m[2][160];
    snprintf(path, sizeof path, "%s/data.mdb", data);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || pread(fd, m[0], sizeof m[0], 0) != (ssize_t)sizeof m[0] ||
        pread(fd, m[1], sizeof m[1], PSIZE) != (ssize_t)sizeof m[1]) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    close(fd);
    uint64_t last[2], txn[2];
    for (int i = 0; i < 2; i++) {
        memcpy(&last[i], m[i] + 136, 8);
        memcpy(&txn[i], m[i] + 144, 8);
    }
    return txn[1] > txn[0] ? last[1] : last[0];
}

static int flip(const char *data, uint64_t off, unsigned char x)
{
    char path[PATH_MAX + 16];
    unsigned char c;
    snprintf(path, sizeof path, "%s/data.mdb", data);
    int fd = open(path, O_RDWR | O_CLOEXEC), rc = -1;
    if (fd >= 0 && pread(fd, &c, 1, (off_t)off) == 1) {
        c ^= x;
        rc = pwrite(fd, &c, 1, (off_t)off) == 1 ? 0 : -1;
    }
    if (fd >= 0)
        close(fd);
    return rc;
}

/* ---- the master ---- */

static int make_master(const char *dir, const char *endpoint, const char *log)
{
    int status;
    if (broker_start(dir, endpoint, log, &status) != STARTED)
        return -1;
    sl_client *c = NULL;
    int rc = campaign_client(endpoint, 5000, &c);
    if (rc == SL_OK)
        rc = sl_level_fair(c, 1, 1);
    static char body[16384];
    unsigned sent = 0, done = 0;
    while (rc == SL_OK && done < MSGS) {
        while (rc == SL_OK && sent < MSGS && sent - done < 128) {
            char tag[16], key[24];
            size_t len = body_of(sent, body, sizeof body);
            sl_put m = {.body = body, .body_len = len, .level = (int)(sent % LEVELS)};
            if (m.level == 1 || sent % 7 == 0) {
                snprintf(tag, sizeof tag, "t%u", sent % TAGS);
                m.tag = tag;
            }
            if (sent % 11 == 0) {
                snprintf(key, sizeof key, "key-%u", sent);
                m.key = key;
            }
            if (sent % 13 == 0)
                m.ttl_ms = 86400000;
            if (sent >= MSGS - DELAYED)
                m.delay_ms = 1500;
            uint64_t ticket;
            rc = sl_send_async(c, &m, &ticket);
            sent++;
        }
        sl_confirm cf;
        if (rc == SL_OK && (rc = sl_send_wait(c, 5000, &cf)) == SL_OK) {
            rc = cf.err;
            done++;
        }
    }
    sl_close(&c);
    int stopped = broker_stop();
    if (rc != SL_OK || stopped != 0) {
        fprintf(stderr, "corrupt: the master could not be made (%s, broker exit status %d)\n", sl_strerror(rc),
                stopped);
        return -1;
    }
    return 0;
}

/* ---- a broker's contents ---- */

typedef struct count {
    uint64_t delivered, dups, unexpected, bad_body, dead, quarantined;
    int drained, stats_ok;
} count;

/* drain consumes and acknowledges everything the broker at endpoint will
 * deliver, checking each body; seen[] marks the messages delivered. */
static void drain(const char *endpoint, unsigned char *seen, count *out)
{
    static char want[16384];
    sl_client *c = NULL;
    uint64_t end = th_now_ms() + DRAIN_MS;
    if (campaign_client(endpoint, 2000, &c) != SL_OK)
        return;
    int subscribed = 0;
    while (th_now_ms() < end && !interrupted) {
        if (!subscribed) {
            subscribed = sl_subscribe(c, NULL, NULL, 0, 64) == SL_OK;
            continue;
        }
        sl_delivery *d = NULL;
        if (sl_recv(c, 100, &d) == SL_OK) {
            unsigned i;
            if (sscanf(d->body, "corrupt-campaign msg %u ", &i) != 1 || i >= MSGS) {
                out->unexpected++;
            } else {
                size_t len = body_of(i, want, sizeof want);
                if (d->body_len != len || memcmp(d->body, want, len) != 0)
                    out->bad_body++;
                else if (seen[i]++)
                    out->dups++;
                else
                    out->delivered++;
            }
            sl_ack(c, d);
            sl_delivery_free(&d);
            continue;
        }
        sl_stats st;
        sl_stats_more more = {.size = sizeof more};
        if (sl_stats_get_more(c, &st, NULL, &more) != SL_OK)
            continue;
        uint64_t held = 0;
        out->dead = 0;
        for (unsigned l = 0; l < st.nlevels; l++) {
            held += st.level[l].depth + st.level[l].inflight + st.level[l].delayed;
            out->dead += st.level[l].dead;
        }
        out->quarantined = more.quarantined_total;
        out->stats_ok = 1;
        if (held == 0) {
            out->drained = 1;
            break;
        }
    }
    sl_flush(c, 2000);
    sl_close(&c);
}

/* ---- one trial ---- */

typedef struct trial {
    unsigned n;
    uint64_t off;
    unsigned char x;
    int started, refused, crashed, hung, stop_status, restart_ok;
    count run, again, salvaged;
    int salvage_status;
    char why[200];
} trial;

static int fail_if(trial *t, int cond, const char *why)
{
    if (cond && !t->why[0])
        snprintf(t->why, sizeof t->why, "%s", why);
    return cond;
}

static void run_trial(const char *dir, const char *master, trial *t)
{
    char flipped[PATH_MAX], run[PATH_MAX], salv[PATH_MAX], endpoint[PATH_MAX + 16], log[PATH_MAX];
    static unsigned char seen[MSGS];
    snprintf(flipped, sizeof flipped, "%s/flipped", dir);
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(salv, sizeof salv, "%s/salvaged", dir);
    snprintf(endpoint, sizeof endpoint, "ipc://%s/t.sock", dir);
    snprintf(log, sizeof log, "%s/trial.log", dir);
    unlink(log);
    if (copy_store(master, flipped) != 0 || flip(flipped, t->off, t->x) != 0 || copy_store(flipped, run) != 0) {
        fail_if(t, 1, "cannot copy the master");
        return;
    }
    int status = 0;
    start_result sr = broker_start(run, endpoint, log, &status);
    t->hung = fail_if(t, sr == HUNG, "the broker neither got ready nor exited");
    t->crashed = fail_if(t, sr == EXITED && WIFSIGNALED(status), "the broker died of a signal at start");
    if (sr == EXITED && !t->crashed) {
        t->refused = 1;
        fail_if(t, !WIFEXITED(status) || WEXITSTATUS(status) != 2 || !log_has(log, "sluice salvage"),
                "the broker exited at start without status 2 and a clear error naming salvage");
    }
    if (sr == STARTED) {
        t->started = 1;
        memset(seen, 0, sizeof seen);
        drain(endpoint, seen, &t->run);
        t->stop_status = broker_stop();
        fail_if(t, !t->run.drained, "not drained");
        fail_if(t, t->run.unexpected || t->run.bad_body || t->run.dups, "a body delivered that was not published so");
        fail_if(t, t->run.delivered + t->run.dead + t->run.quarantined != MSGS,
                "delivered + dead + quarantined differs from the messages published");
        fail_if(t, t->stop_status != 0, "SIGTERM did not end the broker with status 0");
        /* no restart loop: it starts again, and holds nothing more */
        sr = broker_start(run, endpoint, log, &status);
        t->restart_ok = sr == STARTED;
        fail_if(t, !t->restart_ok, "the broker did not start again");
        if (sr == STARTED) {
            drain(endpoint, seen, &t->again);
            fail_if(t, broker_stop() != 0, "SIGTERM did not end the restarted broker with status 0");
            fail_if(t, t->again.delivered || t->again.dead != t->run.dead ||
                       t->again.quarantined != t->run.quarantined,
                    "the restarted broker's messages, dead letters or quarantine differ");
        }
    }
    /* salvage: all but the flipped record back */
    th_rmrf(salv);
    const char *args[] = {"--salvage", flipped, "--to", salv, NULL};
    char salvage_log[PATH_MAX];
    snprintf(salvage_log, sizeof salvage_log, "%s/salvage.log", dir);
    unlink(salvage_log);
    if (start(args, salvage_log, NULL) > 0)
        t->salvage_status = wait_status(SALVAGE_MS);
    if (live > 0) {
        reap_live();
        t->salvage_status = -1;
    }
    if (fail_if(t, t->salvage_status != 0, "salvage did not exit with status 0"))
        return;
    sr = broker_start(salv, endpoint, log, &status);
    if (fail_if(t, sr != STARTED, "no broker started on the salvaged store"))
        return;
    memset(seen, 0, sizeof seen);
    drain(endpoint, seen, &t->salvaged);
    fail_if(t, broker_stop() != 0, "SIGTERM did not end the broker on the salvaged store with status 0");
    fail_if(t, !t->salvaged.drained, "the salvaged store was not drained");
    fail_if(t, t->salvaged.unexpected || t->salvaged.bad_body || t->salvaged.dups,
            "the salvaged store delivered a body that was not published so");
    fail_if(t, t->salvaged.delivered + 1 < MSGS, "salvage lost more than the flipped record");
}

static void report(const trial *t, const char *dir)
{
    printf("corrupt: trial %u: byte %" PRIu64 " (page %" PRIu64 " +%" PRIu64 ") ^0x%02x: ", t->n, t->off,
           t->off / PSIZE, t->off % PSIZE, t->x);
    if (t->started)
        printf("started; delivered %" PRIu64 ", dead %" PRIu64 ", quarantined %" PRIu64 "%s", t->run.delivered,
               t->run.dead, t->run.quarantined, t->restart_ok ? "; started again" : "");
    else if (t->refused)
        printf("refused (status 2)");
    else
        printf("%s", t->crashed ? "CRASHED" : t->hung ? "HUNG" : "not run");
    printf("; salvage: %" PRIu64 " of %u back%s%s\n", t->salvaged.delivered, MSGS, t->why[0] ? ": FAIL: " : "",
           t->why);
    if (t->why[0]) {
        const count *c[] = {&t->run, &t->again, &t->salvaged};
        static const char *const what[] = {"first start", "second start", "salvaged store"};
        for (int i = 0; i < 3; i++)
            printf("corrupt:   %s: delivered %" PRIu64 ", again %" PRIu64 ", unexpected %" PRIu64 ", damaged %" PRIu64
                   ", dead %" PRIu64 ", quarantined %" PRIu64 "%s\n", what[i], c[i]->delivered, c[i]->dups,
                   c[i]->unexpected, c[i]->bad_body, c[i]->dead, c[i]->quarantined, c[i]->drained ? "" : ", not drained");
        printf("corrupt:   the broker's log: %s/trial.log, salvage's: %s/salvage.log (kept)\n", dir, dir);
    }
}

int main(int argc, char **argv)
{
    unsigned trials = 100;
    int quiet = 0;
    for (int i = 1; i < argc; i++) {
        char *end;
        unsigned long n = strtoul(argv[i], &end, 10);
        if (strcmp(argv[i], "--quiet") == 0)
            quiet = 1;
        else if (*argv[i] && !*end && n <= 100000)
            trials = (unsigned)n;
        else {
            fprintf(stderr, "usage: campaign_corrupt [TRIALS] [--quiet]\n");
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_interrupt);
    signal(SIGTERM, on_interrupt);
    atexit(reap_live);
    unsigned seed = th_seed();
    srand(seed);
    th_broker b;
    if (th_broker_init(&b, NULL) != 0) {
        fprintf(stderr, "corrupt: cannot make a temporary directory\n");
        return 2;
    }
    char master[PATH_MAX];
    snprintf(master, sizeof master, "%s/master", b.dir);
    if (make_master(master, b.endpoint, b.log) != 0) {
        reap_live();
        th_broker_fini(&b);
        return 2;
    }
    uint64_t last = last_page(master);
    if (last < 3) {
        fprintf(stderr, "corrupt: the master's data file holds no page past its meta pages\n");
        th_broker_fini(&b);
        return 2;
    }
    unsigned started = 0, refused = 0, quarantined = 0, dead = 0, failed = 0, all_back = 0, done = 0;
    uint64_t t0 = th_now_ms();
    for (unsigned i = 1; i <= trials && !interrupted; i++) {
        trial t = {.n = i};
        t.off = 2 * PSIZE + ((uint64_t)rand() * (RAND_MAX + 1ULL) + (uint64_t)rand()) % ((last - 1) * PSIZE);
        t.x = (unsigned char)(1 + rand() % 255);
        run_trial(b.dir, master, &t);
        done++;
        started += (unsigned)t.started;
        refused += (unsigned)t.refused;
        quarantined += t.started && t.run.quarantined;
        dead += t.started && t.run.dead;
        all_back += t.salvaged.delivered == MSGS;
        failed += t.why[0] != 0;
        if (!quiet || t.why[0])
            report(&t, b.dir);
        if (t.why[0])
            break; /* keep the directory as the failure left it */
    }
    reap_live();
    printf("corrupt: %u trials of %u messages, one byte each of %" PRIu64 " pages: %u started (%u with "
           "records set aside as dead letters, %u with a level quarantined), %u refused once with a clear "
           "error; salvage brought every message back %u times, all but one the other %u; %.0f s\n",
           done, MSGS, last + 1, started, dead, quarantined, refused, all_back, done - all_back - failed,
           (double)(th_now_ms() - t0) / 1000);
    int fail = failed || interrupted || done < trials;
    printf("corrupt: %s (seed %u)\n", fail ? "FAIL" : "ok", seed);
    if (!failed)
        th_broker_fini(&b);
    else
        printf("corrupt: kept %s for a look\n", b.dir);
    return fail ? 1 : 0;
}
