/*
 * cli_msgs.c - `sluice peek|delete|purge|move`: what an operator does with
 * the messages waiting in a level (ready: not out with a consumer).
 *
 *   peek LEVEL [--tag T] [--limit N] [--json]
 *       pages of SL_MSG_PAGE through the library until N are shown (default
 *       20): id, tag, attempts, age, cost, size and the start of the body,
 *       every byte that could move a terminal's cursor written as \xHH.
 *       Nothing is taken.
 *   delete ID [--json]
 *       one waiting (or delayed) message; refused while it is out with a
 *       consumer.
 *   purge LEVEL [--tag T] [--older-than S] [--dry-run] [--limit N] [--json]
 *   move LEVEL --to LEVEL [--tag T] [--limit N] [--json]
 *       a series of chunks (SL_MSG_CHUNK each, one broker transaction each)
 *       until the level's end, or N, or as many as the level held ready
 *       when the command started (so that a level publishers keep filling
 *       ends). Cut short (Ctrl-C, a crash), a series is run again: nothing
 *       is done twice, nothing is lost. Messages out with consumers are left
 *       alone, and said so.
 *
 * Costs: one round trip per page or chunk, and one STATS for the bound.
 */
#include "cli_msgs.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli_table.h"
#include "cli_text.h"

#define PEEK_DEFAULT 20

const cli_core_help cli_peek_help = {
    .summary = "show a level's waiting messages without taking them",
    .body =
        "  sluice peek LEVEL [--tag T] [--limit N] [--json]\n"
        "      Show the messages waiting in LEVEL without taking them, oldest first:\n"
        "      id, tag, attempts, age, cost, size and the start of the body (control\n"
        "      bytes escaped). Messages out with a consumer are not shown.\n"
        "      -t, --tag T          only tag T's messages\n"
        "      --limit N            show at most N (default 20)\n"
        "      --json               an array of objects: id, level, tag, attempts,\n"
        "                           age_ms, cost, body_bytes, body_preview\n",
    .examples =
        "  sluice peek normal --limit 5                 the next five of normal\n",
};

const cli_core_help cli_delete_help = {
    .summary = "delete one waiting or delayed message",
    .body =
        "  sluice delete ID [--json]\n"
        "      Delete message ID, waiting or delayed; one out with a consumer is\n"
        "      refused (exit 1): settle it, or wait for its lease to end.\n",
    .examples =
        "  sluice delete 42                             message 42 is gone\n",
};

const cli_core_help cli_purge_help = {
    .summary = "delete a level's waiting messages",
    .body =
        "  sluice purge LEVEL [--tag T] [--older-than DURATION] [--dry-run]\n"
        "               [--limit N] [--json]\n"
        "      Delete the waiting messages of LEVEL: all, a tag's, or those published\n"
        "      more than DURATION ago. In chunks of 1000, one transaction each, up\n"
        "      to as many as the level held when it started: cut short, run it\n"
        "      again; nothing is done twice. Messages out with consumers are left\n"
        "      alone, and the output says how many.\n"
        "      -t, --tag T          only tag T's messages\n"
        "      --older-than DURATION  only those published longer ago (30m, 7d;\n"
        "                           a plain number is seconds)\n"
        "      --dry-run            count them, delete nothing\n"
        "      --limit N            delete at most N\n"
        "      --json               what was done, as an object\n",
    .examples =
        "  sluice purge low --tag batch7 --dry-run      how many would go\n",
};

const cli_core_help cli_move_help = {
    .summary = "move a level's waiting messages to another level",
    .body =
        "  sluice move LEVEL --to LEVEL [--tag T] [--limit N] [--json]\n"
        "      Move the waiting messages of LEVEL (all, or a tag's) to the tail of\n"
        "      the --to level, in their order, keeping id, tag, body, cost, attempts\n"
        "      and time to live: to empty a level before 'level set --fair', say.\n"
        "      In chunks of 1000 like purge; messages out with consumers stay, and\n"
        "      the output says how many.\n"
        "      --to LEVEL           the level to move them to\n"
        "      -t, --tag T          only tag T's messages\n"
        "      --limit N            move at most N\n"
        "      --json               what was done, as an object\n",
    .examples =
        "  sluice move normal --to low                  empty normal into low\n",
};

enum { OPT_LIMIT = 256, OPT_TAG, OPT_TO, OPT_OLDER_THAN, OPT_DRY_RUN, OPT_JSON };

/* The options of every command here; each takes the ones it accepts. */
typedef struct msgs_opts {
    uint64_t limit; /* 0: the default */
    const char *tag;
    const char *to;
    uint64_t older_ms;
    bool dry_run, json;
} msgs_opts;

/* opts_parse reads argv's options among allowed (OPT_ values, 0-ended),
 * leaving the operands at argv[optind..], and checks that exactly one
 * operand (what) follows. Returns CLI_CORE_GO_ON or the exit status. */
