/*
 * test_faults.c - I/O errors injected into the real sluiced with strace's
 * fault injection: EIO from fdatasync and ENOSPC from the writes of a
 * commit. The broker must not confirm what it failed to commit, must stop
 * instead of carrying on, and must lose nothing it confirmed: after a
 * restart, every confirmed message is there.
 */
#include <setjmp.h>
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

/* run_fault publishes one message at a time into a broker running under
 * strace, which makes the syscalls in `trace` fail as `inject` says (strace
 * injects only into syscalls it traces), until a publish fails; then it
 * restarts the broker clean and checks that every confirmed message is
 * there. Each commit calls fdatasync twice: once for the data pages, once
 * for the meta page. The broker is started by hand, not as a th_fixture: it
 * runs under strace (b.wrap) first, then plain, and its clients have
 * different timeouts. */
static void run_fault(const char *trace, const char *inject, const char *what)
{
    th_broker b;
    assert_int_equal(th_broker_init(&b, NULL), 0);
    const char *wrap[] = {"strace", "-f", "-qq", "-o", "/dev/null", "-e", trace, "-e", inject, NULL};
    for (int i = 0; wrap[i]; i++)
        b.wrap[i] = wrap[i];
    assert_int_equal(th_broker_start(&b), 0);
    sl_client *c = th_client(&b, 2000);
    uint8_t confirmed[MAX_MSGS] = {0};
    int sent = 0, rc = SL_OK, first_error = SL_OK;
    char body[32];
    for (; sent < MAX_MSGS && rc == SL_OK; sent++) {
        snprintf(body, sizeof body, "m%03d", sent);
        sl_put m = {.body = body, .body_len = strlen(body), .level = 1};
        rc = sl_send(c, &m, NULL);
        if (rc == SL_OK)
            confirmed[sent] = 1;
        else
            first_error = rc;
    }
    fprintf(stderr, "# %s: %d publishes confirmed, then %s: %s\n", what, sent - 1, sl_errname(first_error),
            sl_last_error(c));
    assert_int_equal(first_error, SL_EIO); /* refused with a typed error, not confirmed */
    int status = th_broker_wait(&b, 10000);
    assert_int_equal(status, 1); /* it stopped instead of carrying on */
    sl_close(&c);
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
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

static void eio_on_fdatasync(void **state)
{
    (void)state;
    run_fault("trace=fdatasync", "inject=fdatasync:error=EIO:when=40", "EIO from a data-page fdatasync");
}

static void eio_on_the_meta_sync(void **state)
{
    (void)state;
    run_fault("trace=fdatasync", "inject=fdatasync:error=EIO:when=41", "EIO from a meta-page fdatasync");
}

static void enospc_on_write(void **state)
{
    (void)state;
    run_fault("trace=pwrite64,pwritev,writev", "inject=pwrite64,pwritev,writev:error=ENOSPC:when=30",
              "ENOSPC from a commit's write");
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
    };
    th_seed();
    return cmocka_run_group_tests_name("faults", tests, NULL, NULL);
}
