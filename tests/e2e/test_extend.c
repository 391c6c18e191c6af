/*
 * test_extend.c - the data file is kept extended by written zeros ahead of
 * LMDB's last page (broker/store/store_extend.c), never past the map, and the
 * zeros harm nothing: after a restart every confirmed message is there,
 * byte for byte.
 *
 * The extender serves LMDB commits. With the write-ahead log those are
 * checkpoints, a few a second and off the confirmations' path; these tests
 * run without the log (--wal-mb 0) so that every batch is an LMDB commit.
 *
 * Each test starts the real sluiced in its own directory, publishes through
 * the client library, stops the broker, and then reads the data file's
 * size (stat) beside LMDB's own last page (mdb_env_info on the stopped
 * environment, read-only).
 */
#include <lmdb.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "sluice.h"

#define BODY_BYTES 1000
#define MIN_CHUNK  (1 << 20) /* STORE_EXTEND_MIN_BYTES */
#define MAX_CHUNK  (8 << 20) /* STORE_EXTEND_MAX_BYTES */

/* body_of writes message i's body: its number, then a pattern from it. */
static void body_of(unsigned i, char *body)
{
    int n = snprintf(body, BODY_BYTES, "m%06u:", i);
    for (int k = n; k < BODY_BYTES; k++)
        body[k] = (char)('a' + (i + (unsigned)k) % 26);
}

/* put_bodies publishes n messages of BODY_BYTES, 100 outstanding at most. */
static void put_bodies(sl_client *c, unsigned n)
{
    char body[BODY_BYTES];
    for (unsigned i = 0; i < n; i++) {
        body_of(i, body);
        sl_put m = {.body = body, .body_len = BODY_BYTES, .level = 1};
        assert_int_equal(sl_send_async(c, &m, NULL), SL_OK);
        while (sl_send_pending(c) >= 100 || (i + 1 == n && sl_send_pending(c) > 0)) {
            sl_confirm cf;
            assert_int_equal(sl_send_wait(c, 10000, &cf), SL_OK);
            assert_int_equal(cf.err, SL_OK);
        }
    }
}

/* file_sizes reads the stopped broker's data file: its size, the bytes it
 * has allocated, and LMDB's used bytes (up to its last page). */
static void file_sizes(const th_broker *b, off_t *size, off_t *allocated, off_t *used)
{
    char path[400];
    struct stat st;
    MDB_env *env;
    MDB_envinfo info;
    MDB_stat ms;
    snprintf(path, sizeof path, "%s/data.mdb", b->data);
    assert_int_equal(stat(path, &st), 0);
    *size = st.st_size;
    *allocated = (off_t)st.st_blocks * 512;
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_set_maxdbs(env, 64), 0);
    assert_int_equal(mdb_env_open(env, b->data, MDB_RDONLY | MDB_NOLOCK, 0600), 0);
    assert_int_equal(mdb_env_info(env, &info), 0);
    assert_int_equal(mdb_env_stat(env, &ms), 0);
    *used = ((off_t)info.me_last_pgno + 1) * (off_t)ms.ms_psize;
    mdb_env_close(env);
}

/* A broker that stored a few MiB leaves zeros after LMDB's last page (at
 * least half a chunk, at most a chunk and a half), written (allocated), not
 * a hole; after a restart every message comes back intact. */
static void the_data_file_stays_a_chunk_ahead_and_the_zeros_harm_nothing(void **state)
{
    (void)state;
    enum { N = 3000 };
    static const char *const extra[] = {"--wal-mb", "0", NULL};
    th_broker b;
    off_t size, allocated, used;
    assert_int_equal(th_broker_init(&b, extra), 0);
    assert_int_equal(th_broker_start(&b), 0);
    sl_client *c = th_client(&b, 10000);
    put_bodies(c, N);
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);

    file_sizes(&b, &size, &allocated, &used);
    fprintf(stderr, "# %u messages: LMDB uses %lld KiB, the file is %lld KiB, %lld KiB allocated\n", N,
            (long long)used >> 10, (long long)size >> 10, (long long)allocated >> 10);
    assert_true(used > N * BODY_BYTES);
    assert_true(size >= used + MIN_CHUNK / 2);
    assert_true(size <= used + MAX_CHUNK + MAX_CHUNK / 2);
    assert_true(allocated >= size - 64 * 1024); /* zeros written, not a sparse hole */

    assert_int_equal(th_broker_start(&b), 0);
    c = th_client(&b, 10000);
    assert_int_equal(sl_subscribe(c, NULL, NULL, 0, 64), SL_OK);
    static uint8_t seen[N];
    unsigned got = 0;
    char want[BODY_BYTES];
    uint64_t deadline = th_now_ms() + 30000;
    while (got < N && th_now_ms() < deadline) {
        sl_delivery *d = NULL;
        if (sl_recv(c, 500, &d) != SL_OK)
            continue;
        unsigned i = N;
        assert_int_equal(sscanf(d->body, "m%u:", &i), 1);
        assert_true(i < N && !seen[i]);
        body_of(i, want);
        assert_int_equal(d->body_len, BODY_BYTES);
        assert_memory_equal(d->body, want, BODY_BYTES);
        seen[i] = 1;
        got++;
        assert_int_equal(sl_ack(c, d), SL_OK);
        sl_delivery_free(&d);
    }
    assert_int_equal(got, N);
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

/* With a 2 MiB map the zeros stop at the map's end, however close the data
 * comes to it. */
static void the_zeros_never_pass_the_map(void **state)
{
    (void)state;
    static const char *const extra[] = {"--map-size-mb", "2", "--map-max-mb", "2", "--wal-mb", "0", NULL};
    th_broker b;
    off_t size, allocated, used;
    assert_int_equal(th_broker_init(&b, extra), 0);
    assert_int_equal(th_broker_start(&b), 0);
    sl_client *c = th_client(&b, 10000);
    put_bodies(c, 700);
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);
    file_sizes(&b, &size, &allocated, &used);
    fprintf(stderr, "# 2 MiB map: LMDB uses %lld KiB, the file is %lld KiB\n", (long long)used >> 10,
            (long long)size >> 10);
    assert_true(size <= 2 << 20);
    assert_true(size >= used + (MIN_CHUNK / 2 < (2 << 20) - used ? MIN_CHUNK / 2 : (2 << 20) - used));
    th_broker_fini(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(the_data_file_stays_a_chunk_ahead_and_the_zeros_harm_nothing,
                                        th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(the_zeros_never_pass_the_map, th_timeout_arm, th_timeout_disarm),
    };
    th_seed();
    return cmocka_run_group_tests_name("extend", tests, NULL, NULL);
}
