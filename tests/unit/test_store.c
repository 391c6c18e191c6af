/*
 * test_store.c - the store against a real LMDB environment: records and
 * their order, transactions, delays, dead letters, corruption (a record
 * under another key than its own; one set aside in place), a full map.
 * What it keeps besides messages (format, anchors, levels, ids):
 * test_store_layout.c.
 *
 * Each test has a store of its own (store_fixture.h). Durability is tested
 * the blunt way: close the store, open it again, look. Corruption is made
 * from outside the store, with pwrite on data.mdb, the way it would arrive
 * in the field. The CRC test draws random buffers from th_seed(), which
 * prints the seed; SLUICE_SEED replays it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "byteorder.h"
#include "crc32c.h"
#include "harness.h"
#include "log.h"
#include "store.h"
#include "store_fixture.h"

/* flip_pattern flips one bit in the middle of every copy of pattern in the
 * data file and returns how many copies it found. */
static int flip_pattern(const char *dir, const char *pattern)
{
    char path[128];
    struct stat st;
    size_t len = strlen(pattern);
    int found = 0;
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &st), 0);
    char *buf = malloc((size_t)st.st_size);
    assert_non_null(buf);
    assert_int_equal(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
    for (char *p = buf; (p = memmem(p, (size_t)(buf + st.st_size - p), pattern, len)); p += len) {
        char c = p[len / 2] ^ 0x01;
        assert_int_equal(pwrite(fd, &c, 1, p - buf + (off_t)(len / 2)), 1);
        found++;
    }
    free(buf);
    close(fd);
    return found;
}

/* ---- tests ---- */

