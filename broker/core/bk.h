/*
 * bk.h - the broker object: the configuration, the modules it owns, and the
 * few figures that span them. Functions that do the work live in the module
 * of their path (admit, deliver, settle, cron, member; see bk.c's essay for
 * who may include whom); this header declares only the struct and its
 * open/close.
 *
 * Only the loop reads the clock: it stores mono_ns and wall_ns here before
 * each step, and everything below takes time from there.
 */
#ifndef SLUICE_BK_H
#define SLUICE_BK_H

#include <stdint.h>

#include "conf.h"
#include "conn.h"
#include "disp.h"
#include "lease.h"
#include "log.h"
#include "meter.h"
#include "hist.h"
#include "notify.h"
#include "pool.h"
#include "proto.h"
#include "queue.h"
#include "room.h"

#define BK_CREDIT_CAP 100000u
#define BK_BRIDGE_TIMEOUT_MS 30000u /* the HTTP server gives up on the loop after this (504) */

struct store;
struct net;
struct auth_table;
struct coord;
struct loop_state;
struct ha_node;
struct http;
struct bridge;

/* A pause a THROTTLED caused (path/pause.c): until when, and where it came
 * from, for the log, explain and the operator. */
typedef struct bk_pause {
    uint64_t until_ns;            /* monotonic; nothing it holds leaves before it; 0: none */
    uint64_t asked_ms;            /* the retry-after the consumer gave; 0: none (the backoff) */
    uint64_t applied_ms;          /* the pause set, after --max-throttle-pause */
    uint64_t id;                  /* the message whose THROTTLED set it */
    unsigned level;               /* that message's level */
    char principal[PROTO_MAX_NAME + 1]; /* its consumer's principal ("" without auth) */
    char pool[PROTO_MAX_NAME + 1];      /* its consumer's pool */
    char tag[PROTO_MAX_NAME + 1];       /* a FIFO level waiting for its head's tag: the tag (cut), else "" */
} bk_pause;

