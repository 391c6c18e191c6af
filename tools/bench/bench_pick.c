/*
 * bench_pick.c - the pick rule row: disp_pick, the broker's own pick rule
 * (broker/sched/disp.c, linked in), timed on its own.
 *
 * The rule is pure: it reads one snapshot per level (ready count, when the
 * head was enqueued, deadline, aging step, paused) and the time, and
 * returns a level. So this row needs no broker, no clock inside the rule
 * and no messages: it builds BENCH_PICK_LEVELS snapshots whose ready counts
 * sum to BENCH_PICK_BACKLOG and calls disp_pick in a timed loop. The pick
 * never looks at the backlog, only at each level's snapshot (ready > 0), so
 * the count only sets the snapshot: a pick costs O(levels) whatever the
 * depth, and this row is the evidence.
 *
 * The snapshot is shaped so that every branch of the rule keeps running
 * (shapes[] below): strict priority on the top levels, deadlines on a few
 * levels, three of them already overdue at the start, and aging on the low
 * levels, with heads old enough that aging lifts them over higher levels.
 * The overdue share is the broker's default, 50 %.
 *
 * Time is a parameter of the rule, so the loop runs a fake clock: it starts
 * at PICK_START_NS (every head in the past) and advances PICK_STEP_NS per
 * pick, as if the broker delivered one message a microsecond. After each
 * pick the loop does what the broker's queue would: the picked level's
 * ready count drops by one and its head moves on to the next message,
 * enqueued gap_us after it (never later than now). A level that empties is
 * refilled to its first count, so the backlog stays near BENCH_PICK_BACKLOG
 * and every level stays eligible.
 *
 * Bounds and cost: the real clock and the stop flag are read once every
 * PICK_BATCH picks, so the loop measures disp_pick and its bookkeeping, not
 * clock_gettime; it stops at the deadline, a signal or BENCH_CORE_MAX_OPS
 * picks.
 *
 * The fair pick row (bench_pick_drr_measure) times the pick inside one
 * level: broker/sched/drr.c, linked in, over BENCH_PICK_TENANTS waiting tenants
 * with weights 1 to 4. Each step is what the dispatcher would do: drr_pick,
 * then, as if the tenant's own limit held it one time in
 * PICK_DRR_BLOCK_EVERY, drr_block for PICK_DRR_BLOCK_NS of the fake clock
 * (and the pick again), else drr_charge of one unit. So the row also pays
 * for the heap of blocked tenants coming back. Same bounds as above.
 */
#include "bench_pick.h"

#include <stdio.h>
#include <stdlib.h>

#include "bench_core.h"
#include "disp.h"
#include "drr.h"

#define PICK_STEP_NS       UINT64_C(1000)             /* the fake clock: 1 µs per pick */
#define PICK_START_NS      (UINT64_C(60) * 1000000000) /* older than every head below */
#define PICK_BATCH         1024                       /* picks between two real-clock reads */
#define PICK_OVERDUE_SHARE 50                         /* sluiced's default --overdue-share */
#define PICK_ALL_LEVELS    ((UINT32_C(1) << BENCH_PICK_LEVELS) - 1)
#define NS_PER_US          UINT64_C(1000)

/* One level of the snapshot: deadline and aging step (0: none), how long its
 * head has waited when the loop starts, and how much later than the head
 * the next message was enqueued. */
typedef struct pick_shape {
    uint64_t deadline_us, aging_us, waited_us, gap_us;
} pick_shape;

static const pick_shape shapes[BENCH_PICK_LEVELS] = {
    {0, 0, 100, 1},                 /* 0-1: the top, strict priority */
    {0, 0, 300, 2},
    {2000, 0, 5000, 5},             /* 2: 2 ms deadline, overdue at the start */
    {0, 0, 800, 5},
    {10000, 0, 4000, 10},           /* 4: 10 ms deadline, overdue after 6 ms */
    {0, 0, 1000, 10},
    {0, 0, 2000, 20},
    {50000, 0, 80000, 50},          /* 7: 50 ms deadline, overdue at the start */
    {0, 100000, 50000, 50},         /* 8-9: aging, not yet past level 0 */
    {0, 50000, 200000, 50},
    {0, 0, 3000, 50},
    {0, 20000, 300000, 100},        /* 11: aging, lifted past level 0 */
    {0, 0, 5000, 100},
    {200000, 0, 1000000, 100},      /* 13: 200 ms deadline, 1 s old */
    {0, 10000, 2000000, 200},       /* 14-15: aging, long waits */
    {0, 1000000, 30000000, 500},
};

