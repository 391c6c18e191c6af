/*
 * share.c - the max-min fair split of S slices, and one broker's grant.
 *
 * Owns nothing: two functions of their arguments. coord.lua does the same
 * arithmetic on the Redis server, inside the one script that grants, renews
 * and returns slices atomically; this copy is what the tests pin down and what
 * broker/README.md explains. Keep them equal (tests/unit/test_share.c runs one table of
 * cases against both).
 *
 * Water filling: with R slices left and k brokers unsatisfied, every broker
 * asking for at most R / k gets its demand; repeat until none does; then the
 * rest gets R / k each, and the R % k left over go one each to the lowest
 * indices. The result is max-min fair: no broker can get more without taking
 * from one that has no more than it.
 *
 * Costs: O(n^2) worst case for n brokers (n is small: the brokers sharing one
 * sink); no allocation.
 */
#include "share.h"

uint32_t share_split(uint32_t total, unsigned n, const uint32_t *demand, uint32_t *fair)
{
    unsigned char done[SHARE_MAX_BROKERS] = {0};
    uint32_t left = total;
    unsigned open = n, i;
    for (i = 0; i < n; i++)
        fair[i] = 0;
    while (open) {
        uint32_t each = left / open;
        unsigned met = 0;
        for (i = 0; i < n; i++)
            if (!done[i] && demand[i] <= each) {
                fair[i] = demand[i];
                left -= demand[i];
                done[i] = 1;
                met++;
            }
        if (met == 0)
            break;
        open -= met;
    }
    if (open) {
        uint32_t each = left / open, extra = left % open;
        for (i = 0; i < n; i++)
            if (!done[i]) {
                fair[i] = each + (extra ? 1 : 0);
                if (extra)
                    extra--;
            }
        left = 0;
    }
    return total - left;
}

uint32_t share_grant(uint32_t total, uint32_t fair, uint32_t claimed, uint32_t others_held, int learning)
{
    uint32_t want = learning ? claimed : fair;
    uint32_t room = others_held >= total ? 0 : total - others_held;
    return want < room ? want : room;
}
