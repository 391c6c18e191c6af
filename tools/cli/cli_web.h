/*
 * cli_web.h - `sluice web login`: a one-time link to the broker's web console.
 */
#ifndef SLUICE_CLI_WEB_H
#define SLUICE_CLI_WEB_H

#include "cli_core.h"

/* cli_web_help is `sluice web --help`. */
extern const cli_core_help cli_web_help;

/* cli_web_main runs `sluice web SUBCOMMAND ...` (argv[0] is "web").
 * Returns the exit status. */
int cli_web_main(cli_core *g, const char *cmd, int argc, char **argv);

#endif /* SLUICE_CLI_WEB_H */
