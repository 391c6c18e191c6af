/*
 * bench_sinkuse.c - the sink used at its limit: how much of a sink's rate a
 * backlog gets with the defaults, as a new user sets it up.
 *
 * For each rate (100, 1,000, 2,000 and 5,000 a second) the broker's sink is
 * set with `sink set`'s defaults (burst 1) and three set-ups run, each on
 * processes of its own, with a backlog that outlasts the measurement:
 *
 *   dispatch         the bare paced dispatcher (bench_bare_zmq.c), before
 *                    and after the consume row: the broker's bucket
 *                    releasing over ZeroMQ to a consumer with credit 64,
 *                    with no broker; what this host keeps of a burst-1 rate
 *                    when each release needs a wake (the mean of the two).
 *                    The consume and shared rows' targets are the issue's
 *                    (97 and 95 %) of what it kept (at most all).
 *   consume -c 64    one broker, one `sluice consume -c 64 > /dev/null`:
 *                    what the broker's bucket releases when its loop wakes
 *                    late for the slots (rl_take_late keeps them).
 *   --post           one broker, one `sluice consume --post URL --workers 8`
 *                    into `sluice-sink -r RATE --burst 1`, a GCRA as strict
 *                    as the limit: what the consumer's pacer sends, each
 *                    request a full interval after the one before, and the
 *                    429s that sink answered (the target is none).
 *   bare             right after --post, into a fresh sink of the same
 *                    rate: the same pacer, workers and answer to a 429 with
 *                    no broker (bench_bare.c), which says how many 429s this
 *                    host makes for any sender; the --post row's target is
 *                    the where it met none, and otherwise no more
 *                    429s than one and a half times its, plus one.
 *   shared           a redis-server and three brokers sharing the rate
 *                    (--coord, each reserving a tenth of a third), one
 *                    `sluice consume -c 64` each, measured once the leases
 *                    hold SHARED_SLICES_PCT of the slices.
 *
 * The figure is what the brokers count acknowledged (ACK follows the
 * sink's 200 with --post) over b->seconds, after the consumers have run
 * WARM_MS; a backlog that ran out before the end is an error, not a figure.
 * The machine's load average at the start of each rate is printed with the
 * progress, since on a loaded machine these rows measure the scheduler as
 * much as Sluice.
 *
 * Everything runs in b->dir/sinkuse-RATE, removed afterwards; every process
 * it starts it stops by PID, on every path. Costs: about 5 s a set-up plus
 * the leases' learning (one TTL, 3 s), three brokers at most at a time.
 */
#include "bench_sinkuse.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bench_bare.h"
#include "bench_client.h"
#include "bench_core.h"
#include "bench_spawn.h"
#include "proc.h"
#include "scen_proc.h"
#include "sluice.h"

#define WARM_MS           1000 /* consumers running before the window opens */
#define BACKLOG_SLACK_S   4    /* the backlog outlasts the window by this */
#define CLI_CREDIT        "64"
#define POST_WORKERS      "8"
#define SHARED_BROKERS    3
#define SHARED_WAIT_S     30   /* for the leases to hold SHARED_SLICES_PCT of the slices */
#define SHARED_SLICES_PCT 95
#define STOP_MS           10000
#define READY_MS          20000
#define PUBLISH_WINDOW    256

static const unsigned rates[] = {100, 1000, 2000, 5000};

/* One set-up's processes. */
typedef struct use {
    bench *b;
    unsigned rate;
    char dir[128];
    unsigned n;                         /* brokers started */
    bench_spawn broker[SHARED_BROKERS];
    sl_client *admin[SHARED_BROKERS];
    proc consumer[SHARED_BROKERS], sink, redis;
    char redis_sock[160];
} use;

/* sibling writes the path of program name beside b->sluiced into out. */
static void sibling(const bench *b, const char *name, char *out, size_t size)
{
    const char *slash = strrchr(b->sluiced, '/');
    snprintf(out, size, "%.*s%s", slash ? (int)(slash - b->sluiced + 1) : 0, b->sluiced, name);
}

