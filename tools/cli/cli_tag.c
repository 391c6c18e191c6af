/*
 * cli_tag.c - `sluice tag set|list|pause|resume`: the per-tag settings of
 * levels served fair by tag (weights, rate limits, in-flight caps, pauses).
 *
 * Each is one request through the client library (sl_tag_*), whose answer
 * is printed: the list as two tables (patterns, then tags) or as JSON, a
 * change as one line. Rates are read and shown as `level set` reads and
 * shows them (cli_window.c). Values the broker bounds (a weight of 1..1000,
 * at most 1,024 patterns) are checked by the broker, which says which one
 * it refused (exit 1); text that is not a number at all is a usage error
 * (exit 2).
 */
#include "cli_tag.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli_table.h"
#include "cli_text.h"
#include "cli_window.h"

/* `sluice tag --help`; the layout is cli_core.h's */
const cli_core_help cli_tag_help = {
    .summary = "per-tag rate limits, caps, weights and pauses of fair levels",
    .body =
        "  sluice tag set PATTERN [--max-rate WINDOW]... [--burst B] [--inflight N]\n"
        "                 [--weight W] [--each] [--off]\n"
        "      Settings for the tags PATTERN matches (a glob such as 'gold-*', or an\n"
        "      exact tag) in every level served fair by tag (level set --fair tag).\n"
        "      The first pattern, in the order they were first set, that matches a\n"
        "      tag gives it its settings; setting a pattern again keeps its place and\n"
        "      changes only what is given. They are stored, survive a restart and\n"
        "      apply at once.\n"
        "      --max-rate WINDOW    at most this rate leaves for these tags: RATE per\n"
        "                           second (10 or 10/s), COUNT/PERIOD (500/min,\n"
        "                           8/10s), each optionally :BURST; repeat for up to\n"
        "                           4 windows that all hold; off removes the limit\n"
        "      --burst B            the per-second window's burst (units at once)\n"
        "      --inflight N         at most N of their deliveries out at once (0 or\n"
        "                           off: no cap)\n"
        "      --weight W           1..1000: turns per round of the fair pick (a tag\n"
        "                           of weight 4 gets 4 messages for each 1 of a tag\n"
        "                           of weight 1)\n"
        "      --each               a bucket and an in-flight cap per matching tag,\n"
        "                           instead of one shared by all of them\n"
        "      --off                remove the pattern's settings\n"
        "      A tag held by its rate, cap or pause never holds up the other tags of\n"
        "      its level. Message costs (send --cost) are charged to the tag's\n"
        "      bucket, the level's and the sink's.\n"
        "  sluice tag list [--json]\n"
        "      The patterns with their settings, then the tags with the most messages\n"
        "      waiting in fair levels (and the paused or throttled ones): level, depth\n"
        "      (ready), in flight, rate limit, tokens in its bucket, weight, paused,\n"
        "      age of its oldest waiting message, and THROTTLED: what a 429 for the\n"
        "      tag alone left (consume --tag-limit-header, exit 76 of --exec): the\n"
        "      pause still to run and, when the tag has a rate limit, the rate its\n"
        "      bucket was cut to (a pattern's CUT: its shared bucket's). --json adds\n"
        "      throttled_ms and effective_rate_milli (0: none). A fair level's\n"
        "      untagged messages are one tenant: (untagged), in --json \"untagged\".\n"
        "      Tags and patterns are shown with control characters and invalid\n"
        "      UTF-8 escaped.\n"
        "  sluice tag pause TAG\n"
        "  sluice tag resume TAG\n"
        "      Stop, or restart, deliveries of one tag (exact text); the other tags\n"
        "      of its level flow on. Stored; survives a restart.\n",
    .examples =
        "  sluice tag set 'free-*' --max-rate 5/s --each  5 a second for each free tag\n"
        "  sluice tag set 'gold-*' --weight 4           4 turns for each of the others' 1\n"
        "  sluice tag pause cust-42                     hold one tenant\n",
};

enum { OPT_MAX_RATE = 256, OPT_BURST, OPT_INFLIGHT, OPT_WEIGHT, OPT_EACH, OPT_OFF };

