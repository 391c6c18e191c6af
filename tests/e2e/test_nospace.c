/*
 * test_nospace.c - a full disk refuses a batch and the broker goes on.
 *
 * The full-disk shim (tests/lib/nospace_shim.c, preloaded into sluiced) makes
 * every page write of LMDB's data file fail with ENOSPC while a flag file
 * exists. With it set, a commit fails as it does on a full disk: every
 * publish of that batch is answered SL_ENOSPC (none left without a reply),
 * the broker keeps running, consumers still receive what was confirmed
 * before, and acknowledgements that could not be committed only mean those
 * messages come again. With the flag removed (space freed), publishing
 * resumes by itself, and a drain finds every message confirmed before and
 * after, and none of the refused ones.
 *
 * With the write-ahead log (store_wal.c) the disk that fills first is
 * LMDB's: the log's space is written when it is made, so a batch is still
 * confirmed by its record, and only the checkpoint that would copy it into
 * LMDB fails; it is tried again after a back-off, and publishes are refused
 * once the log is half used. The refusal tests run without the log (--wal-mb
 * 0), where every batch is an LMDB commit; log_confirms_while_lmdb_is_full
 * runs with a small one, and crashes the broker before space is freed: the
 * restart replays every batch the log confirmed.
 *
 * The shim is $(BUILD)/tests/lib/nospace_shim.so (found from this program's path); it is
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

/* shimmed_start starts b (initialised) under the full-disk shim, whose flag
 * file is named into flag. */
static void shimmed_start(th_broker *b, char flag[400])
{
    static char flag_env[440];
    snprintf(flag, 400, "%s/disk-full", b->dir);
    snprintf(flag_env, sizeof flag_env, "SLUICE_NOSPACE_FLAG=%s", flag);
    const char *env[] = {flag_env, NULL};
    th_broker_preload(b, "tests/lib/nospace_shim.so", env);
    assert_int_equal(th_broker_start(b), 0);
}

