/*
 * bench_flush.c - where a durable commit's time goes on this disk: the
 * flush experiments behind broker/DESIGN.md's "Where the time goes".
 *
 * A standalone program (build/rel/bench-flush, `make bench-flush`), not a
 * row of sluice-bench: it measures the file system and LMDB, never Sluice.
 * Each experiment runs N timed steps (default 2000) on files of its own in
 * DIR and prints the mean, p50 and p99 of one step, and steps per second.
 * The experiments take turns of BLOCK_STEPS steps, so that a shared disk's
 * drift (other work comes and goes) touches them all alike. The whole set
 * runs RUNS times (default 2): the disk's speed drifts over hours, so
 * compare ratios within one run.
 *
 *   append     4 KiB pwrite at the end of a growing file + fdatasync:
 *              every flush also writes the inode (its size changed).
 *   overwrite  the same, inside a file extended beforehand by written
 *              zeros (and fdatasync'd): no size or extent change.
 *   dsync      4 KiB pwrite through an O_DSYNC descriptor to one of two
 *              pages of a written file.
 *   dsync-meta the same with 120 bytes at LMDB's offsets (32 and 4128): what
 *              LMDB 0.9 writes for a commit's meta page.
 *   direct     the same with O_DIRECT as well (a FUA write, when the device
 *              has one).
 *   lmdb       one 100-byte put (increasing keys, as the broker appends)
 *              and mdb_txn_commit, default (durable) flags, fresh env.
 *   lmdb-ext   the same, the data file first extended by written zeros
 *              to EXT_BYTES (below the map size) and fdatasync'd.
 *   lmdb-b100  100 puts per commit (a busy batch), growing file; and
 *   -ext       pre-extended: a batch this size appends pages each commit.
 *   lmdb-nms   MDB_NOMETASYNC + mdb_env_sync per commit (two flushes
 *              still: the data's fdatasync, then the meta's).
 *   lmdb-pipe  MDB_NOMETASYNC alone, on the extended file: commit N's
 *              meta page becomes durable with commit N+1's data fdatasync,
 *              so under continuous load one flush per commit (a commit is
 *              confirmed one commit later).
 *   wal        a 200-byte record appended by pwrite inside a log file
 *              extended beforehand by written zeros + fdatasync: what a
 *              write-ahead log would pay per batch.
 *
 *   lmdb-nms-ext  the same on the extended file.
 *
 * Bounds: a run stops after N steps of each, or STEP_DEADLINE_S seconds
 * per experiment; every file is removed at the end (the directory too,
 * when this program made it: by default a new one in the current
 * directory, which must be on the data directory's file system to say
 * anything about it). Costs: about 20 x N flushes per run and 6 files of
 * EXT_BYTES of zeros (2000 steps at 0.4-1 ms a flush: one to three minutes
 * a run).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#define PAGE_BYTES      4096
#define REC_BYTES       200
#define VAL_BYTES       100
#define EXT_BYTES       ((off_t)64 << 20)  /* how far the files are extended beforehand */
#define MAP_BYTES       ((size_t)256 << 20)
#define STEP_DEADLINE_S 120
#define N_MAX           1000000
#define BLOCK_STEPS     20       /* steps of one experiment before the next takes its turn */

typedef struct exp_ctx {
    const char *name;    /* the experiment's: names its file or directory */
    int failed;
    char dir[512];
    char path[600];
    int fd;
    off_t off;
    unsigned char *buf;  /* PAGE_BYTES, page-aligned */
    MDB_env *env;
    MDB_dbi dbi;
    uint64_t key;
    unsigned flags;      /* LMDB env flags */
    int env_sync;        /* lmdb-nms: mdb_env_sync after each commit */
    int extend;          /* lmdb-ext, lmdb-pipe: extend the data file first */
    int puts;            /* puts per LMDB commit */
} exp_ctx;

typedef struct experiment {
    const char *name;
    const char *what;
    int (*setup)(exp_ctx *c);
    int (*step)(exp_ctx *c, int i);
    void (*teardown)(exp_ctx *c);
} experiment;

