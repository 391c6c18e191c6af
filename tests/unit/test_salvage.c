/*
 * test_salvage.c - store_salvage against real stores: a healthy one is
 * copied whole (every record under its key, dead letters, delayed
 * messages, settings, tag names, idempotency keys, the TTL index, the next
 * id); a damaged page header, a damaged main tree and a damaged record
 * each lose nothing but the damaged record itself; the log's confirmed
 * batches are replayed; a store a process holds open, and a target that
 * holds a store already, are refused.
 *
 * A crash is a child process that makes batches durable through the log
 * and leaves with _exit, as in test_wal.c. Damage is made from outside with
 * pwrite. Each test has its own directory and runs under
 * alarm(SFIX_TIMEOUT_S) (store_fixture.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "store.h"
#include "store_fixture.h"
#include "store_pages.h"

#define MSGS 200     /* per level, in 3 levels; level 1 fair by tag */
#define NEVER_NS (UINT64_C(1) << 62)

static void to_dir(const sfix *f, char out[160])
{
    snprintf(out, 160, "%s/salvaged", f->tmp);
}

static size_t body_of(unsigned level, unsigned i, char *buf, size_t cap)
{
    size_t len = i % 40 == 39 ? 3000 + i : 20 + i % 50; /* some large enough for overflow pages */
    int n = snprintf(buf, cap, "L%u #%u ", level, i);
    for (size_t k = (size_t)n; k < len && k < cap; k++)
        buf[k] = (char)('a' + (k + i) % 26);
    return len;
}

/* fill writes MSGS messages to each of 3 levels (level 1 fair by tag, its
 * keys led by tag ids), a dead letter, a delayed message, a setting, an
 * idempotency key and a time to live, then commits. */
static void fill(sfix *f, store_cfg *cfg)
{
    static char body[8192];
    store_level_info info[PROTO_MAX_LEVELS];
    assert_int_equal(store_open(cfg, &f->s, info), SL_OK);
    store_fair_keys(f->s, 1, 1, 0);
    for (unsigned l = 0; l < 3; l++)
        for (unsigned i = 0; i < MSGS; i++) {
            char tag[8];
            uint32_t tag_id;
            uint64_t key;
            snprintf(tag, sizeof tag, "t%u", i % 7);
            store_rec rec = {.id = store_next_id(f->s), .enq_ns = 1, .cost = 1, .level = (uint8_t)l, .tag = tag,
                             .tag_len = (uint32_t)strlen(tag), .body = body,
                             .body_len = (uint32_t)body_of(l, i, body, sizeof body),
                             .expires_ns = i == 5 ? UINT64_C(1) << 62 : 0};
            if (l == 1) {
                assert_int_equal(store_tag_intern(f->s, tag, rec.tag_len, &tag_id), SL_OK);
                assert_int_equal(store_append_tagged(f->s, &rec, tag_id, &key), SL_OK);
            } else {
                assert_int_equal(store_append(f->s, &rec, &key), SL_OK);
            }
            if (l == 2 && i == 7)
                assert_int_equal(store_bury(f->s, 2, key, "buried", 9), SL_OK);
            if (l == 0 && i == 9)
                assert_int_equal(store_delay(f->s, 0, key, 1000), SL_OK);
        }
    assert_int_equal(store_meta_put(f->s, "level/01", "fair", 4), SL_OK);
    assert_int_equal(store_idem_put(f->s, "an idempotency key", 18, 42, UINT64_C(1) << 62), SL_OK);
    assert_int_equal(store_commit(f->s), SL_OK);
}

/* contents counts what dir holds: messages per level (queued, dead letters
 * and delayed, delayed ones released), and checks every body. */
static void contents(const char *dir, uint64_t per_level[3], uint64_t *dead)
{
    static char want[8192];
    store *s = NULL;
    store_level_info info[PROTO_MAX_LEVELS];
    store_cfg cfg = {.dir = dir, .levels = 3, .map_bytes = SFIX_MAP_BYTES};
    unsigned level;
    uint64_t key, id;
    store_rec rec;
    assert_int_equal(store_open(&cfg, &s, info), SL_OK);
    store_fair_keys(s, 1, 1, 0);
    while (store_delayed_pop(s, UINT64_MAX, &level, &key) == SL_OK)
        ;
    *dead = 0;
    for (unsigned l = 0; l < 3; l++) {
        per_level[l] = 0;
        for (uint64_t from = 0; store_seek(s, l, from, &key, &rec) == SL_OK; from = key + 1) {
            unsigned rl, i;
            assert_int_equal(sscanf(rec.body, "L%u #%u ", &rl, &i), 2);
            size_t len = body_of(rl, i, want, sizeof want);
            assert_int_equal(rec.body_len, len);
            assert_memory_equal(rec.body, want, len);
            per_level[l]++;
        }
        for (uint64_t after = 0; store_dead_next(s, l, after, &id, &rec) == SL_OK; after = id) {
            (*dead)++;
            per_level[l]++;
        }
    }
    store_close(&s);
}

