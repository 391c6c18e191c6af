/*
 * bench_pairs.c - the sequential producer against the peer, in pairs of
 * alternating turns.
 *
 * Why pairs: Sluice over the stream endpoint and beanstalkd -f 0 both pay
 * one durable write and two thread wake-ups per message, so their 1 x 1
 * rows sit at the same rate, and the disk's flush rate drifts by a tenth
 * within seconds: one Sluice row and one peer row of 3 s each, back to
 * back, put their ratio anywhere within a tenth of 1. Turns of 1 s,
 * alternating, see the same phase, and the median of their ratios holds
 * still. The order turns about from one pair to the next, so that a drift
 * within a pair favours neither side: a fixed order (Sluice first) read
 * about 0.04 higher at the median of runs than this one does.
 *
 * Each pair holds up to five turns: the raw append + fdatasync
 * (bench_disk.c: the disk's single-flush rate, which the 1 x 1 row has a
 * target against too), Sluice, the peer, a broker of its own started with
 * --wal-buffered (its log records written through the page cache and
 * fdatasync instead of O_DIRECT | O_DSYNC: what the default's direct write
 * buys on this disk) and a second beanstalkd -f 0 in a directory of its
 * own, in that order, then the other way round. The second peer against
 * the first is the control: what two systems of the same speed read in
 * these turns, which is the resolution the 1 x 1 target is decided to
 * (bench_pairs.h). The --wal-buffered broker and the second peer need
 * --spawn. Then PEER_PAIRS pairs more of the peer's 4 x 1 and Sluice's,
 * for the same reason: both sides wait on the disk's flushes (the peer one
 * per put, Sluice one per record gathering the four), and a drift of the
 * disk between two 3 s rows has moved their ratio by a fifth. They come
 * after the 1 x 1 pairs, not among them, so that the checkpoint that
 * follows a 4 x 1 turn of Sluice's lands on neither side of a 1 x 1 pair.
 *
 * Costs: 7 x PEER_PAIRS seconds, two more processes while the row runs.
 */
#include "bench_pairs.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "bench_args.h"
#include "bench_core.h"
#include "bench_disk.h"
#include "bench_peer.h"
#include "bench_spawn.h"
#include "bench_workers.h"

/* buffered_start spawns the --wal-buffered broker in the run's directory: 0, or
 * -1 when it could not start (reported; the row is left out). */
static int buffered_start(bench *b, bench_spawn *s)
{
    char dir[80];
    snprintf(dir, sizeof dir, "%s/buffered", b->dir);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return bench_core_fail("cannot create %s", dir);
    return bench_spawn_start_flag(s, b->sluiced, dir, "--wal-buffered");
}

/* sluice_turn runs producers x 1 for a second over endpoint: msgs/s in
 * all, or 0; nothing without an endpoint. */
static int sluice_turn(const char *endpoint, size_t producers, double *per_s)
{
    if (!endpoint)
        return 0;
    bench_worker w[PRODUCERS] = {{0}};
    uint64_t msgs = 0;
    int64_t ns = 0;
    int rc = bench_workers_run(endpoint, 1, w, producers, 0, bench_workers_produce, &msgs, &ns);
    *per_s = rc == 0 ? bench_core_per_s(msgs, ns) : 0;
    return rc;
}

/* flush_turn runs the raw append + fdatasync for a second: flushes/s. */
static int flush_turn(bench *b, double *per_s)
{
    uint64_t flushes = 0;
    int64_t ns = 0;
    int rc = bench_disk_flushes(b->dir, 1, &flushes, &ns);
    *per_s = rc == 0 ? bench_core_per_s(flushes, ns) : 0;
    return rc;
}

/* The turns of one pair, in their order when the pair goes forwards. */
enum { TURN_FLUSH, TURN_SLUICE, TURN_PEER, TURN_BUFFERED, TURN_TWIN, TURN_PEER_MANY, TURN_SLUICE_MANY, TURNS };

/* The ratios the pairs give, in the order of their rows: which turn over
 * which, the bench's field that gets the median, the row's label (", median
 * of N 1 s pairs" follows) and its goal. */
typedef struct pair_ratio {
    int num, den;
    size_t field; /* offsetof(bench, ...) */
    const char *label;
    bench_table_goal goal;
    double target;
} pair_ratio;

