/*
 * settings.c - the operator's settings that survive a restart: levels
 * (scheduling and rates), pools, and the sink.
 *
 * Every change an admin command makes is written here into the open write
 * transaction, so it is committed with the pass and the ADMIN_OK (sent after
 * the commit) means "applied and durable". settings_load reads them back at
 * open, before the first pass. Records live in the store's meta database as
 * small fixed binary records:
 *
 *   level/NN  u8 version(3) u8 flags(bit0 paused, bit1 fair by tag) u16 0 u32 burst
 *             u64 deadline_ms u64 aging_ms
 *             u64 max_rate_milli u64 min_rate_milli
 *             u8 windows u8 0 u16 0 u32 0, then 3 windows       (120 bytes)
 *             (version 2 was the first 40 bytes, no further windows;
 *              version 1 the first 24, burst 0, no rates)
 *   pool/NAME u8 version(1) u8 flags(bit0 paused, bit1 autoscale) u16 0
 *             u32 levels_mask u32 size u32 min u32 max u64 target_wait_ms
 *                                                                   (28 bytes)
 *   sink      u8 version(2) u8 0 u16 0 u32 burst u64 rate_milli
 *             u64 max_inflight
 *             u8 windows u8 0 u16 0 u32 0, then 3 windows       (104 bytes)
 *             (version 1 was the first 24 bytes, no further windows)
 *   a window  u64 count_milli u64 period_ms u32 burst u32 0          (24 bytes)
 *             (the further windows of a limit, beside its per-second
 *              rate and burst; unused ones are zero)
 *   tagrule/OOOOOOOO  (the pattern's order, 8 hex digits, so a scan reads
 *             them in order) u8 version(1) u8 flags(bit0 each) u16 0
 *             u32 weight u32 max_inflight u32 windows, then 4 windows,
 *             then the pattern's bytes                (112 + pattern bytes)
 *   tagpause/TAG  u8 version(1)                       (a paused tag; 1 byte)
 *
 * all little-endian. Change a layout: bump its version byte and read both.
 * A change whose commit is refused for want of space is undone by reading
 * the stored settings back (settings_commit_ended).
 *
 * Costs: one meta put per change; a prefix scan per kind at open (and after
 * a refused commit that held a change).
 */
#include "settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bk.h"
#include "byteorder.h"
#include "member.h"
#include "meter.h"
#include "store.h"
#include "log.h"
#include "tagset.h"

#define LEVEL_REC_V1 24
#define LEVEL_REC_V2 40
#define WIN_REC 24
#define WINS_REC (8 + METER_MORE_WINDOWS * WIN_REC)
#define LEVEL_REC (LEVEL_REC_V2 + WINS_REC)
#define POOL_REC 28
#define SINK_REC_V1 24
#define SINK_REC (SINK_REC_V1 + WINS_REC)
#define TAGRULE_HEAD 16
#define TAGRULE_REC (TAGRULE_HEAD + RL_MAX_WINDOWS * WIN_REC)


/* put_windows writes n windows of w (then zeros) at p. */
static void put_windows(unsigned char *p, const rl_window *w, unsigned n)
{
    p[0] = (unsigned char)n;
    for (unsigned i = 0; i < n; i++) {
        put_le64(p + 8 + i * WIN_REC, w[i].count_milli);
        put_le64(p + 16 + i * WIN_REC, w[i].period_ms);
        put_le32(p + 24 + i * WIN_REC, w[i].burst);
    }
}

/* get_windows reads what put_windows wrote into w; returns how many. */
static unsigned get_windows(const unsigned char *p, rl_window *w)
{
    unsigned n = p[0] > METER_MORE_WINDOWS ? METER_MORE_WINDOWS : p[0];
    for (unsigned i = 0; i < n; i++)
        w[i] = (rl_window){get_le64(p + 8 + i * WIN_REC), get_le64(p + 16 + i * WIN_REC), get_le32(p + 24 + i * WIN_REC)};
    return n;
}

