/*
 * decl_text.c - the values of sluice.conf's declarations as text, both
 * ways, in the CLI's syntax:
 *
 *   durations   off (or 0), seconds (30, 0.5), or with a unit: 500ms, 30s,
 *               5m (or 5min), 1h, 1d
 *   rates       off (or 0), units per second with up to 3 decimals (0.5)
 *   windows     as sluice level set --max-rate: RATE (per second; its burst
 *               is the burst key, or RATE:BURST), COUNT/PERIOD (500/min,
 *               8/10s: its burst is COUNT, or COUNT/PERIOD:BURST), or off;
 *               one a line, the key repeated
 *   counts      whole numbers within the key's bounds
 *   yes/no      yes, no (also on, off, true, false)
 *   fair        tag or fifo
 *
 * Writing is canonical: one value has one text (30s, never 30000ms; a
 * window other than per second always with its :BURST), so that what the
 * file declares and what the broker runs compare as text (decl.c applies
 * only what differs) and an export read back exports the same (decl_export.c).
 *
 * Costs: nothing beyond the text.
 */
#include "decl_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "units.h"

#define MS_PER_DAY UINT64_C(86400000)
#define MAX_DURATION_MS (100 * 365 * MS_PER_DAY)
#define MAX_RATE_MILLI UINT64_C(100000000000)

const decl_key_def decl_keys[DECL_K_COUNT_] = {
#define DECL_KEY_DEF_(id, name, alias, kinds, type, value, help) {name, alias, kinds, DECL_##type},
    DECL_KEYS(DECL_KEY_DEF_)
#undef DECL_KEY_DEF_
};

/* milli_parse reads a decimal with at most 3 decimals as thousandths. */
static int milli_parse(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t whole = 0, frac = 0;
    int digits = 0, fd = 0;
    for (; *s >= '0' && *s <= '9'; s++, digits++) {
        if (whole > max / 1000)
            return -1;
        whole = whole * 10 + (uint64_t)(*s - '0');
    }
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++, fd++) {
            if (fd == 3)
                return -1;
            frac = frac * 10 + (uint64_t)(*s - '0');
        }
    if (!digits || *s)
        return -1;
    for (int i = fd; i < 3; i++)
        frac *= 10;
    if (whole > max / 1000 || whole * 1000 + frac > max)
        return -1;
    *out = whole * 1000 + frac;
    return 0;
}

static void milli_text(uint64_t v, char *buf, size_t size)
{
    if (v % 1000 == 0)
        snprintf(buf, size, "%" PRIu64, v / 1000);
    else if (v % 100 == 0)
        snprintf(buf, size, "%" PRIu64 ".%" PRIu64, v / 1000, v % 1000 / 100);
    else if (v % 10 == 0)
        snprintf(buf, size, "%" PRIu64 ".%02" PRIu64, v / 1000, v % 1000 / 10);
    else
        snprintf(buf, size, "%" PRIu64 ".%03" PRIu64, v / 1000, v % 1000);
}

static const struct {
    const char *name;
    uint64_t ms;
} units[] = {{"ms", 1}, {"s", 1000}, {"sec", 1000}, {"m", 60000}, {"min", 60000},
             {"h", 3600000}, {"hour", 3600000}, {"d", MS_PER_DAY}, {"day", MS_PER_DAY}};

static int duration_parse(const char *s, uint64_t *ms)
{
    char num[32];
    size_t n = strspn(s, "0123456789.");
    uint64_t v;
    if (!strcmp(s, "off")) {
        *ms = 0;
        return 0;
    }
    if (n == 0 || n >= sizeof num)
        return -1;
    memcpy(num, s, n);
    num[n] = '\0';
    if (!s[n]) /* plain seconds, as the CLI has always taken them */
        return milli_parse(num, MAX_DURATION_MS, ms);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(s + n, units[i].name)) {
            if (milli_parse(num, MAX_DURATION_MS, &v) || v % 1000 * units[i].ms % 1000 ||
                v / 1000 > MAX_DURATION_MS / units[i].ms)
                return -1; /* a fraction of a millisecond, or too long */
            *ms = v / 1000 * units[i].ms + v % 1000 * units[i].ms / 1000;
            return 0;
        }
    return -1;
}

