/*
 * cli_post.c - `sluice consume --post URL`: the HTTP path of one delivery.
 *
 * A worker POSTs the body on its own libcurl handle (kept for keep-alive)
 * and turns the answer into an outcome, with the delay the settlement
 * carries: 2xx acks; 429 and 503 are THROTTLED with the Retry-After in
 * milliseconds (0 when absent: the broker's default backoff), for the
 * message's tag alone (scope tag) when the answer carries the header
 * --tag-limit-header names (httpc_tag_limit_set) and the message has a
 * tag, else for the sink; another 5xx,
 * no answer or the timeout nacks with a backoff that doubles per attempt
 * (httpc_backoff_ms); another 4xx is a permanent failure: the message is
 * rejected, a dead letter at once with the status in its reason.
 *
 * Pacing where the request leaves. The broker meters when it dispatches,
 * but the sink sees when a request arrives, and between the two sit the
 * socket, this process's main thread and the workers; a worker the
 * scheduler delays sends late and the next one on time, so two arrive
 * together. So each worker takes a token again just before it sends, from
 * an sl_pacer at the share of the sink the broker gave this consumer
 * (sl_pace_share: its part of the recent deliveries times 1.5, of the
 * sink's rate and burst). The token is taken at the moment of sending: what
 * leaves this process is at most share * tau + burst in any window tau. The broker's bucket stays the bound above it (and applies
 * the cut after THROTTLED). The pacer also holds each request until its
 * release time (released_ns) plus the longest recent lag, so requests keep
 * the broker's spacing whichever worker, or process, sends them.
 *
 * No bunched first burst. Before the consumer takes credit every worker
 * opens its connection (cli_post_warm, a HEAD request): otherwise the first
 * deliveries wait for their connections while the next ones do not, and
 * arrive together.
 *
 * The tag. A tagged message's POST carries "X-Sluice-Tag: TAG" (httpc
 * percent-encodes bytes a header cannot hold), so the service can limit or
 * route per tenant (sluice-sink --key-header X-Sluice-Tag).
 *
 * The message's identity and headers. Every POST carries Idempotency-Key
 * (the key the message was published with, else an id of the message that
 * no redelivery changes), X-Sluice-Id, X-Sluice-Attempt, X-Sluice-Level and
 * X-Sluice-Wait-Ms (its time in the queue before this delivery), then the
 * message's own headers as published (traceparent and tracestate among
 * them). A lease that runs out after the service applied a request but
 * before the ACK brings the message again, with the same Idempotency-Key:
 * a service that remembers the keys it applied absorbs the repeat
 * (sluice-sink --dedup-header Idempotency-Key shows it). The broker refused
 * hop-by-hop and reserved names at publish, and a header the operator gave
 * with --header wins over a message's of the same name (httpc_send_with).
 *
 * Costs: one pacer lock and at most one sleep per message; one HEAD per
 * worker at start.
 */
#include "cli_post.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_consume.h"
#include "cli_text.h"

size_t cli_post_lines_bytes(const cli_post *p, const sl_delivery *d)
{
    size_t n = 512 + HTTPC_TAG_LINE_BYTES + 3 * (strlen(d->key) + (p->origin ? strlen(p->origin) + 1 : 0));
    for (size_t i = 0; i < d->nheaders; i++)
        n += strlen(d->headers[i].name) + 2 + strlen(d->headers[i].value) + 1;
    return n;
}

int cli_post_lines(const cli_post *p, const sl_delivery *d, char *buf, size_t cap, const char **lines, size_t *n)
{
    size_t used = 0, k = 0;
    if (cap < cli_post_lines_bytes(p, d))
        return -1;
#define LINE_START_() (lines[k++] = buf + used)
    LINE_START_();
    used += (size_t)sprintf(buf + used, "Idempotency-Key: ");
    if (d->key[0]) {
        used += httpc_value_encode(d->key, strlen(d->key), buf + used);
    } else {
        used += (size_t)sprintf(buf + used, "sluice-%" PRIu64, d->id);
        if (p->origin) {
            buf[used++] = '@';
            used += httpc_value_encode(p->origin, strlen(p->origin), buf + used);
        }
    }
    used++; /* its NUL */
    LINE_START_();
    used += (size_t)sprintf(buf + used, "X-Sluice-Id: %" PRIu64, d->id) + 1;
    LINE_START_();
    used += (size_t)sprintf(buf + used, "X-Sluice-Attempt: %u", d->attempt) + 1;
    LINE_START_();
    used += (size_t)sprintf(buf + used, "X-Sluice-Level: %u", d->level) + 1;
    LINE_START_();
    used += (size_t)sprintf(buf + used, "X-Sluice-Wait-Ms: %" PRIu64, d->wait_ms) + 1;
    if (d->tag[0]) {
        LINE_START_();
        used += (size_t)sprintf(buf + used, "%s: ", HTTPC_TAG_HEADER);
        used += httpc_value_encode(d->tag, HTTPC_TAG_BYTES, buf + used) + 1;
    }
    for (size_t i = 0; i < d->nheaders && k < CLI_POST_LINES; i++) {
        LINE_START_();
        used += (size_t)sprintf(buf + used, "%s: %s", d->headers[i].name, d->headers[i].value) + 1;
    }
#undef LINE_START_
    *n = k;
    return 0;
}