/* The level and sink settings as of the last commit that succeeded: what a
 * refused one puts back (pools are read back from the store, where every
 * pool is saved when made). One broker per process. */
static struct {
    int valid;
    struct {
        int paused;
        uint64_t deadline_ms, aging_ms, max_rate_milli, min_rate_milli;
        uint32_t burst;
        unsigned nmore;
        rl_window more[METER_MORE_WINDOWS];
    } lv[PROTO_MAX_LEVELS];
    uint32_t sink_burst;
    uint64_t sink_rate_milli, sink_max_inflight;
    unsigned sink_nmore;
    rl_window sink_more[METER_MORE_WINDOWS];
} committed;

static void snapshot(const bk *b);

/* ---- persistence ---- */

void settings_save_level(bk *b, unsigned level)
{
    unsigned char r[LEVEL_REC] = {3};
    char key[16];
    const queue_level *lv = &b->q.lv[level];
    const meter_level *ml = &b->meter.lv[level];
    const disp_policy *pol = &b->policy[level];
    r[1] = (pol->paused ? 1 : 0) | (lv->fair ? 2 : 0);
    put_le32(r + 4, ml->burst);
    put_le64(r + 8, pol->deadline_ms);
    put_le64(r + 16, pol->aging_ms);
    put_le64(r + 24, ml->max_rate_milli);
    put_le64(r + 32, ml->min_rate_milli);
    put_windows(r + LEVEL_REC_V2, ml->more, ml->nmore);
    snprintf(key, sizeof key, "level/%02u", level);
    if (store_meta_put(b->st, key, r, sizeof r) != SL_OK)
        log_error("settings", "cannot store the settings of level %u", level);
    b->settings_unsaved = 1;
}

void settings_save_pool(bk *b, const pool *p)
{
    unsigned char r[POOL_REC] = {1};
    char key[8 + PROTO_MAX_NAME];
    r[1] = (p->paused ? 1 : 0) | (p->autoscale ? 2 : 0);
    put_le32(r + 4, p->levels_mask);
    put_le32(r + 8, p->size);
    put_le32(r + 12, p->min_size);
    put_le32(r + 16, p->max_size);
    put_le64(r + 20, p->target_wait_ms);
    snprintf(key, sizeof key, "pool/%s", p->name);
    if (store_meta_put(b->st, key, r, sizeof r) != SL_OK)
        log_error("settings", "cannot store the settings of pool %s", p->name);
    b->settings_unsaved = 1;
}

static void load_level(void *ctx, const char *key, size_t key_len, const void *val, size_t len)
{
    bk *b = ctx;
    const unsigned char *r = val;
    unsigned level = 0;
    if (key_len != 8 || sscanf(key + 6, "%2u", &level) != 1 ||
        !((len == LEVEL_REC_V1 && r[0] == 1) || (len == LEVEL_REC_V2 && r[0] == 2) ||
          (len == LEVEL_REC && r[0] == 3))) {
        log_warn("settings", "ignoring an unreadable level setting (%zu bytes)", len);
        return;
    }
    if (level >= b->cfg.levels)
        return; /* kept for when the level comes back */
    disp_policy *pol = &b->policy[level];
    meter_level *ml = &b->meter.lv[level];
    pol->paused = r[1] & 1;
    if ((r[1] & 2) && queue_fair_set(&b->q, level, 1, 1) != SL_OK)
        log_error("settings", "cannot rebuild the tags of level %u, served fair by tag", level);
    pol->deadline_ms = get_le64(r + 8);
    pol->aging_ms = get_le64(r + 16);
    if (r[0] >= 2) {
        ml->burst = get_le32(r + 4);
        ml->max_rate_milli = get_le64(r + 24);
        ml->min_rate_milli = get_le64(r + 32);
    }
    if (r[0] >= 3) { /* buckets start full, as every bucket does at open */
        rl_window w[METER_MORE_WINDOWS];
        meter_windows_set(&b->meter, level, w, get_windows(r + LEVEL_REC_V2, w), 0);
    }
}

