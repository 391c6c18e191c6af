/*
 * cli_level.c - `sluice level list|set|pause|resume`: the levels'
 * scheduling settings (deadline, aging step, pause) and their rates (the
 * ceiling's windows, the guarantee, the burst). A level a THROTTLED paused
 * shows it in PAUSED ("429 4m59s": what is left; throttled_ms in JSON), and
 * resume ends that pause too.
 *
 * Each is one or two requests through the client library, whose answer is
 * printed: the list as a table or as JSON, a change as one line that says
 * what now holds. Seconds and rates are read and shown exactly (cli_text.c);
 * a ceiling's windows ("--max-rate 10/s --max-rate 500/min") are read and
 * shown by cli_window.c, in the same syntax both ways. The broker checks
 * every value against its own limits and says which one it refused. The
 * list's SERVED column (and "state" in JSON) says QUARANTINED for a level
 * whose stored trees failed the broker's checks, from STATS.
 */
#include "cli_level.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli_table.h"
#include "cli_text.h"
#include "cli_window.h"

/* `sluice level --help`; the layout is cli_core.h's */
const cli_core_help cli_level_help = {
    .summary = "set and show how each priority level is served",
    .body =
        "  sluice level list [--json]\n"
        "      Show each level's deadline and aging step, whether it is paused, its\n"
        "      ready messages and the age of the oldest (\"-\" when it has none), its\n"
        "      rate ceiling (MAX-RATE, each window joined by +) with its burst and\n"
        "      tokens, its guaranteed rate (MIN-RATE), and its ETA.\n"
        "  sluice level set LEVEL [--deadline DURATION] [--aging-step DURATION]\n"
        "                   [--max-rate WINDOW]... [--min-rate RATE] [--burst N]\n"
        "                   [--fair tag|fifo]\n"
        "      Change how LEVEL (a name or a number) is served; an option not given\n"
        "      leaves its setting as it is; \"off\" or 0 switches a setting off.\n"
        "      --deadline DURATION  a message that has waited longer than this is\n"
        "                           served before higher levels (seconds, fractions\n"
        "                           allowed, or 500ms, 5m, 1h)\n"
        "      --aging-step DURATION  each time a message has waited this long, it\n"
        "                           counts as one level higher (as --deadline)\n"
        "      --max-rate WINDOW    the most units per second (message costs; see\n"
        "                           send --cost) that leave the level, with bursts of\n"
        "                           up to --burst; or, repeated, up to 4 windows that\n"
        "                           all hold: RATE, or COUNT/PERIOD as 500/min or\n"
        "                           8/10s (periods ms, s, min, h, d), either with\n"
        "                           :BURST\n"
        "      --min-rate RATE      units per second of the sink's rate the level\n"
        "                           gets before lower levels; what it leaves unused\n"
        "                           goes to others\n"
        "      --burst N            the burst of a per-second --max-rate\n"
        "      --fair tag|fifo      tag: serve the level fair by tag (deficit round\n"
        "                           robin over the tags with messages waiting, FIFO\n"
        "                           within a tag; untagged messages are one tenant\n"
        "                           of their own; see 'sluice tag'); fifo: in\n"
        "                           publish order (the default). Only while the\n"
        "                           level holds no messages.\n"
        "  sluice level pause LEVEL\n"
        "  sluice level resume LEVEL\n"
        "      Stop, or restart, deliveries from a level; publishing to it goes on.\n"
        "  Changes to levels take effect at once (new rates within a second) and\n"
        "  survive a broker restart.\n",
    .examples =
        "  sluice level set low --aging-step 30         low waits at most ~1 min\n"
        "  sluice level set low --min-rate 5            low is never starved below 5/s\n"
        "  sluice level set normal --max-rate 10/s --max-rate 500/min\n"
        "  sluice level set normal --fair tag           turns among the tags\n",
};

/* Long-only options get values outside the char range. */
enum { OPT_DEADLINE = 256, OPT_AGING_STEP, OPT_MAX_RATE, OPT_MIN_RATE, OPT_BURST };

