/*
 * test_drr.c - the fair pick (broker/sched/drr.c) with a hand clock: the exact
 * order deficit round robin gives for hand-made weights and costs, blocked
 * tenants skipped and back at their time, churn of tenants becoming active
 * and idle with every structure checked after each step, bad weights
 * refused, and 100,000 waiting tenants served in turn within the memory
 * bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "drr.h"
#include "harness.h"
#include "sluice_errors.h"

/* serve picks at now_ns, charges cost and returns the key picked. */
static uint64_t serve(drr *d, uint64_t now_ns, uint64_t cost)
{
    uint64_t k = 0;
    assert_int_equal(drr_pick(d, now_ns, &k), SL_OK);
    drr_charge(d, k, cost);
    return k;
}

/* order serves n picks of cost 1 at now_ns and writes the keys as letters
 * ('a' + key). */
static void order(drr *d, uint64_t now_ns, int n, char *out)
{
    for (int i = 0; i < n; i++)
        out[i] = (char)('a' + serve(d, now_ns, 1));
    out[n] = '\0';
}

/* check walks every structure and asserts the invariants of drr.c. */
static void check(const drr *d)
{
    uint32_t ready = 0, blocked_timed = 0;
    for (uint32_t i = 0; i < d->n; i++) {
        const drr_tenant *t = &d->t[i];
        assert_ptr_equal(drr_find(d, t->key), t);
        if (t->state == DRR_READY) {
            ready++;
            assert_int_equal(t->heap_pos, DRR_NIL);
            assert_int_equal(d->t[t->next].prev, i);
            assert_int_equal(d->t[t->prev].next, i);
        } else {
            assert_int_equal(t->state, DRR_BLOCKED);
            assert_int_equal(t->next, DRR_NIL);
            if (t->ready_ns != DRR_NEVER) {
                blocked_timed++;
                assert_int_equal(d->heap[t->heap_pos], i);
            } else {
                assert_int_equal(t->heap_pos, DRR_NIL);
            }
        }
    }
    assert_int_equal(ready, d->nready);
    assert_int_equal(blocked_timed, d->nheap);
    for (uint32_t p = 1; p < d->nheap; p++)
        assert_true(d->t[d->heap[(p - 1) / 2]].ready_ns <= d->t[d->heap[p]].ready_ns);
    uint32_t walked = 0;
    if (d->head != DRR_NIL) {
        uint32_t i = d->head;
        do {
            walked++;
            i = d->t[i].next;
        } while (i != d->head && walked <= d->n);
    }
    assert_int_equal(walked, ready);
}

static void weights_share_turns(void **state)
{
    (void)state;
    drr d;
    char got[16];
    drr_init(&d, 1);
    assert_int_equal(drr_active(&d, 0, 2), SL_OK); /* a, weight 2 */
    assert_int_equal(drr_active(&d, 1, 1), SL_OK); /* b, weight 1 */
    order(&d, 0, 9, got);
    assert_string_equal(got, "aabaabaab");
    assert_int_equal(drr_active(&d, 2, 3), SL_OK); /* c joins at the tail */
    order(&d, 0, 12, got);
    assert_string_equal(got, "aabcccaabccc");
    drr_fini(&d);
}

/* a tag of weight 4 (tag set --weight 4) gets four turns a round; a tag
 * held by its rate (blocked until a time on the hand clock) is passed by and
 * the other keeps its share; back at its time, the 4:1 order again. */
static void weight_four_to_one_with_a_held_tag(void **state)
{
    (void)state;
    drr d;
    char got[32];
    drr_init(&d, 1);
    assert_int_equal(drr_active(&d, 0, 4), SL_OK); /* a: gold, weight 4 */
    assert_int_equal(drr_active(&d, 1, 1), SL_OK); /* b: free, weight 1 */
    order(&d, 0, 15, got);
    assert_string_equal(got, "aaaabaaaabaaaab");
    assert_int_equal(drr_block(&d, 0, 1000), SL_OK); /* a at its rate limit until t = 1000 */
    order(&d, 999, 3, got);
    assert_string_equal(got, "bbb");
    assert_int_equal(drr_next_ns(&d), 1000);
    /* held as the head, in its turn: back at 1000, that turn resumes ahead
     * of b's, and it is no more than one turn */
    order(&d, 1000, 10, got);
    assert_string_equal(got, "aaaabaaaab");
    drr_fini(&d);
}

