/*
 * cli_sink.c - `sluice sink set`, `sluice sink show` and `sluice sink
 * resume`: the rate (its windows), burst and in-flight cap of the sink, the
 * service that consumers call, and the end of its pause after THROTTLED.
 *
 * `--rate` and `--max-rate` are one option, repeatable: each gives one
 * window of the sink's limit ("--max-rate 10/s --max-rate 500/min"; syntax
 * in cli_window.c), and together they replace every window it had.
 *
 * Each is one request through the client library (sl_sink_set,
 * sl_sink_show). A change prints one line with what now holds; show prints
 * the settings beside what the broker does now: its effective rate, lower
 * than the configured one after the sink said THROTTLED, the deliveries out,
 * the tokens in the bucket, and how long dispatch stays paused; resume
 * ends such a pause at once and says what it had left (a change with set
 * ends it too). Rates are read and shown exactly in units per second
 * (cli_text.c). The broker checks
 * every value against its own limits and says which one it refused.
 */
#include "cli_sink.h"
#include "cli_coord.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli_text.h"
#include "cli_window.h"

/* `sluice sink --help`; the layout is cli_core.h's */
const cli_core_help cli_sink_help = {
    .summary = "limit the sink (the service consumers call), and show its state",
    .body =
        "  sluice sink set [--max-rate WINDOW]... [--burst N] [--inflight N]\n"
        "      Limit the sink, the service consumers call: at most RATE units per\n"
        "      second (fractions allowed) with bursts of up to N, and at most\n"
        "      --inflight deliveries out at once. Give at least one; \"off\" or 0\n"
        "      removes a limit; an option not given leaves its limit as it is. When\n"
        "      the sink refuses a message (consume --exec exits 75), the broker\n"
        "      pauses and lowers the rate it uses, then climbs back to RATE.\n"
        "      --max-rate WINDOW    RATE (per second; its burst is --burst, else the\n"
        "                           one it had), or COUNT/PERIOD as 500/min or 8/10s\n"
        "                           (periods ms, s, min, h, d; its burst is COUNT),\n"
        "                           either followed by :BURST. Repeat for up to 4\n"
        "                           windows, all of which hold (\"10/s and 500/min\");\n"
        "                           together they replace the windows the limit had.\n"
        "                           --rate is the same option.\n"
        "      --burst N            the burst of a per-second rate\n"
        "      --inflight N         at most N deliveries out at once (0 or off: none)\n"
        "  sluice sink show [--json]\n"
        "      Show the sink's limits, the rate the broker uses now and why, the\n"
        "      deliveries out, the tokens in its bucket, and how long dispatch stays\n"
        "      paused. With brokers sharing the rate (--coord), the share this broker\n"
        "      holds, or \"learning\" while the first lease period runs.\n"
        "  sluice sink resume\n"
        "      End the sink's pause after THROTTLED at once (a pause lasts at most\n"
        "      the broker's --max-throttle-pause, 5 minutes by default) and say how\n"
        "      much of it was left. 'sink set' ends it too.\n"
        "  Changes to the sink take effect at once and survive a broker restart.\n",
    .examples =
        "  sluice sink set --rate 100 --burst 20        the sink takes 100 a second\n"
        "  sluice sink set --max-rate 10/s --max-rate 500/min  10 a second, 500 a minute\n"
        "  sluice sink show --json\n"
        "  sluice sink resume                           the service is back: go on\n",
};

/* Long-only options get values outside the char range. */
enum { OPT_RATE = 256, OPT_BURST, OPT_INFLIGHT };

static int sink_set(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const struct option opts[] = {
        {"rate", required_argument, NULL, OPT_RATE},
        {"max-rate", required_argument, NULL, OPT_RATE},
        {"burst", required_argument, NULL, OPT_BURST},
        {"inflight", required_argument, NULL, OPT_INFLIGHT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    uint64_t burst = SL_UNCHANGED, inflight = SL_UNCHANGED;
    cli_window_set rate = {0};
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (ch) {
        case OPT_RATE:
            if (!cli_window_add(&rate, optarg))
                return cli_text_usage_error(cmd, "bad --max-rate '%s' (%s; at most %d windows)", optarg,
                                            CLI_WINDOW_SYNTAX, SL_MAX_WINDOWS);
            break;
        case OPT_BURST:
            if (!cli_text_limit_parse(optarg, UINT32_MAX, &burst))
                return cli_text_usage_error(cmd, "bad --burst '%s' (expected a number; or off)",
                                            optarg);
            break;
        case OPT_INFLIGHT:
            if (!cli_text_limit_parse(optarg, UINT32_MAX, &inflight))
                return cli_text_usage_error(cmd,
                                            "bad --inflight '%s' (expected a number; or off)",
                                            optarg);
            break;
        case 'h': return cli_core_help_show(g, cmd);
        default: return cli_text_option_error(cmd, ch, argv);
        }
    }
    if (optind < argc)
        return cli_text_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (!rate.given && burst == SL_UNCHANGED && inflight == SL_UNCHANGED)
        return cli_text_usage_error(cmd, "nothing to change: give --max-rate, --burst or --inflight");
    if (rate.given && !cli_window_finish(&rate, burst))
        return cli_text_usage_error(cmd, "--burst sets a per-second window's burst, and no --max-rate "
                                         "is per second (write COUNT/PERIOD:BURST)");
    int st = cli_core_connect(g, cmd);
    if (st)
        return st;
    /* the windows replace every window the sink had, their bursts with them */
    bool folded = rate.given && !rate.off;
    int rc = SL_OK;
    if (rate.given)
        rc = sl_sink_windows(g->c, rate.w, rate.off ? 0 : rate.n);
    if (rc == SL_OK && (inflight != SL_UNCHANGED || (!folded && burst != SL_UNCHANGED)))
        rc = sl_sink_set(g->c, SL_UNCHANGED, folded ? SL_UNCHANGED : burst, inflight);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, "", NULL);
    const char *sep = "";
    printf("sink:");
    if (rate.given) {
        char text[320];
        cli_window_list_format(rate.w, rate.off ? 0 : rate.n, "off", text, sizeof text);
        printf(" rate %s", text);
        sep = ",";
    }
    if (burst != SL_UNCHANGED) {
        if (burst)
            printf("%s burst %" PRIu64, sep, burst);
        else
            printf("%s burst off", sep);
        sep = ",";
    }
    if (inflight != SL_UNCHANGED) {
        if (inflight)
            printf("%s in-flight cap %" PRIu64, sep, inflight);
        else
            printf("%s in-flight cap off", sep);
    }
    putchar('\n');
    return cli_core_output_done(cmd);
}