static int tag_set(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const struct option opts[] = {
        {"max-rate", required_argument, NULL, OPT_MAX_RATE},
        {"burst", required_argument, NULL, OPT_BURST},
        {"inflight", required_argument, NULL, OPT_INFLIGHT},
        {"weight", required_argument, NULL, OPT_WEIGHT},
        {"each", no_argument, NULL, OPT_EACH},
        {"off", no_argument, NULL, OPT_OFF},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    sl_tag_settings s;
    cli_window_set max = {0};
    bool off = false;
    uint64_t burst = SL_UNCHANGED;
    int ch, st;
    sl_tag_settings_init(&s);
    optind = 0;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (ch) {
        case OPT_MAX_RATE:
            if (!cli_window_add(&max, optarg))
                return cli_text_usage_error(cmd, "bad --max-rate '%s' (%s; at most %d windows)", optarg,
                                            CLI_WINDOW_SYNTAX, SL_MAX_WINDOWS);
            break;
        case OPT_BURST:
            if (!cli_text_limit_parse(optarg, UINT32_MAX, &burst))
                return cli_text_usage_error(cmd, "bad --burst '%s' (expected a number)", optarg);
            break;
        case OPT_INFLIGHT:
            if (!cli_text_limit_parse(optarg, UINT32_MAX, &s.max_inflight))
                return cli_text_usage_error(cmd, "bad --inflight '%s' (expected a number; or off)", optarg);
            break;
        case OPT_WEIGHT:
            if (!cli_text_limit_parse(optarg, UINT32_MAX, &s.weight))
                return cli_text_usage_error(cmd, "bad --weight '%s' (expected a whole number, 1 to 1000)", optarg);
            break;
        case OPT_EACH: s.each = 1; break;
        case OPT_OFF: off = true; break;
        case 'h': return cli_core_help_show(g, cmd);
        default: return cli_text_option_error(cmd, ch, argv);
        }
    }
    if (argc - optind != 1)
        return argc - optind ? cli_text_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1])
                             : cli_text_usage_error(cmd, "expected a tag pattern");
    const char *pattern = argv[optind];
    if (!pattern[0])
        return cli_text_usage_error(cmd, "a tag pattern must not be empty");
    bool any = max.given || burst != SL_UNCHANGED || s.max_inflight != SL_UNCHANGED ||
               s.weight != SL_UNCHANGED || s.each != SL_UNCHANGED;
    if (off && any)
        return cli_text_usage_error(cmd, "--off removes the pattern's settings: give it alone");
    if (!off && !any)
        return cli_text_usage_error(cmd, "nothing to change: give --max-rate, --burst, --inflight, --weight, "
                                         "--each or --off");
    if (max.given) {
        if (!cli_window_finish(&max, burst))
            return cli_text_usage_error(cmd, "--burst sets a per-second window's burst, and no --max-rate "
                                             "is per second (write COUNT/PERIOD:BURST)");
        s.nwindows = max.off ? 0 : (int)max.n;
        memcpy(s.windows, max.w, sizeof s.windows);
    } else {
        s.burst = burst;
    }
    if ((st = cli_core_connect(g, cmd)))
        return st;
    int rc = off ? sl_tag_off(g->c, pattern) : sl_tag_set(g->c, pattern, &s);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, pattern, NULL);
    if (off) {
        printf("tag pattern %s: settings removed\n", pattern);
        return cli_core_output_done(cmd);
    }
    printf("tag pattern %s:", pattern);
    const char *sep = "";
    if (max.given) {
        char value[320];
        cli_window_list_format(max.w, max.off ? 0 : max.n, "off", value, sizeof value);
        printf(" max rate %s", value);
        sep = ",";
    }
    if (!max.given && burst != SL_UNCHANGED)
        printf("%s burst %" PRIu64, sep, burst), sep = ",";
    if (s.max_inflight != SL_UNCHANGED) {
        if (s.max_inflight)
            printf("%s in-flight cap %" PRIu64, sep, s.max_inflight);
        else
            printf("%s in-flight cap off", sep);
        sep = ",";
    }
    if (s.weight != SL_UNCHANGED)
        printf("%s weight %" PRIu64, sep, s.weight), sep = ",";
    if (s.each != SL_UNCHANGED)
        printf("%s a bucket per tag", sep);
    putchar('\n');
    return cli_core_output_done(cmd);
}

/* A row is a tag's when it names a tag or a level: the untagged messages
 * of a fair level are a tenant of their own, a row with an empty tag. */
