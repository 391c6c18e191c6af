/*
 * bench_c.c - the C side of client/python/bench.py: the three rows of
 * sluice-bench that the Python client is held against, one per run, measured
 * by sluice-bench's own code (tools/bench/bench_workers.c and
 * bench_client.c), so that bench.py can run the C and the Python rows turn
 * about on one broker, and the machine's other work falls on both alike.
 *
 *   bench_c send ENDPOINT SECONDS    sl_send in a loop, one outstanding (the 1 x 1 row)
 *   bench_c window ENDPOINT SECONDS  100 sl_send_async outstanding (the 1 x 100 row)
 *   bench_c drain ENDPOINT COUNT     one consumer of credit 64 acking each delivery,
 *                                    until COUNT are acked (the drain row's shape)
 *
 * Prints one line, the rate in messages per second; exits 1 on an error
 * (reported on stderr by the bench's code), 2 on a usage error. bench.py
 * compiles it with those two files and links it with libsluice.so.1.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_client.h"
#include "bench_core.h"
#include "bench_workers.h"

#define WINDOW_MSGS 100
#define DRAIN_CREDIT 64

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: bench_c send|window ENDPOINT SECONDS | drain ENDPOINT COUNT\n");
        return 2;
    }
    const char *mode = argv[1], *endpoint = argv[2];
    long n = strtol(argv[3], NULL, 10);
    if (n <= 0)
        return 2;
    uint64_t msgs = 0;
    int64_t elapsed_ns = 0;
    bench_worker w[1];
    memset(w, 0, sizeof w);
    if (strcmp(mode, "send") == 0) {
        if (bench_workers_run(endpoint, (int)n, w, 1, 0, bench_workers_produce, &msgs, &elapsed_ns) != 0)
            return 1;
    } else if (strcmp(mode, "window") == 0) {
        sl_client *c = NULL;
        int64_t last_ns;
        if (bench_client_open(endpoint, &c) != 0)
            return 1;
        int64_t start_ns = bench_core_now_ns();
        int rc = bench_client_publish_window(c, WINDOW_MSGS, start_ns + n * BENCH_CORE_NS_PER_S, BENCH_CORE_MAX_OPS,
                                             &msgs, &last_ns);
        sl_close(&c);
        if (rc != 0)
            return 1;
        elapsed_ns = last_ns - start_ns;
    } else if (strcmp(mode, "drain") == 0) {
        atomic_uint_fast64_t done_all = 0;
        w[0].target_msgs = (uint64_t)n;
        w[0].done_all = &done_all;
        if (bench_workers_run(endpoint, 1, w, 1, DRAIN_CREDIT, bench_workers_consume, &msgs, &elapsed_ns) != 0)
            return 1;
    } else {
        return 2;
    }
    printf("%.1f\n", bench_core_per_s(msgs, elapsed_ns));
    return 0;
}
