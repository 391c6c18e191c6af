/*
 * cli_exec.c - `sluice consume --exec`: run one command per message.
 *
 * cli_exec_run forks /bin/sh -c CMD with the message body on its standard
 * input and waits for it; the caller turns the exit status into a
 * settlement (0 ack, 75 throttled, 76 throttled for its tag alone, else
 * nack). It is called from worker
 * threads, so the child makes only async-signal-safe calls before exec and
 * restores the signal mask and SIGPIPE its caller's shell would give it.
 * A command that does not read its whole input simply closes the pipe:
 * the EPIPE is ignored. Costs: a fork and an exec per message.
 */
#include "cli_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static bool write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return false;
        p += w;
        len -= (size_t)w;
    }
    return true;
}

int cli_exec_run(const char *cmd, const void *body, size_t body_len, int *status)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC))
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        close(fds[0]);
        close(fds[1]);
        errno = err;
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
        if (dup2(fds[0], STDIN_FILENO) < 0)
            _exit(127);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(fds[0]);
    write_all(fds[1], body, body_len); /* EPIPE: it did not read it all */
    close(fds[1]);
    while (waitpid(pid, status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return 0;
}
