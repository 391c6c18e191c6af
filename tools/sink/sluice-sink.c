/*
 * sluice-sink.c - a throttled HTTP sink: a stand-in for a rate-limited
 * downstream service, to point consumers and their retry logic at.
 *
 * Every POST is one request, answered 200 when the limiter admits it and
 * 429 with Retry-After when not; with a key source (--key-header,
 * --key-path) each key has a limit of its own as well (sink_keys.c). The limit can be read and changed while it
 * runs through the control paths (/_limit, /_stats), every request can be
 * logged, and a line of counts is printed for every second. sink_limit.c
 * holds the three limiters, sink_keys.c the per-key table, sink_dedup.c the
 * idempotency keys applied (--dedup-header), sink_http.c the
 * daemons and routes, sink_count.c the counts, sink_log.c the log; this
 * file is the driver: options, signals and the main loop.
 *
 * The main loop owns time for the counts: it sleeps in sigtimedwait until
 * the deadline sink_http_tick returns (at most 100 ms away), then ticks,
 * which prints finished seconds and flushes the log. SIGINT, SIGTERM and
 * SIGHUP are blocked in every thread (the daemons' threads inherit the mask
 * set before they start) and taken only by that wait, so no handler runs
 * and no thread is interrupted. SIGINT and SIGTERM stop the sink: the
 * daemons finish their requests in flight, the last counts are printed and
 * the log is flushed. SIGHUP re-reads nothing; the limit changes only
 * through PUT /_limit.
 *
 * Readiness: with --ready-fd FD, "READY\n" is written to FD once every
 * socket is listening, and FD is closed (the convention of sluiced).
 *
 * Exit status: 0 after a clean stop, 1 when the log could not be written,
 * 2 for a usage error or when the sink cannot start.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sink_http.h"
#include "sink_limit.h"
#include "sluice_errors.h"

#define MAX_RETRY_AFTER_S 86400

static void usage(FILE *f)
{
    fprintf(f,
"usage: sluice-sink --listen ADDR:PORT --rate R [options]\n"
"\n"
"sluice-sink stands in for a rate-limited downstream service. Every POST (to\n"
"any path not starting with /_) is one request: it is answered 200 when the\n"
"limiter admits it, else 429 with a Retry-After header. Other methods get 405.\n"
"\n"
"It is for trying what Sluice does in front of such a service without one:\n"
"point `sluice consume --post` at it to see the broker keep to the sink's\n"
"rate (sluice sink set), back off on 429 and, with a key source, limit each\n"
"tag on its own; the load scenarios of sluice-bench use it as their sink.\n"
"\n"
"Options:\n"
"  -l, --listen ADDR:PORT  IPv4 address and port to serve on, e.g. 127.0.0.1:8480\n"
"                          (port 0 picks a free one; the port is printed on stderr).\n"
"                          Only loopback addresses (127.x.x.x) unless --allow-remote\n"
"  -r, --rate R            requests admitted per second, 1..1000000 (required)\n"
"  -b, --burst B           gcra: requests admitted back to back by an idle sink,\n"
"                          1..1000000 (default 1); the windowed modes ignore it\n"
"  -m, --mode MODE         the limiter (default gcra):\n"
"                            gcra            R per second, spaced 1/R s apart, with\n"
"                                            bursts of up to B (generic cell rate)\n"
"                            fixed-window    at most R in each 1 s window, windows\n"
"                                            aligned to the start of the sink\n"
"                            sliding-window  at most R in any trailing 1 s (exact)\n"
"      --key-header NAME   limit each key as well: a request's key is the value of\n"
"                          its header NAME (e.g. X-Tenant; `sluice consume --post`\n"
"                          sends each message's tag as X-Sluice-Tag)\n"
"      --key-path          ... or the last segment of its URL path (\"/orders/acme\"\n"
"                          gives \"acme\"); give one of the two with --key-rate\n"
"      --key-rate R        requests admitted per second for each key, 1..1000000\n"
"                          (gcra, whatever --mode is), beside the global --rate: a\n"
"                          request must pass both. A request without a key passes\n"
"                          the global limit alone; a key over 128 bytes gets 400;\n"
"                          up to 100000 keys are held (idle ones are forgotten),\n"
"                          a new key beyond that gets 503\n"
"      --key-burst B       each key's burst, 1..1000000 (default 1)\n"
"      --dedup-header NAME a service that applies each key once: an admitted POST\n"
"                          whose header NAME (e.g. Idempotency-Key, which `sluice\n"
"                          consume --post` sends) holds a key seen before is a\n"
"                          repeat: answered 200, counted, not applied again.\n"
"                          GET /_stats then shows applied, repeats and unkeyed\n"
"      --retry-after auto|SECONDS\n"
"                          the Retry-After of a 429: auto (default) is the time\n"
"                          until a request would be admitted, in whole seconds\n"
"                          rounded up; a number 0..86400 is sent as is\n"
"      --log FILE          write one line per POST to FILE (truncated at start):\n"
"                            <monotonic ns> <status> <body>\n"
"                          or, with a key source, <monotonic ns> <status> <key> <body>\n"
"                          (the key with \\\\ for a backslash and \\xNN for bytes outside\n"
"                          0x21..0x7e, so a space is \\x20; - for a request without one)\n"
"                          the body cut at 256 bytes, a newline written as \\n, a\n"
"                          backslash as \\\\, other bytes outside 0x20..0x7e as \\xNN;\n"
"                          flushed at least every 100 ms and at exit\n"
"      --control-port PORT\n"
"                          serve the control paths only on this port (same\n"
"                          address), so that clients of the service cannot reach\n"
"                          them; by default they share the service port\n"
"      --ready-fd FD       write \"READY\\n\" to FD once listening, then close it\n"
"      --allow-remote      allow a --listen address that is not loopback\n"
"  -h, --help              show this help\n"
"      --version           show the version\n"
"\n"
"Control paths:\n"
"  GET /_limit             {\"rate\":R,\"burst\":B,\"mode\":\"gcra\"}\n"
"  PUT /_limit?rate=R&burst=B&mode=MODE\n"
"                          change the limit now; each argument is optional, what is\n"
"                          not given stays. The limiter keeps what it has admitted\n"
"                          (a new mode starts afresh). Answers the new limit\n"
"  PUT /_limit?key_rate=R&key_burst=B\n"
"                          change every key's limit (each key keeps its tokens in\n"
"                          use); GET /_limit then shows key_rate, key_burst, key_from\n"
"  PUT /_limit?inject=N    answer the next N requests 429 whatever the limit\n"
"                          (without taking its tokens): a push-back on demand\n"
"  GET /_stats             {\"ok\":N,\"throttled\":N,\"total\":N} since start; with a key\n"
"                          source also key_throttled (429s of scope key), keys (held\n"
"                          now) and bad_keys (400s and 503s); with --dedup-header\n"
"                          also applied (new keys, and POSTs without the header),\n"
"                          repeats (keys applied before) and unkeyed\n"
"\n"
"A 429 names what refused it when the sink is keyed: X-Limit-Scope: key (and\n"
"X-Limit-Key: the key, escaped as in the log), global, or injected.\n"
"\n"
"Output: every second, a line on stdout counting the POSTs decided in it:\n"
"  t=12s ok=500 throttled=37 total=537\n"
"and, at exit, one for the unfinished second if it counted any.\n"
"\n"
"Signals: SIGINT or SIGTERM stop the sink cleanly (requests in flight are\n"
"answered, the log is flushed). SIGHUP re-reads nothing: use PUT /_limit.\n"
"\n"
"Exit status: 0 after a clean stop, 1 when the log could not be written,\n"
"2 for a usage error or when the sink cannot start.\n"
"\n"
"Examples:\n"
"  sluice-sink --listen 127.0.0.1:8480 --rate 100 --burst 20\n"
"  sluice-sink -l 127.0.0.1:8480 -r 50 --mode sliding-window --log sink.log\n"
"  sluice-sink -l 127.0.0.1:8480 -r 1000 --key-header X-Sluice-Tag --key-rate 100 --key-burst 10\n"
"  sluice-sink -l 127.0.0.1:8480 -r 1000 --dedup-header Idempotency-Key\n"
"  curl -X PUT 'http://127.0.0.1:8480/_limit?rate=10&burst=1'\n");
}

typedef struct settings {
    sink_http_cfg cfg;
    int listen_set, rate_set, allow_remote, ready_fd, key_rate_set, key_burst_set;
} settings;

static int parse_u32(const char *what, const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi) {
        fprintf(stderr, "sluice-sink: %s: '%s' is not a number from %" PRIu32 " to %" PRIu32 "\n", what, s, lo,
                hi);
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

static int parse_listen(const char *s, struct sockaddr_in *out)
{
    char host[64];
    const char *colon = strrchr(s, ':');
    uint32_t port;
    if (!colon || (size_t)(colon - s) >= sizeof host) {
        fprintf(stderr, "sluice-sink: --listen '%s': expected ADDR:PORT, e.g. 127.0.0.1:8480\n", s);
        return -1;
    }
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    if (strcmp(host, "localhost") == 0)
        strcpy(host, "127.0.0.1");
    memset(out, 0, sizeof *out);
    out->sin_family = AF_INET;
    if (inet_pton(AF_INET, host, &out->sin_addr) != 1) {
        fprintf(stderr, "sluice-sink: --listen '%s': '%s' is not an IPv4 address\n", s, host);
        return -1;
    }
    if (parse_u32("--listen port", colon + 1, 0, 65535, &port) != 0)
        return -1;
    out->sin_port = htons((uint16_t)port);
    return 0;
}

enum { OPT_LOG = 256, OPT_RETRY, OPT_CONTROL, OPT_READY, OPT_REMOTE, OPT_VERSION, OPT_KEY_HEADER, OPT_KEY_PATH,
       OPT_KEY_RATE, OPT_KEY_BURST, OPT_DEDUP };

static const struct option options[] = {
    {"listen", required_argument, NULL, 'l'},
    {"rate", required_argument, NULL, 'r'},
    {"burst", required_argument, NULL, 'b'},
    {"mode", required_argument, NULL, 'm'},
    {"log", required_argument, NULL, OPT_LOG},
    {"key-header", required_argument, NULL, OPT_KEY_HEADER},
    {"key-path", no_argument, NULL, OPT_KEY_PATH},
    {"key-rate", required_argument, NULL, OPT_KEY_RATE},
    {"key-burst", required_argument, NULL, OPT_KEY_BURST},
    {"dedup-header", required_argument, NULL, OPT_DEDUP},
    {"retry-after", required_argument, NULL, OPT_RETRY},
    {"control-port", required_argument, NULL, OPT_CONTROL},
    {"ready-fd", required_argument, NULL, OPT_READY},
    {"allow-remote", no_argument, NULL, OPT_REMOTE},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* header_name_ok tells whether name is a plain header name. */
