/*
 * bench_ideal.c - the ideal drain: the most four consumers acking one
 * delivery at a time could take from a server that does nothing else, on
 * this machine, now.
 *
 * The drain 4 x credit 1 over the stream endpoint is bounded by round
 * trips, not by the disk: each consumer has one delivery out, acks it, and
 * waits for the next, so the rate is four over the time of a round trip
 * through the kernel and two thread wake-ups, which a busy host stretches
 * to twice what a quiet one takes. This row measures that bound itself, the
 * way the ideal log measures the disk's: IDEAL_CLIENTS threads, each with a
 * Unix stream socket to one server thread that waits in epoll, and each
 * round trip an ack-sized frame in (IDEAL_ACK_BYTES) and a delivery-sized
 * frame back (IDEAL_DELIVER_BYTES: a 100-byte body and its fields). No
 * decoding, no store, no bookkeeping: what remains of the drain's time per
 * message beyond this row's is Sluice's own.
 *
 * Bounds: the clients stop at the deadline or a signal, and the server once
 * they all have (or a little after the deadline); a client's read waits at
 * most BENCH_CORE_CLIENT_TIMEOUT_MS (SO_RCVTIMEO), the server's epoll_wait
 * 50 ms at a time, so a stuck side fails the row, never hangs.
 */
#include "bench_ideal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "bench_core.h"

#define IDEAL_CLIENTS       4
#define IDEAL_ACK_BYTES     32
#define IDEAL_DELIVER_BYTES 160
#define IDEAL_EVENTS        (IDEAL_CLIENTS + 1)

typedef struct ideal {
    struct sockaddr_un addr;
    int listen_fd;
    int64_t deadline_ns;
    atomic_bool stop;       /* a side failed: all end */
    atomic_int done;        /* clients that have ended: the server serves until all have */
    atomic_uint_fast64_t trips;
} ideal;

static bool ideal_over(ideal *d)
{
    return atomic_load(&d->stop) || bench_core_stopping() || bench_core_now_ns() >= d->deadline_ns;
}

/* serve answers each whole ack read on fd with a delivery-sized frame;
 * *have counts the bytes of a partial ack. Returns 0, or -1 (the peer went
 * away, or a call failed). */
static int serve(int fd, size_t *have)
{
    static const char deliver[IDEAL_DELIVER_BYTES];
    char buf[IDEAL_ACK_BYTES * IDEAL_CLIENTS];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0)
        return n < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : -1;
    *have += (size_t)n;
    for (; *have >= IDEAL_ACK_BYTES; *have -= IDEAL_ACK_BYTES)
        if (write(fd, deliver, sizeof deliver) != (ssize_t)sizeof deliver)
            return -1; /* a client reads each reply before it asks again: room is always there */
    return 0;
}

static void *server_run(void *arg)
{
    ideal *d = arg;
    int ep = epoll_create1(EPOLL_CLOEXEC), conns[IDEAL_CLIENTS], nconns = 0;
    size_t have[IDEAL_CLIENTS] = {0};
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = IDEAL_CLIENTS};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, d->listen_fd, &ev) != 0) {
        bench_core_fail("ideal drain: epoll: %s", strerror(errno));
        atomic_store(&d->stop, true);
    }
    int64_t last_ns = d->deadline_ns + 2 * (int64_t)BENCH_CORE_CLIENT_TIMEOUT_MS * 1000000;
    while (atomic_load(&d->done) < IDEAL_CLIENTS && !atomic_load(&d->stop) && bench_core_now_ns() < last_ns) {
        struct epoll_event got[IDEAL_EVENTS];
        int n = epoll_wait(ep, got, IDEAL_EVENTS, 50);
        for (int i = 0; i < n && !atomic_load(&d->stop); i++) {
            uint32_t k = got[i].data.u32;
            if (k == IDEAL_CLIENTS) { /* a client connects */
                int fd = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                struct epoll_event cev = {.events = EPOLLIN, .data.u32 = (uint32_t)nconns};
                if (fd >= 0 && nconns < IDEAL_CLIENTS && epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev) == 0)
                    conns[nconns++] = fd;
                else if (fd >= 0)
                    close(fd);
            } else if (serve(conns[k], &have[k]) != 0 && !ideal_over(d)) {
                bench_core_fail("ideal drain: a client went away");
                atomic_store(&d->stop, true);
            }
        }
    }
    for (int i = 0; i < nconns; i++)
        close(conns[i]);
    if (ep >= 0)
        close(ep);
    return NULL;
}

