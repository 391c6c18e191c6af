/*
 * cli_top.c - `sluice top` and `sluice stats --watch [S]`.
 *
 * top is a full-screen view refreshed every second (--interval S): the
 * levels (depth, in flight, delayed, dead, oldest, and in/out/ack rates over
 * the last interval, ETA), the pools (size, members, in flight, rate,
 * recommended size) and the sink (rates, tokens, pause, breaker). It is
 * drawn with plain ANSI/VT100 sequences (alternate screen, home, clear to
 * end of line), which every terminal emulator and ssh session understands,
 * so there is no curses dependency; each frame is cut to the terminal's
 * size (TIOCGWINSZ, 80x24 when unknown), so an 80x24 terminal shows the
 * header, the sink and up to 16 levels and the pools that fit. Keys: q (or
 * Ctrl-C) quits. The terminal's modes are restored on every way out.
 *
 * stats --watch prints the ordinary stats table (or one JSON object per
 * line with --json) every S seconds after a line with the time, without any
 * escape sequence: for plain terminals, pipes and logs.
 *
 * Costs: three admin round trips per refresh (stats, pool list, sink show).
 */
#define _DEFAULT_SOURCE
#include "cli_top.h"

#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli_text.h"

/* `sluice top --help`; the layout is cli_core.h's */
const cli_core_help cli_top_help = {
    .summary = "a full-screen live view",
    .body =
        "  sluice top [--interval S]\n"
        "      A full-screen view of the broker, refreshed every S seconds (default\n"
        "      1; 0.5, 500ms, 2s): per level the ready, in-flight, delayed and dead\n"
        "      messages, the oldest's age, messages in, out and acknowledged per\n"
        "      second over the last interval, THROTTLED refusals and the ETA; each\n"
        "      pool's size, members, in-flight deliveries, rate and recommended\n"
        "      size; the sink's rates and breaker. Press q to quit. The title line\n"
        "      stays at the top on any terminal height. When the broker does not\n"
        "      answer, the title says \"disconnected, retrying\" and the view resumes\n"
        "      once it is back. Needs a terminal; for plain output use\n"
        "      'sluice stats --watch [S]'.\n",
    .examples =
        "  sluice top --interval 0.5                    twice a second\n",
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static void catch_signals(void)
{
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

/* seconds_ms reads "2", "0.5" or "500ms" as milliseconds within [100 ms, 1 h]. */
static int seconds_ms(const char *text, int *ms)
{
    uint64_t v;
    if (!cli_text_duration_parse(text, 1000, false, 3600000, &v) || v < 100)
        return -1;
    *ms = (int)v;
    return 0;
}

int cli_top_watch_take(const char *cmd, int argc, char **argv, int *interval_ms, long *count)
{
    *interval_ms = 0;
    *count = 0;
    int out = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            while (i < argc)
                argv[out++] = argv[i++];
            break;
        }
        if (!strcmp(argv[i], "--watch") || !strncmp(argv[i], "--watch=", 8)) {
            *interval_ms = 2000;
            const char *v = argv[i][7] == '=' ? argv[i] + 8 : NULL;
            if (!v && i + 1 < argc && argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9')
                v = argv[++i];
            if (v && seconds_ms(v, interval_ms))
                return -cli_text_usage_error(cmd, "--watch: '%s' is not a number of seconds from 0.1 to 3600", v);
            continue;
        }
        if (!strcmp(argv[i], "--count")) {
            if (i + 1 >= argc || !cli_text_number_parse(argv[i + 1], 1, 1000000000, count))
                return -cli_text_usage_error(cmd, "--count: expected a number from 1 to 1000000000");
            i++;
            continue;
        }
        argv[out++] = argv[i];
    }
    argv[out] = NULL;
    if (*count && !*interval_ms)
        return -cli_text_usage_error(cmd, "--count goes with --watch");
    return out;
}

int cli_top_watch(cli_core *g, const char *cmd, int interval_ms, long count, bool json, cli_top_print_fn print)
{
    catch_signals();
    for (long n = 0; !stop_flag && (!count || n < count); n++) {
        if (n)
            poll(NULL, 0, interval_ms); /* a signal ends the wait early */
        if (stop_flag)
            break;
        sl_stats st;
        sl_stats_ex ex;
        int rc = sl_stats_get_ex(g->c, &st, &ex);
        if (rc)
            return cli_core_broker_error(g, cmd, rc, "", NULL);
        if (!json) {
            char when[32];
            time_t now = time(NULL);
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&now));
            printf("%s-- %s, every %.1f s --\n", n ? "\n" : "", when, interval_ms / 1000.0);
        }
        if (print(&st, &ex, json)) {
            cli_text_say(cmd, "out of memory");
            return CLI_TEXT_EXIT_FAILURE;
        }
        int st_out = cli_core_output_done(cmd);
        if (st_out)
            return st_out;
    }
    return 0;
}

/* ---- top ---- */

