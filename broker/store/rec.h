/*
 * rec.h - a stored message record as bytes: encode, decode, seal, rewrite.
 *
 * A record is one LMDB value: a fixed header, the tag, the body, the
 * message's headers when it has any (a block the record does not look
 * into: proto_hdrs.h), its idempotency key when it has one and, for dead
 * letters only, a tail holding the reason and the time of death. A CRC-32C at
 * its start covers the key the record is filed under and every byte after
 * the CRC, so a record whose key was damaged fails its check like one whose
 * bytes were. The byte layout, and the rule for changing it, is written out
 * in rec.c.
 *
 * Every function here is pure: it works on buffers the caller owns and keeps
 * no state, so the store and the tests share one definition of the format.
 * Only the store writes records to disk.
 */
#ifndef SLUICE_REC_H
#define SLUICE_REC_H

#include <stddef.h>
#include <stdint.h>

/* The tail stores the reason's length in 16 bits. */
#define REC_MAX_REASON UINT16_MAX

/* A message record. After rec_decode, tag, body and reason point into the
 * decoded buffer. */
typedef struct rec_msg {
    uint64_t id;
    uint64_t enq_ns;      /* wall-clock ns when first enqueued */
    uint64_t expires_ns;  /* wall-clock ns, 0 = never (reserved for TTL) */
    uint32_t attempt;     /* deliveries charged so far */
    uint32_t cost;        /* units charged to the sink and level buckets; 1 by default */
    uint8_t level;
    const char *tag;
    uint32_t tag_len;
    const void *body;
    uint32_t body_len;
    const void *headers;  /* the headers' packed block (proto_hdrs_pack); NULL with headers_len 0: none */
    uint32_t headers_len; /* at most PROTO_MAX_HEADER_BLOCK */
    const char *key;      /* the idempotency key it was published with; NULL with key_len 0: none */
    uint32_t key_len;     /* at most PROTO_MAX_TAG */
    /* dead letters only */
    const char *reason;
    uint32_t reason_len;
    uint64_t died_ns;
} rec_msg;

/* The key a record is filed under (LMDB's key bytes: an order key, a dead
 * letter's id, a delayed record's due time and id), which its checksum
 * covers: a record moved to another key is sealed again for it. */
typedef struct rec_key {
    const void *bytes;
    size_t len;
} rec_key;

/* Whether a record carries the dead-letter tail. The bytes do not say: the
 * database a record is kept in does. */
typedef enum rec_kind { REC_LIVE, REC_DEAD } rec_kind;

/* rec_size checks that m can be encoded and stores in *bytes the size of its
 * encoding as a live record. Returns SL_OK; SL_EINVAL when tag or body is
 * NULL with a nonzero length, or level is not below PROTO_MAX_LEVELS;
 * SL_ETOOBIG when tag_len exceeds PROTO_MAX_TAG, body_len PROTO_MAX_BODY or
 * headers_len PROTO_MAX_HEADER_BLOCK or key_len PROTO_MAX_TAG. */
int rec_size(const rec_msg *m, size_t *bytes);

/* rec_encode writes m as a live record filed under key, sealed, into
 * buf[0..len), where len is the size rec_size accepted (it aborts
 * otherwise). m's reason and died_ns are not written: rec_bury adds them.
 * m's pointers must not point into buf. */
void rec_encode(const rec_msg *m, rec_key key, void *buf, size_t len);

/* rec_decode checks the record buf[0..len) of the given kind filed under
 * key (checksum over key and record, format, level and lengths, which must
 * account for every byte) and fills *out, whose tag, body and reason then
 * point into buf. A record of the first format (whose checksum left the key
 * out: stores of STORE_FORMAT 2 and older, until their upgrade at open) is
 * checked without the key; one of format 2 has no headers. Returns SL_OK, or SL_ECORRUPT; why, if not NULL,
 * is set to a static phrase naming the first fault found, or to NULL on
 * success. *out is unspecified on failure. */
int rec_decode(const void *buf, size_t len, rec_kind kind, rec_key key, rec_msg *out, const char **why);

/* rec_peek_level returns the level byte of the record buf[0..len), or -1 when
 * len is shorter than a header. It checks nothing else, so the result is only
 * fit for counting; rec_decode before trusting it. */
int rec_peek_level(const void *buf, size_t len);

/* rec_set_attempt rewrites the attempt count of the record buf[0..len), live
 * or dead, and reseals it for key. buf must hold a record rec_decode
 * accepted. */
void rec_set_attempt(void *buf, size_t len, rec_key key, uint32_t attempt);

/* rec_reseal seals the record buf[0..len), which rec_decode accepted under
 * its old key, for key: a record moved to another key (delayed, back from
 * delayed), or one of the first format upgraded (rec_reseal writes the
 * current format). */
void rec_reseal(void *buf, size_t len, rec_key key);

/* rec_tail_bytes returns the bytes that rec_bury appends for a reason of
 * reason_len bytes. */
size_t rec_tail_bytes(size_t reason_len);

/* rec_bury turns the live record buf[0..len), which rec_decode accepted, into
 * a dead letter filed under key (its id) in place: it appends
 * reason[0..reason_len) (reason may be NULL when reason_len is 0) and
 * died_ns, reseals, and returns the new length, len +
 * rec_tail_bytes(reason_len). buf has room for cap bytes. It aborts when
 * reason_len exceeds REC_MAX_REASON or the tail does not fit. */
size_t rec_bury(void *buf, size_t len, size_t cap, const char *reason, size_t reason_len,
                uint64_t died_ns, rec_key key);

/* rec_revive turns the dead letter buf[0..len), which rec_decode accepted as
 * REC_DEAD, back into a live record of level filed under key in place, as a
 * new publish of the same message would be: it drops the tail (reason and
 * died_ns), sets the attempt count and the expiry to 0 (an operator who
 * requeues a message gives it a fresh start; one that died of its time to
 * live would otherwise die again at once), reseals, and returns the new
 * length. level must be below PROTO_MAX_LEVELS. */
size_t rec_revive(void *buf, size_t len, unsigned level, rec_key key);

#endif /* SLUICE_REC_H */