static int opts_parse(cli_core *g, const char *cmd, int argc, char **argv, const int *allowed, const char *what,
                      msgs_opts *o)
{
    static const struct option all[] = {
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"tag", required_argument, NULL, OPT_TAG},
        {"to", required_argument, NULL, OPT_TO},
        {"older-than", required_argument, NULL, OPT_OLDER_THAN},
        {"dry-run", no_argument, NULL, OPT_DRY_RUN},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    memset(o, 0, sizeof *o);
    optind = 0;
    while ((ch = getopt_long(argc, argv, ":ht:", all, NULL)) != -1) {
        if (ch == 't')
            ch = OPT_TAG;
        int bad = cli_text_option_allowed(cmd, ch, allowed, all, argv);
        if (bad)
            return bad;
        switch (ch) {
        case 'h': return cli_core_help_show(g, cmd);
        case OPT_JSON: o->json = true; break;
        case OPT_DRY_RUN: o->dry_run = true; break;
        case OPT_TO: o->to = optarg; break;
        case OPT_TAG:
            if (strlen(optarg) > 255)
                return cli_text_usage_error(cmd, "a tag is at most 255 bytes");
            o->tag = optarg;
            break;
        case OPT_LIMIT:
            if (!cli_text_u64_parse(optarg, &o->limit) || o->limit == 0)
                return cli_text_usage_error(cmd, "bad --limit '%s' (expected a number above 0)", optarg);
            break;
        default:
            if (!cli_text_seconds_parse(optarg, false, &o->older_ms) || o->older_ms == 0)
                return cli_text_usage_error(cmd, "bad --older-than '%s' (expected a duration above 0, such as "
                                            "3600, 30m or 7d; plain numbers are seconds)", optarg);
            break;
        }
    }
    if (argc - optind == 1)
        return CLI_CORE_GO_ON;
    return argc - optind ? cli_text_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1])
                         : cli_text_usage_error(cmd, "expected %s", what);
}

/* ---- peek ---- */

static void waiting_json(const sl_waiting *w, const char *level, bool first)
{
    char preview[SL_MSG_TEXT * 5 + 8];
    cli_text_preview(w->preview, w->preview_len, true, preview, sizeof preview);
    printf("%s\n  {\"id\":%" PRIu64 ",\"level\":", first ? "" : ",", w->id);
    cli_text_json_string(level);
    printf(",\"tag\":");
    cli_text_json_string(w->tag);
    printf(",\"attempts\":%" PRIu64 ",\"age_ms\":%" PRIu64 ",\"cost\":%" PRIu32 ",\"body_bytes\":%" PRIu64
           ",\"body_preview\":\"%s\"}",
           w->attempts, w->age_ms, w->cost, w->body_bytes, preview);
}

