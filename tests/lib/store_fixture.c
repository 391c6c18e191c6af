/*
 * store_fixture.c - a store of its own for each store test (see
 * store_fixture.h). Costs: a directory and an LMDB environment per test.
 */
#include "store_fixture.h"

#include <endian.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "crc32c.h"
#include "harness.h"

int sfix_setup(void **state)
{
    sfix *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    strcpy(f->tmp, "/tmp/sluice-store-XXXXXX");
    if (!mkdtemp(f->tmp)) {
        free(f);
        return -1;
    }
    snprintf(f->dir, sizeof f->dir, "%s/data", f->tmp);
    alarm(SFIX_TIMEOUT_S);
    *state = f;
    return 0;
}

int sfix_teardown(void **state)
{
    sfix *f = *state;
    store_close(&f->s);
    alarm(0);
    th_rmrf(f->tmp);
    free(f);
    return 0;
}

int sfix_reopen(sfix *f, unsigned levels, uint64_t map_bytes)
{
    store_cfg cfg = {.dir = f->dir, .levels = levels, .map_bytes = map_bytes};
    store_close(&f->s);
    memset(f->info, 0xAB, sizeof f->info); /* so that unfilled entries show */
    return store_open(&cfg, &f->s, f->info);
}

uint64_t sfix_append(store *s, unsigned level, const char *text, uint64_t *id)
{
    store_rec rec = {
        .id = store_next_id(s), .enq_ns = 1000 + level, .expires_ns = 0, .attempt = 0, .cost = 1,
        .level = (uint8_t)level, .tag = "tag", .tag_len = 3, .body = text, .body_len = (uint32_t)strlen(text),
    };
    uint64_t key = 0;
    assert_int_equal(store_append(s, &rec, &key), SL_OK);
    if (id)
        *id = rec.id;
    return key;
}

void sfix_assert_body(const store_rec *rec, const char *text)
{
    assert_int_equal(rec->body_len, strlen(text));
    assert_memory_equal(rec->body, text, strlen(text));
}

void sfix_lmdb_at(const char *dir, const char *name, MDB_env **env, MDB_txn **txn, MDB_dbi *dbi)
{
    assert_int_equal(mdb_env_create(env), 0);
    assert_int_equal(mdb_env_set_maxdbs(*env, 64), 0);
    assert_int_equal(mdb_env_open(*env, dir, 0, 0640), 0);
    assert_int_equal(mdb_txn_begin(*env, NULL, 0, txn), 0);
    assert_int_equal(mdb_dbi_open(*txn, name, 0, dbi), 0);
}

void sfix_queue_open(const char *dir, uint64_t map_bytes, store **st, queue *q)
{
    store_cfg cfg = {.dir = dir, .levels = 1, .map_bytes = map_bytes};
    store_level_info info[PROTO_MAX_LEVELS];
    assert_int_equal(store_open(&cfg, st, info), SL_OK);
    assert_int_equal(queue_open(q, *st, 1, info), SL_OK);
    q->now_wall_ns = 1;
}

void sfix_meta_write_u32(const char *dir, const char *name, uint32_t value)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    uint32_t le = htole32(value);
    MDB_val k = {strlen(name), (void *)name}, v = {sizeof le, &le};
    sfix_lmdb_at(dir, "meta", &env, &txn, &dbi);
    assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
}

void sfix_meta_write_sealed_u32(const char *dir, const char *name, uint32_t value)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    uint32_t v[2] = {htole32(value), 0};
    v[1] = htole32(crc32c_extend(crc32c_value(name, strlen(name)), &v[0], 4));
    MDB_val k = {strlen(name), (void *)name}, val = {sizeof v, v};
    sfix_lmdb_at(dir, "meta", &env, &txn, &dbi);
    assert_int_equal(mdb_put(txn, dbi, &k, &val, 0), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
}

unsigned sfix_as_format3(const char *dir)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi main_dbi;
    MDB_cursor *cur;
    MDB_val k, v;
    char names[64][32];
    unsigned n = 0, done = 0;
    sfix_lmdb_at(dir, "meta", &env, &txn, &main_dbi);
    assert_int_equal(mdb_dbi_open(txn, NULL, 0, &main_dbi), 0);
    assert_int_equal(mdb_cursor_open(txn, main_dbi, &cur), 0);
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && n < 64; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
        if (k.mv_size < sizeof names[0]) {
            memcpy(names[n], k.mv_data, k.mv_size);
            names[n++][k.mv_size] = '\0';
        }
    mdb_cursor_close(cur);
    for (unsigned i = 0; i < n; i++) {
        MDB_dbi dbi;
        if (strncmp(names[i], "q.", 2) != 0 && strncmp(names[i], "dead.", 5) != 0 && strcmp(names[i], "delayed") != 0)
            continue;
        assert_int_equal(mdb_dbi_open(txn, names[i], 0, &dbi), 0);
        assert_int_equal(mdb_cursor_open(txn, dbi, &cur), 0);
        for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            if (v.mv_size < 48)
                continue; /* an anchor */
            unsigned char buf[4096];
            assert_true(v.mv_size <= sizeof buf);
            memcpy(buf, v.mv_data, v.mv_size);
            assert_int_equal(buf[20] | buf[21] | buf[22] | buf[23], 0); /* no headers, no key */
            buf[4] = 2;
            uint32_t crc = htole32(crc32c_extend(crc32c_value(k.mv_data, k.mv_size), buf + 4, v.mv_size - 4));
            memcpy(buf, &crc, 4);
            MDB_val nv = {v.mv_size, buf};
            assert_int_equal(mdb_cursor_put(cur, &k, &nv, MDB_CURRENT), 0);
            done++;
        }
        mdb_cursor_close(cur);
    }
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
    sfix_meta_write_sealed_u32(dir, "format", 3);
    return done;
}
