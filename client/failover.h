/*
 * failover.h - one broker at alternative addresses, "tcp://a|tcp://b": the
 * client follows its primary (failover.c). Not installed.
 */
#ifndef SLUICE_FAILOVER_H
#define SLUICE_FAILOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client.h"

#define FAILOVER_MAX_ALTS 8

/* failover_open reads endpoint: with '|', it keeps the alternatives in c
 * and *first is the one to connect to; without, nothing changes (*first is
 * endpoint). SL_OK, SL_EINVAL (an empty alternative, or too many),
 * SL_ENOMEM. */
int failover_open(sl_client *c, const char *endpoint, const char **first);

/* failover_close frees what failover_open kept. */
void failover_close(sl_client *c);

/* failover_on tells whether c has alternatives. */
static inline bool failover_on(const sl_client *c)
{
    return c->nalts > 1;
}

/* failover_keep copies the frame just encoded for a publish or a request
 * (c->out), to send again on the next address: *copy (free it). SL_OK or
 * SL_ENOMEM. */
int failover_keep(sl_client *c, void **copy, size_t *len);

/* failover_redirect notes a standby's SL_EREDIRECT: move to url (or, when
 * it names none, to the next alternative) shortly. */
void failover_redirect(sl_client *c, const char *url, size_t len);

/* failover_lost notes that the connection was lost (or refused): move to
 * the next alternative shortly, unless it comes back first. */
void failover_lost(sl_client *c);

/* failover_tick moves to the address due, if its time has come; returns
 * true when it did (the caller's requests are sent again once the new
 * connection's handshake succeeds: failover_resend). */
bool failover_tick(sl_client *c, int64_t now_ns);

/* failover_lost_once tells whether the request being waited for went to
 * the connection just left while it stood (a handshake had succeeded: it
 * may have reached the node), is unanswered, and must not run twice
 * (proto_repeat.h) unless a standby refused it: failover_resend would send
 * it again, so the caller is told instead that it may have run. A request
 * that never had a connection (the first address refused) moves on. */
bool failover_lost_once(const sl_client *c);

/* failover_resend sends again, in order, every publish still waiting for
 * its confirmation and the request being waited for (never one that must
 * not run twice: the wait for it has ended), with their seq: on the new
 * address's connection, right after its handshake. */
void failover_resend(sl_client *c);

/* failover_wake_ms returns how long a wait may last before failover_tick
 * has work (-1: none). */
long failover_wake_ms(const sl_client *c, int64_t now_ns);

#endif /* SLUICE_FAILOVER_H */
