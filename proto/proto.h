/*
 * proto.h - the Sluice wire model, version 2.
 *
 * Every message is one ZeroMQ frame holding one msgpack map with string keys.
 * Four lists are the whole model:
 *
 *   PROTO_FIELDS      every key that may appear in any message, with its type;
 *   PROTO_COLS_<kind> the columns of each kind of row (PROTO_ROW_KINDS, in
 *                     proto_rows.h): a list result travels as one ROWS
 *                     field, an array of maps, one map per row (a level,
 *                     a pool);
 *   PROTO_MSGS        every message type, its direction, and which fields it
 *                     requires and which it allows;
 *   PROTO_ADMIN_CMDS  every admin command, the arguments it requires and
 *                     allows, and what its ADMIN_OK carries.
 *
 * The message enum, the name table, the decoder's dispatch, the broker's
 * handler and command tables, the commands' argument checks, the client's
 * command names and the per-type counters are all derived from these lists.
 * Adding a message type is one line in PROTO_MSGS (plus its handler); adding
 * an admin command is one line in PROTO_ADMIN_CMDS (plus its cmd_ function in
 * broker/admin/admin.c); adding a column to a list result is one line in its
 * PROTO_COLS_ list. The flat field list does not grow with list results.
 *
 * Wire-format rule: adding an optional field, an optional column, a message
 * type or an admin command keeps PROTO_VERSION; changing a field's or a
 * column's type or meaning, removing one, or making an optional one required
 * bumps it. proto/PROTOCOL.md must change in the same commit.
 * Version 2 (list results as rows instead of parallel array fields) changed
 * STATS_OK and ADMIN_OK.
 */
#ifndef SLUICE_PROTO_H
#define SLUICE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "sluice_errors.h"

#define PROTO_VERSION        2
#define PROTO_MAX_LEVELS     16         /* levels 0..15 */
#define PROTO_MAX_TAG        255        /* bytes in a tag */
#define PROTO_MAX_TIME_MS    315360000000ULL /* ttl_ms, delay_ms: ten years (365-day) in ms; more is SL_EINVAL */
#define PROTO_MAX_NAME       64         /* bytes in a pool or level name, or a string column */
#define PROTO_MAX_STR        1024       /* bytes in any other string field */
#define PROTO_MAX_BODY       (16u << 20)/* hard ceiling on a body; brokers set lower */
#define PROTO_MAX_DEPTH      3          /* containers nest 3 deep: map > array > map > scalar */
#define PROTO_MAX_OBJECTS    2048       /* msgpack objects in one message */
#define PROTO_MAX_POOLS      64
#define PROTO_MAX_ARRAY      PROTO_MAX_POOLS  /* items in any array, rows included */
#define PROTO_MAX_WINDOWS    4          /* windows of one rate limit ("10/s and 500/min") */
#define PROTO_MAX_WINDOW_ROWS (PROTO_MAX_LEVELS * PROTO_MAX_WINDOWS) /* level.list: every level's */
#define PROTO_MAX_FRAME      (PROTO_MAX_BODY + 64 * 1024)

/* Field value types. */
#define PROTO_T_U64  1 /* non-negative integer */
#define PROTO_T_STR  2 /* UTF-8 string */
#define PROTO_T_BIN  3 /* bytes (bin; str is accepted too) */
#define PROTO_T_U64S 4 /* array of up to PROTO_MAX_ARRAY integers */
#define PROTO_T_STRS 5 /* array of up to PROTO_MAX_ARRAY strings */
#define PROTO_T_ROWS 6 /* array of maps, one per row, columns from one kind's table */
#define PROTO_T_HDRS 7 /* a message's headers: a map from name (str) to value (str), proto_hdrs.h */

