/*
 * log.h - leveled logging to stderr for the broker (and the tests that link
 * its modules).
 *
 * One line per event, written with one write(2) and cut at 1 KiB:
 * "2026-11-21T10:00:00.123Z sluiced[pid] LEVEL module: text". The timestamp
 * is the wall clock, read here: the one clock read outside the loop, and it
 * only labels lines. Pure modules (meter, rl, disp, breaker, tmr) do not log;
 * they return what happened and their caller logs it.
 *
 * SL_ASSERT logs the broken invariant with file and line and aborts: it is
 * for broken invariants only, never for bad input from the network (that gets
 * an error reply and a counter).
 */
#ifndef SLUICE_LOG_H
#define SLUICE_LOG_H

#include <stdint.h>

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

/* log_set_level sets the most verbose level that is printed (default INFO). */
void log_set_level(enum log_level lvl);

/* log_open_file sends the lines that follow to the file at path (appended;
 * created 0640), closing the file used before, if any: called at start and
 * again on SIGHUP, to follow a log rotation. Returns 0, or -1 (logged where
 * lines went so far, which they keep doing). */
int log_open_file(const char *path);

/* log_parse_level maps "error", "warn", "info" or "debug" to a level; returns
 * -1 for anything else. */
int log_parse_level(const char *name);

/* log_enabled tells whether lvl would be printed. */
int log_enabled(enum log_level lvl);

void log_msg(enum log_level lvl, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_error(mod, ...) log_msg(LOG_ERROR, mod, __VA_ARGS__)
#define log_warn(mod, ...)  log_msg(LOG_WARN, mod, __VA_ARGS__)
#define log_info(mod, ...)  log_msg(LOG_INFO, mod, __VA_ARGS__)
#define log_debug(mod, ...) do { if (log_enabled(LOG_DEBUG)) log_msg(LOG_DEBUG, mod, __VA_ARGS__); } while (0)

/* A warning that a condition can repeat on every loop pass is printed at
 * most once per interval; the lines held back are counted and named in the
 * next one. Time is the caller's (the loop's monotonic clock). */
typedef struct log_limit {
    uint64_t next_ns;    /* the next line may go out at this time */
    uint64_t held_back;  /* lines suppressed since the last one printed */
} log_limit;

/* log_limit_pass tells whether a line may be printed now (1: and *held_back
 * receives how many were suppressed before it) or not (0: counted). */
int log_limit_pass(log_limit *l, uint64_t now_ns, uint64_t every_ns, uint64_t *held_back);

/* SL_ASSERT aborts with file and line when an invariant is broken. */
#define SL_ASSERT(cond) \
    do { if (!(cond)) log_die(__FILE__, __LINE__, #cond); } while (0)
_Noreturn void log_die(const char *file, int line, const char *what);

#endif /* SLUICE_LOG_H */
