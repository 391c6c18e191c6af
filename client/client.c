/*
 * client.c - what the library's API files share: the error record, the
 * request helper and the credit rule.
 *
 * The error record. Every fallible call in sluice.h clears it first and, when
 * it fails, records a code with either the broker's text (from an ERROR
 * reply) or the code's generic message, so that sl_last_error always has
 * something to say about the last call. The library prints nothing.
 *
 * The credit rule. A consumer keeps its outstanding credit (client.h) at its
 * window: subscribing grants the window, each ACK, NACK or THROTTLED gives
 * one back and grants what is then due, sl_set_window grants the difference
 * when it grows, and a reconnection starts over from the deliveries the
 * application still holds. Shrinking the window therefore needs no message:
 * acks stop granting until outstanding falls below it. The limit of
 * sl_set_limit caps the credit granted in all, so a consumer that asked for
 * N never gets N+1. One function computes what is due for all of these, so
 * they cannot drift.
 */
#include "client.h"

#include <string.h>

#include "wire.h"

void client_err_clear(sl_client *c)
{
    c->last_code = SL_OK;
    c->last_msg[0] = '\0';
}

int client_fail_text(sl_client *c, int code, const char *text, size_t len)
{
    client_str_copy(c->last_msg, sizeof c->last_msg, (proto_buf){text, (uint32_t)len});
    c->last_code = code;
    return code;
}

int client_fail(sl_client *c, int code)
{
    if (code != SL_OK && code == c->last_code && c->last_msg[0])
        return code; /* keep what the call's lower layer said (a refused handshake) */
    const char *text = sl_strerror(code);
    return client_fail_text(c, code, text, strlen(text));
}

int client_request(sl_client *c, proto_msg *m, proto_type want)
{
    int rc = wire_request(c, m);
    if (rc)
        return client_fail(c, rc);
    if (c->reply.type == PROTO_ERROR)
        return client_fail_text(c, wire_code(c->reply.code), c->reply.msg.ptr, c->reply.msg.len);
    if (c->reply.type != want)
        return client_fail(c, SL_EPROTO);
    return SL_OK;
}

uint64_t client_credit_due(const sl_client *c)
{
    uint64_t due = c->window > c->outstanding ? c->window - c->outstanding : 0;
    if (c->limit) {
        uint64_t left = c->limit > c->granted ? c->limit - c->granted : 0;
        due = due < left ? due : left;
    }
    return due;
}

void client_page_ask(proto_msg *m, uint64_t after, unsigned max)
{
    if (after)
        proto_set(m, after, after);
    if (max)
        proto_set(m, n, max > PROTO_MAX_ARRAY ? PROTO_MAX_ARRAY : max);
}

int client_page_fits(unsigned n, unsigned max)
{
    return n <= (max && max < PROTO_MAX_ARRAY ? max : PROTO_MAX_ARRAY);
}

void client_str_copy(char *dst, size_t size, proto_buf s)
{
    size_t len = s.len;
    if (len > size - 1) {
        len = size - 1;
        /* never end inside a UTF-8 sequence: drop its continuation bytes
         * and the lead byte they follow */
        while (len > 0 && ((unsigned char)s.ptr[len] & 0xC0) == 0x80)
            len--;
    }
    if (len)
        memcpy(dst, s.ptr, len);
    dst[len] = '\0';
}

void client_coord_copy(sl_coord_info *out, const proto_msg *r)
{
    memset(out, 0, sizeof *out);
    if (!(r->present & PF(coord_rows)) || r->coord_rows.n == 0)
        return;
    const proto_row_coord *row = &r->coord_rows.v[0];
    out->coordinated = 1;
    client_str_copy(out->state, sizeof out->state, row->state);
    out->reachable = row->reachable != 0;
    out->slices_held = row->slices_held;
    out->slices = row->slices;
    out->reserved_milli = row->reserved_milli;
    out->granted_milli = row->granted_milli;
    out->lease_left_ms = row->lease_left_ms;
    out->epoch = row->epoch;
    out->limit_milli = row->limit_milli;
    out->sum_reserved_milli = row->sum_reserved_milli;
    out->brokers = row->brokers;
    out->ops = row->ops;
}