/* X(member, "key", type, limit): the limit is the most bytes for STR, BIN
 * and STRS items, and the row kind (PROTO_ROW_KINDS) for ROWS. */
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
    X(rx_bad,     "rx_bad",         U64,  0)              \
    X(tx_failed,  "tx_failed",      U64,  0)              \
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
    X(cost,       "cost",           U64,  0)              \
    X(rate_milli, "rate_milli",     U64,  0)              \
    X(min_rate_milli, "min_rate_milli", U64, 0)           \
    X(burst,      "burst",          U64,  0)              \
    X(max_inflight, "max_inflight", U64,  0)              \
    X(sink_inflight, "sink_inflight", U64, 0)             \
    X(tokens_milli, "tokens_milli", U64,  0)              \
    X(effective_rate_milli, "effective_rate_milli", U64, 0) \
    X(paused_ms,  "paused_ms",      U64,  0)              \
    X(breaker,    "breaker",        STR,  PROTO_MAX_NAME) \
    X(breaker_trips, "breaker_trips", U64, 0)             \
    X(key,        "key",            STR,  PROTO_MAX_TAG)  \
    X(duplicate,  "duplicate",      U64,  0)              \
    X(ttl_ms,     "ttl_ms",         U64,  0)              \
    X(released_ns, "released_ns",   U64,  0)              \
    X(level_stats, "level_stats",   ROWS, level_stat)     \
    X(coord_rows, "coord_rows",     ROWS, coord)          \
    X(level_rows, "level_rows",     ROWS, level)          \
    X(pool_rows,  "pool_rows",      ROWS, pool)           \
    X(after,      "after",          U64,  0)              \
    X(to_level,   "to_level",       U64,  0)              \
    X(older_than_ms, "older_than_ms", U64, 0)             \
    X(dead_rows,  "dead_rows",      ROWS, dead)           \
    X(auth_refused, "auth_refused", U64,  0)              \
    X(handshakes_refused, "handshakes_refused", U64, 0) \
    X(force,      "force",          U64,  0)              \
    X(window_rows, "window_rows",   ROWS, window)         \
    X(tag_rows,   "tag_rows",       ROWS, tag)            \
    X(scope,      "scope",          STR,  PROTO_MAX_NAME) \
    X(pacers,     "pacers",         U64,  0)              \
    X(msg_rows,   "msg_rows",       ROWS, msg)            \
    X(dry_run,    "dry_run",        U64,  0)              \
    X(leased,     "leased",         U64,  0)              \
    X(path,       "path",           STR,  PROTO_MAX_STR)  \
    X(bytes,      "bytes",          U64,  0)              \
    X(elapsed_ms, "elapsed_ms",     U64,  0)              \
    X(settle_refused, "settle_refused", U64, 0)           \
    X(settle_foreign, "settle_foreign", U64, 0)           \
    X(quarantined, "quarantined",   U64,  0)              \
    X(url,        "url",            STR,  PROTO_MAX_STR)  \
    X(login_token, "login_token",   STR,  PROTO_MAX_NAME) \
    X(headers,    "headers",        HDRS, PROTO_MAX_HEADER_BYTES) \
    X(wait_ms,    "wait_ms",        U64,  0)              \
    X(epoch,      "epoch",          U64,  0)              \
    X(ha_rows,    "ha_rows",        ROWS, ha)             \
    X(node,       "node",           STR,  PROTO_MAX_NAME) \
    X(runs,       "runs",           U64,  0)              \
    X(confirms,   "confirms",       U64,  0)

/* A byte string pointing into the decoded buffer (or the caller's memory when
 * encoding). Not NUL-terminated. */
typedef struct proto_buf {
    const char *ptr;
    uint32_t len;
} proto_buf;

#include "proto_hdrs.h" /* a message's headers: limits, faults, the stored block */
#include "proto_rows.h" /* the rows of list results: kinds and columns */

/* ---- messages ---- */

typedef enum proto_field {
#define PROTO_FIELD_ENUM_(m, k, t, max) PROTO_F_##m,
    PROTO_FIELDS(PROTO_FIELD_ENUM_)
#undef PROTO_FIELD_ENUM_
    PROTO_F_COUNT_
} proto_field;

/* PUT_OK's confirms is the last field, so the last one encoded: the broker
 * grows a queued run by rewriting its last four bytes (broker/net/replies.c). */
_Static_assert(PROTO_F_confirms == PROTO_F_COUNT_ - 1, "confirms is the last field");
__extension__ typedef unsigned __int128 proto_mask; /* a bit per field; 128 (64 were full) */
_Static_assert(PROTO_F_COUNT_ <= 128, "a field per bit of proto_mask");
#define PF(m) ((proto_mask)1 << PROTO_F_##m)

/* Result kinds of an admin command. */
#define PROTO_RES_NONE   0 /* ADMIN_OK carries only seq */
#define PROTO_RES_FIELDS 1 /* a fixed set of fields, all of them */
#define PROTO_RES_ROWS   2 /* one ROWS field */

/* X(ID, "name", required arguments, other allowed arguments, result kind,
 * result fields). An argument absent from a request that allows it means
 * "leave it as it is". */
