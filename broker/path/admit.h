/*
 * admit.h - the publish policy: which level a PUT goes to, whether it may be
 * stored, and how (at once, delayed, with a time to live, once per key).
 */
#ifndef SLUICE_ADMIT_H
#define SLUICE_ADMIT_H

#include <stddef.h>
#include <stdint.h>

#include "bk.h"

/* admit_put applies the policy to PUT m and, when it passes, stores the
 * message in the pass's transaction. *id is the new message's id, or the
 * original's for a repeated idempotency key (then *duplicate is 1 and
 * nothing is stored). On failure text holds the reason for the ERROR reply.
 * Returns SL_OK, SL_ENOLEVEL, SL_ETOOBIG, SL_EINVAL (empty key, bad cost),
 * SL_ENOSPC (no room in the map or on the disk: room.c), SL_EFULL (the
 * level's limits), or the
 * store's error. */
int admit_put(bk *b, const proto_msg *m, uint64_t *id, int *duplicate, char *text, size_t text_len);

/* admit_level returns the level PUT m goes to (the one it names, or the
 * default, or a tag rule's), not yet checked against the levels. */
uint64_t admit_level(const bk *b, const proto_msg *m);

/* admit_level_rule returns the level of the first tag rule matching tag (a
 * NUL-terminated string), or -1. */
int admit_level_rule(const bk *b, const char *tag);

#endif /* SLUICE_ADMIT_H */