static void duration_text(uint64_t ms, char *buf, size_t size)
{
    if (!ms)
        snprintf(buf, size, "off");
    else if (ms % 1000)
        snprintf(buf, size, "%" PRIu64 "ms", ms);
    else if (ms % 3600000 == 0)
        snprintf(buf, size, "%" PRIu64 "h", ms / 3600000);
    else if (ms % 60000 == 0)
        snprintf(buf, size, "%" PRIu64 "m", ms / 60000);
    else
        snprintf(buf, size, "%" PRIu64 "s", ms / 1000);
}

/* period_parse reads "[K]UNIT" (8/10s: 10s) into ms. */
static int period_parse(const char *s, uint64_t *ms)
{
    uint64_t k = 0;
    size_t n = 0;
    for (; s[n] >= '0' && s[n] <= '9'; n++) {
        if (k > MS_PER_DAY)
            return -1;
        k = k * 10 + (uint64_t)(s[n] - '0');
    }
    if (!n)
        k = 1;
    for (size_t i = 0; k && i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(s + n, units[i].name) && k <= MS_PER_DAY / units[i].ms) {
            *ms = k * units[i].ms;
            return 0;
        }
    return -1;
}

static void period_text(uint64_t ms, char *buf, size_t size)
{
    static const struct {
        const char *name;
        uint64_t ms;
    } big[] = {{"d", MS_PER_DAY}, {"h", 3600000}, {"min", 60000}, {"s", 1000}, {"ms", 1}};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
        if (ms % big[i].ms == 0) {
            if (ms == big[i].ms)
                snprintf(buf, size, "%s", big[i].name);
            else
                snprintf(buf, size, "%" PRIu64 "%s", ms / big[i].ms, big[i].name);
            return;
        }
}

/* window_parse reads one --max-rate value into w; *burst_given tells
 * whether it said :BURST. "off" is a window of count 0. */
static const char *window_parse(const char *s, rl_window *w, int *burst_given)
{
    char buf[64];
    uint64_t burst = 0;
    *w = (rl_window){0, 1000, 0};
    *burst_given = 0;
    if (!strcmp(s, "off"))
        return NULL;
    if (strlen(s) >= sizeof buf)
        return "a window is RATE, COUNT/PERIOD (500/min), either with :BURST, or off";
    strcpy(buf, s);
    char *colon = strchr(buf, ':'), *slash = strchr(buf, '/');
    if (colon) {
        *colon = '\0';
        if (milli_parse(colon + 1, UINT64_MAX, &burst) || burst % 1000 || burst == 0 ||
            burst / 1000 > ADMIN_MAX_BURST)
            return "a window's :BURST is a whole number from 1 to 1000000";
        *burst_given = 1;
    }
    if (slash) {
        *slash = '\0';
        if (period_parse(slash + 1, &w->period_ms))
            return "a window's period is ms, s, min, h or d, or a whole number of one (10s), at most a day";
    }
    if (milli_parse(buf, MAX_RATE_MILLI, &w->count_milli) || !w->count_milli)
        return "a rate is a number above 0 with up to 3 decimals (0.5), at most 100000000, or off";
    if (*burst_given)
        w->burst = (uint32_t)(burst / 1000);
    else if (w->period_ms != 1000) /* over another period its burst is its count (sluice level set) */
        w->burst = (uint32_t)((w->count_milli + 999) / 1000 > ADMIN_MAX_BURST ? ADMIN_MAX_BURST
                                                                              : (w->count_milli + 999) / 1000);
    return NULL;
}