#define PROTO_ADMIN_CMDS(X)                                                        \
    X(level_list,     "level.list",     0, 0, ROWS, PF(level_rows) | PF(window_rows)) \
    X(level_set,      "level.set",      PF(level),                                \
      PF(deadline_ms) | PF(aging_ms) | PF(rate_milli) | PF(min_rate_milli) | PF(burst) | \
      PF(window_rows) | PF(state), NONE, 0) \
    X(level_pause,    "level.pause",    PF(level), 0, NONE, 0)                    \
    X(level_resume,   "level.resume",   PF(level), 0, NONE, 0)                    \
    X(pool_list,      "pool.list",      0, 0, ROWS, PF(pool_rows))                \
    X(pool_resize,    "pool.resize",    PF(pool) | PF(size), 0, NONE, 0)          \
    X(pool_pause,     "pool.pause",     PF(pool), 0, NONE, 0)                     \
    X(pool_resume,    "pool.resume",    PF(pool), 0, NONE, 0)                     \
    X(pool_autoscale, "pool.autoscale", PF(pool),                                 \
      PF(enabled) | PF(min) | PF(max) | PF(target_wait_ms), NONE, 0)              \
    X(pool_delete,    "pool.delete",    PF(pool), PF(force), NONE, 0)             \
    X(sink_set,       "sink.set",       0,                                        \
      PF(rate_milli) | PF(burst) | PF(max_inflight) | PF(window_rows), NONE, 0)   \
    X(sink_show,      "sink.show",      0, 0, FIELDS,                             \
      PF(rate_milli) | PF(effective_rate_milli) | PF(burst) | PF(max_inflight) |  \
      PF(sink_inflight) | PF(tokens_milli) | PF(paused_ms) | PF(breaker) | PF(breaker_trips) | \
      PF(coord_rows) | PF(window_rows) | PF(state)) \
    X(explain,        "explain",        PF(id), 0, FIELDS,                        \
      PF(state) | PF(level) | PF(position) | PF(until_ms) | PF(msg) | PF(headers) | PF(wait_ms)) \
    X(dead_list,      "dead.list",      PF(level), PF(after) | PF(n), ROWS, PF(dead_rows)) \
    X(dead_peek,      "dead.peek",      PF(id), 0, FIELDS,                        \
      PF(id) | PF(level) | PF(tag) | PF(attempt) | PF(body) | PF(msg) | PF(headers)) \
    X(dead_requeue,   "dead.requeue",   0, PF(level) | PF(id) | PF(to_level) | PF(n) | PF(dry_run), FIELDS, \
      PF(n) | PF(after))                                                          \
    X(dead_purge,     "dead.purge",     PF(level), PF(older_than_ms) | PF(after) | PF(n) | PF(dry_run), FIELDS, \
      PF(n) | PF(after))                                                          \
    X(tag_set,        "tag.set",        PF(tag), PF(tag_rows) | PF(window_rows), NONE, 0) \
    X(tag_list,       "tag.list",       0, 0, ROWS, PF(tag_rows) | PF(window_rows)) \
    X(tag_pause,      "tag.pause",      PF(tag), 0, NONE, 0)                      \
    X(tag_resume,     "tag.resume",     PF(tag), 0, NONE, 0)                      \
    X(msg_peek,       "msg.peek",       PF(level), PF(tag) | PF(after) | PF(n), FIELDS, \
      PF(msg_rows) | PF(after))                                                   \
    X(msg_delete,     "msg.delete",     PF(id), 0, FIELDS, PF(level) | PF(state))  \
    X(msg_purge,      "msg.purge",      PF(level),                                \
      PF(tag) | PF(older_than_ms) | PF(after) | PF(n) | PF(dry_run), FIELDS,        \
      PF(n) | PF(after) | PF(leased))                                             \
    X(msg_move,       "msg.move",       PF(level) | PF(to_level), PF(tag) | PF(after) | PF(n), FIELDS, \
      PF(n) | PF(after) | PF(leased))                                             \
    X(backup,         "backup",         PF(path), 0, NONE, 0)                     \
    X(backup_status,  "backup.status",  0, 0, FIELDS,                             \
      PF(state) | PF(path) | PF(bytes) | PF(elapsed_ms) | PF(msg))                 \
    X(settings_export, "settings.export", 0, 0, FIELDS, PF(body))                  \
    X(sink_resume,    "sink.resume",    0, 0, FIELDS, PF(paused_ms))              \
    X(web_login,      "web.login",      0, PF(ttl_ms), FIELDS,                    \
      PF(url) | PF(login_token) | PF(ttl_ms) | PF(state))                         \
    X(ha_status,      "ha.status",      0, 0, FIELDS, PF(epoch) | PF(ha_rows))   \
    X(ha_switchover,  "ha.switchover",  0, 0, NONE, 0)                           \
    X(ha_recover,     "ha.recover",     PF(node), 0, NONE, 0)

