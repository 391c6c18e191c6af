/*
 * admin.h - the admin command table.
 */
#ifndef SLUICE_ADMIN_H
#define SLUICE_ADMIN_H

#include <stddef.h>

#include "bk.h"

/* admin_run executes the ADMIN request req (its "cmd" names the command)
 * and fills rep, an ADMIN_OK. On failure it returns the error and writes a
 * sentence into text (text_len bytes); on success text may hold rep's msg. */
int admin_run(bk *b, const proto_msg *req, proto_msg *rep, char *text, size_t text_len);

#endif /* SLUICE_ADMIN_H */
