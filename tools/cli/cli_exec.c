/*
 * cli_exec.c - `sluice consume --exec`: run one command per message.
 *
 * cli_exec_run forks /bin/sh -c CMD with the message body on its standard
 * input and waits for it; the caller turns the exit status into a
 * settlement (0 ack, 65 reject, 75 throttled, 76 throttled for its tag
 * alone, else nack with a backoff). It is called from worker threads, so
 * the child makes only async-signal-safe calls before exec and restores
 * the signal mask and SIGPIPE its caller's shell would give it. A command
 * that does not read its whole input simply closes the pipe: the EPIPE is
 * ignored. Its standard error passes through a pipe of ours to ours, as it
 * comes, and its last non-empty line (at most CLI_EXEC_LINE_MAX bytes) is
 * kept for the dead letter's reason of a rejected message. The message's
 * identity and its headers reach the command as environment variables
 * (cli_exec_env_new: SLUICE_HEADER_TRACEPARENT, ...), an environment built
 * before the fork, since the child of a threaded process may not allocate.
 * Costs: a fork and an exec per message, a copy of the environment, and a
 * copy of what it writes to standard error.
 */
#include "cli_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* last_line keeps the last non-empty line of what the command wrote to
 * its standard error, at most cap - 1 bytes of it (the line's start). */
typedef struct last_line {
    char *last, cur[CLI_EXEC_LINE_MAX + 1];
    size_t cap, cur_len;
} last_line;

static void last_line_end(last_line *l)
{
    while (l->cur_len && l->cur[l->cur_len - 1] == '\r')
        l->cur_len--;
    if (l->cur_len) {
        size_t n = l->cur_len < l->cap - 1 ? l->cur_len : l->cap - 1;
        memcpy(l->last, l->cur, n);
        l->last[n] = '\0';
    }
    l->cur_len = 0;
}

static void last_line_add(last_line *l, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n')
            last_line_end(l);
        else if (l->cur_len < sizeof l->cur - 1)
            l->cur[l->cur_len++] = p[i];
    }
}

extern char **environ;

/* env_name writes "SLUICE_HEADER_" and name, upper case, every character
 * but letters and digits as '_', into out; returns its length. */
