/*
 * test_store_damage.c - a data file damaged on disk, opened by the store:
 * a level whose trees fail their checks is quarantined (never read or
 * written again, its messages counted, the other levels served), damage
 * elsewhere is refused at open, damage LMDB meets while the store is open
 * quarantines its level at the next commit, and a second open of the same store is
 * refused whatever else was deleted; a last page LMDB counts but never
 * wrote is no damage. Against a real LMDB environment; the
 * damage is made from outside with pwrite, at pages found by reading the
 * file as store_pages.c does.
 *
 * Each test has a store of its own (store_fixture.h) and runs under
 * alarm(SFIX_TIMEOUT_S).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "byteorder.h"
#include "log.h"
#include "store.h"
#include "store_fixture.h"
#include "store_pages.h"

/* ---- finding a tree's pages ---- */

typedef struct found {
    const char *name;
    pg_db db;
    int hit;
} found;

static int find_tree(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    found *f = ctx;
    (void)vlen;
    if (klen == strlen(f->name) && memcmp(key, f->name, klen) == 0) {
        pg_db_decode(val, &f->db);
        f->hit = 1;
    }
    return 0;
}

/* root_of returns the root page of tree name of dir's data file ("main"
 * and "free" for LMDB's own two), and its page size in *psize. */
static uint64_t root_of(const char *dir, const char *name, uint32_t *psize)
{
    char path[200], why[300];
    pg_file pf;
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    assert_int_equal(pg_open(&pf, path, why, sizeof why), 0);
    *psize = pf.psize;
    uint64_t root = strcmp(name, "main") == 0 ? pf.main_db.root : pf.free_db.root;
    if (strcmp(name, "main") != 0 && strcmp(name, "free") != 0) {
        found f = {.name = name};
        pg_tree t = {.name = "main", .db = pf.main_db, .subdata = 1};
        assert_int_equal(pg_walk(&pf, &t, find_tree, &f, why, sizeof why), 0);
        assert_true(f.hit);
        root = f.db.root;
    }
    pg_close(&pf);
    assert_true(root != PG_INVALID);
    return root;
}

/* value_len keeps the length of the last value walked. */
static int value_len(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
    (void)key, (void)klen, (void)val;
    *(size_t *)ctx = vlen;
    return 0;
}

/* page_rw reads (write 0) or writes page pgno of dir's data file. */
static void page_rw(const char *dir, uint64_t pgno, uint32_t psize, unsigned char *buf, int write)
{
    char path[200];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    ssize_t n = write ? pwrite(fd, buf, psize, (off_t)(pgno * psize)) : pread(fd, buf, psize, (off_t)(pgno * psize));
    assert_int_equal(n, (ssize_t)psize);
    assert_int_equal(close(fd), 0);
}

/* damage gives page pgno bounds that cannot be (its "upper" past the page),
 * as a flipped byte in its header would; returns its bytes as they were. */
static unsigned char *damage(const char *dir, uint64_t pgno, uint32_t psize)
{
    unsigned char *was = malloc(psize), *now = malloc(psize);
    assert_non_null(was);
    assert_non_null(now);
    page_rw(dir, pgno, psize, was, 0);
    memcpy(now, was, psize);
    now[14] = 0xff; /* upper, little-endian u16 */
    now[15] = 0xff;
    page_rw(dir, pgno, psize, now, 1);
    free(now);
    return was;
}

/* set_last_page writes last into both meta pages' last page number, as
 * LMDB's mm_last_pg. */
static void set_last_page(const char *dir, uint32_t psize, uint64_t last)
{
    unsigned char *page = malloc(psize);
    assert_non_null(page);
    for (uint64_t m = 0; m < 2; m++) {
        page_rw(dir, m, psize, page, 0);
        put_le64(page + PG_META_LAST_PG, last);
        page_rw(dir, m, psize, page, 1);
    }
    free(page);
}

static void fill(sfix *f, unsigned levels, unsigned per_level)
{
    assert_int_equal(sfix_reopen(f, levels, SFIX_MAP_BYTES), SL_OK);
    for (unsigned l = 0; l < levels; l++)
        for (unsigned i = 0; i < per_level; i++) {
            char body[64];
            snprintf(body, sizeof body, "level %u message %u", l, i);
            sfix_append(f->s, l, body, NULL);
        }
}

/* ---- tests ---- */

