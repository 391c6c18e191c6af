/*
 * cli_level.h - the `sluice level` commands.
 */
#ifndef SLUICE_CLI_LEVEL_H
#define SLUICE_CLI_LEVEL_H

#include "cli_core.h"

/* cli_level_help is `sluice level --help`. */
extern const cli_core_help cli_level_help;

/* cli_level_main runs `sluice level ...` (a cli_core_fn): list, set, pause,
 * resume. */
int cli_level_main(cli_core *g, const char *cmd, int argc, char **argv);

#endif /* SLUICE_CLI_LEVEL_H */
