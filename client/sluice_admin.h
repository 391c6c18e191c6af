/*
 * sluice_admin.h - the administration calls of the Sluice client library:
 * levels, pools, the sink's limits, explain, dead letters, waiting messages,
 * backups, the settings as declarations, per-tag settings, the web
 * console's login links and high availability. Part of
 * sluice.h, which includes it (include <sluice.h>, not this file); the
 * threading rules, errors and guarantees stated there hold here too.
 */
#ifndef SLUICE_ADMIN_H
#define SLUICE_ADMIN_H

#ifndef SLUICE_H
#error "include <sluice.h>, which includes this header"
#endif

/* ---- administration ----
 *
 * Every change below takes effect at once, is stored in the broker's data
 * directory, and survives a restart. Each returns SL_OK, SL_ETIMEDOUT, or an
 * error from the broker: SL_ENOLEVEL, SL_ENOTFOUND (no such pool), SL_EINVAL
 * (a value out of range; sl_last_error says which).
 */

/* One window of a rate limit: at most count units per period, burst of them
 * at once (a GCRA bucket: over any span tau, at most count / period x tau +
 * burst). A limit may have up to SL_MAX_WINDOWS, in series ("10/s and
 * 500/min"): a message goes when every window admits it. */
#define SL_MAX_WINDOWS 4
typedef struct sl_window {
    uint64_t count_milli;  /* units per period x 1000 (1500: 1.5 units) */
    uint64_t period_ms;    /* 1 ms .. 86,400,000 (a day); 1000 for a rate per second */
    uint32_t burst;        /* units at once; 0: a per-second window keeps the limit's burst, another takes 1 */
    uint64_t tokens_milli; /* shown only: units the window would let through now, x 1000 */
} sl_window;

/* One level's scheduling settings and state. */
typedef struct sl_level_info {
    char name[65];
    uint64_t deadline_ms;  /* 0: none. A head older than this is served first */
    uint64_t aging_ms;     /* 0: none. Waiting this long lifts a message one level */
    int paused;            /* nothing is delivered from a paused level */
    uint64_t depth;        /* ready messages */
    uint64_t oldest_ms;    /* age of the oldest ready message */
    uint64_t max_rate_milli;  /* ceiling, units/s x 1000; 0 = none */
    uint64_t min_rate_milli;  /* guaranteed rate, units/s x 1000; 0 = none */
    uint32_t burst;           /* the ceiling's burst */
    uint64_t tokens_milli;    /* units the ceiling would let through now, x 1000 */
    uint64_t eta_ms;          /* expected drain time of the ready backlog */
    unsigned nwindows;        /* the ceiling's windows: its per-second one (max_rate_milli) first */
    sl_window windows[SL_MAX_WINDOWS];
    int fair;                 /* 1: served fair by tag; 0: FIFO */
} sl_level_info;

/* sl_level_list fills out[0..*n) (room for SL_MAX_LEVELS), one item per
 * level. A malformed reply (a row missing a column, a column of the wrong
 * type, more rows than SL_MAX_LEVELS) is SL_EPROTO with out untouched and *n
 * 0. */
int sl_level_list(sl_client *c, sl_level_info *out, unsigned *n);

/* sl_level_list_ex is sl_level_list, also filling throttled_ms[0..*n)
 * (room for SL_MAX_LEVELS; may be NULL) from the same reply: for each
 * level, the ms its pause after a THROTTLED has left (0: none). Such a
 * pause holds a level when a consumer whose principal may consume only
 * some levels says THROTTLED (it pauses those, not the sink), or when a
 * FIFO level waits for its head's tag; it lasts at most the broker's
 * --max-throttle-pause, and sl_level_pause(c, level, 0) ends it at once.
 * (A field of its own, so that sl_level_info keeps its size in
 * libsluice.so.1.) */
int sl_level_list_ex(sl_client *c, sl_level_info *out, uint64_t *throttled_ms, unsigned *n);

/* sl_level_set changes a level's deadline and aging step. Pass
 * SL_UNCHANGED to leave one as it is, 0 to switch it off. */
#define SL_UNCHANGED UINT64_MAX
int sl_level_set(sl_client *c, unsigned level, uint64_t deadline_ms, uint64_t aging_ms);

