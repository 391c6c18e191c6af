/*
 * cli_stats.c - `sluice stats [--json] [--watch [S] [--count N]]`: one
 * STATS request (sl_stats_get_ex) printed as a table of the levels or as
 * one JSON object, with the sink's rate and why it is where it is (sink
 * show's line). With -b A,B a row per broker and the totals (cli_multi.c);
 * with --watch the same every S seconds (cli_top.c). BY-TAG (throttled_tag
 * in JSON) counts the THROTTLEDs for a message's tag alone among THROTTLED.
 * A quarantined level (its stored trees failed the broker's checks) gets a
 * line above the table, and "state" and "quarantined" in JSON.
 */
#include "cli_stats.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli_coord.h"
#include "cli_multi.h"
#include "cli_table.h"
#include "cli_text.h"
#include "cli_top.h"

/* `sluice stats --help`; the layout is cli_core.h's */
const cli_core_help cli_stats_help = {
    .summary = "show each level's figures, and the sink's rate",
    .body =
        "  sluice stats [--wide] [--json]\n"
        "      Show each level's depth, in-flight, delayed and dead-letter counts,\n"
        "      the age of its oldest ready message (\"-\" when it has none), messages\n"
        "      in (ENQ) and acknowledged (ACK) since the broker started, the sink's\n"
        "      refusals (THROTTLED) and how long its ready messages should take to\n"
        "      leave at the rate it gets (ETA); and, as 'sink show' says it, the\n"
        "      sink's rate, the rate in use now and why (configured, coordinated\n"
        "      share, cut after 429, recovering). The table fits 100 columns. A\n"
        "      level whose stored trees failed the broker's checks is QUARANTINED\n"
        "      (a line above the table; JSON: \"quarantined\", the messages it holds,\n"
        "      and its \"state\"): see 'sluice salvage'.\n"
        "      --wide               every counter: also out (DISP), nacked, expired,\n"
        "                           deliveries won by priority (PRIO), by aging\n"
        "                           (AGED), past the deadline (OVERDUE) and by a\n"
        "                           guarantee (GUAR), and of the THROTTLED those for\n"
        "                           their tag alone (BY-TAG)\n"
        "      --json               every figure as one JSON object (key \"sink\" for\n"
        "                           the sink)\n"
        "  sluice stats --watch [S] [--count N] [--wide] [--json]\n"
        "      The same every S seconds (default 2; 0.5, 500ms, 1m), each table\n"
        "      after a line with the time (with --json, one object per line), until\n"
        "      Ctrl-C or N times. No escape sequences: for plain terminals and logs.\n"
        "      With -b A,B (or SLUICE_BROKER alike): one table, a row per broker and\n"
        "      the totals.\n",
    .examples =
        "  sluice stats                                 one table\n"
        "  sluice stats --watch 5 --count 12            a minute of tables\n"
        "  sluice -b tcp://a:7470,tcp://b:7470 stats    two brokers and their totals\n",
};

/* stats_json prints st as one JSON object, with the sink's rate, why it is
 * where it is and its pause when sink is not NULL, and the refused
 * settlements and levels' pauses when more is not NULL. */
