/*
 * scen_pace.h - the sink-pacing scenarios of `sluice-bench --scenario`:
 * what the sink sees when one `sluice consume --post` process with several
 * HTTP workers carries a backlog to it (pace, pace-stress, pace-exact), and
 * how fast the rate comes back after one 429 (pace-429).
 */
#ifndef SLUICE_SCEN_PACE_H
#define SLUICE_SCEN_PACE_H

#include "scen.h"

/* scen_pace_run runs the pacing scenario o->scenario names, writing
 * OUT/NAME.csv, OUT/NAME.gp, OUT/NAME.png and the logs, and printing the
 * rows with their targets. Returns 0 when every target was met, -1 when one
 * was not or something could not be started, stopped or written. */
int scen_pace_run(const scen_opts *o);

#endif /* SLUICE_SCEN_PACE_H */