/* nap sleeps ms, or less when a signal asks the run to stop. */
static void nap(int64_t ms)
{
    int64_t until = bench_core_now_ns() + ms * BENCH_CORE_NS_PER_MS;
    for (int i = 0; i < 100000 && !bench_core_stopping() && bench_core_now_ns() < until; i++) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static int brokers_start(use *u, unsigned n)
{
    char dir[192], coord[176], reserved[24], name[32];
    unsigned each = u->rate / SHARED_BROKERS / 10 ? u->rate / SHARED_BROKERS / 10 : 1;
    snprintf(coord, sizeof coord, "unix://%s", u->redis_sock);
    snprintf(reserved, sizeof reserved, "%u", each);
    snprintf(name, sizeof name, "bench-%u", u->rate);
    const char *const shared[] = {"--coord", coord, "--coord-name", name, "--reserved-rate", reserved, NULL};
    for (unsigned i = 0; i < n; i++) {
        snprintf(dir, sizeof dir, "%s/b%u", u->dir, i + 1);
        if (mkdir(dir, 0700) != 0 && errno != EEXIST)
            return bench_core_fail("cannot create %s: %s", dir, strerror(errno));
        if (bench_spawn_start_with(&u->broker[i], u->b->sluiced, dir, u->redis_sock[0] ? shared : NULL, NULL, 0))
            return -1;
        u->n = i + 1;
        if (bench_client_open(u->broker[i].endpoint, &u->admin[i]) != 0)
            return -1;
    }
    /* the limit, with the defaults: once, through the first (shared: for all) */
    int rc = sl_sink_set(u->admin[0], (uint64_t)u->rate * 1000, SL_UNCHANGED, SL_UNCHANGED);
    return rc == SL_OK ? 0 : bench_client_fail("sl_sink_set", u->admin[0], rc);
}

/* backlog publishes msgs to broker i, confirmed. */
static int backlog(use *u, unsigned i, uint64_t msgs)
{
    uint64_t confirmed = 0;
    int64_t last_ns;
    int64_t deadline = bench_core_now_ns() + 120 * BENCH_CORE_NS_PER_S;
    if (bench_client_publish_window(u->admin[i], PUBLISH_WINDOW, deadline, msgs, &confirmed, &last_ns) != 0)
        return -1;
    if (confirmed < msgs && !bench_core_stopping())
        return bench_core_fail("sink use: %" PRIu64 " of %" PRIu64 " publishes confirmed", confirmed, msgs);
    return 0;
}

/* consumer_start runs `sluice -b EP consume ARGS...` for broker i, its
 * output to /dev/null and its errors to a log of its own. */
static int consumer_start(use *u, unsigned i, const char *const *args)
{
    char sluice[PROC_PATH_BYTES], log[224];
    const char *argv[16];
    size_t k = 0;
    sibling(u->b, "sluice", sluice, sizeof sluice);
    snprintf(log, sizeof log, "%s/consume-%u.log", u->dir, i + 1);
    argv[k++] = sluice, argv[k++] = "-b", argv[k++] = u->broker[i].endpoint, argv[k++] = "consume";
    for (; *args && k < 15; args++)
        argv[k++] = *args;
    argv[k] = NULL;
    const proc_spec spec = {.argv = argv, .out_path = "/dev/null", .err_path = log, .truncate = true,
                            .null_stdin = true, .own_group = true, .die_with_parent = true};
    return proc_start(&u->consumer[i], "sluice consume", &spec);
}

static int redis_start(use *u)
{
    char log[224];
    snprintf(u->redis_sock, sizeof u->redis_sock, "%s/redis.sock", u->dir);
    snprintf(log, sizeof log, "%s/redis.log", u->dir);
    const char *const argv[] = {"redis-server", "--port", "0", "--unixsocket", u->redis_sock, "--save", "",
                                "--appendonly", "no", NULL};
    const proc_spec spec = {.argv = argv, .out_path = log, .truncate = true, .null_stdin = true,
                            .own_group = true, .die_with_parent = true};
    if (proc_start(&u->redis, "redis-server", &spec) != 0)
        return bench_core_fail("cannot start redis-server (Debian: apt-get install redis-server)");
    struct stat st;
    for (int i = 0; i < 500 && !bench_core_stopping(); i++, nap(20))
        if (stat(u->redis_sock, &st) == 0)
            return 0;
    return bench_core_fail("redis-server did not open %s (see %s)", u->redis_sock, log);
}

static int sink_start(use *u, char *url, size_t size)
{
    char exe[PROC_PATH_BYTES], listen[32], rate[16], log[224];
    unsigned port = scen_proc_free_port();
    if (!port)
        return bench_core_fail("no free TCP port on 127.0.0.1 for the sink");
    sibling(u->b, "sluice-sink", exe, sizeof exe);
    snprintf(listen, sizeof listen, "127.0.0.1:%u", port);
    snprintf(rate, sizeof rate, "%u", u->rate);
    snprintf(log, sizeof log, "%s/sink.out", u->dir);
    snprintf(url, size, "http://127.0.0.1:%u/", port);
    const char *const argv[] = {exe, "--listen", listen, "--rate", rate, "--burst", "1", NULL};
    const proc_spec spec = {.argv = argv, .out_path = log, .truncate = true, .null_stdin = true, .ready = true,
                            .ready_ms = READY_MS, .own_group = true, .die_with_parent = true,
                            .stopping = bench_core_stopping};
    return proc_start(&u->sink, "sluice-sink", &spec);
}

/* counts sums, over the brokers, the acknowledged and the throttled
 * deliveries and the messages still waiting; *held is the slices their
 * leases hold and *slices the sink's (shared only). */
static int counts(use *u, uint64_t *acked, uint64_t *throttled, uint64_t *depth, uint64_t *held, uint64_t *slices)
{
    *acked = *throttled = *depth = *held = *slices = 0;
    for (unsigned i = 0; i < u->n; i++) {
        sl_stats s;
        int rc = sl_stats_get(u->admin[i], &s);
        if (rc != SL_OK)
            return bench_client_fail("sl_stats_get", u->admin[i], rc);
        for (unsigned l = 0; l < s.nlevels && l < SL_MAX_LEVELS; l++) {
            *acked += s.level[l].acked;
            *throttled += s.level[l].throttled;
            *depth += s.level[l].depth;
        }
        *held += s.coord.slices_held;
        *slices = s.coord.slices;
    }
    return 0;
}

/* measure lets the consumers run WARM_MS, then counts what is acknowledged
 * over b->seconds: *pct of the rate, and *throttled in the whole run. */
static int measure(use *u, double *pct, uint64_t *throttled)
{
    uint64_t a1, a2, t, depth, held, slices;
    nap(WARM_MS);
    int64_t t1 = bench_core_now_ns();
    if (counts(u, &a1, &t, &depth, &held, &slices) != 0)
        return -1;
    nap((int64_t)u->b->seconds * 1000);
    int64_t t2 = bench_core_now_ns();
    if (counts(u, &a2, throttled, &depth, &held, &slices) != 0)
        return -1;
    for (unsigned i = 0; i < u->n; i++)
        if (!proc_running(&u->consumer[i]))
            return bench_core_fail("sink use at %u/s: a consumer stopped (its log is above)", u->rate);
    if (!depth && !bench_core_stopping())
        return bench_core_fail("sink use at %u/s: the backlog ran out before the window ended", u->rate);
    *pct = bench_core_per_s(a2 - a1, t2 - t1) / u->rate * 100;
    return 0;
}

/* use_close stops what u started, consumers first, and removes its files. */
static int use_close(use *u, int rc)
{
    for (unsigned i = 0; i < SHARED_BROKERS; i++)
        if (u->consumer[i].pid && proc_stop(&u->consumer[i], STOP_MS) != 0)
            rc = -1;
    if (u->sink.pid)
        proc_stop(&u->sink, STOP_MS);
    for (unsigned i = 0; i < u->n; i++) {
        sl_close(&u->admin[i]);
        if (bench_spawn_stop(&u->broker[i]) != 0)
            rc = -1;
    }
    if (u->redis.pid)
        proc_stop(&u->redis, STOP_MS);
    scen_proc_rmtree(u->dir);
    return rc;
}

static int use_open(use *u, bench *b, unsigned rate, const char *what)
{
    *u = (use){.b = b, .rate = rate};
    snprintf(u->dir, sizeof u->dir, "%s/sinkuse-%u-%s", b->dir, rate, what);
    if (mkdir(u->dir, 0700) != 0)
        return bench_core_fail("cannot create %s: %s", u->dir, strerror(errno));
    return 0;
}

static uint64_t backlog_msgs(const use *u, unsigned brokers, unsigned wait_s)
{
    return (uint64_t)u->rate * ((uint64_t)u->b->seconds + WARM_MS / 1000 + BACKLOG_SLACK_S + wait_s) / brokers + 100;
}

/* one_bare_dispatch runs the bare paced dispatcher (bench_bare_zmq.c) for
 * the same warm-up and window as the consume row. */
static int one_bare_dispatch(bench *b, unsigned rate, double *pct)
{
    use u;
    int rc = use_open(&u, b, rate, "dispatch");
    if (rc == 0)
        rc = bench_bare_dispatch(u.dir, rate, WARM_MS, (int64_t)b->seconds * 1000, pct);
    return use_close(&u, rc);
}

static int one_cli(bench *b, unsigned rate, double *pct)
{
    use u;
    uint64_t throttled;
    const char *const args[] = {"-c", CLI_CREDIT, NULL};
    int rc = use_open(&u, b, rate, "cli");
    if (rc == 0)
        rc = brokers_start(&u, 1) || backlog(&u, 0, backlog_msgs(&u, 1, 0)) || consumer_start(&u, 0, args) ||
                     measure(&u, pct, &throttled)
                 ? -1 : 0;
    return use_close(&u, rc);
}

static int one_post(bench *b, unsigned rate, double *pct, uint64_t *throttled)
{
    use u;
    char url[64];
    const char *const args[] = {"--post", url, "--workers", POST_WORKERS, NULL};
    int rc = use_open(&u, b, rate, "post");
    if (rc == 0)
        rc = brokers_start(&u, 1) || sink_start(&u, url, sizeof url) || backlog(&u, 0, backlog_msgs(&u, 1, 0)) ||
                     consumer_start(&u, 0, args) || measure(&u, pct, throttled)
                 ? -1 : 0;
    return use_close(&u, rc);
}

/* one_bare runs the bare paced poster (bench_bare.c) into a fresh sink of
 * the same rate, for the same warm-up and window as the --post row. */
static int one_bare(bench *b, unsigned rate, double *pct, uint64_t *throttled)
{
    use u;
    char url[64];
    int rc = use_open(&u, b, rate, "bare");
    if (rc == 0)
        rc = sink_start(&u, url, sizeof url) ||
                     bench_bare_run(url, rate, WARM_MS, (int64_t)b->seconds * 1000, pct, throttled)
                 ? -1 : 0;
    return use_close(&u, rc);
}

/* leased waits until the brokers' leases hold SHARED_SLICES_PCT of the
 * slices (at most SHARED_WAIT_S: then the figure says what it got). */
static int leased(use *u)
{
    uint64_t acked, throttled, depth, held, slices;
    for (int i = 0; i < SHARED_WAIT_S * 20 && !bench_core_stopping(); i++, nap(50)) {
        if (counts(u, &acked, &throttled, &depth, &held, &slices) != 0)
            return -1;
        if (slices && held * 100 >= slices * SHARED_SLICES_PCT)
            return 0;
    }
    bench_core_progress("sink use at %u/s, shared: the leases held less than %d %% of the slices after %d s",
                        u->rate, SHARED_SLICES_PCT, SHARED_WAIT_S);
    return 0;
}

static int one_shared(bench *b, unsigned rate, double *pct)
{
    use u;
    uint64_t throttled;
    const char *const args[] = {"-c", CLI_CREDIT, NULL};
    int rc = use_open(&u, b, rate, "shared");
    if (rc == 0)
        rc = redis_start(&u) || brokers_start(&u, SHARED_BROKERS) ? -1 : 0;
    for (unsigned i = 0; i < SHARED_BROKERS && rc == 0; i++)
        rc = backlog(&u, i, backlog_msgs(&u, SHARED_BROKERS, SHARED_WAIT_S));
    for (unsigned i = 0; i < SHARED_BROKERS && rc == 0; i++)
        rc = consumer_start(&u, i, args);
    if (rc == 0)
        rc = leased(&u) || measure(&u, pct, &throttled) ? -1 : 0;
    return use_close(&u, rc);
}

/* load1 reads the machine's load average over the last minute. */
static double load1(void)
{
    double l = 0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = 0;
        fclose(f);
    }
    return l;
}

