/*
 * cli_text.c - the text the `sluice` command reads and writes, but for
 * tables (cli_table.c).
 *
 * Messages. Every line on standard error starts with "sluice: " and the
 * command's name, so that a script's log says who complained. A line is
 * written with standard error locked, so lines from consume's worker threads
 * never interleave.
 *
 * Values. Command-line numbers are decimal and must be whole: "12x", " 12"
 * and "+12" are refused, not read as 12. A duration may carry a unit (500ms,
 * 30s, 5m or 5min, 1h, 1d); a plain number is in the option's own unit, as
 * its help says (milliseconds for --timeout, --delay, --ttl, --idle-exit,
 * --http-timeout; seconds for the rest). Seconds and rates are decimal too,
 * never floating point, so "0.1" is exactly 100 ms, or 100 thousandths of a
 * unit per second (the broker keeps both in thousandths); precision finer
 * than that is refused rather than rounded away.
 */
#include "cli_text.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- messages ---- */

static void vsay(const char *cmd, const char *fmt, va_list ap, bool hint)
{
    flockfile(stderr);
    fprintf(stderr, "sluice: %s%s", cmd ? cmd : "", cmd ? ": " : "");
    vfprintf(stderr, fmt, ap);
    if (hint)
        fprintf(stderr, "\nTry 'sluice %s%s--help' for more information.", cmd ? cmd : "",
                cmd ? " " : "");
    fputc('\n', stderr);
    funlockfile(stderr);
}

void cli_text_say(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(cmd, fmt, ap, false);
    va_end(ap);
}

int cli_text_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(cmd, fmt, ap, true);
    va_end(ap);
    return CLI_TEXT_EXIT_USAGE;
}

int cli_text_option_error(const char *cmd, int ch, char **argv)
{
    const char *arg = argv[optind - 1];
    if (optopt > 0 && optopt < 256 && strncmp(arg, "--", 2) != 0)
        return cli_text_usage_error(
            cmd, ch == ':' ? "option '-%c' needs an argument" : "unknown option '-%c'", optopt);
    return cli_text_usage_error(
        cmd, ch == ':' ? "option '%s' needs an argument" : "unknown option '%s'", arg);
}

int cli_text_option_allowed(const char *cmd, int ch, const int *allowed, const struct option *all, char **argv)
{
    if (ch == '?' || ch == ':')
        return cli_text_option_error(cmd, ch, argv);
    bool ok = ch == 'h';
    for (const int *a = allowed; *a && !ok; a++)
        ok = *a == ch;
    if (ok)
        return 0;
    const struct option *opt = all;
    while (opt->name && opt->val != ch)
        opt++;
    return cli_text_usage_error(cmd, "this command takes no --%s", opt->name ? opt->name : "?");
}

const char *cli_text_strerror(int err)
{
    static _Thread_local char buf[128];
    return strerror_r(err, buf, sizeof buf); /* the GNU variant: it returns the text */
}

/* ---- reading values ---- */

