/*
 * cli_send.c - `sluice send`: publish each BODY argument, or each line of
 * standard input.
 *
 * Publishes go through sl_send_async with up to SEND_WINDOW in flight. Ids
 * are printed in input order as confirmations arrive, so a script can count
 * lines to learn how far a run got. The first failure stops the run; the
 * error says how many later messages were already in flight and so may have
 * been stored. With -k KEY and several messages, each gets KEY:N. With
 * several brokers (-b a,b), each message is routed by sl_multi_send (key,
 * else tag, else in turn; a down broker skipped for keyless messages) and
 * confirmed before the next. Headers (-H 'NAME: VALUE', --traceparent) go
 * with every message; the library checks them against the rules of
 * sluice.h before anything is sent.
 *
 * Costs: memory is bounded by the send window and by one input line, itself
 * capped at LINE_MAX_BYTES, the protocol's ceiling on a body.
 */
#include "cli_send.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sluice.h"
#include "cli_multi.h"
#include "cli_text.h"

/* `sluice send --help`; the layout is cli_core.h's */
const cli_core_help cli_send_help = {
    .summary = "publish messages",
    .body =
        "  sluice send [-p LEVEL] [-t TAG] [--cost N] [-k KEY] [--delay DURATION]\n"
        "              [--ttl DURATION] [-H 'NAME: VALUE']... [--traceparent TP]\n"
        "              [BODY...]\n"
        "      Publish messages. Each BODY argument is one message; with none, each\n"
        "      line of standard input is one (without its newline; a line longer than\n"
        "      the broker's largest body is an error). Prints the id of each message\n"
        "      once the broker has durably stored it, one per line, in input order.\n"
        "      Stops at the first failure; messages sent after the failed one may\n"
        "      have been stored, and the error says how many. A broker that stops\n"
        "      answering after the first reply (a stall, a long commit) is waited\n"
        "      for, in doubling steps from --timeout, up to 60 s in all, saying so\n"
        "      on standard error; then send gives up (exit 1).\n"
        "      With -b A,B each message goes to one of the brokers in turn.\n"
        "      -p, --level LEVEL    priority level, by name or number (default: the\n"
        "                           broker's default level)\n"
        "      -t, --tag TAG        tag every message with TAG (up to 255 bytes)\n"
        "      --cost N             units each message uses of every rate limit it\n"
        "                           passes (requests, rows, ...; default 1)\n"
        "      -k, --key KEY        idempotency key: a repeat within the broker's window\n"
        "                           (default 5 minutes) stores nothing and prints the\n"
        "                           first message's id. With several messages, message\n"
        "                           N gets the key KEY:N\n"
        "      --delay DURATION     deliver no sooner than this from now: milliseconds,\n"
        "                           or with a unit (500ms, 30s, 5m, 1h, 1d)\n"
        "      --ttl DURATION       time to live (milliseconds, or 30s, 5m, ...): not\n"
        "                           delivered in time, the message becomes a dead letter\n"
        "      -H, --header 'NAME: VALUE'\n"
        "                           a header for every message (repeatable, up to 32):\n"
        "                           returned on each delivery, forwarded by `consume\n"
        "                           --post` and given to `--exec` as SLUICE_HEADER_NAME.\n"
        "                           Names: 1-64 token characters, case-insensitive, each\n"
        "                           once; values up to 1024 bytes of text, 8192 bytes in\n"
        "                           all; hop-by-hop and reserved names (Connection,\n"
        "                           Host, Idempotency-Key, X-Sluice-*, ...) are refused\n"
        "      --traceparent TP     W3C trace context: the header traceparent, as\n"
        "                           00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>\n",
    .examples =
        "  sluice send -p high 'rebuild index'          publish one urgent message\n"
        "  seq 1000 | sluice send -t batch7             publish 1000 messages\n"
        "  sluice send --delay 5m -k report-7 'mail the report'  once, in 5 minutes\n"
        "  sluice send -H 'Content-Type: application/json' '{\"a\": 1}'  with a header\n",
};

#define SEND_WINDOW    256         /* publishes in flight */
#define LINE_MAX_BYTES (16u << 20) /* the protocol's ceiling on a body */
#define TAG_MAX_BYTES  255
#define DURATION_MAX_MS (365ull * 24 * 3600 * 1000) /* --delay and --ttl: a year */
#define STALL_LIMIT_MS 60000 /* how long a broker that answered once may stall before send gives up */

