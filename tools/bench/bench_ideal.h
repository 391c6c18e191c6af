/*
 * bench_ideal.h - the ideal drain (bench_ideal.c): four clients, one
 * round trip out each, against a server that does nothing but answer.
 */
#ifndef SLUICE_BENCH_IDEAL_H
#define SLUICE_BENCH_IDEAL_H

/* bench_ideal_drain runs four client threads, each sending an ack-sized
 * frame over a Unix socket in dir and waiting for a delivery-sized one,
 * against one epoll thread answering them, for seconds. Returns 0 with the
 * round trips a second in all; -1 (reported) when the socket cannot be
 * made or a side fails. */
int bench_ideal_drain(const char *dir, int seconds, double *per_s);

#endif /* SLUICE_BENCH_IDEAL_H */