void settings_save_sink(bk *b)
{
    unsigned char r[SINK_REC] = {2};
    put_le32(r + 4, b->meter.sink.burst);
    put_le64(r + 8, b->meter.sink.rate_milli);
    put_le64(r + 16, b->meter.sink.max_inflight);
    put_windows(r + SINK_REC_V1, b->meter.sink.more, b->meter.sink.nmore);
    if (store_meta_put(b->st, "sink", r, sizeof r) != SL_OK)
        log_error("settings", "cannot store the sink settings");
    b->settings_unsaved = 1;
}

static void load_sink(void *ctx, const char *key, size_t key_len, const void *val, size_t len)
{
    bk *b = ctx;
    const unsigned char *r = val;
    if (key_len != 4 || memcmp(key, "sink", 4) != 0)
        return; /* another key that merely starts with "sink" */
    if (!((len == SINK_REC_V1 && r[0] == 1) || (len == SINK_REC && r[0] == 2))) {
        log_warn("settings", "ignoring an unreadable sink setting (%zu bytes)", len);
        return;
    }
    b->meter.sink.burst = get_le32(r + 4);
    b->meter.sink.rate_milli = get_le64(r + 8);
    b->meter.sink.max_inflight = get_le64(r + 16);
    if (r[0] == 2) {
        rl_window w[METER_MORE_WINDOWS];
        meter_windows_set(&b->meter, METER_SINK, w, get_windows(r + SINK_REC_V1, w), 0);
    }
}

static void load_pool(void *ctx, const char *key, size_t key_len, const void *val, size_t len)
{
    bk *b = ctx;
    const unsigned char *r = val;
    if (key_len <= 5 || key_len - 5 > PROTO_MAX_NAME || len != POOL_REC || r[0] != 1) {
        log_warn("settings", "ignoring an unreadable pool setting (%zu bytes)", len);
        return;
    }
    uint32_t mask = get_le32(r + 4) & b->all_mask;
    pool *p = pool_require(&b->pools, key + 5, key_len - 5, mask ? mask : b->all_mask);
    if (!p)
        return;
    p->paused = r[1] & 1;
    p->autoscale = (r[1] >> 1) & 1;
    p->size = get_le32(r + 8);
    p->min_size = get_le32(r + 12);
    p->max_size = get_le32(r + 16);
    p->target_wait_ms = get_le64(r + 20);
}

/* ---- per-tag settings (tagset.h) ---- */

static void tagrule_key(char *key, size_t size, uint32_t order)
{
    snprintf(key, size, "tagrule/%08x", (unsigned)order);
}

void settings_save_tag_rule(bk *b, const tagset_rule *r)
{
    unsigned char v[TAGRULE_REC + PROTO_MAX_TAG] = {1};
    char key[32];
    size_t len = strlen(r->pattern);
    v[1] = r->each ? 1 : 0;
    put_le32(v + 4, r->weight);
    put_le32(v + 8, r->max_inflight);
    put_le32(v + 12, r->nwin);
    for (unsigned i = 0; i < r->nwin; i++) {
        put_le64(v + TAGRULE_HEAD + i * WIN_REC, r->win[i].count_milli);
        put_le64(v + TAGRULE_HEAD + 8 + i * WIN_REC, r->win[i].period_ms);
        put_le32(v + TAGRULE_HEAD + 16 + i * WIN_REC, r->win[i].burst);
    }
    memcpy(v + TAGRULE_REC, r->pattern, len);
    tagrule_key(key, sizeof key, r->order);
    if (store_meta_put(b->st, key, v, TAGRULE_REC + len) != SL_OK)
        log_error("settings", "cannot store the settings of tag pattern %s", r->pattern);
    b->settings_unsaved = 1;
}

