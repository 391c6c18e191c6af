/*
 * cli_window.c - reading and writing the windows of a rate limit.
 *
 * A window is "COUNT per PERIOD, BURST at once". On the command line:
 *   10, 0.5        per second (the rate every limit has always taken)
 *   10/s, 500/min  COUNT/PERIOD, the period a unit (ms, s, min, h, d) or a
 *   8/10s          whole number of them
 *   ...:BURST      any of the above with its burst
 *   off            no limit (alone)
 * COUNT is decimal with at most 3 decimals, as every rate (cli_text.c). A
 * per-second window without ":BURST" takes --burst, or keeps the burst the
 * limit has when --burst is not given, as a rate always has; a window over another period takes its count as its
 * burst: "500/min" lets 500 go at once, then refills at 500 a minute, so
 * over any span tau it passes at most 500/min x tau + 500. What is shown
 * reads back as the same window.
 */
#include "cli_window.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli_text.h"

#define MS_PER_DAY UINT64_C(86400000)

static const struct {
    const char *name;
    uint64_t ms;
} units[] = {{"ms", 1}, {"s", 1000}, {"sec", 1000}, {"min", 60000}, {"m", 60000},
             {"h", 3600000}, {"hour", 3600000}, {"d", MS_PER_DAY}, {"day", MS_PER_DAY}};

/* period_parse reads "[K]UNIT" into ms. */
static bool period_parse(const char *text, uint64_t *ms)
{
    uint64_t k = 0;
    size_t digits = 0;
    while (text[digits] >= '0' && text[digits] <= '9') {
        if (k > MS_PER_DAY)
            return false;
        k = k * 10 + (uint64_t)(text[digits++] - '0');
    }
    if (digits == 0)
        k = 1;
    if (k == 0)
        return false;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(text + digits, units[i].name) == 0) {
            if (k > MS_PER_DAY / units[i].ms)
                return false;
            *ms = k * units[i].ms;
            return true;
        }
    return false;
}

bool cli_window_add(cli_window_set *set, const char *text)
{
    char buf[64];
    uint64_t count, period = 1000, burst = 0;
    bool burst_given = false;
    if (strlen(text) >= sizeof buf)
        return false;
    if (strcmp(text, "off") == 0) {
        if (set->n)
            return false;
        set->given = set->off = true;
        return true;
    }
    if (set->off || set->n == SL_MAX_WINDOWS)
        return false;
    strcpy(buf, text);
    char *colon = strchr(buf, ':');
    if (colon) {
        *colon = '\0';
        if (!cli_text_u64_parse(colon + 1, &burst) || burst == 0 || burst > UINT32_MAX)
            return false;
        burst_given = true;
    }
    char *slash = strchr(buf, '/');
    if (slash) {
        *slash = '\0';
        if (!period_parse(slash + 1, &period))
            return false;
    }
    if (strcmp(buf, "off") == 0 || !cli_text_rate_parse(buf, &count) || count == 0)
        return false;
    set->given = true;
    set->burst_given[set->n] = burst_given;
    set->w[set->n++] = (sl_window){.count_milli = count, .period_ms = period, .burst = (uint32_t)burst};
    return true;
}

bool cli_window_finish(cli_window_set *set, uint64_t burst)
{
    bool taken = false;
    for (unsigned i = 0; i < set->n; i++) {
        sl_window *w = &set->w[i];
        if (set->burst_given[i])
            continue;
        if (w->period_ms == 1000) { /* 0: the limit keeps the burst it has */
            w->burst = burst == SL_UNCHANGED ? 0 : burst == 0 ? 1 : (uint32_t)burst;
            taken = true;
        } else {
            uint64_t b = (w->count_milli + 999) / 1000;
            w->burst = b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
        }
    }
    return burst == SL_UNCHANGED || taken || set->off;
}

/* period_format writes "s", "min", "10s", "250ms", ... */
static void period_format(uint64_t ms, char *buf, size_t size)
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

void cli_window_format(const sl_window *w, bool with_burst, char *buf, size_t size)
{
    char count[32], period[32];
    cli_text_milli_format(w->count_milli, count, sizeof count);
    period_format(w->period_ms ? w->period_ms : 1000, period, sizeof period);
    if (with_burst)
        snprintf(buf, size, "%s/%s:%" PRIu32, count, period, w->burst ? w->burst : 1);
    else
        snprintf(buf, size, "%s/%s", count, period);
}

void cli_window_list_format(const sl_window *w, unsigned n, const char *off_text, char *buf, size_t size)
{
    size_t at = 0;
    snprintf(buf, size, "%s", n ? "" : off_text);
    for (unsigned i = 0; i < n && at < size; i++) {
        char one[80];
        /* a per-second first window is the rate whose burst has its own column */
        cli_window_format(&w[i], !(i == 0 && w[i].period_ms == 1000), one, sizeof one);
        int k = snprintf(buf + at, size - at, "%s%s", i ? "+" : "", one);
        at += k > 0 ? (size_t)k : 0;
    }
}

void cli_window_json(const sl_window *w, unsigned n)
{
    printf(",\"windows\":[");
    for (unsigned i = 0; i < n; i++)
        printf("%s{\"count_milli\":%" PRIu64 ",\"period_ms\":%" PRIu64 ",\"burst\":%" PRIu32
               ",\"tokens_milli\":%" PRIu64 "}",
               i ? "," : "", w[i].count_milli, w[i].period_ms, w[i].burst, w[i].tokens_milli);
    printf("]");
}
