/*
 * bench_peer_bs.h - the peer of the bench: a beanstalkd process with every
 * put and delete fsynced (-f 0), and a minimal client of its text protocol
 * (put, reserve-with-timeout, delete, use, watch, stats-tube), enough to
 * measure the rows Sluice is compared with.
 */
#ifndef SLUICE_BENCH_PEER_BS_H
#define SLUICE_BENCH_PEER_BS_H

#include <stddef.h>
#include <stdint.h>

#include "proc.h"

#define BENCH_PEER_BS_BUF 16384 /* a connection's read buffer */

/* The running peer: its process and the loopback port it listens on. */
typedef struct bench_peer_bs {
    proc p;       /* p.pid 0 when none runs */
    int port;
} bench_peer_bs;

/* One connection. Only one thread reads it; one thread (maybe another)
 * writes it. */
typedef struct bench_peer_conn {
    int fd;
    char buf[BENCH_PEER_BS_BUF];
    size_t off, len; /* unread bytes are buf[off..len) */
} bench_peer_conn;

/* bench_peer_bs_available tells whether a beanstalkd binary is on PATH. */
int bench_peer_bs_available(void);

/* bench_peer_bs_start starts `beanstalkd -f 0 -b DIR/binlog -l 127.0.0.1
 * -p PORT` on a free loopback port, its log in DIR/beanstalkd.log, in its
 * own process group, and waits until it accepts a connection. Returns 0
 * with s set; -1 (reported) with nothing left running. */
int bench_peer_bs_start(bench_peer_bs *s, const char *dir);

/* bench_peer_bs_stop stops it by its PID (SIGTERM, then SIGKILL). Returns
 * 0, or -1 (reported) when it had to be killed or had died. */
int bench_peer_bs_stop(bench_peer_bs *s);

/* bench_peer_conn_open connects to the peer on port, with TCP_NODELAY and
 * every read and write bounded by BENCH_CORE_CLIENT_TIMEOUT_MS. tube, when
 * not NULL, is used for puts and is the only tube watched. Returns 0 or -1
 * (reported; nothing left open). */
int bench_peer_conn_open(bench_peer_conn *c, int port, const char *tube);
void bench_peer_conn_close(bench_peer_conn *c);

/* bench_peer_put_send writes one put of body (priority 1024, no delay, TTR
 * 60 s) without reading its reply; bench_peer_put_recv reads one reply,
 * which must be INSERTED. bench_peer_put does both. 0 or -1 (reported). */
int bench_peer_put_send(bench_peer_conn *c, const void *body, size_t len);
int bench_peer_put_recv(bench_peer_conn *c);
int bench_peer_put(bench_peer_conn *c, const void *body, size_t len);

/* bench_peer_reserve sends reserve-with-timeout timeout_s and reads the
 * reply: 1 with *id and up to cap bytes of the body copied to body (*len
 * its full length), 0 when it timed out, -1 (reported) on an error. */
int bench_peer_reserve(bench_peer_conn *c, int timeout_s, uint64_t *id, void *body, size_t cap,
                       size_t *len);

/* bench_peer_delete deletes job id, which must answer DELETED. 0 or -1. */
int bench_peer_delete(bench_peer_conn *c, uint64_t id);

/* bench_peer_ready reads current-jobs-ready of tube (stats-tube). 0 or -1. */
int bench_peer_ready(bench_peer_conn *c, const char *tube, uint64_t *ready);

#endif /* SLUICE_BENCH_PEER_BS_H */
