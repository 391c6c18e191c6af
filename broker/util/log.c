/*
 * log.c - leveled logging to stderr.
 *
 * The broker's loop is single-threaded, and the one other thread that logs
 * (the ZAP handler, zap.c) only reads the level; each line is built in a
 * local buffer and written with one write(2), so that lines from either
 * thread, and from other processes sharing the terminal, do not interleave
 * mid-line. No locking is needed.
 * Timestamps are wall-clock UTC with milliseconds.
 *
 * Lines go to stderr. log_open_file (--log-file) puts the file, opened for
 * appending, in stderr's place with dup2; log_open_file again (SIGHUP)
 * opens the file anew, so that a rotated log is left to logrotate and a
 * fresh one begins. dup2 swaps the descriptor in one step, so the ZAP
 * thread or libmicrohttpd (which logs to stderr too) writing meanwhile
 * reach the old file or the new one, never a closed descriptor.
 */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static enum log_level cur_level = LOG_INFO;

int log_open_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) {
        log_error("log", "cannot open the log file %s: %s; logging where it did", path, strerror(errno));
        return -1;
    }
    /* dup2 replaces standard error in one step: a line another thread is
     * writing meanwhile goes to the old file or the new one, never to a
     * closed or reused descriptor */
    int rc = dup2(fd, STDERR_FILENO) < 0 ? -1 : 0;
    if (rc != 0)
        log_error("log", "cannot log to %s: %s; logging where it did", path, strerror(errno));
    close(fd);
    return rc;
}

static const char *const names[] = {"ERROR", "WARN", "INFO", "DEBUG"};

void log_set_level(enum log_level lvl)
{
    cur_level = lvl;
}

int log_parse_level(const char *name)
{
    static const char *const lower[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (strcmp(name, lower[i]) == 0)
            return i;
    return -1;
}

int log_enabled(enum log_level lvl)
{
    return lvl <= cur_level;
}

void log_msg(enum log_level lvl, const char *module, const char *fmt, ...)
{
    if (!log_enabled(lvl))
        return;
    char line[1024];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ sluiced[%ld] %-5s %s: ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, (long)getpid(), names[lvl], module);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

_Noreturn void log_die(const char *file, int line, const char *what)
{
    log_msg(LOG_ERROR, "assert", "%s:%d: invariant broken: %s", file, line, what);
    abort();
}

int log_limit_pass(log_limit *l, uint64_t now_ns, uint64_t every_ns, uint64_t *held_back)
{
    if (l->next_ns && now_ns < l->next_ns) {
        l->held_back++;
        return 0;
    }
    *held_back = l->held_back;
    l->held_back = 0;
    l->next_ns = now_ns + every_ns;
    if (l->next_ns == 0)
        l->next_ns = 1;
    return 1;
}