const char *decl_value_parse(decl_obj *o, int key, const char *text)
{
    const decl_key_def *k = &decl_keys[key];
    uint64_t v;
    switch (k->type) {
    case DECL_DURATION:
        if (duration_parse(text, &v))
            return "a duration is off, seconds (0.5), or with a unit: 500ms, 30s, 5m, 1h, 1d";
        if (key == DECL_K_deadline)
            o->deadline_ms = v;
        else if (key == DECL_K_aging)
            o->aging_ms = v;
        else
            o->target_wait_ms = v;
        return NULL;
    case DECL_RATE:
        if (!strcmp(text, "off"))
            v = 0;
        else if (milli_parse(text, MAX_RATE_MILLI, &v))
            return "a rate is a number with up to 3 decimals (0.5) per second, or off";
        o->min_rate_milli = v;
        return NULL;
    case DECL_WINDOWS: {
        rl_window w;
        int burst_given;
        const char *why = window_parse(text, &w, &burst_given);
        if (why)
            return why;
        if ((o->nwin && (!o->win[0].count_milli || !w.count_milli)))
            return "\"off\" is a limit's only window";
        if (o->nwin == DECL_MAX_WINDOWS)
            return "a limit has at most 4 windows";
        if (w.count_milli || !o->nwin) {
            if (w.period_ms == 1000 && !burst_given)
                w.burst = 0; /* the limit's burst: the burst key's, or what it has */
            o->win[o->nwin++] = w;
        }
        return NULL;
    }
    case DECL_COUNT: {
        uint64_t lo = 0, hi = 1000000;
        if (key == DECL_K_weight)
            lo = 1, hi = 1000;
        else if (key == DECL_K_size || key == DECL_K_min || key == DECL_K_max)
            lo = key == DECL_K_size ? 0 : 1, hi = 100000;
        else if (key == DECL_K_burst)
            lo = 1;
        else if (key == DECL_K_inflight && o->kind == DECL_SINK)
            hi = UINT64_MAX / 2;
        if (!strcmp(text, "off") && key == DECL_K_inflight)
            v = 0;
        else if (milli_parse(text, UINT64_MAX, &v) || v % 1000 || v / 1000 < lo || v / 1000 > hi)
            return key == DECL_K_weight ? "a weight is a whole number from 1 to 1000"
                   : key == DECL_K_burst ? "a burst is a whole number from 1 to 1000000"
                   : key == DECL_K_inflight ? "an in-flight cap is a whole number (0 or off: none)"
                                            : "a pool's size, min and max are whole numbers up to 100000";
        else
            v /= 1000;
        if (key == DECL_K_size)
            o->size = v;
        else if (key == DECL_K_weight)
            o->weight = v;
        else if (key == DECL_K_burst)
            o->burst = v;
        else if (key == DECL_K_inflight)
            o->inflight = v;
        else if (key == DECL_K_min)
            o->min = v;
        else
            o->max = v;
        return NULL;
    }
    case DECL_BOOL: {
        static const char *const words[] = {"no", "yes", "off", "on", "false", "true"};
        int i = 0;
        while (i < 6 && strcmp(text, words[i]))
            i++;
        if (i == 6)
            return "a yes or no (on, off)";
        if (key == DECL_K_each)
            o->each = i % 2;
        else if (key == DECL_K_autoscale)
            o->autoscale = i % 2;
        else
            o->paused = i % 2;
        return NULL;
    }
    default:
        if (strcmp(text, "tag") && strcmp(text, "fifo"))
            return "a level is served fair by tag (tag) or in order (fifo)";
        o->fair = !strcmp(text, "tag");
        return NULL;
    }
}

const char *decl_value_finish(decl_obj *o)
{
    unsigned base = DECL_MAX_WINDOWS;
    for (unsigned i = 0; i < o->nwin && base == DECL_MAX_WINDOWS; i++)
        if (o->win[i].count_milli && o->win[i].period_ms == 1000)
            base = i;
    if (base != DECL_MAX_WINDOWS && base > 0) { /* the limit's rate first, the others in their order */
        rl_window w = o->win[base];
        memmove(&o->win[1], &o->win[0], base * sizeof w);
        o->win[0] = w;
    }
    if (o->nwin == 1 && !o->win[0].count_milli)
        o->nwin = 0; /* off */
    if (o->nwin && o->win[0].period_ms == 1000 && o->win[0].burst) {
        if (!(o->set & 1u << DECL_K_burst))
            o->key_line[DECL_K_burst] = o->key_line[DECL_K_max_rate];
        o->set |= 1u << DECL_K_burst; /* RATE:BURST says the limit's burst */
        o->burst = o->win[0].burst;
        o->win[0].burst = 0;
    }
    unsigned others = o->nwin && o->win[0].period_ms == 1000 ? o->nwin - 1 : o->nwin;
    if (others > DECL_MAX_WINDOWS - 1)
        return "a limit has at most 3 windows besides its per-second one";
    if ((o->set & 1u << DECL_K_burst) && o->kind == DECL_TAG && (o->set & 1u << DECL_K_max_rate) &&
        !(o->nwin && o->win[0].period_ms == 1000))
        return "a tag's burst needs a per-second rate (max-rate = N)";
    return NULL;
}