void settings_del_tag_rule(bk *b, uint32_t order)
{
    char key[32];
    tagrule_key(key, sizeof key, order);
    if (store_meta_del(b->st, key) != SL_OK)
        log_error("settings", "cannot delete the tag pattern setting %s", key);
    b->settings_unsaved = 1;
}

void settings_save_tag_pause(bk *b, const char *tag, size_t len, int paused)
{
    char key[sizeof "tagpause/" + PROTO_MAX_TAG];
    unsigned char v[1] = {1};
    snprintf(key, sizeof key, "tagpause/%.*s", (int)len, tag);
    int rc = paused ? store_meta_put(b->st, key, v, 1) : store_meta_del(b->st, key);
    if (rc != SL_OK)
        log_error("settings", "cannot store the pause of tag %.*s", (int)len, tag);
    b->settings_unsaved = 1;
}

static void load_tag_rule(void *ctx, const char *key, size_t key_len, const void *val, size_t len)
{
    bk *b = ctx;
    const unsigned char *v = val;
    tagset_rule r;
    unsigned order;
    memset(&r, 0, sizeof r);
    if (key_len != 16 || sscanf(key + 8, "%8x", &order) != 1 || len <= TAGRULE_REC ||
        len > TAGRULE_REC + PROTO_MAX_TAG || v[0] != 1 || get_le32(v + 12) > RL_MAX_WINDOWS) {
        log_warn("settings", "ignoring an unreadable tag pattern setting (%zu bytes)", len);
        return;
    }
    r.order = order;
    r.each = v[1] & 1;
    r.weight = get_le32(v + 4);
    r.max_inflight = get_le32(v + 8);
    r.nwin = get_le32(v + 12);
    for (unsigned i = 0; i < r.nwin; i++)
        r.win[i] = (rl_window){get_le64(v + TAGRULE_HEAD + i * WIN_REC), get_le64(v + TAGRULE_HEAD + 8 + i * WIN_REC),
                               get_le32(v + TAGRULE_HEAD + 16 + i * WIN_REC)};
    memcpy(r.pattern, v + TAGRULE_REC, len - TAGRULE_REC);
    if (tagset_put(b->q.tags, &r, b->mono_ns) != SL_OK)
        log_warn("settings", "ignoring tag pattern %s: its settings are out of bounds", r.pattern);
}

static void load_tag_pause(void *ctx, const char *key, size_t key_len, const void *val, size_t len)
{
    bk *b = ctx;
    (void)val;
    if (key_len <= 9 || len != 1 || tagset_pause(b->q.tags, key + 9, key_len - 9, 1) != SL_OK)
        log_warn("settings", "ignoring an unreadable tag pause (%zu bytes)", len);
}

/* load_tags reads the patterns (in order) and the paused tags afresh. */
static int load_tags(bk *b)
{
    if (!b->q.tags) {
        b->q.tags = malloc(sizeof *b->q.tags);
        if (!b->q.tags)
            return SL_ENOMEM;
        tagset_init(b->q.tags);
    } else {
        tagset_fini(b->q.tags);
    }
    int rc = store_meta_scan(b->st, "tagrule/", load_tag_rule, b);
    if (rc == SL_OK)
        rc = store_meta_scan(b->st, "tagpause/", load_tag_pause, b);
    queue_fair_tags_changed(&b->q);
    if (rc == SL_OK && (b->q.tags->n || b->q.tags->npaused) && !committed.valid)
        log_info("settings", "%u tag patterns and %u paused tags restored", b->q.tags->n, b->q.tags->npaused);
    return rc;
}

