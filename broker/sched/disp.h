/*
 * disp.h - the pick rule: which level a consumer's next delivery comes from.
 *
 * Pure: it sees a snapshot of each level, the consumer's subscription and the
 * time, and returns a level with the reason it won. The loop calls it once
 * per delivery, so it is O(levels) and never looks at the backlog.
 *
 * The rule, in order (see broker/README.md, "How sluiced serves messages"):
 *   1. overdue: a level whose head has waited past the level's deadline is
 *      served first, earliest deadline first, as long as overdue picks stay
 *      within overdue_share_pct of all picks;
 *   2. guaranteed: a level that has been served below its guaranteed rate
 *      comes next, highest priority first;
 *   3. otherwise the lowest effective level wins, where
 *      effective = level - waited / aging_step; ties go to the older head.
 *      The winner is "priority" when it is also the highest eligible level,
 *      and "aged" when aging lifted it over a higher one.
 * A level is eligible when the consumer subscribed to it, it is not paused,
 * it has a ready message, and its ceiling bucket lets its head through. With no deadlines and no aging the rule is
 * strict priority.
 */
#ifndef SLUICE_DISP_H
#define SLUICE_DISP_H

#include <stdint.h>

typedef enum disp_reason {
    DISP_NONE = 0,
    DISP_PRIORITY, /* the highest-priority eligible level */
    DISP_AGED,     /* a lower level whose wait lifted it above a higher one */
    DISP_OVERDUE,  /* a head past its level's deadline */
    DISP_GUARANTEED, /* a level served below its guaranteed rate */
    DISP_REASON_COUNT_
} disp_reason;

/* A level's scheduling settings (settings.c persists them; rates live in
 * meter.h): what deliver turns into a disp_level at each pick. */
typedef struct disp_policy {
    uint64_t deadline_ms; /* 0: no deadline */
    uint64_t aging_ms;    /* 0: no aging */
    int paused;
} disp_policy;

/* What the dispatcher needs to know of one level. */
typedef struct disp_level {
    uint64_t ready;        /* messages that may be delivered now */
    uint64_t head_ns;      /* when the oldest ready message was enqueued */
    uint64_t deadline_ns;  /* 0: no deadline */
    uint64_t aging_ns;     /* 0: no aging; else one level per aging_ns waited */
    int paused;
    int blocked;           /* its ceiling bucket holds its head back */
    int below_min;         /* served below its guaranteed rate */
} disp_level;

/* The rule's only memory: the budget that caps overdue picks. */
typedef struct disp_state {
    uint32_t overdue_share_pct; /* 1..100: most overdue picks per 100 picks */
    uint32_t budget;            /* in hundredths of a pick */
} disp_state;

/* disp_init sets the overdue share (clamped to 1..100). */
void disp_init(disp_state *st, uint32_t overdue_share_pct);

/* disp_pick returns the level (0..nlevels-1) to deliver from to a consumer
 * subscribed to sub_mask (bit L = level L) at time now_ns (the clock of
 * head_ns), or -1 when none is eligible. *why (may be NULL) receives the
 * reason. It updates st's budget when it picks. */
int disp_pick(disp_state *st, const disp_level *levels, unsigned nlevels, uint32_t sub_mask,
              uint64_t now_ns, disp_reason *why);

/* disp_reason_name returns "priority", "aged", "overdue", "guaranteed" or
 * "none". */
const char *disp_reason_name(disp_reason r);

#endif /* SLUICE_DISP_H */