/* A level whose queue tree fails its checks at open is quarantined: the
 * store opens, counts what LMDB held in it (queued, dead, delayed) as
 * quarantined, never reads or writes its trees (every operation on it is
 * SL_ECORRUPT, its delayed messages stay delayed, the damaged page is the
 * same byte for byte afterwards), and serves the other levels. */
static void a_damaged_queue_tree_quarantines_its_level(void **state)
{
    sfix *f = *state;
    uint32_t psize;
    uint64_t key, dead_key, counts[PROTO_MAX_LEVELS];
    unsigned level;
    store_rec rec;
    fill(f, 3, 40);
    dead_key = sfix_append(f->s, 1, "a dead letter of level 1", NULL);
    assert_int_equal(store_bury(f->s, 1, dead_key, "tested", 1), SL_OK);
    key = sfix_append(f->s, 1, "delayed, of level 1", NULL);
    assert_int_equal(store_delay(f->s, 1, key, 50), SL_OK);
    assert_int_equal(store_commit(f->s), SL_OK);
    store_close(&f->s);

    uint64_t root = root_of(f->dir, "q.1", &psize);
    unsigned char *was = damage(f->dir, root, psize);
    unsigned char *before = malloc(psize), *after = malloc(psize);
    assert_non_null(before);
    assert_non_null(after);
    page_rw(f->dir, root, psize, before, 0);

    assert_int_equal(sfix_reopen(f, 3, SFIX_MAP_BYTES), SL_OK);
    assert_false(store_level_quarantined(f->s, 0));
    assert_true(store_level_quarantined(f->s, 1));
    assert_false(store_level_quarantined(f->s, 2));
    assert_int_equal(f->info[1].count, 0);
    assert_int_equal(f->info[0].count, 40);
    assert_int_equal(f->info[2].count, 40);
    store_delayed_counts(f->s, counts);
    assert_int_equal(counts[1], 0);
    assert_int_equal(store_quarantined_msgs(f->s, 1), 40 + 1 + 1); /* queued, dead, delayed */
    assert_int_equal(store_quarantined_msgs(f->s, 0), 0);
    assert_int_equal(store_seek(f->s, 1, 0, &key, &rec), SL_ECORRUPT);
    assert_int_equal(store_dead_next(f->s, 1, 0, &key, &rec), SL_ECORRUPT);
    store_rec m = {.id = store_next_id(f->s), .enq_ns = 1, .cost = 1, .level = 1, .body = "x", .body_len = 1};
    assert_int_equal(store_append(f->s, &m, &key), SL_ECORRUPT);
    assert_int_equal(store_delayed_pop(f->s, 100, &level, &key), SL_ENOTFOUND); /* stays delayed */
    assert_int_equal(store_level_count(f->s, 1), 0);
    assert_int_equal(store_seek(f->s, 0, 0, &key, &rec), SL_OK);
    sfix_assert_body(&rec, "level 0 message 0");
    assert_int_equal(store_seek(f->s, 2, 0, &key, &rec), SL_OK);
    sfix_assert_body(&rec, "level 2 message 0");
    assert_int_equal(store_failed(f->s), SL_OK);
    sfix_append(f->s, 0, "the other levels take publishes", NULL);
    assert_int_equal(store_commit(f->s), SL_OK);
    store_close(&f->s);

    page_rw(f->dir, root, psize, after, 0);
    assert_memory_equal(before, after, psize); /* never written */
    page_rw(f->dir, root, psize, was, 1);      /* repaired: all of it comes back */
    assert_int_equal(sfix_reopen(f, 3, SFIX_MAP_BYTES), SL_OK);
    assert_false(store_level_quarantined(f->s, 1));
    assert_int_equal(f->info[1].count, 40);
    assert_int_equal(f->info[1].dead, 1);
    assert_int_equal(f->info[0].count, 41);
    free(was);
    free(before);
    free(after);
}

/* Damage to a tree every level needs (meta, the free list, LMDB's main tree
 * of named trees) is refused at open: SL_ECORRUPT, nothing read further;
 * repaired, the store opens as it was. */
