/*
 * powerloss_shim.c - an LD_PRELOAD library that makes the process it is
 * loaded into lose power, as far as its LMDB data file is concerned.
 *
 * Built as a shared object (-fPIC -shared -ldl) and loaded into sluiced by
 * campaign_powerloss. It wraps open/open64/openat/openat64 to notice every
 * descriptor of a file whose path ends in "data.mdb" (LMDB opens it twice:
 * once read-write, once write-only with O_DSYNC for the meta pages; both map
 * to one file by device and inode), and of the broker's write-ahead log,
 * "wal.log" (made as "wal.log.new" and renamed: the same inode). Each file
 * loses its unsynced writes on its own, as a disk would. The lock file is not data and is left
 * alone. On those descriptors it wraps write, writev, pwrite, pwrite64,
 * pwritev, pwritev64 and pwritev2, and fsync, fdatasync and msync (of a
 * mapping of the file).
 *
 * The model. Each file keeps a log of the writes made since its last sync:
 * offset, length and the bytes they replaced (read with pread before the
 * write is let through; bytes past the end of the file read as "did not
 * exist"). Writes are logged in pieces aligned to POWERLOSS_GRAIN bytes
 * (default 4096, a page), so a multi-page write can be torn. A successful
 * fsync or fdatasync makes the file's log durable: it is emptied. A write
 * through an O_DSYNC or O_SYNC descriptor is durable when it returns, so it
 * is logged as "durable": never undone, and it shields the bytes it covers
 * from the undoing of older writes. Such a write is also a sync: it counts
 * toward POWERLOSS_AFTER_SYNCS, and when it is the N-th, power goes while
 * it is under way: it is written, logged as not durable (so it may be
 * undone or torn like any other), and then the loss happens (LMDB writes
 * its meta page so, and the broker its log records with O_DIRECT).
 *
 * Power loss. When triggered, each file's log is walked newest first and
 * every piece is kept or undone at random (POWERLOSS_KEEP_PCT percent kept,
 * default 50; durable pieces are always kept). Undoing a piece writes back
 * the bytes it replaced, except where a newer kept piece covers them, since
 * the newer bytes are what a disk that kept that write would show; bytes a
 * piece appended past the old end of file are zeroed, and half the time the
 * file is cut back to the largest of its synced size and the ends of its
 * kept pieces. Then one line goes to stderr and the process calls _exit(9)
 * without syncing anything.
 *
 * Triggers: SIGUSR1 (the handler does it at once when no wrapper is busy,
 * else the busy wrapper does it when it finishes its call), the N-th sync of
 * a tracked file (POWERLOSS_AFTER_SYNCS=N: that sync does not happen, or
 * that O_DSYNC write does not become durable), the
 * N-th tracked write or sync (POWERLOSS_AFTER_OPS=N), or a log larger than
 * POWERLOSS_MAX_MB (default 1024). POWERLOSS_SEED seeds the choice.
 *
 * Control mode (POWERLOSS_CONTROL=1): fsync and fdatasync of a tracked file
 * return success without syncing and without emptying the log, and O_DSYNC
 * writes are logged like any other, which is what a broker that commits
 * without syncing would leave behind. A loss then can undo confirmed
 * commits: the campaign uses it to show that it can see a loss.
 *
 * Concurrency: one spin lock (an atomic word) guards the tables and is held
 * across each wrapped write or sync, so a loss never races a write in
 * another thread. The signal handler only ever tries the lock; it never
 * waits, allocates or calls stdio. Descriptors are checked against a table
 * of atomics first, so the many writes to other descriptors (ZeroMQ's
 * eventfds, sockets, the log) take no lock.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define FDS_MAX     32
#define FILES_MAX   4
#define MAPS_MAX    16
#define PIECES_MAX  512   /* pieces of one undo left to write (work stack) */
#define EXIT_CODE   9

/* ---- the real functions ---- */