#include "proto_roles.h" /* who may send what: the roles, per command and per message type */
#include "proto_repeat.h" /* which commands a client may send again after a lost connection */

/* Result fields added within version 2: optional, so a reader does not
 * require them (a broker whose sink is its own sends no coord_rows). The
 * second list is per command: fields optional in one command's result
 * that another requires (sink.show's state, the reason for its rate). */
#define PROTO_RESULTS_OPTIONAL (PF(coord_rows) | PF(window_rows) | PF(headers) | PF(wait_ms))
#define PROTO_RESULTS_OPTIONAL_IN(cmd) ((cmd) == PROTO_CMD_sink_show ? PF(state) : 0)

typedef enum proto_cmd {
#define PROTO_CMD_ENUM_(ID, name, req, opt, res, fields) PROTO_CMD_##ID,
    PROTO_ADMIN_CMDS(PROTO_CMD_ENUM_)
#undef PROTO_CMD_ENUM_
    PROTO_CMD_COUNT_
} proto_cmd;

/* What an ADMIN request may carry, and what ADMIN_OK may answer with: the
 * union over the commands. */
#define PROTO_CMD_ARGS_(ID, name, req, opt, res, fields) | (req) | (opt)
#define PROTO_CMD_RESULTS_(ID, name, req, opt, res, fields) | (fields)
#define PROTO_ADMIN_ARGS    (0 PROTO_ADMIN_CMDS(PROTO_CMD_ARGS_))
#define PROTO_ADMIN_RESULTS (0 PROTO_ADMIN_CMDS(PROTO_CMD_RESULTS_))

/* X(ID, "NAME", direction, required fields, optional fields)
 * Directions: C2B client to broker, B2C broker to client, ANY either way. */
#define PROTO_MSGS(X)                                                         \
    X(HELLO,    "HELLO",    C2B, PF(seq) | PF(v),       PF(pool) | PF(levels) | PF(credit) | PF(runs)) \
    X(WELCOME,  "WELCOME",  B2C, PF(seq) | PF(v) | PF(names) | PF(heartbeat_ms) | PF(lease_ms) | PF(max_body), 0) \
    X(PUT,      "PUT",      C2B, PF(seq) | PF(body),    PF(level) | PF(tag) | PF(cost) | PF(key) | PF(delay_ms) | PF(ttl_ms) | PF(headers)) \
    X(PUT_OK,   "PUT_OK",   B2C, PF(seq) | PF(id),      PF(duplicate) | PF(epoch) | PF(node) | PF(confirms)) \
    X(CREDIT,   "CREDIT",   C2B, PF(n),                PF(seq))               \
    X(DELIVER,  "DELIVER",  B2C, PF(id) | PF(token) | PF(level) | PF(attempt) | PF(body) | PF(lease_ms), PF(tag) | PF(cost) | PF(released_ns) | PF(headers) | PF(wait_ms) | PF(key)) \
    X(ACK,      "ACK",      C2B, PF(seq) | PF(token),   PF(credit))            \
    X(NACK,     "NACK",     C2B, PF(seq) | PF(token),   PF(credit) | PF(delay_ms)) \
    X(TOUCH,    "TOUCH",    C2B, PF(seq) | PF(token),   PF(lease_ms))          \
    X(THROTTLED, "THROTTLED", C2B, PF(seq) | PF(token), PF(credit) | PF(retry_ms) | PF(scope)) \
    X(REJECT,   "REJECT",   C2B, PF(seq) | PF(token),   PF(credit) | PF(msg))  \
    X(OK,       "OK",       B2C, PF(seq),              PF(lease_ms))          \
    X(STATS,    "STATS",    C2B, PF(seq),              0)                    \
    X(STATS_OK, "STATS_OK", B2C, PF(seq) | PF(uptime_ms) | PF(consumers) | PF(level_stats) | \
                                 PF(breaker) | PF(breaker_trips) | PF(rx_bad) | PF(tx_failed), \
                                 PF(auth_refused) | PF(handshakes_refused) | PF(coord_rows) | \
                                 PF(settle_refused) | PF(settle_foreign) | PF(quarantined)) \
    X(BYE,      "BYE",      C2B, 0,                   PF(seq))               \
    X(ADMIN,    "ADMIN",    C2B, PF(seq) | PF(cmd),   PROTO_ADMIN_ARGS)     \
    X(ADMIN_OK, "ADMIN_OK", B2C, PF(seq),             PROTO_ADMIN_RESULTS)  \
    X(POOL,     "POOL",     B2C, PF(pool) | PF(size) | PF(share), PF(rate_milli) | PF(burst) | PF(pacers)) \
    X(PING,     "PING",     ANY, 0,                   PF(seq))               \
    X(PONG,     "PONG",     ANY, 0,                   PF(seq))               \
    X(ERROR,    "ERROR",    B2C, PF(code) | PF(msg),    PF(seq) | PF(retry_ms) | PF(url))

