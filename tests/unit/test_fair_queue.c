/*
 * test_fair_queue.c - a level served fair by tag, driven through queue.h
 * over a real store in a temporary directory (no broker): random appends,
 * takes, acks, NACKs and commits, checked after every step against a model
 * of what each tag has ready and leased.
 *
 * What it pins down:
 *   - FIFO within a tag: every take gives the oldest ready message of its
 *     tag (a NACKed one goes back to its place at the tag's head);
 *   - no head-of-line blocking on a commit: a take finds nothing only when
 *     every tag's head was appended since the last commit;
 *   - a tag leaves the turns with its last ready message, whether taken from
 *     its run of keys (the seek that read it looked one key further) or from
 *     its NACKed ones (a look past its cursor), and is forgotten once nothing
 *     of it is leased: after every step the deficit round robin holds
 *     exactly the tags with something ready, and the level's tenants are
 *     exactly the tags with something ready or leased;
 *   - the level's oldest is its oldest ready message of any tag, after
 *     every step (queue_oldest_ns: the least head, in publish order);
 *   - explain's place: the messages of its tag ahead of a ready one, counted
 *     by stepping the tag's run (queue_fair_place);
 *   - the same through the read-ahead (queue_fair_ahead.c) and the batched
 *     deletes of acknowledged records (store_gone.c): explain looks only
 *     now and then, so deletes wait across steps;
 *   - a commit out on the writer thread, as a checkpoint is: takes from the
 *     last commit's snapshot meanwhile never give a message that was
 *     acknowledged (or is leased) and keep each tag's order, and nothing
 *     read then is served after it from a stale copy.
 *
 * The seed is printed (SLUICE_SEED replays it); loops are bounded by count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "harness.h"
#include "queue.h"
#include "queue_fair_int.h"
#include "store.h"
#include "store_fixture.h"

#define NTAGS  6    /* tag "t0".."t4", and the untagged tenant (5) */
#define MAXMSG 1200
#define STEPS  4000

enum { READY = 1, LEASED, DONE };

#define ENQ_NS(i) (1000 + (uint64_t)(i)) /* message i's enqueue time: publish order */

typedef struct msg {
    uint64_t id, key; /* key: known once taken */
    int tag, seq;     /* seq: its place in its tag, in publish order */
    int state;
    int fresh;        /* appended since the last commit */
    uint32_t attempt;
} msg;

typedef struct model {
    msg m[MAXMSG];
    int n;
    int next_seq[NTAGS];
    int64_t tag_id[NTAGS]; /* its interned id, learnt from a taken key; -1 before */
    int lax[NTAGS];        /* took while a commit was out: may stay in the turns empty until a pick finds it so */
} model;

static unsigned rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 16) & 0x7fff;
}

static void fair_open(const char *dir, store **st, queue *q)
{
    sfix_queue_open(dir, 256ull << 20, st, q);
    assert_int_equal(queue_fair_set(q, 0, 1, 0), SL_OK);
}

static void append(queue *q, model *md, int tag)
{
    char tg[8], body[16];
    msg *m = &md->m[md->n];
    *m = (msg){.id = queue_next_id(q), .tag = tag, .seq = md->next_seq[tag]++, .state = READY, .fresh = 1};
    snprintf(tg, sizeof tg, "t%d", tag);
    snprintf(body, sizeof body, "%d", md->n);
    store_rec rec = {.id = m->id, .enq_ns = ENQ_NS(md->n), .cost = 1, .tag = tag < NTAGS - 1 ? tg : NULL,
                     .tag_len = tag < NTAGS - 1 ? (uint32_t)strlen(tg) : 0, .body = body,
                     .body_len = (uint32_t)strlen(body)};
    assert_int_equal(queue_append(q, &rec), SL_OK);
    md->n++;
}

/* oldest returns the ready message of tag with the lowest seq, or NULL. */
static msg *oldest(model *md, int tag)
{
    msg *best = NULL;
    for (int i = 0; i < md->n; i++)
        if (md->m[i].tag == tag && md->m[i].state == READY && (!best || md->m[i].seq < best->seq))
            best = &md->m[i];
    return best;
}

/* take takes one message and checks it against the model; returns 1 when
 * one was taken. While a commit is out (frozen) finding nothing proves
 * nothing: heads may be missing from the snapshot. */