static int fail(const char *what, const char *path)
{
    fprintf(stderr, "bench-flush: %s %s: %s\n", what, path, strerror(errno));
    return -1;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* zero_fill writes zeros over [from, to) of fd in 1 MiB pieces, then
 * fdatasyncs: the blocks are allocated and written, not unwritten extents. */
static int zero_fill(int fd, off_t from, off_t to)
{
    static unsigned char zeros[1 << 20];
    while (from < to) {
        size_t n = (size_t)(to - from) < sizeof zeros ? (size_t)(to - from) : sizeof zeros;
        ssize_t w = pwrite(fd, zeros, n, from);
        if (w <= 0)
            return -1;
        from += w;
    }
    return fdatasync(fd);
}

static int file_open(exp_ctx *c, const char *name, int flags, off_t fill)
{
    snprintf(c->path, sizeof c->path, "%s/%s", c->dir, name);
    int fd = open(c->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return fail("cannot create", c->path);
    if (fill && zero_fill(fd, 0, fill) != 0) {
        close(fd);
        return fail("cannot fill", c->path);
    }
    close(fd);
    if ((c->fd = open(c->path, O_RDWR | O_CLOEXEC | flags)) < 0)
        return fail("cannot open", c->path);
    c->off = 0;
    return 0;
}

static void file_close(exp_ctx *c)
{
    close(c->fd);
    unlink(c->path);
}

/* ---- plain files ---- */

static int append_setup(exp_ctx *c) { return file_open(c, "append.dat", 0, 0); }
static int over_setup(exp_ctx *c) { return file_open(c, "over.dat", 0, EXT_BYTES); }
static int dsync_setup(exp_ctx *c) { return file_open(c, "dsync.dat", O_DSYNC, 2 * PAGE_BYTES); }
static int direct_setup(exp_ctx *c) { return file_open(c, "direct.dat", O_DSYNC | O_DIRECT, 2 * PAGE_BYTES); }
static int wal_setup(exp_ctx *c) { return file_open(c, "wal.dat", 0, EXT_BYTES); }

/* page_sync: 4 KiB at the next page (wrapping inside the extended file) and fdatasync. */
static int page_sync(exp_ctx *c, int i)
{
    c->buf[0] = (unsigned char)i;
    if (pwrite(c->fd, c->buf, PAGE_BYTES, c->off) != PAGE_BYTES || fdatasync(c->fd) != 0)
        return fail("pwrite+fdatasync", c->path);
    c->off = (c->off + PAGE_BYTES) % EXT_BYTES;
    return 0;
}

/* meta_write: 4 KiB through the O_DSYNC descriptor, pages 0 and 1 in turn. */
static int meta_write(exp_ctx *c, int i)
{
    c->buf[0] = (unsigned char)i;
    if (pwrite(c->fd, c->buf, PAGE_BYTES, (off_t)(i & 1) * PAGE_BYTES) != PAGE_BYTES)
        return fail("O_DSYNC pwrite", c->path);
    return 0;
}

/* meta_small: LMDB's meta write, 120 bytes into page 0 or 1 through the O_DSYNC descriptor. */
static int meta_small(exp_ctx *c, int i)
{
    c->buf[0] = (unsigned char)i;
    if (pwrite(c->fd, c->buf, 120, (off_t)(i & 1) * PAGE_BYTES + 32) != 120)
        return fail("O_DSYNC pwrite", c->path);
    return 0;
}

/* wal_append: one record after the last, inside the extended log, and fdatasync. */
static int wal_append(exp_ctx *c, int i)
{
    c->buf[0] = (unsigned char)i;
    if (pwrite(c->fd, c->buf, REC_BYTES, c->off) != REC_BYTES || fdatasync(c->fd) != 0)
        return fail("pwrite+fdatasync", c->path);
    c->off = (c->off + REC_BYTES) % (EXT_BYTES - REC_BYTES);
    return 0;
}

/* ---- LMDB ---- */

static int lmdb_fail(const char *what, int rc)
{
    fprintf(stderr, "bench-flush: lmdb: %s: %s\n", what, mdb_strerror(rc));
    return -1;
}

static int lmdb_setup(exp_ctx *c)
{
    MDB_txn *txn;
    int rc, fd;
    snprintf(c->path, sizeof c->path, "%s/%s", c->dir, c->name);
    if (mkdir(c->path, 0700) != 0)
        return fail("cannot create", c->path);
    if ((rc = mdb_env_create(&c->env)) != MDB_SUCCESS)
        return lmdb_fail("mdb_env_create", rc);
    if ((rc = mdb_env_set_mapsize(c->env, MAP_BYTES)) != MDB_SUCCESS ||
        (rc = mdb_env_open(c->env, c->path, c->flags, 0600)) != MDB_SUCCESS ||
        (rc = mdb_txn_begin(c->env, NULL, 0, &txn)) != MDB_SUCCESS)
        return lmdb_fail("opening", rc);
    if ((rc = mdb_dbi_open(txn, NULL, 0, &c->dbi)) != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        return lmdb_fail("mdb_dbi_open", rc);
    }
    if ((rc = mdb_txn_commit(txn)) != MDB_SUCCESS || (rc = mdb_env_sync(c->env, 1)) != MDB_SUCCESS)
        return lmdb_fail("first commit", rc);
    c->key = 0;
    if (c->extend) {
        struct stat st;
        if ((rc = mdb_env_get_fd(c->env, &fd)) != MDB_SUCCESS)
            return lmdb_fail("mdb_env_get_fd", rc);
        if (fstat(fd, &st) != 0 || zero_fill(fd, st.st_size, EXT_BYTES) != 0)
            return fail("cannot extend", c->path);
    }
    return 0;
}

/* lmdb_with sets the variant: env flags, pre-extended or not, explicit sync or not, puts per commit. */
static int lmdb_with(exp_ctx *c, unsigned flags, int extend, int env_sync, int puts)
{
    c->flags = flags;
    c->extend = extend;
    c->env_sync = env_sync;
    c->puts = puts;
    return lmdb_setup(c);
}

static int lmdb_default(exp_ctx *c) { return lmdb_with(c, 0, 0, 0, 1); }
static int lmdb_ext(exp_ctx *c) { return lmdb_with(c, 0, 1, 0, 1); }
static int lmdb_b100(exp_ctx *c) { return lmdb_with(c, 0, 0, 0, 100); }
static int lmdb_b100_ext(exp_ctx *c) { return lmdb_with(c, 0, 1, 0, 100); }
static int lmdb_nms(exp_ctx *c) { return lmdb_with(c, MDB_NOMETASYNC, 0, 1, 1); }
static int lmdb_nms_ext(exp_ctx *c) { return lmdb_with(c, MDB_NOMETASYNC, 1, 1, 1); }
static int lmdb_pipe(exp_ctx *c) { return lmdb_with(c, MDB_NOMETASYNC, 1, 0, 1); }

static int lmdb_commit(exp_ctx *c, int i)
{
    MDB_txn *txn;
    MDB_val val = {.mv_size = VAL_BYTES, .mv_data = c->buf};
    c->buf[0] = (unsigned char)i;
    int rc = mdb_txn_begin(c->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return lmdb_fail("mdb_txn_begin", rc);
    for (int p = 0; p < c->puts; p++) {
        uint64_t k = htobe64(++c->key);
        MDB_val key = {.mv_size = sizeof k, .mv_data = &k};
        if ((rc = mdb_put(txn, c->dbi, &key, &val, MDB_APPEND)) != MDB_SUCCESS) {
            mdb_txn_abort(txn);
            return lmdb_fail("mdb_put", rc);
        }
    }
    if ((rc = mdb_txn_commit(txn)) != MDB_SUCCESS)
        return lmdb_fail("mdb_txn_commit", rc);
    if (c->env_sync && (rc = mdb_env_sync(c->env, 1)) != MDB_SUCCESS)
        return lmdb_fail("mdb_env_sync", rc);
    return 0;
}

static void lmdb_teardown(exp_ctx *c)
{
    char p[700];
    if (c->env)
        mdb_env_close(c->env);
    c->env = NULL;
    snprintf(p, sizeof p, "%s/data.mdb", c->path);
    unlink(p);
    snprintf(p, sizeof p, "%s/lock.mdb", c->path);
    unlink(p);
    rmdir(c->path);
}

static const experiment experiments[] = {
    {"append", "4 KiB pwrite appending to a growing file + fdatasync", append_setup, page_sync, file_close},
    {"overwrite", "4 KiB pwrite inside a file pre-extended by written zeros + fdatasync", over_setup, page_sync,
     file_close},
    {"dsync", "4 KiB pwrite through an O_DSYNC fd", dsync_setup, meta_write, file_close},
    {"dsync-meta", "120 B pwrite through an O_DSYNC fd at LMDB's meta offsets", dsync_setup, meta_small,
     file_close},
    {"direct", "4 KiB pwrite through an O_DSYNC|O_DIRECT fd", direct_setup, meta_write, file_close},
    {"lmdb", "LMDB put + commit, default flags, growing file", lmdb_default, lmdb_commit, lmdb_teardown},
    {"lmdb-ext", "LMDB put + commit, default flags, data file pre-extended", lmdb_ext, lmdb_commit, lmdb_teardown},
    {"lmdb-b100", "LMDB 100 puts + commit, default flags, growing file", lmdb_b100, lmdb_commit, lmdb_teardown},
    {"lmdb-b100-ext", "LMDB 100 puts + commit, default flags, pre-extended", lmdb_b100_ext, lmdb_commit,
     lmdb_teardown},
    {"lmdb-nms", "LMDB NOMETASYNC + mdb_env_sync per commit, growing", lmdb_nms, lmdb_commit, lmdb_teardown},
    {"lmdb-nms-ext", "LMDB NOMETASYNC + mdb_env_sync per commit, pre-extended", lmdb_nms_ext, lmdb_commit,
     lmdb_teardown},
    {"lmdb-pipe", "LMDB NOMETASYNC, pre-extended: meta made durable by the next commit", lmdb_pipe, lmdb_commit,
     lmdb_teardown},
    {"wal", "200-byte record appended inside a pre-extended log + fdatasync", wal_setup, wal_append, file_close},
};
#define N_EXPERIMENTS (sizeof experiments / sizeof experiments[0])

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* row prints one experiment's figures from its done step times (sorted here). */
static void row(const experiment *e, int64_t *lat, int done, int64_t total_ns)
{
    if (done == 0) {
        printf("%-14s %6d   (no step finished)\n", e->name, done);
        return;
    }
    qsort(lat, (size_t)done, sizeof *lat, cmp_i64);
    double mean = (double)total_ns / done;
    printf("%-14s %6d %9.1f %9.1f %9.1f %9.0f   %s\n", e->name, done, mean / 1000, lat[done / 2] / 1000.0,
           lat[(int)((done - 1) * 0.99)] / 1000.0, 1e9 / mean, e->what);
}

/* run_set sets every chosen experiment up, then runs them in turns of
 * BLOCK_STEPS steps each until each has n steps (or the deadline), so that
 * the disk's drift touches all alike; prints a row each. Returns 0, or -1
 * when one could not be set up or failed. */
static int run_set(exp_ctx *cs, const int *chosen, int n, int64_t **lat, int *done, int64_t *total_ns)
{
    int rc = 0, live = 0;
    for (size_t e = 0; e < N_EXPERIMENTS; e++) {
        done[e] = 0;
        total_ns[e] = 0;
        if (!chosen[e])
            continue;
        if (experiments[e].setup(&cs[e]) != 0) {
            experiments[e].teardown(&cs[e]);
            cs[e].failed = 1;
            rc = -1;
            continue;
        }
        cs[e].failed = 0;
        live++;
    }
    int64_t deadline = now_ns() + (int64_t)STEP_DEADLINE_S * 1000000000 * (live ? live : 1);
    while (live > 0 && now_ns() < deadline) {
        live = 0;
        for (size_t e = 0; e < N_EXPERIMENTS; e++) {
            if (!chosen[e] || cs[e].failed || done[e] >= n)
                continue;
            int64_t t = now_ns();
            for (int b = 0; b < BLOCK_STEPS && done[e] < n; b++) {
                if (experiments[e].step(&cs[e], done[e]) != 0) {
                    cs[e].failed = 1;
                    rc = -1;
                    break;
                }
                int64_t t2 = now_ns();
                lat[e][done[e]++] = t2 - t;
                total_ns[e] += t2 - t;
                t = t2;
            }
            live += !cs[e].failed && done[e] < n;
        }
    }
    for (size_t e = 0; e < N_EXPERIMENTS; e++)
        if (chosen[e]) {
            if (!cs[e].failed)
                experiments[e].teardown(&cs[e]);
            row(&experiments[e], lat[e], done[e], total_ns[e]);
        }
    fflush(stdout);
    return rc;
}

static void usage(FILE *to)
{
    fprintf(to,
            "usage: bench-flush [--dir DIR] [-n N] [--runs R] [--only LIST]\n"
            "\n"
            "Measures what a durable commit costs on the disk under DIR: plain flushes\n"
            "(append, overwrite of a pre-extended file, O_DSYNC and O_DIRECT page\n"
            "writes), LMDB commits of 1 and of 100 puts (default flags, on a growing and\n"
            "on a pre-extended data file; NOMETASYNC with an explicit sync; NOMETASYNC\n"
            "pipelined) and the record append of a write-ahead log. For each: steps,\n"
            "mean, p50 and p99 of one step in microseconds, and steps per second.\n"
            "\n"
            "  --dir DIR    where the files go (default: a new directory in the current\n"
            "               one, removed at the end);\n"
            "               use the data directory's file system, not a tmpfs\n"
            "  -n N         timed steps per experiment (default 2000; each also stops\n"
            "               after %d s)\n"
            "  --runs R     how many times the whole set runs (default 2): compare\n"
            "               ratios within one run, the disk drifts\n"
            "  --only LIST  run only these (comma-separated): append, overwrite, dsync, dsync-meta,\n"
            "               direct, lmdb, lmdb-ext, lmdb-b100, lmdb-b100-ext, lmdb-nms,\n"
            "               lmdb-nms-ext, lmdb-pipe or wal\n"
            "\n"
            "example: make bench-flush && build/rel/bench-flush -n 2000 --runs 2\n",
            STEP_DEADLINE_S);
}

int main(int argc, char **argv)
{
    static exp_ctx cs[N_EXPERIMENTS];
    static int64_t *lat[N_EXPERIMENTS];
    int chosen[N_EXPERIMENTS], done[N_EXPERIMENTS];
    int64_t total_ns[N_EXPERIMENTS];
    char dirname[512];
    unsigned char *buf = NULL;
    const char *dir = NULL, *only = NULL;
    int n = 2000, runs = 2, made = 0, rc = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
            dir = argv[++i];
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            n = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        } else {
            usage(stderr);
            return 2;
        }
    }
    int any = 0;
    for (size_t e = 0; e < N_EXPERIMENTS; e++) {
        char list[256];
        snprintf(list, sizeof list, ",%s,", only ? only : "");
        char name[32];
        snprintf(name, sizeof name, ",%s,", experiments[e].name);
        any += chosen[e] = !only || strstr(list, name) != NULL;
    }
    if (!any) {
        fprintf(stderr, "bench-flush: no experiment named %s (see --help)\n", only);
        return 2;
    }
    if (n < 1 || n > N_MAX || runs < 1 || runs > 100) {
        fprintf(stderr, "bench-flush: -n must be 1..%d and --runs 1..100\n", N_MAX);
        return 2;
    }
    if (dir) {
        snprintf(dirname, sizeof dirname, "%s", dir);
    } else {
        snprintf(dirname, sizeof dirname, "bench-flush.XXXXXX");
        if (!mkdtemp(dirname))
            return fail("cannot create a directory", dirname), 1;
        made = 1;
    }
    struct statfs sf;
    if (statfs(dirname, &sf) == 0)
        printf("# dir %s, file system type 0x%lx%s; steps in turns of %d per experiment\n", dirname,
               (unsigned long)sf.f_type,
               sf.f_type == 0x01021994 ? " (tmpfs: these numbers say nothing about a disk)" : "", BLOCK_STEPS);
    if (posix_memalign((void **)&buf, PAGE_BYTES, PAGE_BYTES) != 0)
        return fprintf(stderr, "bench-flush: out of memory\n"), 1;
    memset(buf, 'x', PAGE_BYTES);
    for (size_t e = 0; e < N_EXPERIMENTS; e++) {
        snprintf(cs[e].dir, sizeof cs[e].dir, "%s", dirname);
        cs[e].name = experiments[e].name;
        cs[e].buf = buf;
        cs[e].fd = -1;
        if (!(lat[e] = malloc((size_t)n * sizeof *lat[e])))
            return fprintf(stderr, "bench-flush: out of memory\n"), 1;
    }
    for (int r = 1; r <= runs; r++) {
        printf("# run %d of %d\n%-14s %6s %9s %9s %9s %9s   %s\n", r, runs, "experiment", "steps", "mean_us",
               "p50_us", "p99_us", "per_s", "what");
        if (run_set(cs, chosen, n, lat, done, total_ns) != 0)
            rc = 1;
    }
    for (size_t e = 0; e < N_EXPERIMENTS; e++)
        free(lat[e]);
    free(buf);
    if (made)
        rmdir(dirname);
    return rc;
}
