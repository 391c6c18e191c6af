/*
 * bench_spawn.c - the broker that `sluice-bench --spawn` runs.
 *
 * It owns one child process: sluiced started with --data DIR/data, --listen
 * ipc://DIR/s.sock and --ready-fd, its stdout and stderr going to
 * DIR/sluiced.log. The child runs in its own process group, so a Ctrl-C in
 * the terminal reaches only the bench, which then stops the broker in order
 * rather than leaving it to die mid-commit.
 *
 * Lifecycle: bench_spawn_start forks, execs and reads the READY line from a
 * pipe (READY_TIMEOUT_MS at most: readiness is signalled, never slept for);
 * on any failure the child is killed and reaped before it returns.
 * bench_spawn_stop sends SIGTERM by PID, waits STOP_TIMEOUT_MS, then sends
 * SIGKILL and waits KILL_TIMEOUT_MS more. Waiting polls waitpid every 10 ms,
 * so it is bounded in count as well as time.
 *
 * When the broker fails to start or to stop cleanly, the end of its log
 * (LOG_TAIL_BYTES at most) is copied to stderr: it says why.
 */
#include "bench_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_core.h"

#define READY_TIMEOUT_MS 20000
#define STOP_TIMEOUT_MS  20000
#define KILL_TIMEOUT_MS  5000
#define LOG_TAIL_BYTES   65536

/* log_show copies the end of the broker's log to stderr. */
static void log_show(const bench_spawn *s)
{
    char buf[4096];
    FILE *f = fopen(s->log, "r");
    if (!f)
        return;
    fprintf(stderr, "---- %s ----\n", s->log);
    if (fseek(f, -LOG_TAIL_BYTES, SEEK_END) != 0)
        rewind(f); /* the log is shorter */
    size_t n;
    for (int i = 0; i < LOG_TAIL_BYTES / (int)sizeof buf && (n = fread(buf, 1, sizeof buf, f)) > 0;
         i++)
        fwrite(buf, 1, n, stderr);
    fprintf(stderr, "---- end of log ----\n");
    fclose(f);
}

/* child_exec runs in the forked child: it becomes sluiced. */
static void child_exec(const char *path, char *const argv[], int log_fd, int ready_fd)
{
    setpgid(0, 0); /* a Ctrl-C is the bench's to handle */
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd >= 0)
        dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    fcntl(ready_fd, F_SETFD, 0); /* the one descriptor sluiced inherits */
    execv(path, argv);
    dprintf(2, "sluice-bench: cannot run %s: %s\n", path, strerror(errno));
    _exit(127);
}

/* ready_wait reads "READY\n" from fd within timeout_ms. */
static int ready_wait(int fd, int timeout_ms)
{
    char buf[16];
    size_t got = 0;
    int64_t deadline_ns = bench_core_now_ns() + timeout_ms * BENCH_CORE_NS_PER_MS;
    for (int i = 0; i < 1000 && got < 6 && !bench_core_stopping(); i++) {
        int64_t left_ns = deadline_ns - bench_core_now_ns();
        if (left_ns <= 0)
            return bench_core_fail("sluiced did not report READY within %d ms", timeout_ms);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, (int)((left_ns + BENCH_CORE_NS_PER_MS - 1) / BENCH_CORE_NS_PER_MS));
        if (n <= 0)
            continue; /* EINTR or the deadline: both looked at above */
        ssize_t r = read(fd, buf + got, sizeof buf - 1 - got);
        if (r == 0)
            return bench_core_fail("sluiced exited before it was ready");
        if (r < 0 && errno != EINTR)
            return bench_core_fail("reading sluiced's --ready-fd: %s", strerror(errno));
        got += r > 0 ? (size_t)r : 0;
    }
    if (got < 6 || memcmp(buf, "READY\n", 6) != 0)
        return bench_core_fail(bench_core_stopping() ? "interrupted"
                                                     : "sluiced wrote no READY line");
    return 0;
}

/* reap waits up to timeout_ms for the broker to exit; *status on success. */
static int reap(pid_t pid, int timeout_ms, int *status)
{
    const struct timespec nap = {.tv_nsec = 10 * BENCH_CORE_NS_PER_MS};
    for (int i = 0; i <= timeout_ms / 10; i++) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
        nanosleep(&nap, NULL);
    }
    return -1;
}

int bench_spawn_stop(bench_spawn *s)
{
    int status = 0;
    pid_t pid = s->pid;
    if (pid <= 0)
        return 0;
    s->pid = 0;
    kill(pid, SIGTERM);
    if (reap(pid, STOP_TIMEOUT_MS, &status) != 0) {
        kill(pid, SIGKILL);
        reap(pid, KILL_TIMEOUT_MS, &status);
        log_show(s);
        return bench_core_fail("sluiced (pid %d) did not stop within %d ms of SIGTERM; killed it",
                               (int)pid, STOP_TIMEOUT_MS);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        log_show(s);
        if (WIFSIGNALED(status))
            return bench_core_fail("sluiced died of signal %d", WTERMSIG(status));
        return bench_core_fail("sluiced exited with status %d", WEXITSTATUS(status));
    }
    return 0;
}

int bench_spawn_start(bench_spawn *s, const char *path, const char *dir)
{
    char data[96], fd_arg[16];
    int ready[2];
    *s = (bench_spawn){.pid = 0};
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(s->endpoint, sizeof s->endpoint, "ipc://%s/s.sock", dir);
    snprintf(s->log, sizeof s->log, "%s/sluiced.log", dir);

    int log_fd = open(s->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (log_fd < 0)
        return bench_core_fail("cannot create %s: %s", s->log, strerror(errno));
    if (pipe2(ready, O_CLOEXEC) != 0) {
        close(log_fd);
        return bench_core_fail("pipe: %s", strerror(errno));
    }
    snprintf(fd_arg, sizeof fd_arg, "%d", ready[1]);
    char *const argv[] = {(char *)path, "--data", data, "--listen", s->endpoint,
                          "--ready-fd", fd_arg, NULL};
    pid_t pid = fork();
    if (pid == 0)
        child_exec(path, argv, log_fd, ready[1]);
    close(log_fd);
    close(ready[1]);
    if (pid < 0) {
        close(ready[0]);
        return bench_core_fail("fork: %s", strerror(errno));
    }
    s->pid = pid;
    int rc = ready_wait(ready[0], READY_TIMEOUT_MS);
    close(ready[0]);
    if (rc != 0) {
        kill(pid, SIGKILL);
        reap(pid, KILL_TIMEOUT_MS, &(int){0});
        s->pid = 0;
        log_show(s);
    }
    return rc;
}
