/*
 * proto.h - the Sluice wire model, version 1.
 *
 * Every message is one ZeroMQ frame holding one msgpack map with string keys.
 * Two lists below are the whole model:
 *
 *   PROTO_FIELDS  every key that may appear in any message, with its type;
 *   PROTO_MSGS    every message type, its direction, and which fields it
 *                 requires and which it allows.
 *
 * The message enum, the name table, the decoder's dispatch, the broker's
 * handler table and the per-type counters are all derived from these lists.
 * Adding a message type is one line in PROTO_MSGS (plus its handler).
 *
 * Wire-format rule: adding an optional field or a message type keeps
 * PROTO_VERSION; changing a field's type or meaning, removing one, or making an
 * optional field required bumps it. proto/PROTOCOL.md must change in the same
 * commit.
 */
#ifndef SLUICE_PROTO_H
#define SLUICE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "sluice_errors.h"

#define PROTO_VERSION        1
#define PROTO_MAX_LEVELS     16         /* levels 0..15 */
#define PROTO_MAX_TAG        255        /* bytes in a tag */
#define PROTO_MAX_NAME       64         /* bytes in a pool or level name */
#define PROTO_MAX_STR        1024       /* bytes in any other string field */
#define PROTO_MAX_BODY       (16u << 20)/* hard ceiling on a body; brokers set lower */
#define PROTO_MAX_DEPTH      3          /* map > array > scalar */
#define PROTO_MAX_OBJECTS    2048       /* msgpack objects in one message */
#define PROTO_MAX_POOLS      64
#define PROTO_MAX_ARRAY      PROTO_MAX_POOLS  /* level columns use at most 16 */
#define PROTO_MAX_FRAME      (PROTO_MAX_BODY + 64 * 1024)

/* Field value types. */
#define PROTO_T_U64  1 /* non-negative integer */
#define PROTO_T_STR  2 /* UTF-8 string */
#define PROTO_T_BIN  3 /* bytes (bin; str is accepted too) */
#define PROTO_T_U64S 4 /* array of up to PROTO_MAX_ARRAY integers */
#define PROTO_T_STRS 5 /* array of up to PROTO_MAX_ARRAY strings */