static int take(queue *q, model *md, int frozen)
{
    uint64_t key;
    store_rec rec;
    int rc = queue_take(q, 0, &key, &rec);
    if (rc == SL_ENOTFOUND && frozen)
        return 0;
    if (rc == SL_ENOTFOUND) {
        for (int t = 0; t < NTAGS; t++) { /* only heads the open transaction appended wait */
            msg *h = oldest(md, t);
            assert_true(!h || h->fresh);
        }
        return 0;
    }
    assert_int_equal(rc, SL_OK);
    char body[16];
    snprintf(body, sizeof body, "%.*s", (int)rec.body_len, (const char *)rec.body);
    int i = atoi(body);
    assert_true(i >= 0 && i < md->n);
    msg *m = &md->m[i];
    assert_int_equal(m->state, READY);
    assert_ptr_equal(oldest(md, m->tag), m); /* FIFO within its tag */
    assert_false(m->fresh);
    m->state = LEASED;
    m->key = key;
    md->tag_id[m->tag] = (int64_t)(key >> STORE_TAG_SHIFT);
    md->lax[m->tag] |= frozen;
    return 1;
}

static msg *any_leased(model *md, unsigned *seed)
{
    int n = 0;
    for (int i = 0; i < md->n; i++)
        n += md->m[i].state == LEASED;
    if (!n)
        return NULL;
    int pick = (int)(rnd(seed) % (unsigned)n);
    for (int i = 0; i < md->n; i++)
        if (md->m[i].state == LEASED && pick-- == 0)
            return &md->m[i];
    return NULL;
}

/* check compares the level's counts and tenants with the model, and one
 * ready message's place in its tag with what explain would say. */
static void check(queue *q, store *st, model *md, unsigned *seed)
{
    uint64_t ready = 0;
    int live[NTAGS] = {0}, waiting[NTAGS] = {0}, tags = 0, stale = 0;
    for (int i = 0; i < md->n; i++) {
        ready += md->m[i].state == READY;
        waiting[md->m[i].tag] |= md->m[i].state == READY;
        live[md->m[i].tag] |= md->m[i].state == READY || md->m[i].state == LEASED;
    }
    for (int t = 0; t < NTAGS; t++) {
        tags += live[t];
        if (md->tag_id[t] < 0)
            continue;
        /* in the turns exactly while something of it is ready; after a take
         * while a commit was out (which cannot tell that the run ended),
         * perhaps empty until a pick finds it so */
        int in = drr_find(&q->lv[0].fair->d, (uint64_t)md->tag_id[t]) != NULL;
        if (in && !waiting[t]) {
            assert_true(md->lax[t]);
            stale += !live[t];
        } else {
            assert_int_equal(in, waiting[t]);
            md->lax[t] &= in;
        }
    }
    uint32_t tenants = 0;
    queue_fair_bytes(q, 0, &tenants);
    assert_int_equal(queue_ready(q, 0), ready);
    assert_int_equal(tenants, tags + stale);
    /* the level's oldest: its oldest ready message of any tag, never the
     * head of whichever tag's turn it is */
    uint64_t first = 0;
    for (int i = 0; i < md->n && !first; i++)
        first = md->m[i].state == READY ? ENQ_NS(i) : 0;
    assert_int_equal(queue_oldest_ns(q, 0), first);
    if (!ready)
        return;
    if (rnd(seed) % 8) /* explain only now and then: acknowledged records' deletes wait meanwhile */
        return;
    int pick = (int)(rnd(seed) % ready);
    for (int i = 0; i < md->n; i++) {
        msg *m = &md->m[i];
        if (m->state != READY || pick-- != 0)
            continue;
        uint64_t key, rank, ahead = 0, want = 0;
        uint32_t tag;
        assert_int_equal(store_find(st, 0, m->id, MAXMSG, &key, &rank), SL_OK);
        assert_int_equal(queue_fair_place(q, 0, key, &tag, &ahead, MAXMSG), SL_OK);
        for (int j = 0; j < md->n; j++)
            want += md->m[j].tag == m->tag && md->m[j].state == READY && md->m[j].seq < m->seq;
        assert_int_equal(ahead, want);
        break;
    }
}

static void commit(queue *q, store *st, model *md)
{
    assert_int_equal(store_commit(st), SL_OK);
    queue_commit_ended(q, SL_OK);
    for (int i = 0; i < md->n; i++)
        md->m[i].fresh = 0;
}

/* commit_out hands the transaction to the writer thread, as a checkpoint
 * does, takes and acknowledges from the snapshot while that commit is out
 * (the acks wait for its end: queue_deferred_add), then ends it as the loop
 * does. Returns the messages taken meanwhile. */
