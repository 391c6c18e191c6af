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
    SETTLE_END_REPLACED,   /* another connection took its consumer's routing id (member.c):
                            * that consumer is gone, and may never have seen it; not charged */
} settle_end;

/* settle_holder answers "may the connection of conn c settle the lease of
 * token?": the lease when c holds it; otherwise NULL, the refusal counted
 * (b->settle_refused: the token unknown, or held by another connection)
 * and logged at a limited rate, with what in names of the sender, and
 * what the caller answers SL_ESTALE. c may be NULL (a connection that
 * never subscribed). The lease's message is untouched by a refusal: it
 * stays with its holder. */
lease *settle_holder(bk *b, conn *c, uint64_t token, const char *what);

/* settle_ack settles l after an ACK: the message is deleted, the breaker
 * hears a success. Returns SL_OK or the store's error. */
int settle_ack(bk *b, lease *l);

/* settle_end_lease ends l without an ACK: requeue (the attempt charged
 * unless UNSENT, LEFT, UNREAD or REPLACED), delayed by delay_ms (NACK only; 0: at once), or a
 * dead letter when the attempts are used up. Failures are logged. */
void settle_end_lease(bk *b, lease *l, settle_end why, uint64_t delay_ms);

/* settle_nack ends l after a NACK: back to its level, the attempt charged,
 * delayed by delay_ms cut at --max-nack-delay (0: at once). Returns the
 * delay applied, in ms. */
uint64_t settle_nack(bk *b, lease *l, uint64_t delay_ms);

/* settle_throttled ends l after THROTTLED: the message goes back to the head
 * of its level uncharged, the sink pauses for retry_ms (0: the configured
 * backoff; at most --max-throttle-pause) and its rate is cut, at most once
 * per second (pause.c). With tag_scope (the service limited the message's
 * tag, not itself) only that tag pauses and its bucket is cut
 * (settle_tag_throttled); an untagged message, or a tag that cannot be
 * noted, is throttled as the sink's. A consumer whose principal may not
 * consume every level pauses only its levels (and a tag only in them),
 * never the sink, and cuts nothing. */
void settle_throttled(bk *b, lease *l, uint64_t retry_ms, int tag_scope);

/* settle_reject buries l's message at once with the consumer's reason. */
void settle_reject(bk *b, lease *l, const char *reason, size_t reason_len);

/* settle_touch extends l by lease_ms (0: the configured lease), at most
 * --max-lease (never less than --lease-ms), and returns the lease granted,
 * in ms. */
uint64_t settle_touch(bk *b, lease *l, uint64_t lease_ms);

/* settle_expire_leases ends at most max leases whose time ran out. */
void settle_expire_leases(bk *b, unsigned max);

/* settle_drop_conn ends every lease of c (why: SETTLE_END_GONE, or
 * SETTLE_END_LEFT for a BYE, SETTLE_END_REPLACED for a consumer whose
 * routing id another connection took), leaves its pool and forgets c. */
void settle_drop_conn(bk *b, conn *c, settle_end why);

/* settle_send_failed is net_flush's failure callback (ctx is the bk): a
 * DELIVER that could not leave ends UNSENT; an unreachable peer is
 * dropped, and so is a consumer whose connection is gone (SL_ESTALE from a
 * guarded send) when its descriptor is no longer its socket. */
void settle_send_failed(void *ctx, unsigned sock, const uint8_t *rid, size_t rid_len, uint64_t token, int err);

#endif /* SLUICE_SETTLE_H */