typedef struct screen {
    char *buf;
    size_t len, cap;
    int rows, cols, row;
} screen;

/* line appends one line, cut to the screen's width, while rows are left. */
__attribute__((format(printf, 2, 3))) static void line(screen *s, const char *fmt, ...)
{
    if (s->row >= s->rows)
        return;
    char raw[512], text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    cli_text_safe(raw, strlen(raw), text, sizeof text); /* pool names are clients' text */
    size_t n = strlen(text);
    if (n >= (size_t)s->cols) /* the last column left free: no auto-wrap */
        n = s->cols > 1 ? (size_t)s->cols - 1 : 0;
    if (s->len + n + 16 > s->cap) {
        size_t cap = (s->cap + n + 16) * 2;
        char *p = realloc(s->buf, cap);
        if (!p)
            return;
        s->buf = p, s->cap = cap;
    }
    /* a newline before each line but the first, none after the last: the
     * bottom row never scrolls the screen, so the title stays on top */
    if (s->row)
        s->buf[s->len++] = '\n';
    memcpy(s->buf + s->len, text, n);
    s->len += n;
    memcpy(s->buf + s->len, "\033[K", 3); /* clear the rest of the line */
    s->len += 3;
    s->row++;
}

static double per_s(uint64_t now, uint64_t before, double dt)
{
    return dt > 0 && now >= before ? (double)(now - before) / dt : 0;
}

static void rate_text(double r, char *buf, size_t size)
{
    if (r >= 100000)
        snprintf(buf, size, "%.0fk", r / 1000);
    else if (r >= 100)
        snprintf(buf, size, "%.0f", r);
    else
        snprintf(buf, size, "%.1f", r);
}

static void count_text(uint64_t v, char *buf, size_t size)
{
    if (v >= 10000000)
        snprintf(buf, size, "%" PRIu64 "M", v / 1000000);
    else
        snprintf(buf, size, "%" PRIu64, v);
}

static void draw(screen *s, const char *endpoint, const sl_stats *st, const sl_stats *prev, double dt,
                 const sl_pool_info *pools, unsigned npools, const sl_sink_info *sink, int interval_ms)
{
    char up[32], a[32], b[32], c[32], d[32], e[32], f[32], h[32], i[32], j[32];
    cli_text_age_format(st->uptime_ms, up, sizeof up);
    line(s, "sluice top - %s  up %s  consumers %" PRIu64 "  every %.1fs  q: quit", endpoint, up, st->consumers,
         interval_ms / 1000.0);
    cli_text_rate_format(sink->rate_milli, "unlimited", a, sizeof a);
    cli_text_rate_format(sink->effective_rate_milli, "unlimited", b, sizeof b);
    line(s, "sink: rate %s, in use %s%s%s%s  in flight %" PRIu64 "  paused %s", a, b, sink->reason[0] ? " (" : "",
         sink->reason, sink->reason[0] ? ")" : "", sink->inflight, sink->paused_ms ? "yes" : "no");
    line(s, "breaker %s (%" PRIu64 " trips)  bad input %" PRIu64 "  failed sends %" PRIu64,
         sink->breaker[0] ? sink->breaker : "-", sink->breaker_trips, st->rx_bad, st->tx_failed);
    line(s, "%s", "");
    line(s, "%-8s %7s %6s %6s %6s %6s %6s %6s %6s %5s %6s", "LEVEL", "DEPTH", "INFL", "DELAY", "DEAD",
         "OLDEST", "IN/s", "OUT/s", "ACK/s", "THR", "ETA");
    for (unsigned l = 0; l < st->nlevels; l++) {
        const sl_level_stats *x = &st->level[l], *p = prev ? &prev->level[l] : x;
        count_text(x->depth, a, sizeof a);
        count_text(x->inflight, b, sizeof b);
        count_text(x->delayed, c, sizeof c);
        count_text(x->dead, d, sizeof d);
        if (x->depth)
            cli_text_age_format(x->oldest_ms, e, sizeof e);
        else
            snprintf(e, sizeof e, "-"); /* nothing ready */
        rate_text(per_s(x->enqueued, p->enqueued, dt), f, sizeof f);
        rate_text(per_s(x->dispatched, p->dispatched, dt), h, sizeof h);
        rate_text(per_s(x->acked, p->acked, dt), i, sizeof i);
        cli_text_eta_format(x->eta_ms, j, sizeof j);
        line(s, "%-8.8s %7s %6s %6s %6s %6s %6s %6s %6s %5" PRIu64 " %6s", x->name, a, b, c, d, e, f, h, i,
             x->throttled > 99999 ? (uint64_t)99999 : x->throttled, j);
    }
    line(s, "%s", "");
    line(s, "%-16s %6s %7s %6s %8s %6s  %s", "POOL", "SIZE", "MEMBERS", "INFL", "RATE/s", "REC", "STATE");
    if (!npools)
        line(s, "%s", "(no pools)");
    for (unsigned k = 0; k < npools; k++) {
        const sl_pool_info *p = &pools[k];
        if (p->size)
            snprintf(a, sizeof a, "%" PRIu32, p->size);
        else
            snprintf(a, sizeof a, "-");
        rate_text(p->rate_per_s, b, sizeof b);
        line(s, "%-16.16s %6s %7" PRIu32 " %6" PRIu32 " %8s %6" PRIu32 "  %s%s", p->name, a, p->members,
             p->inflight, b, p->recommended, p->paused ? "paused" : "running", p->autoscale ? ", autoscaled" : "");
    }
}

