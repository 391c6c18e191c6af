/*
 * cli_keygen.h - `sluice keygen NAME`: a CURVE key pair in two files.
 */
#ifndef SLUICE_CLI_KEYGEN_H
#define SLUICE_CLI_KEYGEN_H

#include "cli_core.h"

/* cli_keygen_help is `sluice keygen --help`. */
extern const cli_core_help cli_keygen_help;

/* cli_keygen_main runs `sluice keygen`. Returns the exit status. */
int cli_keygen_main(cli_core *g, const char *cmd, int argc, char **argv);

#endif /* SLUICE_CLI_KEYGEN_H */
