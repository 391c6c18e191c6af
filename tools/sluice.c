/*
 * sluice.c - the `sluice` command: publish, consume and inspect from a shell.
 *
 * A thin program over the public client library (client/sluice.h) and libc;
 * it never speaks ZeroMQ or msgpack itself. main parses the global options,
 * then hands the rest of argv to one command:
 *
 *   send     publishes each BODY argument, or each line of standard input,
 *            through sl_send_async with up to SEND_WINDOW publishes in flight.
 *            Ids are printed in input order as confirmations arrive, so a
 *            script can count lines to learn how far a run got. The first
 *            failure stops the run; the error says how many later messages
 *            were already in flight and so may have been stored.
 *   consume  subscribes, prints each body (or pipes it to a command) and then
 *            acknowledges it, so a message is settled only after its output
 *            left. SIGINT and SIGTERM set a flag that the receive loop checks
 *            every RECV_SLICE_MS; closing the client returns whatever is
 *            still unacknowledged to the broker.
 *   stats    prints the broker's per-level figures as a table or as JSON.
 *
 * Exit status: 0 success, 1 a failure reported by or about the broker (or
 * while reading input or writing output), 2 a usage error. Every message on
 * stderr starts with "sluice: " and names the command.
 *
 * Costs: memory is bounded by the send window and by one input line, itself
 * capped at LINE_MAX_BYTES, the protocol's ceiling on a body.
 */
#include "sluice.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SLUICE_VERSION     "1.0.0"
#define PROTOCOL_VERSION   1
#define EXIT_BROKER        1
#define EXIT_USAGE         2
#define DEFAULT_TIMEOUT_MS 5000
#define SEND_WINDOW        256         /* publishes in flight */
#define LINE_MAX_BYTES     (16u << 20) /* the protocol's ceiling on a body */
#define TAG_MAX_BYTES      255
#define MAX_CREDIT         100000      /* the broker's cap per connection */
#define RECV_SLICE_MS      200         /* how often consume checks for a signal */
#define STATS_COLUMNS      12

/* Long-only options get values outside the char range. */
enum { OPT_TIMEOUT = 256, OPT_VERSION, OPT_POOL, OPT_EXEC, OPT_IDLE_EXIT, OPT_JSON };

static const char help_text[] =
"Usage: sluice [-b ENDPOINT] [--timeout MS] <command> [options]\n"
"\n"
"Publish to, consume from and inspect a Sluice broker (sluiced).\n"
"\n"
"Global options (before the command):\n"
"  -b, --broker ENDPOINT  the broker's ZeroMQ endpoint, tcp://HOST:PORT or\n"
"                         ipc://PATH (default: $SLUICE_BROKER, else\n"
"                         " SL_DEFAULT_ENDPOINT ")\n"
"      --timeout MS       how long to wait for each broker reply (default 5000)\n"
"  -h, --help             show this help and exit\n"
"      --version          show the version and exit\n"
"\n"
"Commands:\n"
"  sluice send [-p LEVEL] [-t TAG] [BODY...]\n"
"      Publish messages. Each BODY argument is one message; with none, each\n"
"      line of standard input is one (without its newline; a line longer than\n"
"      the broker's largest body is an error). Prints the id of each message\n"
"      once the broker has durably stored it, one per line, in input order.\n"
"      Stops at the first failure; messages sent after the failed one may\n"
"      have been stored, and the error says how many.\n"
"      -p, --level LEVEL    priority level, by name or number (default: the\n"
"                           broker's default level)\n"
"      -t, --tag TAG        tag every message with TAG (up to 255 bytes)\n"
"\n"
"  sluice consume [--pool NAME] [-p LEVELS] [-n COUNT] [-c CREDIT]\n"
"                 [--exec CMD] [--verbose] [--idle-exit MS]\n"
"      Receive messages, print each body on its own line, and acknowledge it\n"
"      once printed. Runs until SIGINT or SIGTERM unless -n or --idle-exit\n"
"      ends it; unacknowledged messages then return to the broker.\n"
"      --pool NAME          consumer pool to join (default: \"default\")\n"
"      -p, --levels LEVELS  comma-separated level names or numbers, such as\n"
"                           high,normal or 0,2 (default: all levels)\n"
"      -n, --count COUNT    stop after COUNT messages acked or nacked\n"
"      -c, --credit CREDIT  deliveries to hold unacknowledged at once\n"
"                           (default 1, at most 100000)\n"
"      --exec CMD           run /bin/sh -c CMD for each message with the body\n"
"                           on its standard input: exit status 0 acks it,\n"
"                           anything else nacks it (the broker redelivers it\n"
"                           up to its attempt limit). Bodies are not printed.\n"
"      -v, --verbose        prefix each body with\n"
"                           \"id=ID level=NAME tag=TAG attempt=N \"\n"
"      --idle-exit MS       exit when no message arrived for MS milliseconds\n"
"\n"
"  sluice stats [--json]\n"
"      Show each level's depth, in-flight, delayed and dead-letter counts, the\n"
"      age of its oldest ready message and its counters since the broker\n"
"      started, as a table or, with --json, as one JSON object.\n"
"\n"
"Environment:\n"
"  SLUICE_BROKER  the broker endpoint when -b is not given\n"
"\n"
"Exit status:\n"
"  0  success\n"
"  1  the broker failed, refused or did not answer; or reading input or\n"
"     writing output failed\n"
"  2  usage error: unknown command or option, bad value, unknown level\n"
"\n"
"Examples:\n"
"  sluice send -p high 'rebuild index'          publish one urgent message\n"
"  seq 1000 | sluice send -t batch7             publish 1000 messages\n"
"  sluice consume -p high,normal --exec ./job.sh --idle-exit 2000\n";

