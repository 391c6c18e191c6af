/*
 * cli_tag.h - the `sluice tag` commands.
 */
#ifndef SLUICE_CLI_TAG_H
#define SLUICE_CLI_TAG_H

#include "cli_core.h"

/* cli_tag_help is `sluice tag --help`. */
extern const cli_core_help cli_tag_help;

/* cli_tag_main runs `sluice tag ...` (a cli_core_fn): set, list, pause,
 * resume. */
int cli_tag_main(cli_core *g, const char *cmd, int argc, char **argv);

#endif /* SLUICE_CLI_TAG_H */