int cli_msgs_peek(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const int allowed[] = {OPT_LIMIT, OPT_TAG, OPT_JSON, 0};
    msgs_opts o;
    unsigned level;
    int st = opts_parse(g, cmd, argc, argv, allowed, "a level", &o);
    if (st != CLI_CORE_GO_ON)
        return st;
    if ((st = cli_core_connect(g, cmd)) || (st = cli_core_level_resolve(g, cmd, argv[optind], &level)))
        return st;
    uint64_t limit = o.limit ? o.limit : PEEK_DEFAULT, shown = 0, after = 0;
    if (!o.json && limit > 1000000)
        limit = 1000000; /* a table holds so many rows; --json streams any number */
    static const char *const head[] = {"ID", "TAG", "ATTEMPTS", "AGE", "COST", "SIZE", "BODY"};
    cli_table *t = o.json ? NULL : cli_table_new(7, head, "rlrrrrl", (unsigned)limit);
    char number[16];
    const char *lname = cli_core_level_name(g, level, number, sizeof number);
    if (!o.json && !t) {
        cli_text_say(cmd, "out of memory");
        return CLI_TEXT_EXIT_FAILURE;
    }
    if (o.json)
        printf("[");
    int rc = SL_OK;
    for (uint64_t i = 0; shown < limit && i < UINT32_MAX; i++) {
        sl_waiting page[SL_MSG_PAGE];
        unsigned n = 0, want = limit - shown < SL_MSG_PAGE ? (unsigned)(limit - shown) : SL_MSG_PAGE;
        if ((rc = sl_msg_peek(g->c, level, o.tag, after, want, page, &n, &after)))
            break;
        for (unsigned k = 0; k < n; k++) {
            const sl_waiting *w = &page[k];
            if (o.json) {
                waiting_json(w, lname, shown == 0);
            } else {
                char age[32], preview[SL_MSG_TEXT * 4 + 8];
                cli_text_age_format(w->age_ms, age, sizeof age);
                cli_text_preview(w->preview, w->preview_len, false, preview, sizeof preview);
                char tag[SL_MSG_TEXT * 4 + 8];
                cli_text_preview((const unsigned char *)w->tag, strlen(w->tag), false, tag, sizeof tag);
                cli_table_add(t, "%" PRIu64, w->id);
                cli_table_add(t, "%s", tag[0] ? tag : "-");
                cli_table_add(t, "%" PRIu64, w->attempts);
                cli_table_add(t, "%s", age);
                cli_table_add(t, "%" PRIu32, w->cost);
                cli_table_add(t, "%" PRIu64, w->body_bytes);
                cli_table_add(t, "%s%s", preview, w->body_bytes > w->preview_len ? "..." : "");
            }
            shown++;
        }
        if (!after)
            break;
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

/* ---- delete ---- */

int cli_msgs_delete(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const int allowed[] = {OPT_JSON, 0};
    msgs_opts o;
    uint64_t id;
    unsigned level = 0;
    int st = opts_parse(g, cmd, argc, argv, allowed, "a message id", &o);
    if (st != CLI_CORE_GO_ON)
        return st;
    if (!cli_text_u64_parse(argv[optind], &id))
        return cli_text_usage_error(cmd, "bad message id '%s' (expected a number)", argv[optind]);
    if ((st = cli_core_connect(g, cmd)))
        return st;
    int rc = sl_msg_delete(g->c, id, &level);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, argv[optind], NULL);
    char number[16];
    const char *lname = cli_core_level_name(g, level, number, sizeof number);
    if (o.json) {
        printf("{\"deleted\":%" PRIu64 ",\"level\":", id);
        cli_text_json_string(lname);
        printf("}\n");
    } else {
        printf("deleted message %" PRIu64 " of level %s\n", id, lname);
    }
    return cli_core_output_done(cmd);
}

/* ---- purge and move ---- */

/* series runs purge (to NULL) or move chunks until the level's end, the
 * limit, or the bound. */
static int series(cli_core *g, const char *cmd, char **argv, const msgs_opts *o, unsigned level, const unsigned *to)
{
    uint64_t done = 0, leased = 0, after = 0, bound = o->limit;
    sl_stats now;
    int rc = sl_stats_get(g->c, &now); /* at most what waits now: a level publishers keep filling ends */
    if (rc == SL_OK && level < now.nlevels && (!bound || now.level[level].depth < bound))
        bound = now.level[level].depth;
    for (uint64_t chunks = 0; rc == SL_OK && bound && done < bound && chunks < UINT32_MAX; chunks++) {
        uint64_t n = 0, l = 0;
        rc = to ? sl_msg_move(g->c, level, *to, o->tag, bound - done, &after, &n, &l)
                : sl_msg_purge(g->c, level, o->tag, o->older_ms, o->dry_run, bound - done, &after, &n, &l);
        done += rc ? 0 : n;
        leased += rc ? 0 : l;
        if (rc || !after)
            break;
    }
    char number[16], number2[16];
    const char *lname = cli_core_level_name(g, level, number, sizeof number);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, argv[optind],
                                     !done || o->dry_run ? NULL
                                     : to ? "; the messages moved before it stay moved"
                                          : "; the messages purged before it are gone");
    if (o->json) {
        printf("{\"%s\":%" PRIu64 ",\"in_flight_left\":%" PRIu64 "}\n",
               to ? "moved" : o->dry_run ? "would_purge" : "purged", done, leased);
    } else if (to) {
        printf("moved %" PRIu64 " waiting message%s of level %s to level %s\n", done, done == 1 ? "" : "s", lname,
               cli_core_level_name(g, *to, number2, sizeof number2));
    } else {
        printf("%s %" PRIu64 " waiting message%s of level %s\n", o->dry_run ? "would purge" : "purged", done,
               done == 1 ? "" : "s", lname);
    }
    if (leased && !o->json)
        printf("left %" PRIu64 " in flight alone: acknowledged, they are gone; given back, they wait in level %s "
               "again (run this again)\n", leased, lname);
    return cli_core_output_done(cmd);
}

int cli_msgs_purge(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const int allowed[] = {OPT_LIMIT, OPT_TAG, OPT_OLDER_THAN, OPT_DRY_RUN, OPT_JSON, 0};
    msgs_opts o;
    unsigned level;
    int st = opts_parse(g, cmd, argc, argv, allowed, "a level", &o);
    if (st != CLI_CORE_GO_ON)
        return st;
    if ((st = cli_core_connect(g, cmd)) || (st = cli_core_level_resolve(g, cmd, argv[optind], &level)))
        return st;
    return series(g, cmd, argv, &o, level, NULL);
}

int cli_msgs_move(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const int allowed[] = {OPT_LIMIT, OPT_TAG, OPT_TO, OPT_JSON, 0};
    msgs_opts o;
    unsigned level, to;
    int st = opts_parse(g, cmd, argc, argv, allowed, "a level", &o);
    if (st != CLI_CORE_GO_ON)
        return st;
    if (!o.to)
        return cli_text_usage_error(cmd, "move needs --to LEVEL, the level to move the messages to");
    if ((st = cli_core_connect(g, cmd)) || (st = cli_core_level_resolve(g, cmd, argv[optind], &level)) ||
        (st = cli_core_level_resolve(g, cmd, o.to, &to)))
        return st;
    if (to == level)
        return cli_text_usage_error(cmd, "--to names level %s itself: move to another level", argv[optind]);
    return series(g, cmd, argv, &o, level, &to);
}