static void damage_outside_the_levels_is_refused(void **state)
{
    sfix *f = *state;
    uint32_t psize;
    const char *trees[] = {"meta", "main", "free", "delayed"};
    fill(f, 2, 300); /* enough pages that the free list holds some */
    sfix_append(f->s, 0, "one more, in its own commit", NULL);
    uint64_t key = sfix_append(f->s, 1, "delayed", NULL);
    assert_int_equal(store_commit(f->s), SL_OK);
    assert_int_equal(store_delay(f->s, 1, key, 50), SL_OK);
    assert_int_equal(store_commit(f->s), SL_OK);
    store_close(&f->s);
    for (size_t i = 0; i < sizeof trees / sizeof trees[0]; i++) {
        uint64_t root = root_of(f->dir, trees[i], &psize);
        unsigned char *was = damage(f->dir, root, psize);
        assert_int_equal(sfix_reopen(f, 2, SFIX_MAP_BYTES), SL_ECORRUPT);
        assert_null(f->s);
        page_rw(f->dir, root, psize, was, 1);
        free(was);
        assert_int_equal(sfix_reopen(f, 2, SFIX_MAP_BYTES), SL_OK);
        assert_int_equal(f->info[0].count, 301);
        store_close(&f->s);
    }
}

/* LMDB may count a last page that was never written (a page it allocated
 * at the end and freed in the same transaction is not flushed): the store
 * opens on such a file (it used to be refused as damaged, which stopped a
 * standby promoted after a switchover), takes writes and opens again; a
 * last page further past the end than a transaction can hold is damage. */