static void stats_json(const sl_stats *st, const sl_stats_ex *ex, const sl_stats_more *more, const sl_sink_info *sink)
{
    printf("{\"uptime_ms\":%" PRIu64 ",\"consumers\":%" PRIu64 ",\"breaker\":", st->uptime_ms,
           st->consumers);
    cli_text_json_string(st->breaker);
    printf(",\"auth_refused\":%" PRIu64 ",\"handshakes_refused\":%" PRIu64, st->auth_refused,
           st->handshakes_refused);
    if (more)
        printf(",\"settle_refused\":%" PRIu64 ",\"settle_foreign\":%" PRIu64, more->settle_refused,
               more->settle_foreign);
    printf(",\"breaker_trips\":%" PRIu64 ",\"rx_bad\":%" PRIu64 ",\"tx_failed\":%" PRIu64, st->breaker_trips,
           st->rx_bad, st->tx_failed);
    if (more)
        printf(",\"quarantined\":%" PRIu64, more->quarantined_total);
    printf(",\"levels\":[");
    for (unsigned i = 0; i < st->nlevels; i++) {
        const sl_level_stats *l = &st->level[i];
        printf("%s{\"level\":%u,\"name\":", i ? "," : "", i);
        cli_text_json_string(l->name);
        printf(",\"depth\":%" PRIu64 ",\"inflight\":%" PRIu64 ",\"delayed\":%" PRIu64
               ",\"dead\":%" PRIu64 ",\"oldest_ms\":%" PRIu64 ",\"enqueued\":%" PRIu64
               ",\"dispatched\":%" PRIu64 ",\"acked\":%" PRIu64 ",\"nacked\":%" PRIu64
               ",\"expired\":%" PRIu64 ",\"picks_priority\":%" PRIu64 ",\"picks_aged\":%" PRIu64
               ",\"picks_overdue\":%" PRIu64 ",\"picks_guaranteed\":%" PRIu64 ",\"throttled\":%" PRIu64
               ",\"eta_ms\":%" PRIu64,
               l->depth, l->inflight, l->delayed, l->dead, l->oldest_ms, l->enqueued, l->dispatched,
               l->acked, l->nacked, l->expired, l->picks_priority, l->picks_aged, l->picks_overdue,
               l->picks_guaranteed, l->throttled, l->eta_ms);
        printf(",\"dead_requeued\":%" PRIu64 ",\"dead_purged\":%" PRIu64 ",\"dead_dropped\":%" PRIu64
               ",\"corrupt\":%" PRIu64 ",\"throttled_tag\":%" PRIu64,
               l->dead_requeued, l->dead_purged, l->dead_dropped, l->corrupt, ex->throttled_tag[i]);
        if (more)
            printf(",\"throttled_ms\":%" PRIu64 ",\"state\":\"%s\",\"quarantined\":%" PRIu64, more->throttled_ms[i],
                   more->quarantined_level[i] ? "quarantined" : "ok", more->quarantined[i]);
        printf("}");
    }
    printf("]");
    cli_coord_json(&st->coord);
    if (sink) {
        printf(",\"sink\":{\"rate_milli\":%" PRIu64 ",\"effective_rate_milli\":%" PRIu64 ",\"paused_ms\":%" PRIu64
               ",\"reason\":", sink->rate_milli, sink->effective_rate_milli, sink->paused_ms);
        cli_text_json_string(sink->reason);
        printf("}");
    }
    printf("}\n");
}

/* stats_sink_line says what `sink show` says of the sink's rate: the rate
 * set, the one in use now and why. */
static void stats_sink_line(const sl_sink_info *sink)
{
    char rate[40], effective[40];
    cli_text_rate_format(sink->rate_milli, "unlimited", rate, sizeof rate);
    cli_text_rate_format(sink->effective_rate_milli, "unlimited", effective, sizeof effective);
    printf("sink %s", rate);
    if (sink->effective_rate_milli != sink->rate_milli)
        printf(" (now %s)", effective);
    printf("%s%s\n", sink->reason[0] ? ": " : "", sink->reason);
}

/* wide: --wide, every counter as a column (the default table fits 100
 * columns: the figures to look at first) */
static bool wide;

