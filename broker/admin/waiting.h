/*
 * waiting.h - the admin commands on a level's waiting messages: peek,
 * delete, purge, move (msg.* in proto's PROTO_ADMIN_CMDS).
 */
#ifndef SLUICE_WAITING_H
#define SLUICE_WAITING_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

struct bk;

/* The most messages one request deletes or moves: one chunk, in the pass's
 * one transaction. */
#define WAITING_CHUNK 1000u
/* The most records one request looks at. */
#define WAITING_SCAN 10000u

/* Each waiting_<cmd> runs admin command msg.<cmd>: req its ADMIN request, r
 * its ADMIN_OK to fill with the command's results, as PROTO_ADMIN_CMDS
 * lists them; strings in r point into the store's memory, valid until the
 * pass's next write. On failure they return SL_ENOLEVEL, SL_EINVAL (a move
 * to its own level), SL_ESTATE (msg.delete of a leased message),
 * SL_ENOTFOUND (msg.delete: no waiting message with that id) or a store
 * error, with a sentence in text (text_len bytes). */
int waiting_peek(struct bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len);
int waiting_delete(struct bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len);
int waiting_purge(struct bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len);
int waiting_move(struct bk *b, const proto_msg *req, proto_msg *r, char *text, size_t text_len);

#endif /* SLUICE_WAITING_H */