/* Long-only options get values outside the char range. */
enum { OPT_COST = 256, OPT_DELAY, OPT_TTL, OPT_TRACEPARENT };

typedef struct inflight {
    uint64_t ticket;
    size_t index; /* line or message number, from 1 */
    bool done;
    uint64_t id;
} inflight;

typedef struct sender {
    cli_core *g;
    const char *what; /* "line" or "message" */
    int level;
    const char *tag;
    uint32_t cost;
    const char *key;   /* idempotency key, or NULL */
    int many;          /* several messages: each gets KEY:N */
    uint64_t delay_ms;
    uint64_t ttl_ms;
    inflight ring[SEND_WINDOW];
    size_t head, count;
    sl_multi *multi;   /* several brokers (-b a,b): each message routed, one at a time */
    sl_header hdrs[SL_MAX_HEADERS]; /* -H and --traceparent, for every message */
    size_t nhdrs;
    char *hdr_text[SL_MAX_HEADERS]; /* each header's "NAME\0VALUE" (hdrs point into them) */
} sender;

/* sender_header adds the header NAME: VALUE (line), or name and value apart
 * (line NULL). The value loses the spaces and tabs around it, as an HTTP
 * header's does. Returns 0, or the exit status of a usage error. */
static int sender_header(sender *s, const char *cmd, const char *line, const char *name, const char *value)
{
    if (s->nhdrs == SL_MAX_HEADERS)
        return cli_text_usage_error(cmd, "more than %d headers", SL_MAX_HEADERS);
    size_t nlen;
    if (line) {
        const char *colon = strchr(line, ':');
        if (!colon || colon == line)
            return cli_text_usage_error(cmd, "bad -H '%s' (expected 'NAME: VALUE')", line);
        name = line;
        nlen = (size_t)(colon - line);
        value = colon + 1;
    } else {
        nlen = strlen(name);
    }
    while (*value == ' ' || *value == '\t')
        value++;
    size_t vlen = strlen(value);
    while (vlen && (value[vlen - 1] == ' ' || value[vlen - 1] == '\t'))
        vlen--;
    char *t = malloc(nlen + 1 + vlen + 1);
    if (!t) {
        cli_text_say(cmd, "out of memory");
        return CLI_TEXT_EXIT_FAILURE;
    }
    memcpy(t, name, nlen);
    t[nlen] = '\0';
    memcpy(t + nlen + 1, value, vlen);
    t[nlen + 1 + vlen] = '\0';
    s->hdr_text[s->nhdrs] = t;
    s->hdrs[s->nhdrs++] = (sl_header){t, t + nlen + 1};
    return 0;
}

/* traceparent_ok tells whether tp has the shape of a W3C traceparent:
 * version-traceid-parentid-flags in lowercase hex (2-32-16-2), ids not all
 * zero, version not ff. */