static volatile sig_atomic_t stop_signal;

/* The global options and the connection every command uses. */
typedef struct cli {
    const char *endpoint;
    int timeout_ms;
    sl_client *c;
    bool answered; /* the broker has replied once: a timeout is then not "unreachable" */
} cli;

/* ---- messages ---- */

static void say(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "sluice: %s%s", cmd ? cmd : "", cmd ? ": " : "");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static int usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "sluice: %s%s", cmd ? cmd : "", cmd ? ": " : "");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'sluice --help' for more information.\n");
    va_end(ap);
    return EXIT_USAGE;
}

/* option_error reports what getopt_long rejected (it returned ch). */
static int option_error(const char *cmd, int ch, char **argv)
{
    const char *arg = argv[optind - 1];
    if (optopt > 0 && optopt < 256 && strncmp(arg, "--", 2) != 0)
        return usage_error(cmd, ch == ':' ? "option '-%c' needs an argument" : "unknown option '-%c'",
                           optopt);
    return usage_error(cmd, ch == ':' ? "option '%s' needs an argument" : "unknown option '%s'", arg);
}

/* broker_error reports rc from a library call on g->c, after context (which
 * may be empty), and returns the exit status. */
static int broker_error(cli *g, const char *cmd, int rc, const char *context, const char *extra)
{
    if (rc == SL_ETIMEDOUT && !g->answered) {
        say(NULL, "cannot reach broker at %s (timed out after %d ms); is sluiced running?",
            g->endpoint, g->timeout_ms);
        return EXIT_BROKER;
    }
    const char *generic = sl_strerror(rc);
    const char *text = g->c ? sl_last_error(g->c) : generic;
    bool detail = strcmp(text, generic) != 0 && text[0];
    say(cmd, "%s%s%s (%s)%s%s%s", context, context[0] ? ": " : "", generic, sl_errname(rc),
        detail ? ": " : "", detail ? text : "", extra ? extra : "");
    return EXIT_BROKER;
}

/* ---- small helpers ---- */

