/*
 * disp.h - the pick rule: which level a consumer's next delivery comes from.
 *
 * Pure: it sees only a snapshot of each level and the consumer's
 * subscription, and returns a level with the reason it won. The loop calls it
 * once per delivery, so it must stay O(levels).
 */
#ifndef SLUICE_DISP_H
#define SLUICE_DISP_H

#include <stdint.h>

typedef enum disp_reason {
    DISP_NONE = 0,
    DISP_PRIORITY, /* the highest-priority eligible level */
} disp_reason;

/* What the dispatcher needs to know of one level. */
typedef struct disp_level {
    uint64_t ready; /* messages that may be delivered now */
} disp_level;

/* disp_pick returns the level (0..nlevels-1) to deliver from to a consumer
 * subscribed to sub_mask (bit L = level L), or -1 when none of its levels has
 * a ready message. *why (may be NULL) receives the reason. */
int disp_pick(const disp_level *levels, unsigned nlevels, uint32_t sub_mask, disp_reason *why);

/* disp_reason_name returns "priority", ... */
const char *disp_reason_name(disp_reason r);

#endif /* SLUICE_DISP_H */