/* sl_level_rate sets a level's ceiling (max_rate_milli: the most units per
 * second x 1000 that leave it, with burst) and its guaranteed rate
 * (min_rate_milli: a reserved share of the sink the level gets before lower
 * levels; unused, it is lent to others). SL_UNCHANGED leaves a value as it
 * is; 0 switches a limit off. Takes effect within a second, without a burst. */
int sl_level_rate(sl_client *c, unsigned level, uint64_t max_rate_milli, uint64_t min_rate_milli,
                  uint64_t burst);

/* sl_level_windows sets every window of a level's ceiling, replacing those
 * it had: w[0..n), n at most SL_MAX_WINDOWS (0: no ceiling). The first
 * window with a period of 1000 ms becomes max_rate_milli and burst; at most
 * SL_MAX_WINDOWS - 1 may have another period. Like every rate change it
 * takes effect without a burst. SL_EINVAL for a count above 100,000,000 per
 * period, a period outside 1 ms .. a day, a burst above 1,000,000. */
int sl_level_windows(sl_client *c, unsigned level, const sl_window *w, unsigned n);

/* sl_level_pause stops (paused = 1) or resumes (0) deliveries from a level.
 * Publishing to a paused level still works. Resuming also ends a pause a
 * THROTTLED caused (sl_level_list_ex). */
int sl_level_pause(sl_client *c, unsigned level, int paused);

#define SL_MAX_POOLS 64

/* One consumer pool. */
typedef struct sl_pool_info {
    char name[65];
    uint32_t levels_mask;   /* bit L: subscribed to level L */
    uint32_t size;          /* most deliveries its members hold at once; 0 = no limit */
    uint32_t members;       /* connected member consumers */
    uint32_t inflight;      /* deliveries its members hold now */
    double rate_per_s;      /* deliveries per second, recent average */
    uint32_t recommended;   /* the size autoscaling would choose (always computed) */
    int paused;
    int autoscale;          /* autoscaling is on */
} sl_pool_info;

/* sl_pool_list fills out[0..*n) (room for SL_MAX_POOLS), one item per pool;
 * a malformed reply is SL_EPROTO as for sl_level_list. */
int sl_pool_list(sl_client *c, sl_pool_info *out, unsigned *n);

/* sl_pool_resize sets a pool's size, creating the pool (subscribed to all
 * levels) if it does not exist. Growing grants credit at once; shrinking stops
 * new deliveries until the pool holds fewer than size, and never takes back a
 * delivery in progress. Members are told their share (sl_share). */
int sl_pool_resize(sl_client *c, const char *pool, uint32_t size);

/* sl_pool_pause stops (1) or resumes (0) deliveries to a pool's members. */
int sl_pool_pause(sl_client *c, const char *pool, int paused);

/* sl_pool_delete deletes a pool and its stored settings. A pool with members
 * is refused (SL_ESTATE) unless force is 1: its members are then dropped as
 * on BYE (their deliveries return uncharged; a member's next credit puts it
 * in the default pool). Returns SL_OK, SL_ENOTFOUND (no such pool), SL_ESTATE,
 * SL_EINVAL (the default pool, or a bad name), or a transport error. */
int sl_pool_delete(sl_client *c, const char *pool, int force);

/* sl_pool_autoscale lets the broker set the pool's size within [min, max]
 * from its backlog, arrival rate and service time, aiming for a wait of
 * target_wait_ms; enabled = 0 switches it off (the size stays). */
int sl_pool_autoscale(sl_client *c, const char *pool, uint32_t min, uint32_t max,
                      uint64_t target_wait_ms, int enabled);