int cli_post_outcome(cli_post *p, const char *cmd, bool verbose, const sl_delivery *d, uint32_t *delay_ms,
                     char *why, size_t why_len)
{
    httpc_result r;
    const char *lines[CLI_POST_LINES];
    size_t nlines = 0, cap = cli_post_lines_bytes(p, d);
    char *buf = malloc(cap);
    if (!buf || cli_post_lines(p, d, buf, cap, lines, &nlines) != 0) {
        free(buf);
        cli_text_say(cmd, "message %" PRIu64 ": out of memory for its request headers", d->id);
        return CLI_OUTCOME_FAILED; /* unacknowledged: it returns to the broker */
    }
    sl_pacer_wait_released(p->pacer, d->cost, d->released_ns);
    int sent = httpc_send_with(p->http, lines, nlines, d->body, d->body_len, &r);
    free(buf);
    if (sent != SL_OK) {
        cli_text_say(cmd, "message %" PRIu64 ": out of memory for an HTTP handle", d->id);
        return CLI_OUTCOME_FAILED; /* unacknowledged: it returns to the broker */
    }
    if (r.verdict == HTTPC_DELIVERED)
        return CLI_OUTCOME_ACK;
    if (r.verdict == HTTPC_REFUSED) {
        snprintf(why, why_len, "%s", r.what);
        cli_text_say(cmd, "message %" PRIu64 ": %s; permanent failure (attempt %u): rejected, now a dead letter",
                     d->id, r.what, d->attempt);
        return CLI_OUTCOME_REFUSED;
    }
    bool throttled = r.verdict == HTTPC_THROTTLED;
    bool tag = throttled && r.tag_limited && d->tag[0]; /* an untagged message has only the sink's scope */
    *delay_ms = throttled ? r.retry_after_ms : httpc_backoff_ms(d->attempt);
    char wait[32] = "the broker's default backoff";
    if (*delay_ms)
        snprintf(wait, sizeof wait, "%" PRIu32 " ms", *delay_ms);
    if (verbose && throttled)
        cli_text_say(cmd, "message %" PRIu64 ": %s; returned as throttled, scope %s (attempt %u), "
                     "the broker pauses %s%s%s for %s", d->id, r.what, tag ? "tag" : "sink", d->attempt,
                     tag ? "tag '" : "the sink", tag ? d->tag : "", tag ? "'" : "", wait);
    else if (verbose)
        cli_text_say(cmd, "message %" PRIu64 ": %s; nacked (attempt %u), delivered again in %s", d->id, r.what,
                     d->attempt, wait);
    return tag ? CLI_OUTCOME_THROTTLED_TAG : throttled ? CLI_OUTCOME_THROTTLED : CLI_OUTCOME_NACK;
}

int cli_post_warm(cli_post *p)
{
    long status = 0;
    return httpc_warm(p->http, &status) == SL_OK ? 0 : -1;
}

void cli_post_follow(cli_post *p, const sl_client *c, const char *cmd, bool verbose)
{
    uint64_t rate = 0;
    uint32_t burst = 0;
    unsigned peers = sl_pace_peers(c);
    if (!sl_pace_share(c, &rate, &burst) ||
        (p->told && rate == p->rate_milli && burst == p->burst && (peers > 1) == (p->peers > 1)))
        return;
    p->told = true;
    p->rate_milli = rate;
    p->burst = burst;
    p->peers = peers;
    sl_pacer_set(p->pacer, rate, burst);
    sl_pacer_peers(p->pacer, peers);
    if (verbose) {
        char shown[40];
        cli_text_rate_format(rate, "unpaced", shown, sizeof shown);
        if (peers > 1)
            cli_text_say(cmd, "pacing: %s, burst %" PRIu32 " (this consumer's share of the sink); %u consumers pace "
                         "it: each request held at least %d ms past its release", shown, burst, peers,
                         SL_PACER_SHARED_HOLD_MS);
        else
            cli_text_say(cmd, "pacing: %s, burst %" PRIu32 " (this consumer's share of the sink)", shown, burst);
    }
}