static bool number_parse(const char *text, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* duration_format writes ms as 0s, 1.2s, 3m4s, 5h6m or 7d8h. */
static void duration_format(uint64_t ms, char *buf, size_t size)
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

static int client_open(cli *g, const char *cmd)
{
    sl_options o = {.timeout_ms = g->timeout_ms};
    int rc = sl_connect(g->endpoint, &o, &g->c);
    if (rc == SL_EINVAL)
        return usage_error(cmd, "invalid broker endpoint '%s' (expected tcp://HOST:PORT or ipc://PATH)",
                           g->endpoint);
    if (rc)
        return broker_error(g, cmd, rc, "cannot create the client", NULL);
    return 0;
}

/* levels_list writes the broker's level names as "high, normal, low". */
static void levels_list(cli *g, char *buf, size_t size)
{
    unsigned n = 0;
    const char *const *names = NULL;
    size_t used = 0;
    buf[0] = '\0';
    if (sl_levels(g->c, &n, &names))
        return;
    for (unsigned i = 0; i < n && used < size; i++) {
        int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", names[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* level_resolve turns text into a level number, or reports why not. */
static int level_resolve(cli *g, const char *cmd, const char *text, unsigned *level)
{
    int rc = sl_level_parse(g->c, text, level);
    if (rc == SL_OK) {
        g->answered = true;
        return 0;
    }
    if (rc != SL_ENOLEVEL)
        return broker_error(g, cmd, rc, "reading the broker's levels", NULL);
    char names[SL_MAX_LEVELS * 70];
    levels_list(g, names, sizeof names);
    return usage_error(cmd, "no such level '%s' (the broker has: %s)", text, names);
}

/* ---- send ---- */

typedef struct inflight {
    uint64_t ticket;
    size_t index; /* line or message number, from 1 */
    bool done;
    uint64_t id;
} inflight;

typedef struct sender {
    cli *g;
    const char *what; /* "line" or "message" */
    int level;
    const char *tag;
    inflight ring[SEND_WINDOW];
    size_t head, count;
} sender;

static inflight *sender_at(sender *s, size_t i)
{
    return &s->ring[(s->head + i) % SEND_WINDOW];
}

/* sender_later formats how many messages after position i were in flight. */
static void sender_later(const sender *s, size_t i, char *buf, size_t size)
{
    size_t later = s->count - i - 1;
    buf[0] = '\0';
    if (later)
        snprintf(buf, size, "; %zu later message%s in flight may have been stored", later,
                 later == 1 ? "" : "s");
}

/* sender_collect takes one confirmation, prints the ids now in order, and
 * returns 0, or the exit status after reporting a failure. */
static int sender_collect(sender *s)
{
    sl_confirm k;
    char later[96], context[64];
    int rc = sl_send_wait(s->g->c, 0, &k);
    if (rc == SL_ETIMEDOUT) {
        fflush(stdout); /* about to block: show what is confirmed */
        rc = sl_send_wait(s->g->c, s->g->timeout_ms, &k);
    }
    if (rc) {
        sender_later(s, 0, later, sizeof later);
        snprintf(context, sizeof context, "%s %zu", s->what, sender_at(s, 0)->index);
        if (rc != SL_ETIMEDOUT)
            return broker_error(s->g, "send", rc, context, later);
        say("send", "%s: no confirmation within %d ms (SL_ETIMEDOUT); it may have been stored%s",
            context, s->g->timeout_ms, later);
        return EXIT_BROKER;
    }
    size_t i = 0;
    while (i < s->count && sender_at(s, i)->ticket != k.ticket)
        i++;
    if (i == s->count)
        return 0; /* not ours: cannot happen, and harmless */
    inflight *f = sender_at(s, i);
    if (k.err) {
        sender_later(s, i, later, sizeof later);
        snprintf(context, sizeof context, "%s %zu", s->what, f->index);
        return broker_error(s->g, "send", k.err, context, later);
    }
    f->done = true;
    f->id = k.id;
    while (s->count && sender_at(s, 0)->done) {
        printf("%" PRIu64 "\n", sender_at(s, 0)->id);
        s->head = (s->head + 1) % SEND_WINDOW;
        s->count--;
    }
    return 0;
}

static int sender_drain(sender *s)
{
    int st = 0;
    while (s->count && !(st = sender_collect(s)))
        ;
    fflush(stdout);
    return st;
}

/* sender_put publishes one message, waiting first for room in the window. */
static int sender_put(sender *s, const char *body, size_t len, size_t index)
{
    int st = 0;
    while (s->count == SEND_WINDOW)
        if ((st = sender_collect(s)))
            return st;
    sl_put p = {.body = body, .body_len = len, .level = s->level, .tag = s->tag};
    uint64_t ticket;
    int rc = sl_send_async(s->g->c, &p, &ticket);
    if (rc) {
        /* report earlier messages first: a failure among them comes first */
        if ((st = sender_drain(s)))
            return st;
        char context[64];
        snprintf(context, sizeof context, "%s %zu", s->what, index);
        /* local errors: draining replaced sl_last_error, and it was generic */
        if (rc == SL_ETOOBIG)
            say("send", "%s: message exceeds a size limit (SL_ETOOBIG): its %zu bytes are more "
                "than the broker accepts", context, len);
        else
            say("send", "%s: %s (%s)", context, sl_strerror(rc), sl_errname(rc));
        return EXIT_BROKER;
    }
    *sender_at(s, s->count) = (inflight){.ticket = ticket, .index = index};
    s->count++;
    return 0;
}

/* line_read reads one line of in, without its '\n', into *buf (grown up to
 * max_bytes + 1). Returns 1 for a line, 0 at the end of input, -1 for a line
 * longer than max_bytes (the rest of it is not read), -2 for a read error. */
static int line_read(FILE *in, char **buf, size_t *cap, size_t *len, size_t max_bytes)
{
    int ch = EOF;
    *len = 0;
    while ((ch = getc_unlocked(in)) != EOF && ch != '\n') {
        if (*len == max_bytes)
            return -1;
        if (*len == *cap) {
            size_t grown = *cap ? *cap * 2 : 4096;
            char *p = realloc(*buf, grown < max_bytes ? grown : max_bytes);
            if (!p)
                return -2;
            *buf = p;
            *cap = grown < max_bytes ? grown : max_bytes;
        }
        (*buf)[(*len)++] = (char)ch;
    }
    if (ferror(in))
        return -2;
    return ch == '\n' || *len ? 1 : 0;
}

static int send_stdin(sender *s)
{
    char *buf = NULL;
    size_t cap = 0, len = 0, lineno = 0;
    int st = 0, got = 0;
    while (!st && (got = line_read(stdin, &buf, &cap, &len, LINE_MAX_BYTES)) > 0)
        st = sender_put(s, buf ? buf : "", len, ++lineno);
    if (!st && got < 0) {
        int err = errno;
        st = sender_drain(s);
        if (!st && got == -1) {
            say("send", "line %zu: longer than %u bytes, the largest body the protocol allows",
                lineno + 1, LINE_MAX_BYTES);
            st = EXIT_BROKER;
        } else if (!st) {
            say("send", "reading standard input: %s", strerror(err));
            st = EXIT_BROKER;
        }
    }
    free(buf);
    return st;
}

static int cmd_send(cli *g, int argc, char **argv)
{
    static const struct option opts[] = {
        {"level", required_argument, NULL, 'p'},
        {"priority", required_argument, NULL, 'p'},
        {"tag", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *level_text = NULL;
    sender *s = calloc(1, sizeof *s);
    int ch, st = 0;
    if (!s) {
        say("send", "out of memory");
        return EXIT_BROKER;
    }
    s->g = g;
    s->level = SL_LEVEL_DEFAULT;
    optind = 0;
    while (!st && (ch = getopt_long(argc, argv, ":p:t:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'p': level_text = optarg; break;
        case 't': s->tag = optarg; break;
        case 'h': fputs(help_text, stdout); goto done;
        default: st = option_error("send", ch, argv); break;
        }
    }
    if (st)
        goto done;
    if (s->tag && strlen(s->tag) > TAG_MAX_BYTES) {
        st = usage_error("send", "the tag is %zu bytes; at most %d are allowed", strlen(s->tag),
                         TAG_MAX_BYTES);
        goto done;
    }
    if ((st = client_open(g, "send")))
        goto done;
    /* one round trip up front: it learns the levels and the largest body,
     * and tells an absent broker from a slow one */
    int rc = sl_levels(g->c, NULL, NULL);
    if (rc) {
        st = broker_error(g, "send", rc, "", NULL);
        goto done;
    }
    g->answered = true;
    if (level_text) {
        unsigned level;
        if ((st = level_resolve(g, "send", level_text, &level)))
            goto done;
        s->level = (int)level;
    }
    if (optind < argc) {
        s->what = "message";
        for (int i = optind; !st && i < argc; i++)
            st = sender_put(s, argv[i], strlen(argv[i]), (size_t)(i - optind + 1));
    } else {
        s->what = "line";
        st = send_stdin(s);
    }
    if (!st)
        st = sender_drain(s);

done:
    fflush(stdout);
    free(s);
    return st;
}

/* ---- consume ---- */

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_signal = 1;
}

static void signals_install(void)
{
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* a closed stdout or a command that ignores its stdin shows as EPIPE */
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
}

/* levels_parse resolves a comma-separated list such as "high,2". */
static int levels_parse(cli *g, const char *list, unsigned *levels, size_t *n)
{
    char item[128];
    const char *p = list;
    *n = 0;
    for (;;) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof item)
            return usage_error("consume", "bad level list '%s' (expected names or numbers "
                               "separated by commas)", list);
        if (*n == SL_MAX_LEVELS)
            return usage_error("consume", "more than %d levels in '%s'", SL_MAX_LEVELS, list);
        memcpy(item, p, len);
        item[len] = '\0';
        int st = level_resolve(g, "consume", item, &levels[*n]);
        if (st)
            return st;
        (*n)++;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

static bool write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return false;
        p += w;
        len -= (size_t)w;
    }
    return true;
}

/* exec_run runs /bin/sh -c cmd with the body on its stdin and waits for it.
 * Returns 0 with *status set, or -1 with errno when it could not run it. */
static int exec_run(const char *cmd, const sl_delivery *d, int *status)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC))
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        close(fds[0]);
        close(fds[1]);
        errno = err;
        return -1;
    }
    if (pid == 0) {
        /* only async-signal-safe calls here: the parent has threads */
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigaction(SIGPIPE, &dfl, NULL);
        if (dup2(fds[0], STDIN_FILENO) < 0)
            _exit(127);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(fds[0]);
    write_all(fds[1], d->body, d->body_len); /* EPIPE: it did not read it all */
    close(fds[1]);
    while (waitpid(pid, status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return 0;
}

typedef struct consumer {
    cli *g;
    const char *exec;
    bool verbose;
    unsigned nlevels;
    const char *const *names;
} consumer;

/* consume_one handles one delivery: prints it or runs the command, then acks
 * or nacks. Returns 0 or an exit status. */
static int consume_one(consumer *k, sl_delivery *d)
{
    bool ok = true;
    if (k->exec) {
        int status;
        if (exec_run(k->exec, d, &status)) {
            say("consume", "cannot run the command: %s", strerror(errno));
            return EXIT_BROKER; /* unacknowledged: it returns to the broker */
        }
        ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (WIFEXITED(status) && !ok)
            say("consume", "message %" PRIu64 ": the command exited with status %d; nacked",
                d->id, WEXITSTATUS(status));
        else if (WIFSIGNALED(status))
            say("consume", "message %" PRIu64 ": the command was killed by signal %d (%s); nacked",
                d->id, WTERMSIG(status), strsignal(WTERMSIG(status)));
    } else {
        if (k->verbose) {
            char level[16];
            snprintf(level, sizeof level, "%u", d->level);
            printf("id=%" PRIu64 " level=%s tag=%s attempt=%u ", d->id,
                   d->level < k->nlevels ? k->names[d->level] : level, d->tag, d->attempt);
        }
        fwrite(d->body, 1, d->body_len, stdout);
        putchar('\n');
        if (fflush(stdout) || ferror(stdout)) {
            say("consume", "writing to standard output: %s", strerror(errno));
            return EXIT_BROKER; /* not acked: it returns to the broker */
        }
    }
    int rc = ok ? sl_ack(k->g->c, d) : sl_nack(k->g->c, d, 0);
    if (rc == SL_ESTALE) {
        /* the lease ran out first: the broker will deliver it again */
        say("consume", "message %" PRIu64 ": %s came too late: %s (SL_ESTALE); it will be "
            "delivered again", d->id, ok ? "ack" : "nack", sl_last_error(k->g->c));
        return 0;
    }
    if (rc) {
        char context[64];
        snprintf(context, sizeof context, "%s of message %" PRIu64, ok ? "ack" : "nack", d->id);
        return broker_error(k->g, "consume", rc, context, NULL);
    }
    return 0;
}

static int cmd_consume(cli *g, int argc, char **argv)
{
    static const struct option opts[] = {
        {"pool", required_argument, NULL, OPT_POOL},
        {"levels", required_argument, NULL, 'p'},
        {"count", required_argument, NULL, 'n'},
        {"credit", required_argument, NULL, 'c'},
        {"exec", required_argument, NULL, OPT_EXEC},
        {"verbose", no_argument, NULL, 'v'},
        {"idle-exit", required_argument, NULL, OPT_IDLE_EXIT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    consumer k = {.g = g};
    const char *pool = NULL, *level_list = NULL;
    long count = 0, credit = 1, idle_ms = 0;
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, ":p:n:c:vh", opts, NULL)) != -1) {
        switch (ch) {
        case OPT_POOL: pool = optarg; break;
        case 'p': level_list = optarg; break;
        case 'n':
            if (!number_parse(optarg, 1, LONG_MAX, &count))
                return usage_error("consume", "bad count '%s' (expected a positive number)", optarg);
            break;
        case 'c':
            if (!number_parse(optarg, 1, MAX_CREDIT, &credit))
                return usage_error("consume", "bad credit '%s' (expected 1 to %d)", optarg, MAX_CREDIT);
            break;
        case OPT_EXEC: k.exec = optarg; break;
        case 'v': k.verbose = true; break;
        case OPT_IDLE_EXIT:
            if (!number_parse(optarg, 1, INT_MAX, &idle_ms))
                return usage_error("consume", "bad --idle-exit '%s' (expected milliseconds)", optarg);
            break;
        case 'h': fputs(help_text, stdout); return 0;
        default: return option_error("consume", ch, argv);
        }
    }
    if (optind < argc)
        return usage_error("consume", "unexpected argument '%s'", argv[optind]);
    if (pool && (!pool[0] || strlen(pool) > 64))
        return usage_error("consume", "bad pool name '%s' (1 to 64 bytes)", pool);

    int st = client_open(g, "consume");
    if (st)
        return st;
    unsigned levels[SL_MAX_LEVELS];
    size_t nlevels = 0;
    if (level_list && (st = levels_parse(g, level_list, levels, &nlevels)))
        return st;
    if (count > 0)
        sl_set_limit(g->c, (uint64_t)count); /* never pull an extra message */
    int rc = sl_subscribe(g->c, pool, levels, nlevels, (unsigned)credit);
    if (rc)
        return broker_error(g, "consume", rc, "subscribing", NULL);
    g->answered = true;
    sl_levels(g->c, &k.nlevels, &k.names); /* cached by the subscription */
    signals_install();

    long settled = 0;
    int64_t last_ms = mono_ms();
    while (!st && !stop_signal && (count == 0 || settled < count)) {
        int slice_ms = RECV_SLICE_MS;
        if (idle_ms) {
            int64_t left_ms = last_ms + idle_ms - mono_ms();
            if (left_ms <= 0)
                break;
            if (left_ms < slice_ms)
                slice_ms = (int)left_ms;
        }
        sl_delivery *d = NULL;
        rc = sl_recv(g->c, slice_ms, &d);
        if (rc == SL_ETIMEDOUT)
            continue;
        if (rc)
            return broker_error(g, "consume", rc, "receiving", NULL);
        last_ms = mono_ms();
        st = consume_one(&k, d);
        sl_delivery_free(&d);
        settled++;
    }
    return st;
}

/* ---- stats ---- */

static void json_string(const char *s)
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

static void stats_json(const sl_stats *st)
{
    printf("{\"uptime_ms\":%" PRIu64 ",\"consumers\":%" PRIu64 ",\"levels\":[", st->uptime_ms,
           st->consumers);
    for (unsigned i = 0; i < st->nlevels; i++) {
        const sl_level_stats *l = &st->level[i];
        printf("%s{\"level\":%u,\"name\":", i ? "," : "", i);
        json_string(l->name);
        printf(",\"depth\":%" PRIu64 ",\"inflight\":%" PRIu64 ",\"delayed\":%" PRIu64
               ",\"dead\":%" PRIu64 ",\"oldest_ms\":%" PRIu64 ",\"enqueued\":%" PRIu64
               ",\"dispatched\":%" PRIu64 ",\"acked\":%" PRIu64 ",\"nacked\":%" PRIu64
               ",\"expired\":%" PRIu64 "}",
               l->depth, l->inflight, l->delayed, l->dead, l->oldest_ms, l->enqueued,
               l->dispatched, l->acked, l->nacked, l->expired);
    }
    printf("]}\n");
}

static void stats_table(const sl_stats *st)
{
    static const char *const head[STATS_COLUMNS] = {"LEVEL", "NAME", "DEPTH", "INFLIGHT",
                                                   "DELAYED", "DEAD", "OLDEST", "ENQ",
                                                   "DISP", "ACK", "NACK", "EXPIRED"};
    static char cell[SL_MAX_LEVELS][STATS_COLUMNS][72];
    size_t width[STATS_COLUMNS];
    for (int k = 0; k < STATS_COLUMNS; k++)
        width[k] = strlen(head[k]);
    for (unsigned i = 0; i < st->nlevels; i++) {
        const sl_level_stats *l = &st->level[i];
        const uint64_t num[STATS_COLUMNS] = {i, 0, l->depth, l->inflight, l->delayed, l->dead, 0,
                                             l->enqueued, l->dispatched, l->acked, l->nacked,
                                             l->expired};
        for (int k = 0; k < STATS_COLUMNS; k++)
            snprintf(cell[i][k], sizeof cell[i][k], "%" PRIu64, num[k]);
        snprintf(cell[i][1], sizeof cell[i][1], "%s", l->name);
        duration_format(l->oldest_ms, cell[i][6], sizeof cell[i][6]);
        for (int k = 0; k < STATS_COLUMNS; k++)
            if (strlen(cell[i][k]) > width[k])
                width[k] = strlen(cell[i][k]);
    }
    char uptime[32];
    duration_format(st->uptime_ms, uptime, sizeof uptime);
    printf("uptime %s  consumers %" PRIu64 "\n", uptime, st->consumers);
    /* level and name read left to right; figures line up on the right */
    for (int k = 0; k < STATS_COLUMNS; k++)
        printf(k <= 1 ? "%s%-*s" : "%s%*s", k ? "  " : "", (int)width[k], head[k]);
    putchar('\n');
    for (unsigned i = 0; i < st->nlevels; i++) {
        for (int k = 0; k < STATS_COLUMNS; k++)
            printf(k <= 1 ? "%s%-*s" : "%s%*s", k ? "  " : "", (int)width[k], cell[i][k]);
        putchar('\n');
    }
}

static int cmd_stats(cli *g, int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false;
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (ch) {
        case OPT_JSON: json = true; break;
        case 'h': fputs(help_text, stdout); return 0;
        default: return option_error("stats", ch, argv);
        }
    }
    if (optind < argc)
        return usage_error("stats", "unexpected argument '%s'", argv[optind]);
    int st = client_open(g, "stats");
    if (st)
        return st;
    sl_stats stats;
    int rc = sl_stats_get(g->c, &stats);
    if (rc)
        return broker_error(g, "stats", rc, "", NULL);
    if (json)
        stats_json(&stats);
    else
        stats_table(&stats);
    if (fflush(stdout) || ferror(stdout)) {
        say("stats", "writing to standard output: %s", strerror(errno));
        return EXIT_BROKER;
    }
    return 0;
}