static void costs_are_shared_in_units(void **state)
{
    (void)state;
    drr d;
    drr_init(&d, 1);
    assert_int_equal(drr_active(&d, 0, 1), SL_OK);
    assert_int_equal(drr_active(&d, 1, 1), SL_OK);
    /* a's messages cost 3, b's 1: b sends three for each of a's, once the
     * quantum has risen to 3 (the largest cost) after a's first */
    char got[16];
    for (int i = 0; i < 12; i++) {
        uint64_t k;
        assert_int_equal(drr_pick(&d, 0, &k), SL_OK);
        drr_charge(&d, k, k == 0 ? 3 : 1);
        got[i] = (char)('a' + k);
    }
    got[12] = '\0';
    assert_string_equal(got, "ababbbabbbab");
    assert_int_equal(d.quantum, 3);
    drr_fini(&d);
}

static void quantum_sets_the_turn(void **state)
{
    (void)state;
    drr d;
    char got[16];
    drr_init(&d, 3);
    assert_int_equal(drr_active(&d, 0, 1), SL_OK);
    assert_int_equal(drr_active(&d, 1, 2), SL_OK);
    order(&d, 0, 9, got);
    assert_string_equal(got, "aaabbbbbb");
    drr_fini(&d);
}

static void blocked_tenant_is_skipped_and_back_at_its_time(void **state)
{
    (void)state;
    drr d;
    char got[16];
    uint64_t k;
    drr_init(&d, 1);
    for (uint64_t i = 0; i < 3; i++)
        assert_int_equal(drr_active(&d, i, 1), SL_OK);
    assert_int_equal(drr_pick(&d, 0, &k), SL_OK);
    assert_int_equal(k, 0);
    /* a's limit holds it until 100: b and c go on without it */
    assert_int_equal(drr_block(&d, 0, 100), SL_OK);
    assert_int_equal(drr_next_ns(&d), 100);
    check(&d);
    order(&d, 0, 4, got);
    assert_string_equal(got, "bcbc");
    order(&d, 99, 2, got);
    assert_string_equal(got, "bc");
    /* at 100 it rejoins with the credit it had (its pick was never
     * charged): held in its turn, it resumes that turn as the head */
    order(&d, 100, 6, got);
    assert_string_equal(got, "abcabc");
    assert_int_equal(drr_next_ns(&d), DRR_NEVER);
    check(&d);

    /* blocked without a time (its in-flight cap): back only on unblock */
    assert_int_equal(drr_block(&d, 1, DRR_NEVER), SL_OK);
    assert_int_equal(drr_next_ns(&d), DRR_NEVER);
    order(&d, 1000000, 4, got);
    assert_string_equal(got, "acac");
    drr_unblock(&d, 1);
    check(&d);
    /* it was not the head when blocked (no turn to resume): at the tail */
    order(&d, 1000000, 3, got);
    assert_string_equal(got, "acb");

    /* everyone blocked: nothing to pick, and the time of the first back */
    assert_int_equal(drr_block(&d, 0, 500), SL_OK);
    assert_int_equal(drr_block(&d, 1, 300), SL_OK);
    assert_int_equal(drr_block(&d, 2, DRR_NEVER), SL_OK);
    assert_int_equal(drr_pick(&d, 200, &k), SL_ENOTFOUND);
    assert_int_equal(drr_next_ns(&d), 300);
    /* blocking again moves the time */
    assert_int_equal(drr_block(&d, 1, 600), SL_OK);
    assert_int_equal(drr_next_ns(&d), 500);
    check(&d);
    assert_int_equal(drr_pick(&d, 550, &k), SL_OK);
    assert_int_equal(k, 0);
    drr_charge(&d, 0, 1);
    assert_int_equal(drr_pick(&d, 550, &k), SL_OK);
    assert_int_equal(k, 0); /* alone in the ring */
    assert_int_equal(drr_block(&d, 7, 1), SL_ENOTFOUND);
    drr_fini(&d);
}

/* tenants held in their turns and back at the same pick resume in the
 * order their holds end, ahead of those that waited in the ring; each
 * resumes one turn, no more */