static struct termios saved_tio;
static int tio_saved;

static void restore_terminal(void)
{
    if (tio_saved)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
    fputs("\033[?25h\033[?1049l", stdout); /* cursor back, leave the alternate screen */
    fflush(stdout);
}

/* frame_show writes the frame in s from the top left corner and clears
 * what is below it. */
static void frame_show(const screen *s)
{
    fputs("\033[H", stdout);
    fwrite(s->buf, 1, s->len, stdout);
    fputs("\033[J", stdout);
    fflush(stdout);
}

int cli_top_main(cli_core *g, const char *cmd, int argc, char **argv)
{
    int interval_ms = 1000;
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
            return cli_core_help_show(g, cmd);
        }
        if (!strcmp(argv[k], "--interval") && k + 1 < argc) {
            if (seconds_ms(argv[++k], &interval_ms))
                return cli_text_usage_error(cmd, "--interval: '%s' is not a number of seconds from 0.1 to 3600",
                                            argv[k]);
            continue;
        }
        return cli_text_usage_error(cmd, "unexpected argument '%s'", argv[k]);
    }
    if (!isatty(STDOUT_FILENO))
        return cli_text_usage_error(cmd, "needs a terminal; use 'sluice stats --watch' for plain output");
    int st = cli_core_connect(g, cmd);
    if (st)
        return st;
    catch_signals();
    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_tio) == 0) {
        struct termios raw = saved_tio;
        raw.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        tio_saved = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    fputs("\033[?1049h\033[?25l\033[H\033[2J", stdout);
    screen s = {0};
    sl_stats cur, prev;
    sl_pool_info pools[SL_MAX_POOLS];
    sl_sink_info sink;
    int have_prev = 0, rc = 0;
    int64_t prev_ms = 0;
    int64_t lost_ms = 0;
    while (!stop_flag) {
        unsigned npools = 0;
        struct winsize ws;
        s.rows = 24, s.cols = 80;
        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col)
            s.rows = ws.ws_row, s.cols = ws.ws_col;
        if (!have_prev && !lost_ms) { /* the first answer may take up to --timeout: say what is going on */
            s.len = 0, s.row = 0;
            line(&s, "sluice top - %s  connecting...  q: quit", g->endpoint);
            frame_show(&s);
        }
        rc = sl_stats_get(g->c, &cur);
        if (!rc)
            rc = sl_pool_list(g->c, pools, &npools);
        if (!rc)
            rc = sl_sink_show(g->c, &sink);
        int64_t now_ms = cli_core_now_ms();
        s.len = 0, s.row = 0;
        if (rc) { /* the broker is gone, restarting, stalled or not there: say so, and try again */
            if (!lost_ms)
                lost_ms = now_ms;
            char gone[32];
            cli_text_age_format((uint64_t)(now_ms - lost_ms), gone, sizeof gone);
            line(&s, "sluice top - %s  disconnected, retrying (%s, %s)  q: quit", g->endpoint,
                 rc == SL_ECONNECT && !sl_connected(g->c) ? "connection refused" : sl_errname(rc), gone);
            line(&s, "%s", "");
            line(&s, "No answer from the broker (%s): the view comes back when it does.",
                 sl_last_error(g->c));
            have_prev = 0; /* rates start again when it is back */
        } else {
            lost_ms = 0;
            draw(&s, g->endpoint, &cur, have_prev ? &prev : NULL, (double)(now_ms - prev_ms) / 1000.0, pools,
                 npools, &sink, interval_ms);
            prev = cur, prev_ms = now_ms, have_prev = 1;
        }
        frame_show(&s);
        /* wait for the next refresh or a key */
        for (int64_t until = now_ms + interval_ms; !stop_flag;) {
            int64_t left = until - cli_core_now_ms();
            if (left <= 0)
                break;
            struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
            if (poll(&pfd, 1, (int)left) > 0) {
                char key;
                ssize_t n = read(STDIN_FILENO, &key, 1);
                if (n == 1 && (key == 'q' || key == 'Q' || key == 3))
                    stop_flag = 1;
                if (n <= 0) /* stdin at its end (not a terminal): no key can come */
                    poll(NULL, 0, (int)left);
            }
        }
    }
    rc = 0; /* a broker that is gone is shown, not an error: q ends top */
    restore_terminal();
    free(s.buf);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, "", NULL);
    return 0;
}
