/*
 * cli_dead.c - `sluice dead list|peek|requeue|purge`: what an operator does
 * with dead letters (messages that used up their attempts, or whose time to
 * live ran out).
 *
 *   list [LEVEL] [--limit N] [--after ID] [--json]
 *       pages of SL_DEAD_PAGE through the library until N are shown
 *       (default 100), as a table or a JSON array of objects; without a
 *       level, every level's in turn, with a LEVEL column.
 *   peek ID
 *       the whole body on standard output, byte for byte.
 *   requeue LEVEL|ID [--to LEVEL] [--limit N] [--json]
 *   purge LEVEL [--older-than S] [--limit N] [--json]
 *       a series of chunks (SL_DEAD_CHUNK each, one broker transaction
 *       each) until the level has none left or N were changed (requeue:
 *       at most as many as the level held when it started, so that a
 *       message dying again meanwhile is not requeued twice). Cut short
 *       (Ctrl-C, a crash), a series is simply run again: nothing is done
 *       twice, nothing is lost.
 *
 * LEVEL|ID: a level's name is a level; "id:N" and "level:N" say which; a
 * plain number N is an id when a dead letter has that id or the broker has
 * no level N, else level N. When it could be either, it is the id, and a
 * note on standard error says how to name the level.
 *
 * Costs: one round trip per page or chunk; requeue by id one peek more.
 */
#include "cli_dead.h"

#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_table.h"
#include "cli_text.h"

/* `sluice dead --help`; the layout is cli_core.h's */
const cli_core_help cli_dead_help = {
    .summary = "list, show, requeue and purge dead letters",
    .body =
        "  sluice dead list [LEVEL] [--limit N] [--after ID] [--json]\n"
        "      List the dead letters of LEVEL, or of every level without one\n"
        "      (messages that used up their attempts, or whose time to live ran\n"
        "      out), oldest (smallest id) first: id, tag, attempts, when it died\n"
        "      (UTC), reason and the start of the body.\n"
        "      --limit N            show at most N (default 100)\n"
        "      --after ID           start after ID\n"
        "      --json               an array of objects: id, level, tag, attempts,\n"
        "                           when, died_ms, reason, body_preview, body_bytes\n"
        "  sluice dead peek [--headers] ID\n"
        "      Write dead letter ID's whole body to standard output, byte for byte.\n"
        "      --headers            first its headers as published, a 'Name: value'\n"
        "                           line each, then an empty line\n"
        "  sluice dead requeue LEVEL|ID [--to LEVEL] [--limit N] [--json]\n"
        "      Put the dead letters of LEVEL (or the one with id ID) back at the tail\n"
        "      of their level, or of --to LEVEL, as new: attempt 0, no time to live.\n"
        "      A plain number is a dead letter's id if there is one, else a level;\n"
        "      level:N and id:N say which. Works in chunks of 1000, each one\n"
        "      transaction: if it is cut short (Ctrl-C, a lost broker), it says how\n"
        "      many moved; run it again: no message is lost or requeued twice.\n"
        "  sluice dead purge LEVEL [--older-than DURATION] [--limit N] [--json]\n"
        "      Delete dead letters of LEVEL for good: all, or those that died more\n"
        "      than DURATION ago (seconds, or 30m, 2h, 7d); at most N. Chunks of\n"
        "      1000, like requeue, and it says how many went if cut short.\n"
        "      Values shown in the tables (tags, reasons, bodies) escape control\n"
        "      characters and invalid UTF-8 (\\e, \\x07, \\n); --json is exact.\n",
    .examples =
        "  sluice dead list normal --limit 20           the first 20 of normal\n"
        "  sluice dead requeue normal --to low          back, into level low\n"
        "  sluice dead purge normal --older-than 7d     those dead for a week\n",
};

#define LIST_DEFAULT 100

enum { OPT_LIMIT = 256, OPT_AFTER, OPT_TO, OPT_OLDER_THAN, OPT_JSON };

/* The options of every dead command; each takes the ones it accepts. */
typedef struct dead_opts {
    uint64_t limit;       /* 0: the default */
    uint64_t after;
    const char *to;       /* NULL: the same level */
    uint64_t older_ms;
    bool json;
} dead_opts;

