/*
 * cli_multi.h - commands over several brokers (-b a,b or SLUICE_BROKER
 * with commas): `sluice stats` as one table with a row per broker, and
 * running a command once per broker, each on its own thread and connection
 * (`sluice consume`).
 */
#ifndef SLUICE_CLI_MULTI_H
#define SLUICE_CLI_MULTI_H

#include <stdbool.h>

#include "cli_core.h"

/* cli_multi_is tells whether g names several brokers. */
bool cli_multi_is(const cli_core *g);

/* cli_multi_stats prints every broker's stats: a row per broker and one of
 * totals (text), or {"brokers":[...],"totals":{...}} (json). A broker that
 * does not answer is a row saying so; the exit status is 1 when any did not
 * answer. */
int cli_multi_stats(cli_core *g, const char *cmd, bool json);

/* cli_multi_fn runs a command against one broker: sub is a copy of the
 * global options naming that broker alone, with no connection yet; it may
 * connect (cli_core_connect) and the caller closes sub->c afterwards. It runs
 * on its own thread, and returns an exit status. */
typedef int (*cli_multi_fn)(cli_core *sub, void *ctx);

/* cli_multi_each runs fn once per broker of g's list, each on its own
 * thread with its own connection, and waits for all. Returns the worst exit
 * status (2 for a malformed list, reported). */
int cli_multi_each(cli_core *g, const char *cmd, cli_multi_fn fn, void *ctx);

#endif /* SLUICE_CLI_MULTI_H */
