/*
 * cli_bench_plot.h - charts of a scenario: a gnuplot script written next to
 * its CSV, run with `gnuplot` into a 1000x600 PNG.
 *
 * The script is kept, so a chart can be redrawn or restyled by hand. Paths
 * in it are absolute, so it runs from any directory.
 */
#ifndef SLUICE_CLI_BENCH_PLOT_H
#define SLUICE_CLI_BENCH_PLOT_H

#include <stdio.h>

#include "cli_bench.h"

/* cli_bench_plot_open creates OUT/NAME.gp and writes its preamble: the PNG
 * terminal (pngcairo when gnuplot has it, else png) at 1000x600, the output
 * OUT/NAME.png, the title, comma-separated data with a header line, a grid
 * and the key. Returns the open file, or NULL, reported. */
FILE *cli_bench_plot_open(const cli_bench_opts *o, const char *name, const char *title);

/* cli_bench_plot_data writes the absolute path of OUT/file into buf. */
const char *cli_bench_plot_data(const cli_bench_opts *o, const char *file, char *buf, size_t size);

/* cli_bench_plot_close closes f and runs gnuplot on OUT/NAME.gp (60 s at
 * most; its messages go to OUT/NAME.gnuplot.log). Returns 0 when the PNG
 * was made; -1, reported, when gnuplot is missing or failed. */
int cli_bench_plot_close(const cli_bench_opts *o, FILE *f, const char *name);

#endif /* SLUICE_CLI_BENCH_PLOT_H */