static size_t env_name(const char *name, char *out)
{
    size_t n = (size_t)sprintf(out, "SLUICE_HEADER_");
    for (; *name; name++) {
        char c = *name;
        out[n++] = (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ? c : '_';
    }
    out[n] = '\0';
    return n;
}

/* env_has says whether "NAME=..." entry var has the name of "NAME=..." entry
 * of other. */
static int same_var(const char *a, const char *b)
{
    size_t n = strcspn(a, "=");
    return strncmp(a, b, n) == 0 && b[n] == '=';
}

char **cli_exec_env_new(const sl_delivery *d)
{
    size_t nenv = 0, bytes = 0, nadd = 4 + d->nheaders;
    for (char **e = environ; e && *e; e++)
        nenv++;
    bytes += 3 * 40 + sizeof "SLUICE_IDEMPOTENCY_KEY=sluice-" + 20 + strlen(d->key);
    for (size_t i = 0; i < d->nheaders; i++)
        bytes += sizeof "SLUICE_HEADER_=" + strlen(d->headers[i].name) + strlen(d->headers[i].value);
    char **env = malloc((nenv + nadd + 1) * sizeof *env + bytes);
    if (!env)
        return NULL;
    char *text = (char *)(env + nenv + nadd + 1), *added[4 + SL_MAX_HEADERS];
    size_t k = 0;
    added[k++] = text;
    text += sprintf(text, "SLUICE_ID=%" PRIu64, d->id) + 1;
    added[k++] = text;
    text += sprintf(text, "SLUICE_ATTEMPT=%u", d->attempt) + 1;
    added[k++] = text;
    text += sprintf(text, "SLUICE_LEVEL=%u", d->level) + 1;
    added[k++] = text;
    if (d->key[0])
        text += sprintf(text, "SLUICE_IDEMPOTENCY_KEY=%s", d->key) + 1;
    else
        text += sprintf(text, "SLUICE_IDEMPOTENCY_KEY=sluice-%" PRIu64, d->id) + 1;
    for (size_t i = 0; i < d->nheaders && k < sizeof added / sizeof added[0]; i++) {
        added[k++] = text;
        text += env_name(d->headers[i].name, text);
        text += sprintf(text, "=%s", d->headers[i].value) + 1;
    }
    size_t n = 0;
    for (char **e = environ; e && *e; e++) { /* the process's, but for the names added */
        int replaced = 0;
        for (size_t i = 0; i < k && !replaced; i++)
            replaced = same_var(added[i], *e);
        if (!replaced)
            env[n++] = *e;
    }
    for (size_t i = 0; i < k; i++) { /* the later of two headers of one name wins */
        int later = 0;
        for (size_t j = i + 1; j < k && !later; j++)
            later = same_var(added[i], added[j]);
        if (!later)
            env[n++] = added[i];
    }
    env[n] = NULL;
    return env;
}

int cli_exec_run(const char *cmd, const void *body, size_t body_len, int *status, char *err_line, size_t err_cap)
{
    return cli_exec_run_env(cmd, NULL, body, body_len, status, err_line, err_cap);
}

int cli_exec_run_env(const char *cmd, char *const *env, const void *body, size_t body_len, int *status,
                     char *err_line, size_t err_cap)
{
    int in[2], err[2];
    if (pipe2(in, O_CLOEXEC))
        return -1;
    if (pipe2(err, O_CLOEXEC)) {
        int e = errno;
        close(in[0]);
        close(in[1]);
        errno = e;
        return -1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(in[0]);
        close(in[1]);
        close(err[0]);
        close(err[1]);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        /* only async-signal-safe calls here: the parent has threads. The
         * command gets the signals its caller would: none blocked (workers
         * block them), SIGPIPE back to its default. */
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigset_t none;
        sigemptyset(&none);
        sigaction(SIGPIPE, &dfl, NULL);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (dup2(in[0], STDIN_FILENO) < 0 || dup2(err[1], STDERR_FILENO) < 0)
            _exit(127);
        if (env)
            execle("/bin/sh", "sh", "-c", cmd, (char *)NULL, env);
        else
            execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(err[1]);
    /* Write the body and read its standard error at once (either may fill
     * its pipe first), passing what it says on to ours, until its standard
     * error ends, or it has exited and nothing more is there (a child it
     * left behind may hold the pipe open). */
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    last_line l = {.last = err_line, .cap = err_cap};
    if (err_cap)
        err_line[0] = '\0';
    const char *p = body;
    size_t left = body_len;
    int in_fd = in[1], exited = 0;
    if (!left) {
        close(in_fd);
        in_fd = -1;
    }
    for (;;) {
        struct pollfd fds[2] = {{.fd = err[0], .events = POLLIN}, {.fd = in_fd, .events = POLLOUT}};
        if (poll(fds, in_fd >= 0 ? 2 : 1, exited ? 0 : 100) < 0 && errno != EINTR)
            break;
        if (in_fd >= 0 && fds[1].revents) {
            ssize_t w = write(in_fd, p, left);
            if (w > 0)
                p += w, left -= (size_t)w;
            if ((w < 0 && errno != EAGAIN && errno != EINTR) || !left) { /* EPIPE: it did not read it all */
                close(in_fd);
                in_fd = -1;
            }
        }
        char buf[4096];
        ssize_t n = read(err[0], buf, sizeof buf);
        if (n > 0) {
            (void)!write(STDERR_FILENO, buf, (size_t)n);
            if (err_cap)
                last_line_add(&l, buf, (size_t)n);
            continue;
        }
        if (n == 0 || (exited && (errno == EAGAIN || errno == EWOULDBLOCK)))
            break; /* its standard error ended; or it exited, and what it left is read */
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            break;
        if (!exited) {
            pid_t r = waitpid(pid, status, WNOHANG);
            exited = r == pid;
        }
    }
    if (in_fd >= 0)
        close(in_fd);
    close(err[0]);
    if (err_cap)
        last_line_end(&l);
    if (exited)
        return 0;
    while (waitpid(pid, status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return 0;
}
