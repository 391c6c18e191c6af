/*
 * cli_sink.h - the `sluice sink` commands.
 */
#ifndef SLUICE_CLI_SINK_H
#define SLUICE_CLI_SINK_H

#include "cli_core.h"

/* cli_sink_help is `sluice sink --help`. */
extern const cli_core_help cli_sink_help;

/* cli_sink_main runs `sluice sink ...` (a cli_core_fn): set, show. */
int cli_sink_main(cli_core *g, const char *cmd, int argc, char **argv);

#endif /* SLUICE_CLI_SINK_H */
