/*
 * cli_exec.h - run a command with a message body on its standard input.
 */
#ifndef SLUICE_CLI_EXEC_H
#define SLUICE_CLI_EXEC_H

#include <stddef.h>

/* cli_exec_run runs /bin/sh -c cmd with body[0..body_len) on its standard
 * input and waits for it. Returns 0 with *status set (as waitpid sets it),
 * or -1 with errno when the command could not be run. Thread-safe. */
int cli_exec_run(const char *cmd, const void *body, size_t body_len, int *status);

#endif /* SLUICE_CLI_EXEC_H */
