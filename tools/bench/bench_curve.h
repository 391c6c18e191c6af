/*
 * bench_curve.h - a spawned sluiced with CURVE and auth on, for the rows
 * that measure what encryption costs.
 */
#ifndef SLUICE_BENCH_CURVE_H
#define SLUICE_BENCH_CURVE_H

#include "bench_run.h"
#include "bench_spawn.h"

#define CURVE_PAIRS 5 /* paired turns of the 1 x 100 row, CURVE and without */

/* bench_curve_start makes a key pair for the broker and one for the bench
 * (role admin, so that one key publishes, consumes and reads stats), writes
 * them and the auth file under dir (which must exist), starts the sluiced
 * binary at path with --curve-secret and --auth, and makes every bench
 * client use the keys (bench_client_keys_set). Returns 0, or -1 (reported;
 * nothing left running). */
int bench_curve_start(bench_spawn *s, const char *path, const char *dir);

/* bench_curve_stop stops the broker (bench_spawn_stop) and puts the bench's
 * clients back to plaintext. Returns bench_spawn_stop's result. */
int bench_curve_stop(bench_spawn *s);

/* row_curve_window_pairs, in the CURVE pass (b->curve) of a spawning run:
 * the 1 x 100 enqueue against the CURVE broker and against a plaintext
 * broker of its own started beside it, in CURVE_PAIRS paired turns of a
 * fixed count, which goes first turning about; b->curve_window_pairs_ratio
 * gets the median of the pairs' ratios (row_peer_ratios states it).
 * Returns 0, or -1 (reported). */
int row_curve_window_pairs(bench *b);

#endif /* SLUICE_BENCH_CURVE_H */
