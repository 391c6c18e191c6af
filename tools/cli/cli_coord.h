/*
 * cli_coord.h - how `sluice sink show` and `sluice stats` print a shared
 * sink's capacity lease (sl_coord_info).
 */
#ifndef SLUICE_CLI_COORD_H
#define SLUICE_CLI_COORD_H

#include "sluice.h"

/* cli_coord_json prints ,"coord":{...} (or ,"coord":null when the sink is
 * the broker's alone), to go inside a JSON object. */
void cli_coord_json(const sl_coord_info *c);

/* cli_coord_print prints the lease as lines of "name  value" text, or
 * nothing when the sink is the broker's alone. */
void cli_coord_print(const sl_coord_info *c);

#endif /* SLUICE_CLI_COORD_H */
