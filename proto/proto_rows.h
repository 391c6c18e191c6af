/*
 * proto_rows.h - the rows of list results: every kind of row and its columns.
 *
 * Part of the wire model (included by proto.h, after the fields and before
 * the messages): a list result travels as one ROWS field, an array of maps,
 * one map per row. PROTO_ROW_KINDS names each kind and how many rows one
 * result may hold; PROTO_COLS_<kind> its columns. The row types, the column
 * numbers, the codec's checks, the client's accessors and the JSON API's
 * objects are derived from these lists, so a new column is one line here.
 */
#ifndef SLUICE_PROTO_ROWS_H
#define SLUICE_PROTO_ROWS_H

/* ---- rows ----
 *
 * X(kind, most rows). Each kind has a column table PROTO_COLS_<kind>(X, K),
 * whose lines are X(K, member, "key", type, REQ or OPT): a column's type is
 * U64 or STR (at most PROTO_MAX_NAME bytes). A row missing a REQ column, or
 * carrying a column its table does not name, a column twice or a column of
 * the wrong type, is refused like a bad field. Columns added after a version
 * are OPT; an absent OPT column reads as 0 (or ""). */
#define PROTO_ROW_KINDS(X)              \
    X(level_stat, PROTO_MAX_LEVELS)     \
    X(level,      PROTO_MAX_LEVELS)     \
    X(pool,       PROTO_MAX_POOLS)      \
    X(dead,       PROTO_MAX_ARRAY)      \
    X(coord,      1)                    \
    X(window,     PROTO_MAX_WINDOW_ROWS) \
    X(tag,        PROTO_MAX_ARRAY)      \
    X(msg,        PROTO_MAX_ARRAY)      \
    X(ha,         4)

/* STATS_OK: one row per level, counters since the broker started. */
#define PROTO_COLS_level_stat(X, K)                        \
    X(K, name,             "name",             STR, REQ) \
    X(K, depth,            "depth",            U64, REQ) \
    X(K, inflight,         "inflight",         U64, REQ) \
    X(K, delayed,          "delayed",          U64, REQ) \
    X(K, dead,             "dead",             U64, REQ) \
    X(K, oldest_ms,        "oldest_ms",        U64, REQ) \
    X(K, enqueued,         "enqueued",         U64, REQ) \
    X(K, dispatched,       "dispatched",       U64, REQ) \
    X(K, acked,            "acked",            U64, REQ) \
    X(K, nacked,           "nacked",           U64, REQ) \
    X(K, expired,          "expired",          U64, REQ) \
    X(K, picks_priority,   "picks_priority",   U64, REQ) \
    X(K, picks_aged,       "picks_aged",       U64, REQ) \
    X(K, picks_overdue,    "picks_overdue",    U64, REQ) \
    X(K, picks_guaranteed, "picks_guaranteed", U64, REQ) \
    X(K, throttled,        "throttled",        U64, REQ) \
    X(K, eta_ms,           "eta_ms",           U64, REQ) \
    X(K, dead_requeued,    "dead_requeued",    U64, OPT) \
    X(K, dead_purged,      "dead_purged",      U64, OPT) \
    X(K, dead_dropped,     "dead_dropped",     U64, OPT) \
    X(K, corrupt,          "corrupt",          U64, OPT) \
    X(K, throttled_tag,    "throttled_tag",    U64, OPT) \
    X(K, throttled_ms,     "throttled_ms",     U64, OPT) \
    X(K, state,            "state",            STR, OPT) \
    X(K, quarantined,      "quarantined",      U64, OPT)

