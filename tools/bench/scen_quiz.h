/*
 * scen_quiz.h - the throttle-quiz and priorities scenarios of `sluice
 * bench`: a bursty load over a sink that allows 500 requests a second.
 */
#ifndef SLUICE_SCEN_QUIZ_H
#define SLUICE_SCEN_QUIZ_H

#include <stdbool.h>

#include "scen.h"

/* scen_quiz_run runs throttle-quiz (priorities false: everything on
 * level 1) or priorities (bursts on level 0, steady load on level 1, a
 * trickle on level 2) with the options o, writing OUT/NAME.csv,
 * OUT/NAME.gp, OUT/NAME.png and the logs, and printing the summary.
 * Returns 0, or -1 when something could not be started, stopped or written
 * (reported). */
int scen_quiz_run(const scen_opts *o, bool priorities);

#endif /* SLUICE_SCEN_QUIZ_H */