static void test_crc32c_matches_known_vectors(void **state)
{
    (void)state;
    unsigned char buf[300];
    unsigned seed = th_seed();
    print_message("crc32c: hardware path %s\n", crc32c_hardware() ? "on" : "off");

    assert_int_equal(crc32c_value("123456789", 9), 0xE3069283u);
    assert_int_equal(crc32c_extend_soft(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(crc32c_value(NULL, 0), 0);
    /* RFC 3720, appendix B.4 */
    memset(buf, 0, 32);
    assert_int_equal(crc32c_value(buf, 32), 0x8A9136AAu);
    memset(buf, 0xFF, 32);
    assert_int_equal(crc32c_value(buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (unsigned char)i;
    assert_int_equal(crc32c_extend_soft(0, buf, 32), 0x46DD794Eu);

    srand(seed);
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)rand();
    for (size_t off = 0; off < 8; off++)
        for (size_t len = 0; len + off <= sizeof buf; len += 1 + len / 8) {
            uint32_t whole = crc32c_value(buf + off, len);
            assert_int_equal(crc32c_extend_soft(0, buf + off, len), whole);
            size_t cut = len ? (size_t)rand() % len : 0;
            assert_int_equal(crc32c_extend(crc32c_value(buf + off, cut), buf + off + cut, len - cut), whole);
        }
}

static void test_append_then_seek_is_fifo(void **state)
{
    sfix *f = *state;
    char text[32];
    uint64_t keys[20], ids[20], key;
    store_rec rec;
    assert_int_equal(sfix_reopen(f, 3, SFIX_MAP_BYTES), SL_OK);
    for (int i = 0; i < 20; i++) {
        snprintf(text, sizeof text, "message %d", i);
        keys[i] = sfix_append(f->s, 1, text, &ids[i]);
        if (i > 0)
            assert_true(keys[i] > keys[i - 1]);
    }
    assert_true(keys[0] > STORE_KEY_MID);
    assert_true(store_dirty(f->s));

    uint64_t from = 0;
    for (int i = 0; i < 20; i++) {
        assert_int_equal(store_seek(f->s, 1, from, &key, &rec), SL_OK);
        snprintf(text, sizeof text, "message %d", i);
        assert_int_equal(key, keys[i]);
        sfix_assert_body(&rec, text);
        assert_int_equal(rec.id, ids[i]);
        assert_int_equal(rec.level, 1);
        assert_int_equal(rec.enq_ns, 1001);
        assert_int_equal(rec.cost, 1);
        assert_int_equal(rec.tag_len, 3);
        assert_memory_equal(rec.tag, "tag", 3);
        from = key + 1;
    }
    assert_int_equal(store_seek(f->s, 1, from, &key, &rec), SL_ENOTFOUND);
    assert_int_equal(store_seek(f->s, 0, 0, &key, &rec), SL_ENOTFOUND);

    assert_int_equal(store_del(f->s, 1, keys[0]), SL_OK);
    assert_int_equal(store_del(f->s, 1, keys[0]), SL_ENOTFOUND);
    assert_int_equal(store_get(f->s, 1, keys[0], &rec), SL_ENOTFOUND);
    assert_int_equal(store_seek(f->s, 1, 0, &key, &rec), SL_OK);
    assert_int_equal(key, keys[1]);
    assert_int_equal(store_failed(f->s), SL_OK); /* not-found does not poison the pass */
    assert_int_equal(store_commit(f->s), SL_OK);
    assert_false(store_dirty(f->s));
}

static void test_committed_data_survives_reopen(void **state)
{
    sfix *f = *state;
    uint64_t k0[3], k2[2], key;
    store_rec rec;
    struct stat st;
    assert_int_equal(sfix_reopen(f, 3, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(stat(f->dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0750);
    for (int i = 0; i < 3; i++)
        k0[i] = sfix_append(f->s, 0, "zero", NULL);
    for (int i = 0; i < 2; i++)
        k2[i] = sfix_append(f->s, 2, "two", NULL);
    assert_int_equal(store_bury(f->s, 0, k0[0], "poison", 5), SL_OK);
    assert_int_equal(store_commit(f->s), SL_OK);

    assert_int_equal(sfix_reopen(f, 3, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[0].count, 2);
    assert_int_equal(f->info[0].dead, 1);
    assert_int_equal(f->info[0].first_key, k0[1]);
    assert_int_equal(f->info[0].last_key, k0[2]);
    assert_int_equal(f->info[1].count, 0);
    assert_int_equal(f->info[1].dead, 0);
    assert_int_equal(f->info[1].first_key, 0);
    assert_int_equal(f->info[1].last_key, 0);
    assert_int_equal(f->info[2].count, 2);
    assert_int_equal(f->info[2].first_key, k2[0]);
    assert_int_equal(f->info[2].last_key, k2[1]);
    assert_int_equal(store_get(f->s, 2, k2[1], &rec), SL_OK);
    sfix_assert_body(&rec, "two");

    /* The tail counter resumes from the last key on disk. */
    assert_int_equal(sfix_append(f->s, 0, "later", NULL), k0[2] + 1);
    assert_int_equal(store_seek(f->s, 0, k0[2] + 1, &key, &rec), SL_OK);
    sfix_assert_body(&rec, "later");
}

static void test_uncommitted_writes_vanish_on_close(void **state)
{
    sfix *f = *state;
    uint64_t key, kept;
    store_rec rec;
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    kept = sfix_append(f->s, 0, "committed", NULL);
    assert_int_equal(store_commit(f->s), SL_OK);
    sfix_append(f->s, 0, "lost 1", NULL);
    sfix_append(f->s, 0, "lost 2", NULL);
    assert_int_equal(store_del(f->s, 0, kept), SL_OK);
    assert_true(store_dirty(f->s));

    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[0].count, 1);
    assert_int_equal(store_seek(f->s, 0, 0, &key, &rec), SL_OK);
    assert_int_equal(key, kept);
    sfix_assert_body(&rec, "committed");
}

static void test_delayed_pop_inserts_before_head(void **state)
{
    sfix *f = *state;
    uint64_t a, b, c, key, due, counts[3];
    unsigned level;
    store_rec rec;
    assert_int_equal(sfix_reopen(f, 3, SFIX_MAP_BYTES), SL_OK);
    a = sfix_append(f->s, 1, "A", NULL);
    b = sfix_append(f->s, 1, "B", NULL);
    assert_int_equal(store_set_attempt(f->s, 1, b, 2), SL_OK);
    assert_int_equal(store_delayed_first(f->s, &due), SL_ENOTFOUND);
    assert_int_equal(store_delay(f->s, 1, b, 1000), SL_OK);
    assert_int_equal(store_get(f->s, 1, b, &rec), SL_ENOTFOUND);
    assert_int_equal(store_delayed_first(f->s, &due), SL_OK);
    assert_int_equal(due, 1000);
    store_delayed_counts(f->s, counts);
    assert_int_equal(counts[0], 0);
    assert_int_equal(counts[1], 1);
    assert_int_equal(counts[2], 0);

    assert_int_equal(store_delayed_pop(f->s, 999, &level, &key), SL_ENOTFOUND);
    assert_int_equal(store_delayed_pop(f->s, 1000, &level, &key), SL_OK);
    assert_int_equal(level, 1);
    assert_true(key < a);
    assert_int_equal(store_seek(f->s, 1, 0, &key, &rec), SL_OK);
    sfix_assert_body(&rec, "B");
    assert_int_equal(rec.attempt, 2);
    assert_int_equal(store_seek(f->s, 1, key + 1, &key, &rec), SL_OK);
    sfix_assert_body(&rec, "A");
    assert_int_equal(store_delayed_first(f->s, &due), SL_ENOTFOUND);

    /* Into an empty level, the popped message takes the next tail key. */
    c = sfix_append(f->s, 2, "C", NULL);
    assert_int_equal(store_delay(f->s, 2, c, 5), SL_OK);
    assert_int_equal(store_delayed_pop(f->s, UINT64_MAX, &level, &key), SL_OK);
    assert_int_equal(level, 2);
    assert_int_equal(key, c + 1);

    /* Delayed records survive a restart. */
    assert_int_equal(store_delay(f->s, 2, key, 7000), SL_OK);
    assert_int_equal(store_commit(f->s), SL_OK);
    assert_int_equal(sfix_reopen(f, 3, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[1].count, 2);
    assert_int_equal(f->info[2].count, 0);
    store_delayed_counts(f->s, counts);
    assert_int_equal(counts[2], 1);
    assert_int_equal(store_delayed_first(f->s, &due), SL_OK);
    assert_int_equal(due, 7000);
}

static void test_bury_moves_to_dead_with_reason(void **state)
{
    sfix *f = *state;
    uint64_t id, key;
    store_rec rec;
    assert_int_equal(sfix_reopen(f, 2, SFIX_MAP_BYTES), SL_OK);
    key = sfix_append(f->s, 1, "doomed", &id);
    assert_int_equal(store_dead_count(f->s, 1), 0);
    assert_int_equal(store_bury(f->s, 1, key, "max attempts exceeded", 424242), SL_OK);
    assert_int_equal(store_get(f->s, 1, key, &rec), SL_ENOTFOUND);
    assert_int_equal(store_dead_count(f->s, 1), 1);
    assert_int_equal(store_dead_count(f->s, 0), 0);
    assert_int_equal(store_bury(f->s, 1, key, "again", 1), SL_ENOTFOUND);
    assert_int_equal(store_commit(f->s), SL_OK);

    assert_int_equal(sfix_reopen(f, 2, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[1].dead, 1);
    assert_int_equal(f->info[1].count, 0);
    assert_int_equal(store_dead_get(f->s, 1, id, &rec), SL_OK);
    assert_int_equal(rec.id, id);
    sfix_assert_body(&rec, "doomed");
    assert_int_equal(rec.reason_len, strlen("max attempts exceeded"));
    assert_memory_equal(rec.reason, "max attempts exceeded", rec.reason_len);
    assert_int_equal(rec.died_ns, 424242);
    assert_int_equal(store_dead_get(f->s, 0, id, &rec), SL_ENOTFOUND);
}

static void test_dead_letters_walk_requeue_and_delete(void **state)
{
    sfix *f = *state;
    uint64_t ids[3], id, key;
    store_rec rec;
    assert_int_equal(sfix_reopen(f, 3, SFIX_MAP_BYTES), SL_OK);
    for (int i = 0; i < 3; i++) {
        key = sfix_append(f->s, 1, i == 1 ? "second" : "other", &ids[i]);
        assert_int_equal(store_set_attempt(f->s, 1, key, 4), SL_OK);
        assert_int_equal(store_bury(f->s, 1, key, "used up", 99), SL_OK);
    }
    assert_int_equal(store_commit(f->s), SL_OK);

    /* walked in id order */
    assert_int_equal(store_dead_next(f->s, 1, 0, &id, &rec), SL_OK);
    assert_int_equal(id, ids[0]);
    assert_int_equal(store_dead_next(f->s, 1, ids[0], &id, &rec), SL_OK);
    assert_int_equal(id, ids[1]);
    assert_int_equal(rec.reason_len, 7);
    assert_int_equal(store_dead_next(f->s, 1, ids[2], &id, &rec), SL_ENOTFOUND);
    assert_int_equal(store_dead_next(f->s, 0, 0, &id, &rec), SL_ENOTFOUND);

    /* a requeue not committed vanishes whole: still dead, not queued */
    assert_int_equal(store_dead_requeue(f->s, 1, ids[1], 2, &key), SL_OK);
    assert_int_equal(store_dead_del(f->s, 1, ids[0]), SL_OK);
    assert_int_equal(sfix_reopen(f, 3, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[1].dead, 3);
    assert_int_equal(f->info[2].count, 0);

    /* committed: revived at the tail of level 2, attempt 0; the other gone */
    assert_int_equal(store_dead_requeue(f->s, 1, ids[1], 2, &key), SL_OK);
    assert_int_equal(store_dead_requeue(f->s, 1, ids[1], 2, &key), SL_ENOTFOUND);
    assert_int_equal(store_dead_del(f->s, 1, ids[0]), SL_OK);
    assert_int_equal(store_dead_del(f->s, 1, ids[0]), SL_ENOTFOUND);
    assert_int_equal(store_dead_requeue(f->s, 1, ids[2], 7, &key), SL_EINVAL);
    assert_int_equal(store_commit(f->s), SL_OK);
    assert_int_equal(sfix_reopen(f, 3, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[1].dead, 1);
    assert_int_equal(f->info[2].count, 1);
    assert_int_equal(store_seek(f->s, 2, 0, &key, &rec), SL_OK);
    assert_int_equal(rec.id, ids[1]);
    assert_int_equal(rec.level, 2);
    assert_int_equal(rec.attempt, 0);
    sfix_assert_body(&rec, "second");
}

static void test_set_attempt_persists(void **state)
{
    sfix *f = *state;
    uint64_t key;
    store_rec rec;
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    key = sfix_append(f->s, 0, "retry me", NULL);
    assert_int_equal(store_commit(f->s), SL_OK);
    assert_int_equal(store_set_attempt(f->s, 0, key, 7), SL_OK);
    assert_int_equal(store_set_attempt(f->s, 0, key + 1, 7), SL_ENOTFOUND);
    assert_int_equal(store_commit(f->s), SL_OK);

    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(store_get(f->s, 0, key, &rec), SL_OK);
    assert_int_equal(rec.attempt, 7);
    sfix_assert_body(&rec, "retry me");
}

static void test_corrupt_record_is_detected(void **state)
{
    sfix *f = *state;
    const char *pattern = "SLUICE-CORRUPTION-TARGET-0123456789abcdef";
    uint64_t bad, good, key;
    store_rec rec;
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    bad = sfix_append(f->s, 0, pattern, NULL);
    good = sfix_append(f->s, 0, "intact neighbour", NULL);
    assert_int_equal(store_commit(f->s), SL_OK);
    store_close(&f->s);

    assert_true(flip_pattern(f->dir, pattern) >= 1);
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[0].count, 2);
    assert_int_equal(store_get(f->s, 0, bad, &rec), SL_ECORRUPT);
    assert_int_equal(store_seek(f->s, 0, 0, &key, &rec), SL_ECORRUPT);
    assert_int_equal(store_set_attempt(f->s, 0, bad, 1), SL_ECORRUPT);
    assert_int_equal(store_get(f->s, 0, good, &rec), SL_OK);
    sfix_assert_body(&rec, "intact neighbour");
    assert_int_equal(store_failed(f->s), SL_OK);
}

/* A record's checksum covers its key: two intact records whose values trade
 * places (the keys still in order, so LMDB finds each) both fail. Before,
 * the checksum left the key out and a damaged key went unseen. */
static void test_a_record_under_another_key_is_detected(void **state)
{
    sfix *f = *state;
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    unsigned char ka[8], kb[8], va[256], vb[256];
    store_rec rec;
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    uint64_t a = sfix_append(f->s, 0, "the first", NULL), b = sfix_append(f->s, 0, "the second", NULL);
    assert_int_equal(store_commit(f->s), SL_OK);
    store_close(&f->s);
    put_be64(ka, a);
    put_be64(kb, b);
    sfix_lmdb_at(f->dir, "q.0", &env, &txn, &dbi);
    MDB_val k1 = {8, ka}, k2 = {8, kb}, v1, v2;
    assert_int_equal(mdb_get(txn, dbi, &k1, &v1), 0);
    memcpy(va, v1.mv_data, v1.mv_size);
    v1.mv_data = va;
    assert_int_equal(mdb_get(txn, dbi, &k2, &v2), 0);
    memcpy(vb, v2.mv_data, v2.mv_size);
    v2.mv_data = vb;
    assert_int_equal(mdb_put(txn, dbi, &k1, &v2, 0), 0);
    assert_int_equal(mdb_put(txn, dbi, &k2, &v1, 0), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(store_get(f->s, 0, a, &rec), SL_ECORRUPT);
    assert_int_equal(store_get(f->s, 0, b, &rec), SL_ECORRUPT);
}

/* A record that failed its check is set aside in place: never deleted (its
 * node may be what is damaged), stepped over by every read of its level, a
 * copy of its bytes among the level's dead letters; after a reopen it is
 * still stepped over, and never set aside twice. */
static void test_a_corrupt_record_is_set_aside_in_place(void **state)
{
    sfix *f = *state;
    const char *pattern = "SLUICE-SET-ASIDE-TARGET-0123456789abcdef";
    uint64_t bad, good, key, id, dead_id;
    store_rec rec;
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    bad = sfix_append(f->s, 0, pattern, NULL);
    good = sfix_append(f->s, 0, "the one after it", NULL);
    assert_int_equal(store_commit(f->s), SL_OK);
    store_close(&f->s);
    assert_true(flip_pattern(f->dir, pattern) >= 1);
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(store_seek(f->s, 0, 0, &key, &rec), SL_ECORRUPT);
    assert_int_equal(key, bad);
    assert_int_equal(store_quarantine(f->s, 0, bad, 5, &dead_id), SL_OK);
    assert_int_equal(store_seek(f->s, 0, 0, &key, &rec), SL_OK); /* stepped over */
    assert_int_equal(key, good);
    assert_int_equal(store_get(f->s, 0, bad, &rec), SL_ENOTFOUND);
    assert_int_equal(store_level_count(f->s, 0), 1);
    assert_int_equal(store_dead_next(f->s, 0, 0, &id, &rec), SL_OK);
    assert_int_equal(id, dead_id);
    assert_int_equal(rec.tag_len, 7);
    assert_memory_equal(rec.tag, "corrupt", 7);
    assert_true(rec.body_len > strlen(pattern)); /* the raw record, its damage included */
    assert_int_equal(store_commit(f->s), SL_OK);
    store_close(&f->s);

    MDB_env *env; /* the record is still there, untouched */
    MDB_txn *txn;
    MDB_dbi dbi;
    unsigned char kb[8];
    MDB_val k = {8, kb}, v;
    put_be64(kb, bad);
    sfix_lmdb_at(f->dir, "q.0", &env, &txn, &dbi);
    assert_int_equal(mdb_get(txn, dbi, &k, &v), 0);
    assert_non_null(memmem(v.mv_data, v.mv_size, "SLUICE-SET-ASIDE", 16));
    mdb_txn_abort(txn);
    mdb_env_close(env);

    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[0].count, 1);
    assert_int_equal(f->info[0].dead, 1);
    assert_int_equal(store_seek(f->s, 0, 0, &key, &rec), SL_OK);
    assert_int_equal(key, good);
    assert_int_equal(store_quarantine(f->s, 0, bad, 6, &dead_id), SL_ENOTFOUND);
    assert_int_equal(store_dead_count(f->s, 0), 1);
}

/* A dead letter that fails its check is stepped over by the walk that
 * lists, requeues, purges and retains dead letters, and left in place. */
static void test_a_corrupt_dead_letter_is_stepped_over(void **state)
{
    sfix *f = *state;
    uint64_t ids[3], id;
    store_rec rec;
    const char *bodies[3] = {"the first dead", "SLUICE-DEAD-CORRUPTION-TARGET-0123456789", "the third dead"};
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    for (int i = 0; i < 3; i++) {
        uint64_t key = sfix_append(f->s, 0, bodies[i], &ids[i]);
        assert_int_equal(store_bury(f->s, 0, key, "dead", 1), SL_OK);
    }
    assert_int_equal(store_commit(f->s), SL_OK);
    store_close(&f->s);
    assert_true(flip_pattern(f->dir, bodies[1]) >= 1);
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(store_dead_next(f->s, 0, 0, &id, &rec), SL_OK);
    assert_int_equal(id, ids[0]);
    assert_int_equal(store_dead_next(f->s, 0, id, &id, &rec), SL_OK);
    assert_int_equal(id, ids[2]); /* the second, damaged, stepped over */
    sfix_assert_body(&rec, bodies[2]);
    assert_int_equal(store_dead_next(f->s, 0, id, &id, &rec), SL_ENOTFOUND);
    assert_int_equal(store_dead_get(f->s, 0, ids[1], &rec), SL_ECORRUPT);
    assert_int_equal(store_dead_count(f->s, 0), 3);
}

static void test_map_full_fails_the_pass_only(void **state)
{
    sfix *f = *state;
    static char big[4096];
    const uint64_t map_bytes = 256 * 1024;
    uint64_t keys[3], key, id_before, used_before;
    store_rec rec = {.level = 0, .cost = 1, .body = big, .body_len = sizeof big}, got;
    int err = SL_OK;
    memset(big, 'x', sizeof big);
    assert_int_equal(sfix_reopen(f, 1, map_bytes), SL_OK);
    assert_int_equal(store_map_bytes(f->s), map_bytes);
    for (int i = 0; i < 3; i++)
        keys[i] = sfix_append(f->s, 0, i == 0 ? "first" : i == 1 ? "second" : "third", NULL);
    assert_int_equal(store_commit(f->s), SL_OK);
    used_before = store_used_bytes(f->s);
    assert_true(used_before > 0 && used_before < map_bytes);

    int appended = 0;
    while (appended < 1000) {
        rec.id = store_next_id(f->s);
        if ((err = store_append(f->s, &rec, &key)) != SL_OK)
            break;
        appended++;
    }
    assert_int_equal(err, SL_ENOSPC);
    assert_true(appended > 0);
    assert_int_equal(store_failed(f->s), SL_ENOSPC);
    assert_int_equal(store_append(f->s, &rec, &key), SL_ENOSPC);
    assert_int_equal(store_get(f->s, 0, keys[0], &got), SL_ENOSPC);
    assert_true(store_dirty(f->s));
    id_before = rec.id;
    assert_int_equal(store_commit(f->s), SL_ENOSPC);
    assert_int_equal(store_failed(f->s), SL_OK);

    /* The next pass starts clean and sees exactly the committed data. */
    assert_int_equal(store_get(f->s, 0, keys[2], &got), SL_OK);
    sfix_assert_body(&got, "third");
    assert_int_equal(store_seek(f->s, 0, keys[2] + 1, &key, &got), SL_ENOTFOUND);
    assert_true(store_next_id(f->s) > id_before);
    assert_int_equal(store_commit(f->s), SL_OK);

    assert_int_equal(sfix_reopen(f, 1, map_bytes), SL_OK);
    assert_int_equal(f->info[0].count, 3);
    assert_int_equal(f->info[0].first_key, keys[0]);
    assert_int_equal(f->info[0].last_key, keys[2]);
    assert_int_equal(store_get(f->s, 0, keys[0], &got), SL_OK);
    sfix_assert_body(&got, "first");
    assert_true(store_next_id(f->s) > id_before);
}

static void test_used_bytes_grow_with_data(void **state)
{
    sfix *f = *state;
    static char body[64 * 1024];
    store_rec rec = {.level = 0, .cost = 1, .body = body, .body_len = sizeof body};
    uint64_t key;
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    uint64_t before = store_used_bytes(f->s);
    for (int i = 0; i < 16; i++) {
        rec.id = store_next_id(f->s);
        assert_int_equal(store_append(f->s, &rec, &key), SL_OK);
    }
    assert_int_equal(store_commit(f->s), SL_OK);
    assert_true(store_used_bytes(f->s) >= before + 16 * sizeof body);
    assert_true(store_used_bytes(f->s) <= store_map_bytes(f->s));
}

static void test_bad_arguments_are_refused(void **state)
{
    sfix *f = *state;
    static char tag[PROTO_MAX_TAG + 1];
    store_cfg cfg = {.dir = f->dir, .levels = 0, .map_bytes = SFIX_MAP_BYTES};
    store *s = NULL;
    store_rec rec = {.level = 2, .body = "x", .body_len = 1};
    uint64_t key;
    assert_int_equal(store_open(&cfg, &s, NULL), SL_EINVAL);
    assert_null(s);
    cfg.levels = PROTO_MAX_LEVELS + 1;
    assert_int_equal(store_open(&cfg, &s, NULL), SL_EINVAL);

    assert_int_equal(sfix_reopen(f, 2, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(store_append(f->s, &rec, &key), SL_EINVAL);
    rec.level = 1;
    rec.tag = tag;
    rec.tag_len = sizeof tag;
    assert_int_equal(store_append(f->s, &rec, &key), SL_ETOOBIG);
    assert_int_equal(store_get(f->s, 2, STORE_KEY_MID, &rec), SL_EINVAL);
    assert_int_equal(store_bury(f->s, 7, STORE_KEY_MID, "x", 0), SL_EINVAL);
    assert_false(store_dirty(f->s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, sfix_setup, sfix_teardown)
        T(test_crc32c_matches_known_vectors),
        T(test_append_then_seek_is_fifo),
        T(test_committed_data_survives_reopen),
        T(test_uncommitted_writes_vanish_on_close),
        T(test_delayed_pop_inserts_before_head),
        T(test_bury_moves_to_dead_with_reason),
        T(test_dead_letters_walk_requeue_and_delete),
        T(test_set_attempt_persists),
        T(test_corrupt_record_is_detected),
        T(test_a_record_under_another_key_is_detected),
        T(test_a_corrupt_record_is_set_aside_in_place),
        T(test_a_corrupt_dead_letter_is_stepped_over),
        T(test_map_full_fails_the_pass_only),
        T(test_used_bytes_grow_with_data),
        T(test_bad_arguments_are_refused),
#undef T
    };
    log_set_level(LOG_WARN);
    return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
