/*
 * cli_exec.h - run a command with a message body on its standard input.
 */
#ifndef SLUICE_CLI_EXEC_H
#define SLUICE_CLI_EXEC_H

#include <stddef.h>

/* The most bytes kept of the last line a command wrote to standard error. */
#define CLI_EXEC_LINE_MAX 256

/* cli_exec_run runs /bin/sh -c cmd with body[0..body_len) on its standard
 * input and waits for it, passing its standard error on to ours and
 * keeping the last non-empty line of it in err_line (err_cap bytes, at most
 * CLI_EXEC_LINE_MAX + 1 used; "" when it wrote none; err_cap 0: not kept).
 * Returns 0 with *status set (as waitpid sets it), or -1 with errno when the
 * command could not be run. Thread-safe. */
int cli_exec_run(const char *cmd, const void *body, size_t body_len, int *status, char *err_line, size_t err_cap);

#endif /* SLUICE_CLI_EXEC_H */