/* The sink: the throttled service consumers call. */
typedef struct sl_sink_info {
    uint64_t rate_milli;           /* configured, units/s x 1000; 0 = unlimited */
    uint64_t effective_rate_milli; /* what the broker uses now (lower after THROTTLED) */
    uint32_t burst;
    uint64_t max_inflight;         /* most deliveries out at once; 0 = no cap */
    uint64_t inflight;             /* deliveries out now */
    uint64_t tokens_milli;         /* units that could go now, x 1000 */
    uint64_t paused_ms;            /* ms until dispatch resumes after THROTTLED (at most the
                                      broker's --max-throttle-pause); 0 = running */
    char breaker[16];              /* "closed", "open" or "half-open" */
    uint64_t breaker_trips;        /* times the breaker opened */
    char reason[48];               /* why the effective rate is where it is: "configured",
                                      "cut after 429 (isolated)", "cut after repeated 429s",
                                      "recovering", "coordinated share" */
    sl_coord_info coord;           /* a shared sink's lease */
    unsigned nwindows;             /* the sink's windows: its per-second one (rate_milli) first */
    sl_window windows[SL_MAX_WINDOWS];
} sl_sink_info;

/* sl_sink_set changes the sink's rate, burst and in-flight cap
 * (SL_UNCHANGED leaves one as it is; 0 removes a limit). A change applies
 * at once: it also ends a pause after THROTTLED and restores the rate AIMD
 * cut. On a broker sharing
 * its sink (coord.coordinated), the rate is the sink's limit for every
 * broker, set through Redis: SL_EINVAL when it is below the brokers'
 * reserved rates, SL_ESTATE when Redis is unreachable. */
int sl_sink_set(sl_client *c, uint64_t rate_milli, uint64_t burst, uint64_t max_inflight);

/* sl_sink_windows sets every window of the sink's limit, replacing those it
 * had, as sl_level_windows does for a level (n 0: unlimited). On a broker
 * sharing its sink, the per-second window's rate is the limit for every
 * broker (as in sl_sink_set); the other windows are this broker's own. */
int sl_sink_windows(sl_client *c, const sl_window *w, unsigned n);

/* sl_sink_show reads the sink's settings and state. */
int sl_sink_show(sl_client *c, sl_sink_info *out);

/* sl_sink_resume ends the sink's pause after a THROTTLED at once, setting
 * *left_ms (may be NULL) to what it had left (0: it was not paused).
 * Dispatch goes on one unit at a time, as when a pause runs out; the rate
 * stays where AIMD put it (sl_sink_set, which also ends such a pause,
 * restores the configured one). Needs the admin role. */
int sl_sink_resume(sl_client *c, uint64_t *left_ms);

/* Where a message is and why it has not been delivered. */
typedef struct sl_explain_info {
    char state[32];     /* "ready", "leased", "delayed", "dead" or "gone"; or
                           "quarantined": found nowhere, while a level whose
                           stored trees failed the broker's checks may hold it */
    unsigned level;
    uint64_t position;  /* ready: messages ahead of it in its level */
    uint64_t until_ms;  /* leased or delayed: ms until the lease ends or it is due;
                           ready: until what holds it now ends, when known (its
                           tag's or its level's or the sink's pause after a
                           THROTTLED, a rate limit), else 0 */
    char why[1025];     /* a sentence for humans: paused level or pool, no credit, ... */
} sl_explain_info;

/* sl_explain tells where message id is and why it has not been dispatched.
 * A message that was acknowledged (or never existed) is "gone". */
int sl_explain(sl_client *c, uint64_t id, sl_explain_info *out);

/* What sl_explain_ex and sl_dead_peek_ex tell besides their struct. The
 * struct starts with its own size, which the caller sets (size = sizeof
 * *more): the library fills only the members that fit in it. */
typedef struct sl_msg_more {
    size_t size;              /* set by the caller: sizeof (sl_msg_more) */
    const sl_header *headers; /* the message's headers as published; NULL when
                               * none. Valid until the next call on c. */
    size_t nheaders;
    uint64_t wait_ms;         /* explain: from its publish to now (leased: to its
                               * delivery); 0 when gone or not told */
} sl_msg_more;

/* sl_explain_ex is sl_explain, also filling *more (may be NULL; its size
 * set). Returns as sl_explain, and SL_EINVAL when more's size is below
 * that of its first member. */
int sl_explain_ex(sl_client *c, uint64_t id, sl_explain_info *out, sl_msg_more *more);

/* ---- the web console ----
 *
 * A broker started with --http serves a console in the browser. With
 * --auth, a principal logs in there with a one-time link minted for it
 * over this connection, with its own key: the session has its role. */

