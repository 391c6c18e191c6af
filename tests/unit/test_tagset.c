/*
 * test_tagset.c - tagset_match in place: the first pattern that matches a
 * tag, as fnmatch says, for random patterns and tags (globs, brackets,
 * escapes, exact tags), so that the prefilter on each pattern's literal
 * prefix and suffix never changes an answer; and what a match costs with
 * 1,024 patterns (printed, not asserted: a figure, not an invariant). The
 * seed is printed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "sluice_errors.h"
#include "tagset.h"

static uint64_t rnd_state;

static unsigned rnd(unsigned n)
{
    rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)((rnd_state >> 33) % n);
}

static void random_text(char *out, const char *alphabet, unsigned max)
{
    unsigned len = 1 + rnd(max), k = (unsigned)strlen(alphabet);
    for (unsigned i = 0; i < len; i++)
        out[i] = alphabet[rnd(k)];
    out[len] = '\0';
}

static void match_is_the_first_fnmatch(void **state)
{
    (void)state;
    rnd_state = th_seed();
    for (int round = 0; round < 200; round++) {
        tagset s;
        tagset_init(&s);
        char pats[40][16];
        unsigned n = 0;
        for (unsigned i = 0; i < 40; i++) {
            tagset_rule r = {.weight = 1};
            random_text(r.pattern, rnd(3) ? "ab-*?" : "ab-*?[]!\\", 6);
            if (tagset_put(&s, &r, 0) == SL_OK && tagset_find(&s, r.pattern, strlen(r.pattern)) == (int)n)
                strcpy(pats[n++], r.pattern);
        }
        for (int t = 0; t < 200; t++) {
            char tag[16];
            random_text(tag, "ab-*?[]\\", 7);
            int want = TAGSET_NONE;
            for (unsigned i = 0; i < n && want == TAGSET_NONE; i++)
                if (fnmatch(pats[i], tag, 0) == 0)
                    want = (int)i;
            int got = tagset_match(&s, tag, strlen(tag));
            if (got != want)
                fail_msg("tag '%s': matched %d ('%s'), fnmatch says %d ('%s')", tag, got,
                         got >= 0 ? pats[got] : "", want, want >= 0 ? pats[want] : "");
        }
        tagset_fini(&s);
    }
}

static void a_new_tag_among_1024_patterns(void **state)
{
    (void)state;
    tagset s;
    tagset_init(&s);
    for (unsigned i = 0; i < TAGSET_MAX_RULES; i++) {
        tagset_rule r = {.weight = 1};
        snprintf(r.pattern, sizeof r.pattern, i % 2 ? "tenant-%u-*" : "*-region-%u", i);
        assert_int_equal(tagset_put(&s, &r, 0), SL_OK);
    }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    unsigned matched = 0, n = 20000, want = 0;
    for (unsigned i = 0; i < n; i++) {
        char tag[64];
        snprintf(tag, sizeof tag, "tenant-%u-job-%u", i % 3000, i);
        matched += tagset_match(&s, tag, strlen(tag)) != TAGSET_NONE;
        want += i % 3000 % 2 == 1 && i % 3000 < TAGSET_MAX_RULES; /* tenant-K-* is there for odd K < 1024 */
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double us = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / 1e3 / n;
    print_message("a new tag among %u patterns: %.2f us a match (%u of %u matched)\n", TAGSET_MAX_RULES, us,
                  matched, n);
    assert_int_equal(matched, want);
    tagset_fini(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(match_is_the_first_fnmatch),
        cmocka_unit_test(a_new_tag_among_1024_patterns),
    };
    return cmocka_run_group_tests_name("tagset", tests, NULL, NULL);
}
