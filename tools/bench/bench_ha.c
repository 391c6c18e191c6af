/*
 * bench_ha.c - what a synchronous standby costs, and how long a failover
 * takes.
 *
 * Rows:
 *   - confirmed enqueue 1 x 1 and 1 x 100 on a lone broker, then on the
 *     primary of a group whose standby is in sync, in turns (the best of
 *     TURNS each); the 1 x 100 ratio's target is 0.5, the 1 x 1 row's is
 *     0.8 x 1 / (one flush + two round trips), with the ZeroMQ round trip
 *     of this run (bench_limits.c) and, for the flush, both nodes' at once
 *     on this one disk, measured right before the row in each turn, the
 *     best turn's ratio counting (the disk's flush time moves by a factor
 *     of three within minutes here);
 *   - failover: kill -9 of an idle primary whose standby is in sync, to
 *     the first publish the new primary confirms (a client retrying every
 *     10 ms), FAILOVERS times, the roles swapping each time (the killed node
 *     is started again and waited for in sync); p50 and max, against
 *     TTL + 1 s;
 *   - switchover: `ha.switchover` asked of the primary, to the first publish
 *     the other node confirms, SWITCHOVERS times (each waits for the old
 *     primary back in sync); max, against 1 s.
 *
 * The group runs at --ha-ttl-ms HA_TTL_MS, on ipc:// sockets, with Redis on
 * a Unix socket, all in the run's directory. Whether the standby is in sync
 * is read from Redis with redis-cli (the bench links no Redis client).
 */
#include "bench_ha.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bench_client.h"
#include "bench_core.h"
#include "bench_disk.h"
#include "bench_spawn.h"
#include "bench_table.h"
#include "bench_workers.h"
#include "proc.h"
#include "sluice.h"
#include "sluice_admin.h"

#define HA_TTL_MS 1000
#define TURNS 3
#define FAILOVERS 5
#define SWITCHOVERS 5
#define WINDOW 100
#define TARGET_WINDOW_KEEP 0.5
#define TARGET_ONE_SHARE 0.8

typedef struct rig {
    bench *b;
    char dir[128], redis_sock[192], url[208], repl[2][200], node_dir[2][160];
    proc redis;
    bench_spawn node[2];
} rig;

static void nap(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int redis_start(rig *r)
{
    char log[224];
    snprintf(r->redis_sock, sizeof r->redis_sock, "%s/redis.sock", r->dir);
    snprintf(r->url, sizeof r->url, "unix://%s", r->redis_sock);
    snprintf(log, sizeof log, "%s/redis.log", r->dir);
    const char *const argv[] = {"redis-server", "--port", "0", "--unixsocket", r->redis_sock, "--save", "",
                                "--appendonly", "no", NULL};
    const proc_spec spec = {.argv = argv, .out_path = log, .truncate = true, .null_stdin = true,
                            .own_group = true, .die_with_parent = true};
    if (proc_start(&r->redis, "redis-server", &spec) != 0)
        return bench_core_fail("cannot start redis-server (Debian: apt-get install redis-server)");
    struct stat st;
    for (int i = 0; i < 500 && !bench_core_stopping(); i++, nap(20))
        if (stat(r->redis_sock, &st) == 0)
            return 0;
    return bench_core_fail("redis-server did not open %s (see %s)", r->redis_sock, log);
}

/* sync_is reads the group's sync field (redis-cli) and compares it with node. */
static int sync_is(const rig *r, const char *node)
{
    char cmd[400], out[64] = "";
    snprintf(cmd, sizeof cmd, "redis-cli -s %s HGET 'sluice:ha:{bench}' sync 2>/dev/null", r->redis_sock);
    FILE *f = popen(cmd, "r");
    if (!f)
        return 0;
    if (!fgets(out, sizeof out, f))
        out[0] = '\0';
    pclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    return !strcmp(out, node);
}

static int wait_sync(const rig *r, const char *node)
{
    for (int i = 0; i < 1500 && !bench_core_stopping(); i++, nap(20)) /* bounded: 30 s */
        if (sync_is(r, node))
            return 0;
    return bench_core_fail("standby %s not in sync within 30 s (see %s)", node, r->dir);
}

static int node_start(rig *r, int i)
{
    static const char *names[] = {"n1", "n2"};
    const char *const extra[] = {"--ha", r->url, "--ha-group", "bench", "--ha-node", names[i], "--repl-listen",
                                 r->repl[i], "--ha-ttl-ms", "1000", NULL};
    return bench_spawn_start_with(&r->node[i], r->b->sluiced, r->node_dir[i], extra, NULL, 0);
}

/* first_confirm publishes to endpoint every 10 ms until one is confirmed;
 * returns when (ns), or -1 after 30 s. */
static int64_t first_confirm(const char *endpoint)
{
    for (int i = 0; i < 3000 && !bench_core_stopping(); i++) {
        sl_options o = {.timeout_ms = 200};
        sl_client *c = NULL;
        if (sl_connect(endpoint, &o, &c) == SL_OK) {
            sl_put m = {.body = "f", .body_len = 1, .level = SL_LEVEL_DEFAULT};
            uint64_t id;
            int rc = sl_send(c, &m, &id);
            sl_close(&c);
            if (rc == SL_OK)
                return bench_core_now_ns();
        }
        nap(10);
    }
    return -1;
}

static double sorted_at(double *v, int n, double q)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return n ? v[(int)(q * (n - 1) + 0.5)] : 0;
}