static int header_name_ok(const char *name)
{
    size_t n = strlen(name);
    return n >= 1 && n <= 100 &&
           strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == n;
}

/* apply handles one option; returns 0, or -1 after reporting the problem. */
static int apply(settings *st, int opt, const char *arg)
{
    uint32_t v;
    switch (opt) {
    case 'l':
        st->listen_set = 1;
        return parse_listen(arg, &st->cfg.listen);
    case 'r':
        st->rate_set = 1;
        return parse_u32("--rate", arg, 1, SINK_LIMIT_MAX_RATE_PER_S, &st->cfg.rate_per_s);
    case 'b':
        return parse_u32("--burst", arg, 1, SINK_LIMIT_MAX_BURST, &st->cfg.burst);
    case 'm':
        if (sink_limit_mode_parse(arg, &st->cfg.mode) == SL_OK)
            return 0;
        fprintf(stderr, "sluice-sink: --mode '%s': expected gcra, fixed-window or sliding-window\n", arg);
        return -1;
    case OPT_LOG:
        st->cfg.log_path = arg;
        return 0;
    case OPT_KEY_HEADER:
    case OPT_KEY_PATH:
        if (st->cfg.key_source != SINK_KEYS_NONE) {
            fprintf(stderr, "sluice-sink: give one key source: --key-header or --key-path\n");
            return -1;
        }
        if (opt == OPT_KEY_HEADER && !header_name_ok(arg)) {
            fprintf(stderr, "sluice-sink: --key-header '%s': not a header name (letters, digits, - and _, "
                    "up to 100)\n", arg);
            return -1;
        }
        st->cfg.key_source = opt == OPT_KEY_HEADER ? SINK_KEYS_HEADER : SINK_KEYS_PATH;
        st->cfg.key_header = opt == OPT_KEY_HEADER ? arg : NULL;
        return 0;
    case OPT_DEDUP:
        if (!header_name_ok(arg)) {
            fprintf(stderr, "sluice-sink: --dedup-header '%s': not a header name (letters, digits, - and _, "
                    "up to 100)\n", arg);
            return -1;
        }
        st->cfg.dedup_header = arg;
        return 0;
    case OPT_KEY_RATE:
        st->key_rate_set = 1;
        return parse_u32("--key-rate", arg, 1, SINK_LIMIT_MAX_RATE_PER_S, &st->cfg.key_rate_per_s);
    case OPT_KEY_BURST:
        st->key_burst_set = 1;
        return parse_u32("--key-burst", arg, 1, SINK_LIMIT_MAX_BURST, &st->cfg.key_burst);
    case OPT_RETRY:
        if (strcmp(arg, "auto") == 0) {
            st->cfg.retry_after_s = -1;
            return 0;
        }
        if (parse_u32("--retry-after", arg, 0, MAX_RETRY_AFTER_S, &v) != 0)
            return -1;
        st->cfg.retry_after_s = (int)v;
        return 0;
    case OPT_CONTROL:
        if (parse_u32("--control-port", arg, 1, 65535, &v) != 0)
            return -1;
        st->cfg.control_port = (uint16_t)v;
        return 0;
    case OPT_READY:
        if (parse_u32("--ready-fd", arg, 0, INT_MAX, &v) != 0)
            return -1;
        st->ready_fd = (int)v;
        return 0;
    case OPT_REMOTE:
        st->allow_remote = 1;
        return 0;
    }
    return -1;
}

