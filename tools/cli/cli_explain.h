/*
 * cli_explain.h - the `sluice explain` command.
 */
#ifndef SLUICE_CLI_EXPLAIN_H
#define SLUICE_CLI_EXPLAIN_H

#include "cli_core.h"

/* cli_explain_help is `sluice explain --help`. */
extern const cli_core_help cli_explain_help;

/* cli_explain_main runs `sluice explain ID` (a cli_core_fn). */
int cli_explain_main(cli_core *g, const char *cmd, int argc, char **argv);

#endif /* SLUICE_CLI_EXPLAIN_H */
