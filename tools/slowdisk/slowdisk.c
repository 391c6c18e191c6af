/*
 * slowdisk.c - a slow disk on demand: an LD_PRELOAD shim that makes every
 * flush of the process it is loaded into take longer by a set delay.
 *
 *   LD_PRELOAD=build/rel/slowdisk.so SLUICE_SLOW_FLUSH_US=1000 bin/sluiced ...
 *
 * What counts as a flush: fdatasync, fsync, sync_file_range with
 * SYNC_FILE_RANGE_WAIT_AFTER, msync with MS_SYNC, and every write, pwrite,
 * writev or pwritev to a descriptor opened with O_DSYNC or O_SYNC (LMDB
 * writes its meta page through such a handle: one device flush per commit).
 * The real call runs first, then the calling thread sleeps the delay, as a
 * device whose flush is slow would keep it waiting. Nothing else changes:
 * the data reach the disk exactly as without the shim, so durability is the
 * real disk's.
 *
 * SLUICE_SLOW_FLUSH_US (0..1,000,000, read once, at the first call) is the
 * delay in microseconds; unset, 0 or malformed means no delay. The shim
 * counts what it slowed in SLUICE_SLOW_FLUSH_COUNT_FILE when that is set: at
 * exit it writes "flushes N\n" there, so a test can check that it acted.
 *
 * Costs: one fcntl(F_GETFL) per write to tell an O_DSYNC descriptor (a
 * syscall of well under a microsecond); nothing per read. Thread-safe: the
 * delay is read with a once-guard, the count is atomic.
 *
 * Never built with sanitizers: it goes into an uninstrumented sluiced, as
 * the power-loss shim does (tests/campaign/powerloss_shim.c).
 */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define SLOW_MAX_US 1000000L

static pthread_once_t once = PTHREAD_ONCE_INIT;
static long delay_us;
static const char *count_path;
static atomic_ulong flushes;

static int (*real_fdatasync)(int);
static int (*real_fsync)(int);
static int (*real_sync_file_range)(int, off_t, off_t, unsigned int);
static int (*real_msync)(void *, size_t, int);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);

static void report(void)
{
    FILE *f = fopen(count_path, "w");
    if (f) {
        fprintf(f, "flushes %lu\n", atomic_load(&flushes));
        fclose(f);
    }
}

static void setup(void)
{
    real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    real_sync_file_range = (int (*)(int, off_t, off_t, unsigned int))dlsym(RTLD_NEXT, "sync_file_range");
    real_msync = (int (*)(void *, size_t, int))dlsym(RTLD_NEXT, "msync");
    real_write = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    real_pwrite = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
    real_writev = (ssize_t (*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
    real_pwritev = (ssize_t (*)(int, const struct iovec *, int, off_t))dlsym(RTLD_NEXT, "pwritev");
    const char *v = getenv("SLUICE_SLOW_FLUSH_US");
    char *end = NULL;
    long us = v ? strtol(v, &end, 10) : 0;
    delay_us = v && end != v && *end == '\0' && us > 0 && us <= SLOW_MAX_US ? us : 0;
    count_path = getenv("SLUICE_SLOW_FLUSH_COUNT_FILE");
    if (count_path && *count_path)
        atexit(report);
}

/* slow sleeps the delay after a flush, resuming after signals. */
static void slow(void)
{
    atomic_fetch_add(&flushes, 1);
    if (delay_us <= 0)
        return;
    struct timespec ts = {delay_us / 1000000L, (delay_us % 1000000L) * 1000L};
    int saved = errno;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    errno = saved;
}

/* dsync tells whether fd writes through to the device on every write. */
static int dsync(int fd)
{
    int saved = errno, fl = fcntl(fd, F_GETFL);
    errno = saved;
    return fl >= 0 && (fl & (O_DSYNC | O_SYNC));
}

int fdatasync(int fd)
{
    pthread_once(&once, setup);
    int rc = real_fdatasync(fd);
    slow();
    return rc;
}

int fsync(int fd)
{
    pthread_once(&once, setup);
    int rc = real_fsync(fd);
    slow();
    return rc;
}

int sync_file_range(int fd, off_t off, off_t n, unsigned int flags)
{
    pthread_once(&once, setup);
    int rc = real_sync_file_range(fd, off, n, flags);
    if (flags & SYNC_FILE_RANGE_WAIT_AFTER)
        slow();
    return rc;
}

int msync(void *addr, size_t len, int flags)
{
    pthread_once(&once, setup);
    int rc = real_msync(addr, len, flags);
    if (flags & MS_SYNC)
        slow();
    return rc;
}

ssize_t write(int fd, const void *buf, size_t n)
{
    pthread_once(&once, setup);
    ssize_t rc = real_write(fd, buf, n);
    if (dsync(fd))
        slow();
    return rc;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    pthread_once(&once, setup);
    ssize_t rc = real_pwrite(fd, buf, n, off);
    if (dsync(fd))
        slow();
    return rc;
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    return pwrite(fd, buf, n, off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    pthread_once(&once, setup);
    ssize_t rc = real_writev(fd, iov, cnt);
    if (dsync(fd))
        slow();
    return rc;
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    pthread_once(&once, setup);
    ssize_t rc = real_pwritev(fd, iov, cnt, off);
    if (dsync(fd))
        slow();
    return rc;
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
{
    return pwritev(fd, iov, cnt, off);
}