static void held_turns_resume_in_the_order_they_end(void **state)
{
    (void)state;
    drr d;
    char got[16];
    uint64_t k;
    drr_init(&d, 1);
    for (uint64_t i = 0; i < 4; i++)
        assert_int_equal(drr_active(&d, i, 2), SL_OK); /* a b c d, two a turn */
    assert_int_equal(drr_pick(&d, 0, &k), SL_OK);
    assert_int_equal(k, 0);
    assert_int_equal(drr_block(&d, 0, 20), SL_OK); /* a held until 20 */
    assert_int_equal(drr_pick(&d, 0, &k), SL_OK);
    assert_int_equal(k, 1);
    assert_int_equal(drr_block(&d, 1, 10), SL_OK); /* b held until 10: ends first */
    check(&d);
    order(&d, 0, 2, got);
    assert_string_equal(got, "cc");
    order(&d, 30, 10, got);
    assert_string_equal(got, "bbaaddccbb"); /* b's turn, a's, then the ring's order */
    check(&d);

    /* the same through drr_unblock, last unblocked first (as the broker
     * releases the tags a commit held: in reverse) */
    assert_int_equal(drr_pick(&d, 30, &k), SL_OK);
    assert_int_equal(k, 0);
    assert_int_equal(drr_block(&d, 0, DRR_NEVER), SL_OK);
    assert_int_equal(drr_pick(&d, 30, &k), SL_OK);
    assert_int_equal(k, 3);
    assert_int_equal(drr_block(&d, 3, DRR_NEVER), SL_OK);
    drr_unblock(&d, 3);
    drr_unblock(&d, 0);
    order(&d, 30, 6, got);
    assert_string_equal(got, "aaddcc");
    check(&d);
    drr_fini(&d);
}

static void weight_change_applies_from_the_next_turn(void **state)
{
    (void)state;
    drr d;
    char got[16];
    drr_init(&d, 1);
    assert_int_equal(drr_active(&d, 0, 1), SL_OK);
    assert_int_equal(drr_active(&d, 1, 1), SL_OK);
    order(&d, 0, 2, got);
    assert_string_equal(got, "ab");
    assert_int_equal(drr_set_weight(&d, 1, 3), SL_OK);
    /* b's current turn credit was granted at weight 1 */
    order(&d, 0, 9, got);
    assert_string_equal(got, "ababbbabb");
    drr_fini(&d);
}

static void bad_weights_are_refused(void **state)
{
    (void)state;
    drr d;
    drr_init(&d, 1);
    assert_int_equal(drr_active(&d, 5, 0), SL_EINVAL);
    assert_int_equal(drr_active(&d, 5, DRR_MAX_WEIGHT + 1), SL_EINVAL);
    assert_int_equal(drr_count(&d), 0);
    assert_int_equal(drr_active(&d, 5, DRR_MAX_WEIGHT), SL_OK);
    assert_int_equal(drr_active(&d, 5, 1), SL_ESTATE);
    assert_int_equal(drr_set_weight(&d, 5, 0), SL_EINVAL);
    assert_int_equal(drr_set_weight(&d, 6, 1), SL_ENOTFOUND);
    assert_int_equal(drr_find(&d, 5)->weight, DRR_MAX_WEIGHT);
    assert_int_equal(drr_idle(&d, 5), 1);
    assert_int_equal(drr_idle(&d, 5), 0);
    /* an absurd cost is clamped and raises the quantum with it, so the
     * tenant is passed over once, not 2^64 times, and comes back */
    assert_int_equal(drr_active(&d, 7, 1), SL_OK);
    assert_int_equal(drr_active(&d, 8, 1), SL_OK);
    drr_charge(&d, 7, UINT64_MAX);
    assert_true(d.quantum == UINT64_C(1) << 32);
    uint64_t k;
    assert_int_equal(drr_pick(&d, 0, &k), SL_OK);
    assert_int_equal(k, 8);
    drr_charge(&d, 8, 1);
    assert_int_equal(drr_pick(&d, 0, &k), SL_OK);
    assert_int_equal(k, 7);
    drr_fini(&d);
}

