/*
 * scen_ingest.h - the ingest scenario of `sluice-bench --scenario`: a batch of
 * costed records metered into a sink, beside a naive retry loop.
 */
#ifndef SLUICE_SCEN_INGEST_H
#define SLUICE_SCEN_INGEST_H

#include "scen.h"

/* scen_ingest_run runs the ingest scenario with the options o, writing
 * OUT/ingest.csv, OUT/ingest.gp, OUT/ingest.png and the logs, and printing
 * the summary and its checks. Returns 0 when every check passed, -1 when
 * one failed or something could not be started, stopped or written. */
int scen_ingest_run(const scen_opts *o);

#endif /* SLUICE_SCEN_INGEST_H */