static const pair_ratio ratios[] = {
    {TURN_SLUICE, TURN_PEER, offsetof(bench, one_pairs_ratio), "1 x 1 enqueue, stream / beanstalkd 1 x 1",
     BENCH_TABLE_AT_LEAST, TARGET_ONE_PAIRS_VS_PEER},
    {TURN_BUFFERED, TURN_PEER, offsetof(bench, one_buffered_pairs_ratio),
     "1 x 1 enqueue, stream, --wal-buffered / beanstalkd 1 x 1", BENCH_TABLE_NO_GOAL, 0},
    {TURN_SLUICE, TURN_FLUSH, offsetof(bench, one_flush_pairs_ratio),
     "1 x 1 enqueue, stream / raw append + fdatasync rate", BENCH_TABLE_AT_LEAST, TARGET_ONE_VS_DISK},
    {TURN_TWIN, TURN_PEER, offsetof(bench, peer_twin_pairs_ratio), "control: a second beanstalkd / beanstalkd 1 x 1",
     BENCH_TABLE_NO_GOAL, 0},
    {TURN_SLUICE_MANY, TURN_PEER_MANY, offsetof(bench, many_pairs_ratio), "4 x 1 enqueue, stream / beanstalkd 4 x 1",
     BENCH_TABLE_AT_LEAST, TARGET_MANY_VS_PEER},
};
enum { RATIOS = sizeof ratios / sizeof ratios[0] };

static double *ratio_field(bench *b, const pair_ratio *p)
{
    return (double *)((char *)b + p->field);
}

int row_peer_one_pairs(bench *b)
{
    if (!b->peer.port || b->slow || b->curve || !b->broker.stream_endpoint[0])
        return 0;
    double r[RATIOS][PEER_PAIRS];
    int n[RATIOS] = {0}, rc = 0, seconds = b->seconds;
    bench_spawn buffered;
    bench_peer_bs twin;
    memset(&buffered, 0, sizeof buffered);
    memset(&twin, 0, sizeof twin);
    int with_buffered = b->sluiced && buffered_start(b, &buffered) == 0;
    int with_twin = b->sluiced && bench_peer_spawn(b, "peer-twin", &twin) == 0;
    bench_core_progress("1 x 1 over the stream and beanstalkd's%s%s, then %d x 1 over both, %d pairs of "
                        "alternating 1 s turns",
                        with_buffered ? ", over a --wal-buffered broker's stream" : "",
                        with_twin ? ", and a second beanstalkd's" : "", PRODUCERS, PEER_PAIRS);
    b->seconds = 1;
    /* two sets of pairs: the 1 x 1 turns, then the 4 x 1 ones (apart, so that
     * the checkpoint after a 4 x 1 turn falls on neither side of a 1 x 1 pair) */
    static const int sets[][2] = {{TURN_FLUSH, TURN_PEER_MANY}, {TURN_PEER_MANY, TURNS}};
    for (size_t set = 0; set < sizeof sets / sizeof sets[0]; set++) {
        int lo = sets[set][0], hi = sets[set][1];
        for (int i = 0; i < PEER_PAIRS && rc == 0 && !bench_core_stopping(); i++) {
            double v[TURNS] = {0};
            for (int k = 0; k < hi - lo && rc == 0; k++) {
                int turn = i % 2 ? hi - 1 - k : lo + k;
                if (turn == TURN_FLUSH)
                    rc = flush_turn(b, &v[turn]);
                else if (turn == TURN_SLUICE)
                    rc = sluice_turn(b->broker.stream_endpoint, 1, &v[turn]);
                else if (turn == TURN_PEER)
                    rc = bench_peer_turn(b, b->peer.port, 1, &v[turn]);
                else if (turn == TURN_BUFFERED)
                    rc = sluice_turn(with_buffered ? buffered.stream_endpoint : NULL, 1, &v[turn]);
                else if (turn == TURN_TWIN && with_twin)
                    rc = bench_peer_turn(b, twin.port, 1, &v[turn]);
                else if (turn == TURN_PEER_MANY)
                    rc = bench_peer_turn(b, b->peer.port, PRODUCERS, &v[turn]);
                else if (turn == TURN_SLUICE_MANY)
                    rc = sluice_turn(b->broker.stream_endpoint, PRODUCERS, &v[turn]);
            }
            for (int j = 0; j < RATIOS && rc == 0; j++)
                if (v[ratios[j].num] > 0 && v[ratios[j].den] > 0)
                    r[j][n[j]++] = v[ratios[j].num] / v[ratios[j].den];
        }
    }
    b->seconds = seconds;
    if (with_buffered && bench_spawn_stop(&buffered) != 0)
        rc = -1;
    if (with_twin && bench_peer_bs_stop(&twin) != 0)
        rc = -1;
    if (rc != 0)
        return -1;
    for (int j = 0; j < RATIOS; j++)
        *ratio_field(b, &ratios[j]) = n[j] == PEER_PAIRS ? bench_core_median(r[j], n[j]) : 0;
    return 0;
}

void bench_pairs_ratio_rows(bench *b)
{
    for (int j = 0; j < RATIOS; j++) {
        char label[128];
        double v = *ratio_field(b, &ratios[j]);
        snprintf(label, sizeof label, "%s, median of %d 1 s pairs", ratios[j].label, PEER_PAIRS);
        if (v > 0)
            bench_table_add(&b->table, label, v, 2, "x", ratios[j].goal, ratios[j].target);
    }
}
