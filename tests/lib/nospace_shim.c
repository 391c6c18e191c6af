/*
 * nospace_shim.c - an LD_PRELOAD library that makes the disk full on demand
 * for the LMDB data file of the process it is loaded into.
 *
 * While the file named by $SLUICE_NOSPACE_FLAG exists, every write to a
 * descriptor of a file whose path ends in "data.mdb", at an offset past its
 * two meta pages (8 KiB: the meta pages are rewritten in place, which a full
 * file system still allows), fails with ENOSPC, as the page writes of a
 * commit do on a full disk. Everything else goes through. test_nospace
 * creates and removes the flag file to fill and free the "disk".
 *
 * Wrapped: write, pwrite, pwrite64, writev, pwritev. Built like the
 * power-loss shim (-fPIC -shared -ldl) and never sanitized.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define META_BYTES 8192

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);

static void setup(void)
{
    if (real_write)
        return;
    real_pwrite = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
    real_pwrite64 = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite64");
    real_writev = (ssize_t (*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
    real_pwritev = (ssize_t (*)(int, const struct iovec *, int, off_t))dlsym(RTLD_NEXT, "pwritev");
    real_write = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
}

/* full tells whether a write to fd at off must fail with ENOSPC (off < 0:
 * at the descriptor's position). */
static int full(int fd, off_t off)
{
    const char *flag = getenv("SLUICE_NOSPACE_FLAG");
    int saved = errno;
    if (!flag || access(flag, F_OK) != 0) {
        errno = saved;
        return 0;
    }
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    errno = saved;
    if (n < 8)
        return 0;
    path[n] = '\0';
    if (strcmp(path + n - 8, "data.mdb") != 0)
        return 0;
    if (off < 0)
        off = lseek(fd, 0, SEEK_CUR);
    errno = saved;
    return off >= META_BYTES;
}

ssize_t write(int fd, const void *buf, size_t n)
{
    setup();
    if (full(fd, -1)) {
        errno = ENOSPC;
        return -1;
    }
    return real_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    setup();
    if (full(fd, off)) {
        errno = ENOSPC;
        return -1;
    }
    return real_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    setup();
    if (full(fd, off)) {
        errno = ENOSPC;
        return -1;
    }
    return real_pwrite64(fd, buf, n, off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    setup();
    if (full(fd, -1)) {
        errno = ENOSPC;
        return -1;
    }
    return real_writev(fd, iov, cnt);
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    setup();
    if (full(fd, off)) {
        errno = ENOSPC;
        return -1;
    }
    return real_pwritev(fd, iov, cnt, off);
}
