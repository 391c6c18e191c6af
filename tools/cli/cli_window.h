/*
 * cli_window.h - the windows of a rate limit, as `sluice` reads and shows
 * them: "10" or "10/s" (per second), "500/min", "8/10s", each optionally
 * ":BURST", or "off".
 */
#ifndef SLUICE_CLI_WINDOW_H
#define SLUICE_CLI_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

/* The windows one command line gives a limit (--max-rate, repeatable). */
typedef struct cli_window_set {
    unsigned n;
    bool given;                        /* any --max-rate at all */
    bool off;                          /* "off": no limit */
    bool burst_given[SL_MAX_WINDOWS];  /* written as ":BURST" */
    sl_window w[SL_MAX_WINDOWS];
} cli_window_set;

/* CLI_WINDOW_SYNTAX is the syntax, for usage errors. */
#define CLI_WINDOW_SYNTAX                                                                          \
    "expected units per second such as 20000 or 0.5, or COUNT/PERIOD such as 500/min or 8/10s "  \
    "(periods ms, s, min, h, d), optionally :BURST; or off"

/* cli_window_add reads one window from text into set. Returns false for
 * text that is not a window, "off" beside another window, or more than
 * SL_MAX_WINDOWS windows. */
bool cli_window_add(cli_window_set *set, const char *text);

/* cli_window_finish gives each window without ":BURST" its burst: burst
 * (--burst; SL_UNCHANGED when not given: 0, the limit keeps its burst) for
 * a per-second window, its count (rounded up) for any other period. Returns false when burst was
 * given but no window is per second and none took it. */
bool cli_window_finish(cli_window_set *set, uint64_t burst);

/* cli_window_format writes w as it is read: "10/s", "500/min:500",
 * "8/10s:8"; the burst is left out when with_burst is false. */
void cli_window_format(const sl_window *w, bool with_burst, char *buf, size_t size);

/* cli_window_list_format writes a limit's windows joined by "+" (the first,
 * a per-second window shown in its own columns, without its burst), or
 * off_text when there is none. */
void cli_window_list_format(const sl_window *w, unsigned n, const char *off_text, char *buf, size_t size);

/* cli_window_json prints ,"windows":[{...},...] for w[0..n). */
void cli_window_json(const sl_window *w, unsigned n);

#endif /* SLUICE_CLI_WINDOW_H */
