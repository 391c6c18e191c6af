/*
 * bench_spawn.h - a sluiced process that sluice-bench starts, waits for and
 * stops: its endpoint and the supervised process (its PID and log).
 */
#ifndef SLUICE_BENCH_SPAWN_H
#define SLUICE_BENCH_SPAWN_H

#include "proc.h"

typedef struct bench_spawn {
    proc p;             /* the running broker (p.pid 0 when none runs); p.log is DIR/sluiced.log */
    char endpoint[96];  /* ipc://DIR/s.sock, once started */
    char stream_endpoint[112]; /* stream+ipc://DIR/st.sock (bench_spawn_start's --stream-listen), or "" */
} bench_spawn;

/* bench_spawn_start runs the sluiced binary at path with its data, socket
 * and log in dir (which must exist), and a stream endpoint beside the
 * ZeroMQ one (--stream-listen ipc://DIR/st.sock), in its own process group, and waits up
 * to 20 s for the READY line on its --ready-fd. s needs no setup and is
 * overwritten. Returns 0 with s->p.pid and s->endpoint set; or -1, reported,
 * with the broker's log shown and no broker left running (s->p.pid is 0). */
int bench_spawn_start(bench_spawn *s, const char *path, const char *dir);

/* bench_spawn_start_flag is bench_spawn_start with one more option for
 * sluiced, flag (a switch such as "--wal-buffered"; NULL: none). */
int bench_spawn_start_flag(bench_spawn *s, const char *path, const char *dir, const char *flag);

/* bench_spawn_start_with is bench_spawn_start with, when not NULL, more
 * options for sluiced (extra, NULL-terminated, at most BENCH_SPAWN_MAX_EXTRA),
 * and, when slowdisk
 * (the path of the slow-disk shim, tools/slowdisk/slowdisk.c) is not NULL,
 * the broker preloading it with SLUICE_SLOW_FLUSH_US=slow_flush_us, so that
 * each of its flushes takes that much longer. */
#define BENCH_SPAWN_MAX_ENV 480
#define BENCH_SPAWN_MAX_EXTRA 10
int bench_spawn_start_with(bench_spawn *s, const char *path, const char *dir, const char *const *extra,
                           const char *slowdisk, unsigned slow_flush_us);

/* bench_spawn_stop sends SIGTERM and waits up to 20 s for the broker to
 * exit, then kills it with SIGKILL. Afterwards s->p.pid is 0; a second call,
 * or one on a zeroed s, does nothing and returns 0. Returns 0 when the
 * broker exited with status 0; -1, reported and with its log shown, when it
 * had to be killed, died of a signal or exited with another status. */
int bench_spawn_stop(bench_spawn *s);

#endif /* SLUICE_BENCH_SPAWN_H */
