/*
 * bench_raw.h - the raw limits of the machine, measured without Sluice:
 * LMDB durable commits and ZeroMQ round trips. They bound what any broker
 * built on these two libraries can do here.
 */
#ifndef SLUICE_BENCH_RAW_H
#define SLUICE_BENCH_RAW_H

#include <stdint.h>

/* bench_raw_lmdb_commits creates the directory dir (its parent must exist,
 * dir must not), opens a fresh LMDB environment in it and commits
 * transactions of puts_per_txn puts of BENCH_CORE_BODY_BYTES each, durably,
 * for seconds or until a signal. *commits is how many committed and
 * *elapsed_ns how long they took. The environment is closed, its files left
 * for the caller to remove. Returns 0, or -1 on an error (reported). */
int bench_raw_lmdb_commits(const char *dir, unsigned puts_per_txn, int seconds, uint64_t *commits,
                           int64_t *elapsed_ns);

/* bench_raw_zmq_round_trips binds a ROUTER that echoes to endpoint (an
 * unused ipc:// path), connects a DEALER and bounces BENCH_CORE_BODY_BYTES
 * between them, one at a time, for seconds or until a signal. The first
 * trip, which waits for the connection, is not counted. *trips is how many
 * were and *elapsed_ns how long they took. Everything is closed before it
 * returns. Returns 0, or -1 on an error (reported). */
int bench_raw_zmq_round_trips(const char *endpoint, int seconds, uint64_t *trips,
                              int64_t *elapsed_ns);

#endif /* SLUICE_BENCH_RAW_H */