/* opts_parse reads argv's options among allowed (OPT_ values, 0-ended),
 * leaving the operands at argv[optind..]. Returns CLI_CORE_GO_ON or the
 * exit status. */
static int opts_parse(cli_core *g, const char *cmd, int argc, char **argv, const int *allowed, dead_opts *o)
{
    static const struct option all[] = {
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"after", required_argument, NULL, OPT_AFTER},
        {"to", required_argument, NULL, OPT_TO},
        {"older-than", required_argument, NULL, OPT_OLDER_THAN},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    memset(o, 0, sizeof *o);
    optind = 0;
    while ((ch = getopt_long(argc, argv, ":h", all, NULL)) != -1) {
        int bad = cli_text_option_allowed(cmd, ch, allowed, all, argv);
        if (bad)
            return bad;
        switch (ch) {
        case 'h': return cli_core_help_show(g, cmd);
        case OPT_JSON: o->json = true; break;
        case OPT_TO: o->to = optarg; break;
        case OPT_LIMIT:
            if (!cli_text_u64_parse(optarg, &o->limit) || o->limit == 0)
                return cli_text_usage_error(cmd, "bad --limit '%s' (expected a number above 0)", optarg);
            break;
        case OPT_AFTER:
            if (!cli_text_u64_parse(optarg, &o->after))
                return cli_text_usage_error(cmd, "bad --after '%s' (expected a message id)", optarg);
            break;
        default:
            if (!cli_text_seconds_parse(optarg, false, &o->older_ms))
                return cli_text_usage_error(cmd, "bad --older-than '%s' (expected seconds, such as 3600 or 0.5)",
                                            optarg);
            break;
        }
    }
    return CLI_CORE_GO_ON;
}

/* one_operand checks that exactly one operand (what) follows the options. */
static int one_operand(const char *cmd, int argc, char **argv, const char *what)
{
    if (argc - optind == 1)
        return CLI_CORE_GO_ON;
    return argc - optind ? cli_text_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1])
                         : cli_text_usage_error(cmd, "expected %s", what);
}

/* ---- list ---- */

/* when_format writes ms since the epoch as 2026-11-25T02:00:00.123Z. */
static void when_format(uint64_t ms, char *buf, size_t size)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    if (!gmtime_r(&s, &tm) || !strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm)) {
        snprintf(buf, size, "?");
        return;
    }
    size_t used = strlen(buf);
    snprintf(buf + used, size - used, ".%03uZ", (unsigned)(ms % 1000));
}

static void letter_json(const sl_dead_letter *d, const char *level, bool first)
{
    char when[40], preview[SL_DEAD_TEXT * 5 + 8];
    when_format(d->died_ms, when, sizeof when);
    cli_text_preview(d->preview, d->preview_len, true, preview, sizeof preview);
    printf("%s\n  {\"id\":%" PRIu64 ",\"level\":", first ? "" : ",", d->id);
    cli_text_json_string(level);
    printf(",\"tag\":");
    cli_text_json_string(d->tag);
    printf(",\"attempts\":%" PRIu64 ",\"when\":\"%s\",\"died_ms\":%" PRIu64 ",\"reason\":", d->attempts, when,
           d->died_ms);
    cli_text_json_string(d->reason);
    printf(",\"body_preview\":\"%s\",\"body_bytes\":%" PRIu64 "}", preview, d->body_bytes);
}