static void *client_run(void *arg)
{
    ideal *d = arg;
    static const char ack[IDEAL_ACK_BYTES];
    char reply[IDEAL_DELIVER_BYTES];
    struct timeval tv = {.tv_sec = BENCH_CORE_CLIENT_TIMEOUT_MS / 1000,
                         .tv_usec = (BENCH_CORE_CLIENT_TIMEOUT_MS % 1000) * 1000};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
        connect(fd, (const struct sockaddr *)&d->addr, sizeof d->addr) != 0) {
        bench_core_fail("ideal drain: cannot connect: %s", strerror(errno));
        atomic_store(&d->stop, true);
    }
    for (uint64_t i = 0; i < BENCH_CORE_MAX_OPS && !ideal_over(d); i++) {
        if (write(fd, ack, sizeof ack) != (ssize_t)sizeof ack) {
            atomic_store(&d->stop, true);
            break;
        }
        size_t got = 0;
        while (got < sizeof reply && !atomic_load(&d->stop)) {
            ssize_t n = read(fd, reply + got, sizeof reply - got);
            if (n <= 0 && !(n < 0 && errno == EINTR)) {
                bench_core_fail("ideal drain: no reply within %d ms", BENCH_CORE_CLIENT_TIMEOUT_MS);
                atomic_store(&d->stop, true);
                break;
            }
            got += n > 0 ? (size_t)n : 0;
        }
        if (got == sizeof reply && bench_core_now_ns() < d->deadline_ns)
            atomic_fetch_add(&d->trips, 1);
    }
    if (fd >= 0)
        close(fd);
    atomic_fetch_add(&d->done, 1);
    return NULL;
}

int bench_ideal_drain(const char *dir, int seconds, double *per_s)
{
    ideal d = {.addr = {.sun_family = AF_UNIX}, .listen_fd = -1};
    if ((size_t)snprintf(d.addr.sun_path, sizeof d.addr.sun_path, "%s/ideal.sock", dir) >= sizeof d.addr.sun_path)
        return bench_core_fail("ideal drain: the directory's path is too long for a socket");
    d.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (d.listen_fd < 0 || bind(d.listen_fd, (const struct sockaddr *)&d.addr, sizeof d.addr) != 0 ||
        listen(d.listen_fd, IDEAL_CLIENTS) != 0) {
        int e = errno;
        if (d.listen_fd >= 0)
            close(d.listen_fd);
        return bench_core_fail("ideal drain: cannot listen on %s: %s", d.addr.sun_path, strerror(e));
    }
    int64_t start_ns = bench_core_now_ns();
    d.deadline_ns = start_ns + seconds * BENCH_CORE_NS_PER_S;
    bench_core_thread t[1 + IDEAL_CLIENTS] = {{.fn = server_run, .arg = &d}};
    for (int i = 1; i <= IDEAL_CLIENTS; i++)
        t[i] = (bench_core_thread){.fn = client_run, .arg = &d};
    int rc = bench_core_threads_start(t, 1 + IDEAL_CLIENTS);
    if (rc != 0)
        atomic_store(&d.stop, true);
    bench_core_threads_join(t, 1 + IDEAL_CLIENTS);
    close(d.listen_fd);
    unlink(d.addr.sun_path);
    if (rc != 0 || atomic_load(&d.stop))
        return -1;
    *per_s = bench_core_per_s(atomic_load(&d.trips), d.deadline_ns - start_ns);
    return 0;
}