typedef enum proto_type {
    PROTO_NONE = 0,
#define PROTO_MSG_ENUM_(ID, name, dir, req, opt) PROTO_##ID,
    PROTO_MSGS(PROTO_MSG_ENUM_)
#undef PROTO_MSG_ENUM_
    PROTO_TYPE_COUNT_
} proto_type;

typedef struct proto_u64s {
    uint32_t n;
    uint64_t v[PROTO_MAX_ARRAY];
} proto_u64s;

typedef struct proto_strs {
    uint32_t n;
    proto_buf v[PROTO_MAX_ARRAY];
} proto_strs;

#define PROTO_CTYPE_U64(limit)  uint64_t
#define PROTO_CTYPE_STR(limit)  proto_buf
#define PROTO_CTYPE_BIN(limit)  proto_buf
#define PROTO_CTYPE_U64S(limit) proto_u64s
#define PROTO_CTYPE_STRS(limit) proto_strs
#define PROTO_CTYPE_ROWS(kind)  proto_rows_##kind
#define PROTO_CTYPE_HDRS(limit) proto_hdrs

/* One message, flat: a member per field and a bit per present field. */
typedef struct proto_msg {
    proto_type type;
    proto_mask present; /* PF(...) bits */
#define PROTO_MEMBER_(m, k, t, max) PROTO_CTYPE_##t(max) m;
    PROTO_FIELDS(PROTO_MEMBER_)
#undef PROTO_MEMBER_
} proto_msg;

/* Growable output buffer for the encoder. */
typedef struct proto_wbuf {
    char *data;
    size_t len;
    size_t cap;
} proto_wbuf;

/* proto_init sets m to an empty message of the given type: no field present,
 * every scalar zero, every list empty (its items' storage is left as it was:
 * never read past a list's n). */
void proto_init(proto_msg *m, proto_type type);

/* proto_set_* set a field and its presence bit. Strings are borrowed, not
 * copied: they must outlive the call to proto_encode. */
/* proto_utf8_prefix returns the length of the longest prefix of buf[0..len)
 * that is well-formed UTF-8 (RFC 3629): len when all of it is. The decoder
 * refuses a str value for which it is less (SL_EPROTO); a sender cuts text
 * it did not check with it. */
uint32_t proto_utf8_prefix(const void *buf, uint32_t len);

/* proto_utf8_head returns the length of the longest well-formed UTF-8 prefix
 * of buf[0..len) that is at most max bytes: a str column cut to its width
 * never splits a character, and stops before the first byte that is not
 * UTF-8. */
static inline uint32_t proto_utf8_head(const void *buf, uint32_t len, uint32_t max)
{
    return proto_utf8_prefix(buf, len < max ? len : max);
}

#define proto_set(m, member, val) ((m)->present |= PF(member), (m)->member = (val))
void proto_set_str(proto_msg *m, proto_field f, const char *ptr, size_t len);
int proto_has(const proto_msg *m, proto_field f);

/* proto_encode appends m, encoded, to out (which it grows). Returns SL_OK, or
 * SL_EINVAL when a required field is missing or a field is not allowed for
 * the type, or SL_ENOMEM. out is left unchanged on error. */
int proto_encode(const proto_msg *m, proto_wbuf *out);