static int stats_table(const sl_stats *st, const sl_stats_ex *ex, const sl_stats_more *more, const sl_sink_info *sink)
{
    static const char *const head_wide[] = {"LEVEL",   "NAME",    "DEPTH", "INFLIGHT", "DELAYED",
                                            "DEAD",    "OLDEST",  "ENQ",   "DISP",     "ACK",
                                            "NACK",    "EXPIRED", "PRIO",  "AGED",     "OVERDUE",
                                            "GUAR",    "THROTTLED", "BY-TAG", "ETA"};
    static const char *const head[] = {"LEVEL", "NAME", "DEPTH", "INFLIGHT", "DELAYED", "DEAD",
                                       "OLDEST", "ENQ", "ACK", "THROTTLED", "ETA"};
    /* level and name read left to right; figures line up on the right */
    cli_table *t = wide ? cli_table_new(19, head_wide, "llrrrrrrrrrrrrrrrrr", st->nlevels)
                        : cli_table_new(11, head, "llrrrrrrrrr", st->nlevels);
    if (!t)
        return -1;
    for (unsigned i = 0; i < st->nlevels; i++) {
        const sl_level_stats *l = &st->level[i];
        char oldest[32], eta[32];
        if (l->depth)
            cli_text_age_format(l->oldest_ms, oldest, sizeof oldest);
        else
            snprintf(oldest, sizeof oldest, "-"); /* nothing ready: no age to tell */
        cli_text_eta_format(l->eta_ms, eta, sizeof eta);
        cli_table_add(t, "%u", i);
        cli_table_add(t, "%s", l->name);
        const uint64_t before[] = {l->depth, l->inflight, l->delayed, l->dead};
        for (size_t k = 0; k < 4; k++)
            cli_table_add(t, "%" PRIu64, before[k]);
        cli_table_add(t, "%s", oldest);
        const uint64_t after[] = {l->enqueued,   l->dispatched,     l->acked,
                                  l->nacked,     l->expired,        l->picks_priority,
                                  l->picks_aged, l->picks_overdue, l->picks_guaranteed, l->throttled,
                                  ex->throttled_tag[i]};
        const uint64_t narrow[] = {l->enqueued, l->acked, l->throttled};
        const uint64_t *shown = wide ? after : narrow;
        size_t nshown = wide ? sizeof after / sizeof after[0] : sizeof narrow / sizeof narrow[0];
        for (size_t k = 0; k < nshown; k++)
            cli_table_add(t, "%" PRIu64, shown[k]);
        cli_table_add(t, "%s", eta);
    }
    char uptime[32];
    cli_text_age_format(st->uptime_ms, uptime, sizeof uptime);
    printf("uptime %s  consumers %" PRIu64 "  breaker %s  bad input %" PRIu64 "  failed sends %" PRIu64 "\n",
           uptime, st->consumers, st->breaker[0] ? st->breaker : "-", st->rx_bad, st->tx_failed);
    if (sink)
        stats_sink_line(sink);
    cli_coord_print(&st->coord);
    for (unsigned i = 0; more && i < st->nlevels; i++)
        if (more->quarantined_level[i])
            printf("level %u (%s) is QUARANTINED: %" PRIu64 " messages not served; its stored trees failed the "
                   "broker's checks at start (see its log; sluice salvage recovers them)\n", i, st->level[i].name,
                   more->quarantined[i]);
    int rc = cli_table_print(t);
    cli_table_destroy(&t);
    return rc;
}

/* stats_print prints one snapshot for stats --watch (cli_top.c). */
static int stats_print(const sl_stats *st, const sl_stats_ex *ex, bool json)
{
    if (json) {
        stats_json(st, ex, NULL, NULL);
        return 0;
    }
    return stats_table(st, ex, NULL, NULL);
}

int cli_stats_main(cli_core *g, const char *cmd, int argc, char **argv)
{
    bool json = false;
    int watch_ms;
    long count;
    argc = cli_top_watch_take(cmd, argc, argv, &watch_ms, &count);
    if (argc < 0)
        return -argc;
    int kept = 1; /* --wide: taken out here, the rest parsed as any show command's */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            while (i < argc)
                argv[kept++] = argv[i++];
            break;
        }
        if (strcmp(argv[i], "--wide") == 0)
            wide = true;
        else
            argv[kept++] = argv[i];
    }
    argv[kept] = NULL;
    argc = kept;
    if (cli_multi_is(g)) { /* -b a,b: a row per broker */
        int st = cli_core_plain_args(g, cmd, argc, argv, &json, 0, "");
        return st != CLI_CORE_GO_ON ? st : cli_multi_stats(g, cmd, json);
    }
    int st = cli_core_show_args(g, cmd, argc, argv, &json);
    if (st != CLI_CORE_GO_ON)
        return st;
    if (watch_ms)
        return cli_top_watch(g, cmd, watch_ms, count, json, stats_print);
    sl_stats stats;
    sl_stats_ex ex;
    sl_stats_more more = {.size = sizeof more};
    int rc = sl_stats_get_more(g->c, &stats, &ex, &more);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, "", NULL);
    sl_sink_info sink; /* why the sink's rate is where it is: sink show's line */
    const sl_sink_info *shown = sl_sink_show(g->c, &sink) == SL_OK ? &sink : NULL;
    if (json) {
        stats_json(&stats, &ex, &more, shown);
    } else if (stats_table(&stats, &ex, &more, shown)) {
        cli_text_say(cmd, "out of memory");
        return CLI_TEXT_EXIT_FAILURE;
    }
    return cli_core_output_done(cmd);
}