static void levels_json(const sl_level_info *levels, const uint64_t *throttled_ms, unsigned n, const int *quarantined)
{
    printf("{\"levels\":[");
    for (unsigned i = 0; i < n; i++) {
        const sl_level_info *l = &levels[i];
        printf("%s{\"level\":%u,\"name\":", i ? "," : "", i);
        cli_text_json_string(l->name);
        printf(",\"deadline_ms\":%" PRIu64 ",\"aging_ms\":%" PRIu64
               ",\"paused\":%s,\"depth\":%" PRIu64 ",\"oldest_ms\":%" PRIu64
               ",\"max_rate_milli\":%" PRIu64 ",\"min_rate_milli\":%" PRIu64
               ",\"burst\":%" PRIu32 ",\"tokens_milli\":%" PRIu64 ",\"eta_ms\":%" PRIu64,
               l->deadline_ms, l->aging_ms, l->paused ? "true" : "false", l->depth, l->oldest_ms,
               l->max_rate_milli, l->min_rate_milli, l->burst, l->tokens_milli, l->eta_ms);
        printf(",\"fair\":%s,\"throttled_ms\":%" PRIu64 ",\"state\":\"%s\"", l->fair ? "true" : "false",
               throttled_ms[i], quarantined[i] ? "quarantined" : "ok");
        cli_window_json(l->windows, l->nwindows);
        printf("}");
    }
    printf("]}\n");
}

/* setting_format writes a deadline or aging step: exact seconds, or "-"
 * when off. */
static void setting_format(uint64_t ms, char *buf, size_t size)
{
    if (ms)
        cli_text_seconds_format(ms, buf, size);
    else
        snprintf(buf, size, "-");
}

static int levels_table(const sl_level_info *levels, const uint64_t *throttled_ms, unsigned n, const int *quarantined)
{
    static const char *const head[] = {"LEVEL",    "NAME",     "DEADLINE", "AGING",
                                       "PAUSED",   "DEPTH",    "OLDEST",   "MAX-RATE",
                                       "MIN-RATE", "BURST",    "TOKENS",   "ETA",
                                       "SERVED"};
    cli_table *t = cli_table_new(13, head, "llrrlrrrrrrrl", n);
    if (!t)
        return -1;
    for (unsigned i = 0; i < n; i++) {
        const sl_level_info *l = &levels[i];
        char deadline[32], aging[32], oldest[32], max_rate[320], min_rate[40], tokens[32], eta[32];
        setting_format(l->deadline_ms, deadline, sizeof deadline);
        setting_format(l->aging_ms, aging, sizeof aging);
        if (l->depth)
            cli_text_age_format(l->oldest_ms, oldest, sizeof oldest);
        else
            snprintf(oldest, sizeof oldest, "-"); /* nothing ready: no age to tell */
        cli_window_list_format(l->windows, l->nwindows, "-", max_rate, sizeof max_rate);
        cli_text_rate_format(l->min_rate_milli, "-", min_rate, sizeof min_rate);
        /* tokens to a tenth: the bucket refills as it is read */
        cli_text_milli_format(l->tokens_milli / 100 * 100, tokens, sizeof tokens);
        cli_text_eta_format(l->eta_ms, eta, sizeof eta);
        cli_table_add(t, "%u", i);
        cli_table_add(t, "%s", l->name);
        cli_table_add(t, "%s", deadline);
        cli_table_add(t, "%s", aging);
        if (throttled_ms[i]) { /* paused by a THROTTLED: what is left */
            char left[32];
            cli_text_age_format(throttled_ms[i], left, sizeof left);
            cli_table_add(t, "%s429 %s", l->paused ? "yes, " : "", left);
        } else {
            cli_table_add(t, "%s", l->paused ? "yes" : "no");
        }
        cli_table_add(t, "%" PRIu64, l->depth);
        cli_table_add(t, "%s", oldest);
        cli_table_add(t, "%s", max_rate);
        cli_table_add(t, "%s", min_rate);
        if (l->burst)
            cli_table_add(t, "%" PRIu32, l->burst);
        else
            cli_table_add(t, "-");
        cli_table_add(t, "%s", l->max_rate_milli ? tokens : "-"); /* no ceiling, no bucket */
        cli_table_add(t, "%s", eta);
        cli_table_add(t, "%s", quarantined[i] ? "QUARANTINED" : l->fair ? "fair" : "fifo");
    }
    int rc = cli_table_print(t);
    cli_table_destroy(&t);
    return rc;
}

