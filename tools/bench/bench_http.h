/*
 * bench_http.h - the HTTP server's rows (bench_http.c): publish over HTTP
 * against the ZeroMQ 1 x 1 row, the 1 x 100 row with four consoles open,
 * and the snapshot's cost to the loop.
 */
#ifndef SLUICE_BENCH_HTTP_H
#define SLUICE_BENCH_HTTP_H

#include "bench_args.h"
#include "bench_run.h"

/* bench_http_rows starts sluiced (the binary at sluiced) with --http in a
 * directory of b's, adds the rows to b's table and stops it. Returns 0, or
 * -1 (reported). */
int bench_http_rows(bench *b, const char *sluiced);

#endif /* SLUICE_BENCH_HTTP_H */