static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_close)(int);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static ssize_t (*real_pwritev64)(int, const struct iovec *, int, off_t);
static ssize_t (*real_pwritev2)(int, const struct iovec *, int, off_t, int);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_msync)(void *, size_t, int);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);

#define RESOLVE(name) \
    do { if (!real_##name) real_##name = dlsym(RTLD_NEXT, #name); } while (0)

static void resolve(void)
{
    RESOLVE(open); RESOLVE(open64); RESOLVE(openat); RESOLVE(openat64); RESOLVE(close);
    RESOLVE(write); RESOLVE(writev); RESOLVE(pwrite); RESOLVE(pwrite64); RESOLVE(pwritev);
    RESOLVE(pwritev64); RESOLVE(pwritev2); RESOLVE(fsync); RESOLVE(fdatasync); RESOLVE(msync);
    RESOLVE(mmap); RESOLVE(munmap);
}

/* ---- state ---- */

typedef struct piece {
    off_t off;
    size_t len;      /* bytes written */
    size_t old_len;  /* of them, bytes that existed before (the rest appended) */
    size_t data;     /* where the old bytes are in the arena */
    int durable;     /* written through an O_DSYNC descriptor (normal mode) */
    int kept;        /* decided at the loss */
} piece;

typedef struct file {
    int used;
    dev_t dev;
    ino_t ino;
    int fd;            /* our own read-write descriptor: old bytes, undo */
    off_t synced_size; /* size at the last sync (or when first opened) */
    piece *log;
    size_t n, cap;
    unsigned char *arena;
    size_t arena_len, arena_cap;
} file;

typedef struct map {
    uintptr_t addr;
    size_t len;
    int file;          /* -1: free slot */
} map;

static atomic_int fd_num[FDS_MAX];   /* tracked descriptors; -1 free (lock-free lookup) */
static int fd_file[FDS_MAX];         /* its file */
static int fd_dsync[FDS_MAX];        /* opened O_DSYNC or O_SYNC */
static file files[FILES_MAX];
static map maps[MAPS_MAX];

static atomic_int lock_word;
static __thread int inside;          /* this thread holds the lock */
static volatile sig_atomic_t pending;
static int ready;
static int control;
static unsigned keep_pct = 50;
static size_t grain = 4096;
static size_t max_log_bytes = (size_t)1024 << 20;
static uint64_t after_syncs, after_ops, syncs, ops;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static void lock(void)
{
    while (atomic_exchange_explicit(&lock_word, 1, memory_order_acquire))
        sched_yield();
    inside = 1;
}

static int trylock(void)
{
    if (atomic_exchange_explicit(&lock_word, 1, memory_order_acquire))
        return 0;
    inside = 1;
    return 1;
}

static void power_loss(const char *reason);

/* unlock lets go of the lock, unless a loss was asked for meanwhile: then
 * this thread, still holding it, carries the loss out. */
static void unlock(void)
{
    if (pending)
        power_loss("signal");
    inside = 0;
    atomic_store_explicit(&lock_word, 0, memory_order_release);
    /* a signal that came between the check and the release found the lock
     * taken and left the loss to us */
    if (pending && trylock())
        power_loss("signal");
}

static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 10) : dflt;
}

static void on_usr1(int sig)
{
    (void)sig;
    pending = 1;
    if (trylock())
        power_loss("signal");
    /* else the thread in a wrapper does it as it leaves */
}

__attribute__((constructor)) static void init(void)
{
    resolve();
    for (int i = 0; i < FDS_MAX; i++)
        atomic_store(&fd_num[i], -1);
    for (int i = 0; i < MAPS_MAX; i++)
        maps[i].file = -1;
    control = env_u64("POWERLOSS_CONTROL", 0) != 0;
    keep_pct = (unsigned)env_u64("POWERLOSS_KEEP_PCT", 50);
    grain = (size_t)env_u64("POWERLOSS_GRAIN", 4096);
    if (grain == 0)
        grain = 4096;
    max_log_bytes = (size_t)env_u64("POWERLOSS_MAX_MB", 1024) << 20;
    after_syncs = env_u64("POWERLOSS_AFTER_SYNCS", 0);
    after_ops = env_u64("POWERLOSS_AFTER_OPS", 0);
    uint64_t seed = env_u64("POWERLOSS_SEED", (uint64_t)getpid() * 2654435761u);
    rng ^= seed * 0xbf58476d1ce4e5b9ull;
    if (!rng)
        rng = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    ready = 1;
}