int bench_ha_rows(bench *b)
{
    rig r = {.b = b};
    snprintf(r.dir, sizeof r.dir, "%s/ha", b->dir);
    if (mkdir(r.dir, 0700) != 0 && errno != EEXIST)
        return bench_core_fail("cannot create %s", r.dir);
    char lone_dir[160];
    snprintf(lone_dir, sizeof lone_dir, "%s/lone", r.dir);
    for (int i = 0; i < 2; i++) {
        snprintf(r.node_dir[i], sizeof r.node_dir[i], "%s/n%d", r.dir, i + 1);
        snprintf(r.repl[i], sizeof r.repl[i], "ipc://%s/n%d/repl.sock", r.dir, i + 1);
        if (mkdir(r.node_dir[i], 0700) != 0 && errno != EEXIST)
            return bench_core_fail("cannot create %s", r.node_dir[i]);
    }
    if (mkdir(lone_dir, 0700) != 0 && errno != EEXIST)
        return bench_core_fail("cannot create %s", lone_dir);
    bench_spawn lone;
    memset(&lone, 0, sizeof lone);
    int rc = redis_start(&r);
    if (rc == 0)
        rc = bench_spawn_start(&lone, b->sluiced, lone_dir);
    if (rc == 0 && (rc = node_start(&r, 0)) == 0 && (rc = node_start(&r, 1)) == 0)
        rc = wait_sync(&r, "n2");
    double one[2] = {0, 0}, win[2] = {0, 0};
    bench_core_progress("confirmed enqueue 1 x 1 and 1 x %d, alone and with a standby in sync, in turns (%d x %d s "
                        "each)", WINDOW, TURNS, b->seconds);
    /* the 1 x 1 row with a standby is set against the disk's flush measured
     * right before it in the same turn, and the best turn counts, as for
     * the rates: the disk's flush time moves by a factor of three within
     * minutes here, so a flush measured elsewhere in the run says little.
     * Both nodes flush this one disk, each record once each, at the same
     * time: the flush is two at once (bench_disk_flush_pairs), which on
     * nodes of their own is one */
    double ratio_best = 0, flush_at_best = 0;
    for (int t = 0; t < TURNS && rc == 0 && !bench_core_stopping(); t++)
        for (int k = 0; k < 2 && rc == 0; k++) {
            const char *ep = k ? r.node[0].endpoint : lone.endpoint;
            double v = 0, flush = 0;
            uint64_t flushes = 0;
            int64_t elapsed_ns = 0;
            if (k && (rc = bench_disk_flush_pairs(r.dir, b->seconds, &flushes, &elapsed_ns)) != 0)
                break;
            flush = bench_core_per_s(flushes, elapsed_ns);
            if ((rc = bench_client_window_rate(ep, b->seconds, 1, &v)) == 0 && v > one[k])
                one[k] = v;
            if (k && flush > 0 && b->trips_per_s > 0 && v * (1.0 / flush + 2.0 / b->trips_per_s) > ratio_best) {
                ratio_best = v * (1.0 / flush + 2.0 / b->trips_per_s);
                flush_at_best = flush;
            }
            if (rc == 0 && (rc = bench_client_window_rate(ep, b->seconds, WINDOW, &v)) == 0 && v > win[k])
                win[k] = v;
        }
    double fo[FAILOVERS];
    int nfo = 0, primary = 0;
    bench_core_progress("failover: kill -9 of the primary to the first confirmation by the new one (x%d, TTL %d ms)",
                        FAILOVERS, HA_TTL_MS);
    for (int t = 0; t < FAILOVERS && rc == 0 && !bench_core_stopping(); t++) {
        int standby = 1 - primary;
        nap(200); /* idle: the standby has every record */
        int64_t t0 = bench_core_now_ns();
        kill(r.node[primary].p.pid, SIGKILL);
        proc_wait(&r.node[primary].p, 5000);
        r.node[primary].p.pid = 0;
        int64_t t1 = first_confirm(r.node[standby].endpoint);
        if (t1 < 0) {
            rc = bench_core_fail("no confirmation by the new primary within 30 s (see %s)", r.dir);
            break;
        }
        fo[nfo++] = (double)(t1 - t0) / 1e6;
        if ((rc = node_start(&r, primary)) == 0) /* back, as the standby */
            rc = wait_sync(&r, primary ? "n2" : "n1");
        primary = standby;
    }
    double so[SWITCHOVERS];
    int nso = 0;
    bench_core_progress("switchover: ha.switchover to the first confirmation by the other node (x%d)", SWITCHOVERS);
    for (int t = 0; t < SWITCHOVERS && rc == 0 && !bench_core_stopping(); t++) {
        int standby = 1 - primary;
        sl_client *c = NULL;
        if ((rc = bench_client_open(r.node[primary].endpoint, &c)) != 0)
            break;
        int64_t t0 = bench_core_now_ns();
        int src = sl_ha_switchover(c);
        sl_close(&c);
        if (src != SL_OK) {
            rc = bench_core_fail("ha.switchover refused: %s", sl_errname(src));
            break;
        }
        int64_t t1 = first_confirm(r.node[standby].endpoint);
        if (t1 < 0) {
            rc = bench_core_fail("no confirmation by the new primary within 30 s of a switchover (see %s)", r.dir);
            break;
        }
        so[nso++] = (double)(t1 - t0) / 1e6;
        rc = wait_sync(&r, primary ? "n2" : "n1"); /* the old primary, back as the standby */
        primary = standby;
    }
    for (int i = 0; i < 2; i++)
        if (bench_spawn_stop(&r.node[i]) != 0)
            rc = -1;
    if (bench_spawn_stop(&lone) != 0)
        rc = -1;
    if (r.redis.pid)
        proc_stop(&r.redis, 5000);
    if (rc != 0 || bench_core_stopping())
        return rc;
    char row[96];
    bench_table_add(&b->table, "confirmed enqueue 1 x 1, lone broker (beside the HA rows)", one[0], 0, "msgs/s",
                    BENCH_TABLE_NO_GOAL, 0);
    bench_table_add(&b->table, "confirmed enqueue 1 x 1, with a synchronous standby", one[1], 0, "msgs/s",
                    BENCH_TABLE_NO_GOAL, 0);
    if (ratio_best > 0) {
        bench_table_add(&b->table, "raw: two flushes at once (both nodes'), before that row's best turn",
                        flush_at_best, 0, "pairs/s", BENCH_TABLE_NO_GOAL, 0);
        bench_table_add(&b->table, "1 x 1 with a standby / (1 / (two flushes at once + two round trips))",
                        ratio_best, 2, "x", BENCH_TABLE_AT_LEAST, TARGET_ONE_SHARE);
    }
    snprintf(row, sizeof row, "confirmed enqueue 1 x %d, lone broker (beside the HA rows)", WINDOW);
    bench_table_add(&b->table, row, win[0], 0, "msgs/s", BENCH_TABLE_NO_GOAL, 0);
    snprintf(row, sizeof row, "confirmed enqueue 1 x %d, with a synchronous standby", WINDOW);
    bench_table_add(&b->table, row, win[1], 0, "msgs/s", BENCH_TABLE_NO_GOAL, 0);
    snprintf(row, sizeof row, "1 x %d with a standby / lone", WINDOW);
    bench_table_add(&b->table, row, win[0] > 0 ? win[1] / win[0] : 0, 2, "x", BENCH_TABLE_AT_LEAST,
                    TARGET_WINDOW_KEEP);
    double p50 = sorted_at(fo, nfo, 0.5), max = sorted_at(fo, nfo, 1.0);
    snprintf(row, sizeof row, "failover: kill -9 to first confirmation, p50 of %d (TTL %d ms)", nfo, HA_TTL_MS);
    bench_table_add(&b->table, row, p50, 0, "ms", BENCH_TABLE_AT_MOST, HA_TTL_MS + 1000);
    snprintf(row, sizeof row, "failover: kill -9 to first confirmation, max of %d", nfo);
    bench_table_add(&b->table, row, max, 0, "ms", BENCH_TABLE_AT_MOST, HA_TTL_MS + 1000);
    snprintf(row, sizeof row, "switchover: ha.switchover to first confirmation, max of %d", nso);
    bench_table_add(&b->table, row, sorted_at(so, nso, 1.0), 0, "ms", BENCH_TABLE_AT_MOST, 1000);
    return 0;
}
