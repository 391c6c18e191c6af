/*
 * explain.h - why a message is where it is.
 */
#ifndef SLUICE_EXPLAIN_H
#define SLUICE_EXPLAIN_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

struct bk;

/* explain_message fills r (an ADMIN_OK) with where message id is and why it
 * is not delivered yet: state, level, position, until_ms and msg (msg points
 * into text, text_len bytes, which must outlive r's encoding). Returns SL_OK,
 * or a store error with a sentence in text. */
int explain_message(struct bk *b, uint64_t id, proto_msg *r, char *text, size_t text_len);

#endif /* SLUICE_EXPLAIN_H */