static int parse_args(int argc, char **argv, settings *st)
{
    int opt;
    opterr = 0;
    for (int i = 0; i <= argc && (opt = getopt_long(argc, argv, "l:r:b:m:h", options, NULL)) != -1; i++) {
        if (opt == 'h') {
            usage(stdout);
            exit(0);
        } else if (opt == OPT_VERSION) {
            printf("sluice-sink %s\n", SLUICE_VERSION);
            exit(0);
        } else if (opt == '?') {
            fprintf(stderr, "sluice-sink: unknown or incomplete option '%s'; try sluice-sink --help\n",
                    argv[optind - 1]);
            return -1;
        } else if (apply(st, opt, optarg) != 0) {
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sluice-sink: unexpected argument '%s'; try sluice-sink --help\n", argv[optind]);
        return -1;
    }
    if (!st->listen_set || !st->rate_set) {
        fprintf(stderr, "sluice-sink: --listen and --rate are required; try sluice-sink --help\n");
        return -1;
    }
    if ((ntohl(st->cfg.listen.sin_addr.s_addr) >> 24) != 127 && !st->allow_remote) {
        fprintf(stderr, "sluice-sink: --listen: not a loopback address; add --allow-remote to serve on it\n");
        return -1;
    }
    if ((st->cfg.key_source != SINK_KEYS_NONE) != st->key_rate_set ||
        (st->key_burst_set && !st->key_rate_set)) {
        fprintf(stderr, "sluice-sink: a per-key limit needs a key source and a rate: --key-header NAME or "
                "--key-path, with --key-rate R (and --key-burst B)\n");
        return -1;
    }
    if (st->cfg.control_port && st->cfg.control_port == ntohs(st->cfg.listen.sin_port)) {
        fprintf(stderr, "sluice-sink: --control-port must differ from the --listen port\n");
        return -1;
    }
    return 0;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void signal_ready(int fd)
{
    if (fd < 0)
        return;
    if (write(fd, "READY\n", 6) != 6)
        fprintf(stderr, "sluice-sink: cannot write to --ready-fd %d: %s\n", fd, strerror(errno));
    close(fd);
}

/* run waits for signals and ticks until SIGINT or SIGTERM. */
static void run(sink_http *s, const sigset_t *signals)
{
    uint64_t deadline_ns = sink_http_tick(s, now_ns());
    for (;;) {
        uint64_t t_ns = now_ns();
        if (t_ns >= deadline_ns) {
            deadline_ns = sink_http_tick(s, t_ns);
            continue;
        }
        uint64_t wait_ns = deadline_ns - t_ns;
        struct timespec ts = {.tv_sec = (time_t)(wait_ns / 1000000000u), .tv_nsec = (long)(wait_ns % 1000000000u)};
        int sig = sigtimedwait(signals, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM)
            return;
        if (sig == SIGHUP)
            fprintf(stderr, "sluice-sink: SIGHUP: nothing to re-read; change the limit with PUT /_limit\n");
    }
}

int main(int argc, char **argv)
{
    settings st = {.ready_fd = -1};
    st.cfg.mode = SINK_LIMIT_GCRA;
    st.cfg.burst = 1;
    st.cfg.key_burst = 1;
    st.cfg.retry_after_s = -1;
    st.cfg.counts = stdout;
    if (parse_args(argc, argv, &st) != 0)
        return 2;

    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    sink_http *s = NULL;
    if (sink_http_open(&st.cfg, now_ns(), &s) != SL_OK)
        return 2;
    char host[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &st.cfg.listen.sin_addr, host, sizeof host);
    fprintf(stderr, "sluice-sink: listening on http://%s:%u, control on port %u; %s rate=%" PRIu32
            " burst=%" PRIu32 "\n", host, (unsigned)sink_http_port(s, 0), (unsigned)sink_http_port(s, 1),
            sink_limit_mode_name(st.cfg.mode), st.cfg.rate_per_s, st.cfg.burst);
    if (st.cfg.key_source != SINK_KEYS_NONE)
        fprintf(stderr, "sluice-sink: per key (from %s%s): gcra rate=%" PRIu32 " burst=%" PRIu32 "\n",
                st.cfg.key_header ? "header " : "the last path segment", st.cfg.key_header ? st.cfg.key_header : "",
                st.cfg.key_rate_per_s, st.cfg.key_burst);
    signal_ready(st.ready_fd);
    run(s, &signals);
    return sink_http_close(&s, now_ns()) == SL_OK ? 0 : 1;
}