static unsigned commit_out(queue *q, store *st, model *md, unsigned *seed)
{
    int started = 0, rc = SL_OK;
    unsigned taken = 0;
    queue_commit_started(q);
    assert_int_equal(store_commit_start(st, 1, 1, &started), SL_OK);
    if (started && store_committing(st)) {
        queue_commit_frozen(q);
        for (int i = 0; i < 12; i++) {
            msg *m;
            if (rnd(seed) % 2) {
                taken += (unsigned)take(q, md, 1);
            } else if ((m = any_leased(md, seed))) {
                assert_int_equal(queue_settle(q, 0, m->key), SL_OK);
                m->state = DONE;
            }
        }
    }
    if (started)
        store_commit_wait(st, &rc);
    assert_int_equal(rc, SL_OK);
    queue_commit_ended(q, rc);
    queue_deferred_apply(q);
    for (int i = 0; i < md->n; i++)
        md->m[i].fresh = 0;
    return taken;
}

static void fifo_per_tag_through_appends_takes_acks_and_nacks(void **state)
{
    (void)state;
    unsigned seed = th_seed();
    char tmp[] = "/tmp/sluice-fairq-XXXXXX", dir[64];
    assert_non_null(mkdtemp(tmp));
    snprintf(dir, sizeof dir, "%s/data", tmp);
    store *st = NULL;
    queue q;
    model *md = calloc(1, sizeof *md);
    assert_non_null(md);
    for (int t = 0; t < NTAGS; t++)
        md->tag_id[t] = -1;
    fair_open(dir, &st, &q);
    unsigned taken = 0, nacked = 0;
    for (int step = 0; step < STEPS; step++) {
        unsigned r = rnd(&seed) % 100;
        msg *m;
        if (r < 30 && md->n < MAXMSG) {
            /* bursts on one tag as well as spread ones, so runs grow and empty */
            append(&q, md, (int)(rnd(&seed) % 3 == 0 ? 0 : rnd(&seed) % NTAGS));
        } else if (r < 60) {
            taken += (unsigned)take(&q, md, 0);
        } else if (r < 75 && (m = any_leased(md, &seed))) {
            assert_int_equal(queue_settle(&q, 0, m->key), SL_OK);
            m->state = DONE;
        } else if (r < 87 && (m = any_leased(md, &seed))) {
            assert_int_equal(queue_return(&q, 0, m->key, ++m->attempt, 0), SL_OK);
            m->state = READY; /* back at its place: the head of its tag */
            nacked++;
        } else if (r < 93) {
            commit(&q, st, md);
        } else if (r < 98) {
            taken += commit_out(&q, st, md, &seed);
        }
        check(&q, st, md, &seed);
    }
    /* the rest: everything comes out, and every tag leaves */
    commit(&q, st, md);
    for (int i = 0; i < 4 * MAXMSG && queue_ready(&q, 0) + q.lv[0].leased > 0; i++) {
        msg *m = any_leased(md, &seed);
        if (m && rnd(&seed) % 2) {
            assert_int_equal(queue_settle(&q, 0, m->key), SL_OK);
            m->state = DONE;
        } else {
            int got = take(&q, md, 0);
            taken += (unsigned)got;
            assert_true(got || m);
        }
        check(&q, st, md, &seed);
    }
    uint32_t tenants = 0;
    queue_fair_bytes(&q, 0, &tenants);
    fprintf(stderr, "# %d published, %u taken, %u NACKed; %u tenants left\n", md->n, taken, nacked, tenants);
    assert_int_equal(queue_ready(&q, 0), 0);
    assert_int_equal(q.lv[0].leased, 0);
    /* every tag leaves, but for those whose last take came while a commit
     * was out: they stay in the turns, holding nothing, until a take finds
     * them empty (queue_fair.c, FAIR_TRIES), and no take comes to an empty
     * level */
    for (uint32_t i = 0; i < q.lv[0].fair->n; i++) {
        const tenant *tn = &q.lv[0].fair->t[i];
        assert_int_equal(tn->leased, 0);
        assert_int_equal(tn->returned.len, 0);
        assert_non_null(drr_find(&q.lv[0].fair->d, tn->tag));
    }
    assert_true(nacked > 0 && taken > (unsigned)md->n);
    queue_close(&q);
    store_close(&st);
    free(md);
    th_rmrf(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fifo_per_tag_through_appends_takes_acks_and_nacks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