_Static_assert(BENCH_PICK_BACKLOG % BENCH_PICK_LEVELS == 0, "levels must share the backlog evenly");
#define PICK_READY_PER_LEVEL (BENCH_PICK_BACKLOG / BENCH_PICK_LEVELS)

/* snapshot_fill sets every level to its shape at time now_ns. */
static void snapshot_fill(disp_level *lv, uint64_t now_ns)
{
    for (unsigned i = 0; i < BENCH_PICK_LEVELS; i++)
        lv[i] = (disp_level){.ready = PICK_READY_PER_LEVEL,
                             .head_ns = now_ns - shapes[i].waited_us * NS_PER_US,
                             .deadline_ns = shapes[i].deadline_us * NS_PER_US,
                             .aging_ns = shapes[i].aging_us * NS_PER_US};
}

/* taken is what the queue does after a pick of level i: one message fewer,
 * the next one at the head, and a refill when the level runs dry. */
static void taken(disp_level *lv, unsigned i, uint64_t now_ns)
{
    disp_level *l = &lv[i];
    l->head_ns += shapes[i].gap_us * NS_PER_US;
    if (l->head_ns > now_ns)
        l->head_ns = now_ns;
    if (--l->ready == 0)
        l->ready = PICK_READY_PER_LEVEL;
}

void bench_pick_measure(int seconds, uint64_t *picks, int64_t *elapsed_ns)
{
    disp_level lv[BENCH_PICK_LEVELS];
    disp_state st;
    uint64_t now_ns = PICK_START_NS, n = 0;
    snapshot_fill(lv, now_ns);
    disp_init(&st, PICK_OVERDUE_SHARE);

    int64_t start_ns = bench_core_now_ns(), t_ns = start_ns;
    int64_t deadline_ns = start_ns + seconds * BENCH_CORE_NS_PER_S;
    for (uint64_t round = 0; round < BENCH_CORE_MAX_OPS / PICK_BATCH && t_ns < deadline_ns &&
                             !bench_core_stopping();
         round++) {
        for (unsigned k = 0; k < PICK_BATCH; k++) {
            int i = disp_pick(&st, lv, BENCH_PICK_LEVELS, PICK_ALL_LEVELS, now_ns, NULL);
            if (i < 0) {
                fprintf(stderr, "%s:%d: no level eligible, yet every level has messages\n",
                        __FILE__, __LINE__);
                abort();
            }
            now_ns += PICK_STEP_NS;
            taken(lv, (unsigned)i, now_ns);
        }
        n += PICK_BATCH;
        t_ns = bench_core_now_ns();
    }
    *picks = n;
    *elapsed_ns = t_ns - start_ns;
}

#define PICK_DRR_BLOCK_EVERY 16                 /* one pick in 16 finds its tenant held */
#define PICK_DRR_BLOCK_NS    (UINT64_C(5) * 1000000) /* for 5 ms of the fake clock */

void bench_pick_drr_measure(int seconds, uint64_t *picks, int64_t *elapsed_ns)
{
    drr d;
    uint64_t now_ns = PICK_START_NS, n = 0, key;
    drr_init(&d, 1);
    for (uint64_t i = 0; i < BENCH_PICK_TENANTS; i++)
        if (drr_active(&d, i, (uint32_t)(1 + i % 4)) != 0) {
            fprintf(stderr, "%s:%d: out of memory\n", __FILE__, __LINE__);
            abort();
        }
    int64_t start_ns = bench_core_now_ns(), t_ns = start_ns;
    int64_t deadline_ns = start_ns + seconds * BENCH_CORE_NS_PER_S;
    for (uint64_t round = 0; round < BENCH_CORE_MAX_OPS / PICK_BATCH && t_ns < deadline_ns &&
                             !bench_core_stopping();
         round++) {
        for (unsigned k = 0; k < PICK_BATCH; k++) {
            if (drr_pick(&d, now_ns, &key) != 0) {
                fprintf(stderr, "%s:%d: no tenant ready, yet most are\n", __FILE__, __LINE__);
                abort();
            }
            if ((n + k) % PICK_DRR_BLOCK_EVERY == 0)
                (void)drr_block(&d, key, now_ns + PICK_DRR_BLOCK_NS);
            else
                drr_charge(&d, key, 1);
            now_ns += PICK_STEP_NS;
        }
        n += PICK_BATCH;
        t_ns = bench_core_now_ns();
    }
    drr_fini(&d);
    *picks = n;
    *elapsed_ns = t_ns - start_ns;
}