static int dead_list(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const int allowed[] = {OPT_LIMIT, OPT_AFTER, OPT_JSON, 0};
    dead_opts o;
    unsigned level = 0, last = 0, nlevels = 0;
    const char *const *names;
    int st = opts_parse(g, cmd, argc, argv, allowed, &o);
    if (st == CLI_CORE_GO_ON && argc - optind != 0) /* no level: every level's, a LEVEL column beside */
        st = one_operand(cmd, argc, argv, "a level");
    if (st != CLI_CORE_GO_ON)
        return st;
    bool all = argc - optind == 0;
    if ((st = cli_core_connect(g, cmd)) || (!all && (st = cli_core_level_resolve(g, cmd, argv[optind], &level))))
        return st;
    int rc = all ? sl_levels(g->c, &nlevels, &names) : SL_OK;
    if (rc)
        return cli_core_broker_error(g, cmd, rc, "reading the broker's levels", NULL);
    last = all ? nlevels - 1 : level;
    uint64_t limit = o.limit ? o.limit : LIST_DEFAULT, shown = 0, after = o.after;
    static const char *const head[] = {"LEVEL", "ID", "TAG", "ATTEMPTS", "WHEN", "REASON", "BODY"};
    cli_table *t = o.json ? NULL
                          : cli_table_new(all ? 7 : 6, all ? head : head + 1, all ? "lrlrlll" : "rlrlll",
                                          (unsigned)(limit < 1000000 ? limit : 1000000));
    char number[16];
    const char *lname = cli_core_level_name(g, level, number, sizeof number);
    if (!o.json && !t) {
        cli_text_say(cmd, "out of memory");
        return CLI_TEXT_EXIT_FAILURE;
    }
    if (o.json)
        printf("[");
    if (!o.json && limit > 1000000)
        limit = 1000000; /* a table holds so many rows; --json streams any number */
    for (uint64_t i = 0; shown < limit && i < UINT32_MAX; i++) {
        sl_dead_letter page[SL_DEAD_PAGE];
        unsigned n = 0, want = limit - shown < SL_DEAD_PAGE ? (unsigned)(limit - shown) : SL_DEAD_PAGE;
        if ((rc = sl_dead_list(g->c, level, after, want, page, &n)))
            break;
        lname = cli_core_level_name(g, level, number, sizeof number);
        for (unsigned k = 0; k < n; k++) {
            const sl_dead_letter *d = &page[k];
            if (o.json) {
                letter_json(d, lname, shown == 0);
            } else {
                if (all)
                    cli_table_add(t, "%s", lname);
                char when[40], preview[SL_DEAD_TEXT * 4 + 8];
                when_format(d->died_ms, when, sizeof when);
                cli_text_safe((const char *)d->preview, d->preview_len, preview, sizeof preview);
                cli_table_add(t, "%" PRIu64, d->id);
                cli_table_add(t, "%s", d->tag[0] ? d->tag : "-");
                cli_table_add(t, "%" PRIu64, d->attempts);
                cli_table_add(t, "%s", when);
                cli_table_add(t, "%s", d->reason);
                cli_table_add(t, "%s%s", preview, d->body_bytes > d->preview_len ? "..." : "");
            }
            shown++;
            after = d->id;
        }
        if (n < want && level == last)
            break;
        if (n < want) { /* every level's: the next one, from the start (or --after) */
            level++;
            after = o.after;
        }
    }
    if (o.json)
        printf("%s]\n", shown ? "\n" : "");
    else if (rc == SL_OK && cli_table_print(t))
        rc = SL_ENOMEM;
    cli_table_destroy(&t);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, argv[optind], NULL);
    return cli_core_output_done(cmd);
}

/* ---- peek ---- */

static int dead_peek(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const struct option opts[] = {
        {"headers", no_argument, NULL, 'H'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    uint64_t id;
    bool headers = false;
    int ch, st;
    optind = 0;
    while ((ch = getopt_long(argc, argv, ":Hh", opts, NULL)) != -1) {
        switch (ch) {
        case 'H': headers = true; break;
        case 'h': return cli_core_help_show(g, cmd);
        default: return cli_text_option_error(cmd, ch, argv);
        }
    }
    if (argc - optind != 1)
        return cli_text_usage_error(cmd, argc - optind < 1 ? "expected a message id%s" : "unexpected argument%s", "");
    if (!cli_text_u64_parse(argv[optind], &id))
        return cli_text_usage_error(cmd, "bad message id '%s' (expected a number)", argv[optind]);
    if ((st = cli_core_connect(g, cmd)))
        return st;
    sl_dead_message m;
    sl_msg_more more = {.size = sizeof more};
    int rc = sl_dead_peek_ex(g->c, id, &m, &more);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, argv[optind], NULL);
    if (headers) { /* as an HTTP message: a line per header, a blank line, the body */
        for (size_t i = 0; i < more.nheaders; i++)
            printf("%s: %s\n", more.headers[i].name, more.headers[i].value);
        printf("\n");
    }
    if (m.body_len && fwrite(m.body, 1, m.body_len, stdout) != m.body_len) {
        cli_text_say(cmd, "writing the body failed");
        return CLI_TEXT_EXIT_FAILURE;
    }
    return cli_core_output_done(cmd);
}

/* ---- requeue and purge ---- */

/* Ctrl-C (or SIGTERM) during a requeue or a purge stops it between chunks:
 * each chunk is one transaction, so what was done is whole, and it is said.
 * A second signal stops at once (the handler resets itself). */
static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    interrupted = sig;
}

