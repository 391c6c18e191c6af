/*
 * proc.c - the one process supervisor of the tools and the tests.
 *
 * Start: fork, then in the child: its own process group if asked, the
 * parent-death signal if asked, stdin from /dev/null if asked, stdout and
 * stderr to their files, every signal unblocked and SIGPIPE back to its
 * default (the caller's threads may block or ignore some), and exec. The
 * only descriptor the child inherits on purpose is the write end of the
 * ready pipe: it gets "--ready-fd FD" appended to its arguments, and the
 * parent polls the read end for "READY\n" against a deadline, also noticing
 * a child that exits instead (end of file). Readiness is signalled, never
 * slept for.
 *
 * Stop: by PID only: SIGTERM, a bounded wait, then SIGKILL and a shorter
 * bounded wait. Every wait polls waitpid every POLL_MS, so it is bounded in
 * count as well as in time. When a child fails to start, dies or must be
 * killed, the end of its log goes to stderr: it says why.
 *
 * Costs: one fork and one pipe per start; a wait costs one waitpid per
 * POLL_MS. Nothing here keeps state between calls.
 */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define POLL_MS          2
#define KILL_WAIT_MS     5000
#define READY_MS_DEFAULT 20000
#define NS_PER_MS        INT64_C(1000000)

extern char **environ;

/* fail reports "PROGRAM: NAME: why" on stderr, unless quiet. Returns -1. */
__attribute__((format(printf, 3, 4))) static int fail(bool quiet, const char *name, const char *fmt,
                                                      ...)
{
    va_list ap;
    if (quiet)
        return -1;
    va_start(ap, fmt);
    fprintf(stderr, "%s: %s: ", program_invocation_short_name, name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return -1;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 * NS_PER_MS + ts.tv_nsec;
}

void proc_tail(const proc *p, size_t max_bytes)
{
    char buf[4096];
    FILE *f = p->log[0] ? fopen(p->log, "r") : NULL;
    if (!f)
        return;
    if (fseek(f, -(long)max_bytes, SEEK_END) != 0)
        rewind(f); /* the log is shorter */
    fprintf(stderr, "---- end of %s (%s) ----\n", p->log, p->name);
    size_t n, total = 0, last = 0;
    for (size_t i = 0; i <= max_bytes / sizeof buf && (n = fread(buf, 1, sizeof buf, f)) > 0; i++) {
        fwrite(buf, 1, n, stderr);
        total += n;
        last = (size_t)(unsigned char)buf[n - 1];
    }
    fclose(f);
    if (total && last != '\n')
        fputc('\n', stderr);
    fprintf(stderr, "----\n");
}

/* reap waits up to wait_ms for pid to exit. Returns 0 with *status set, or
 * -1 when it has not (or cannot be waited for). */
static int reap(pid_t pid, int wait_ms, int *status)
{
    const struct timespec nap = {.tv_nsec = POLL_MS * NS_PER_MS};
    int64_t end_ns = now_ns() + (int64_t)wait_ms * NS_PER_MS;
    for (int i = 0; i <= wait_ms / POLL_MS + 1; i++) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if ((r < 0 && errno != EINTR) || now_ns() >= end_ns)
            return -1;
        nanosleep(&nap, NULL);
    }
    return -1;
}

/* file_to dups a file opened for writing onto fd; the child's own. */
static void file_to(const char *path, bool truncate, int fd)
{
    int f = open(path, O_WRONLY | O_CREAT | (truncate ? O_TRUNC : O_APPEND), 0644);
    if (f < 0)
        return;
    dup2(f, fd);
    if (f != fd)
        close(f);
}

/* child_exec runs in the forked child and never returns. */
_Noreturn static void child_exec(const proc_spec *s, char *const argv[], int ready_fd, pid_t parent)
{
    if (s->own_group)
        setpgid(0, 0);
    if (s->die_with_parent) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127); /* the parent died before prctl */
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    if (s->null_stdin) {
        int null_fd = open("/dev/null", O_RDONLY);
        if (null_fd >= 0 && null_fd != 0) {
            dup2(null_fd, 0);
            close(null_fd);
        }
    }
    const char *err_path = s->err_path ? s->err_path : s->out_path;
    if (s->out_path)
        file_to(s->out_path, s->truncate, 1);
    if (err_path && (!s->out_path || strcmp(err_path, s->out_path) != 0))
        file_to(err_path, s->truncate, 2);
    else if (err_path)
        dup2(1, 2);
    if (ready_fd >= 0)
        fcntl(ready_fd, F_SETFD, 0); /* the one descriptor it inherits on purpose */
    char *const *envp = s->env ? (char *const *)s->env : environ;
    execvpe(argv[0], argv, envp);
    dprintf(2, "%s: cannot run %s: %s\n", program_invocation_short_name, argv[0], strerror(errno));
    _exit(127);
}

/* ready_wait reads "READY\n" from fd before the deadline, or notices that
 * the child exited. Returns 0 or -1, reported. */
