/*
 * bench_disk.h - the rows that put the broker's figures next to the disk's:
 * one raw flush, the ideal log, and `sluice consume` draining as a user
 * runs it.
 */
#ifndef SLUICE_BENCH_DISK_H
#define SLUICE_BENCH_DISK_H

#include <stdint.h>

/* bench_disk_flushes appends BENCH_CORE_BODY_BYTES to a file in dir and
 * fdatasyncs it, in a loop, for seconds: one device flush each, the least
 * a durable commit can cost here. Returns 0 with the count and the time
 * taken; -1 (reported) when the file cannot be made or a call fails. */
int bench_disk_flushes(const char *dir, int seconds, uint64_t *flushes, int64_t *elapsed_ns);

/* bench_disk_flush_pairs does what bench_disk_flushes does on two files in
 * dir at once, from two threads that start each round together: a round
 * ends when both flushes have. What one flush costs when the two nodes of
 * a group share this disk. Returns 0 with the rounds and the time taken;
 * -1 (reported). */
int bench_disk_flush_pairs(const char *dir, int seconds, uint64_t *pairs, int64_t *elapsed_ns);

/* bench_disk_ideal_log times the least a publish -> durable can take on
 * this disk at rate_per_s steady arrivals, for seconds: one thread takes
 * every arrival waiting, writes one 4 KiB record into a file in dir written
 * beforehand, and fdatasyncs it. Returns 0 with the p50 and p99 of record
 * end minus arrival; -1 (reported) when the file cannot be made or a call
 * fails. */
int bench_disk_ideal_log(const char *dir, int seconds, unsigned rate_per_s, double *p50_ms, double *p99_ms);

/* bench_disk_consume_cli runs `SLUICE -b endpoint consume -c credit -n msgs`
 * with stdout to /dev/null (one process, as a user would), and returns 0
 * with the time from its start to its exit; -1 (reported, its log in
 * log_path shown) when it fails or takes longer than 300 s. */
int bench_disk_consume_cli(const char *sluice, const char *endpoint, unsigned credit, uint64_t msgs,
                           const char *log_path, int64_t *elapsed_ns);

#endif /* SLUICE_BENCH_DISK_H */
