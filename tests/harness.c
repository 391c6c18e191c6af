/*
 * harness.c - start, stop and kill real sluiced processes for tests.
 *
 * Readiness: the broker is started with --ready-fd pointing at a pipe and
 * writes "READY\n" once it serves; the harness polls that pipe with a
 * deadline. Every process started here is stopped by its PID: a test that
 * fails half-way (cmocka jumps out of it) leaves its broker registered, and
 * an exit handler kills and reaps every broker still registered.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_LIVE 64
static pid_t live[MAX_LIVE];

static void reap_live(void)
{
    for (int i = 0; i < MAX_LIVE; i++)
        if (live[i] > 0) {
            kill(live[i], SIGKILL);
            waitpid(live[i], NULL, 0);
            live[i] = 0;
        }
}

static void track(pid_t pid, int add)
{
    static int registered;
    if (!registered) {
        atexit(reap_live);
        registered = 1;
    }
    for (int i = 0; i < MAX_LIVE; i++)
        if (add ? live[i] == 0 : live[i] == pid) {
            live[i] = add ? pid : 0;
            return;
        }
}

uint64_t th_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

unsigned th_seed(void)
{
    static unsigned seed;
    static int done;
    if (!done) {
        const char *s = getenv("SLUICE_SEED");
        seed = s ? (unsigned)strtoul(s, NULL, 10) : (unsigned)time(NULL);
        fprintf(stderr, "# seed %u (set SLUICE_SEED to replay)\n", seed);
        done = 1;
    }
    return seed;
}

const char *th_bin(const char *name)
{
    static char bufs[8][512];
    static int next;
    const char *dir = getenv("SLUICE_BIN");
    char *out = bufs[next++ % 8];
    snprintf(out, sizeof bufs[0], "%s/%s", dir && *dir ? dir : "bin", name);
    return out;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

void th_rmrf(const char *path)
{
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int th_broker_init(th_broker *b, const char *const *extra)
{
    memset(b, 0, sizeof *b);
    strcpy(b->dir, "/tmp/sluice-test-XXXXXX");
    if (!mkdtemp(b->dir))
        return -1;
    snprintf(b->data, sizeof b->data, "%s/data", b->dir);
    snprintf(b->endpoint, sizeof b->endpoint, "ipc://%s/s.sock", b->dir);
    snprintf(b->log, sizeof b->log, "%s/sluiced.log", b->dir);
    for (int i = 0; extra && extra[i] && i < 15; i++)
        b->extra[i] = extra[i];
    return 0;
}

static void print_log(const th_broker *b)
{
    char buf[4096];
    FILE *f = fopen(b->log, "r");
    if (!f)
        return;
    fprintf(stderr, "---- %s ----\n", b->log);
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, n, stderr);
    fclose(f);
}

int th_broker_start(th_broker *b)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        const char *argv[48];
        char fdarg[16];
        int n = 0, wfd = dup(p[1]); /* dup drops O_CLOEXEC */
        snprintf(fdarg, sizeof fdarg, "%d", wfd);
        int logfd = open(b->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (logfd >= 0)
            dup2(logfd, 2);
        for (int i = 0; b->wrap[i] && i < 15; i++)
            argv[n++] = b->wrap[i];
        argv[n++] = th_bin("sluiced");
        argv[n++] = "--data";
        argv[n++] = b->data;
        argv[n++] = "--listen";
        argv[n++] = b->endpoint;
        argv[n++] = "--ready-fd";
        argv[n++] = fdarg;
        for (int i = 0; b->extra[i]; i++)
            argv[n++] = b->extra[i];
        argv[n] = NULL;
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    b->pid = pid;
    track(pid, 1);
    char buf[16] = {0};
    struct pollfd pfd = {.fd = p[0], .events = POLLIN};
    int ok = poll(&pfd, 1, 20000) == 1 && read(p[0], buf, sizeof buf - 1) >= 5 &&
             strncmp(buf, "READY", 5) == 0;
    close(p[0]);
    if (!ok) {
        fprintf(stderr, "harness: sluiced did not become ready\n");
        print_log(b);
        th_broker_kill9(b);
        return -1;
    }
    return 0;
}

static int wait_for(pid_t pid, int timeout_ms, int *status)
{
    uint64_t end = th_now_ms() + (uint64_t)timeout_ms;
    for (int i = 0; i < 100000; i++) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if (r < 0 || th_now_ms() > end)
            return -1;
        usleep(2000);
    }
    return -1;
}

int th_broker_stop(th_broker *b)
{
    int status = 0;
    if (b->pid <= 0)
        return -1;
    kill(b->pid, SIGTERM);
    if (wait_for(b->pid, 20000, &status) != 0) {
        fprintf(stderr, "harness: sluiced did not stop on SIGTERM; killing it\n");
        th_broker_kill9(b);
        return -1;
    }
    track(b->pid, 0);
    b->pid = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        print_log(b);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int th_broker_wait(th_broker *b, int timeout_ms)
{
    int status = 0;
    if (b->pid <= 0 || wait_for(b->pid, timeout_ms, &status) != 0)
        return -1;
    track(b->pid, 0);
    b->pid = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void th_broker_kill9(th_broker *b)
{
    int status;
    if (b->pid <= 0)
        return;
    kill(b->pid, SIGKILL);
    waitpid(b->pid, &status, 0);
    track(b->pid, 0);
    b->pid = 0;
}

void th_broker_fini(th_broker *b)
{
    if (b->pid > 0)
        th_broker_kill9(b);
    if (b->dir[0])
        th_rmrf(b->dir);
    b->dir[0] = '\0';
}

int th_run(const char *const *argv, const char *in_text, char *out, size_t out_len)
{
    int in[2], outp[2], status = 0;
    if (pipe2(in, O_CLOEXEC) || pipe2(outp, O_CLOEXEC))
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(outp[1], 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    close(outp[1]);
    if (in_text) {
        size_t len = strlen(in_text), off = 0;
        while (off < len) {
            ssize_t w = write(in[1], in_text + off, len - off);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
    }
    close(in[1]);
    size_t got = 0;
    uint64_t end = th_now_ms() + 60000;
    struct pollfd pfd = {.fd = outp[0], .events = POLLIN};
    while (th_now_ms() < end) {
        if (poll(&pfd, 1, 200) <= 0)
            continue;
        char tmp[4096];
        ssize_t r = read(outp[0], tmp, sizeof tmp);
        if (r <= 0)
            break;
        size_t room = out_len ? out_len - 1 - got : 0;
        size_t take = (size_t)r < room ? (size_t)r : room;
        if (out && take) {
            memcpy(out + got, tmp, take);
            got += take;
        }
    }
    close(outp[0]);
    if (out && out_len)
        out[got] = '\0';
    if (wait_for(pid, th_now_ms() < end ? (int)(end - th_now_ms()) : 1, &status) != 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
