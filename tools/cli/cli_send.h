/*
 * cli_send.h - the `sluice send` command.
 */
#ifndef SLUICE_CLI_SEND_H
#define SLUICE_CLI_SEND_H

#include "cli_core.h"

/* cli_send_help is `sluice send --help`. */
extern const cli_core_help cli_send_help;

/* cli_send_main runs `sluice send [options] [BODY...]` (a cli_core_fn). */
int cli_send_main(cli_core *g, const char *cmd, int argc, char **argv);

#endif /* SLUICE_CLI_SEND_H */
