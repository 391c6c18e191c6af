/*
 * scen_plot.h - charts of a scenario: a gnuplot script written next to
 * its CSV, run with `gnuplot` into a 1000x600 PNG.
 *
 * The script is kept, so a chart can be redrawn or restyled by hand. Paths
 * in it are absolute, so it runs from any directory.
 */
#ifndef SLUICE_SCEN_PLOT_H
#define SLUICE_SCEN_PLOT_H

#include <stdio.h>

#include "scen.h"

/* scen_plot_open creates OUT/NAME.gp and writes its preamble: the PNG
 * terminal (pngcairo when gnuplot has it, else png) at 1000x600, the output
 * OUT/NAME.png, the title, comma-separated data with a header line, a grid
 * and the key. Returns the open file, or NULL, reported. */
FILE *scen_plot_open(const scen_opts *o, const char *name, const char *title);

/* scen_plot_data writes the absolute path of OUT/file into buf. */
const char *scen_plot_data(const scen_opts *o, const char *file, char *buf, size_t size);

/* scen_plot_close closes f and runs gnuplot on OUT/NAME.gp (60 s at
 * most; its messages go to OUT/NAME.gnuplot.log). Returns 0 when the PNG
 * was made; -1, reported, when gnuplot is missing or failed. */
int scen_plot_close(const scen_opts *o, FILE *f, const char *name);

#endif /* SLUICE_SCEN_PLOT_H */