int settings_load(bk *b)
{
    int rc = load_tags(b); /* before the levels: a fair level's tags take their weights as they are found */
    if (rc == SL_OK)
        rc = store_meta_scan(b->st, "level/", load_level, b);
    if (rc == SL_OK)
        rc = store_meta_scan(b->st, "pool/", load_pool, b);
    if (rc == SL_OK)
        rc = store_meta_scan(b->st, "sink", load_sink, b);
    if (rc == SL_OK && b->pools.n && !committed.valid)
        log_info("settings", "%u pools restored", b->pools.n);
    if (rc == SL_OK && !committed.valid)
        snapshot(b); /* at open: what the store holds */
    return rc;
}

static void snapshot(const bk *b)
{
    for (unsigned l = 0; l < b->cfg.levels; l++) {
        const disp_policy *pol = &b->policy[l];
        const meter_level *ml = &b->meter.lv[l];
        committed.lv[l].paused = pol->paused;
        committed.lv[l].deadline_ms = pol->deadline_ms;
        committed.lv[l].aging_ms = pol->aging_ms;
        committed.lv[l].max_rate_milli = ml->max_rate_milli;
        committed.lv[l].min_rate_milli = ml->min_rate_milli;
        committed.lv[l].burst = ml->burst;
        committed.lv[l].nmore = ml->nmore;
        memcpy(committed.lv[l].more, ml->more, sizeof ml->more);
    }
    committed.sink_burst = b->meter.sink.burst;
    committed.sink_rate_milli = b->meter.sink.rate_milli;
    committed.sink_max_inflight = b->meter.sink.max_inflight;
    committed.sink_nmore = b->meter.sink.nmore;
    memcpy(committed.sink_more, b->meter.sink.more, sizeof committed.sink_more);
    committed.valid = 1;
}

static void restore(bk *b)
{
    for (unsigned l = 0; l < b->cfg.levels; l++) {
        disp_policy *pol = &b->policy[l];
        meter_level *ml = &b->meter.lv[l];
        pol->paused = committed.lv[l].paused;
        pol->deadline_ms = committed.lv[l].deadline_ms;
        pol->aging_ms = committed.lv[l].aging_ms;
        ml->max_rate_milli = committed.lv[l].max_rate_milli;
        ml->min_rate_milli = committed.lv[l].min_rate_milli;
        ml->burst = committed.lv[l].burst;
        ml->nmore = committed.lv[l].nmore;
        memcpy(ml->more, committed.lv[l].more, sizeof ml->more);
    }
    b->meter.sink.burst = committed.sink_burst;
    b->meter.sink.rate_milli = committed.sink_rate_milli;
    b->meter.sink.max_inflight = committed.sink_max_inflight;
    b->meter.sink.nmore = committed.sink_nmore;
    memcpy(b->meter.sink.more, committed.sink_more, sizeof committed.sink_more);
}

void settings_commit_started(bk *b)
{
    b->settings_sealed = b->settings_unsaved; /* what changes from now on belongs to the next commit */
    b->settings_unsaved = 0;
}

void settings_commit_ended(bk *b, int rc)
{
    int unsaved = b->settings_sealed || (rc != SL_OK && b->settings_unsaved); /* a failure loses both */
    b->settings_sealed = 0;
    if (rc != SL_OK)
        b->settings_unsaved = 0;
    if (rc == SL_OK && (unsaved || !committed.valid))
        snapshot(b);
    if (rc != SL_ENOSPC || !unsaved)
        return;
    if (committed.valid)
        restore(b);
    if (settings_load(b) != SL_OK || !committed.valid)
        log_error("settings", "cannot put back every setting after a refused commit: a refused change may stay "
                  "live until a restart");
    for (unsigned l = 0; l < b->cfg.levels; l++)
        meter_level_apply(&b->meter, l, b->mono_ns);
    meter_sink_apply(&b->meter, b->mono_ns);
    for (unsigned i = 0; i < b->pools.n; i++)
        member_pool_changed(b, b->pools.v[i]);
    store_txn_release(b->st); /* the scan only read */
    log_warn("settings", "a settings change was in a commit refused for want of space: the stored settings are "
             "back in force");
}