typedef struct sl_web_link {
    char url[1025];       /* the console's address: http://ADDR:PORT (or https) */
    char token[65];       /* the one-time token: open url + "/#login=" + token */
    uint64_t ttl_ms;      /* how long the link, and the session it opens, last */
    char role[65];        /* the role the session will have */
} sl_web_link;

/* sl_web_login mints a login link for the principal of c's key, lasting
 * ttl_ms (0: the broker's default, 8 hours; at most 7 days). SL_ESTATE when
 * the broker serves no console (no --http), SL_EPERM when an admin's link
 * must come through the admin endpoint (--admin-listen), SL_EINVAL for a
 * ttl out of range, SL_EFULL when 64 links wait unused. */
int sl_web_login(sl_client *c, uint64_t ttl_ms, sl_web_link *out);

/* ---- high availability ----
 *
 * A broker started with --ha is a node of a group: a primary and its
 * standby, leadership in Redis (broker/README.md, "High availability"). */

#define SL_HA_NODES_MAX 4

typedef struct sl_ha_node {
    char node[65];         /* its --ha-node */
    char role[65];         /* "primary", "standby", "fenced" (a primary without a valid lease), "unreachable" */
    char endpoint[65];     /* where clients reach it (its --advertise, else --listen; cut to 64 bytes) */
    int in_sync;           /* the primary, or the standby Redis records in sync */
    uint64_t lag_records;  /* records of the stream it has not acknowledged (the primary's count) */
} sl_ha_node;

typedef struct sl_ha_status {
    uint64_t epoch;        /* the group's epoch: one more per promotion */
    unsigned nnodes;
    sl_ha_node nodes[SL_HA_NODES_MAX]; /* the node answering first */
} sl_ha_status;

/* sl_ha_status_get reads the group as the node c reaches sees it (a
 * standby answers it too, with its own view). SL_ESTATE when the broker is
 * not a node of a group. */
int sl_ha_status_get(sl_client *c, sl_ha_status *out);

/* sl_ha_switchover hands the primary's lease to its standby in sync, at
 * the next epoch: the primary stops confirming and dispatching at once, the
 * standby promotes as soon as it hears (well under a second), and the old
 * primary starts again as the standby. A client that names both nodes
 * ("a|b") follows. SL_ESTATE when no standby is in sync, or one is already
 * under way; SL_EREDIRECT from a standby (answered by the primary when c
 * names both nodes). */
int sl_ha_switchover(sl_client *c);

/* sl_ha_recover writes a group's record in Redis again after Redis lost its
 * data (nothing promotes by itself then): node leads at the next epoch
 * after the highest the answering node has seen. Send it to a node of the
 * group (each waits as a standby then). SL_ESTATE when Redis holds the
 * record (nothing to recover), SL_EINVAL for an empty node. */
int sl_ha_recover(sl_client *c, const char *node);

/* ---- dead letters ----
 *
 * A message that used up its attempts, or whose time to live ran out, is a
 * dead letter of its level, kept by message id. These calls list, read,
 * requeue and purge them. Requeue and purge work in chunks: one call
 * changes at most SL_DEAD_CHUNK dead letters, in one transaction of the
 * broker (a crash leaves each message of the chunk either dead or
 * requeued), and tells in *after whether more remain; call again to go on.
 * Running a series again after it was cut short does nothing twice. */

#define SL_DEAD_CHUNK     1000u     /* most dead letters one call changes */
#define SL_DEAD_PAGE      64u       /* most dead letters one sl_dead_list returns */
#define SL_DEAD_TEXT      64u       /* bytes of tag, reason and preview in a list */
#define SL_SAME_LEVEL     ((unsigned)-1) /* sl_dead_requeue*: back to the level it died in */

/* A dead letter as sl_dead_list shows it. tag and reason are cut to
 * SL_DEAD_TEXT bytes (at a UTF-8 character's start) and NUL-terminated;
 * preview holds the first preview_len bytes of the body, any bytes. */
typedef struct sl_dead_letter {
    uint64_t id;
    char tag[SL_DEAD_TEXT + 1];
    uint64_t attempts;       /* deliveries charged before it died */
    uint64_t died_ms;        /* when it died, ms since the Unix epoch */
    char reason[SL_DEAD_TEXT + 1];
    unsigned char preview[SL_DEAD_TEXT];
    size_t preview_len;
    uint64_t body_bytes;     /* the whole body's size */
} sl_dead_letter;