/* X(member, "key", type, max bytes for STR/BIN/STRS) */
#define PROTO_FIELDS(X)                                               \
    X(op,         "op",             STR,  PROTO_MAX_NAME) \
    X(seq,        "seq",            U64,  0)              \
    X(v,          "v",              U64,  0)              \
    X(id,         "id",             U64,  0)              \
    X(level,      "level",          U64,  0)              \
    X(tag,        "tag",            STR,  PROTO_MAX_TAG)  \
    X(body,       "body",           BIN,  PROTO_MAX_BODY) \
    X(token,      "token",          U64,  0)              \
    X(attempt,    "attempt",        U64,  0)              \
    X(n,          "n",              U64,  0)              \
    X(credit,     "credit",         U64,  0)              \
    X(delay_ms,   "delay_ms",       U64,  0)              \
    X(lease_ms,   "lease_ms",       U64,  0)              \
    X(pool,       "pool",           STR,  PROTO_MAX_NAME) \
    X(levels,     "levels",         U64S, 0)              \
    X(names,      "names",          STRS, PROTO_MAX_NAME) \
    X(heartbeat_ms, "heartbeat_ms", U64,  0)              \
    X(max_body,   "max_body",       U64,  0)              \
    X(code,       "code",           U64,  0)              \
    X(msg,        "msg",            STR,  PROTO_MAX_STR)  \
    X(retry_ms,   "retry_after_ms", U64,  0)              \
    X(uptime_ms,  "uptime_ms",      U64,  0)              \
    X(consumers,  "consumers",      U64,  0)              \
    X(depth,      "depth",          U64S, 0)              \
    X(inflight,   "inflight",       U64S, 0)              \
    X(delayed,    "delayed",        U64S, 0)              \
    X(dead,       "dead",           U64S, 0)              \
    X(oldest_ms,  "oldest_ms",      U64S, 0)              \
    X(enqueued,   "enqueued",       U64S, 0)              \
    X(dispatched, "dispatched",     U64S, 0)              \
    X(acked,      "acked",          U64S, 0)              \
    X(nacked,     "nacked",         U64S, 0)              \
    X(expired,    "expired",        U64S, 0)              \
    X(picks_priority, "picks_priority", U64S, 0)          \
    X(picks_aged, "picks_aged",     U64S, 0)              \
    X(picks_overdue, "picks_overdue", U64S, 0)            \
    X(picks_guaranteed, "picks_guaranteed", U64S, 0)      \
    X(cmd,        "cmd",            STR,  PROTO_MAX_NAME) \
    X(size,       "size",           U64,  0)              \
    X(share,      "share",          U64,  0)              \
    X(enabled,    "enabled",        U64,  0)              \
    X(deadline_ms, "deadline_ms",   U64,  0)              \
    X(aging_ms,   "aging_ms",       U64,  0)              \
    X(min,        "min",            U64,  0)              \
    X(max,        "max",            U64,  0)              \
    X(target_wait_ms, "target_wait_ms", U64, 0)           \
    X(state,      "state",          STR,  PROTO_MAX_NAME) \
    X(position,   "position",       U64,  0)              \
    X(until_ms,   "until_ms",       U64,  0)              \
    X(level_deadline_ms, "level_deadline_ms", U64S, 0)    \
    X(level_aging_ms, "level_aging_ms", U64S, 0)          \
    X(level_paused, "level_paused", U64S, 0)              \
    X(pool_names, "pool_names",     STRS, PROTO_MAX_NAME) \
    X(pool_levels, "pool_levels",   U64S, 0)              \
    X(pool_size,  "pool_size",      U64S, 0)              \
    X(pool_members, "pool_members", U64S, 0)              \
    X(pool_inflight, "pool_inflight", U64S, 0)            \
    X(pool_rate,  "pool_rate_milli", U64S, 0)             \
    X(pool_recommended, "pool_recommended", U64S, 0)      \
    X(pool_flags, "pool_flags",     U64S, 0)              \
    X(cost,       "cost",           U64,  0)              \
    X(rate_milli, "rate_milli",     U64,  0)              \
    X(min_rate_milli, "min_rate_milli", U64, 0)           \
    X(burst,      "burst",          U64,  0)              \
    X(max_inflight, "max_inflight", U64,  0)              \
    X(sink_inflight, "sink_inflight", U64, 0)             \
    X(tokens_milli, "tokens_milli", U64,  0)              \
    X(effective_rate_milli, "effective_rate_milli", U64, 0) \
    X(paused_ms,  "paused_ms",      U64,  0)              \
    X(throttled,  "throttled",      U64S, 0)              \
    X(level_max_rate, "level_max_rate_milli", U64S, 0)    \
    X(level_min_rate, "level_min_rate_milli", U64S, 0)    \
    X(level_burst, "level_burst",   U64S, 0)              \
    X(level_tokens, "level_tokens_milli", U64S, 0)        \
    X(eta_ms,     "eta_ms",         U64S, 0)              \
    X(breaker,    "breaker",        STR,  PROTO_MAX_NAME) \
    X(breaker_trips, "breaker_trips", U64, 0)             \
    X(key,        "key",            STR,  PROTO_MAX_TAG)  \
    X(duplicate,  "duplicate",      U64,  0)              \
    X(ttl_ms,     "ttl_ms",         U64,  0)              \
    X(released_ns, "released_ns",   U64,  0)

typedef enum proto_field {
#define PROTO_FIELD_ENUM_(m, k, t, max) PROTO_F_##m,
    PROTO_FIELDS(PROTO_FIELD_ENUM_)
#undef PROTO_FIELD_ENUM_
    PROTO_F_COUNT_
} proto_field;

/* The presence mask has a bit per field. It is 128 bits wide, an extension
 * both GCC and Clang provide (the model outgrew 64 fields); the model may hold
 * up to 128 fields. */
__extension__ typedef unsigned __int128 proto_mask;
#define PF(m) ((proto_mask)1 << PROTO_F_##m)

/* Directions: C2B client to broker, B2C broker to client, ANY either way. */
#define PROTO_STATS_COLUMNS                                                 \
    (PF(depth) | PF(inflight) | PF(delayed) | PF(dead) | PF(oldest_ms) |         \
     PF(enqueued) | PF(dispatched) | PF(acked) | PF(nacked) | PF(expired))

/* Columns added to STATS_OK after the first release are optional, as the
 * versioning rule asks: a client must not require them. */
