/*
 * notify.h - telling the service manager (systemd, Type=notify) how the
 * broker is: READY, STOPPING, RELOADING, STATUS lines and watchdog pings,
 * as datagrams to $NOTIFY_SOCKET.
 */
#ifndef SLUICE_NOTIFY_H
#define SLUICE_NOTIFY_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

typedef struct notify {
    int fd;                    /* -1: no service manager listens */
    struct sockaddr_un addr;
    socklen_t addr_len;
    uint64_t watchdog_ns;      /* WATCHDOG_USEC in ns; 0 = no watchdog */
    uint64_t next_ping_ns;     /* when cron next sends WATCHDOG=1 */
    uint64_t next_status_ns;   /* when cron next sends a STATUS line */
} notify;

/* notify_open reads $NOTIFY_SOCKET (a path, or "@name" for the abstract
 * namespace) and $WATCHDOG_USEC (honoured when $WATCHDOG_PID is unset or
 * names this process), and unsets them so that children do not inherit
 * them. Without $NOTIFY_SOCKET, n->fd is -1 and every call below does
 * nothing. Never fails: a socket it cannot make is logged once and the
 * broker runs without a manager. */
void notify_open(notify *n, uint64_t now_ns);

/* notify_send sends state (one or more "KEY=value" lines) as one datagram.
 * Returns 0, or -1 (logged at debug: the manager may be gone). */
int notify_send(notify *n, const char *state);

/* notify_sendf formats state like printf and sends it. */
int notify_sendf(notify *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* notify_watchdog_tick sends WATCHDOG=1 when it is due at now_ns (every
 * half of WATCHDOG_USEC) and returns when it next is (UINT64_MAX: never). */
uint64_t notify_watchdog_tick(notify *n, uint64_t now_ns);

/* notify_close closes the socket; accepts a notify never opened (fd -1). */
void notify_close(notify *n);

#endif /* SLUICE_NOTIFY_H */