bool cli_text_number_parse(const char *text, long min, long max, long *out)
{
    char *end;
    if (!(text[0] >= '0' && text[0] <= '9') && !(text[0] == '-' && min < 0))
        return false;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

bool cli_text_u64_parse(const char *text, uint64_t *out)
{
    char *end;
    if (!(text[0] >= '0' && text[0] <= '9'))
        return false;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

/* milli_parse reads a decimal such as "30", "0.5" or ".25" into thousandths:
 * a whole part of at most max_whole, at most three decimals. */
static bool milli_parse(const char *text, uint64_t max_whole, uint64_t *out)
{
    uint64_t whole = 0, frac = 0;
    size_t i = 0, digits = 0;
    for (; text[i] >= '0' && text[i] <= '9'; i++, digits++) {
        whole = whole * 10 + (uint64_t)(text[i] - '0');
        if (whole > max_whole)
            return false;
    }
    if (text[i] == '.') {
        unsigned scale = 100;
        for (i++; text[i] >= '0' && text[i] <= '9'; i++, digits++) {
            if (scale == 0 && text[i] != '0')
                return false; /* finer than a thousandth */
            frac += (uint64_t)(text[i] - '0') * scale;
            scale /= 10;
        }
    }
    if (digits == 0 || text[i] != '\0')
        return false;
    *out = whole * 1000 + frac;
    return true;
}

bool cli_text_duration_parse(const char *text, uint64_t unit_ms, bool allow_off, uint64_t max_ms,
                             uint64_t *ms)
{
    static const struct {
        const char *suffix;
        uint64_t ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"min", 60000}, {"h", 3600000}, {"d", 86400000}};
    if (allow_off && strcmp(text, "off") == 0) {
        *ms = 0;
        return true;
    }
    size_t len = strlen(text), num = len;
    while (num > 0 && text[num - 1] >= 'a' && text[num - 1] <= 'z')
        num--;
    if (num < len) {
        size_t i = 0;
        while (i < sizeof units / sizeof units[0] && strcmp(text + num, units[i].suffix) != 0)
            i++;
        if (i == sizeof units / sizeof units[0])
            return false;
        unit_ms = units[i].ms;
    }
    char digits[40];
    uint64_t milli;
    if (num == 0 || num >= sizeof digits)
        return false;
    memcpy(digits, text, num);
    digits[num] = '\0';
    if (!milli_parse(digits, max_ms, &milli) || milli > UINT64_MAX / unit_ms)
        return false;
    uint64_t total = milli * unit_ms; /* thousandths of a millisecond */
    if (total % 1000 || total / 1000 > max_ms)
        return false; /* finer than a millisecond, or too long */
    *ms = total / 1000;
    return true;
}

bool cli_text_seconds_parse(const char *text, bool allow_off, uint64_t *ms)
{
    return cli_text_duration_parse(text, 1000, allow_off, (uint64_t)CLI_TEXT_SECONDS_MAX * 1000, ms);
}

bool cli_text_rate_parse(const char *text, uint64_t *milli)
{
    if (strcmp(text, "off") == 0) {
        *milli = 0;
        return true;
    }
    return milli_parse(text, CLI_TEXT_RATE_MAX, milli);
}

bool cli_text_limit_parse(const char *text, uint64_t max, uint64_t *out)
{
    if (strcmp(text, "off") == 0) {
        *out = 0;
        return true;
    }
    return cli_text_u64_parse(text, out) && *out <= max;
}

int cli_text_line_read(FILE *in, char **buf, size_t *cap, size_t *len, size_t max_bytes)
{
    int ch = EOF;
    *len = 0;
    while ((ch = getc_unlocked(in)) != EOF && ch != '\n') {
        if (*len == max_bytes)
            return -1;
        if (*len == *cap) {
            size_t grown = *cap ? *cap * 2 : 4096;
            if (grown > max_bytes)
                grown = max_bytes;
            char *p = realloc(*buf, grown);
            if (!p)
                return -2;
            *buf = p;
            *cap = grown;
        }
        (*buf)[(*len)++] = (char)ch;
    }
    if (ferror(in))
        return -2;
    return ch == '\n' || *len ? 1 : 0;
}

/* ---- writing values ---- */

void cli_text_age_format(uint64_t ms, char *buf, size_t size)
{
    uint64_t s = ms / 1000;
    if (ms < 60000) {
        uint64_t tenths = ms / 100;
        if (tenths % 10)
            snprintf(buf, size, "%" PRIu64 ".%" PRIu64 "s", tenths / 10, tenths % 10);
        else
            snprintf(buf, size, "%" PRIu64 "s", s);
    } else if (s < 3600) {
        snprintf(buf, size, "%" PRIu64 "m%" PRIu64 "s", s / 60, s % 60);
    } else if (s < 86400) {
        snprintf(buf, size, "%" PRIu64 "h%" PRIu64 "m", s / 3600, s % 3600 / 60);
    } else {
        snprintf(buf, size, "%" PRIu64 "d%" PRIu64 "h", s / 86400, s % 86400 / 3600);
    }
}

void cli_text_eta_format(uint64_t ms, char *buf, size_t size)
{
    if (ms == 0)
        snprintf(buf, size, "-");
    else
        cli_text_age_format(ms > UINT64_MAX - 99 ? ms : (ms + 99) / 100 * 100, buf, size);
}

/* milli_format writes v / 1000 exactly, without trailing zeros, then unit. */
static void milli_format(uint64_t v, const char *unit, char *buf, size_t size)
{
    uint64_t frac = v % 1000;
    if (frac == 0)
        snprintf(buf, size, "%" PRIu64 "%s", v / 1000, unit);
    else if (frac % 100 == 0)
        snprintf(buf, size, "%" PRIu64 ".%" PRIu64 "%s", v / 1000, frac / 100, unit);
    else if (frac % 10 == 0)
        snprintf(buf, size, "%" PRIu64 ".%02" PRIu64 "%s", v / 1000, frac / 10, unit);
    else
        snprintf(buf, size, "%" PRIu64 ".%03" PRIu64 "%s", v / 1000, frac, unit);
}

void cli_text_seconds_format(uint64_t ms, char *buf, size_t size)
{
    milli_format(ms, "s", buf, size);
}

void cli_text_milli_format(uint64_t milli, char *buf, size_t size)
{
    milli_format(milli, "", buf, size);
}

void cli_text_rate_format(uint64_t milli, const char *off_text, char *buf, size_t size)
{
    if (milli)
        milli_format(milli, "/s", buf, size);
    else
        snprintf(buf, size, "%s", off_text);
}

/* ---- text that came from clients ---- */

/* utf8_char returns the length (2..4) of the valid UTF-8 character at p
 * (len bytes available) and its code point, or 0 when p does not start one:
 * no overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_char(const unsigned char *p, size_t len, uint32_t *cp)
{
    size_t n;
    uint32_t c;
    if (p[0] >= 0xC2 && p[0] <= 0xDF)
        n = 2, c = p[0] & 0x1Fu;
    else if (p[0] >= 0xE0 && p[0] <= 0xEF)
        n = 3, c = p[0] & 0x0Fu;
    else if (p[0] >= 0xF0 && p[0] <= 0xF4)
        n = 4, c = p[0] & 0x07u;
    else
        return 0;
    if (n > len)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        c = c << 6 | (p[i] & 0x3Fu);
    }
    if ((n == 3 && c < 0x800) || (n == 4 && c < 0x10000) || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return n;
}

/* shown_as says how the byte or character at p is shown: 0 as it is (*n
 * bytes), or the escape written into esc (for its first byte only when
 * *n is 1). */
static int shown_as(const unsigned char *p, size_t len, size_t *n, char esc[8])
{
    uint32_t cp = 0;
    *n = 1;
    if (p[0] >= 0x20 && p[0] < 0x7f)
        return 0;
    if (p[0] >= 0x80) {
        size_t k = utf8_char(p, len, &cp);
        bool control = cp < 0xA0 || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
        if (k && !control) {
            *n = k;
            return 0;
        }
        if (k)
            *n = k; /* a control character: each of its bytes escaped */
    }
    switch (p[0]) {
    case '\n': strcpy(esc, "\\n"); break;
    case '\t': strcpy(esc, "\\t"); break;
    case '\r': strcpy(esc, "\\r"); break;
    case 0x1b: strcpy(esc, "\\e"); break;
    default: esc[0] = '\0'; break;
    }
    return 1;
}

const char *cli_text_safe(const char *s, size_t len, char *buf, size_t size)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t used = 0;
    for (size_t i = 0; i < len;) {
        size_t n;
        char esc[8];
        if (!shown_as(p + i, len - i, &n, esc)) {
            if (used + n >= size)
                break;
            memcpy(buf + used, p + i, n);
            used += n, i += n;
            continue;
        }
        /* escaped: one \xHH per byte, or the short form of a control */
        size_t need = esc[0] ? strlen(esc) : 4 * n;
        if (used + need >= size)
            break;
        if (esc[0]) {
            memcpy(buf + used, esc, need);
        } else {
            for (size_t k = 0; k < n; k++)
                snprintf(buf + used + 4 * k, 5, "\\x%02x", p[i + k]);
        }
        used += need, i += n;
    }
    buf[used] = '\0';
    return buf;
}

void cli_text_preview(const void *p, size_t len, bool json, char *buf, size_t size)
{
    if (!json) {
        cli_text_safe(p, len, buf, size);
        return;
    }
    char *text = malloc(size);
    if (!text) {
        buf[0] = '\0';
        return;
    }
    cli_text_safe(p, len, text, size);
    size_t used = 0;
    for (const char *t = text; *t && used + 2 < size; t++) {
        if (*t == '"' || *t == '\\')
            buf[used++] = '\\';
        buf[used++] = *t;
    }
    buf[used] = '\0';
    free(text);
}

char *cli_text_safe_dup(const char *s, size_t len)
{
    size_t size = len * 4 + 1;
    char *buf = malloc(size);
    return buf ? (char *)cli_text_safe(s, len, buf, size) : NULL;
}

bool cli_text_is_safe(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t len = strlen(s);
    for (size_t i = 0; i < len;) {
        size_t n;
        char esc[8];
        if (shown_as(p + i, len - i, &n, esc))
            return false;
        i += n;
    }
    return true;
}

void cli_text_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}