/* sl_dead_list reads up to max (at most SL_DEAD_PAGE; 0 means that many)
 * dead letters of level whose id is above after, in id order, into
 * out[0..*n). Fewer than asked means the end of the level. Returns SL_OK,
 * SL_ENOLEVEL, SL_EINVAL, SL_EPROTO, SL_ETIMEDOUT. */
int sl_dead_list(sl_client *c, unsigned level, uint64_t after, unsigned max, sl_dead_letter *out, unsigned *n);

/* One dead letter, whole. The pointers point into the client's last reply:
 * valid until the next call on c. body holds body_len bytes, unchanged. */
typedef struct sl_dead_message {
    uint64_t id;
    unsigned level;
    uint64_t attempts;
    const char *tag;         /* tag_len bytes, not NUL-terminated */
    size_t tag_len;
    const void *body;
    size_t body_len;
    const char *reason;      /* reason_len bytes, not NUL-terminated */
    size_t reason_len;
} sl_dead_message;

/* sl_dead_peek reads dead letter id, whatever its level. SL_ENOTFOUND when
 * no dead letter has that id. */
int sl_dead_peek(sl_client *c, uint64_t id, sl_dead_message *out);

/* sl_dead_peek_ex is sl_dead_peek, also filling *more (may be NULL; its
 * size set) with the dead letter's headers. Returns as sl_dead_peek, and
 * SL_EINVAL when more's size is below that of its first member. */
int sl_dead_peek_ex(sl_client *c, uint64_t id, sl_dead_message *out, sl_msg_more *more);

/* sl_dead_requeue moves up to max (0 or more than SL_DEAD_CHUNK mean
 * SL_DEAD_CHUNK) dead letters of level, smallest id first, to the tail of
 * to_level (SL_SAME_LEVEL: level) as new: attempt 0, no time to live.
 * *moved says how many moved, and *after is 0 when level has no dead letter
 * left, nonzero when more remain. sl_dead_requeue_id moves one, by id
 * (SL_ENOTFOUND when it is not a dead letter). */
int sl_dead_requeue(sl_client *c, unsigned level, unsigned to_level, uint64_t max, uint64_t *moved,
                    uint64_t *after);
int sl_dead_requeue_id(sl_client *c, uint64_t id, unsigned to_level);

/* sl_dead_purge deletes dead letters of level for good: those with an id
 * above *after (0: from the first) that died at least older_than_ms ago (0:
 * all), up to max of them (as for requeue). It looks at no more than 10,000
 * per call: *purged says how many it deleted and *after where the next call
 * goes on, or 0 at the end of the level. */
int sl_dead_purge(sl_client *c, unsigned level, uint64_t older_than_ms, uint64_t max, uint64_t *after,
                  uint64_t *purged);

/* ---- waiting messages ----
 *
 * A level's waiting messages are those ready to be delivered: not out with
 * a consumer (leased), not delayed. These calls read them without taking
 * them, delete them and move them to another level. Purge and move work in
 * chunks like the dead-letter calls: one call changes at most
 * SL_MSG_CHUNK messages in one transaction of the broker (a crash leaves
 * each message where it was or where it went) and looks at no more than
 * 10,000; *after is where the next call goes on (0: the level's end). A
 * series cut short is run again from the start (*after 0): what was
 * deleted or moved is no longer there, so nothing is done twice. Leased
 * messages are left alone and counted in *leased: acknowledged, they are
 * gone; given back, they are ready again in the level they came from. */

#define SL_MSG_CHUNK 1000u   /* most messages one sl_msg_purge or sl_msg_move changes */
#define SL_MSG_PAGE  64u     /* most messages one sl_msg_peek returns */
#define SL_MSG_TEXT  64u     /* bytes of tag and preview in a peek */

/* A waiting message as sl_msg_peek shows it. tag is cut to SL_MSG_TEXT
 * bytes (at a UTF-8 character's start) and NUL-terminated; preview holds
 * the body's first preview_len bytes, cut before the first that is not
 * UTF-8 (any character, control characters included: escape it before
 * showing it). */
