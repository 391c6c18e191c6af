/*
 * cli_pool.h - the `sluice pool` commands.
 */
#ifndef SLUICE_CLI_POOL_H
#define SLUICE_CLI_POOL_H

#include "cli_core.h"

/* cli_pool_help is `sluice pool --help`. */
extern const cli_core_help cli_pool_help;

/* cli_pool_main runs `sluice pool ...` (a cli_core_fn): list, resize,
 * pause, resume, autoscale, delete. */
int cli_pool_main(cli_core *g, const char *cmd, int argc, char **argv);

#endif /* SLUICE_CLI_POOL_H */
