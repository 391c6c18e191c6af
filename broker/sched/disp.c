/*
 * disp.c - the pick rule (see disp.h for the rule itself).
 *
 * Effective levels are compared in fixed point: effective = level * 2^16 -
 * waited * 2^16 / aging_ns, so an aging step of 1 s and a wait of 1.5 s lift
 * a message exactly one and a half levels. Ties go to the older head, then to
 * the higher-priority level.
 *
 * The overdue cap is a small token budget: every pick adds share/100 of a
 * pick (kept in hundredths), an overdue pick spends a whole one, and the
 * budget never exceeds one pick, so at most `share` overdue picks in 100 on
 * average and never a burst. When the budget is short, an overdue head still
 * competes under rule 2, where its long wait usually wins through aging.
 *
 * Cost: two passes over at most 16 levels; no allocation, no clock, no I/O.
 */
#include "disp.h"

#include <stddef.h>

#define FIX_SHIFT 16
#define BUDGET_ONE 100 /* one overdue pick, in hundredths */

void disp_init(disp_state *st, uint32_t overdue_share_pct)
{
    st->overdue_share_pct = overdue_share_pct < 1 ? 1 : overdue_share_pct > 100 ? 100 : overdue_share_pct;
    st->budget = BUDGET_ONE;
}

static int eligible(const disp_level *l, uint32_t mask, unsigned i)
{
    return ((mask >> i) & 1) && l->ready > 0 && !l->paused && !l->blocked;
}

static uint64_t waited(const disp_level *l, uint64_t now_ns)
{
    return l->head_ns && now_ns > l->head_ns ? now_ns - l->head_ns : 0;
}

static void earn(disp_state *st)
{
    st->budget += st->overdue_share_pct;
    if (st->budget > BUDGET_ONE)
        st->budget = BUDGET_ONE;
}

int disp_pick(disp_state *st, const disp_level *levels, unsigned nlevels, uint32_t sub_mask,
              uint64_t now_ns, disp_reason *why)
{
    int first = -1, overdue = -1, best = -1, guaranteed = -1;
    uint64_t overdue_due = UINT64_MAX;
    int64_t best_eff = INT64_MAX;
    uint64_t best_head = UINT64_MAX;

    for (unsigned i = 0; i < nlevels; i++) {
        const disp_level *l = &levels[i];
        if (!eligible(l, sub_mask, i))
            continue;
        if (first < 0)
            first = (int)i;
        if (guaranteed < 0 && l->below_min)
            guaranteed = (int)i;
        uint64_t w = waited(l, now_ns);
        if (l->deadline_ns && w > l->deadline_ns && l->head_ns + l->deadline_ns < overdue_due) {
            overdue_due = l->head_ns + l->deadline_ns;
            overdue = (int)i;
        }
        int64_t eff = (int64_t)i << FIX_SHIFT;
        if (l->aging_ns) {
            uint64_t lift = (w / l->aging_ns) << FIX_SHIFT;
            lift += ((w % l->aging_ns) << FIX_SHIFT) / l->aging_ns;
            eff -= lift > (uint64_t)INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t)lift;
        }
        uint64_t head = l->head_ns ? l->head_ns : UINT64_MAX;
        if (eff < best_eff || (eff == best_eff && head < best_head)) {
            best_eff = eff;
            best_head = head;
            best = (int)i;
        }
    }
    disp_reason r = DISP_NONE;
    int pick = -1;
    if (overdue >= 0 && st->budget >= BUDGET_ONE) {
        st->budget -= BUDGET_ONE;
        pick = overdue;
        r = DISP_OVERDUE;
    } else if (guaranteed >= 0) {
        pick = guaranteed;
        r = DISP_GUARANTEED;
    } else if (best >= 0) {
        pick = best;
        r = best == first ? DISP_PRIORITY : DISP_AGED;
    }
    if (pick >= 0)
        earn(st);
    if (why)
        *why = r;
    return pick;
}

const char *disp_reason_name(disp_reason r)
{
    switch (r) {
    case DISP_PRIORITY: return "priority";
    case DISP_AGED: return "aged";
    case DISP_OVERDUE: return "overdue";
    case DISP_GUARANTEED: return "guaranteed";
    case DISP_NONE:
    case DISP_REASON_COUNT_: break;
    }
    return "none";
}