static int ready_wait(const proc *p, const proc_spec *s, int fd)
{
    int ready_ms = s->ready_ms > 0 ? s->ready_ms : READY_MS_DEFAULT;
    char buf[16];
    size_t got = 0;
    int64_t deadline_ns = now_ns() + (int64_t)ready_ms * NS_PER_MS;
    for (int i = 0; i < 100000 && got < 6; i++) {
        int64_t left_ns = deadline_ns - now_ns();
        if (left_ns <= 0)
            return fail(s->quiet, p->name, "did not report READY within %d ms", ready_ms);
        if (s->stopping && s->stopping())
            return fail(s->quiet, p->name, "interrupted while it started");
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        /* at most 100 ms at a time, so that stopping is looked at */
        int slice_ms = left_ns > 100 * NS_PER_MS ? 100 : (int)(left_ns / NS_PER_MS) + 1;
        if (poll(&pfd, 1, slice_ms) <= 0)
            continue; /* EINTR or the slice: both looked at above */
        ssize_t r = read(fd, buf + got, sizeof buf - 1 - got);
        if (r == 0)
            return fail(s->quiet, p->name, "exited before it was ready");
        if (r < 0 && errno != EINTR)
            return fail(s->quiet, p->name, "reading its --ready-fd: %s", strerror(errno));
        got += r > 0 ? (size_t)r : 0;
    }
    if (got < 6 || memcmp(buf, "READY\n", 6) != 0)
        return fail(s->quiet, p->name, "wrote no READY line");
    return 0;
}

int proc_start(proc *p, const char *name, const proc_spec *s)
{
    char *args[PROC_MAX_ARGS + 1], fd_arg[16];
    int pipe_fd[2] = {-1, -1};
    size_t n = 0;
    *p = (proc){.pid = 0};
    snprintf(p->name, sizeof p->name, "%s", name);
    const char *err_path = s->err_path ? s->err_path : s->out_path;
    snprintf(p->log, sizeof p->log, "%s", err_path ? err_path : "");
    while (s->argv[n] && n < PROC_MAX_ARGS - 2) {
        args[n] = (char *)s->argv[n];
        n++;
    }
    if (s->argv[n])
        return fail(s->quiet, name, "more than %d arguments", PROC_MAX_ARGS - 2);
    if (s->ready) {
        if (pipe2(pipe_fd, O_CLOEXEC) != 0)
            return fail(s->quiet, name, "pipe: %s", strerror(errno));
        snprintf(fd_arg, sizeof fd_arg, "%d", pipe_fd[1]);
        args[n++] = "--ready-fd";
        args[n++] = fd_arg;
    }
    args[n] = NULL;
    fflush(NULL); /* nothing buffered is written twice */
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        child_exec(s, args, pipe_fd[1], parent);
    if (pipe_fd[1] >= 0)
        close(pipe_fd[1]);
    if (pid < 0) {
        if (pipe_fd[0] >= 0)
            close(pipe_fd[0]);
        return fail(s->quiet, name, "fork: %s", strerror(errno));
    }
    p->pid = pid;
    if (!s->ready)
        return 0;
    int rc = ready_wait(p, s, pipe_fd[0]);
    close(pipe_fd[0]);
    if (rc != 0) {
        proc_kill(p);
        if (!s->quiet)
            proc_tail(p, PROC_TAIL_BYTES);
    }
    return rc;
}

int proc_stop(proc *p, int wait_ms)
{
    int status = 0;
    pid_t pid = p->pid;
    if (pid <= 0)
        return 0;
    p->pid = 0;
    kill(pid, SIGTERM);
    if (reap(pid, wait_ms, &status) != 0) {
        kill(pid, SIGKILL);
        reap(pid, KILL_WAIT_MS, &status);
        proc_tail(p, PROC_TAIL_BYTES);
        return fail(false, p->name, "(pid %d) did not stop within %d ms of SIGTERM; killed it",
                    (int)pid, wait_ms);
    }
    if (WIFSIGNALED(status)) {
        proc_tail(p, PROC_TAIL_BYTES);
        return fail(false, p->name, "(pid %d) died of signal %d", (int)pid, WTERMSIG(status));
    }
    return WEXITSTATUS(status);
}

int proc_wait(proc *p, int wait_ms)
{
    int status = 0;
    if (p->pid <= 0)
        return 0;
    if (reap(p->pid, wait_ms, &status) != 0)
        return PROC_RUNNING;
    p->pid = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void proc_kill(proc *p)
{
    if (p->pid <= 0)
        return;
    kill(p->pid, SIGKILL);
    while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    p->pid = 0;
}

bool proc_running(proc *p)
{
    int status = 0;
    if (p->pid <= 0)
        return false;
    if (waitpid(p->pid, &status, WNOHANG) != p->pid)
        return true;
    p->pid = 0;
    proc_tail(p, PROC_TAIL_BYTES);
    return false;
}