static void interrupt_catch(void)
{
    struct sigaction sa = {.sa_handler = on_interrupt, .sa_flags = SA_RESETHAND};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* done_so_far says, after an interruption or a failure, how many dead
 * letters of level were moved (what, "requeued" or "purged") before it. */
static void done_so_far(cli_core *g, const char *cmd, const char *what, uint64_t n, unsigned level,
                        const char *why)
{
    char number[16];
    cli_text_say(cmd, "%s after %s %" PRIu64 " dead letter%s of level %s (each chunk of 1000 is whole: run it "
                      "again for the rest)",
                 why, what, n, n == 1 ? "" : "s", cli_core_level_name(g, level, number, sizeof number));
}

/* target reads LEVEL|ID (see the essay): *is_id tells which. */
static int target(cli_core *g, const char *cmd, const char *text, bool *is_id, unsigned *level, uint64_t *id)
{
    uint64_t n;
    unsigned nlevels = 0;
    const char *const *names = NULL;
    *is_id = false;
    if (strncmp(text, "id:", 3) == 0 || strncmp(text, "level:", 6) == 0) {
        *is_id = text[0] == 'i';
        if (*is_id && !cli_text_u64_parse(text + 3, id))
            return cli_text_usage_error(cmd, "bad message id '%s'", text + 3);
        return *is_id ? 0 : cli_core_level_resolve(g, cmd, text + 6, level);
    }
    if (!cli_text_u64_parse(text, &n))
        return cli_core_level_resolve(g, cmd, text, level);
    int rc = sl_levels(g->c, &nlevels, &names);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, "reading the broker's levels", NULL);
    for (unsigned l = 0; l < nlevels; l++)
        if (strcmp(names[l], text) == 0) {
            *level = l; /* a level named by digits */
            return 0;
        }
    *id = n;
    if (n >= nlevels) {
        *is_id = true;
        return 0;
    }
    sl_dead_message m;
    rc = sl_dead_peek(g->c, n, &m);
    if (rc == SL_OK) {
        cli_text_say(cmd, "note: %s is taken as the id of a dead letter; for level %s say level:%s", text, text,
                     text);
        *is_id = true;
        return 0;
    }
    if (rc != SL_ENOTFOUND)
        return cli_core_broker_error(g, cmd, rc, text, NULL);
    *level = (unsigned)n;
    return 0;
}