/* level.list: one row per level, its settings and state. */
#define PROTO_COLS_level(X, K)                             \
    X(K, name,             "name",             STR, REQ) \
    X(K, deadline_ms,      "deadline_ms",      U64, REQ) \
    X(K, aging_ms,         "aging_ms",         U64, REQ) \
    X(K, paused,           "paused",           U64, REQ) \
    X(K, depth,            "depth",            U64, REQ) \
    X(K, oldest_ms,        "oldest_ms",        U64, REQ) \
    X(K, max_rate_milli,   "max_rate_milli",   U64, REQ) \
    X(K, min_rate_milli,   "min_rate_milli",   U64, REQ) \
    X(K, burst,            "burst",            U64, REQ) \
    X(K, tokens_milli,     "tokens_milli",     U64, REQ) \
    X(K, eta_ms,           "eta_ms",           U64, REQ) \
    X(K, fair_tenants,     "fair_tenants",     U64, OPT) \
    X(K, fair,             "fair",             U64, OPT) \
    X(K, throttled_ms,     "throttled_ms",     U64, OPT) \
    X(K, state,            "state",            STR, OPT)

/* pool.list: one row per pool. */
#define PROTO_COLS_pool(X, K)                              \
    X(K, name,             "name",             STR, REQ) \
    X(K, levels_mask,      "levels_mask",      U64, REQ) \
    X(K, size,             "size",             U64, REQ) \
    X(K, members,          "members",          U64, REQ) \
    X(K, inflight,         "inflight",         U64, REQ) \
    X(K, rate_milli,       "rate_milli",       U64, REQ) \
    X(K, recommended,      "recommended",      U64, REQ) \
    X(K, paused,           "paused",           U64, REQ) \
    X(K, autoscale,        "autoscale",        U64, REQ)

/* dead.list: one row per dead letter, in id order. Strings are cut to
 * PROTO_MAX_NAME bytes (dead.peek gives the whole message). */
#define PROTO_COLS_dead(X, K)                              \
    X(K, id,               "id",               U64, REQ) \
    X(K, tag,              "tag",              STR, REQ) \
    X(K, attempts,         "attempts",         U64, REQ) \
    X(K, died_ms,          "died_ms",          U64, REQ) \
    X(K, reason,           "reason",           STR, REQ) \
    X(K, preview,          "preview",          STR, REQ) \
    X(K, body_bytes,       "body_bytes",       U64, REQ)

/* msg.peek: one row per waiting message, in key order (a FIFO level's
 * delivery order; a fair level's tag by tag). Strings are cut to
 * PROTO_MAX_NAME bytes; pos is the message's place, for the next page. */
#define PROTO_COLS_msg(X, K)                               \
    X(K, id,               "id",               U64, REQ) \
    X(K, tag,              "tag",              STR, REQ) \
    X(K, attempts,         "attempts",         U64, REQ) \
    X(K, age_ms,           "age_ms",           U64, REQ) \
    X(K, cost,             "cost",             U64, REQ) \
    X(K, body_bytes,       "body_bytes",       U64, REQ) \
    X(K, preview,          "preview",          STR, REQ) \
    X(K, pos,              "pos",              U64, REQ)

/* A node of a high-availability group (ha.status). */
#define PROTO_COLS_ha(X, K)                                \
    X(K, node,             "node",             STR, REQ) \
    X(K, role,             "role",             STR, REQ) \
    X(K, endpoint,         "endpoint",         STR, REQ) \
    X(K, in_sync,          "in_sync",          U64, REQ) \
    X(K, lag_records,      "lag_records",      U64, REQ)

/* sink.show and STATS_OK of a broker sharing its sink (--coord): one row,
 * its capacity lease. Absent when the sink is the broker's alone. */
#define PROTO_COLS_coord(X, K)                             \
    X(K, state,            "state",            STR, REQ) \
    X(K, reachable,        "reachable",        U64, REQ) \
    X(K, slices_held,      "slices_held",      U64, REQ) \
    X(K, slices,           "slices",           U64, REQ) \
    X(K, reserved_milli,   "reserved_milli",   U64, REQ) \
    X(K, granted_milli,    "granted_milli",    U64, REQ) \
    X(K, lease_left_ms,    "lease_left_ms",    U64, REQ) \
    X(K, epoch,            "epoch",            U64, REQ) \
    X(K, limit_milli,      "limit_milli",      U64, REQ) \
    X(K, sum_reserved_milli, "sum_reserved_milli", U64, REQ) \
    X(K, brokers,          "brokers",          U64, REQ) \
    X(K, ops,              "ops",              U64, REQ)

