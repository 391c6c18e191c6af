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
#include <string.h>

#include "cli_text.h"

#define WEB_TTL_MAX_MS (7ULL * 86400 * 1000) /* the broker's bound for a session */

enum { OPT_TTL = 256, OPT_JSON };

const cli_core_help cli_web_help = {
    .summary = "print a one-time login link to the web console",
    .body =
        "  sluice web login [--ttl DURATION] [--json]\n"
        "      Print a one-time link, http://ADDR:PORT/#login=TOKEN, to the broker's\n"
        "      web console (sluiced --http) for the principal of this client's key:\n"
        "      the session it opens has that principal's role (admin: every\n"
        "      control; monitor: none; producer: publish only). Open it in a browser\n"
        "      on a machine that reaches the console's address. The link itself is\n"
        "      good for one login within ten minutes.\n"
        "      --ttl DURATION       how long the session lasts: 30m, 8h, 1d (default\n"
        "                           8h, at most 7d; a plain number is milliseconds)\n"
        "      --json               an object: url, link, role, ttl_ms\n",
    .examples =
        "  sluice web login --ttl 1h                    a link for an hour's session\n",
};

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
            if (!cli_text_duration_parse(optarg, 1, false, WEB_TTL_MAX_MS, &ttl_ms) || !ttl_ms)
                return cli_text_usage_error(cmd, "--ttl %s: expected a duration from 1ms to 7d, such as 30m or 8h",
                                            optarg);
            break;
        case OPT_JSON: json = true; break;
        case 'h': return cli_core_help_show(g, cmd);
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
    if (json) {
        char full[sizeof link.url + sizeof link.token + 16];
        snprintf(full, sizeof full, "%s/#login=%s", link.url, link.token);
        printf("{\"url\":");
        cli_text_json_string(link.url);
        printf(",\"link\":");
        cli_text_json_string(full);
        printf(",\"role\":");
        cli_text_json_string(link.role);
        printf(",\"ttl_ms\":%" PRIu64 "}\n", link.ttl_ms);
    } else {
        printf("%s/#login=%s\n", link.url, link.token);
    }
    return cli_core_output_done(cmd);
}

int cli_web_main(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const cli_core_command subs[] = {
        {"login", web_login, NULL},
    };
    return cli_core_run(g, cmd, subs, sizeof subs / sizeof subs[0], argc - 1, argv + 1);
}
