/*
 * admin.h - the admin command table (derived from proto's PROTO_ADMIN_CMDS).
 */
#ifndef SLUICE_ADMIN_H
#define SLUICE_ADMIN_H

#include <stddef.h>

#include "bk.h"
#include "meter.h"

/* Who sent a command: its principal (auth.c's auth_caller fills it). */
typedef struct admin_caller {
    const char *name;   /* the principal's name; "anonymous" without auth */
    const char *key;    /* its CURVE public key; "" without auth */
    proto_role role;    /* admin without auth */
    int sock;           /* the endpoint it came in on (net_sock) */
} admin_caller;

/* admin_run executes the ADMIN request req (its "cmd" names the command),
 * sent by who, and fills rep, an ADMIN_OK, with the results proto's
 * PROTO_ADMIN_CMDS names for the command. Before the command runs, req's
 * arguments are checked against that list (SL_EUNKNOWN for an unknown
 * command, SL_EINVAL for a missing or unexpected argument). On failure it
 * returns the error and writes a sentence into text (text_len bytes); on
 * success text may hold rep's msg, and rep's rows and strings point into b
 * or static memory (valid until b changes or the next command). */
int admin_run(bk *b, const proto_msg *req, const admin_caller *who, proto_msg *rep, char *text, size_t text_len);

/* admin_web_login mints a console login link for who (admin_web.c):
 * web.login. Returns SL_OK, or an error with a sentence in text. */
int admin_web_login(bk *b, const proto_msg *req, const admin_caller *who, proto_msg *rep, char *text,
                    size_t text_len);

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
