/*
 * cli_admin.h - the `sluice` commands pool and explain.
 */
#ifndef SLUICE_CLI_ADMIN_H
#define SLUICE_CLI_ADMIN_H

#include "cli_core.h"

/* cli_admin_pool runs `sluice pool ...` (a cli_core_fn): list, resize,
 * pause, resume, autoscale. */
int cli_admin_pool(cli_core *g, const char *cmd, int argc, char **argv);

/* cli_admin_explain runs `sluice explain ID`. */
int cli_admin_explain(cli_core *g, const char *cmd, int argc, char **argv);

#endif /* SLUICE_CLI_ADMIN_H */
