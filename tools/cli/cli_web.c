/*
 * cli_web.c - `sluice web login [--ttl DURATION] [--json]`: a one-time link
 * to the broker's web console (sluiced --http), for this client's own
 * principal.
 *
 * The link is minted by the broker (web.login, sl_web_login) for the key
 * this client connects with, so the session it opens has that principal's
 * role: an admin's console has every control, a monitor's none. Printed as
 * http://ADDR:PORT/#login=TOKEN: the token rides in the fragment, which a
 * browser never sends to a server nor to a Referer; the page posts it once
 * to /api/v1/login and forgets it. Without --auth the console is open and
 * the link simply opens it.
 *
 * Costs: one round trip.
 */
#include "cli_web.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_text.h"

enum { OPT_TTL = 256, OPT_JSON };

static const char web_help[] =
"Usage: sluice web login [--ttl DURATION] [--json]\n"
"\n"
"Print a one-time link to the broker's web console (sluiced --http), for the\n"
"principal of this client's key: the session it opens has that principal's\n"
"role (admin: every control; monitor: none; producer: publish only). Open it\n"
"in a browser on a machine that reaches the console's address.\n"
"\n"
"      --ttl DURATION  how long the link, and the session it opens, last:\n"
"                      a number with ms, s, m, h or d (default 8h, at most\n"
"                      7d; a plain number is seconds). The link itself is\n"
"                      good for at most ten minutes, and for one login\n"
"      --json          print {\"url\", \"link\", \"role\", \"ttl_ms\"}\n"
"\n"
"Example:\n"
"  sluice --key ops.key --server-key broker.pub web login --ttl 1h\n"
"  http://127.0.0.1:9470/#login=...\n";

/* duration reads "90s", "15m", "8h", "1d", "500ms" or "120" (seconds). */
static bool duration(const char *text, uint64_t *ms)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || v <= 0)
        return false;
    double unit = !*end || !strcmp(end, "s") ? 1000 : !strcmp(end, "ms") ? 1 : !strcmp(end, "m") || !strcmp(end, "min") ? 60000
                : !strcmp(end, "h") ? 3600000 : !strcmp(end, "d") ? 86400000 : -1;
    if (unit < 0 || v * unit > 7.0 * 86400000 + 0.5 || v * unit < 1)
        return false;
    *ms = (uint64_t)(v * unit + 0.5);
    return true;
}

static int web_login(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const struct option opts[] = {
        {"ttl", required_argument, NULL, OPT_TTL},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    uint64_t ttl_ms = 0;
    bool json = false;
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (ch) {
        case OPT_TTL:
            if (!duration(optarg, &ttl_ms))
                return cli_text_usage_error(cmd, "--ttl %s: expected a duration from 1 ms to 7d, such as 30m or 8h",
                                            optarg);
            break;
        case OPT_JSON: json = true; break;
        case 'h': fputs(web_help, stdout); return cli_core_output_done(cmd);
        default: return cli_text_option_error(cmd, ch, argv);
        }
    }
    if (optind < argc)
        return cli_text_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    int st = cli_core_connect(g, cmd);
    if (st)
        return st;
    sl_web_link link;
    int rc = sl_web_login(g->c, ttl_ms, &link);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, "", NULL); /* the broker says how to fix it */
    if (json)
        printf("{\"url\":\"%s\",\"link\":\"%s/#login=%s\",\"role\":\"%s\",\"ttl_ms\":%" PRIu64 "}\n", link.url,
               link.url, link.token, link.role, link.ttl_ms);
    else
        printf("%s/#login=%s\n", link.url, link.token);
    return cli_core_output_done(cmd);
}

int cli_web_main(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const cli_core_command subs[] = {
        {"login", web_login},
    };
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        fputs(web_help, stdout);
        return argc < 2 ? CLI_TEXT_EXIT_USAGE : cli_core_output_done(cmd);
    }
    return cli_core_run(g, cmd, subs, sizeof subs / sizeof subs[0], argc - 1, argv + 1);
}
