/*
 * breaker.h - the circuit breaker in front of the sink; pure (time is a
 * parameter).
 *
 * Closed: deliveries flow, and each outcome (success: ACK; failure: NACK or
 * an expired lease) is kept for the last `window` deliveries. When at least
 * `window` / 2 outcomes are known and failures make more than threshold_pct
 * of them, the breaker opens: nothing goes to the sink. After cooldown it is
 * half-open: exactly one probe goes through; its success closes the breaker
 * (with a clean slate), its failure opens it again for another cooldown.
 * THROTTLED is not a failure: the sink is alive, only busy.
 */
#ifndef SLUICE_BREAKER_H
#define SLUICE_BREAKER_H

#include <stdint.h>

#define BREAKER_MAX_WINDOW 1024

typedef enum breaker_state { BREAKER_CLOSED = 0, BREAKER_OPEN, BREAKER_HALF_OPEN } breaker_state;

typedef struct breaker {
    uint32_t threshold_pct;  /* 0: the breaker never opens */
    uint32_t window;         /* outcomes remembered, 2..BREAKER_MAX_WINDOW */
    uint64_t cooldown_ns;
    uint8_t ring[BREAKER_MAX_WINDOW];
    uint32_t n, next, failures;
    breaker_state state;
    uint64_t opened_ns;
    int probe_out;           /* half-open: the probe is out */
    uint64_t trips;          /* closed -> open transitions */
    uint64_t transitions;    /* every state change */
} breaker;

/* breaker_init sets the policy and closes the breaker. */
void breaker_init(breaker *b, uint32_t threshold_pct, uint32_t window, uint64_t cooldown_ns);

/* breaker_allows tells whether a delivery may go to the sink at now_ns
 * (moving an open breaker whose cooldown is over to half-open). */
int breaker_allows(breaker *b, uint64_t now_ns);

/* breaker_sent notes that a delivery went out (the probe, when half-open). */
void breaker_sent(breaker *b);

/* breaker_record notes one delivery's outcome. */
void breaker_record(breaker *b, int failed, uint64_t now_ns);

/* breaker_next_ns returns when an open breaker will let a probe through,
 * or UINT64_MAX. */
uint64_t breaker_next_ns(const breaker *b);

/* breaker_name returns "closed", "open" or "half-open". */
const char *breaker_name(breaker_state s);

#endif /* SLUICE_BREAKER_H */