static void sink_json(const sl_sink_info *s)
{
    printf("{\"rate_milli\":%" PRIu64 ",\"effective_rate_milli\":%" PRIu64 ",\"burst\":%" PRIu32
           ",\"max_inflight\":%" PRIu64 ",\"inflight\":%" PRIu64 ",\"tokens_milli\":%" PRIu64
           ",\"paused_ms\":%" PRIu64 ",\"breaker\":",
           s->rate_milli, s->effective_rate_milli, s->burst, s->max_inflight, s->inflight,
           s->tokens_milli, s->paused_ms);
    cli_text_json_string(s->breaker);
    printf(",\"breaker_trips\":%" PRIu64 ",\"reason\":", s->breaker_trips);
    cli_text_json_string(s->reason);
    cli_window_json(s->windows, s->nwindows);
    cli_coord_json(&s->coord);
    printf("}\n");
}

static void sink_print(const sl_sink_info *s)
{
    char rate[40], effective[40], tokens[32], paused[32];
    cli_text_rate_format(s->rate_milli, "unlimited", rate, sizeof rate);
    cli_text_rate_format(s->effective_rate_milli, "unlimited", effective, sizeof effective);
    printf("rate       %s", rate);
    if (s->coord.coordinated)
        printf(" for every broker; this one now %s (reserved + granted, less after THROTTLED)", effective);
    else if (s->effective_rate_milli != s->rate_milli)
        printf(" (now %s, after THROTTLED)", effective);
    putchar('\n');
    if (s->reason[0])
        printf("why        %s\n", s->reason);
    if (s->burst)
        printf("burst      %" PRIu32 "\n", s->burst);
    else
        printf("burst      -\n");
    for (unsigned i = 0; i < s->nwindows; i++) { /* every window beyond the per-second rate */
        char w[80];
        if (i == 0 && s->windows[0].period_ms == 1000 && s->rate_milli)
            continue;
        cli_window_format(&s->windows[i], true, w, sizeof w);
        cli_text_milli_format(s->windows[i].tokens_milli / 100 * 100, tokens, sizeof tokens);
        printf("window     %s (tokens %s)\n", w, tokens);
    }
    printf("in flight  %" PRIu64, s->inflight);
    if (s->max_inflight)
        printf(" of at most %" PRIu64 "\n", s->max_inflight);
    else
        printf(" (no cap)\n");
    if (s->effective_rate_milli) {
        /* to a tenth: the bucket refills as it is read */
        cli_text_milli_format(s->tokens_milli / 100 * 100, tokens, sizeof tokens);
        printf("tokens     %s\n", tokens);
    }
    cli_text_age_format(s->paused_ms, paused, sizeof paused);
    if (s->paused_ms)
        printf("paused     for %s more, after THROTTLED (sluice sink resume ends it)\n", paused);
    else
        printf("paused     no\n");
    printf("breaker    %s (opened %" PRIu64 " times)\n", s->breaker[0] ? s->breaker : "-", s->breaker_trips);
    cli_coord_print(&s->coord);
}

static int sink_show(cli_core *g, const char *cmd, int argc, char **argv)
{
    bool json = false;
    int st = cli_core_show_args(g, cmd, argc, argv, &json);
    if (st != CLI_CORE_GO_ON)
        return st;
    sl_sink_info s;
    int rc = sl_sink_show(g->c, &s);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, "", NULL);
    if (json)
        sink_json(&s);
    else
        sink_print(&s);
    return cli_core_output_done(cmd);
}

static int sink_resume(cli_core *g, const char *cmd, int argc, char **argv)
{
    int st = cli_core_plain_args(g, cmd, argc, argv, NULL, 0, "nothing");
    if (st != CLI_CORE_GO_ON)
        return st;
    if ((st = cli_core_connect(g, cmd)))
        return st;
    uint64_t left = 0;
    int rc = sl_sink_resume(g->c, &left);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, "", NULL);
    char text[32];
    cli_text_age_format(left, text, sizeof text);
    if (left)
        printf("sink: resumed (its pause after THROTTLED had %s left)\n", text);
    else
        printf("sink: not paused\n");
    return cli_core_output_done(cmd);
}

int cli_sink_main(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const cli_core_command subs[] = {
        {"set", sink_set, NULL},
        {"show", sink_show, NULL},
        {"resume", sink_resume, NULL},
    };
    return cli_core_run(g, cmd, subs, sizeof subs / sizeof subs[0], argc - 1, argv + 1);
}