static bool is_tag(const sl_tag_info *t)
{
    return t->tag[0] || t->has_level;
}

static void tag_json(cli_core *g, const sl_tag_info *v, const sl_tag_throttle *thr, unsigned n)
{
    char number[16];
    printf("{\"patterns\":[");
    for (unsigned i = 0, first = 1; i < n; i++) {
        const sl_tag_info *t = &v[i];
        if (!t->pattern[0] || is_tag(t))
            continue;
        printf("%s{\"pattern\":", first ? "" : ",");
        first = 0;
        cli_text_json_string(t->pattern);
        printf(",\"weight\":%" PRIu64 ",\"max_inflight\":%" PRIu64 ",\"rate_milli\":%" PRIu64
               ",\"burst\":%" PRIu64 ",\"tokens_milli\":%" PRIu64 ",\"each\":%s,\"inflight\":%" PRIu64,
               t->weight, t->max_inflight, t->rate_milli, t->burst, t->tokens_milli, t->each ? "true" : "false",
               t->inflight);
        cli_window_json(t->windows, t->nwindows);
        printf(",\"effective_rate_milli\":%" PRIu64 "}", thr[i].effective_rate_milli);
    }
    printf("],\"tags\":[");
    for (unsigned i = 0, first = 1; i < n; i++) {
        const sl_tag_info *t = &v[i];
        if (!is_tag(t))
            continue;
        printf("%s{\"tag\":", first ? "" : ",");
        first = 0;
        cli_text_json_string(t->tag);
        if (!t->tag[0])
            printf(",\"untagged\":true");
        printf(",\"level\":");
        if (t->has_level)
            cli_text_json_string(cli_core_level_name(g, t->level, number, sizeof number));
        else
            printf("null");
        printf(",\"pattern\":");
        if (t->pattern[0])
            cli_text_json_string(t->pattern);
        else
            printf("null");
        printf(",\"depth\":%" PRIu64 ",\"inflight\":%" PRIu64 ",\"rate_milli\":%" PRIu64
               ",\"tokens_milli\":%" PRIu64 ",\"weight\":%" PRIu64 ",\"max_inflight\":%" PRIu64
               ",\"paused\":%s,\"oldest_ms\":%" PRIu64 ",\"throttled_ms\":%" PRIu64
               ",\"effective_rate_milli\":%" PRIu64 "}",
               t->depth, t->inflight, t->rate_milli, t->tokens_milli, t->weight, t->max_inflight,
               t->paused ? "true" : "false", t->oldest_ms, thr[i].throttled_ms, thr[i].effective_rate_milli);
    }
    printf("]}\n");
}

/* throttled_format writes what THROTTLEDs for a tag alone left on a row:
 * "-", "820ms", "4.5/s" (its bucket cut) or both. */
static void throttled_format(const sl_tag_throttle *x, char *out, size_t len)
{
    char ms[32] = "", rate[40] = "";
    if (x->throttled_ms)
        snprintf(ms, sizeof ms, "%" PRIu64 "ms", x->throttled_ms);
    if (x->effective_rate_milli)
        cli_text_rate_format(x->effective_rate_milli, "-", rate, sizeof rate);
    snprintf(out, len, "%s%s%s", ms, ms[0] && rate[0] ? ", " : "", rate);
    if (!out[0])
        snprintf(out, len, "-");
}

