/*
 * bench_pick.h - the pick rule alone: how many picks a second disp_pick
 * makes over a snapshot of many levels and a deep backlog, with no broker.
 */
#ifndef SLUICE_BENCH_PICK_H
#define SLUICE_BENCH_PICK_H

#include <stdint.h>

#define BENCH_PICK_LEVELS  16                /* every level a broker may have */
#define BENCH_PICK_BACKLOG UINT64_C(1000000) /* ready messages in the snapshot */
#define BENCH_PICK_TENANTS UINT64_C(100000)  /* waiting tenants (tags) in one fair level */

/* bench_pick_measure calls disp_pick in a loop for seconds, a signal or
 * BENCH_CORE_MAX_OPS picks, over BENCH_PICK_LEVELS levels that hold
 * BENCH_PICK_BACKLOG ready messages between them, some with deadlines and
 * overdue heads, some with aging. *picks is how many picks were made and
 * *elapsed_ns how long they took. A pick that finds no eligible level is
 * a broken invariant: it aborts. */
void bench_pick_measure(int seconds, uint64_t *picks, int64_t *elapsed_ns);

/* bench_pick_drr_measure times the fair pick inside one level (drr_pick,
 * then drr_charge, or drr_block one time in 16) over BENCH_PICK_TENANTS
 * waiting tenants, for seconds, a signal or BENCH_CORE_MAX_OPS picks. */
void bench_pick_drr_measure(int seconds, uint64_t *picks, int64_t *elapsed_ns);

#endif /* SLUICE_BENCH_PICK_H */
