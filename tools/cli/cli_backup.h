/*
 * cli_backup.h - `sluice backup --to DIR` and `sluice settings export`:
 * a copy of the running broker's store, and its settings as declarations.
 */
#ifndef SLUICE_CLI_BACKUP_H
#define SLUICE_CLI_BACKUP_H

#include "cli_core.h"

/* cli_backup_main runs `backup --to DIR [--json]` (or `backup status`) and
 * returns the exit status: 0 once the copy is done, 1 when the broker
 * refused or the copy failed. */
extern const cli_core_help cli_backup_help, cli_settings_help;

int cli_backup_main(cli_core *g, const char *cmd, int argc, char **argv);

/* cli_settings_main runs `settings export`: the broker's running settings
 * as sluice.conf declarations, on standard output. */
int cli_settings_main(cli_core *g, const char *cmd, int argc, char **argv);

#endif /* SLUICE_CLI_BACKUP_H */
