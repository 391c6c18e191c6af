/*
 * cli_post.h - `sluice consume --post`: one delivery POSTed to the sink, at
 * the moment its pacing token is due, and what the answer means for it.
 */
#ifndef SLUICE_CLI_POST_H
#define SLUICE_CLI_POST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "httpc.h"
#include "sluice.h"

/* What a consumer's --post path keeps: the target (shared, read-only once
 * built) and this consumer's pacer (one per broker: each gives its own
 * share). The share last applied is the main thread's. */
typedef struct cli_post {
    httpc *http;
    sl_pacer *pacer;
    uint64_t rate_milli; /* the share applied to pacer; main thread only */
    uint32_t burst;
    unsigned peers;      /* consumers pacing the sink, as last applied */
    bool told;
    const char *origin;  /* with several brokers, this one's endpoint: a message without
                            a key is told apart by it too (ids are a broker's own); else NULL */
} cli_post;

/* cli_post_lines writes the header lines of d's POST into buf (cap bytes)
 * and points lines[0..*n) at them (at most CLI_POST_LINES): Idempotency-Key
 * (d's key, else "sluice-ID", "sluice-ID@ENDPOINT" with origin set; bytes
 * outside 0x21..0x7e and '%' percent-encoded), X-Sluice-Id,
 * X-Sluice-Attempt, X-Sluice-Level (the level's number), X-Sluice-Wait-Ms,
 * X-Sluice-Tag when tagged, then d's own headers as published. Returns 0,
 * or -1 when buf is too small (cli_post_lines_bytes says how big). */
#define CLI_POST_LINES (6 + SL_MAX_HEADERS)
int cli_post_lines(const cli_post *p, const sl_delivery *d, char *buf, size_t cap, const char **lines, size_t *n);

/* cli_post_lines_bytes returns the buffer cli_post_lines needs for d. */
size_t cli_post_lines_bytes(const cli_post *p, const sl_delivery *d);

/* cli_post_outcome POSTs d's body on the calling worker thread once its
 * token from p->pacer is due, and returns a CLI_OUTCOME_* (cli_consume.h),
 * with *delay_ms for the settlement (NACK: the backoff; THROTTLED and
 * THROTTLED_TAG: the Retry-After, 0 when absent) and, for REFUSED, the
 * reason in why. Says on stderr (as cmd) what went wrong; with verbose
 * also what was retried, and a throttle's scope. */
int cli_post_outcome(cli_post *p, const char *cmd, bool verbose, const sl_delivery *d, uint32_t *delay_ms,
                     char *why, size_t why_len);

/* cli_post_warm opens the calling worker thread's connection before any
 * message is at stake (httpc_warm). Returns 0, or -1 when no answer came. */
int cli_post_warm(cli_post *p);

/* cli_post_follow gives p->pacer the share the broker last told c (call it
 * on the thread that owns c, after receiving). Says so when verbose. */
void cli_post_follow(cli_post *p, const sl_client *c, const char *cmd, bool verbose);

#endif /* SLUICE_CLI_POST_H */