void decl_value_text(const decl_obj *o, int key, char *buf, size_t size)
{
    char a[48], p[32];
    buf[0] = '\0';
    switch (key) {
    case DECL_K_deadline: duration_text(o->deadline_ms, buf, size); return;
    case DECL_K_aging: duration_text(o->aging_ms, buf, size); return;
    case DECL_K_target_wait: duration_text(o->target_wait_ms, buf, size); return;
    case DECL_K_min_rate:
        if (o->min_rate_milli)
            milli_text(o->min_rate_milli, buf, size);
        else
            snprintf(buf, size, "off");
        return;
    case DECL_K_max_rate: {
        size_t at = 0;
        if (!o->nwin)
            snprintf(buf, size, "off");
        for (unsigned i = 0; i < o->nwin && at < size; i++) {
            const rl_window *w = &o->win[i];
            milli_text(w->count_milli, a, sizeof a);
            period_text(w->period_ms, p, sizeof p);
            int n = i == 0 && w->period_ms == 1000 ? snprintf(buf + at, size - at, "%s", a)
                    : snprintf(buf + at, size - at, "%s%s/%s:%" PRIu32, i ? "\n" : "", a, p, w->burst ? w->burst : 1);
            at += n > 0 ? (size_t)n : 0;
        }
        return;
    }
    case DECL_K_size: snprintf(buf, size, "%" PRIu64, o->size); return;
    case DECL_K_weight: snprintf(buf, size, "%" PRIu64, o->weight); return;
    case DECL_K_burst: snprintf(buf, size, "%" PRIu64, o->burst ? o->burst : 1); return;
    case DECL_K_inflight: snprintf(buf, size, "%" PRIu64, o->inflight); return;
    case DECL_K_min: snprintf(buf, size, "%" PRIu64, o->min); return;
    case DECL_K_max: snprintf(buf, size, "%" PRIu64, o->max); return;
    case DECL_K_each: snprintf(buf, size, "%s", o->each ? "yes" : "no"); return;
    case DECL_K_autoscale: snprintf(buf, size, "%s", o->autoscale ? "on" : "off"); return;
    case DECL_K_paused: snprintf(buf, size, "%s", o->paused ? "yes" : "no"); return;
    case DECL_K_fair: snprintf(buf, size, "%s", o->fair ? "tag" : "fifo"); return;
    default: return;
    }
}

/* plain tells whether a name may stand unquoted in a section header. */
static int plain(const char *s, size_t len)
{
    if (!len || s[0] == ' ' || s[0] == '"' || s[len - 1] == ' ')
        return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f || strchr("[]\"\\;#=", s[i]))
            return 0;
    return 1;
}

void decl_section_text(const decl_obj *o, const char *level_name, char *buf, size_t size)
{
    static const char *const kinds[] = {"sink", "level", "pool", "tag"};
    if (o->kind == DECL_SINK) {
        snprintf(buf, size, "[sink]");
        return;
    }
    const char *name = o->kind == DECL_LEVEL ? level_name : o->name;
    size_t len = o->kind == DECL_LEVEL ? strlen(name) : o->name_len;
    int at = snprintf(buf, size, "[%s ", kinds[o->kind]);
    if (o->kind != DECL_TAG && plain(name, len)) {
        snprintf(buf + at, size - at, "%.*s]", (int)len, name);
        return;
    }
    size_t n = (size_t)at;
    buf[n++] = '"';
    for (size_t i = 0; i < len && n + 6 < size; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c == '"' || c == '\\')
            n += (size_t)snprintf(buf + n, size - n, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            n += (size_t)snprintf(buf + n, size - n, "\\x%02x", c);
        else
            buf[n++] = (char)c;
    }
    snprintf(buf + n, size - n, "\"]");
}