/* ---- descriptors ---- */

static int fd_slot(int fd)
{
    if (fd < 0 || !ready || inside)
        return -1;
    for (int i = 0; i < FDS_MAX; i++)
        if (atomic_load_explicit(&fd_num[i], memory_order_acquire) == fd)
            return i;
    return -1;
}

/* ends_with tells whether path is name or ends in "/name". */
static int ends_with(const char *path, const char *name)
{
    size_t n = strlen(path), k = strlen(name);
    return n >= k && strcmp(path + n - k, name) == 0 && (n == k || path[n - k - 1] == '/');
}

static int is_data_path(const char *path)
{
    return path && (ends_with(path, "data.mdb") || ends_with(path, "wal.log") || ends_with(path, "wal.log.new"));
}

/* track notes a new descriptor of a data file opened from (dirfd, path). */
static void track(int dirfd, const char *path, int fd, int flags)
{
    struct stat st;
    if (fd < 0 || !ready || !is_data_path(path) || fstat(fd, &st) != 0)
        return;
    lock();
    int f = -1;
    for (int i = 0; i < FILES_MAX && f < 0; i++)
        if (files[i].used && files[i].dev == st.st_dev && files[i].ino == st.st_ino)
            f = i;
    for (int i = 0; i < FILES_MAX && f < 0; i++)
        if (!files[i].used) {
            int own = (int)syscall(SYS_openat, dirfd, path, O_RDWR | O_CLOEXEC);
            if (own < 0)
                break;
            files[i] = (file){.used = 1, .dev = st.st_dev, .ino = st.st_ino, .fd = own,
                              .synced_size = st.st_size};
            f = i;
        }
    for (int i = 0; i < FDS_MAX && f >= 0; i++)
        if (atomic_load(&fd_num[i]) == -1) {
            fd_file[i] = f;
            fd_dsync[i] = (flags & (O_DSYNC | O_SYNC)) != 0;
            atomic_store_explicit(&fd_num[i], fd, memory_order_release);
            break;
        }
    unlock();
}

/* ---- the log ---- */

static int arena_need(file *f, size_t more)
{
    if (f->arena_len + more <= f->arena_cap)
        return 0;
    size_t cap = f->arena_cap ? f->arena_cap : 1 << 20;
    while (cap < f->arena_len + more)
        cap *= 2;
    unsigned char *p = realloc(f->arena, cap);
    if (!p)
        return -1;
    f->arena = p;
    f->arena_cap = cap;
    return 0;
}

static int log_need(file *f)
{
    if (f->n < f->cap)
        return 0;
    size_t cap = f->cap ? f->cap * 2 : 1024;
    piece *p = realloc(f->log, cap * sizeof *p);
    if (!p)
        return -1;
    f->log = p;
    f->cap = cap;
    return 0;
}

static size_t log_bytes(void)
{
    size_t n = 0;
    for (int i = 0; i < FILES_MAX; i++)
        n += files[i].arena_len + files[i].n * sizeof(piece);
    return n;
}

/* record logs a write of len bytes at off to file f, in grain-aligned
 * pieces, reading the bytes it will replace. Locked. */