typedef struct sl_waiting {
    uint64_t id;
    char tag[SL_MSG_TEXT + 1];
    uint64_t attempts;       /* deliveries charged so far */
    uint64_t age_ms;         /* since it was published, by the broker's clock */
    uint32_t cost;
    uint64_t body_bytes;     /* the whole body's size */
    unsigned char preview[SL_MSG_TEXT];
    size_t preview_len;
    uint64_t pos;            /* its place in the level: after, for the next page */
} sl_waiting;

/* sl_msg_peek reads up to max (at most SL_MSG_PAGE; 0 means that many)
 * waiting messages of level whose place is past after (0: from the head),
 * those of tag only when tag is not NULL, in the level's order (a FIFO
 * level's delivery order; a level served fair by tag, tag by tag), into
 * out[0..*n), and sets *next to where the next page goes on (0: the
 * level's end; a page may hold fewer than max with *next not 0, when the
 * broker looked at 10,000 messages, leased or of other tags). Nothing is
 * taken. Returns SL_OK, SL_ENOLEVEL, SL_EINVAL, SL_EPROTO, SL_ETIMEDOUT. */
int sl_msg_peek(sl_client *c, unsigned level, const char *tag, uint64_t after, unsigned max, sl_waiting *out,
                unsigned *n, uint64_t *next);

/* sl_msg_delete deletes waiting message id, ready in its level or delayed;
 * *level (may be NULL) says where it was. SL_ESTATE while it is out with a
 * consumer; SL_ENOTFOUND when no waiting message has that id (a dead letter
 * is deleted with sl_dead_purge; a message past the first million of its
 * level is not looked for). */
int sl_msg_delete(sl_client *c, uint64_t id, unsigned *level);

/* sl_msg_purge deletes waiting messages of level for good, going on past
 * *after (0: from the head): all, or those of tag (not NULL), or those
 * published at least older_than_ms ago (0: any age), at most max (0 or
 * more than SL_MSG_CHUNK: SL_MSG_CHUNK). With dry_run, it deletes nothing
 * and counts what it would. *purged says how many, *leased (may be NULL)
 * how many it left alone, *after where the next call goes on (0: the end). */
int sl_msg_purge(sl_client *c, unsigned level, const char *tag, uint64_t older_than_ms, int dry_run,
                 uint64_t max, uint64_t *after, uint64_t *purged, uint64_t *leased);

/* sl_msg_move moves waiting messages of level (of tag only, when not NULL)
 * to the tail of to_level, another level, in their order, each keeping its
 * id, tag, body, cost, attempts and time to live; chunks, *after and
 * *leased as sl_msg_purge. Moves are not refused by to_level's
 * --level-max-messages. SL_EINVAL when to_level is level. */
int sl_msg_move(sl_client *c, unsigned level, unsigned to_level, const char *tag, uint64_t max, uint64_t *after,
                uint64_t *moved, uint64_t *leased);

/* ---- backups ---- */

/* sl_backup starts a backup of the broker's store into dir, an absolute
 * path on the broker's machine that does not exist (the broker makes it)
 * or is an empty directory: the broker makes a checkpoint, so that LMDB
 * holds everything confirmed before the call, then copies it, compacted,
 * into dir/data.mdb on a thread of its own while it goes on serving. The
 * call returns once the backup has started: follow it with
 * sl_backup_status. SL_ESTATE while one runs; SL_EINVAL for a relative
 * path, a directory that is not empty or that cannot be made. */
int sl_backup(sl_client *c, const char *dir);

/* What the broker's last backup did. */
typedef struct sl_backup_info {
    char state[16];          /* "none", "checkpoint", "copying", "done" or "failed" */
    char path[1025];
    uint64_t bytes;          /* the copy's size, once done */
    uint64_t elapsed_ms;     /* from the request to its end (so far, while it runs) */
    char msg[1025];          /* what it did, or why it failed */
} sl_backup_info;

/* sl_backup_status reads the last backup's state. */
int sl_backup_status(sl_client *c, sl_backup_info *out);

/* ---- settings ---- */

