/*
 * bench_spawn.c - the broker that `sluice-bench --spawn` runs.
 *
 * It owns one child process, started by the one supervisor (proc.c):
 * sluiced with --data DIR/data, --listen ipc://DIR/s.sock and --ready-fd,
 * its stdout and stderr going to DIR/sluiced.log. The child runs in its own
 * process group, so a Ctrl-C in the terminal reaches only the bench, which
 * then stops the broker in order rather than leaving it to die mid-commit.
 *
 * Lifecycle: bench_spawn_start waits READY_TIMEOUT_MS at most for the READY
 * line (readiness is signalled, never slept for; a signal to the bench cuts
 * the wait short); on any failure the child is killed and reaped before it
 * returns. bench_spawn_stop sends SIGTERM by PID, waits STOP_TIMEOUT_MS,
 * then sends SIGKILL. bench_spawn_start_with adds options (a second
 * pass with --ack-flush-ms=0, a CURVE broker's keys) and, with a shim, runs
 * the broker on a slow disk: LD_PRELOAD of tools/slowdisk/slowdisk.c with
 * its delay. When the broker fails to start or to stop cleanly, the
 * end of its log is copied to stderr: it says why.
 */
#include "bench_spawn.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench_core.h"

extern char **environ;

#define READY_TIMEOUT_MS 20000
#define STOP_TIMEOUT_MS  20000

int bench_spawn_stop(bench_spawn *s)
{
    if (s->p.pid <= 0)
        return 0;
    int st = proc_stop(&s->p, STOP_TIMEOUT_MS);
    if (st < 0)
        return -1; /* killed, or died of a signal: reported with its log */
    if (st != 0) {
        proc_tail(&s->p, PROC_TAIL_BYTES);
        return bench_core_fail("sluiced exited with status %d", st);
    }
    return 0;
}

int bench_spawn_start(bench_spawn *s, const char *path, const char *dir)
{
    return bench_spawn_start_flag(s, path, dir, NULL);
}

int bench_spawn_start_flag(bench_spawn *s, const char *path, const char *dir, const char *flag)
{
    char listen[96];
    snprintf(listen, sizeof listen, "ipc://%s/st.sock", dir);
    const char *const extra[] = {"--stream-listen", listen, flag, NULL};
    int rc = bench_spawn_start_with(s, path, dir, extra, NULL, 0);
    if (rc == 0)
        snprintf(s->stream_endpoint, sizeof s->stream_endpoint, "stream+%s", listen);
    return rc;
}

int bench_spawn_start_with(bench_spawn *s, const char *path, const char *dir, const char *const *extra,
                           const char *slowdisk, unsigned slow_flush_us)
{
    char data[96], log[96], preload[PROC_PATH_BYTES + 16], delay[48];
    const char *envp[BENCH_SPAWN_MAX_ENV + 3];
    size_t ne = 0;
    *s = (bench_spawn){.p.pid = 0};
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(s->endpoint, sizeof s->endpoint, "ipc://%s/s.sock", dir);
    snprintf(log, sizeof log, "%s/sluiced.log", dir);
    const char *argv[5 + BENCH_SPAWN_MAX_EXTRA + 1] = {path, "--data", data, "--listen", s->endpoint};
    for (int i = 0, n = 5; extra && extra[i] && i < BENCH_SPAWN_MAX_EXTRA; i++)
        argv[n++] = extra[i];
    if (slowdisk) { /* this environment, without a preload of its own, plus the shim's */
        for (char **e = environ; *e && ne < BENCH_SPAWN_MAX_ENV; e++)
            if (strncmp(*e, "LD_PRELOAD=", 11) != 0 && strncmp(*e, "SLUICE_SLOW_FLUSH_", 18) != 0)
                envp[ne++] = *e;
        snprintf(preload, sizeof preload, "LD_PRELOAD=%s", slowdisk);
        snprintf(delay, sizeof delay, "SLUICE_SLOW_FLUSH_US=%u", slow_flush_us);
        envp[ne++] = preload;
        envp[ne++] = delay;
        envp[ne] = NULL;
    }
    const proc_spec spec = {.argv = argv,
                            .env = slowdisk ? envp : NULL,
                            .out_path = log,
                            .truncate = true,
                            .null_stdin = true,
                            .ready = true,
                            .ready_ms = READY_TIMEOUT_MS,
                            .own_group = true,
                            .stopping = bench_core_stopping};
    return proc_start(&s->p, "sluiced", &spec);
}
