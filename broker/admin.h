/*
 * admin.h - the admin command table (derived from proto's PROTO_ADMIN_CMDS).
 */
#ifndef SLUICE_ADMIN_H
#define SLUICE_ADMIN_H

#include <stddef.h>

#include "bk.h"

/* admin_run executes the ADMIN request req (its "cmd" names the command)
 * and fills rep, an ADMIN_OK, with the results proto's PROTO_ADMIN_CMDS
 * names for the command. Before the command runs, req's arguments are
 * checked against that list (SL_EUNKNOWN for an unknown command, SL_EINVAL
 * for a missing or unexpected argument). On failure it returns the error and
 * writes a sentence into text (text_len bytes); on success text may hold
 * rep's msg, and rep's rows point into b (valid until b changes). */
int admin_run(bk *b, const proto_msg *req, proto_msg *rep, char *text, size_t text_len);

#endif /* SLUICE_ADMIN_H */
