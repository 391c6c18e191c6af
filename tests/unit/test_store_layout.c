/*
 * test_store_layout.c - what the store keeps on disk besides the messages,
 * against a real LMDB environment: the format (another one refused, formats
 * 1 and 2 upgraded to 3: records sealed for their keys, meta values
 * sealed; a damaged meta value refused), the queues' anchors (an emptied queue takes no page per
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
#include <string.h>
#include <sys/stat.h>

#include "byteorder.h"
#include "crc32c.h"
#include "log.h"
#include "rec.h"
#include "store.h"
#include "store_fixture.h"

static void test_other_format_is_refused(void **state)
{
    sfix *f = *state;
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    store_close(&f->s);
    sfix_meta_write_sealed_u32(f->dir, "format", STORE_FORMAT + 1);
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_EINVAL);
    assert_null(f->s);
    sfix_meta_write_u32(f->dir, "format", STORE_FORMAT); /* format 3 is always sealed */
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_EINVAL);
    sfix_meta_write_sealed_u32(f->dir, "format", STORE_FORMAT);
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

/* ---- stores of older formats, made as older brokers wrote them ---- */

/* old_put puts raw key -> val into tree name of the environment txn is in. */
static void old_put(MDB_txn *txn, const char *name, const void *key, size_t klen, const void *val, size_t vlen)
{
    MDB_dbi dbi;
    MDB_val k = {klen, (void *)key}, v = {vlen, (void *)val};
    assert_int_equal(mdb_dbi_open(txn, name, MDB_CREATE, &dbi), 0);
    assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
}

/* old_record encodes m as the first record format did: format byte 1, a
 * CRC-32C of the bytes after it alone. Returns its length (in buf). */
static size_t old_record(const rec_msg *m, unsigned char *buf, size_t cap, int dead)
{
    size_t len;
    unsigned char key[8] = {0};
    assert_int_equal(rec_size(m, &len), SL_OK);
    assert_true(len + 64 <= cap);
    rec_encode(m, (rec_key){key, 8}, buf, len);
    if (dead)
        len = rec_bury(buf, len, cap, "dead", 4, 77, (rec_key){key, 8});
    buf[4] = 1;
    uint32_t crc = htole32(crc32c_value(buf + 4, len - 4));
    memcpy(buf, &crc, 4);
    return len;
}

/* make_old_store writes a store of format (1: no anchors; 2: anchors) into
 * dir with the LMDB API: 2 levels, a message in q.1, a dead letter in
 * dead.0, a delayed message of level 0, next id 10, a setting. */
static void make_old_store(const char *dir, unsigned format)
{
    MDB_env *env;
    MDB_txn *txn;
    unsigned char buf[256], kb[16];
    uint32_t u32;
    uint64_t u64, key;
    assert_int_equal(mkdir(dir, 0750), 0);
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_set_maxdbs(env, 64), 0);
    assert_int_equal(mdb_env_open(env, dir, MDB_NOLOCK, 0640), 0);
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
    u32 = htole32(format);
    old_put(txn, "meta", "format", 6, &u32, 4);
    u32 = htole32(2);
    old_put(txn, "meta", "levels", 6, &u32, 4);
    u64 = htole64(10);
    old_put(txn, "meta", "next_id", 7, &u64, 8);
    old_put(txn, "meta", "level/01", 8, "a setting", 9);
    rec_msg m = {.id = 3, .enq_ns = 1, .cost = 1, .level = 1, .tag = "t", .tag_len = 1, .body = "from format 1",
                 .body_len = 13};
    key = htobe64(STORE_KEY_MID + 1);
    old_put(txn, "q.1", &key, 8, buf, old_record(&m, buf, sizeof buf, 0));
    m = (rec_msg){.id = 4, .enq_ns = 1, .cost = 1, .level = 0, .body = "an old dead letter", .body_len = 18};
    key = htobe64(4);
    old_put(txn, "dead.0", &key, 8, buf, old_record(&m, buf, sizeof buf, 1));
    m = (rec_msg){.id = 5, .enq_ns = 1, .cost = 1, .level = 0, .body = "delayed", .body_len = 7};
    key = htobe64(1000); /* due */
    memcpy(kb, &key, 8);
    key = htobe64(5);
    memcpy(kb + 8, &key, 8);
    old_put(txn, "delayed", kb, 16, buf, old_record(&m, buf, sizeof buf, 0));
    const char *trees[] = {"q.0", "q.1", "dead.0", "dead.1", "delayed", "idem", "idem_exp", "ttl"};
    for (size_t i = 0; i < sizeof trees / sizeof trees[0]; i++) {
        MDB_dbi dbi;
        assert_int_equal(mdb_dbi_open(txn, trees[i], MDB_CREATE, &dbi), 0);
        MDB_val k = {1, "\0"}, v = {1, "\0"};
        if (format >= 2 && (trees[i][0] == 'q' || strcmp(trees[i], "delayed") == 0))
            assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
    }
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
}