static int dead_requeue(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const int allowed[] = {OPT_LIMIT, OPT_TO, OPT_JSON, 0};
    dead_opts o;
    unsigned level = 0, to = SL_SAME_LEVEL;
    uint64_t id = 0, moved = 0;
    bool is_id, cut_short = false; /* Ctrl-C before the last chunk */
    int st = opts_parse(g, cmd, argc, argv, allowed, &o);
    if (st == CLI_CORE_GO_ON)
        st = one_operand(cmd, argc, argv, "a level or a message id");
    if (st != CLI_CORE_GO_ON)
        return st;
    if ((st = cli_core_connect(g, cmd)) || (st = target(g, cmd, argv[optind], &is_id, &level, &id)) ||
        (o.to && (st = cli_core_level_resolve(g, cmd, o.to, &to))))
        return st;
    int rc = SL_OK;
    if (is_id) {
        if ((rc = sl_dead_requeue_id(g->c, id, to)) == SL_OK)
            moved = 1;
    } else {
        /* at most the dead letters there now: a message that dies again
         * while this runs is not requeued twice by one command */
        sl_stats now;
        if ((rc = sl_stats_get(g->c, &now)) == SL_OK && level < now.nlevels &&
            (!o.limit || now.level[level].dead < o.limit))
            o.limit = now.level[level].dead;
        interrupt_catch();
        for (uint64_t after = 1; rc == SL_OK && after && o.limit && moved < o.limit;) {
            if (interrupted) {
                cut_short = true;
                break;
            }
            uint64_t n = 0;
            rc = sl_dead_requeue(g->c, level, to, o.limit - moved, &n, &after);
            if (rc || n == 0)
                break;
            moved += n;
        }
    }
    if (rc) {
        int failed = cli_core_broker_error(g, cmd, rc, argv[optind], NULL);
        if (!is_id)
            done_so_far(g, cmd, "requeuing", moved, level, "stopped");
        return failed;
    }
    char number[16];
    if (cut_short) {
        done_so_far(g, cmd, "requeuing", moved, level, "interrupted");
        if (o.json)
            printf("{\"requeued\":%" PRIu64 ",\"interrupted\":true}\n", moved);
        cli_core_output_done(cmd);
        return CLI_TEXT_EXIT_FAILURE;
    }
    if (o.json)
        printf("{\"requeued\":%" PRIu64 "}\n", moved);
    else if (is_id)
        printf("requeued dead letter %" PRIu64 "%s%s\n", id, to == SL_SAME_LEVEL ? "" : " to level ",
               to == SL_SAME_LEVEL ? "" : cli_core_level_name(g, to, number, sizeof number));
    else
        printf("requeued %" PRIu64 " dead letter%s of level %s\n", moved, moved == 1 ? "" : "s",
               cli_core_level_name(g, level, number, sizeof number));
    return cli_core_output_done(cmd);
}

static int dead_purge(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const int allowed[] = {OPT_LIMIT, OPT_OLDER_THAN, OPT_JSON, 0};
    dead_opts o;
    unsigned level;
    uint64_t purged = 0, after = 0;
    int st = opts_parse(g, cmd, argc, argv, allowed, &o);
    if (st == CLI_CORE_GO_ON)
        st = one_operand(cmd, argc, argv, "a level");
    if (st != CLI_CORE_GO_ON)
        return st;
    if ((st = cli_core_connect(g, cmd)) || (st = cli_core_level_resolve(g, cmd, argv[optind], &level)))
        return st;
    int rc;
    interrupt_catch();
    do {
        uint64_t n = 0;
        rc = sl_dead_purge(g->c, level, o.older_ms, o.limit ? o.limit - purged : 0, &after, &n);
        purged += rc ? 0 : n;
    } while (rc == SL_OK && after && (!o.limit || purged < o.limit) && !interrupted);
    if (rc) {
        int failed = cli_core_broker_error(g, cmd, rc, argv[optind], NULL);
        done_so_far(g, cmd, "purging", purged, level, "stopped");
        return failed;
    }
    if (interrupted && after) {
        done_so_far(g, cmd, "purging", purged, level, "interrupted");
        if (o.json)
            printf("{\"purged\":%" PRIu64 ",\"interrupted\":true}\n", purged);
        cli_core_output_done(cmd);
        return CLI_TEXT_EXIT_FAILURE;
    }
    char number[16];
    if (o.json)
        printf("{\"purged\":%" PRIu64 "}\n", purged);
    else
        printf("purged %" PRIu64 " dead letter%s of level %s\n", purged, purged == 1 ? "" : "s",
               cli_core_level_name(g, level, number, sizeof number));
    return cli_core_output_done(cmd);
}

int cli_dead_main(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const cli_core_command subs[] = {
        {"list", dead_list, NULL},
        {"peek", dead_peek, NULL},
        {"requeue", dead_requeue, NULL},
        {"purge", dead_purge, NULL},
    };
    return cli_core_run(g, cmd, subs, sizeof subs / sizeof subs[0], argc - 1, argv + 1);
}
