/*
 * settle.h - how a delivery ends: ACK, NACK, THROTTLED, REJECT, an expired
 * lease, a consumer that leaves or disappears, a send that failed.
 */
#ifndef SLUICE_SETTLE_H
#define SLUICE_SETTLE_H

#include <stddef.h>
#include <stdint.h>

#include "bk.h"

/* Why a lease ended without an ACK. */
typedef enum settle_end {
    SETTLE_END_NACK,       /* the consumer gave it back: charged */
    SETTLE_END_EXPIRED,    /* the lease ran out: charged */
    SETTLE_END_GONE,       /* the consumer disconnected: charged */
    SETTLE_END_UNSENT,     /* the delivery never left the broker: not charged */
    SETTLE_END_LEFT,       /* the consumer said BYE before settling: not charged */
    SETTLE_END_UNREAD,     /* the lease ran out, and the consumer has sent nothing
                            * since it was delivered: it stopped reading, not charged */
} settle_end;

/* settle_ack settles l after an ACK: the message is deleted, the breaker
 * hears a success. Returns SL_OK or the store's error. */
int settle_ack(bk *b, lease *l);

/* settle_end_lease ends l without an ACK: requeue (the attempt charged
 * unless UNSENT, LEFT or UNREAD), delayed by delay_ms (NACK only; 0: at once), or a
 * dead letter when the attempts are used up. Failures are logged. */
void settle_end_lease(bk *b, lease *l, settle_end why, uint64_t delay_ms);

/* settle_throttled ends l after THROTTLED: the message goes back to the head
 * of its level uncharged, the sink pauses for retry_ms (0: the configured
 * backoff) and its rate is cut, at most once per second. With tag_scope
 * (the service limited the message's tag, not itself) only that tag pauses
 * and its bucket is cut (settle_tag_throttled); an untagged message, or a
 * tag that cannot be noted, is throttled as the sink's. */
void settle_throttled(bk *b, lease *l, uint64_t retry_ms, int tag_scope);

/* settle_reject buries l's message at once with the consumer's reason. */
void settle_reject(bk *b, lease *l, const char *reason, size_t reason_len);

/* settle_touch extends l by lease_ms (0: the configured lease; capped at a
 * day) and returns the lease granted, in ms. */
uint64_t settle_touch(bk *b, lease *l, uint64_t lease_ms);

/* settle_expire_leases ends at most max leases whose time ran out. */
void settle_expire_leases(bk *b, unsigned max);

/* settle_drop_conn ends every lease of c (why: SETTLE_END_GONE, or
 * SETTLE_END_LEFT for a BYE), leaves its pool and forgets c. */
void settle_drop_conn(bk *b, conn *c, settle_end why);

/* settle_send_failed is net_flush's failure callback (ctx is the bk): a
 * DELIVER that could not leave ends UNSENT; an unreachable peer is dropped. */
void settle_send_failed(void *ctx, const uint8_t *rid, size_t rid_len, uint64_t token, int err);

#endif /* SLUICE_SETTLE_H */
