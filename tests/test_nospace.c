/*
 * test_nospace.c - a full disk refuses a batch and the broker goes on.
 *
 * The full-disk shim (tests/nospace_shim.c, preloaded into sluiced) makes
 * every page write of LMDB's data file fail with ENOSPC while a flag file
 * exists. With it set, a commit fails as it does on a full disk: every
 * publish of that batch is answered SL_ENOSPC (none left without a reply),
 * the broker keeps running, consumers still receive what was confirmed
 * before, and acknowledgements that could not be committed only mean those
 * messages come again. With the flag removed (space freed), publishing
 * resumes by itself, and a drain finds every message confirmed before and
 * after, and none of the refused ones.
 *
 * The shim is $(BUILD)/tests/nospace_shim.so, beside this program; it is
 * never sanitized, so under ASan the broker is told not to insist on its
 * runtime coming first.
 */
#include <limits.h>
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

enum { BEFORE = 40, REFUSED = 30, AFTER = 25 };

static void shim_path(char *out, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    assert_non_null(slash);
    *slash = '\0'; /* .../tests */
    snprintf(out, len, "%s/nospace_shim.so", exe);
    assert_int_equal(access(out, R_OK), 0);
}

static void flag_set(const char *path, int on)
{
    if (on) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fclose(f);
    } else {
        assert_int_equal(unlink(path), 0);
    }
}

/* publish sends n messages named prefix<i> asynchronously and counts the
 * confirmations by result; every publish must get one within 10 s. */
static void publish(sl_client *c, const char *prefix, int n, int *ok, int *nospace)
{
    char body[32];
    uint64_t ticket;
    *ok = *nospace = 0;
    for (int i = 0; i < n; i++) {
        snprintf(body, sizeof body, "%s%d", prefix, i);
        sl_put m = {.body = body, .body_len = strlen(body), .level = 0};
        assert_int_equal(sl_send_async(c, &m, &ticket), SL_OK);
    }
    for (int i = 0; i < n; i++) {
        sl_confirm cf;
        assert_int_equal(sl_send_wait(c, 10000, &cf), SL_OK);
        if (cf.err == SL_OK)
            (*ok)++;
        else if (cf.err == SL_ENOSPC)
            (*nospace)++;
        else
            fail_msg("publish %d: unexpected %s", i, sl_strerror(cf.err));
    }
}

static void full_disk_refuses_then_resumes(void **state)
{
    (void)state;
    char shim[PATH_MAX + 32], preload[PATH_MAX + 48], flag[400], flag_env[440], asan[600];
    th_broker b;
    const char *extra[] = {"--levels", "2", NULL};
    assert_int_equal(th_broker_init(&b, extra), 0);
    shim_path(shim, sizeof shim);
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", shim);
    snprintf(flag, sizeof flag, "%s/disk-full", b.dir);
    snprintf(flag_env, sizeof flag_env, "SLUICE_NOSPACE_FLAG=%s", flag);
    const char *old = getenv("ASAN_OPTIONS");
    snprintf(asan, sizeof asan, "ASAN_OPTIONS=%s%sverify_asan_link_order=0", old ? old : "", old ? ":" : "");
    const char *wrap[] = {"env", preload, flag_env, asan, NULL};
    for (int i = 0; wrap[i]; i++)
        b.wrap[i] = wrap[i];
    assert_int_equal(th_broker_start(&b), 0);
    sl_client *p = th_client(&b, 10000);
    int ok, nospace;

    publish(p, "before", BEFORE, &ok, &nospace);
    assert_int_equal(ok, BEFORE);

    flag_set(flag, 1); /* the disk is full */
    publish(p, "refused", REFUSED, &ok, &nospace);
    fprintf(stderr, "# disk full: %d confirmed, %d refused with SL_ENOSPC\n", ok, nospace);
    assert_int_equal(nospace, REFUSED);
    assert_int_equal(th_broker_wait(&b, 0), -1); /* still running */

    /* Reads need no space: a consumer still gets what was confirmed; its
     * acks cannot be committed, so those messages come again later. */
    sl_client *c = th_client(&b, 10000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 8), SL_OK);
    sl_delivery *d = NULL;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(sl_recv(c, 10000, &d), SL_OK);
        assert_memory_equal(d->body, "before", 6);
        sl_ack(c, d);
        sl_delivery_free(&d);
    }
    sl_close(&c);
    publish(p, "refused-again", 3, &ok, &nospace);
    assert_int_equal(nospace, 3);

    flag_set(flag, 0); /* space freed: publishing resumes by itself */
    publish(p, "after", AFTER, &ok, &nospace);
    assert_int_equal(ok, AFTER);
    sl_close(&p);

    /* Drain: every confirmed message, no refused one. */
    c = th_client(&b, 10000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 16), SL_OK);
    int seen_before[BEFORE] = {0}, seen_after[AFTER] = {0}, distinct = 0;
    for (int guard = 0; distinct < BEFORE + AFTER && guard < 10 * (BEFORE + AFTER); guard++) {
        if (sl_recv(c, 10000, &d) != SL_OK)
            break;
        char body[40];
        int i;
        snprintf(body, sizeof body, "%.*s", (int)d->body_len, (const char *)d->body);
        assert_null(strstr(body, "refused"));
        if (sscanf(body, "before%d", &i) == 1 && i >= 0 && i < BEFORE && !seen_before[i]++)
            distinct++;
        else if (sscanf(body, "after%d", &i) == 1 && i >= 0 && i < AFTER && !seen_after[i]++)
            distinct++;
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
    }
    fprintf(stderr, "# drained %d distinct messages of %d confirmed\n", distinct, BEFORE + AFTER);
    assert_int_equal(distinct, BEFORE + AFTER);
    assert_int_equal(sl_flush(c, 10000), SL_OK);
    assert_int_equal(sl_recv(c, 500, &d), SL_ETIMEDOUT); /* nothing more: no refused message was stored */
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

