/*
 * scen_proc.c - start, watch and stop the bench's child processes.
 *
 * Each child is forked into its own process group (a terminal's Ctrl-C is
 * the bench's to handle), with stdin from /dev/null and stdout and stderr
 * appended to its log. Readiness is signalled, never slept for: the child
 * gets "--ready-fd FD", the write end of a pipe that is its one inherited
 * descriptor, and the bench polls the read end for "READY\n" against a
 * deadline, also noticing a child that exits instead.
 *
 * Stopping is by PID only: SIGTERM, a bounded wait, then SIGKILL and a
 * shorter bounded wait. Every wait polls waitpid every POLL_MS, so it is
 * bounded in count as well as in time. When a child fails to start, dies
 * or must be killed, the end of its log (TAIL_BYTES) goes to stderr: it
 * says why.
 */
#include "scen_proc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define POLL_MS       10
#define KILL_WAIT_MS  5000
#define TAIL_BYTES    4096

/* tail_show copies the end of p's log to stderr. */
static void tail_show(const scen_proc *p)
{
    char buf[TAIL_BYTES];
    FILE *f = fopen(p->log, "r");
    if (!f)
        return;
    if (fseek(f, -(long)sizeof buf, SEEK_END) != 0)
        rewind(f); /* the log is shorter */
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    fprintf(stderr, "---- end of %s ----\n", p->log);
    fwrite(buf, 1, n, stderr);
    if (n && buf[n - 1] != '\n')
        fputc('\n', stderr);
    fprintf(stderr, "----\n");
}

/* reap waits up to wait_ms for pid to exit. Returns 0 with *status set, or
 * -1 when it has not. */
static int reap(pid_t pid, int wait_ms, int *status)
{
    const struct timespec nap = {.tv_nsec = POLL_MS * SCEN_NS_PER_MS};
    for (int i = 0; i <= wait_ms / POLL_MS; i++) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
        if (i < wait_ms / POLL_MS)
            nanosleep(&nap, NULL);
    }
    return -1;
}

static void child_exec(char *const argv[], int log_fd, int ready_fd)
{
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL); /* the bench's threads may block some */
    signal(SIGPIPE, SIG_DFL);
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0)
        dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    if (ready_fd >= 0)
        fcntl(ready_fd, F_SETFD, 0); /* the one descriptor it inherits */
    execv(argv[0], argv);
    dprintf(2, "sluice-bench: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* ready_wait reads "READY\n" from fd before deadline, or notices the child
 * exit. Returns 0 or -1, reported. */
static int ready_wait(scen_proc *p, int fd, int ready_ms)
{
    char buf[16];
    size_t got = 0;
    int64_t deadline_ns = scen_now_ns() + ready_ms * SCEN_NS_PER_MS;
    for (int i = 0; i < 10000 && got < 6; i++) {
        int64_t left_ns = deadline_ns - scen_now_ns();
        if (left_ns <= 0)
            return scen_fail("%s did not report READY within %d ms", p->name, ready_ms);
        if (scen_stopping())
            return scen_fail("interrupted while starting %s", p->name);
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int n = poll(&pfd, 1, (int)(left_ns / SCEN_NS_PER_MS) + 1);
        if (n <= 0)
            continue; /* EINTR or the deadline: both looked at above */
        ssize_t r = read(fd, buf + got, sizeof buf - 1 - got);
        if (r == 0)
            return scen_fail("%s exited before it was ready", p->name);
        if (r < 0 && errno != EINTR)
            return scen_fail("reading the --ready-fd of %s: %s", p->name, strerror(errno));
        got += r > 0 ? (size_t)r : 0;
    }
    if (got < 6 || memcmp(buf, "READY\n", 6) != 0)
        return scen_fail("%s wrote no READY line", p->name);
    return 0;
}

int scen_proc_start(scen_proc *p, const char *name, char *const argv[],
                         const char *log_path, bool ready, int ready_ms)
{
    char *args[SCEN_PROC_MAX_ARGS + 3], fd_arg[16];
    int pipe_fd[2] = {-1, -1};
    size_t n = 0;
    *p = (scen_proc){.pid = 0};
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->log, sizeof p->log, "%s", log_path);
    while (argv[n] && n < SCEN_PROC_MAX_ARGS) {
        args[n] = argv[n];
        n++;
    }
    if (argv[n])
        return scen_fail("%s: more than %d arguments", name, SCEN_PROC_MAX_ARGS);
    int log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0)
        return scen_fail("cannot open %s: %s", log_path, strerror(errno));
    if (ready) {
        if (pipe2(pipe_fd, O_CLOEXEC) != 0) {
            close(log_fd);
            return scen_fail("pipe: %s", strerror(errno));
        }
        snprintf(fd_arg, sizeof fd_arg, "%d", pipe_fd[1]);
        args[n++] = "--ready-fd";
        args[n++] = fd_arg;
    }
    args[n] = NULL;
    pid_t pid = fork();
    if (pid == 0)
        child_exec(args, log_fd, pipe_fd[1]);
    close(log_fd);
    if (pipe_fd[1] >= 0)
        close(pipe_fd[1]);
    if (pid < 0) {
        if (pipe_fd[0] >= 0)
            close(pipe_fd[0]);
        return scen_fail("fork: %s", strerror(errno));
    }
    p->pid = pid;
    if (!ready)
        return 0;
    int rc = ready_wait(p, pipe_fd[0], ready_ms);
    close(pipe_fd[0]);
    if (rc != 0) {
        kill(pid, SIGKILL);
        reap(pid, KILL_WAIT_MS, &(int){0});
        p->pid = 0;
        tail_show(p);
    }
    return rc;
}

int scen_proc_stop(scen_proc *p, int wait_ms)
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
        tail_show(p);
        return scen_fail("%s (pid %d) did not stop within %d ms of SIGTERM; killed it", p->name,
                              (int)pid, wait_ms);
    }
    if (WIFSIGNALED(status)) {
        tail_show(p);
        return scen_fail("%s (pid %d) died of signal %d", p->name, (int)pid, WTERMSIG(status));
    }
    return WEXITSTATUS(status);
}

int scen_proc_wait(scen_proc *p, int wait_ms)
{
    int status = 0;
    if (p->pid <= 0)
        return 0;
    if (reap(p->pid, wait_ms, &status) != 0)
        return -2;
    p->pid = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool scen_proc_running(scen_proc *p)
{
    int status = 0;
    if (p->pid <= 0)
        return false;
    if (waitpid(p->pid, &status, WNOHANG) != p->pid)
        return true;
    p->pid = 0;
    tail_show(p);
    return false;
}

int scen_proc_exe_dir(char *buf, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n <= 0 || (size_t)n >= size - 1)
        return scen_fail("cannot read /proc/self/exe: %s", n < 0 ? strerror(errno) : "too long");
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash)
        return scen_fail("/proc/self/exe is not a path: %s", buf);
    *slash = '\0';
    return 0;
}

int scen_proc_mkdirs(const char *path)
{
    char buf[SCEN_PATH_BYTES];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return scen_fail("path too long: %s", path);
    for (char *s = buf + 1;; s++) {
        char c = *s;
        if (c != '/' && c != '\0')
            continue;
        *s = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return scen_fail("cannot create %s: %s", buf, strerror(errno));
        *s = c;
        if (!c)
            break;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return scen_fail("%s is not a directory", path);
    return 0;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

void scen_proc_rmtree(const char *path)
{
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

unsigned scen_proc_free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    unsigned port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}