typedef struct bk {
    conf cfg;
    struct store *st;
    struct net *net;
    queue q;
    conn_table conns;
    lease_table leases;
    pool_table pools;
    disp_state disp;
    disp_policy policy[PROTO_MAX_LEVELS]; /* each level's scheduling settings */
    bk_pause level_pause[PROTO_MAX_LEVELS]; /* a level that THROTTLED paused (pause.c): a FIFO level waiting for
                                             * its head's tag (settle_tag.c), or the levels of a consumer whose
                                             * principal may not pause the sink */
    bk_pause sink_pause;          /* where the sink's pause came from (its time: meter.sink.paused_until_ns) */
    meter meter;                  /* the sink's and the levels' limits, the breaker */
    uint64_t meter_wake_ns;       /* when dispatch held back by the meter may go on */
    struct coord *coord;          /* capacity leases in Redis; NULL: the sink is this broker's alone */
    uint64_t coord_wake_ns;       /* when coord next has work */
    struct ha_node *ha;           /* a primary of a high-availability group (ha_node.c); NULL: alone */
    /* its admin commands (ha.status, ha.switchover), answered by ha_node.c:
     * set while ha is; SL_OK or an error with text */
    int (*ha_admin)(struct bk *b, int cmd, proto_msg *rep, char *text, size_t text_len);
    uint64_t ha_wake_ns;          /* when it next has work */
    double dispatch_per_s[PROTO_MAX_LEVELS];  /* smoothed, for the ETA without limits */
    uint64_t sample_dispatched[PROTO_MAX_LEVELS];
    uint64_t picks[PROTO_MAX_LEVELS][DISP_REASON_COUNT_];
    double arrival_per_s[PROTO_MAX_LEVELS];  /* smoothed enqueue rate */
    uint64_t sample_ns, sample_enqueued[PROTO_MAX_LEVELS];
    uint32_t all_mask;            /* bit per configured level */
    int lock_fd;
    uint64_t mono_ns, wall_ns;    /* set by the loop */
    uint64_t started_mono_ns;
    uint64_t next_hb_ns;
    uint64_t next_sweep_ns;       /* idempotency keys to forget, expired messages */
    uint64_t next_pace_ns;        /* when member.c next looks at the consumers' pacing shares */
    size_t pace_pacers;           /* consumers pacing the sink, as last announced in POOL (member.c) */
    uint64_t next_measure_ns;     /* when to recount the map's use */
    log_limit no_room_log;        /* "the disk has no room to grow the map": once a minute */
    room_disk room;               /* the disk's free space, as admission last read it (room.c) */
    uint64_t dirty_since_ns;      /* when the open transaction got its first write */
    uint64_t rx[PROTO_TYPE_COUNT_];
    uint64_t rx_bad, tx_failed;
    uint64_t dead_age_after[PROTO_MAX_LEVELS]; /* retention's age sweep: last id looked at */
    unsigned dead_age_level;      /* the level the age sweep is in */
    uint64_t dead_unlogged;       /* dead letters retention dropped since its last log line */
    int dead_more;                /* retention stopped at a full chunk: wake at once */
    struct http *http;            /* the HTTP server: console, JSON API, /metrics (broker/http/), or NULL */
    struct bridge *bridge;        /* its door to the loop (net/bridge.c), or NULL */
    uint64_t next_publish_ns;     /* when cron next publishes its snapshot (publish.c) */
    uint64_t publish_ns, publishes; /* what publishing snapshots cost the loop so far, and how many */
    hist wait_hist[PROTO_MAX_LEVELS]; /* publish to first delivery (deliver) */
    hist commit_hist;             /* durable commits (loop) */
    uint64_t commits;
    uint64_t commits_nospace;     /* commits that failed for want of space (their batch refused) */
    log_limit nospace_log;        /* "commit failed: no space left": once every 10 s */
    uint64_t nospace_until_ns;    /* after a refused commit of only acks and timers' writes: no such commit before */
    uint64_t nospace_backoff_ns;  /* its back-off, doubling per refusal from --ack-flush-ms to 1 s */
    int settings_unsaved;         /* the open transaction holds a settings change (settings.c) */
    int settings_sealed;          /* ... the commit that is out does (settings_commit_started) */
    int checkpoint_wanted;        /* the map must grow: the log's next commit is an LMDB one (cron.c) */
    uint64_t commit_out_ns;       /* when the commit that is out was handed to the writer; 0: none */
    size_t puts_unsealed;         /* publishes answered since the last commit started, whose replies
                                   * wait for the next one: what a log record gathers (loop.c) */
    uint64_t commit_stalls;       /* commits out past half the watchdog period (pings withheld) */
    int commit_stall_noted;       /* the commit that is out was counted and logged as stalled */
    notify notify;                /* the service manager (systemd), when it listens */
    struct auth_table *auth;      /* the principals (auth.c); NULL when auth is off */
    struct peers *peers;          /* each key's connection descriptors, for revocation (peers.c) */
    uint64_t auth_refused;        /* commands refused by auth_check */
    uint64_t settle_refused;      /* settlements refused SL_ESTALE: unknown token, or not this connection's lease */
    uint64_t settle_foreign;      /* ... of those, a lease another connection holds (settle_holder) */
    struct loop_state *loop;      /* the loop's own state while it runs (loop.c); NULL otherwise */
} bk;

/* bk_open takes the data directory's lock, opens the store, rebuilds the
 * in-memory view, loads the persisted settings and binds. Returns SL_OK or
 * an error (logged): SL_ESTATE when another broker holds the directory,
 * SL_EIO when the directory or its lock file cannot be made, the store's and
 * net's errors as they are, SL_ENOMEM. */
int bk_open(const conf *cfg, uint64_t mono_ns, uint64_t wall_ns, bk **out);

/* bk_close releases everything in the reverse order; accepts NULL and NULLs
 * *b. */
void bk_close(bk **b);

#endif /* SLUICE_BK_H */
