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

/* SL_ASSERT aborts with file and line when an invariant is broken. */
#define SL_ASSERT(cond) \
    do { if (!(cond)) log_die(__FILE__, __LINE__, #cond); } while (0)
_Noreturn void log_die(const char *file, int line, const char *what);

#endif /* SLUICE_LOG_H */
