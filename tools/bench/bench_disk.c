/*
 * bench_disk.c - the rows that measure the disk and the command-line
 * consumer, beside the broker's own rows.
 *
 *   raw flush   a 100-byte append and an fdatasync, in a loop, in the
 *               run's directory: what one device flush costs on this disk
 *               now. A durable LMDB commit needs two (its data fdatasync and
 *               its meta page through an O_DSYNC handle), so the 1 x 1
 *               enqueue target is stated against this row and the raw
 *               ZeroMQ round trip, both measured in the same run.
 *   consume     `sluice consume -c 64 -n N > /dev/null`, one process,
 *               timed from its start to its exit, over a backlog the
 *               caller queued first.
 *
 * Bounds: the flush loop is bench_core_timed (a deadline and a count);
 * the consume process is waited for at most CONSUME_TIMEOUT_MS, then
 * killed. The file is the caller's to remove (it lives in the run's
 * directory).
 */
#include "bench_disk.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench_core.h"
#include "proc.h"

#define CONSUME_TIMEOUT_MS 300000

typedef struct flush_run {
    int fd;
    unsigned char body[BENCH_CORE_BODY_BYTES];
} flush_run;

/* flush_step is one timed step: an append and its flush. */
static int flush_step(void *arg)
{
    flush_run *f = arg;
    if (write(f->fd, f->body, sizeof f->body) != (ssize_t)sizeof f->body || fdatasync(f->fd) != 0)
        return bench_core_fail("raw flush: %s", strerror(errno));
    return 0;
}

int bench_disk_flushes(const char *dir, int seconds, uint64_t *flushes, int64_t *elapsed_ns)
{
    char path[160];
    int64_t last_ns;
    flush_run f;
    bench_core_body_fill(f.body);
    snprintf(path, sizeof path, "%s/raw-flush.dat", dir);
    f.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (f.fd < 0)
        return bench_core_fail("cannot create %s: %s", path, strerror(errno));
    bench_core_progress("raw: one flush, a %d-byte append and fdatasync (%d s)", BENCH_CORE_BODY_BYTES,
                        seconds);
    int64_t start_ns = bench_core_now_ns();
    int rc = bench_core_timed(flush_step, &f, start_ns, start_ns + seconds * BENCH_CORE_NS_PER_S, flushes,
                              &last_ns);
    close(f.fd);
    *elapsed_ns = last_ns - start_ns;
    return rc;
}

int bench_disk_consume_cli(const char *sluice, const char *endpoint, unsigned credit, uint64_t msgs,
                           const char *log_path, int64_t *elapsed_ns)
{
    char cred[16], count[24];
    proc p;
    snprintf(cred, sizeof cred, "%u", credit);
    snprintf(count, sizeof count, "%" PRIu64, msgs);
    const char *const argv[] = {sluice, "-b", endpoint, "consume", "-c", cred, "-n", count, NULL};
    const proc_spec spec = {.argv = argv,
                            .out_path = "/dev/null",
                            .err_path = log_path,
                            .truncate = true,
                            .null_stdin = true,
                            .own_group = true,
                            .die_with_parent = true};
    int64_t start_ns = bench_core_now_ns();
    if (proc_start(&p, "sluice consume", &spec) != 0)
        return -1;
    int st = proc_wait(&p, CONSUME_TIMEOUT_MS);
    *elapsed_ns = bench_core_now_ns() - start_ns;
    if (st == PROC_RUNNING) {
        proc_kill(&p);
        return bench_core_fail("sluice consume did not finish %" PRIu64 " messages in %d s", msgs,
                               CONSUME_TIMEOUT_MS / 1000);
    }
    if (st != 0) {
        proc_tail(&p, PROC_TAIL_BYTES);
        return bench_core_fail("sluice consume exited with status %d", st);
    }
    return 0;
}
