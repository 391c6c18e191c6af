/*
 * scen_shared.h - the shared-sink scenario: several brokers sharing one
 * sink's rate through capacity leases in Redis (scen_shared.c).
 */
#ifndef SLUICE_SCEN_SHARED_H
#define SLUICE_SCEN_SHARED_H

#include "scen.h"

/* scen_shared_run runs shared-sink with o: starts redis-server, the brokers,
 * the sink and the consumers, and prints the sink's figures. Returns 0 when
 * it ran and every check passed, -1 otherwise (reported). */
int scen_shared_run(const scen_opts *o);

#endif /* SLUICE_SCEN_SHARED_H */
