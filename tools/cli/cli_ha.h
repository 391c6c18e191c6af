/*
 * cli_ha.h - `sluice ha status|switchover`: a high-availability group.
 */
#ifndef SLUICE_CLI_HA_H
#define SLUICE_CLI_HA_H

#include "cli_core.h"

/* cli_ha_help is `sluice ha --help`. */
extern const cli_core_help cli_ha_help;

/* cli_ha_main runs `sluice ha SUBCOMMAND ...` (argv[0] is "ha").
 * Returns the exit status. */
int cli_ha_main(cli_core *g, const char *cmd, int argc, char **argv);

#endif /* SLUICE_CLI_HA_H */