static bool traceparent_ok(const char *tp)
{
    static const unsigned widths[] = {2, 32, 16, 2};
    const char *p = tp;
    for (unsigned f = 0; f < 4; f++) {
        bool nonzero = false;
        for (unsigned i = 0; i < widths[f]; i++, p++) {
            if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                return false;
            nonzero |= *p != '0';
        }
        if ((f == 1 || f == 2) && !nonzero)
            return false;
        if (*p != (f < 3 ? '-' : '\0') && !(f == 3 && *p == '-' && tp[0] != '0'))
            return false; /* version 00 ends after the flags; a later version may go on */
        p++;
    }
    return strncmp(tp, "ff", 2) != 0;
}

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
    /* a broker that stalls (stopped, a long commit) or restarts: wait it out,
     * in growing steps, up to STALL_LIMIT_MS, saying so; the publishes in
     * flight are confirmed when it answers again */
    for (int64_t waited = s->g->timeout_ms, step = s->g->timeout_ms;
         rc == SL_ETIMEDOUT && s->g->answered && waited < STALL_LIMIT_MS; waited += step) {
        step = step * 2 < STALL_LIMIT_MS - waited ? step * 2 : STALL_LIMIT_MS - waited;
        cli_text_say("send", "no confirmation from the broker for %.1f s (stalled or restarting); waiting %.1f s "
                             "more (at most %d s in all)",
                     (double)waited / 1000.0, (double)step / 1000.0, STALL_LIMIT_MS / 1000);
        rc = sl_send_wait(s->g->c, (int)step, &k);
        if (rc == SL_OK)
            cli_text_say("send", "the broker answers again; going on");
    }
    if (rc) {
        sender_later(s, 0, later, sizeof later);
        snprintf(context, sizeof context, "%s %zu", s->what, sender_at(s, 0)->index);
        if (rc != SL_ETIMEDOUT)
            return cli_core_broker_error(s->g, "send", rc, context, later);
        cli_text_say("send",
                     "%s: no confirmation within %d ms (SL_ETIMEDOUT); it may have been stored%s",
                     context, s->g->answered ? STALL_LIMIT_MS : s->g->timeout_ms, later);
        return CLI_TEXT_EXIT_FAILURE;
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
        return cli_core_broker_error(s->g, "send", k.err, context, later);
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
    char key[300];
    if (s->key && s->many)
        snprintf(key, sizeof key, "%s:%zu", s->key, index);
    sl_put p = {.body = body, .body_len = len, .level = s->level, .tag = s->tag, .cost = s->cost,
                .key = s->key ? (s->many ? key : s->key) : NULL, .delay_ms = s->delay_ms,
                .ttl_ms = s->ttl_ms};
    if (s->multi) { /* several brokers: routed by key, else tag, else in turn */
        uint64_t id;
        int mrc = sl_multi_send_ex(s->multi, &p, s->hdrs, s->nhdrs, &id, NULL);
        if (mrc) {
            cli_text_say("send", "%s %zu: %s (%s)", s->what, index, sl_strerror(mrc), sl_errname(mrc));
            return CLI_TEXT_EXIT_FAILURE;
        }
        printf("%" PRIu64 "\n", id);
        return 0;
    }
    uint64_t ticket;
    int rc = sl_send_async_ex(s->g->c, &p, s->hdrs, s->nhdrs, &ticket);
    if (rc) {
        char why[1100] = "";
        const char *last = sl_last_error(s->g->c);
        if (last && strncmp(last, "headers: ", 9) == 0) /* a header broke a rule: the library says which */
            snprintf(why, sizeof why, "%s", last);
        /* report earlier messages first: a failure among them comes first */
        if ((st = sender_drain(s)))
            return st;
        char context[64];
        snprintf(context, sizeof context, "%s %zu", s->what, index);
        /* local errors: draining replaced sl_last_error, and it was generic */
        if (why[0])
            cli_text_say("send", "%s: %s (%s)", context, why, sl_errname(rc));
        else if (rc == SL_ETOOBIG)
            cli_text_say("send",
                         "%s: message exceeds a size limit (SL_ETOOBIG): its %zu bytes are more "
                         "than the broker accepts",
                         context, len);
        else
            cli_text_say("send", "%s: %s (%s)", context, sl_strerror(rc), sl_errname(rc));
        return CLI_TEXT_EXIT_FAILURE;
    }
    *sender_at(s, s->count) = (inflight){.ticket = ticket, .index = index};
    s->count++;
    return 0;
}

static int send_stdin(sender *s)
{
    char *buf = NULL;
    size_t cap = 0, len = 0, lineno = 0;
    int st = 0, got = 0;
    while (!st && (got = cli_text_line_read(stdin, &buf, &cap, &len, LINE_MAX_BYTES)) > 0)
        st = sender_put(s, buf ? buf : "", len, ++lineno);
    if (!st && got < 0) {
        int err = errno;
        st = sender_drain(s);
        if (!st && got == -1) {
            cli_text_say("send",
                         "line %zu: longer than %u bytes, the largest body the protocol allows",
                         lineno + 1, LINE_MAX_BYTES);
            st = CLI_TEXT_EXIT_FAILURE;
        } else if (!st) {
            cli_text_say("send", "reading standard input: %s", cli_text_strerror(err));
            st = CLI_TEXT_EXIT_FAILURE;
        }
    }
    free(buf);
    return st;
}

