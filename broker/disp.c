/*
 * disp.c - the pick rule.
 *
 * Today the rule is strict priority: the lowest-numbered level that the
 * consumer subscribed to and that has a ready message. FIFO within a level is
 * the queue's job (queue.c). Aging, deadlines and guaranteed rates extend this
 * function; they keep its shape: a pure scan over at most 16 levels, O(levels)
 * per pick, independent of the backlog.
 */
#include "disp.h"

#include <stddef.h>

int disp_pick(const disp_level *levels, unsigned nlevels, uint32_t sub_mask, disp_reason *why)
{
    for (unsigned l = 0; l < nlevels; l++) {
        if (!((sub_mask >> l) & 1) || levels[l].ready == 0)
            continue;
        if (why)
            *why = DISP_PRIORITY;
        return (int)l;
    }
    if (why)
        *why = DISP_NONE;
    return -1;
}

const char *disp_reason_name(disp_reason r)
{
    switch (r) {
    case DISP_PRIORITY: return "priority";
    case DISP_NONE: break;
    }
    return "none";
}