static void a_last_page_never_written_is_lmdbs_not_damage(void **state)
{
    sfix *f = *state;
    fill(f, 2, 300);
    assert_int_equal(store_commit(f->s), SL_OK);
    store_close(&f->s);
    char path[200], why[300];
    snprintf(path, sizeof path, "%s/data.mdb", f->dir);
    pg_file pf;
    assert_int_equal(pg_open(&pf, path, why, sizeof why), 0);
    uint32_t psize = pf.psize;
    uint64_t last = pf.last_pg;
    pg_close(&pf);
    /* the file ends at the last page (not the zeros written ahead), and
     * LMDB counts three more */
    assert_int_equal(truncate(path, (off_t)((last + 1) * psize)), 0);
    set_last_page(f->dir, psize, last + 3);
    assert_int_equal(sfix_reopen(f, 2, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[0].count, 300);
    assert_false(store_level_quarantined(f->s, 0) || store_level_quarantined(f->s, 1));
    sfix_append(f->s, 0, "written after", NULL);
    assert_int_equal(store_commit(f->s), SL_OK);
    store_close(&f->s);
    assert_int_equal(sfix_reopen(f, 2, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[0].count, 301);
    store_close(&f->s);

    assert_int_equal(pg_open(&pf, path, why, sizeof why), 0);
    last = pf.last_pg;
    uint64_t pages = pf.file_bytes / psize;
    pg_close(&pf);
    set_last_page(f->dir, psize, pages + PG_UNWRITTEN_MAX); /* too far: damage */
    assert_int_equal(sfix_reopen(f, 2, SFIX_MAP_BYTES), SL_ECORRUPT);
    set_last_page(f->dir, psize, last);
    assert_int_equal(sfix_reopen(f, 2, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(f->info[0].count, 301);
}

/* Damage that arrives while the store is open: LMDB's descent through
 * level 1's branch page meets a child page number past the file's end
 * (MDB_PAGE_NOTFOUND), which loses the pass's transaction. The commit then
 * walks the file again, finds level 1's tree failing, quarantines it and
 * answers SL_ECORRUPT (the batch refused, the store goes on), where it used
 * to answer SL_EIO, which stops the broker; level 0 goes on taking writes. */
static void damage_found_while_open_quarantines_its_level(void **state)
{
    sfix *f = *state;
    uint32_t psize;
    uint64_t key;
    store_rec rec;
    fill(f, 2, 400); /* level 1 deep enough for a branch page */
    assert_int_equal(store_commit(f->s), SL_OK);
    uint64_t root = root_of(f->dir, "q.1", &psize);
    unsigned char *page = malloc(psize);
    assert_non_null(page);
    page_rw(f->dir, root, psize, page, 0);
    assert_int_equal(page[10], 0x01); /* a branch */
    unsigned lower = (unsigned)page[12] | (unsigned)page[13] << 8;
    assert_true(lower >= 16 + 2 * 2);
    for (unsigned i = 0; 16 + 2 * i < lower; i++) { /* every child: far past the file's end */
        unsigned off = (unsigned)page[16 + 2 * i] | (unsigned)page[17 + 2 * i] << 8;
        page[off] = page[off + 1] = page[off + 2] = page[off + 3] = 0xee;
    }
    page_rw(f->dir, root, psize, page, 1); /* the store maps the file: it reads this next */
    free(page);
    assert_int_equal(store_seek(f->s, 1, 0, &key, &rec), SL_EIO);
    assert_false(store_level_quarantined(f->s, 1));
    assert_int_equal(store_commit(f->s), SL_ECORRUPT);
    assert_true(store_level_quarantined(f->s, 1));
    assert_int_equal(store_quarantined_msgs(f->s, 1), 400);
    assert_int_equal(store_seek(f->s, 1, 0, &key, &rec), SL_ECORRUPT);
    sfix_append(f->s, 0, "level 0 goes on", NULL);
    assert_int_equal(store_commit(f->s), SL_OK);
    assert_int_equal(store_level_count(f->s, 0), 401);
    store_close(&f->s);
    assert_int_equal(sfix_reopen(f, 2, SFIX_MAP_BYTES), SL_OK); /* and at the next open, at once */
    assert_true(store_level_quarantined(f->s, 1));
    assert_int_equal(f->info[0].count, 401);
}

/* One process per store: a second open of the same data directory is
 * refused while the first holds it (flocks on the directory and on
 * data.mdb itself, which no deleted lock file can take away: even with
 * data.mdb deleted, the directory's stays), and allowed once it is closed. */
static void a_second_open_is_refused(void **state)
{
    sfix *f = *state;
    store *second = NULL;
    char path[200];
    store_cfg cfg = {.dir = f->dir, .levels = 1, .map_bytes = SFIX_MAP_BYTES};
    assert_int_equal(sfix_reopen(f, 1, SFIX_MAP_BYTES), SL_OK);
    assert_int_equal(store_open(&cfg, &second, NULL), SL_ESTATE);
    assert_null(second);
    snprintf(path, sizeof path, "%s/data.mdb", f->dir);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(store_open(&cfg, &second, NULL), SL_ESTATE);
    assert_null(second);
    store_close(&f->s);
    assert_int_equal(store_open(&cfg, &second, NULL), SL_OK);
    store_close(&second);
}

/* A large value shrunk in place: LMDB keeps its overflow pages when a put
 * over a dirty overflow value fits in them (and mdb_freelist_save shrinks
 * its last free-list records so), so the first page's header counts more
 * pages than the value needs. The walk must take that as LMDB does (the
 * tree's overflow total counts the header's pages): it once refused such a
 * data file as corrupt ("the free list: overflow page ... has a wrong
 * header"), a broker that would not start on a store LMDB reads. */
static void an_overflow_value_shrunk_in_place_is_lmdbs_not_damage(void **state)
{
    (void)state;
    char dir[] = "/tmp/sluice-lmdb-XXXXXX", path[260], why[300];
    assert_non_null(mkdtemp(dir));
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    static char big[9000];
    memset(big, 'x', sizeof big);
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_set_maxdbs(env, 4), 0);
    assert_int_equal(mdb_env_open(env, dir, MDB_NOLOCK, 0600), 0);
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
    assert_int_equal(mdb_dbi_open(txn, "t", MDB_CREATE, &dbi), 0);
    MDB_val k = {1, "a"}, v = {sizeof big, big};
    assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0); /* 3 overflow pages */
    v.mv_size = 4000;
    assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0); /* the same transaction: it keeps the 3 */
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);

    pg_file pf;
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    if (pg_open(&pf, path, why, sizeof why) != 0)
        fail_msg("cannot open what LMDB wrote: %s", why);
    found t = {.name = "t"};
    pg_tree main_tree = {.name = "main", .db = pf.main_db, .subdata = 1};
    assert_int_equal(pg_walk(&pf, &main_tree, find_tree, &t, why, sizeof why), 0);
    assert_true(t.hit);
    size_t got = 0;
    pg_tree tt = {.name = "t", .db = t.db};
    if (pg_walk(&pf, &tt, value_len, &got, why, sizeof why) != 0)
        fail_msg("the walk refused what LMDB wrote: %s", why);
    assert_int_equal(got, 4000); /* the value read whole, at its size */
    pg_close(&pf);
    unlink(path);
    snprintf(path, sizeof path, "%s/lock.mdb", dir);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, sfix_setup, sfix_teardown)
        T(a_damaged_queue_tree_quarantines_its_level),
        T(damage_outside_the_levels_is_refused),
        T(damage_found_while_open_quarantines_its_level),
        T(a_second_open_is_refused),
        T(a_last_page_never_written_is_lmdbs_not_damage),
        T(an_overflow_value_shrunk_in_place_is_lmdbs_not_damage),
#undef T
    };
    log_set_level(LOG_ERROR);
    return cmocka_run_group_tests_name("store damage", tests, NULL, NULL);
}