/* proto_decode parses one message from buf. It is pure: no I/O, and no
 * state but the memory it reuses (a msgpack zone per thread, emptied after
 * each call, freed when the thread ends). Before any allocation it walks the
 * msgpack structure and checks every declared length against the bytes that
 * remain, the nesting depth and the object count. It then requires a map
 * whose "op" names a known type, whose keys are all fields that type allows,
 * with the right types and within their limits, and which holds every
 * required field.
 *
 * String and bin members of out point into buf and live as long as buf.
 * Returns SL_OK; SL_EPROTO for malformed input or a bad field; SL_ETOOBIG when
 * a declared size exceeds a limit; SL_EINVAL for headers that break a rule of
 * proto_hdrs.h (a name that is not a token, a refused name: the caller's
 * mistake, named in *why); SL_EUNKNOWN for an unknown "op" (out->type
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

/* proto_field_key returns the wire key of field f ("rate_milli"), or "?". */
const char *proto_field_key(proto_field f);

/* proto_field_type returns field f's type (PROTO_T_U64, ...), or 0. */
int proto_field_type(proto_field f);

/* proto_set_u64 sets U64 field f of m (and its presence bit); a field of
 * another type is left alone. */
void proto_set_u64(proto_msg *m, proto_field f, uint64_t v);

/* proto_cmd_name returns the wire name of admin command c ("pool.resize"),
 * or "?". */
const char *proto_cmd_name(proto_cmd c);

/* proto_cmd_of returns the admin command named name[0..len), or -1. */
int proto_cmd_of(const char *name, size_t len);

/* proto_cmd_repeatable tells whether admin command c may be sent again
 * when its answer was lost with its connection (PROTO_CMD_REPEATS): 1, or
 * 0 for a command a second run would change more (and for an unknown one). */
int proto_cmd_repeatable(proto_cmd c);

/* proto_cmd_def reports what command c requires and allows besides (PF
 * bits), its result kind (PROTO_RES_*) and its result fields. Returns 0, or
 * -1 for an unknown command; any out-parameter may be NULL. */
int proto_cmd_def(proto_cmd c, proto_mask *req, proto_mask *opt, int *result, proto_mask *fields);

/* proto_cmd_check checks an ADMIN request m against the command table: its
 * "cmd" must name a command, and its arguments (every field but op, seq and
 * cmd) must hold every argument the command requires and none it does not
 * allow. On success *cmd is the command. Returns SL_OK; SL_EUNKNOWN for an
 * unknown command, SL_EINVAL for a missing or unexpected argument, each with
 * a sentence naming the command and the field in text (text_len bytes, at
 * least 1). */
int proto_cmd_check(const proto_msg *m, proto_cmd *cmd, char *text, size_t text_len);

/* proto_msg_role returns the role message type t needs (PROTO_ROLE_ANY for
 * an unknown type); for ADMIN see proto_cmd_role. */
proto_role proto_msg_role(proto_type t);

/* proto_cmd_role returns the role admin command c needs (PROTO_ROLE_ADMIN
 * for an unknown command). */
proto_role proto_cmd_role(proto_cmd c);

/* proto_role_allows tells whether a principal of role have may send what
 * needs role need: admin may send everything, the others what their role
 * names, and every principal what needs ANY. The one rule (auth.c applies
 * it to every message; the HTTP server to what it answers from the
 * snapshot). */
int proto_role_allows(proto_role have, proto_role need);

/* proto_role_name returns a role's name ("monitor"), or "?". */
const char *proto_role_name(proto_role r);

/* proto_role_of returns the role named name[0..len), or -1. */
int proto_role_of(const char *name, size_t len);

/* proto_key_parse reads a CURVE key file's text (as `sluice keygen` writes
 * it: "#" comments, and lines "public = Z85" and "secret = Z85", each key 40
 * Z85 characters) into pub and sec (41 bytes each, NUL-terminated; "" when
 * the text has no such line); either may be NULL. Returns SL_OK, or
 * SL_EINVAL for any other line or a key that is not 40 Z85 characters. */
int proto_key_parse(const char *text, char *pub, char *sec);

/* proto_strerror returns the message for an sl_err code (any int). */
const char *proto_strerror(int err);

/* proto_errname returns the symbolic name of a code ("SL_ESTALE"). */
const char *proto_errname(int err);

void proto_wbuf_reset(proto_wbuf *b);
void proto_wbuf_free(proto_wbuf *b);

#endif /* SLUICE_PROTO_H */