static int tag_tables(cli_core *g, const sl_tag_info *v, const sl_tag_throttle *thr, unsigned n)
{
    static const char *const phead[] = {"#", "PATTERN", "RATE", "BURST", "INFLIGHT-CAP", "WEIGHT", "BUCKET", "CUT"};
    static const char *const thead[] = {"TAG",    "LEVEL",  "DEPTH",  "INFLIGHT", "RATE",
                                        "TOKENS", "WEIGHT", "PAUSED", "OLDEST", "THROTTLED"};
    unsigned np = 0, nt = 0;
    for (unsigned i = 0; i < n; i++)
        is_tag(&v[i]) ? nt++ : np++;
    cli_table *p = cli_table_new(8, phead, "rllrrrlr", np);
    cli_table *t = cli_table_new(10, thead, "llrrrrrlrr", nt);
    if (!p || !t) {
        cli_table_destroy(&p);
        cli_table_destroy(&t);
        return -1;
    }
    for (unsigned i = 0, k = 0; i < n; i++) {
        const sl_tag_info *x = &v[i];
        char rate[320], tokens[32], age[32], number[16], throttled[80];
        throttled_format(&thr[i], throttled, sizeof throttled);
        if (!is_tag(x)) {
            cli_window_list_format(x->windows, x->nwindows, "-", rate, sizeof rate);
            cli_table_add(p, "%u", ++k);
            cli_table_add(p, "%s", x->pattern);
            cli_table_add(p, "%s", rate);
            cli_table_add(p, x->burst ? "%" PRIu64 : "-", x->burst);
            if (x->max_inflight)
                cli_table_add(p, "%" PRIu64, x->max_inflight);
            else
                cli_table_add(p, "-");
            cli_table_add(p, "%" PRIu64, x->weight);
            cli_table_add(p, "%s", x->each ? "each tag" : "shared");
            cli_table_add(p, "%s", throttled); /* its shared bucket, cut after 429s */
            continue;
        }
        cli_text_rate_format(x->rate_milli, "-", rate, sizeof rate);
        cli_text_milli_format(x->tokens_milli / 100 * 100, tokens, sizeof tokens);
        cli_text_age_format(x->oldest_ms, age, sizeof age);
        cli_table_add(t, "%s", x->tag[0] ? x->tag : "(untagged)");
        cli_table_add(t, "%s", x->has_level ? cli_core_level_name(g, x->level, number, sizeof number) : "-");
        cli_table_add(t, "%" PRIu64, x->depth);
        cli_table_add(t, "%" PRIu64, x->inflight);
        cli_table_add(t, "%s", rate);
        cli_table_add(t, "%s", x->limited ? tokens : "-");
        cli_table_add(t, "%" PRIu64, x->weight);
        cli_table_add(t, "%s", x->paused ? "yes" : "no");
        cli_table_add(t, "%s", x->depth ? age : "-");
        cli_table_add(t, "%s", throttled);
    }
    int rc = 0;
    if (np) {
        rc |= cli_table_print(p);
        putchar('\n');
    }
    rc |= cli_table_print(t);
    cli_table_destroy(&p);
    cli_table_destroy(&t);
    return rc;
}

static int tag_list(cli_core *g, const char *cmd, int argc, char **argv)
{
    bool json = false;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            return cli_core_help_show(g, cmd);
        }
    int st = cli_core_show_args(g, cmd, argc, argv, &json);
    if (st != CLI_CORE_GO_ON)
        return st;
    sl_tag_info v[SL_MAX_TAG_ROWS];
    sl_tag_throttle thr[SL_MAX_TAG_ROWS];
    unsigned n = 0;
    int rc = sl_tag_list_ex(g->c, v, thr, &n);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, "", NULL);
    if (json) {
        tag_json(g, v, thr, n);
    } else if (tag_tables(g, v, thr, n)) {
        cli_text_say(cmd, "out of memory");
        return CLI_TEXT_EXIT_FAILURE;
    }
    return cli_core_output_done(cmd);
}

/* tag_pause is both "tag pause" and "tag resume". */
static int tag_pause(cli_core *g, const char *cmd, int argc, char **argv)
{
    bool pause = strcmp(argv[0], "pause") == 0;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            return cli_core_help_show(g, cmd);
        }
    int st = cli_core_plain_args(g, cmd, argc, argv, NULL, 1, "a tag");
    if (st != CLI_CORE_GO_ON)
        return st;
    if (!argv[optind][0])
        return cli_text_usage_error(cmd, "a tag must not be empty");
    if ((st = cli_core_connect(g, cmd)))
        return st;
    int rc = sl_tag_pause(g->c, argv[optind], pause);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, argv[optind], NULL);
    printf("tag %s: %s\n", argv[optind], pause ? "paused" : "resumed");
    return cli_core_output_done(cmd);
}

int cli_tag_main(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const cli_core_command subs[] = {
        {"list", tag_list, NULL},
        {"set", tag_set, NULL},
        {"pause", tag_pause, NULL},
        {"resume", tag_pause, NULL},
    };
    return cli_core_run(g, cmd, subs, sizeof subs / sizeof subs[0], argc - 1, argv + 1);
}
