/*
 * cli_consume.h - the `sluice consume` command.
 */
#ifndef SLUICE_CLI_CONSUME_H
#define SLUICE_CLI_CONSUME_H

#include "cli_core.h"

/* cli_consume_help is `sluice consume --help`. */
extern const cli_core_help cli_consume_help;

/* What a worker made of a delivery; the main thread settles it so.
 * THROTTLED_TAG: THROTTLED for the delivery's tag alone (SL_SCOPE_TAG). */
enum {
    CLI_OUTCOME_ACK, CLI_OUTCOME_NACK, CLI_OUTCOME_THROTTLED, CLI_OUTCOME_REFUSED, CLI_OUTCOME_FAILED,
    CLI_OUTCOME_THROTTLED_TAG
};

/* cli_consume_main runs `sluice consume` (a cli_core_fn). */
int cli_consume_main(cli_core *g, const char *cmd, int argc, char **argv);

#endif /* SLUICE_CLI_CONSUME_H */