static int level_list(cli_core *g, const char *cmd, int argc, char **argv)
{
    bool json = false;
    int st = cli_core_show_args(g, cmd, argc, argv, &json);
    if (st != CLI_CORE_GO_ON)
        return st;
    sl_level_info levels[SL_MAX_LEVELS];
    uint64_t throttled_ms[SL_MAX_LEVELS] = {0};
    unsigned n = 0;
    int rc = sl_level_list_ex(g->c, levels, throttled_ms, &n);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, "", NULL);
    sl_stats stats; /* a level's state: quarantined when its stored trees failed the broker's checks */
    sl_stats_more more = {.size = sizeof more};
    if (sl_stats_get_more(g->c, &stats, NULL, &more) != SL_OK)
        memset(more.quarantined_level, 0, sizeof more.quarantined_level);
    if (json) {
        levels_json(levels, throttled_ms, n, more.quarantined_level);
    } else if (levels_table(levels, throttled_ms, n, more.quarantined_level)) {
        cli_text_say(cmd, "out of memory");
        return CLI_TEXT_EXIT_FAILURE;
    }
    return cli_core_output_done(cmd);
}

/* The settings `level set` changes, in the order it prints them (the
 * ceiling's windows, --max-rate, are a cli_window_set beside them). */
enum { SET_DEADLINE, SET_AGING, SET_MAX_RATE, SET_MIN_RATE, SET_BURST, SET_COUNT };

/* level_setting_read reads the value of option ch into v[]. Returns 0 or the
 * exit status, reported. */
static int level_setting_read(const char *cmd, int ch, const char *text, uint64_t *v, cli_window_set *max)
{
    switch (ch) {
    case OPT_MAX_RATE:
        if (!cli_window_add(max, text))
            return cli_text_usage_error(cmd, "bad --max-rate '%s' (%s; at most %d windows)", text,
                                        CLI_WINDOW_SYNTAX, SL_MAX_WINDOWS);
        v[SET_MAX_RATE] = 0; /* given; the windows say what */
        return 0;
    case OPT_DEADLINE:
    case OPT_AGING_STEP:
        if (!cli_text_seconds_parse(text, true, &v[ch == OPT_DEADLINE ? SET_DEADLINE : SET_AGING]))
            return cli_text_usage_error(cmd,
                                        "bad --%s '%s' (expected seconds, such as 30 or 0.5, "
                                        "at most 3 decimals; or off)",
                                        ch == OPT_DEADLINE ? "deadline" : "aging-step", text);
        return 0;
    case OPT_MIN_RATE:
        if (!cli_text_rate_parse(text, &v[SET_MIN_RATE]))
            return cli_text_usage_error(cmd,
                                        "bad --min-rate '%s' (expected units per second, such as "
                                        "20000 or 0.5, at most 3 decimals; or off)",
                                        text);
        return 0;
    default:
        if (!cli_text_limit_parse(text, UINT32_MAX, &v[SET_BURST]))
            return cli_text_usage_error(cmd, "bad --burst '%s' (expected a number; or off)", text);
        return 0;
    }
}

/* level_settings_print says what level now has, for the settings changed. */
static void level_settings_print(cli_core *g, unsigned level, const uint64_t *v, const cli_window_set *max)
{
    static const char *const what[SET_COUNT] = {"deadline", "aging step", "max rate", "min rate",
                                                "burst"};
    char number[16];
    printf("level %s:", cli_core_level_name(g, level, number, sizeof number));
    for (int k = 0, first = 1; k < SET_COUNT; k++) {
        char value[320];
        if (v[k] == SL_UNCHANGED)
            continue;
        if (k == SET_MAX_RATE) {
            cli_window_list_format(max->w, max->n, "off", value, sizeof value);
            printf("%s %s %s", first ? "" : ",", what[k], value);
            first = 0;
            continue;
        }
        if (k == SET_DEADLINE || k == SET_AGING)
            setting_format(v[k], value, sizeof value);
        else if (k == SET_BURST)
            snprintf(value, sizeof value, "%" PRIu64, v[k]);
        else
            cli_text_rate_format(v[k], "off", value, sizeof value);
        printf("%s %s %s", first ? "" : ",", what[k], v[k] ? value : "off");
        first = 0;
    }
    putchar('\n');
}