static void record(int f, off_t off, size_t len, int durable)
{
    file *fl = &files[f];
    struct stat st;
    off_t size = fstat(fl->fd, &st) == 0 ? st.st_size : 0;
    if (log_bytes() + len > max_log_bytes)
        power_loss("log full");
    while (len > 0) {
        size_t room = grain - (size_t)(off % (off_t)grain);
        size_t n = len < room ? len : room;
        size_t old = off >= size ? 0 : (size_t)(size - off) < n ? (size_t)(size - off) : n;
        if (log_need(fl) != 0 || arena_need(fl, old) != 0)
            power_loss("out of memory");
        if (old && pread(fl->fd, fl->arena + fl->arena_len, old, off) != (ssize_t)old)
            power_loss("cannot read old bytes");
        fl->log[fl->n++] = (piece){.off = off, .len = n, .old_len = old, .data = fl->arena_len,
                                   .durable = durable};
        fl->arena_len += old;
        off += (off_t)n;
        len -= n;
    }
}

/* written trims the pieces just recorded (from index first on) to the bytes
 * the write really wrote. Locked. */
static void written(int f, size_t first, off_t off, ssize_t done)
{
    file *fl = &files[f];
    off_t end = done > 0 ? off + done : off;
    size_t keep = first;
    for (size_t i = first; i < fl->n; i++) {
        piece *p = &fl->log[i];
        if (p->off >= end)
            continue;
        if (p->off + (off_t)p->len > end) {
            p->len = (size_t)(end - p->off);
            if (p->old_len > p->len)
                p->old_len = p->len;
        }
        fl->log[keep++] = *p;
    }
    fl->n = keep;
}

static void synced(int f)
{
    file *fl = &files[f];
    struct stat st;
    fl->n = 0;
    fl->arena_len = 0;
    if (fstat(fl->fd, &st) == 0)
        fl->synced_size = st.st_size;
}

/* ---- the loss ---- */

typedef struct tally {
    uint64_t pieces, kept, undone, bytes, truncated;
} tally;

static void put_u64(char **p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *(*p)++ = tmp[--n];
}

static void put_str(char **p, const char *s)
{
    while (*s)
        *(*p)++ = *s++;
}

static void restore(file *fl, const piece *p, off_t lo, off_t hi, tally *t)
{
    static const unsigned char zeros[4096];
    off_t old_end = p->off + (off_t)p->old_len;
    if (lo < old_end) {
        off_t e = hi < old_end ? hi : old_end;
        real_pwrite(fl->fd, fl->arena + p->data + (size_t)(lo - p->off), (size_t)(e - lo), lo);
        t->bytes += (uint64_t)(e - lo);
        lo = e;
    }
    while (lo < hi) {
        size_t n = (size_t)(hi - lo) < sizeof zeros ? (size_t)(hi - lo) : sizeof zeros;
        real_pwrite(fl->fd, zeros, n, lo);
        t->bytes += n;
        lo += (off_t)n;
    }
}

/* A part of a piece still to restore; pieces before from need no check. */
typedef struct range {
    off_t lo, hi;
    size_t from;
} range;

/* undo_piece restores piece i of fl, except where a newer kept piece covers
 * its bytes. Pieces older than a split were already checked against the
 * whole range, so each part resumes the search after the splitting piece. */
static void undo_piece(file *fl, size_t i, tally *t)
{
    range stack[PIECES_MAX];
    int top = 0;
    const piece *p = &fl->log[i];
    stack[top++] = (range){p->off, p->off + (off_t)p->len, i + 1};
    while (top > 0) {
        range w = stack[--top];
        size_t j = w.from;
        for (; j < fl->n; j++) {
            const piece *q = &fl->log[j];
            if (q->kept && q->off < w.hi && q->off + (off_t)q->len > w.lo)
                break;
        }
        if (j == fl->n) {
            restore(fl, p, w.lo, w.hi, t);
            continue;
        }
        const piece *q = &fl->log[j];
        if (top + 2 > PIECES_MAX)
            continue; /* pathological overlap: leave these bytes as written */
        if (w.lo < q->off)
            stack[top++] = (range){w.lo, q->off, j + 1};
        if (q->off + (off_t)q->len < w.hi)
            stack[top++] = (range){q->off + (off_t)q->len, w.hi, j + 1};
    }
}

