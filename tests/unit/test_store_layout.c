/*
 * test_store_layout.c - what the store keeps on disk besides the messages,
 * against a real LMDB environment: the format (another one refused, format
 * 1 upgraded to 2), the queues' anchors (an emptied queue takes no page per
 * message), the level count (a level that holds messages is never dropped)
 * and the ids (never repeated across a reopen). Each test has a store of its
 * own (store_fixture.h); the older format and the foreign values are made
 * from outside the store, with the LMDB API.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <endian.h>
#include <lmdb.h>

#include "log.h"
#include "store.h"
#include "store_fixture.h"

static void test_other_format_is_refused(void **state)
{
    sfix *f = *state;
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    store_close(&f->s);
    sfix_meta_write_u32(f->dir, "format", STORE_FORMAT + 1);
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_EINVAL);
    assert_null(f->s);
    sfix_meta_write_u32(f->dir, "format", STORE_FORMAT);
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
}

/* A queue that empties after each message (a broker that keeps up) must
 * not take a page per message: LMDB frees an emptied tree's root and takes
 * a new page at the next put, and the commit wrote every one of them. */
static void test_an_emptied_queue_takes_no_page_per_message(void **state)
{
    sfix *f = *state;
    store_rec rec;
    uint64_t key;
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_envinfo info;
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    for (int i = 0; i < 1000; i++) {
        key = sfix_append(f->s, 0, "in and out", NULL);
        assert_int_equal(store_del(f->s, 0, key), SL_OK);
        assert_int_equal(store_seek(f->s, 0, 0, &key, &rec), SL_ENOTFOUND);
    }
    assert_int_equal(store_commit(f->s), SL_OK);
    assert_int_equal(store_level_count(f->s, 0), 0);
    assert_int_equal(store_level_bytes(f->s, 0), 0); /* the anchor's page is no message's (--level-max-bytes) */
    sfix_append(f->s, 0, "last", NULL);
    assert_int_equal(store_commit(f->s), SL_OK);
    store_close(&f->s);
    sfix_lmdb_at(f->dir, "q.0", &env, &txn, &dbi);
    assert_int_equal(mdb_env_info(env, &info), 0);
    assert_true(info.me_last_pgno < 64); /* the file's last page; without the anchor about 1,000 */
    mdb_txn_abort(txn);
    mdb_env_close(env);
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[0].count, 1);
    assert_int_equal(store_seek(f->s, 0, 0, &key, &rec), SL_OK);
    sfix_assert_body(&rec, "last");
}

/* A format 1 directory (no anchors) opens, keeps its messages and becomes
 * format 2. */
