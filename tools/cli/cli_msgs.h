/*
 * cli_msgs.h - `sluice peek|delete|purge|move`: the messages waiting in a
 * level, read without taking them, deleted, or moved to another level.
 */
#ifndef SLUICE_CLI_MSGS_H
#define SLUICE_CLI_MSGS_H

#include "cli_core.h"

/* Each runs its command (argv[0] is its name) and returns the exit status:
 * cli_msgs_peek shows a level's waiting messages, cli_msgs_delete deletes
 * one by id, cli_msgs_purge deletes a level's (or a tag's, or the old
 * ones), cli_msgs_move moves them to another level. */
extern const cli_core_help cli_peek_help, cli_delete_help, cli_purge_help, cli_move_help;

int cli_msgs_peek(cli_core *g, const char *cmd, int argc, char **argv);
int cli_msgs_delete(cli_core *g, const char *cmd, int argc, char **argv);
int cli_msgs_purge(cli_core *g, const char *cmd, int argc, char **argv);
int cli_msgs_move(cli_core *g, const char *cmd, int argc, char **argv);

#endif /* SLUICE_CLI_MSGS_H */
