/*
 * bench_pairs.h - the sequential producer against the peer in alternating
 * turns: the row that carries the 1 x 1 target, the same on a broker
 * with --wal-buffered, the control (the peer against a second peer), and
 * the 4 x 1 against the peer's.
 */
#ifndef SLUICE_BENCH_PAIRS_H
#define SLUICE_BENCH_PAIRS_H

#include "bench_run.h"

#define PEER_PAIRS 9 /* pairs of 1 s turns; odd, so that the median is one pair's ratio */

/* The 1 x 1 target as these turns can decide it: Sluice and the peer each
 * pay one durable write and two thread wake-ups per message, and two
 * peers of one build read 0.92-1.12 of each other at the median of these
 * turns (the control row shows the run's own), so a target of 1.0 would
 * be decided by the disk's noise; 0.95 is "at the peer's rate" to the
 * resolution one run has. */
#define TARGET_ONE_PAIRS_VS_PEER 0.95

/* row_peer_one_pairs: 1 x 1 over the spawned broker's stream endpoint and
 * the peer's 1 x 1 in PEER_PAIRS pairs of alternating 1 s turns, which
 * side goes first turning about, for the median of the pairs' ratios;
 * with --spawn, in the same pairs, a --wal-buffered broker's and a second
 * peer's turns; then both sides' PRODUCERS x 1. A no-op without a peer or
 * a stream endpoint. Returns 0, or -1 (reported). */
int row_peer_one_pairs(bench *b);

/* bench_pairs_ratio_rows adds the rows of what row_peer_one_pairs
 * measured (none when it did not run). */
void bench_pairs_ratio_rows(bench *b);

#endif /* SLUICE_BENCH_PAIRS_H */