/* salvage runs store_salvage from f's store into its salvaged directory. */
static int salvage(sfix *f, store_salvage_report *r)
{
    char to[160];
    to_dir(f, to);
    return store_salvage(f->dir, to, SFIX_MAP_BYTES, r);
}

/* ---- damage ---- */

typedef struct find {
    const char *name;
    pg_db db;
} find;

static int find_tree(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    find *x = ctx;
    (void)vlen;
    if (klen == strlen(x->name) && memcmp(key, x->name, klen) == 0)
        pg_db_decode(val, &x->db);
    return 0;
}

/* a_page returns a page of tree name ("main": LMDB's main tree) at the
 * bottom of its leftmost path: a leaf. */
static uint64_t a_leaf(const char *dir, const char *name, uint32_t *psize)
{
    char path[200], why[300];
    pg_file pf;
    unsigned char *p;
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    assert_int_equal(pg_open(&pf, path, why, sizeof why), 0);
    find x = {.name = name, .db = pf.main_db};
    if (strcmp(name, "main") != 0) {
        pg_tree t = {.name = "main", .db = pf.main_db, .subdata = 1};
        x.db.root = PG_INVALID;
        assert_int_equal(pg_walk(&pf, &t, find_tree, &x, why, sizeof why), 0);
    }
    uint64_t pgno = x.db.root;
    assert_true(pgno != PG_INVALID);
    p = malloc(pf.psize);
    assert_non_null(p);
    for (unsigned d = 1; d < x.db.depth; d++) { /* down the leftmost children */
        assert_int_equal(pg_read(&pf, pgno, p, why, sizeof why), 0);
        unsigned off = (unsigned)p[16] | (unsigned)p[17] << 8;
        pgno = (uint64_t)p[off] | (uint64_t)p[off + 1] << 8 | (uint64_t)p[off + 2] << 16 | (uint64_t)p[off + 3] << 24;
    }
    *psize = pf.psize;
    free(p);
    pg_close(&pf);
    return pgno;
}

static void poke(const char *dir, uint64_t at, unsigned char x)
{
    char path[200];
    unsigned char c;
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &c, 1, (off_t)at), 1);
    c ^= x;
    assert_int_equal(pwrite(fd, &c, 1, (off_t)at), 1);
    assert_int_equal(close(fd), 0);
}

/* ---- tests ---- */

/* A healthy store comes out whole: every message by level, the dead letter,
 * the delayed one, the setting, the tag names, the idempotency key. */
static void a_healthy_store_is_copied_whole(void **state)
{
    sfix *f = *state;
    store_cfg cfg = {.dir = f->dir, .levels = 3, .map_bytes = SFIX_MAP_BYTES};
    store_salvage_report r;
    uint64_t per[3], dead, id;
    char to[160], tag[16];
    fill(f, &cfg);
    uint64_t next = store_next_id(f->s);
    store_close(&f->s);
    assert_int_equal(salvage(f, &r), SL_OK);
    assert_int_equal(r.records, 3 * MSGS);
    assert_int_equal(r.records_bad, 0);
    assert_int_equal(r.levels, 3);
    assert_true(r.next_id >= next);
    to_dir(f, to);
    contents(to, per, &dead);
    for (unsigned l = 0; l < 3; l++)
        assert_int_equal(per[l], MSGS);
    assert_int_equal(dead, 1);
    store *s = NULL;
    cfg.dir = to;
    assert_int_equal(store_open(&cfg, &s, NULL), SL_OK);
    assert_int_equal(store_idem_get(s, "an idempotency key", 18, 0, &id), SL_OK);
    assert_int_equal(id, 42);
    assert_int_equal(store_tag_name(s, 1, tag, sizeof tag), SL_OK);
    assert_string_equal(tag, "t0");
    store_ttl_item ttl;
    assert_int_equal(store_ttl_next(s, UINT64_MAX, &ttl), SL_OK); /* message 5 of each level has one */
    assert_true(store_next_id(s) >= next);
    store_close(&s);
}

/* A leaf page whose header is damaged (its tree fails its check): its
 * records are read node by node, and none is lost. */
static void a_damaged_page_header_loses_nothing(void **state)
{
    sfix *f = *state;
    store_cfg cfg = {.dir = f->dir, .levels = 3, .map_bytes = SFIX_MAP_BYTES};
    store_salvage_report r;
    uint32_t psize;
    uint64_t per[3], dead;
    char to[160];
    fill(f, &cfg);
    store_close(&f->s);
    uint64_t leaf = a_leaf(f->dir, "q.0", &psize);
    poke(f->dir, leaf * psize + 10, 0x40); /* its flags */
    assert_int_equal(salvage(f, &r), SL_OK);
    assert_true(r.trees_bad >= 1);
    assert_true(r.pages_carved >= 1);
    to_dir(f, to);
    contents(to, per, &dead);
    for (unsigned l = 0; l < 3; l++)
        assert_int_equal(per[l], MSGS);
}

/* LMDB's main tree damaged: no tree can be found by name; every page is
 * read node by node and every message comes back (settings, in the meta
 * tree, are lost with it: the level's keys still say it is fair). */