static void undo_file(file *fl, tally *t)
{
    off_t keep_size = fl->synced_size;
    for (size_t i = 0; i < fl->n; i++) {
        piece *p = &fl->log[i];
        p->kept = p->durable || next_random() % 100 < keep_pct;
        t->pieces++;
        if (p->kept) {
            t->kept++;
            if (p->off + (off_t)p->len > keep_size)
                keep_size = p->off + (off_t)p->len;
        }
    }
    for (size_t i = fl->n; i-- > 0;)
        if (!fl->log[i].kept) {
            undo_piece(fl, i, t);
            t->undone++;
        }
    struct stat st;
    if (fstat(fl->fd, &st) == 0 && st.st_size > keep_size && next_random() % 2 == 0) {
        if (ftruncate(fl->fd, keep_size) == 0)
            t->truncated++;
    }
}

/* power_loss undoes a random part of every unsynced write and ends the
 * process. The lock is held. Async-signal-safe: no allocation, no stdio. */
static void power_loss(const char *reason)
{
    tally t = {0};
    for (int i = 0; i < FILES_MAX; i++)
        if (files[i].used)
            undo_file(&files[i], &t);
    char line[256], *p = line;
    put_str(&p, "powerloss: reason=");
    put_str(&p, reason);
    put_str(&p, control ? " mode=control" : " mode=normal");
    put_str(&p, " pieces=");
    put_u64(&p, t.pieces);
    put_str(&p, " kept=");
    put_u64(&p, t.kept);
    put_str(&p, " undone=");
    put_u64(&p, t.undone);
    put_str(&p, " bytes=");
    put_u64(&p, t.bytes);
    put_str(&p, " truncated=");
    put_u64(&p, t.truncated);
    put_str(&p, " syncs=");
    put_u64(&p, syncs);
    put_str(&p, "\n");
    if (real_write)
        real_write(2, line, (size_t)(p - line));
    _exit(EXIT_CODE);
}

/* op counts a tracked write or sync and fires the op trigger. Locked. */
static void op(void)
{
    if (after_ops && ++ops >= after_ops)
        power_loss("ops");
}

/* ---- wrappers ---- */

static int open_mode(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int mode = open_mode(flags, ap);
    va_end(ap);
    resolve();
    int fd = real_open(path, flags, mode);
    track(AT_FDCWD, path, fd, flags);
    return fd;
}

int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int mode = open_mode(flags, ap);
    va_end(ap);
    resolve();
    int fd = real_open64(path, flags, mode);
    track(AT_FDCWD, path, fd, flags);
    return fd;
}

int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int mode = open_mode(flags, ap);
    va_end(ap);
    resolve();
    int fd = real_openat(dirfd, path, flags, mode);
    track(dirfd, path, fd, flags);
    return fd;
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int mode = open_mode(flags, ap);
    va_end(ap);
    resolve();
    int fd = real_openat64(dirfd, path, flags, mode);
    track(dirfd, path, fd, flags);
    return fd;
}

int close(int fd)
{
    resolve();
    int s = fd_slot(fd);
    if (s >= 0) {
        lock();
        atomic_store(&fd_num[s], -1);
        unlock();
    }
    return real_close(fd);
}

static size_t iov_bytes(const struct iovec *iov, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    return total;
}

/* The write wrappers share one shape: look the descriptor up without the
 * lock; if tracked, lock, count, log the range, write, trim the log to what
 * was written, unlock. */
#define TRACKED_WRITE(fd, off_expr, len_expr, call)                                 \
    do {                                                                            \
        resolve();                                                                  \
        int s_ = fd_slot(fd);                                                       \
        if (s_ < 0)                                                                 \
            return call;                                                            \
        lock();                                                                     \
        op();                                                                       \
        int f_ = fd_file[s_];                                                       \
        off_t off_ = (off_expr);                                                    \
        size_t first_ = files[f_].n;                                                \
        int lost_ = fd_dsync[s_] && ++syncs == after_syncs; /* power goes mid-write */ \
        if (off_ >= 0)                                                              \
            record(f_, off_, (len_expr), fd_dsync[s_] && !control && !lost_);       \
        ssize_t r_ = call;                                                          \
        int e_ = errno;                                                             \
        if (off_ >= 0)                                                              \
            written(f_, first_, off_, r_);                                          \
        if (lost_)                                                                  \
            power_loss("syncs");                                                    \
        unlock();                                                                   \
        errno = e_;                                                                 \
        return r_;                                                                  \
    } while (0)