/* sl_settings_export reads the running settings of the sink, the levels,
 * the configured pools and the tag patterns as sluice.conf declarations
 * (text, *len bytes, not NUL-terminated): what a config file may declare,
 * applied at start and on SIGHUP. *text points into the client's last
 * reply: valid until the next call on c. */
int sl_settings_export(sl_client *c, const char **text, size_t *len);

/* ---- per-tag settings of levels served fair by tag ---- */

/* The settings sl_tag_set changes for a pattern: each field SL_UNCHANGED
 * leaves it as it is (a new pattern starts at weight 1, no cap, no rate,
 * one bucket shared by the tags it matches). */
typedef struct sl_tag_settings {
    uint64_t weight;        /* 1..1000: turns per round of the fair pick */
    uint64_t max_inflight;  /* deliveries out at once; 0: no cap */
    uint64_t each;          /* 1: a bucket and a cap per matching tag; 0: one shared */
    uint64_t burst;         /* the per-second window's burst (with no windows given) */
    int nwindows;           /* -1: rate unchanged; 0: no rate limit; else windows[0..n) */
    sl_window windows[SL_MAX_WINDOWS];
} sl_tag_settings;

/* sl_tag_settings_init sets every field of s to "unchanged". */
void sl_tag_settings_init(sl_tag_settings *s);

/* sl_tag_set sets the settings of pattern (a glob such as "gold-*", or an
 * exact tag; 1..255 bytes); the first pattern set that matches a tag gives
 * it its settings. SL_EINVAL for a bad value (the broker's text says
 * which), or past 1,024 patterns. */
int sl_tag_set(sl_client *c, const char *pattern, const sl_tag_settings *s);

/* sl_tag_off removes pattern's settings. SL_ENOTFOUND when it has none. */
int sl_tag_off(sl_client *c, const char *pattern);

/* sl_tag_pause stops (paused 1) or resumes (0) deliveries of one tag (exact
 * text) from every level served fair by tag. */
int sl_tag_pause(sl_client *c, const char *tag, int paused);

/* One row of sl_tag_list: a pattern (pattern set, tag empty) or a tag (tag
 * set; pattern: the one it matches, or empty). */
typedef struct sl_tag_info {
    char pattern[65];
    char tag[65];
    int has_level;          /* a tag waiting or in flight in a level */
    unsigned level;
    uint64_t depth, inflight, oldest_ms;
    uint64_t weight, max_inflight, rate_milli, burst, tokens_milli;
    int each, paused, limited; /* limited: rate_milli and tokens_milli mean something */
    unsigned nwindows;
    sl_window windows[SL_MAX_WINDOWS]; /* a pattern's windows */
} sl_tag_info;
#define SL_MAX_TAG_ROWS 64

/* sl_tag_list fills out[0..*n) (room for SL_MAX_TAG_ROWS): the patterns in
 * their order, then the tags with the most messages waiting (then those
 * paused, or throttled by their service, with nothing waiting). */
int sl_tag_list(sl_client *c, sl_tag_info *out, unsigned *n);

/* What THROTTLEDs for a tag alone (sl_throttled_scope, SL_SCOPE_TAG) left
 * on a row of sl_tag_list_ex (beside sl_tag_info, which keeps its size). */
typedef struct sl_tag_throttle {
    uint64_t throttled_ms;         /* a tag row: until its pause ends; 0: none */
    uint64_t effective_rate_milli; /* the rate its bucket runs at while cut after
                                      429s (a tag's own with --each; a pattern
                                      row's shared one); 0: not cut */
} sl_tag_throttle;

/* sl_tag_list_ex is sl_tag_list, also filling thr[0..*n) (room for
 * SL_MAX_TAG_ROWS; may be NULL) from the same reply, row for row. */
int sl_tag_list_ex(sl_client *c, sl_tag_info *out, sl_tag_throttle *thr, unsigned *n);

/* sl_level_fair serves level fair by tag (fair != 0: deficit round robin
 * over the tags with messages waiting, FIFO within a tag, untagged messages
 * one tenant of their own) or FIFO (0, the default). Persisted. SL_ESTATE
 * when the level holds messages (ready, in flight or delayed): a level
 * changes how it is served only while it is empty. */
int sl_level_fair(sl_client *c, unsigned level, int fair);

#endif /* SLUICE_ADMIN_H */