static void churn_keeps_every_structure_whole(void **state)
{
    (void)state;
    srand(th_seed()); /* printed; SLUICE_SEED replays it */
    enum { KEYS = 300, STEPS = 20000 };
    static char known[KEYS];
    memset(known, 0, sizeof known);
    drr d;
    drr_init(&d, 2);
    uint64_t now = 0;
    uint32_t count = 0;
    for (int step = 0; step < STEPS; step++) {
        unsigned slot = (unsigned)(step % 7);
        unsigned k = (unsigned)(rand() % KEYS);
        uint64_t key = (uint64_t)k * UINT64_C(0x9e3779b97f4a7c15); /* keys spread over 64 bits */
        switch (rand() % 6) {
        case 0:
        case 1:
            if (known[k]) {
                assert_int_equal(drr_active(&d, key, 1), SL_ESTATE);
            } else {
                assert_int_equal(drr_active(&d, key, 1 + (unsigned)rand() % 5), SL_OK);
                known[k] = 1;
                count++;
            }
            break;
        case 2:
            assert_int_equal(drr_idle(&d, key), known[k]);
            count -= known[k];
            known[k] = 0;
            break;
        case 3:
            assert_int_equal(drr_block(&d, key, slot ? now + slot * 10 : DRR_NEVER),
                             known[k] ? SL_OK : SL_ENOTFOUND);
            break;
        case 4:
            drr_unblock(&d, key);
            break;
        default: {
            uint64_t got;
            now += 5;
            if (drr_pick(&d, now, &got) == SL_OK) {
                assert_true(drr_find(&d, got) != NULL);
                assert_int_equal(drr_find(&d, got)->state, DRR_READY);
                drr_charge(&d, got, 1 + (uint64_t)(rand() % 3));
            } else {
                assert_int_equal(d.nready, 0);
                assert_true(drr_next_ns(&d) > now);
            }
        }
        }
        assert_int_equal(drr_count(&d), count);
        if (step % 50 == 0)
            check(&d);
    }
    check(&d);
    for (unsigned k = 0; k < KEYS; k++)
        drr_idle(&d, (uint64_t)k * UINT64_C(0x9e3779b97f4a7c15));
    assert_int_equal(drr_count(&d), 0);
    assert_int_equal(d.head, DRR_NIL);
    drr_fini(&d);
}

static void hundred_thousand_tenants_take_turns(void **state)
{
    (void)state;
    enum { N = 100000 };
    drr d;
    drr_init(&d, 1);
    for (uint64_t i = 0; i < N; i++)
        assert_int_equal(drr_active(&d, i * 7919 + 11, 1), SL_OK);
    assert_int_equal(drr_count(&d), N);
    size_t per = drr_bytes(&d) / N;
    printf("%zu bytes per waiting tenant (bound %d)\n", per, DRR_BYTES_PER_TENANT_MAX);
    assert_true(per <= DRR_BYTES_PER_TENANT_MAX);
    /* two full rounds: every tenant exactly twice, in the order they came */
    for (int round = 0; round < 2; round++)
        for (uint64_t i = 0; i < N; i++)
            assert_int_equal(serve(&d, 0, 1), i * 7919 + 11);
    /* a third of them blocked: the others go on without a look at them */
    for (uint64_t i = 0; i < N; i += 3)
        assert_int_equal(drr_block(&d, i * 7919 + 11, 1000 + i), SL_OK);
    for (uint64_t i = 0; i < N; i++)
        if (i % 3)
            assert_int_equal(serve(&d, 0, 1), i * 7919 + 11);
    check(&d);
    /* most go idle: the memory follows them down */
    for (uint64_t i = 0; i < N - 10; i++)
        assert_int_equal(drr_idle(&d, i * 7919 + 11), 1);
    assert_int_equal(drr_count(&d), 10);
    printf("%zu bytes with 10 tenants left\n", drr_bytes(&d));
    assert_true(drr_bytes(&d) <= 10 * DRR_BYTES_PER_TENANT_MAX + 1024);
    check(&d);
    drr_fini(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(weights_share_turns),
        cmocka_unit_test(weight_four_to_one_with_a_held_tag),
        cmocka_unit_test(costs_are_shared_in_units),
        cmocka_unit_test(quantum_sets_the_turn),
        cmocka_unit_test(blocked_tenant_is_skipped_and_back_at_its_time),
        cmocka_unit_test(held_turns_resume_in_the_order_they_end),
        cmocka_unit_test(weight_change_applies_from_the_next_turn),
        cmocka_unit_test(bad_weights_are_refused),
        cmocka_unit_test(churn_keeps_every_structure_whole),
        cmocka_unit_test(hundred_thousand_tenants_take_turns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
