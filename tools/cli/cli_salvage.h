/*
 * cli_salvage.h - `sluice salvage --data DIR --to NEWDIR`: a damaged store
 * rebuilt by the broker's own code.
 */
#ifndef SLUICE_CLI_SALVAGE_H
#define SLUICE_CLI_SALVAGE_H

#include "cli_core.h"

/* cli_salvage_main runs `sluice salvage`. Returns the exit status. */
extern const cli_core_help cli_salvage_help;

int cli_salvage_main(cli_core *g, const char *cmd, int argc, char **argv);

#endif /* SLUICE_CLI_SALVAGE_H */
