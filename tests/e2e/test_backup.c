/*
 * test_backup.c - `sluice backup --to DIR` against the real sluiced: taken
 * under load (a producer confirmed one message at a time on one level, and
 * churn beside it: another level published to and acknowledged, so pages are
 * freed and reused while the copy reads), then the broker stopped and a new
 * sluiced started on the copy: every message confirmed before the backup
 * started is there, byte for byte. Once with the write-ahead log (the
 * confirmations go on during the copy; the slowest is printed), once
 * with a log of 1 MiB (half used during the copy: commits then wait for
 * it), once without (every commit waits for the copy). And what is refused: a
 * directory that is not empty, a relative path through the library.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "store.h"

#define MAX_IDS 200000

/* A producer on level 1: every confirmation noted with its time. */
typedef struct producer {
    const th_broker *b;
    atomic_bool stop;
    uint64_t ids[MAX_IDS], at_ms[MAX_IDS];
    atomic_uint n;
    uint64_t backup_t0_ms, backup_t1_ms, worst_during_ms, during, worst_before_ms;
    int rc;
} producer;

static void *produce(void *arg)
{
    producer *p = arg;
    sl_client *c = th_client(p->b, 20000);
    char body[600];
    while (!atomic_load(&p->stop) && p->rc == SL_OK && atomic_load(&p->n) < MAX_IDS) {
        unsigned i = atomic_load(&p->n);
        int len = snprintf(body, sizeof body, "confirmed-%u-", i);
        memset(body + len, 'x', sizeof body - (size_t)len); /* 600 bytes */
        sl_put m = {.body = body, .body_len = sizeof body, .level = 1};
        uint64_t t0 = th_now_ms(), id;
        p->rc = sl_send(c, &m, &id);
        uint64_t t1 = th_now_ms();
        if (p->rc != SL_OK)
            break;
        p->ids[i] = id;
        p->at_ms[i] = t1;
        if (!p->backup_t0_ms && t1 - t0 > p->worst_before_ms && i >= 100)
            p->worst_before_ms = t1 - t0; /* (past the first hundred: the broker warm) */
        if (p->backup_t0_ms && t0 >= p->backup_t0_ms && !p->backup_t1_ms) {
            p->during++;
            if (t1 - t0 > p->worst_during_ms)
                p->worst_during_ms = t1 - t0;
        }
        atomic_store(&p->n, i + 1);
    }
    sl_close(&c);
    return NULL;
}

/* Churn on level 0: publishes in windows, and a consumer acknowledging them. */
typedef struct churn {
    const th_broker *b;
    atomic_bool stop;
    int rc;
} churn;

static void *churn_put(void *arg)
{
    churn *x = arg;
    static char big[100000]; /* a few fill half of a 1 MiB log */
    sl_client *c = th_client(x->b, 20000);
    memset(big, 'c', sizeof big);
    while (!atomic_load(&x->stop) && x->rc == SL_OK) {
        sl_put m = {.body = big, .body_len = sizeof big, .level = 0};
        uint64_t id;
        x->rc = th_put_many(c, 0, 50, 1);
        if (x->rc == SL_OK)
            x->rc = sl_send(c, &m, &id);
    }
    sl_close(&c);
    return NULL;
}

static void *churn_ack(void *arg)
{
    churn *x = arg;
    sl_client *c = th_client(x->b, 20000);
    unsigned level = 0;
    if (sl_subscribe(c, "churn", &level, 1, 64) == SL_OK)
        while (!atomic_load(&x->stop)) {
            sl_delivery *d = NULL;
            if (sl_recv(c, 200, &d) == SL_OK) {
                sl_ack(c, d);
                sl_delivery_free(&d);
            }
        }
    sl_close(&c);
    return NULL;
}

static sl_level_stats level_stats(sl_client *c, unsigned level)
{
    sl_stats st;
    assert_int_equal(sl_stats_get(c, &st), SL_OK);
    return st.level[level];
}

static int run_sluice(const th_broker *b, char *out, size_t out_len, const char *a1, const char *a2,
                      const char *a3)
{
    const char *argv[] = {th_bin("sluice"), "-b", b->endpoint, a1, a2, a3, NULL};
    return th_run(argv, NULL, out, out_len);
}

#define STORED 20000u

/* fill writes n messages of 4,000 bytes into level of the data directory
 * dir (the broker stopped), with the store's own functions. */
static void fill(const char *dir, unsigned level, unsigned n)
{
    static char body[4000];
    store_cfg cfg = {.dir = dir, .levels = 3, .map_bytes = 1ULL << 30};
    store *s = NULL;
    memset(body, 'b', sizeof body);
    assert_int_equal(store_open(&cfg, &s, NULL), SL_OK);
    for (unsigned i = 0; i < n; i++) {
        uint64_t key;
        store_rec rec = {.id = store_next_id(s), .enq_ns = 1, .cost = 1, .level = (uint8_t)level,
                         .body = body, .body_len = sizeof body};
        assert_int_equal(store_append(s, &rec, &key), SL_OK);
        if (i % 5000 == 4999)
            assert_int_equal(store_commit(s), SL_OK);
    }
    assert_int_equal(store_commit(s), SL_OK);
    store_close(&s);
}

