/*
 * cli_multi.h - commands over several brokers (-b a,b or SLUICE_BROKER
 * with commas): `sluice stats` as one table with a row per broker.
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

#endif /* SLUICE_CLI_MULTI_H */