ssize_t write(int fd, const void *buf, size_t len)
{
    TRACKED_WRITE(fd, lseek(fd, 0, SEEK_CUR), len, real_write(fd, buf, len));
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
    TRACKED_WRITE(fd, lseek(fd, 0, SEEK_CUR), iov_bytes(iov, n), real_writev(fd, iov, n));
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
    TRACKED_WRITE(fd, off, len, real_pwrite(fd, buf, len, off));
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
    TRACKED_WRITE(fd, off, len, real_pwrite64(fd, buf, len, off));
}

ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
    TRACKED_WRITE(fd, off, iov_bytes(iov, n), real_pwritev(fd, iov, n, off));
}

ssize_t pwritev64(int fd, const struct iovec *iov, int n, off_t off)
{
    TRACKED_WRITE(fd, off, iov_bytes(iov, n), real_pwritev64(fd, iov, n, off));
}

ssize_t pwritev2(int fd, const struct iovec *iov, int n, off_t off, int flags)
{
    TRACKED_WRITE(fd, off < 0 ? lseek(fd, 0, SEEK_CUR) : off, iov_bytes(iov, n),
                  real_pwritev2(fd, iov, n, off, flags));
}

/* sync_file is fsync/fdatasync of tracked file f: in normal mode the real
 * call and, when it succeeds, an empty log; in control mode nothing. */
static int sync_file(int f, int fd, int (*real)(int))
{
    lock();
    op();
    if (++syncs == after_syncs)
        power_loss("syncs");
    int rc = 0, e = 0;
    if (!control) {
        rc = real(fd);
        e = errno;
        if (rc == 0)
            synced(f);
    }
    unlock();
    errno = e;
    return rc;
}

int fsync(int fd)
{
    resolve();
    int s = fd_slot(fd);
    return s < 0 ? real_fsync(fd) : sync_file(fd_file[s], fd, real_fsync);
}

int fdatasync(int fd)
{
    resolve();
    int s = fd_slot(fd);
    return s < 0 ? real_fdatasync(fd) : sync_file(fd_file[s], fd, real_fdatasync);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    resolve();
    void *p = real_mmap(addr, len, prot, flags, fd, off);
    int s = fd_slot(fd);
    if (s >= 0 && p != MAP_FAILED) {
        lock();
        for (int i = 0; i < MAPS_MAX; i++)
            if (maps[i].file < 0) {
                maps[i] = (map){(uintptr_t)p, len, fd_file[s]};
                break;
            }
        unlock();
    }
    return p;
}

int munmap(void *addr, size_t len)
{
    resolve();
    if (ready && !inside) {
        lock();
        for (int i = 0; i < MAPS_MAX; i++)
            if (maps[i].file >= 0 && maps[i].addr == (uintptr_t)addr)
                maps[i].file = -1;
        unlock();
    }
    return real_munmap(addr, len);
}

int msync(void *addr, size_t len, int flags)
{
    resolve();
    int f = -1;
    if (ready && !inside) {
        lock();
        for (int i = 0; i < MAPS_MAX && f < 0; i++)
            if (maps[i].file >= 0 && (uintptr_t)addr >= maps[i].addr &&
                (uintptr_t)addr < maps[i].addr + maps[i].len)
                f = maps[i].file;
        if (f >= 0) {
            op();
            if (++syncs == after_syncs)
                power_loss("syncs");
            int rc = control ? 0 : real_msync(addr, len, flags);
            int e = errno;
            if (rc == 0 && !control && (flags & MS_SYNC))
                synced(f);
            unlock();
            errno = e;
            return rc;
        }
        unlock();
    }
    return real_msync(addr, len, flags);
}
