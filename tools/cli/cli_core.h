/*
 * cli_core.h - what the files of the `sluice` command share: the global
 * options and the broker connection, reporting the library's errors,
 * resolving levels, the arguments of simple commands, and running a command
 * by name.
 *
 * Every command is a cli_core_fn: it gets the shared state, its name for
 * messages ("pool resize") and its own argv (argv[0] is the command's last
 * word), and returns the process's exit status (cli_text.h). Only the main
 * thread uses the connection.
 */
#ifndef SLUICE_CLI_CORE_H
#define SLUICE_CLI_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sluice.h"

#define CLI_CORE_GO_ON          (-1) /* from argument checks: no exit status yet */
#define CLI_CORE_NAME_MAX_BYTES 64   /* a pool's name */
#define CLI_CORE_HEARTBEAT_MS   20000 /* the connection's heartbeat: a broker silent 3x this is gone */

/* The global options and the connection every command uses. */
typedef struct cli_core {
    const char *endpoint;
    int timeout_ms;
    const char *key_file;        /* --key: this client's .key file (CURVE), or NULL */
    const char *server_key_file; /* --server-key: the broker's .pub file, or NULL */
    const struct cli_core_help *help; /* what --help prints: the running command's */
    sl_client *c;     /* NULL until cli_core_connect */
    bool answered;    /* the broker has replied once: a timeout is then not "unreachable" */
} cli_core;

typedef int (*cli_core_fn)(cli_core *g, const char *cmd, int argc, char **argv);

/* A command's help, kept in the command's own file. body is in the layout
 * tools/dist/help2man.sh reads: each synopsis at column 2 ("  sluice pool
 * resize NAME SIZE", continued by lines starting with '['), its text at
 * column 6, options at 6 with their text at 27. examples are lines
 * "  COMMAND LINE   what it does" (two spaces or more before the comment).
 * `sluice COMMAND --help` prints body and examples (at most 80 lines of at
 * most 80 columns, checked by tests/unit/test_cli_help.c); `sluice help --all`
 * prints every body under "Commands:" and every example under "Examples:",
 * and the manual page sluice(1) is made from that. */
typedef struct cli_core_help {
    const char *summary;  /* one line for `sluice --help`: "publish messages" */
    const char *body;     /* synopses and what they do, options included */
    const char *examples; /* NULL for none */
} cli_core_help;

/* One line of a command table: a command's name, what runs it and its help
 * (NULL in a group's table: the group's help serves its subcommands). */
typedef struct cli_core_command {
    const char *name;
    cli_core_fn fn;
    const cli_core_help *help;
} cli_core_command;

/* cli_core_run runs the command table[i] named argv[0] (making table[i].help,
 * when set, g->help), or reports that there is none, suggesting the nearest
 * name. In a group, "--help" or "-h" instead of a subcommand prints the
 * group's help. group names the family for messages ("pool"), or is NULL at
 * the top level. Returns the exit status. */
int cli_core_run(cli_core *g, const char *group, const cli_core_command *table, size_t n, int argc,
                 char **argv);

/* cli_core_help_print writes h as `sluice COMMAND --help` shows it. */
void cli_core_help_print(const cli_core_help *h, FILE *out);

/* cli_core_help_show prints the running command's help (g->help) on
 * standard output, for its --help option. Returns the exit status. */
int cli_core_help_show(cli_core *g, const char *cmd);

/* cli_core_nearest returns the name of table nearest to word (a typo's
 * distance, or a prefix of one name), or NULL when none is near. */
const char *cli_core_nearest(const cli_core_command *table, size_t n, const char *word);

/* cli_core_global_set applies the global option name ("broker",
 * "timeout", "key" or "server-key") with value to g. Returns CLI_CORE_GO_ON, or the exit status of
 * a usage error, reported. */
int cli_core_global_set(cli_core *g, const char *name, const char *value);

/* cli_core_globals_take takes the global options (-b, --broker, --timeout,
 * --client-key, --server-key, and --key except after `send`, whose --key is
 * the idempotency key; in their -bEP and --name=value forms too) that follow the command's name
 * out of argv[1..argc-1], up to a "--", applies them and closes the gap, so
 * that `sluice stats -b EP` means `sluice -b EP stats` for every command.
 * argv[0] is the command's name. Returns the new argc (argv stays
 * NULL-terminated), or minus the exit status of a usage error, reported. */
int cli_core_globals_take(cli_core *g, int argc, char **argv);

/* cli_core_connect creates g->c. Returns 0 or the exit status, reported. */
int cli_core_connect(cli_core *g, const char *cmd);

/* cli_core_broker_error reports rc from a library call on g->c, after
 * context (may be empty) and before extra (may be NULL), with the broker's
 * words when it gave any. Returns the exit status. */
int cli_core_broker_error(cli_core *g, const char *cmd, int rc, const char *context,
                          const char *extra);

/* cli_core_level_resolve turns text (a name or number) into a level, or
 * reports why not, naming the broker's levels. Returns 0 or the exit
 * status. */
int cli_core_level_resolve(cli_core *g, const char *cmd, const char *text, unsigned *level);

/* cli_core_level_name returns level's name, or its number written in buf
 * when the broker's levels are not known. */
const char *cli_core_level_name(cli_core *g, unsigned level, char *buf, size_t size);

/* cli_core_show_args starts a command that shows something: it parses its
 * options (--help and --json, no operands) and connects to the broker.
 * Returns CLI_CORE_GO_ON, or the exit status. */
int cli_core_show_args(cli_core *g, const char *cmd, int argc, char **argv, bool *json);

/* cli_core_plain_args parses the arguments of a command whose only options
 * are --help and, when json is not NULL, --json, and which takes exactly
 * noperands operands (described by operands, for the error), left at
 * argv[optind...]. Returns CLI_CORE_GO_ON, or the exit status. */
int cli_core_plain_args(cli_core *g, const char *cmd, int argc, char **argv, bool *json,
                        int noperands, const char *operands);

/* cli_core_id_args parses the arguments of a command that takes one message
 * id and only --help, into *id, then connects. Returns CLI_CORE_GO_ON, or
 * the exit status (2 for a missing or malformed id). */
int cli_core_id_args(cli_core *g, const char *cmd, int argc, char **argv, uint64_t *id);

/* cli_core_pool_check refuses a pool name the broker would. Returns
 * CLI_CORE_GO_ON, or the exit status, reported. */
int cli_core_pool_check(const char *cmd, const char *name);

/* cli_core_output_done flushes standard output. Returns 0, or the exit
 * status after reporting that writing failed. */
int cli_core_output_done(const char *cmd);

/* cli_core_now_ms reads CLOCK_MONOTONIC in milliseconds. */
int64_t cli_core_now_ms(void);

#endif /* SLUICE_CLI_CORE_H */
