/*
 * ha_prim.h - a primary's side of the replication stream (ha_prim.c).
 */
#ifndef SLUICE_HA_PRIM_H
#define SLUICE_HA_PRIM_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

typedef struct ha_prim ha_prim;

typedef struct ha_prim_cfg {
    const char *endpoint;       /* --repl-listen */
    const char *curve_secret;   /* the group's CURVE secret key (Z85), or NULL: a plaintext stream */
    const char *const *replicas; /* public keys (Z85) a standby may present besides the group's */
    size_t nreplicas;
    uint64_t epoch;             /* this primary's epoch */
    uint64_t seq;               /* the last record its store holds (store_repl_pos) */
    uint64_t epoch_start;       /* the last record made before this epoch began (0: not known) */
    uint64_t buffer_bytes;      /* records kept for a standby to resume from */
    uint64_t timeout_ns;        /* --repl-standby-timeout-ms */
} ha_prim_cfg;

/* What the primary knows of its standby (ha_prim_stats). */
typedef struct ha_prim_stats {
    int peer;                       /* a standby said HELLO and streams */
    int in_sync;                    /* it has acknowledged all, acks flowing */
    char name[PROTO_MAX_NAME + 1];  /* its node name */
    uint64_t seq, acked;            /* last record made; last acknowledged */
    uint64_t lag_ns;                /* how long the oldest unacknowledged record has waited */
    uint64_t diverged, far;         /* checksum mismatches seen; resumes refused */
    uint64_t held_records, held_bytes;
    int copying;                    /* a copy of the store is made or sent for the standby */
    uint64_t copies;                /* copies the standby has taken */
} ha_prim_stats;

/* ha_prim_open binds the stream's endpoint. SL_OK or an error (logged). */
int ha_prim_open(const ha_prim_cfg *cfg, ha_prim **out);

/* ha_prim_close closes; accepts NULL, NULLs *p. */
void ha_prim_close(ha_prim **p);

/* ha_prim_ship keeps record seq (bytes copied) and sends it to the standby
 * if one streams. SL_OK, SL_EINVAL (seq is not the next), SL_ENOMEM. */
int ha_prim_ship(ha_prim *p, uint64_t seq, const unsigned char *rec, size_t len, uint64_t now_ns);

/* ha_prim_poll reads HELLOs and ACKs, resends what a resumed standby
 * lacks, and decides whether the standby is in sync (acks within the
 * timeout). Never blocks. Returns 1 when in_sync changed. */
int ha_prim_poll(ha_prim *p, uint64_t now_ns);

/* ha_prim_copy_wanted tells whether the standby needs a copy of the store
 * (it cannot resume, or diverged) and none is made yet. */
int ha_prim_copy_wanted(const ha_prim *p, uint64_t now_ns);

/* ha_prim_copy_making says a copy is asked for now (its checkpoint
 * requested): from here every record made is kept until the standby resumes
 * from the copy's position or the copy is given up. */
void ha_prim_copy_making(ha_prim *p);

/* ha_prim_copy_send hands over the copy's file (fd, owned from here on
 * SL_OK: read and sent in chunks by ha_prim_poll). SL_ESTATE when the copy
 * was given up meanwhile (the caller closes fd), SL_ENOMEM. */
int ha_prim_copy_send(ha_prim *p, int fd, uint64_t size, uint64_t now_ns);

/* ha_prim_copy_failed gives the copy up (it could not be made); another is
 * wanted a moment later. */
void ha_prim_copy_failed(ha_prim *p, uint64_t now_ns);

/* ha_prim_switch tells the standby that Redis names it leader now (a
 * switchover), so that it asks at once. */
void ha_prim_switch(ha_prim *p);

/* ha_prim_acked tells whether record seq is durable on the standby. */
int ha_prim_acked(const ha_prim *p, uint64_t seq);

/* ha_prim_in_sync tells whether the standby is in sync (the name to record
 * in Redis as sync), or NULL. */
const char *ha_prim_in_sync(const ha_prim *p);

/* ha_prim_next_wake returns when the timeout would next drop the standby
 * from sync (UINT64_MAX: nothing waits). */
uint64_t ha_prim_next_wake(const ha_prim *p);

/* ha_prim_fd returns the stream's descriptor to poll, *ready when input waits. */
int ha_prim_fd(ha_prim *p, int *ready);

void ha_prim_stats_get(const ha_prim *p, uint64_t now_ns, ha_prim_stats *out);

#endif /* SLUICE_HA_PRIM_H */