/* The windows of rate limits (several per limit: "10/s and 500/min"): in
 * sink.set and level.set every window of the limit, replacing what it had;
 * in sink.show the sink's, and in level.list every level's, with its level.
 * count_milli units (x 1000) per period_ms, burst at once. A request's
 * window with count_milli 0 is allowed only alone: no limit at all. */
#define PROTO_COLS_window(X, K)                            \
    X(K, level,            "level",            U64, OPT) \
    X(K, count_milli,      "count_milli",      U64, REQ) \
    X(K, period_ms,        "period_ms",        U64, REQ) \
    X(K, burst,            "burst",            U64, REQ) \
    X(K, tokens_milli,     "tokens_milli",     U64, OPT)

/* Per-tag settings. tag.set: one row, what changes (absent: as it was);
 * windows in window_rows. tag.list: a row per pattern, then per tag (most
 * waiting first); strings cut to PROTO_MAX_NAME bytes. */
#define PROTO_COLS_tag(X, K)                               \
    X(K, pattern,          "pattern",          STR, OPT) \
    X(K, tag,              "tag",              STR, OPT) \
    X(K, level,            "level",            U64, OPT) \
    X(K, depth,            "depth",            U64, OPT) \
    X(K, inflight,         "inflight",         U64, OPT) \
    X(K, oldest_ms,        "oldest_ms",        U64, OPT) \
    X(K, weight,           "weight",           U64, OPT) \
    X(K, max_inflight,     "max_inflight",     U64, OPT) \
    X(K, rate_milli,       "rate_milli",       U64, OPT) \
    X(K, burst,            "burst",            U64, OPT) \
    X(K, tokens_milli,     "tokens_milli",     U64, OPT) \
    X(K, each,             "each",             U64, OPT) \
    X(K, paused,           "paused",           U64, OPT) \
    X(K, off,              "off",              U64, OPT) \
    X(K, order,            "order",            U64, OPT) \
    X(K, throttled_ms,     "throttled_ms",     U64, OPT) \
    X(K, effective_rate_milli, "effective_rate_milli", U64, OPT)

typedef enum proto_row_kind {
#define PROTO_KIND_ENUM_(K, most) PROTO_ROWS_##K,
    PROTO_ROW_KINDS(PROTO_KIND_ENUM_)
#undef PROTO_KIND_ENUM_
    PROTO_ROWS_COUNT_
} proto_row_kind;


#define PROTO_COLTYPE_U64 uint64_t
#define PROTO_COLTYPE_STR proto_buf

/* For each kind K: the column numbers PROTO_COL_K_member, the row
 * proto_row_K (a member per column and a bit per present column) and the
 * list proto_rows_K (n rows). */
#define PROTO_COL_ENUM_(K, m, k, t, r) PROTO_COL_##K##_##m,
#define PROTO_COL_MEMBER_(K, m, k, t, r) PROTO_COLTYPE_##t m;
#define PROTO_ROW_TYPES_(K, most)                                                   \
    enum { PROTO_COLS_##K(PROTO_COL_ENUM_, K) PROTO_COL_##K##_COUNT_ };            \
    typedef struct proto_row_##K {                                                \
        uint32_t present; /* bit PROTO_COL_K_member per column present */        \
        PROTO_COLS_##K(PROTO_COL_MEMBER_, K)                                      \
    } proto_row_##K;                                                              \
    typedef struct proto_rows_##K {                                               \
        uint32_t n;                                                               \
        proto_row_##K v[most];                                                    \
    } proto_rows_##K;
PROTO_ROW_KINDS(PROTO_ROW_TYPES_)
#undef PROTO_ROW_TYPES_
#undef PROTO_COL_MEMBER_
#undef PROTO_COL_ENUM_

/* PROTO_ROW_ALL(K) is the presence mask of a row of kind K with every
 * column set: what a sender that fills every column stores in present. */
#define PROTO_ROW_ALL(K) ((uint32_t)((UINT64_C(1) << PROTO_COL_##K##_COUNT_) - 1))

#endif