#define PROTO_STATS_COLUMNS_OPT                                             \
    (PF(picks_priority) | PF(picks_aged) | PF(picks_overdue) | PF(picks_guaranteed) | \
     PF(throttled) | PF(eta_ms) | PF(breaker) | PF(breaker_trips))

/* What an ADMIN request may carry, and what ADMIN_OK may answer with. */
#define PROTO_ADMIN_ARGS                                                    \
    (PF(pool) | PF(level) | PF(size) | PF(enabled) | PF(deadline_ms) |        \
     PF(aging_ms) | PF(min) | PF(max) | PF(target_wait_ms) | PF(id) |        \
     PF(rate_milli) | PF(min_rate_milli) | PF(burst) | PF(max_inflight))
#define PROTO_ADMIN_RESULTS                                                 \
    (PF(names) | PF(depth) | PF(oldest_ms) | PF(level_deadline_ms) |          \
     PF(level_aging_ms) | PF(level_paused) | PF(pool_names) | PF(pool_levels) | \
     PF(pool_size) | PF(pool_members) | PF(pool_inflight) | PF(pool_rate) |    \
     PF(pool_recommended) | PF(pool_flags) | PF(state) | PF(level) |          \
     PF(position) | PF(until_ms) | PF(pool) | PF(msg) | PF(level_max_rate) |  \
     PF(level_min_rate) | PF(level_burst) | PF(level_tokens) | PF(eta_ms) |   \
     PF(rate_milli) | PF(effective_rate_milli) | PF(burst) | PF(max_inflight) | \
     PF(sink_inflight) | PF(tokens_milli) | PF(paused_ms) | PF(breaker) | PF(breaker_trips))

/* X(ID, "NAME", direction, required fields, optional fields) */
#define PROTO_MSGS(X)                                                         \
    X(HELLO,    "HELLO",    C2B, PF(seq) | PF(v),       PF(pool) | PF(levels) | PF(credit)) \
    X(WELCOME,  "WELCOME",  B2C, PF(seq) | PF(v) | PF(names) | PF(heartbeat_ms) | PF(lease_ms) | PF(max_body), 0) \
    X(PUT,      "PUT",      C2B, PF(seq) | PF(body),    PF(level) | PF(tag) | PF(cost) | PF(key) | PF(delay_ms) | PF(ttl_ms)) \
    X(PUT_OK,   "PUT_OK",   B2C, PF(seq) | PF(id),      PF(duplicate))        \
    X(CREDIT,   "CREDIT",   C2B, PF(n),                PF(seq))               \
    X(DELIVER,  "DELIVER",  B2C, PF(id) | PF(token) | PF(level) | PF(attempt) | PF(body) | PF(lease_ms), PF(tag) | PF(cost) | PF(released_ns)) \
    X(ACK,      "ACK",      C2B, PF(seq) | PF(token),   PF(credit))            \
    X(NACK,     "NACK",     C2B, PF(seq) | PF(token),   PF(credit) | PF(delay_ms)) \
    X(TOUCH,    "TOUCH",    C2B, PF(seq) | PF(token),   PF(lease_ms))          \
    X(THROTTLED, "THROTTLED", C2B, PF(seq) | PF(token), PF(credit) | PF(retry_ms)) \
    X(REJECT,   "REJECT",   C2B, PF(seq) | PF(token),   PF(credit) | PF(msg))  \
    X(OK,       "OK",       B2C, PF(seq),              PF(lease_ms))          \
    X(STATS,    "STATS",    C2B, PF(seq),              0)                    \
    X(STATS_OK, "STATS_OK", B2C, PF(seq) | PF(names) | PF(uptime_ms) | PF(consumers) | PROTO_STATS_COLUMNS, PROTO_STATS_COLUMNS_OPT) \
    X(BYE,      "BYE",      C2B, 0,                   PF(seq))               \
    X(ADMIN,    "ADMIN",    C2B, PF(seq) | PF(cmd),   PROTO_ADMIN_ARGS)     \
    X(ADMIN_OK, "ADMIN_OK", B2C, PF(seq),             PROTO_ADMIN_RESULTS)  \
    X(POOL,     "POOL",     B2C, PF(pool) | PF(size) | PF(share), 0)       \
    X(PING,     "PING",     ANY, 0,                   PF(seq))               \
    X(PONG,     "PONG",     ANY, 0,                   PF(seq))               \
    X(ERROR,    "ERROR",    B2C, PF(code) | PF(msg),    PF(seq) | PF(retry_ms))