int bench_sinkuse_rows(bench *b)
{
    char row[96];
    for (size_t i = 0; i < sizeof rates / sizeof rates[0] && !bench_core_stopping(); i++) {
        unsigned r = rates[i];
        double bare_cli = 0, cli = 0, post = 0, bare = 0, shared = 0;
        uint64_t refused = 0, bare_refused = 0;
        bench_core_progress("sink used at %u/s, burst 1 (load average %.2f): consume -c 64, --post, the bare "
                            "poster, 3 brokers", r, load1());
        double bare_after = 0;
        if (one_bare_dispatch(b, r, &bare_cli) != 0 || one_cli(b, r, &cli) != 0 ||
            one_bare_dispatch(b, r, &bare_after) != 0 || one_post(b, r, &post, &refused) != 0 ||
            one_bare(b, r, &bare, &bare_refused) != 0 || one_shared(b, r, &shared) != 0)
            return -1;
        if (bench_core_stopping())
            break;
        /* The consume and shared rows' targets are the (97 and 95 %)
         * of what the bare dispatcher kept of the rate in the same run (the
         * mean of its runs before and after the consume row, at most all
         * of it): on a host that keeps its slots, unchanged. */
        bare_cli = (bare_cli + bare_after) / 2;
        double kept = bare_cli < 100 ? bare_cli : 100;
        snprintf(row, sizeof row, "sink used at %u/s, burst 1: `sluice consume -c 64`", r);
        bench_table_add(&b->table, row, cli, 1, "% of rate", BENCH_TABLE_AT_LEAST, BENCH_SINKUSE_CLI_PCT * kept / 100);
        snprintf(row, sizeof row, "  the bare paced dispatcher (ZeroMQ, no broker) at %u/s", r);
        bench_table_add(&b->table, row, bare_cli, 1, "% of rate", BENCH_TABLE_NO_GOAL, 0);
        /* The --post target as the issue sets it (95 %, 0 x 429) where this
         * host let the bare poster through without a 429; where it did not,
         * the host decides the figure, and --post may meet no more 429s
         * than one and a half times the bare poster's, plus one: counts of
         * a few a run, as the host's jitter scatters them (bench_bare.c). */
        int host_clean = bare_refused == 0;
        snprintf(row, sizeof row, "sink used at %u/s, burst 1: --post --workers 8 to sluice-sink", r);
        bench_table_add(&b->table, row, post, 1, "% of rate", host_clean ? BENCH_TABLE_AT_LEAST : BENCH_TABLE_NO_GOAL,
                        BENCH_SINKUSE_POST_PCT);
        snprintf(row, sizeof row, "  429s from sluice-sink -r %u --burst 1 in that row", r);
        bench_table_add(&b->table, row, (double)refused, 0, "429s", BENCH_TABLE_AT_MOST,
                        host_clean ? 0 : (double)(bare_refused + bare_refused / 2 + 1));
        snprintf(row, sizeof row, "  the bare paced poster (no broker) to sluice-sink -r %u", r);
        bench_table_add(&b->table, row, bare, 1, "% of rate", BENCH_TABLE_NO_GOAL, 0);
        snprintf(row, sizeof row, "  429s from sluice-sink -r %u --burst 1 to the bare poster", r);
        bench_table_add(&b->table, row, (double)bare_refused, 0, "429s", BENCH_TABLE_NO_GOAL, 0);
        snprintf(row, sizeof row, "sink used at %u/s, burst 1: 3 brokers sharing it through Redis", r);
        bench_table_add(&b->table, row, shared, 1, "% of rate", BENCH_TABLE_AT_LEAST,
                        BENCH_SINKUSE_SHARED_PCT * kept / 100);
    }
    return 0;
}
