/*
 * cli_exec.h - run a command with a message body on its standard input.
 */
#ifndef SLUICE_CLI_EXEC_H
#define SLUICE_CLI_EXEC_H

#include <stddef.h>

#include "sluice.h"

/* The most bytes kept of the last line a command wrote to standard error. */
#define CLI_EXEC_LINE_MAX 256

/* cli_exec_run runs /bin/sh -c cmd with body[0..body_len) on its standard
 * input and waits for it, passing its standard error on to ours and
 * keeping the last non-empty line of it in err_line (err_cap bytes, at most
 * CLI_EXEC_LINE_MAX + 1 used; "" when it wrote none; err_cap 0: not kept).
 * Returns 0 with *status set (as waitpid sets it), or -1 with errno when the
 * command could not be run. Thread-safe. */
int cli_exec_run(const char *cmd, const void *body, size_t body_len, int *status, char *err_line, size_t err_cap);

/* cli_exec_run_env is cli_exec_run with the command's environment env (a
 * NULL-terminated array, as execve takes it; NULL: this process's). */
int cli_exec_run_env(const char *cmd, char *const *env, const void *body, size_t body_len, int *status,
                     char *err_line, size_t err_cap);

/* cli_exec_env_new returns this process's environment with d's message
 * identity and headers added (one malloc'd block: free it), or NULL when
 * out of memory: SLUICE_ID, SLUICE_ATTEMPT, SLUICE_LEVEL,
 * SLUICE_IDEMPOTENCY_KEY (d's key, else "sluice-ID") and, for each header,
 * SLUICE_HEADER_<NAME> with the name in upper case and every character but
 * letters and digits as '_' (traceparent: SLUICE_HEADER_TRACEPARENT). A
 * variable of those names already in the environment is replaced; of two
 * headers that map to one name (a-b, a_b), the later wins. */
char **cli_exec_env_new(const sl_delivery *d);

#endif /* SLUICE_CLI_EXEC_H */