/* ---- main ---- */

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"broker", required_argument, NULL, 'b'},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    const char *env = getenv("SLUICE_BROKER");
    cli g = {.endpoint = env && env[0] ? env : SL_DEFAULT_ENDPOINT, .timeout_ms = DEFAULT_TIMEOUT_MS};
    long timeout_ms;
    int ch;
    opterr = 0;
    /* '+': stop at the command, whose options are its own */
    while ((ch = getopt_long(argc, argv, "+:b:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'b': g.endpoint = optarg; break;
        case OPT_TIMEOUT:
            if (!number_parse(optarg, 1, INT_MAX, &timeout_ms))
                return usage_error(NULL, "bad --timeout '%s' (expected milliseconds)", optarg);
            g.timeout_ms = (int)timeout_ms;
            break;
        case 'h': fputs(help_text, stdout); return 0;
        case OPT_VERSION: printf("sluice %s (wire protocol %d)\n", SLUICE_VERSION, PROTOCOL_VERSION); return 0;
        default: return option_error(NULL, ch, argv);
        }
    }
    if (optind >= argc)
        return usage_error(NULL, "no command given (send, consume or stats)");

    const char *cmd = argv[optind];
    int sub_argc = argc - optind;
    char **sub_argv = argv + optind;
    int st;
    if (strcmp(cmd, "send") == 0) {
        st = cmd_send(&g, sub_argc, sub_argv);
    } else if (strcmp(cmd, "consume") == 0) {
        st = cmd_consume(&g, sub_argc, sub_argv);
    } else if (strcmp(cmd, "stats") == 0) {
        st = cmd_stats(&g, sub_argc, sub_argv);
    } else if (strcmp(cmd, "help") == 0) {
        fputs(help_text, stdout);
        st = 0;
    } else {
        st = usage_error(NULL, "unknown command '%s' (send, consume or stats)", cmd);
    }
    sl_close(&g.c);
    return st;
}
