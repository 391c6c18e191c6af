/*
 * cli_ha.c - `sluice ha status [--json]`, `sluice ha switchover` and
 * `sluice ha recover --node NAME`: a
 * high-availability group (sluiced --ha), seen from the node -b reaches.
 *
 * status asks ha.status (sl_ha_status_get): the group's epoch and, per
 * node, its role, endpoint, whether it is in sync and its lag in records.
 * A primary answers with what its stream and Redis say; a standby answers
 * too, with its own view (so the command works while the primary is down).
 * recover asks a node, after Redis lost its data, to write the group's
 * record again with the named node leading the next epoch (ha.recover).
 * switchover asks the primary (ha.switchover, sl_ha_switchover) to hand
 * its lease to the standby in sync; with -b 'a|b' the request finds the
 * primary.
 *
 * Costs: one round trip.
 */
#include "cli_ha.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli_text.h"

enum { OPT_NODE = 256 };

const cli_core_help cli_ha_help = {
    .summary = "a high-availability group: status, switchover",
    .body =
        "  sluice ha status [--json]\n"
        "      The group's epoch and each node: its role (primary, standby, fenced:\n"
        "      a primary without a valid lease, unreachable), endpoint, whether it\n"
        "      is in sync, and its lag in records. A standby answers too.\n"
        "      --json               {\"epoch\": N, \"nodes\": [{\"node\", \"role\",\n"
        "                           \"endpoint\", \"in_sync\", \"lag_records\"}, ...]}\n"
        "  sluice ha switchover\n"
        "      Hand the primary's lease to its standby in sync, at the next epoch:\n"
        "      the standby serves well under a second later, and the old primary\n"
        "      follows it. Refused when no standby is in sync.\n"
        "  sluice ha recover --node NAME\n"
        "      After Redis lost its data (nothing promotes by itself then): write the\n"
        "      group's record again, NAME leading the next epoch. Pick the node whose\n"
        "      store is the most recent (the last primary, or its standby in sync).\n",
    .examples =
        "  sluice -b 'tcp://a:7470|tcp://b:7470' ha status\n"
        "  sluice -b 'tcp://a:7470|tcp://b:7470' ha switchover\n"
        "  sluice -b tcp://a:7470 ha recover --node n1\n",
};

static int ha_status(cli_core *g, const char *cmd, int argc, char **argv)
{
    bool json = false;
    int st = cli_core_show_args(g, cmd, argc, argv, &json);
    if (st != CLI_CORE_GO_ON)
        return st;
    sl_ha_status s;
    int rc = sl_ha_status_get(g->c, &s);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, "", NULL);
    if (json) {
        printf("{\"epoch\": %" PRIu64 ", \"nodes\": [", s.epoch);
        for (unsigned i = 0; i < s.nnodes; i++) {
            const sl_ha_node *n = &s.nodes[i];
            printf("%s{\"node\": ", i ? ", " : "");
            cli_text_json_string(n->node);
            printf(", \"role\": ");
            cli_text_json_string(n->role);
            printf(", \"endpoint\": ");
            cli_text_json_string(n->endpoint);
            printf(", \"in_sync\": %s, \"lag_records\": %" PRIu64 "}", n->in_sync ? "true" : "false",
                   n->lag_records);
        }
        printf("]}\n");
    } else {
        printf("epoch %" PRIu64 "\n%-16s %-12s %-8s %-12s %s\n", s.epoch, "NODE", "ROLE", "IN_SYNC", "LAG_RECORDS",
               "ENDPOINT");
        for (unsigned i = 0; i < s.nnodes; i++) {
            const sl_ha_node *n = &s.nodes[i];
            printf("%-16s %-12s %-8s %-12" PRIu64 " %s\n", n->node, n->role, n->in_sync ? "yes" : "no",
                   n->lag_records, n->endpoint);
        }
    }
    return cli_core_output_done(cmd);
}

static int ha_switchover(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (ch) {
        case 'h': return cli_core_help_show(g, cmd);
        default: return cli_text_option_error(cmd, ch, argv);
        }
    }
    if (optind < argc)
        return cli_text_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    int st = cli_core_connect(g, cmd);
    if (st)
        return st;
    int rc = sl_ha_switchover(g->c);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, "", NULL);
    printf("switchover asked: the standby in sync leads the next epoch\n");
    return cli_core_output_done(cmd);
}

static int ha_recover(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const struct option opts[] = {
        {"node", required_argument, NULL, OPT_NODE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *node = NULL;
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (ch) {
        case OPT_NODE: node = optarg; break;
        case 'h': return cli_core_help_show(g, cmd);
        default: return cli_text_option_error(cmd, ch, argv);
        }
    }
    if (optind < argc)
        return cli_text_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (!node || !node[0])
        return cli_text_usage_error(cmd, "--node NAME is required: the node to lead the next epoch");
    int st = cli_core_connect(g, cmd);
    if (st)
        return st;
    int rc = sl_ha_recover(g->c, node);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, "", NULL);
    printf("recovery asked: %s leads the next epoch\n", node);
    return cli_core_output_done(cmd);
}

int cli_ha_main(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const cli_core_command subs[] = {
        {"status", ha_status, NULL},
        {"switchover", ha_switchover, NULL},
        {"recover", ha_recover, NULL},
    };
    return cli_core_run(g, cmd, subs, sizeof subs / sizeof subs[0], argc - 1, argv + 1);
}
