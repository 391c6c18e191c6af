/*
 * bench_rows_sched.c - sluice-bench's rows 6-8 and the metering rows, as
 * sluice-bench.c runs them: end-to-end dispatch over 8 pools, starvation
 * with and without a deadline (bench_sched.c), the pick rule and the fair
 * pick alone (bench_pick.c, no broker), and the metering rows
 * (bench_meter.c). Each names its row, runs the measurement and adds the
 * result to the run's table; the measurements themselves live in the files
 * named.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include "bench_core.h"
#include "bench_guard.h"
#include "bench_meter.h"
#include "bench_pick.h"
#include "bench_run.h"
#include "bench_sched.h"

#define TARGET_PICKS_PER_S       2000000
#define TARGET_FAIR_PICKS_PER_S  1000000 /* the fair pick, 100,000 waiting tenants */

int row_dispatch(bench *b)
{
    if (!bench_guard_free(UINT32_MAX))
        return bench_guard_skip("end-to-end dispatch", "it spreads messages over every level, and some hold the "
                                "broker's own");
    char scenario[96];
    uint64_t acked;
    int64_t elapsed_ns;
    snprintf(scenario, sizeof scenario, "end-to-end dispatch, %d pools", BENCH_SCHED_POOLS);
    bench_core_progress("%s, credit %d, ack each (%" PRIu64 " messages)", scenario,
                        BENCH_SCHED_CREDIT, b->dispatch_msgs);
    if (bench_sched_dispatch(b->endpoint, b->dispatch_msgs, &acked, &elapsed_ns) != 0)
        return -1;
    rate_add(b, scenario, acked, elapsed_ns, "msgs/s", BENCH_TABLE_NO_GOAL, 0);
    return 0;
}

int row_starvation(bench *b)
{
    if (!bench_guard_free(UINT32_MAX))
        return bench_guard_skip("starvation", "it needs the first and the last level, and some levels hold the "
                                "broker's own messages");
    char scenario[96];
    double plain_ms, deadline_ms;
    if (bench_sched_starvation(b->endpoint, b->starve_msgs, &plain_ms, &deadline_ms) != 0)
        return -1;
    bench_table_add(&b->table, "starvation: lowest level's max wait, no deadline", plain_ms, 1,
                    "ms", BENCH_TABLE_NO_GOAL, 0);
    snprintf(scenario, sizeof scenario, "starvation: lowest level's max wait, with a %g s deadline",
             BENCH_SCHED_DEADLINE_MS / 1000.0);
    bench_table_add(&b->table, scenario, deadline_ms, 1, "ms", BENCH_TABLE_NO_GOAL, 0);
    return 0;
}

int row_pick(bench *b)
{
    char scenario[96];
    uint64_t picks;
    int64_t elapsed_ns;
    snprintf(scenario, sizeof scenario, "pick rule, %d levels, 1,000,000 waiting",
             BENCH_PICK_LEVELS);
    bench_core_progress("%s (%d s)", scenario, b->seconds);
    bench_pick_measure(b->seconds, &picks, &elapsed_ns);
    rate_add(b, scenario, picks, elapsed_ns, "picks/s", BENCH_TABLE_AT_LEAST, TARGET_PICKS_PER_S);
    return 0;
}

int row_pick_fair(bench *b)
{
    char scenario[96];
    uint64_t picks;
    int64_t elapsed_ns;
    snprintf(scenario, sizeof scenario, "fair pick, one level, %" PRIu64 " waiting tags",
             BENCH_PICK_TENANTS);
    bench_core_progress("%s (%d s)", scenario, b->seconds);
    bench_pick_drr_measure(b->seconds, &picks, &elapsed_ns);
    rate_add(b, scenario, picks, elapsed_ns, "picks/s", BENCH_TABLE_AT_LEAST, TARGET_FAIR_PICKS_PER_S);
    return 0;
}

int row_meter(bench *b) /* metering: five rows after starvation (bench_meter.c) */
{
    if (bench_guard_on())
        return bench_guard_skip("metering", "it sets the sink's and the levels' limits, which a broker stores; "
                                "it runs on a broker of the bench's own (--spawn)");
    return bench_meter_run(b->endpoint, &b->table);
}

int row_meter_beside(bench *b) /* the sink's share with a commit always flushing (bench_meter.c) */
{
    return bench_meter_beside_run(b->endpoint, &b->table, b->pass);
}