typedef enum proto_type {
    PROTO_NONE = 0,
#define PROTO_MSG_ENUM_(ID, name, dir, req, opt) PROTO_##ID,
    PROTO_MSGS(PROTO_MSG_ENUM_)
#undef PROTO_MSG_ENUM_
    PROTO_TYPE_COUNT_
} proto_type;

/* A byte string pointing into the decoded buffer (or the caller's memory when
 * encoding). Not NUL-terminated. */
typedef struct proto_buf {
    const char *ptr;
    uint32_t len;
} proto_buf;

typedef struct proto_u64s {
    uint32_t n;
    uint64_t v[PROTO_MAX_ARRAY];
} proto_u64s;

typedef struct proto_strs {
    uint32_t n;
    proto_buf v[PROTO_MAX_ARRAY];
} proto_strs;

#define PROTO_CTYPE_U64  uint64_t
#define PROTO_CTYPE_STR  proto_buf
#define PROTO_CTYPE_BIN  proto_buf
#define PROTO_CTYPE_U64S proto_u64s
#define PROTO_CTYPE_STRS proto_strs

/* One message, flat: a member per field and a bit per present field. */
typedef struct proto_msg {
    proto_type type;
    proto_mask present; /* PF(...) bits */
#define PROTO_MEMBER_(m, k, t, max) PROTO_CTYPE_##t m;
    PROTO_FIELDS(PROTO_MEMBER_)
#undef PROTO_MEMBER_
} proto_msg;

/* Growable output buffer for the encoder. */
typedef struct proto_wbuf {
    char *data;
    size_t len;
    size_t cap;
} proto_wbuf;

/* proto_init sets m to an empty message of the given type. */
void proto_init(proto_msg *m, proto_type type);

/* proto_set_* set a field and its presence bit. Strings are borrowed, not
 * copied: they must outlive the call to proto_encode. */
#define proto_set(m, member, val) ((m)->present |= PF(member), (m)->member = (val))
void proto_set_str(proto_msg *m, proto_field f, const char *ptr, size_t len);
int proto_has(const proto_msg *m, proto_field f);

/* proto_encode appends m, encoded, to out (which it grows). Returns SL_OK, or
 * SL_EINVAL when a required field is missing or a field is not allowed for
 * the type, or SL_ENOMEM. out is left unchanged on error. */
int proto_encode(const proto_msg *m, proto_wbuf *out);

/* proto_decode parses one message from buf. It is pure: no I/O, no global
 * state. Before any allocation it walks the msgpack structure and checks every
 * declared length against the bytes that remain, the nesting depth and the
 * object count. It then requires a map whose "op" names a known type, whose
 * keys are all fields that type allows, with the right types and within their
 * limits, and which holds every required field.
 *
 * String and bin members of out point into buf and live as long as buf.
 * Returns SL_OK; SL_EPROTO for malformed input or a bad field; SL_ETOOBIG when
 * a declared size exceeds a limit; SL_EUNKNOWN for an unknown "op" (out->type
 * is then PROTO_NONE). On error, out holds only the type (when known) and
 * "seq" (when the map had a well-typed one), so that an error reply can name
 * the request it answers; *why (if not NULL) names the problem in a static
 * string. */
int proto_decode(const void *buf, size_t len, proto_msg *out, const char **why);

/* proto_guard is the structural pre-check proto_decode runs first; exposed for
 * tests and the fuzzer. Returns SL_OK, SL_EPROTO or SL_ETOOBIG. */
int proto_guard(const void *buf, size_t len, const char **why);

/* proto_name returns the wire name of a type ("PUT"), or "?" */
const char *proto_name(proto_type t);

/* proto_type_of returns the type whose wire name is name[0..len), or
 * PROTO_NONE. */
proto_type proto_type_of(const char *name, size_t len);

/* proto_fields_of reports the fields type t requires and allows besides
 * (PF bits). Returns 0, or -1 for an unknown type. */
int proto_fields_of(proto_type t, proto_mask *req, proto_mask *opt);

/* proto_strerror returns the message for an sl_err code (any int). */
const char *proto_strerror(int err);

/* proto_errname returns the symbolic name of a code ("SL_ESTALE"). */
const char *proto_errname(int err);

void proto_wbuf_reset(proto_wbuf *b);
void proto_wbuf_free(proto_wbuf *b);

#endif /* SLUICE_PROTO_H */
