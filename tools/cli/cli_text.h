/*
 * cli_text.h - the text the `sluice` command reads and writes: messages on
 * standard error, numbers and durations on the command line, lines of input,
 * and JSON strings on standard output (tables are cli_table.c's).
 *
 * Nothing here knows about the broker. The message functions may be called
 * from any thread: each writes its line in one piece. The rest keep no state
 * beyond what their arguments own.
 */
#ifndef SLUICE_CLI_TEXT_H
#define SLUICE_CLI_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_TEXT_EXIT_FAILURE 1 /* the broker failed or refused; or I/O failed */
#define CLI_TEXT_EXIT_USAGE   2 /* a usage error */

/* ---- messages on standard error ---- */

/* cli_text_say writes "sluice: CMD: " (or "sluice: " when cmd is NULL), the
 * formatted message and a newline, as one line. */
void cli_text_say(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* cli_text_usage_error says the message followed by a hint at --help, and
 * returns CLI_TEXT_EXIT_USAGE. */
int cli_text_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* cli_text_option_error reports what getopt_long rejected (it returned ch, ':'
 * for a missing argument) and returns CLI_TEXT_EXIT_USAGE. */
int cli_text_option_error(const char *cmd, int ch, char **argv);

/* cli_text_option_allowed checks what getopt_long returned (ch) for a
 * command that shares one option table (all) among several subcommands:
 * 0 when ch is 'h' or in allowed (0-terminated), else the usage error it
 * printed ("this command takes no --NAME", or option_error's). */
struct option;
int cli_text_option_allowed(const char *cmd, int ch, const int *allowed, const struct option *all, char **argv);

/* cli_text_strerror returns the text for an errno value; unlike strerror it may
 * be called from any thread. The text stays valid until the calling thread
 * calls it again. */
const char *cli_text_strerror(int err);

/* ---- reading values ---- */

/* cli_text_number_parse reads a decimal integer in [min, max], and nothing else. */
bool cli_text_number_parse(const char *text, long min, long max, long *out);

/* cli_text_u64_parse reads a decimal unsigned 64-bit integer, and nothing else. */
bool cli_text_u64_parse(const char *text, uint64_t *out);

/* cli_text_duration_parse reads a duration into milliseconds: a decimal
 * ("30", "0.5", ".25") with a unit (ms, s, m or min, h, d), or without one
 * in unit_ms (1 for an option in milliseconds, 1000 for one in seconds);
 * whole milliseconds, at most max_ms. "off" reads as 0 when allow_off. */
bool cli_text_duration_parse(const char *text, uint64_t unit_ms, bool allow_off, uint64_t max_ms,
                             uint64_t *ms);

/* cli_text_seconds_parse reads a duration whose plain numbers are seconds,
 * such as "30", "0.5", "500ms" or "5m", into milliseconds: at most
 * CLI_TEXT_SECONDS_MAX seconds, whole milliseconds (the broker keeps
 * milliseconds). "off" reads as 0 when allow_off. */
#define CLI_TEXT_SECONDS_MAX 1000000000 /* about 31 years */
bool cli_text_seconds_parse(const char *text, bool allow_off, uint64_t *ms);

/* cli_text_rate_parse reads a rate in units per second, such as "20000",
 * "0.5" or ".25", into thousandths (the broker's rate_milli): at most
 * CLI_TEXT_RATE_MAX per second, at most three decimals. "off" reads as 0. */
#define CLI_TEXT_RATE_MAX 1000000000 /* a billion units a second */
bool cli_text_rate_parse(const char *text, uint64_t *milli);

/* cli_text_limit_parse reads a whole number up to max, such as a burst or an
 * in-flight cap; "off" reads as 0. */
bool cli_text_limit_parse(const char *text, uint64_t max, uint64_t *out);

/* cli_text_line_read reads one line of in, without its '\n', into *buf (grown up
 * to max_bytes + 1). Returns 1 for a line, 0 at the end of input, -1 for a
 * line longer than max_bytes (the rest of it is not read), -2 for a read or
 * allocation error (errno tells). */
int cli_text_line_read(FILE *in, char **buf, size_t *cap, size_t *len, size_t max_bytes);

/* ---- writing values ---- */

/* cli_text_age_format writes an age or uptime, rounded for reading at a glance:
 * 0s, 1.2s, 3m4s, 5h6m or 7d8h. */
void cli_text_age_format(uint64_t ms, char *buf, size_t size);

/* cli_text_eta_format writes an expected drain time like an age, rounded up
 * to a tenth of a second so that a short one does not read as 0s; "-" for 0,
 * which means none or unknown. */
void cli_text_eta_format(uint64_t ms, char *buf, size_t size);

/* cli_text_seconds_format writes a setting exactly, in the unit it is given in:
 * 0.5s, 30s, 0.025s. */
void cli_text_seconds_format(uint64_t ms, char *buf, size_t size);

/* cli_text_milli_format writes a value kept in thousandths exactly, without
 * a unit: 20000, 0.5, 12.345. */
void cli_text_milli_format(uint64_t milli, char *buf, size_t size);

/* cli_text_rate_format writes a rate kept in thousandths as "0.5/s", or
 * off_text when it is 0 (no limit). */
void cli_text_rate_format(uint64_t milli, const char *off_text, char *buf, size_t size);

/* ---- text that came from clients ---- */

/* cli_text_safe writes the len bytes at s into buf (size bytes, at least 5,
 * always NUL-terminated) as text a terminal shows without acting on it:
 * printable ASCII and whole, valid UTF-8 characters as they are; \n, \t,
 * \r and \e for those controls; any other control byte, DEL, a C1 control
 * (U+0080..U+009F), a bidirectional override (U+202A..U+202E,
 * U+2066..U+2069) and every byte of invalid UTF-8 as \xHH (one per byte).
 * A backslash stays as it is, so safe text is its own escape (escaping
 * twice changes nothing). Text that does not fit is cut at a whole
 * character or escape. Returns buf. Every table cell (cli_table.c) and
 * every message that shows a tag, a pool name, a reason, a body or the
 * broker's words goes through it. */
const char *cli_text_safe(const char *s, size_t len, char *buf, size_t size);

/* cli_text_preview writes the start of a message body (len bytes at p) into
 * buf (size bytes) as cli_text_safe shows it, for a terminal; with json, as
 * the inside of a JSON string: the same text with '"' and '\\' escaped, so
 * that what a JSON reader gets is what the terminal shows. */
void cli_text_preview(const void *p, size_t len, bool json, char *buf, size_t size);

/* cli_text_safe_dup returns a malloc'ed cli_text_safe copy of s (len
 * bytes), or NULL when out of memory. */
char *cli_text_safe_dup(const char *s, size_t len);

/* cli_text_is_safe tells whether cli_text_safe would leave the NUL-terminated
 * s as it is. */
bool cli_text_is_safe(const char *s);

/* cli_text_json_string writes s to standard output as a JSON string. */
void cli_text_json_string(const char *s);

#endif /* SLUICE_CLI_TEXT_H */