static void full_disk_refuses_then_resumes(void **state)
{
    (void)state;
    char flag[400];
    th_broker b;
    const char *extra[] = {"--levels", "2", "--wal-mb", "0", NULL};
    assert_int_equal(th_broker_init(&b, extra), 0);
    shimmed_start(&b, flag);
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
    /* A settings change in a refused batch is not stored, nor left live */
    assert_int_equal(sl_level_pause(p, 1, 1), SL_ENOSPC);
    {
        sl_level_info li[SL_MAX_LEVELS];
        unsigned nl = SL_MAX_LEVELS;
        assert_int_equal(sl_level_list(p, li, &nl), SL_OK);
        assert_int_equal(li[1].paused, 0);
    }
    /* A read-only admin command in a refused batch promises nothing about
     * the disk: it is answered, not refused */
    for (int i = 0; i < 3; i++) {
        uint64_t ticket;
        sl_put m = {.body = "refused-list", .body_len = 12, .level = 0};
        assert_int_equal(sl_send_async(p, &m, &ticket), SL_OK);
        sl_level_info li[SL_MAX_LEVELS];
        unsigned nl = SL_MAX_LEVELS;
        assert_int_equal(sl_level_list(p, li, &nl), SL_OK);
        assert_int_equal(nl, 2);
        sl_confirm cf;
        assert_int_equal(sl_send_wait(p, 10000, &cf), SL_OK);
        assert_int_equal(cf.err, SL_ENOSPC);
    }

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

/* log_lines counts the lines of the broker's log at path that hold what. */
static unsigned log_lines(const char *path, const char *what)
{
    char line[2048];
    unsigned n = 0;
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    while (fgets(line, sizeof line, f))
        n += strstr(line, what) != NULL;
    fclose(f);
    return n;
}

/* A delayed message that comes due while the disk is full moves to the
 * head of its level in a transaction that is refused: it is not delivered
 * before that move commits (its lease would name a key the refusal frees),
 * the level's ready count never goes below zero, and once space is freed it
 * is delivered. X, stored and leased, puts D's head key below the level's
 * committed keys. The refused move is tried again only after a back-off,
 * and the failure is logged once. */
static void due_message_waits_for_its_commit(void **state)
{
    (void)state;
    char flag[400];
    th_broker b;
    const char *extra[] = {"--wal-mb", "0", NULL};
    assert_int_equal(th_broker_init(&b, extra), 0);
    shimmed_start(&b, flag);
    sl_client *p = th_client(&b, 10000), *c = th_client(&b, 10000);
    sl_put x = {.body = "X", .body_len = 1, .level = 0};
    assert_int_equal(sl_send(p, &x, NULL), SL_OK);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 8), SL_OK);
    sl_delivery *dx = NULL, *d = NULL;
    assert_int_equal(sl_recv(c, 10000, &dx), SL_OK); /* X: leased, kept */
    assert_memory_equal(dx->body, "X", 1);
    sl_put dm = {.body = "D", .body_len = 1, .level = 0, .delay_ms = 1500};
    assert_int_equal(sl_send(p, &dm, NULL), SL_OK);
    flag_set(flag, 1); /* the disk is full: D's move to the head cannot commit */
    int rc = sl_recv(c, 3500, &d);
    if (rc == SL_OK)
        fail_msg("delivered %.*s while its move to the head was never committed", (int)d->body_len,
                 (const char *)d->body);
    assert_int_equal(rc, SL_ETIMEDOUT);
    sl_stats st;
    assert_int_equal(sl_stats_get(p, &st), SL_OK);
    fprintf(stderr, "# disk full, D due: depth %llu, in flight %llu, delayed %llu\n",
            (unsigned long long)st.level[0].depth, (unsigned long long)st.level[0].inflight,
            (unsigned long long)st.level[0].delayed);
    assert_true(st.level[0].depth <= 1);
    assert_int_equal(st.level[0].inflight, 1);
    /* D's move is refused again and again while the disk is full: backed
     * off (1 s), and logged once, not every ack_flush_ms */
    unsigned lines = log_lines(b.log, "No space left"), refusals = log_lines(b.log, "commit failed: no space");
    fprintf(stderr, "# 3.5 s of a full disk: %u lines naming ENOSPC, %u refusal warnings\n", lines, refusals);
    assert_true(lines >= 1 && lines <= 3);
    assert_true(refusals >= 1 && refusals <= 2);
    flag_set(flag, 0); /* space freed: D's move commits, and D is delivered */
    assert_int_equal(sl_recv(c, 10000, &d), SL_OK);
    assert_memory_equal(d->body, "D", 1);
    assert_int_equal(sl_ack(c, d), SL_OK);
    assert_int_equal(sl_ack(c, dx), SL_OK);
    sl_delivery_free(&d);
    sl_delivery_free(&dx);
    assert_int_equal(sl_flush(c, 10000), SL_OK);
    assert_int_equal(sl_recv(c, 1000, &d), SL_ETIMEDOUT); /* once each */
    sl_close(&c);
    sl_close(&p);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

/* With the log, LMDB's disk full: batches are confirmed by their records
 * while checkpoints fail (and are tried again after a back-off), until the
 * log is half used; then publishes are refused with SL_ENOSPC and the broker
 * goes on. Killed then (the last checkpoint never made), and restarted on a
 * disk with room, it replays the log: every confirmed message is there,
 * once, and no refused one. */
