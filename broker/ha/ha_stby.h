/*
 * ha_stby.h - a standby's side of the replication stream (ha_stby.c).
 */
#ifndef SLUICE_HA_STBY_H
#define SLUICE_HA_STBY_H

#include <stddef.h>
#include <stdint.h>

typedef struct store store;
typedef struct ha_stby ha_stby;

/* What ha_stby_stats reports. */
typedef struct ha_stby_stats {
    uint64_t epoch;              /* the highest epoch seen (persisted) */
    uint64_t applied;            /* the last record durable in this store */
    uint64_t applied_epoch;      /* the epoch it was made in */
    uint64_t records, refused;   /* records applied; refused (older epoch, bad) */
    int streaming, far;          /* a primary streams to it; it said the stream cannot resume */
    uint64_t last_record_ns;
    uint64_t behind;             /* records the primary had made and this store lacked, at its last POS */
    uint64_t lag_ms, pos_ns;     /* the primary's lag for this standby then (ha_wire.h, POS), and when */
    int copying;                 /* a copy of the primary's store is being received */
    uint64_t copy_bytes;         /* its bytes written so far */
} ha_stby_stats;

/* ha_stby_new follows no primary yet; st is the standby's open store, dir
 * its data directory (for the epoch file), known_epoch the epoch persisted
 * there. SL_OK, or a store error reading the position. */
int ha_stby_new(store *st, const char *dir, const char *node, uint64_t known_epoch, ha_stby **out);

/* ha_stby_secret sets the group's CURVE secret key (Z85, the broker's
 * --curve-secret; NULL: none) the stream is encrypted with from the next
 * connection on (repl_link_connect), and mine, the secret of the key pair
 * this standby presents (--repl-key, a replica's; NULL: the group's). */
void ha_stby_secret(ha_stby *s, const char *secret, const char *mine);

/* ha_stby_destroy closes the link; accepts NULL, NULLs *s. */
void ha_stby_destroy(ha_stby **s);

/* ha_stby_follow connects to the primary's stream at repl_ep (reconnects
 * when it changed); epoch is the group's as Redis says (persisted first if
 * higher). SL_OK or an error. */
int ha_stby_follow(ha_stby *s, const char *repl_ep, uint64_t epoch, uint64_t now_ns);

/* ha_stby_poll applies the records that came, makes them durable (one
 * commit of the store, waited for: nothing else runs on a standby),
 * acknowledges the last, and says HELLO when due. Returns SL_OK, or a
 * store error (the node must stop). */
int ha_stby_poll(ha_stby *s, uint64_t now_ns);

/* ha_stby_loaded tells whether a copy of the primary's store is complete
 * beside this store (flushed, checked): the caller closes the store, swaps
 * the copy in (ha_recv_swap) and starts again on it. */
int ha_stby_loaded(const ha_stby *s);

/* ha_stby_switch_asked tells (once) whether the primary said a switchover
 * made this node leader: the caller asks Redis at once. */
int ha_stby_switch_asked(ha_stby *s);

/* ha_stby_fd returns the descriptor to poll (-1: none), *ready when input waits. */
int ha_stby_fd(ha_stby *s, int *ready);

/* ha_stby_next_wake returns when the next HELLO is due. */
uint64_t ha_stby_next_wake(const ha_stby *s);

/* ha_stby_epoch returns the highest epoch seen. */
uint64_t ha_stby_epoch(const ha_stby *s);

void ha_stby_stats_get(const ha_stby *s, ha_stby_stats *out);

#endif /* SLUICE_HA_STBY_H */
