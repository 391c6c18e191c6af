/*
 * test_faults.c - I/O errors injected into the real sluiced with strace's
 * fault injection: EIO from fdatasync and ENOSPC from the writes of a
 * commit. The broker must not confirm what it failed to commit and must lose
 * nothing it confirmed: after a restart, every confirmed message is there.
 * After EIO it must stop instead of carrying on. After ENOSPC from a data
 * page write it refuses the batch with SL_ENOSPC and goes on (LMDB's
 * previous state is intact), so the next publish is confirmed; an ENOSPC
 * that hits the meta page's write makes LMDB's environment unusable, and
 * then it stops with SL_EIO, as after an I/O error.
 *
 * Those three run without the write-ahead log (--wal-mb 0: every batch an
 * LMDB commit). With it, a batch is one record, written with O_DIRECT |
 * O_DSYNC (durable when the pwrite returns) or, with --wal-buffered,
 * written and then flushed with fdatasync: EIO from either stops the
 * broker too, and ENOSPC from the record's write refuses that batch (its record is
 * voided, so it never replays) and the broker goes on. The log is kept
 * small (1 MiB) so that making it takes two writes, not the injected one.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "sluice.h"

enum { MAX_MSGS = 400 };

/* stop_traced stops the sluiced that strace (b->pid) runs, with sig
 * (SIGTERM, or SIGKILL for a crash) to sluiced itself (strace would detach
 * and leave it running), and returns its exit status as strace reports it. */
static int stop_traced(th_broker *b, int sig)
{
    char path[64], text[64] = "";
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)b->pid, (int)b->pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(text, sizeof text, f));
    fclose(f);
    int child = atoi(text);
    assert_true(child > 0);
    assert_int_equal(kill(child, sig), 0);
    return th_broker_wait(b, 20000);
}

/* run_fault publishes one message at a time into a broker running under
 * strace, which makes the syscalls in `trace` fail as `inject` says (strace
 * injects only into syscalls it traces), until a publish fails; then it
 * restarts the broker clean and checks that every confirmed message is
 * there (with nospace_goes_on, an SL_ENOSPC must leave the broker serving
 * instead). Each commit calls fdatasync twice: once for the data pages, once
 * for the meta page. The broker is started by hand, not as a th_fixture: it
 * runs under strace (b.wrap) first, then plain, and its clients have
 * different timeouts. */
enum { FAULT_STOPS, FAULT_GOES_ON, FAULT_THEN_CRASH };
enum { NO_WAL, WAL_DIRECT, WAL_BUFFERED }; /* run_fault's wal */

static void run_fault(const char *trace, const char *inject, const char *what, int nospace, int wal)
{
    static const char *const no_log[] = {"--wal-mb", "0", NULL}, *const small_log[] = {"--wal-mb", "1", NULL},
                             *const buffered_log[] = {"--wal-mb", "1", "--wal-buffered", NULL};
    th_broker b;
    assert_int_equal(th_broker_init(&b, wal == WAL_BUFFERED ? buffered_log : wal ? small_log : no_log), 0);
    /* LeakSanitizer cannot run under ptrace: off for the traced broker (env execs strace in place) */
    char asan[600];
    const char *old = getenv("ASAN_OPTIONS");
    snprintf(asan, sizeof asan, "ASAN_OPTIONS=%s%sdetect_leaks=0", old ? old : "", old ? ":" : "");
    const char *wrap[] = {"env", asan, "strace", "-f", "-qq", "-o", "/dev/null", "-e", trace, "-e", inject, NULL};
    for (int i = 0; wrap[i]; i++)
        b.wrap[i] = wrap[i];
    assert_int_equal(th_broker_start(&b), 0);
    sl_client *c = th_client(&b, 2000);
    uint8_t confirmed[MAX_MSGS] = {0};
    int sent = 0, rc = SL_OK, first_error = SL_OK, refused = -1;
    char body[32];
    for (; sent < MAX_MSGS && rc == SL_OK; sent++) {
        snprintf(body, sizeof body, "m%03d", sent);
        sl_put m = {.body = body, .body_len = strlen(body), .level = 1};
        rc = sl_send(c, &m, NULL);
        if (rc == SL_OK)
            confirmed[sent] = 1;
        else
            first_error = rc, refused = sent;
    }
    fprintf(stderr, "# %s: %d publishes confirmed, then %s: %s\n", what, sent - 1, sl_errname(first_error),
            sl_last_error(c));
    if (first_error == SL_ENOSPC && nospace == FAULT_THEN_CRASH) { /* refused; then a crash before anything else */
        sl_close(&c);
        stop_traced(&b, SIGKILL);
    } else if (first_error == SL_ENOSPC && nospace == FAULT_GOES_ON) { /* refused; the broker goes on */
        assert_int_equal(th_broker_wait(&b, 500), -1);
        snprintf(body, sizeof body, "m%03d", sent);
        sl_put m = {.body = body, .body_len = strlen(body), .level = 1};
        assert_int_equal(sl_send(c, &m, NULL), SL_OK); /* strace injected one failure only */
        confirmed[sent++] = 1;
        sl_close(&c);
        assert_int_equal(stop_traced(&b, SIGTERM), 0);
    } else {
        assert_int_equal(first_error, SL_EIO); /* refused with a typed error, not confirmed */
        int status = th_broker_wait(&b, 10000);
        assert_int_equal(status, 1); /* it stopped instead of carrying on */
        sl_close(&c);
    }
    memset(b.wrap, 0, sizeof b.wrap);
    assert_int_equal(th_broker_start(&b), 0);
    c = th_client(&b, 5000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 64), SL_OK);
    uint8_t seen[MAX_MSGS] = {0};
    sl_delivery *d = NULL;
    while (sl_recv(c, 500, &d) == SL_OK) {
        int idx = -1;
        assert_int_equal(sscanf(d->body, "m%d", &idx), 1);
        assert_true(idx >= 0 && idx < sent); /* nothing unexpected */
        seen[idx] = 1;
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
    }
    int lost = 0;
    for (int i = 0; i < sent; i++)
        lost += confirmed[i] && !seen[i];
    assert_int_equal(lost, 0);
    if (first_error == SL_ENOSPC) /* refused means not stored (with the log: its record voided) */
        assert_int_equal(seen[refused], 0);
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