static void a_damaged_main_tree_loses_no_message(void **state)
{
    sfix *f = *state;
    store_cfg cfg = {.dir = f->dir, .levels = 3, .map_bytes = SFIX_MAP_BYTES};
    store_salvage_report r;
    uint32_t psize;
    uint64_t per[3], dead;
    char to[160];
    fill(f, &cfg);
    store_close(&f->s);
    uint64_t root = a_leaf(f->dir, "main", &psize);
    poke(f->dir, root * psize + 14, 0xff); /* its upper bound */
    assert_int_equal(salvage(f, &r), SL_OK);
    to_dir(f, to);
    contents(to, per, &dead);
    for (unsigned l = 0; l < 3; l++)
        assert_int_equal(per[l], MSGS);
    assert_int_equal(dead, 1);
}

/* One record's bytes damaged: it alone is lost, and counted. */
static void a_damaged_record_alone_is_lost(void **state)
{
    sfix *f = *state;
    store_cfg cfg = {.dir = f->dir, .levels = 3, .map_bytes = SFIX_MAP_BYTES};
    store_salvage_report r;
    uint64_t per[3], dead;
    char to[160], path[200];
    static char buf[1 << 22];
    fill(f, &cfg);
    store_close(&f->s);
    snprintf(path, sizeof path, "%s/data.mdb", f->dir);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    ssize_t n = pread(fd, buf, sizeof buf, 0);
    assert_true(n > 0);
    close(fd);
    char *hit = memmem(buf, (size_t)n, "L2 #100 ", 8); /* every copy of it, in pages old and new */
    assert_non_null(hit);
    for (; hit; hit = memmem(hit + 1, (size_t)(buf + n - hit - 1), "L2 #100 ", 8))
        poke(f->dir, (uint64_t)(hit - buf) + 4, 0x01);
    assert_int_equal(salvage(f, &r), SL_OK);
    assert_int_equal(r.records_bad, 1);
    to_dir(f, to);
    contents(to, per, &dead);
    assert_int_equal(per[0], MSGS);
    assert_int_equal(per[1], MSGS);
    assert_int_equal(per[2], MSGS - 1);
}

/* Batches confirmed through the log and never checkpointed (a crash) come
 * back: salvage replays the log from where meta says, as the broker would. */
static void the_logs_confirmed_batches_come_back(void **state)
{
    sfix *f = *state;
    store_salvage_report r;
    uint64_t per[3], dead;
    char to[160];
    store_cfg cfg = {.dir = f->dir, .levels = 3, .map_bytes = SFIX_MAP_BYTES, .wal_bytes = 1 << 20,
                     .checkpoint_ns = NEVER_NS};
    pid_t pid = fork();
    if (pid == 0) {
        static char body[8192];
        store *s = NULL;
        if (store_open(&cfg, &s, NULL) != SL_OK)
            _exit(10);
        for (unsigned i = 0; i < 30; i++) {
            uint64_t key;
            int started = 0, rc = SL_OK;
            store_rec rec = {.id = store_next_id(s), .enq_ns = 1, .cost = 1, .level = 2, .body = body,
                             .body_len = (uint32_t)body_of(2, i, body, sizeof body)};
            if (store_append(s, &rec, &key) != SL_OK || store_commit_start(s, 1, 0, &started) != SL_OK || !started ||
                !store_logging(s))
                _exit(11);
            store_commit_wait(s, &rc);
            if (rc != SL_OK)
                _exit(12);
        }
        _exit(0); /* no close: nothing checkpointed */
    }
    int status = -1;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(salvage(f, &r), SL_OK);
    assert_int_equal(r.log_records, 30);
    to_dir(f, to);
    contents(to, per, &dead);
    assert_int_equal(per[2], 30);
}

/* A store a process holds open is refused (SL_ESTATE), and so is a target
 * that holds a store already (SL_EINVAL): salvage writes only a new one. */
static void an_open_store_and_a_used_target_are_refused(void **state)
{
    sfix *f = *state;
    store_salvage_report r;
    char to[160], body[64];
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    body[body_of(0, 0, body, sizeof body - 1)] = '\0';
    sfix_append(f->s, 0, body, NULL);
    assert_int_equal(store_commit(f->s), SL_OK);
    assert_int_equal(salvage(f, &r), SL_ESTATE);
    store_close(&f->s);
    assert_int_equal(salvage(f, &r), SL_OK);
    assert_int_equal(r.records, 1);
    assert_int_equal(salvage(f, &r), SL_EINVAL); /* salvaged already */
    to_dir(f, to);
    uint64_t per[3], dead;
    contents(to, per, &dead);
    assert_int_equal(per[0], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, sfix_setup, sfix_teardown)
        T(a_healthy_store_is_copied_whole),
        T(a_damaged_page_header_loses_nothing),
        T(a_damaged_main_tree_loses_no_message),
        T(a_damaged_record_alone_is_lost),
        T(the_logs_confirmed_batches_come_back),
        T(an_open_store_and_a_used_target_are_refused),
#undef T
    };
    log_set_level(LOG_ERROR);
    return cmocka_run_group_tests_name("salvage", tests, NULL, NULL);
}