/* A map too small for the batch: LMDB says MDB_MAP_FULL while the pass
 * writes, the batch is refused SL_ENOSPC, and the broker goes on; once
 * consumers drain, publishing resumes (LMDB reuses the freed pages). */
static void full_map_refuses_then_resumes(void **state)
{
    (void)state;
    enum { BODY = 60000, N = 60 };
    const char *extra[] = {"--map-size-mb", "1", "--map-max-mb", "1", NULL};
    th_fixture *f;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    char *body = malloc(BODY);
    assert_non_null(body);
    uint64_t ticket, ids[N];
    int ok = 0, nospace = 0, confirmed[N];
    for (int i = 0; i < N; i++) {
        memset(body, 'a' + i % 26, BODY);
        sl_put m = {.body = body, .body_len = BODY, .level = 0};
        assert_int_equal(sl_send_async(f->c, &m, &ticket), SL_OK);
    }
    for (int i = 0; i < N; i++) {
        sl_confirm cf;
        assert_int_equal(sl_send_wait(f->c, 10000, &cf), SL_OK);
        confirmed[i] = cf.err == SL_OK;
        ids[i] = cf.id;
        ok += cf.err == SL_OK;
        nospace += cf.err == SL_ENOSPC;
        if (cf.err != SL_OK && cf.err != SL_ENOSPC)
            fail_msg("publish %d: unexpected %s", i, sl_strerror(cf.err));
    }
    fprintf(stderr, "# 1 MiB map: %d confirmed, %d refused with SL_ENOSPC\n", ok, nospace);
    assert_true(ok > 0 && nospace > 0);
    assert_int_equal(th_broker_wait(&f->b, 0), -1); /* still running */

    sl_client *c = th_client(&f->b, 10000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 4), SL_OK);
    sl_delivery *d = NULL;
    int got = 0;
    for (int guard = 0; got < ok && guard < 4 * N; guard++) {
        assert_int_equal(sl_recv(c, 10000, &d), SL_OK);
        for (int i = 0; i < N; i++)
            if (confirmed[i] && ids[i] == d->id) {
                confirmed[i] = 0;
                got++;
            }
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
    }
    assert_int_equal(got, ok); /* every confirmed message, once each at least */
    assert_int_equal(sl_flush(c, 10000), SL_OK);
    sl_close(&c);

    int resumed = 0; /* the drained pages are reused: a publish fits again */
    for (int tries = 0; tries < 50 && !resumed; tries++) {
        sl_put m = {.body = body, .body_len = BODY, .level = 0};
        int rc = sl_send(f->c, &m, NULL);
        if (rc == SL_OK)
            resumed = 1;
        else if (rc == SL_ENOSPC)
            usleep(200 * 1000);
        else
            fail_msg("publish after the drain: %s", sl_strerror(rc));
    }
    assert_true(resumed);
    free(body);
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(full_disk_refuses_then_resumes),
        cmocka_unit_test(full_map_refuses_then_resumes),
    };
    th_seed();
    return cmocka_run_group_tests_name("nospace", tests, NULL, NULL);
}