static void eio_on_fdatasync(void **state)
{
    (void)state;
    run_fault("trace=fdatasync", "inject=fdatasync:error=EIO:when=40", "EIO from a data-page fdatasync", FAULT_STOPS, NO_WAL);
}

static void eio_on_the_meta_sync(void **state)
{
    (void)state;
    run_fault("trace=fdatasync", "inject=fdatasync:error=EIO:when=41", "EIO from a meta-page fdatasync", FAULT_STOPS, NO_WAL);
}

/* LMDB writes a commit's data pages with writev (a run of pages) or pwrite
 * (one page), and its meta page with pwrite too; a failed meta write leaves
 * the environment unusable, so the broker stops (eio_on_the_meta_sync). Only
 * writev is injected here, so the failure always falls on data pages (the
 * 15th writev: each commit makes one, so about the 15th publish). */
static void enospc_on_write(void **state)
{
    (void)state;
    run_fault("trace=writev", "inject=writev:error=ENOSPC:when=15", "ENOSPC from a commit's data-page write",
              FAULT_GOES_ON, NO_WAL);
}

/* With the log written through the page cache (--wal-buffered): the
 * 40th fdatasync is a record's (checkpoints are a few a second, and their
 * EIO stops the broker too). */
static void eio_on_the_log_sync(void **state)
{
    (void)state;
    run_fault("trace=fdatasync", "inject=fdatasync:error=EIO:when=40", "EIO from the log's fdatasync", FAULT_STOPS,
              WAL_BUFFERED);
}

/* With the log written O_DIRECT | O_DSYNC (the default): the record's
 * pwrite is its flush, and its EIO stops the broker. */
static void eio_on_the_log_direct_write(void **state)
{
    (void)state;
    run_fault("trace=pwrite64", "inject=pwrite64:error=EIO:when=30", "EIO from a log record's O_DSYNC write",
              FAULT_STOPS, WAL_DIRECT);
}

/* With the log: ENOSPC from a record's write (a copy-on-write file system
 * may allocate on overwrite): refused, voided, and the broker goes on. */
static void enospc_on_the_log_write(void **state)
{
    (void)state;
    run_fault("trace=pwrite64", "inject=pwrite64:error=ENOSPC:when=30", "ENOSPC from a log record's write",
              FAULT_GOES_ON, WAL_DIRECT);
}

/* With the log: ENOSPC from a record's fdatasync (the record was written,
 * its flush refused: a thin-provisioned disk), and a crash right after the
 * refusal: the record is voided before the refusal is sent, so the restart
 * does not replay the refused publish. */
static void enospc_on_the_log_sync_then_a_crash(void **state)
{
    (void)state;
    run_fault("trace=fdatasync", "inject=fdatasync:error=ENOSPC:when=40", "ENOSPC from a log record's fdatasync",
              FAULT_THEN_CRASH, WAL_BUFFERED);
}

int main(void)
{
    if (system("command -v strace >/dev/null 2>&1") != 0) {
        fprintf(stderr, "test_faults needs strace (make deps installs it)\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(eio_on_fdatasync),
        cmocka_unit_test(eio_on_the_meta_sync),
        cmocka_unit_test(enospc_on_write),
        cmocka_unit_test(eio_on_the_log_sync),
        cmocka_unit_test(eio_on_the_log_direct_write),
        cmocka_unit_test(enospc_on_the_log_write),
        cmocka_unit_test(enospc_on_the_log_sync_then_a_crash),
    };
    th_seed();
    return cmocka_run_group_tests_name("faults", tests, NULL, NULL);
}