/* raw_get reads tree name's value under key from a closed store. */
static size_t raw_get(const char *dir, const char *name, const void *key, size_t klen, void *out, size_t cap)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_val k = {klen, (void *)key}, v;
    sfix_lmdb_at(dir, name, &env, &txn, &dbi);
    int rc = mdb_get(txn, dbi, &k, &v);
    size_t n = rc == 0 ? v.mv_size : 0;
    if (rc == 0)
        memcpy(out, v.mv_data, n < cap ? n : cap);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return n;
}

/* A store of format 1 (no anchors) or 2 opens, keeps every message, dead
 * letter, delayed message, id and setting, and becomes format 3: every
 * record sealed again for its key (format byte 2), every meta value sealed,
 * the anchors there. */
static void upgrade_from(sfix *f, unsigned format)
{
    store_rec rec;
    uint64_t key, id;
    unsigned level;
    unsigned char buf[256], kb[8];
    make_old_store(f->dir, format);
    assert_int_equal(sfix_reopen(f, 2, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[0].count, 0);
    assert_int_equal(f->info[1].count, 1);
    assert_int_equal(f->info[0].dead, 1);
    assert_int_equal(store_seek(f->s, 1, 0, &key, &rec), SL_OK);
    sfix_assert_body(&rec, "from format 1");
    assert_int_equal(store_dead_get(f->s, 0, 4, &rec), SL_OK);
    sfix_assert_body(&rec, "an old dead letter");
    assert_int_equal(store_delayed_pop(f->s, 2000, &level, &key), SL_OK);
    assert_int_equal(level, 0);
    assert_int_equal(store_get(f->s, 0, key, &rec), SL_OK);
    sfix_assert_body(&rec, "delayed");
    id = store_next_id(f->s);
    assert_true(id >= 10);
    store_txn_release(f->s);
    store_close(&f->s);
    /* on disk: the records' format byte, the seals */
    put_be64(kb, STORE_KEY_MID + 1);
    assert_int_equal(raw_get(f->dir, "q.1", kb, 8, buf, sizeof buf), 48 + 1 + 13);
    assert_int_equal(buf[4], 3);
    put_be64(kb, 4);
    assert_true(raw_get(f->dir, "dead.0", kb, 8, buf, sizeof buf) > 48);
    assert_int_equal(buf[4], 3);
    assert_int_equal(raw_get(f->dir, "meta", "format", 6, buf, sizeof buf), 4 + 4);
    assert_int_equal(get_le32(buf), STORE_FORMAT);
    assert_int_equal(raw_get(f->dir, "meta", "level/01", 8, buf, sizeof buf), 9 + 4);
    assert_memory_equal(buf, "a setting", 9);
    const char *anchored[] = {"q.0", "q.1", "delayed"};
    for (size_t i = 0; i < sizeof anchored / sizeof anchored[0]; i++) /* the anchor is there */
        assert_int_equal(raw_get(f->dir, anchored[i], "\0", 1, buf, sizeof buf), 1);
    /* and it opens again as format 3, as it is */
    assert_int_equal(sfix_reopen(f, 2, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[1].count, 1);
}

static void test_format_1_is_upgraded(void **state)
{
    upgrade_from(*state, 1);
}

static void test_format_2_is_upgraded(void **state)
{
    upgrade_from(*state, 2);
}

/* A store of format 3 (before headers: built here with this build, then
 * turned into what a format-3 broker wrote, sfix_as_format3) opens as
 * format 4 without a record rewritten: its messages, dead letters and
 * delayed ones read with no headers and no key, their bytes on disk as they
 * were; a message appended after carries headers beside them. */
static void test_format_3_opens_with_its_records_as_they_are(void **state)
{
    sfix *f = *state;
    store_rec rec;
    uint64_t key, id, due = 5000;
    unsigned level;
    unsigned char buf[256], kb[8];
    assert_int_equal(sfix_reopen(f, 2, SFIX_MAP_BYTES), SL_OK);
    uint64_t k1 = sfix_append(f->s, 1, "written before headers", &id);
    store_rec d = {.id = store_next_id(f->s), .enq_ns = 1, .cost = 1, .level = 0, .body = "later", .body_len = 5};
    assert_int_equal(store_append_delayed(f->s, &d, due), SL_OK);
    assert_int_equal(store_commit(f->s), SL_OK);
    store_close(&f->s);
    assert_int_equal(sfix_as_format3(f->dir), 2);
    put_be64(kb, k1);
    assert_int_equal(raw_get(f->dir, "q.1", kb, 8, buf, sizeof buf), 48 + 3 + 22);
    assert_int_equal(buf[4], 2);
    assert_int_equal(raw_get(f->dir, "meta", "format", 6, buf, sizeof buf), 8);
    assert_int_equal(get_le32(buf), 3);

    assert_int_equal(sfix_reopen(f, 2, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[1].count, 1);
    assert_int_equal(store_seek(f->s, 1, 0, &key, &rec), SL_OK);
    sfix_assert_body(&rec, "written before headers");
    assert_int_equal(rec.headers_len, 0);
    assert_int_equal(rec.key_len, 0);
    assert_int_equal(store_delayed_pop(f->s, due, &level, &key), SL_OK);
    assert_int_equal(store_get(f->s, 0, key, &rec), SL_OK);
    sfix_assert_body(&rec, "later");
    assert_int_equal(rec.headers_len, 0);
    /* a new message with headers beside the old ones */
    proto_hdrs h = {.n = 1};
    h.name[0] = (proto_buf){"traceparent", 11};
    h.value[0] = (proto_buf){"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", 55};
    unsigned char block[128];
    proto_hdrs_pack(&h, block);
    store_rec n = {.id = store_next_id(f->s), .enq_ns = 2, .cost = 1, .level = 1, .body = "new", .body_len = 3,
                   .headers = block, .headers_len = (uint32_t)proto_hdrs_packed_bytes(&h), .key = "k-1", .key_len = 3};
    uint64_t k2;
    assert_int_equal(store_append(f->s, &n, &k2), SL_OK);
    assert_int_equal(store_commit(f->s), SL_OK);
    store_close(&f->s);
    put_be64(kb, k1); /* the old record untouched, the format now 4 */
    assert_int_equal(raw_get(f->dir, "q.1", kb, 8, buf, sizeof buf), 48 + 3 + 22);
    assert_int_equal(buf[4], 2);
    assert_int_equal(raw_get(f->dir, "meta", "format", 6, buf, sizeof buf), 8);
    assert_int_equal(get_le32(buf), STORE_FORMAT);
    assert_int_equal(sfix_reopen(f, 2, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[1].count, 2);
    assert_int_equal(store_get(f->s, 1, k2, &rec), SL_OK);
    assert_int_equal(rec.headers_len, n.headers_len);
    assert_memory_equal(rec.headers, block, n.headers_len);
    assert_int_equal(rec.key_len, 3);
    assert_memory_equal(rec.key, "k-1", 3);
}

/* A meta value damaged on disk (the next id here) is refused at open with
 * SL_ECORRUPT, never believed: a wrong next id would hand out ids again. */
static void test_a_damaged_meta_value_is_refused(void **state)
{
    sfix *f = *state;
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_val k = {7, "next_id"}, v;
    unsigned char b[12];
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    sfix_append(f->s, 0, "one", NULL);
    assert_int_equal(store_commit(f->s), SL_OK);
    store_close(&f->s);
    sfix_lmdb_at(f->dir, "meta", &env, &txn, &dbi);
    assert_int_equal(mdb_get(txn, dbi, &k, &v), 0);
    assert_int_equal(v.mv_size, 12);
    memcpy(b, v.mv_data, 12);
    b[0] ^= 0x40; /* an id 64 away, its seal unchanged */
    v = (MDB_val){12, b};
    assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_ECORRUPT);
    assert_null(f->s);
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
        T(test_format_2_is_upgraded),
        T(test_format_3_opens_with_its_records_as_they_are),
        T(test_a_damaged_meta_value_is_refused),
        T(test_dropping_levels_with_data_is_refused),
        T(test_dropping_empty_levels_is_allowed),
        T(test_next_id_persists_and_never_repeats),
#undef T
    };
    log_set_level(LOG_WARN);
    return cmocka_run_group_tests_name("store layout", tests, NULL, NULL);
}