static void log_confirms_while_lmdb_is_full(void **state)
{
    (void)state;
    enum { MAX = 400 };
    char flag[400], body[32];
    th_broker b;
    const char *extra[] = {"--wal-mb", "1", NULL};
    assert_int_equal(th_broker_init(&b, extra), 0);
    shimmed_start(&b, flag);
    sl_client *p = th_client(&b, 10000);
    int ok, nospace;
    publish(p, "before", BEFORE, &ok, &nospace);
    assert_int_equal(ok, BEFORE);
    flag_set(flag, 1); /* LMDB's disk is full */
    static uint8_t confirmed[MAX];
    int n_ok = 0, n_refused = 0, sent = 0;
    for (; sent < MAX && n_refused < 20; sent++) { /* one record each: 4 KiB of the log's 1 MiB */
        snprintf(body, sizeof body, "full%d", sent);
        sl_put m = {.body = body, .body_len = strlen(body), .level = 0};
        int rc = sl_send(p, &m, NULL);
        if (rc == SL_OK)
            confirmed[sent] = 1, n_ok++;
        else if (rc == SL_ENOSPC)
            n_refused++;
        else
            fail_msg("publish %d: unexpected %s", sent, sl_strerror(rc));
    }
    fprintf(stderr, "# LMDB full, a 1 MiB log: %d confirmed by the log, then %d refused with SL_ENOSPC\n", n_ok,
            n_refused);
    assert_true(n_ok >= 50);       /* the log took them (its half: 128 records) */
    assert_int_equal(n_refused, 20); /* and then refused, rather than confirm what it cannot keep */
    assert_int_equal(th_broker_wait(&b, 0), -1); /* still running */
    sl_close(&p);
    th_broker_kill9(&b); /* no checkpoint ever succeeded: only the log holds them */
    flag_set(flag, 0);
    assert_int_equal(th_broker_start(&b), 0);
    sl_client *c = th_client(&b, 10000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 64), SL_OK);
    static uint8_t seen[MAX];
    int before = 0, distinct = 0;
    sl_delivery *d = NULL;
    while (sl_recv(c, 1000, &d) == SL_OK) {
        int i;
        char text[40];
        snprintf(text, sizeof text, "%.*s", (int)d->body_len, (const char *)d->body);
        if (sscanf(text, "full%d", &i) == 1) {
            assert_true(i >= 0 && i < sent);
            assert_true(confirmed[i]); /* a refused one was never stored */
            distinct += !seen[i]++;
        } else {
            before++;
        }
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
    }
    fprintf(stderr, "# after kill -9 and a replay: %d of %d confirmed, %d of %d before\n", distinct, n_ok, before,
            BEFORE);
    assert_int_equal(distinct, n_ok);
    assert_int_equal(before, BEFORE);
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

/* A batch larger than what the map has free, in a map that may grow: the
 * refusal grows the map at once (it is not 75 % used, and there is nothing
 * for consumers to drain), so a retry is confirmed. */
static void full_map_grows_for_a_large_batch(void **state)
{
    (void)state;
    enum { SMALL = 1500000, LARGE = 3000000 };
    const char *extra[] = {"--map-size-mb", "4", "--map-max-mb", "64", "--max-body", "4000000", NULL};
    th_fixture *f;
    assert_int_equal(th_fixture_start(extra, &f), 0);
    char *body = malloc(LARGE);
    assert_non_null(body);
    memset(body, 's', LARGE);
    sl_put m = {.body = body, .body_len = SMALL, .level = 0};
    assert_int_equal(sl_send(f->c, &m, NULL), SL_OK);
    m.body_len = LARGE;
    int rc = SL_ENOSPC, tries = 0, refused = 0;
    for (; tries < 8 && rc == SL_ENOSPC; tries++) {
        rc = sl_send(f->c, &m, NULL);
        refused += rc == SL_ENOSPC;
        if (rc == SL_ENOSPC)
            usleep(100 * 1000);
    }
    fprintf(stderr, "# 3 MB into a 4 MiB map holding 1.5 MB: %d refusals before %s\n", refused, sl_strerror(rc));
    assert_int_equal(rc, SL_OK);
    assert_true(refused <= 2); /* each refusal doubles the map: 8 MiB holds both */
    sl_client *c = th_client(&f->b, 10000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 4), SL_OK);
    for (int i = 0; i < 2; i++) {
        sl_delivery *d = NULL;
        assert_int_equal(sl_recv(c, 10000, &d), SL_OK);
        assert_int_equal(d->body_len, i == 0 ? SMALL : LARGE);
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
    }
    assert_int_equal(sl_flush(c, 10000), SL_OK);
    sl_close(&c);
    free(body);
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(full_disk_refuses_then_resumes),
        cmocka_unit_test(due_message_waits_for_its_commit),
        cmocka_unit_test(log_confirms_while_lmdb_is_full),
        cmocka_unit_test(full_map_refuses_then_resumes),
        cmocka_unit_test(full_map_grows_for_a_large_batch),
    };
    th_seed();
    return cmocka_run_group_tests_name("nospace", tests, NULL, NULL);
}