static void test_format_1_is_upgraded(void **state)
{
    sfix *f = *state;
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_val k = {1, "\0"}, v;
    store_rec rec;
    uint64_t key;
    assert_int_equal(sfix_reopen(f, 2, SFIX_MAP_BYTES), SL_OK);
    sfix_append(f->s, 1, "from format 1", NULL);
    assert_int_equal(store_commit(f->s), SL_OK);
    store_close(&f->s);
    sfix_meta_write_u32(f->dir, "format", 1);
    const char *dbs[] = {"q.0", "q.1", "delayed"};
    for (size_t i = 0; i < sizeof dbs / sizeof dbs[0]; i++) {
        sfix_lmdb_at(f->dir, dbs[i], &env, &txn, &dbi);
        assert_int_equal(mdb_del(txn, dbi, &k, NULL), 0);
        assert_int_equal(mdb_txn_commit(txn), 0);
        mdb_env_close(env);
    }
    assert_int_equal(sfix_reopen(f, 2, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[0].count, 0);
    assert_int_equal(f->info[1].count, 1);
    assert_int_equal(store_seek(f->s, 1, 0, &key, &rec), SL_OK);
    sfix_assert_body(&rec, "from format 1");
    store_close(&f->s);
    sfix_lmdb_at(f->dir, "meta", &env, &txn, &dbi);
    MDB_val fk = {6, "format"};
    assert_int_equal(mdb_get(txn, dbi, &fk, &v), 0);
    assert_int_equal(v.mv_size, 4);
    assert_int_equal(le32toh(*(const uint32_t *)v.mv_data), STORE_FORMAT);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    for (size_t i = 0; i < sizeof dbs / sizeof dbs[0]; i++) {
        sfix_lmdb_at(f->dir, dbs[i], &env, &txn, &dbi);
        assert_int_equal(mdb_get(txn, dbi, &k, &v), 0); /* the anchor is back */
        mdb_txn_abort(txn);
        mdb_env_close(env);
    }
}

static void test_dropping_levels_with_data_is_refused(void **state)
{
    sfix *f = *state;
    uint64_t top_key, top_id, key;
    unsigned level;
    store_rec rec;
    assert_int_equal(sfix_reopen(f, 5, SFIX_MAP_BYTES), SL_OK);
    sfix_append(f->s, 0, "stays", NULL);
    top_key = sfix_append(f->s, 4, "in the top level", &top_id);
    assert_int_equal(store_commit(f->s), SL_OK);
    assert_int_equal(sfix_reopen(f, 3, SFIX_MAP_BYTES), SL_EINVAL);
    assert_int_equal(sfix_reopen(f, 4, SFIX_MAP_BYTES), SL_EINVAL);

    /* A delayed message would have no level to return to: refused too. */
    assert_int_equal(sfix_reopen(f, 5, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(store_bury(f->s, 4, top_key, "dead", 1), SL_OK);
    key = sfix_append(f->s, 3, "delayed in level 3", NULL);
    assert_int_equal(store_delay(f->s, 3, key, 50), SL_OK);
    assert_int_equal(store_commit(f->s), SL_OK);
    assert_int_equal(sfix_reopen(f, 3, SFIX_MAP_BYTES), SL_EINVAL);

    /* Dead letters do not block a shrink; they wait in dead.4, unharmed. */
    assert_int_equal(sfix_reopen(f, 4, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(store_delayed_pop(f->s, 50, &level, &key), SL_OK);
    assert_int_equal(level, 3);
    assert_int_equal(store_del(f->s, 3, key), SL_OK);
    assert_int_equal(store_commit(f->s), SL_OK);
    assert_int_equal(sfix_reopen(f, 3, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[0].count, 1);
    assert_int_equal(sfix_reopen(f, 5, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[4].dead, 1);
    assert_int_equal(store_dead_get(f->s, 4, top_id, &rec), SL_OK);
    sfix_assert_body(&rec, "in the top level");
}

static void test_dropping_empty_levels_is_allowed(void **state)
{
    sfix *f = *state;
    store_rec rec;
    uint64_t key;
    assert_int_equal(sfix_reopen(f, 5, SFIX_MAP_BYTES), SL_OK);
    key = sfix_append(f->s, 1, "kept", NULL);
    assert_int_equal(store_commit(f->s), SL_OK);
    assert_int_equal(sfix_reopen(f, 2, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[1].count, 1);
    assert_int_equal(store_get(f->s, 1, key, &rec), SL_OK);
    assert_int_equal(store_get(f->s, 2, key, &rec), SL_EINVAL);
    assert_int_equal(sfix_reopen(f, 16, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[15].count, 0);
}

static void test_next_id_persists_and_never_repeats(void **state)
{
    sfix *f = *state;
    uint64_t id, top;
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    assert_false(store_dirty(f->s));
    sfix_append(f->s, 0, "one", &id);
    sfix_append(f->s, 0, "two", &top);
    assert_true(top > id);
    assert_int_equal(store_commit(f->s), SL_OK);

    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    id = store_next_id(f->s);
    assert_true(id > top);
    /* An id taken alone still makes the pass dirty and is persisted. */
    assert_true(store_dirty(f->s));
    assert_int_equal(store_commit(f->s), SL_OK);
    assert_false(store_dirty(f->s));
    top = id;

    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    id = store_next_id(f->s);
    assert_true(id > top);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, sfix_setup, sfix_teardown)
        T(test_other_format_is_refused),
        T(test_an_emptied_queue_takes_no_page_per_message),
        T(test_format_1_is_upgraded),
        T(test_dropping_levels_with_data_is_refused),
        T(test_dropping_empty_levels_is_allowed),
        T(test_next_id_persists_and_never_repeats),
#undef T
    };
    log_set_level(LOG_WARN);
    return cmocka_run_group_tests_name("store layout", tests, NULL, NULL);
}
