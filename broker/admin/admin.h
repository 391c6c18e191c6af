/*
 * admin.h - the admin command table (derived from proto's PROTO_ADMIN_CMDS).
 */
#ifndef SLUICE_ADMIN_H
#define SLUICE_ADMIN_H

#include <stddef.h>

#include "bk.h"
#include "meter.h"

/* admin_run executes the ADMIN request req (its "cmd" names the command)
 * and fills rep, an ADMIN_OK, with the results proto's PROTO_ADMIN_CMDS
 * names for the command. Before the command runs, req's arguments are
 * checked against that list (SL_EUNKNOWN for an unknown command, SL_EINVAL
 * for a missing or unexpected argument). On failure it returns the error and
 * writes a sentence into text (text_len bytes); on success text may hold
 * rep's msg, and rep's rows point into b (valid until b changes). */
int admin_run(bk *b, const proto_msg *req, proto_msg *rep, char *text, size_t text_len);

/* A limit as a request's window_rows set it: the per-second window (rate
 * and burst; rate 0 = none; burst 0 = keep the burst the limit has) and the
 * others. */
#define ADMIN_MAX_BURST 1000000u
typedef struct admin_limit {
    uint64_t rate_milli;
    uint32_t burst;
    unsigned nmore;
    rl_window more[METER_MORE_WINDOWS];
} admin_limit;

/* admin_windows_take reads a request's window rows: at most
 * PROTO_MAX_WINDOWS, each with a count, a period of 1 ms to a day and a
 * burst of at most ADMIN_MAX_BURST; the first per-second one becomes the
 * limit's rate and burst, the others (at most METER_MORE_WINDOWS) its
 * further windows. One window with count 0 means no limit. SL_EINVAL with a
 * sentence in text otherwise. */
int admin_windows_take(const proto_rows_window *rows, admin_limit *out, char *text, size_t text_len);

/* The tag commands (admin_tag.c): tag.set, tag.list, tag.pause and
 * tag.resume (paused 0). Each returns SL_OK or an error with a sentence in
 * text. */
int admin_tag_set(bk *b, const proto_msg *req, proto_msg *rep, char *text, size_t text_len);
int admin_tag_list(bk *b, const proto_msg *req, proto_msg *rep, char *text, size_t text_len);
int admin_tag_pause(bk *b, const proto_msg *req, proto_msg *rep, char *text, size_t text_len, int paused);

#endif /* SLUICE_ADMIN_H */