static int level_set(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const struct option opts[] = {
        {"deadline", required_argument, NULL, OPT_DEADLINE},
        {"aging-step", required_argument, NULL, OPT_AGING_STEP},
        {"max-rate", required_argument, NULL, OPT_MAX_RATE},
        {"min-rate", required_argument, NULL, OPT_MIN_RATE},
        {"burst", required_argument, NULL, OPT_BURST},
        {"fair", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    uint64_t v[SET_COUNT] = {SL_UNCHANGED, SL_UNCHANGED, SL_UNCHANGED, SL_UNCHANGED,
                             SL_UNCHANGED};
    cli_window_set max = {0};
    int ch, st, fair = -1;
    optind = 0;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (ch) {
        case OPT_DEADLINE:
        case OPT_AGING_STEP:
        case OPT_MAX_RATE:
        case OPT_MIN_RATE:
        case OPT_BURST:
            if ((st = level_setting_read(cmd, ch, optarg, v, &max)))
                return st;
            break;
        case 'f':
            if (strcmp(optarg, "tag") && strcmp(optarg, "fifo"))
                return cli_text_usage_error(cmd, "bad --fair '%s' (expected tag or fifo)", optarg);
            fair = strcmp(optarg, "tag") == 0;
            break;
        case 'h': return cli_core_help_show(g, cmd);
        default: return cli_text_option_error(cmd, ch, argv);
        }
    }
    if (argc - optind != 1)
        return argc - optind
                   ? cli_text_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1])
                   : cli_text_usage_error(cmd, "expected a level");
    if (max.given && !cli_window_finish(&max, v[SET_BURST]))
        return cli_text_usage_error(cmd, "--burst sets a per-second window's burst, and no --max-rate "
                                         "is per second (write COUNT/PERIOD:BURST)");
    bool scheduling = v[SET_DEADLINE] != SL_UNCHANGED || v[SET_AGING] != SL_UNCHANGED;
    bool rates = v[SET_MAX_RATE] != SL_UNCHANGED || v[SET_MIN_RATE] != SL_UNCHANGED ||
                 v[SET_BURST] != SL_UNCHANGED;
    if (!scheduling && !rates && fair < 0)
        return cli_text_usage_error(cmd, "nothing to change: give --deadline, --aging-step, "
                                         "--max-rate, --min-rate, --burst or --fair");
    unsigned level;
    if ((st = cli_core_connect(g, cmd)) ||
        (st = cli_core_level_resolve(g, cmd, argv[optind], &level)))
        return st;
    if (fair >= 0) { /* first: refused while the level holds messages, and then nothing else changed */
        int frc = sl_level_fair(g->c, level, fair);
        if (frc)
            return cli_core_broker_error(g, cmd, frc, argv[optind], NULL);
        char number[16];
        printf("level %s: served %s\n", cli_core_level_name(g, level, number, sizeof number),
               fair ? "fair by tag" : "fifo");
        if (!scheduling && !rates)
            return cli_core_output_done(cmd);
    }
    /* two requests: the scheduling settings, then the rates */
    int rc = scheduling ? sl_level_set(g->c, level, v[SET_DEADLINE], v[SET_AGING]) : SL_OK;
    if (rc)
        return cli_core_broker_error(g, cmd, rc, argv[optind], NULL);
    if (max.given) /* every window of the ceiling, its burst with it */
        rc = sl_level_windows(g->c, level, max.w, max.off ? 0 : max.n);
    if (rc == SL_OK && (v[SET_MIN_RATE] != SL_UNCHANGED || ((!max.given || max.off) && v[SET_BURST] != SL_UNCHANGED)))
        rc = sl_level_rate(g->c, level, SL_UNCHANGED, v[SET_MIN_RATE],
                           max.given && !max.off ? SL_UNCHANGED : v[SET_BURST]);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, argv[optind],
                                     scheduling ? "; the deadline and aging step were changed"
                                                : NULL);
    level_settings_print(g, level, v, &max);
    return cli_core_output_done(cmd);
}

/* level_pause is both "level pause" and "level resume". */
static int level_pause(cli_core *g, const char *cmd, int argc, char **argv)
{
    bool pause = strcmp(argv[0], "pause") == 0;
    int st = cli_core_plain_args(g, cmd, argc, argv, NULL, 1, "a level");
    if (st != CLI_CORE_GO_ON)
        return st;
    unsigned level;
    if ((st = cli_core_connect(g, cmd)) ||
        (st = cli_core_level_resolve(g, cmd, argv[optind], &level)))
        return st;
    int rc = sl_level_pause(g->c, level, pause);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, argv[optind], NULL);
    char number[16];
    printf("level %s: %s\n", cli_core_level_name(g, level, number, sizeof number),
           pause ? "paused" : "resumed");
    return cli_core_output_done(cmd);
}

int cli_level_main(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const cli_core_command subs[] = {
        {"list", level_list, NULL},
        {"set", level_set, NULL},
        {"pause", level_pause, NULL},
        {"resume", level_pause, NULL},
    };
    return cli_core_run(g, cmd, subs, sizeof subs / sizeof subs[0], argc - 1, argv + 1);
}