/* backed_up_under_load: see the essay; wal_mb "0" runs without the log. */
static void backed_up_under_load(const char *wal_mb)
{
    /* checkpoints only when asked (or the log half used): without the backup's own checkpoint first, what the
     * log alone holds would be missing from the copy */
    const char *const extra[] = {"--wal-mb", wal_mb, "--checkpoint-ms", "60000", NULL};
    th_broker b, copy;
    assert_int_equal(th_broker_init(&b, extra), SL_OK);
    assert_int_equal(th_broker_init(&copy, NULL), SL_OK);
    fill(b.data, 2, STORED); /* a store of some size to copy: 80 MB */
    assert_int_equal(th_broker_start(&b), SL_OK);
    sl_client *c = th_client(&b, 20000);

    producer *p = calloc(1, sizeof *p);
    churn x = {.b = &b};
    assert_non_null(p);
    p->b = &b;
    pthread_t tp, tc1, tc2;
    assert_int_equal(pthread_create(&tp, NULL, produce, p), 0);
    assert_int_equal(pthread_create(&tc1, NULL, churn_put, &x), 0);
    assert_int_equal(pthread_create(&tc2, NULL, churn_ack, &x), 0);
    uint64_t until = th_now_ms() + 30000;
    while (atomic_load(&p->n) < 1000 && th_now_ms() < until && p->rc == SL_OK)
        usleep(10000);
    assert_int_equal(p->rc, SL_OK);

    char out[4096];
    p->backup_t0_ms = th_now_ms();
    unsigned before = atomic_load(&p->n); /* confirmed before the backup started */
    int st = run_sluice(&b, out, sizeof out, "backup", "--to", copy.data);
    p->backup_t1_ms = th_now_ms();
    print_message("--wal-mb %s: backup in %" PRIu64 " ms; %" PRIu64 " publishes confirmed meanwhile, the slowest in %"
                  PRIu64 " ms (before it: %" PRIu64 " ms)\n", wal_mb,
                  p->backup_t1_ms - p->backup_t0_ms, p->during, p->worst_during_ms, p->worst_before_ms);
    if (st != 0)
        print_error("sluice backup: exit %d: %s\n", st, out);
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, ": done after"));
    usleep(200000); /* a little more load after it */
    atomic_store(&p->stop, true);
    atomic_store(&x.stop, true);
    pthread_join(tp, NULL);
    pthread_join(tc1, NULL);
    pthread_join(tc2, NULL);
    assert_int_equal(p->rc, SL_OK);
    assert_int_equal(x.rc, SL_OK);
    if (wal_mb[0] != '0')
        assert_true(p->during > 0); /* confirmations went on while it copied */
    assert_true(p->worst_during_ms < 20000);

    /* the same directory again is refused: it is not empty */
    st = run_sluice(&b, out, sizeof out, "backup", "--to", copy.data);
    assert_int_equal(st, 1);
    sl_backup_info info;
    assert_int_equal(sl_backup_status(c, &info), SL_OK);
    assert_string_equal(info.state, "done");
    assert_true(info.bytes > STORED * 4000ULL);
    print_message("%s\n", info.msg);
    unsigned long long held_ms = 0;
    const char *h = strstr(info.msg, "commits held for ");
    assert_non_null(h);
    assert_int_equal(sscanf(h, "commits held for %llu ms", &held_ms), 1);
    if (wal_mb[0] == '0' || wal_mb[0] == '1')
        assert_true(held_ms > 0); /* it could only be an LMDB commit: it waited for the copy */
    assert_int_equal(sl_backup(c, "relative/dir"), SL_EINVAL);
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);

    /* a new broker on the copy: every message confirmed before the backup */
    struct stat sb;
    assert_int_equal(stat(copy.data, &sb), 0);
    assert_int_equal(th_broker_start(&copy), SL_OK);
    c = th_client(&copy, 20000);
    sl_level_stats ls = level_stats(c, 1);
    assert_true(ls.depth >= before);
    assert_int_equal(level_stats(c, 2).depth, STORED);
    sl_close(&c);
    assert_int_equal(th_broker_stop(&copy), 0);
    store_cfg cfg = {.dir = copy.data, .levels = 3, .map_bytes = 1ULL << 30};
    store *s = NULL;
    assert_int_equal(store_open(&cfg, &s, NULL), SL_OK);
    uint8_t *found = calloc(MAX_IDS * 4 + 1, 1);
    assert_non_null(found);
    store_rec rec;
    uint64_t key = 0;
    unsigned stored = 0;
    while (store_seek(s, 1, key, &key, &rec) == SL_OK) {
        unsigned i;
        assert_int_equal(rec.body_len, 600);
        assert_int_equal(sscanf(rec.body, "confirmed-%u-", &i), 1);
        assert_true(i < MAX_IDS);
        found[i] = 1;
        stored++;
        key++;
    }
    store_close(&s);
    for (unsigned i = 0; i < before; i++)
        if (!found[i]) {
            print_error("message %u (id %" PRIu64 "), confirmed before the backup, is not in the copy\n", i,
                        p->ids[i]);
            fail();
        }
    print_message("the copy holds %u of the producer's messages; %u were confirmed before the backup started\n",
                  stored, before);
    free(found);
    free(p);
    th_broker_fini(&copy);
    th_broker_fini(&b);
}

static void backup_with_the_log_under_load(void **state)
{
    (void)state;
    backed_up_under_load("64");
}

static void backup_with_a_log_it_fills_under_load(void **state)
{
    (void)state;
    backed_up_under_load("1"); /* half used within the copy: commits then wait for its end */
}

static void backup_without_the_log_under_load(void **state)
{
    (void)state;
    backed_up_under_load("0");
}

int main(void)
{
    th_timeout_s = 180;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(backup_with_the_log_under_load, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(backup_with_a_log_it_fills_under_load, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(backup_without_the_log_under_load, th_timeout_arm, th_timeout_disarm),
    };
    return cmocka_run_group_tests_name("backup", tests, NULL, NULL);
}
