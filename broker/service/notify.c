/*
 * notify.c - the service manager's notification protocol (sd_notify(3)),
 * without libsystemd: a datagram of "KEY=value" lines to the AF_UNIX socket
 * named by $NOTIFY_SOCKET (a path, or "@name" for the abstract namespace).
 *
 * Who sends what: main sends READY=1 with a STATUS line once the broker
 * serves (the store is open and the endpoint bound), STOPPING=1 when a
 * signal starts the shutdown, and RELOADING=1 ... READY=1 around a SIGHUP
 * reload (reload.c); cron sends WATCHDOG=1 every half of $WATCHDOG_USEC and
 * a STATUS line with the backlog every 5 s (notify_watchdog_tick and
 * cron's status). A watchdog ping comes from the loop's own pass, so a loop
 * stuck in a pass stops pinging and the manager restarts the broker: that
 * is the point.
 *
 * Invariants: nothing here blocks (the socket is non-blocking; a full or
 * missing receiver drops the datagram); without $NOTIFY_SOCKET every call
 * is a no-op. The variables are unset after they are read, as sd_notify's
 * unset_environment does, so nothing the broker runs inherits them.
 *
 * Costs: one sendto per message; a ping at most twice per watchdog period.
 */
#include "notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "units.h"

void notify_open(notify *n, uint64_t now_ns)
{
    memset(n, 0, sizeof *n);
    n->fd = -1;
    n->next_ping_ns = n->next_status_ns = UINT64_MAX;
    const char *path = getenv("NOTIFY_SOCKET");
    const char *usec = getenv("WATCHDOG_USEC");
    const char *wpid = getenv("WATCHDOG_PID");
    if (usec && (!wpid || strtoul(wpid, NULL, 10) == (unsigned long)getpid())) {
        unsigned long long us = strtoull(usec, NULL, 10);
        n->watchdog_ns = us * 1000ULL;
    }
    size_t len = path ? strlen(path) : 0;
    if (len >= 2 && len < sizeof n->addr.sun_path && (path[0] == '/' || path[0] == '@')) {
        n->addr.sun_family = AF_UNIX;
        memcpy(n->addr.sun_path, path, len);
        if (path[0] == '@')
            n->addr.sun_path[0] = '\0'; /* the abstract namespace */
        n->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/'));
        n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (n->fd < 0)
            log_warn("notify", "cannot make a socket for NOTIFY_SOCKET: %s", strerror(errno));
    } else if (path) {
        log_warn("notify", "NOTIFY_SOCKET='%s' is neither a path nor @name: not notifying", path);
    }
    if (n->fd >= 0 && n->watchdog_ns) {
        n->next_ping_ns = now_ns;
        log_info("notify", "watchdog: a ping every %llu ms", (unsigned long long)(n->watchdog_ns / 2 / NS_PER_MS));
    }
    if (n->fd >= 0)
        n->next_status_ns = now_ns + 5 * NS_PER_S;
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
}

int notify_send(notify *n, const char *state)
{
    if (n->fd < 0)
        return 0;
    if (sendto(n->fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&n->addr, n->addr_len) < 0) {
        log_debug("notify", "cannot notify the service manager: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int notify_sendf(notify *n, const char *fmt, ...)
{
    if (n->fd < 0)
        return 0;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return notify_send(n, buf);
}

uint64_t notify_watchdog_tick(notify *n, uint64_t now_ns)
{
    if (n->next_ping_ns == UINT64_MAX || now_ns < n->next_ping_ns)
        return n->next_ping_ns;
    notify_send(n, "WATCHDOG=1");
    n->next_ping_ns = now_ns + n->watchdog_ns / 2;
    return n->next_ping_ns;
}

void notify_close(notify *n)
{
    if (n->fd >= 0)
        close(n->fd);
    n->fd = -1;
}
