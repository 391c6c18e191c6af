/*
 * scen_taglimits.h - the tag-limits scenario: a level served fair by tag,
 * 1,000 tags each limited to 2/s by a bucket of its own, in front of a sink
 * at 1,500/s, measured per tag at the sink (scen_taglimits.c).
 */
#ifndef SLUICE_SCEN_TAGLIMITS_H
#define SLUICE_SCEN_TAGLIMITS_H

#include "scen.h"

/* scen_taglimits_run runs tag-limits with o: starts the broker, the keyed
 * sink and the consumers, publishes the backlog, runs the load and the
 * drain, writes OUT/tag-limits.csv and the chart, and prints the per-tag
 * windows, the sink's 429s, its utilisation and exactly-once. Returns 0
 * when it ran and every check passed, -1 otherwise (reported). */
int scen_taglimits_run(const scen_opts *o);

#endif /* SLUICE_SCEN_TAGLIMITS_H */
