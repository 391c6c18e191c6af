/*
 * admin.h - the admin command table, persisted settings, and explain.
 */
#ifndef SLUICE_ADMIN_H
#define SLUICE_ADMIN_H

#include <stddef.h>

#include "bk.h"

/* admin_load reads the persisted level and pool settings into b (at open).
 * Returns SL_OK or a store error. */
int admin_load(bk *b);

/* admin_save_pool / admin_save_level write one pool's or level's settings
 * into the open transaction (committed with the pass). */
void admin_save_pool(bk *b, const pool *p);
void admin_save_level(bk *b, unsigned level);
void admin_save_sink(bk *b);

/* admin_run executes the ADMIN request req (its "cmd" names the command)
 * and fills rep, an ADMIN_OK. On failure it returns the error and writes a
 * sentence into text (text_len bytes); on success text may hold rep's msg. */
int admin_run(bk *b, const proto_msg *req, proto_msg *rep, char *text, size_t text_len);

#endif /* SLUICE_ADMIN_H */
