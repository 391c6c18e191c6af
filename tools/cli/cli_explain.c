/*
 * cli_explain.c - `sluice explain ID`: where a message is and why it has
 * not been delivered yet, in one line (the broker's EXPLAIN, sl_explain).
 * The broker's words (why) are a client's text in part (tags, pool names):
 * they are shown escaped (cli_text_safe).
 */
#include "cli_explain.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli_text.h"

/* `sluice explain --help`; the layout is cli_core.h's */
const cli_core_help cli_explain_help = {
    .summary = "say where a message is and why it waits",
    .body =
        "  sluice explain ID\n"
        "      Say where message ID is (ready, leased, delayed, dead or gone) and why\n"
        "      it has not been delivered yet: its place in its level, a paused level,\n"
        "      pool or tag, no consumer or no credit, a rate limit, delayed until,\n"
        "      leased until. Then how long it has waited since its publish (leased:\n"
        "      how long it waited before this delivery) and its headers.\n",
    .examples =
        "  sluice explain 42                            why is message 42 waiting?\n",
};

int cli_explain_main(cli_core *g, const char *cmd, int argc, char **argv)
{
    uint64_t id;
    int st = cli_core_id_args(g, cmd, argc, argv, &id);
    if (st != CLI_CORE_GO_ON)
        return st;
    sl_explain_info e;
    sl_msg_more more = {.size = sizeof more};
    int rc = sl_explain_ex(g->c, id, &e, &more);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, "", NULL);
    char number[16], until[32], state[4 * sizeof e.state], why[4 * sizeof e.why];
    const char *level = cli_core_level_name(g, e.level, number, sizeof number);
    cli_text_age_format(e.until_ms, until, sizeof until);
    printf("message %" PRIu64 ": ", id);
    if (strcmp(e.state, "ready") == 0 && e.position == 0)
        printf("ready at the head of level %s", level);
    else if (strcmp(e.state, "ready") == 0)
        printf("ready in level %s, %" PRIu64 " ahead of it", level, e.position);
    else if (strcmp(e.state, "leased") == 0)
        printf("leased from level %s, for %s more", level, until);
    else if (strcmp(e.state, "delayed") == 0)
        printf("delayed in level %s, due in %s", level, until);
    else if (strcmp(e.state, "dead") == 0)
        printf("a dead letter of level %s", level);
    else
        printf("%s", cli_text_safe(e.state, strlen(e.state), state, sizeof state));
    /* why names tags and pools: a client's text */
    printf("%s%s\n", e.why[0] ? "; " : "", cli_text_safe(e.why, strlen(e.why), why, sizeof why));
    if (strcmp(e.state, "gone") != 0 && strcmp(e.state, "quarantined") != 0) {
        cli_text_age_format(more.wait_ms, until, sizeof until);
        if (strcmp(e.state, "leased") == 0)
            printf("  delivered %s after its publish\n", until);
        else
            printf("  waiting %s since its publish\n", until);
    }
    for (size_t i = 0; i < more.nheaders; i++) { /* a client's text: escaped as why is */
        char value[4 * SL_MAX_HEADER_VALUE + 8];
        printf("  header %s: %s\n", more.headers[i].name,
               cli_text_safe(more.headers[i].value, strlen(more.headers[i].value), value, sizeof value));
    }
    return cli_core_output_done(cmd);
}