int cli_send_main(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const struct option opts[] = {
        {"level", required_argument, NULL, 'p'},
        {"priority", required_argument, NULL, 'p'},
        {"tag", required_argument, NULL, 't'},
        {"cost", required_argument, NULL, OPT_COST},
        {"key", required_argument, NULL, 'k'},
        {"delay", required_argument, NULL, OPT_DELAY},
        {"ttl", required_argument, NULL, OPT_TTL},
        {"header", required_argument, NULL, 'H'},
        {"traceparent", required_argument, NULL, OPT_TRACEPARENT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *level_text = NULL;
    sender *s = calloc(1, sizeof *s);
    long cost = 1;
    int ch, st = 0;
    if (!s) {
        cli_text_say(cmd, "out of memory");
        return CLI_TEXT_EXIT_FAILURE;
    }
    s->g = g;
    s->level = SL_LEVEL_DEFAULT;
    optind = 0;
    while (!st && (ch = getopt_long(argc, argv, ":p:t:k:H:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'p': level_text = optarg; break;
        case 't': s->tag = optarg; break;
        case 'k':
            s->key = optarg;
            if (!*optarg || strlen(optarg) > 240)
                st = cli_text_usage_error(cmd, "bad --key: 1 to 240 bytes, please%s", "");
            break;
        case OPT_DELAY:
            if (!cli_text_duration_parse(optarg, 1, false, DURATION_MAX_MS, &s->delay_ms))
                st = cli_text_usage_error(cmd, "bad --delay '%s' (milliseconds, or 30s, 5m, 1h; at most a year)", optarg);
            break;
        case OPT_TTL:
            if (!cli_text_duration_parse(optarg, 1, false, DURATION_MAX_MS, &s->ttl_ms) || !s->ttl_ms)
                st = cli_text_usage_error(cmd, "bad --ttl '%s' (milliseconds, or 30s, 5m, 1h; at most a year)", optarg);
            break;
        case OPT_COST:
            if (!cli_text_number_parse(optarg, 1, UINT32_MAX, &cost))
                st = cli_text_usage_error(cmd, "bad --cost '%s' (expected 1 to %" PRIu32 ")",
                                          optarg, UINT32_MAX);
            s->cost = (uint32_t)cost;
            break;
        case 'H': st = sender_header(s, cmd, optarg, NULL, NULL); break;
        case OPT_TRACEPARENT:
            if (!traceparent_ok(optarg))
                st = cli_text_usage_error(cmd, "bad --traceparent '%s' (expected 00-<32 hex>-<16 hex>-<2 hex>, "
                                          "lowercase, ids not all zero)", optarg);
            else
                st = sender_header(s, cmd, NULL, "traceparent", optarg);
            break;
        case 'h':
            st = cli_core_help_show(g, cmd);
            goto done;
        default: st = cli_text_option_error(cmd, ch, argv); break;
        }
    }
    if (st)
        goto done;
    if (s->tag && strlen(s->tag) > TAG_MAX_BYTES) {
        st = cli_text_usage_error(cmd, "the tag is %zu bytes; at most %d are allowed",
                                  strlen(s->tag), TAG_MAX_BYTES);
        goto done;
    }
    if (cli_multi_is(g)) { /* several brokers: the first one's levels stand for all */
        sl_options o = {.timeout_ms = g->timeout_ms};
        int mrc = sl_multi_connect(g->endpoint, &o, &s->multi);
        if (mrc) {
            st = mrc == SL_EINVAL ? cli_text_usage_error(cmd, "invalid broker list '%s'", g->endpoint)
                                  : cli_core_broker_error(g, cmd, mrc, "cannot create the clients", NULL);
            goto done;
        }
        g->c = sl_multi_at(s->multi, 0); /* borrowed until done */
    } else if ((st = cli_core_connect(g, cmd))) {
        goto done;
    }
    /* one round trip up front: it learns the levels and the largest body,
     * and tells an absent broker from a slow one */
    int rc = sl_levels(g->c, NULL, NULL);
    if (rc) {
        st = cli_core_broker_error(g, cmd, rc, "", NULL);
        goto done;
    }
    g->answered = true;
    if (level_text) {
        unsigned level;
        if ((st = cli_core_level_resolve(g, cmd, level_text, &level)))
            goto done;
        s->level = (int)level;
    }
    s->many = !(optind + 1 == argc); /* one BODY argument keeps its key as given */
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
    if (s->multi) {
        g->c = NULL;
        sl_multi_close(&s->multi);
    }
    for (size_t i = 0; i < s->nhdrs; i++)
        free(s->hdr_text[i]);
    free(s);
    return st;
}
