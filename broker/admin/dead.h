/*
 * dead.h - what operators, and retention, do with dead letters: list, peek,
 * requeue, purge; keep at most so many, for at most so long.
 */
#ifndef SLUICE_DEAD_H
#define SLUICE_DEAD_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

struct bk;

/* The most dead letters one request (or one retention pass) changes: one
 * chunk, written in the pass's one transaction. */
#define DEAD_CHUNK 1000u
/* The most dead letters one purge request (or one age sweep) looks at. */
#define DEAD_SCAN 10000u

/* Each dead_<cmd> runs admin command dead.<cmd>: req its ADMIN request, r
 * its ADMIN_OK to fill with the command's results, as PROTO_ADMIN_CMDS
 * lists them; strings in r point into the store's memory or into text
 * (text_len bytes), valid until the pass's next write. On failure they
 * return SL_EINVAL, SL_ENOLEVEL, SL_ENOTFOUND or a store error, with a
 * sentence in text. */
int dead_list(struct bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len);
int dead_peek(struct bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len);
int dead_requeue(struct bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len);
int dead_purge(struct bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len);

/* dead_retain drops dead letters past --dead-max-messages (smallest id
 * first, at most DEAD_CHUNK a call). With sweep set (once a second) it also
 * looks at up to DEAD_SCAN more for --dead-max-age and logs what retention
 * dropped since its last line. Called by cron every pass. */
void dead_retain(struct bk *b, int sweep);

/* dead_pending tells whether dead_retain stopped at a full chunk with more
 * dead letters than --dead-max-messages allows: cron then wakes the loop
 * at once. O(1). */
int dead_pending(const struct bk *b);

#endif /* SLUICE_DEAD_H */
