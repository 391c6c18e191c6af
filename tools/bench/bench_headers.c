/*
 * bench_headers.c - what a message's headers cost a publisher: the 1 x 100
 * confirmed enqueue (row 3) with 4 headers of 64-byte values on every
 * message, against the same without, in paired turns on one broker.
 *
 * Each turn publishes a fixed count without headers and as many with (a
 * quarter of the drain's backlog each, at least 20,000: what the turns add
 * to the backlog stays bounded, whatever the machine's speed), the two in
 * turn first (whatever the first of a pair pays, a checkpoint of the
 * previous one's bytes, falls on each side alike), and takes the ratio of
 * their rates; the row reports the median ratio of HEADER_TURNS
 * turns (a slow second of the machine falls on one turn, not on the
 * figure) and the best rate with headers. What the
 * headers cost is the client's check and encoding, the broker's decode,
 * check and pack into the record, and 4 x (64 + 11) more bytes through the
 * log and LMDB per message.
 *
 * Costs: 2 x HEADER_TURNS x drain_msgs / 4 publishes (250,000 in a full
 * run), which stay in the backlog the drain rows take.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "bench_args.h"
#include "bench_client.h"
#include "bench_core.h"
#include "bench_run.h"

#define HEADER_TURNS 5
#define HEADER_COUNT 4
#define HEADER_VALUE_BYTES 64
#define TARGET_HEADERS_VS_NONE 0.8 /* the 1 x 100 row with 4 headers of 64 B / without */

/* turn publishes msgs messages with up to WINDOW_MSGS outstanding, with h
 * (n of them, or none), and stores the rate. Returns 0 or -1. */
static int turn(bench *b, const sl_header *h, size_t n, uint64_t msgs, double *per_s)
{
    sl_client *c = NULL;
    uint64_t confirmed;
    int64_t last_ns;
    if (bench_client_open(b->endpoint, &c) != 0)
        return -1;
    int64_t start_ns = bench_core_now_ns();
    int rc = bench_client_publish_window_ex(c, WINDOW_MSGS, start_ns + 60 * BENCH_CORE_NS_PER_S, msgs, h, n,
                                            &confirmed, &last_ns);
    sl_close(&c);
    *per_s = bench_core_per_s(confirmed, last_ns - start_ns);
    return rc;
}

static double median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int row_send_headers(bench *b)
{
    static char names[HEADER_COUNT][24], values[HEADER_COUNT][HEADER_VALUE_BYTES + 1];
    sl_header h[HEADER_COUNT];
    for (int i = 0; i < HEADER_COUNT; i++) {
        snprintf(names[i], sizeof names[i], "X-Bench-%d", i);
        memset(values[i], 'a' + i, HEADER_VALUE_BYTES);
        h[i] = (sl_header){names[i], values[i]};
    }
    uint64_t msgs = b->drain_msgs / 4 < 20000 ? 20000 : b->drain_msgs / 4;
    double ratio[HEADER_TURNS], best = 0;
    int turns = 0;
    bench_core_progress("confirmed enqueue, 1 x %d, with %d headers of %d B and without (%d turns of 2 x %" PRIu64
                        " messages)", WINDOW_MSGS, HEADER_COUNT, HEADER_VALUE_BYTES, HEADER_TURNS, msgs);
    for (; turns < HEADER_TURNS && !bench_core_stopping(); turns++) {
        double none, with;
        int rc = turns % 2 ? turn(b, h, HEADER_COUNT, msgs, &with) || turn(b, NULL, 0, msgs, &none)
                           : turn(b, NULL, 0, msgs, &none) || turn(b, h, HEADER_COUNT, msgs, &with);
        if (rc)
            return -1;
        ratio[turns] = none > 0 ? with / none : 0;
        best = with > best ? with : best;
    }
    char row[128];
    snprintf(row, sizeof row, "confirmed enqueue, 1 producer, %d outstanding, %d headers of %d B%s", WINDOW_MSGS,
             HEADER_COUNT, HEADER_VALUE_BYTES, b->pass);
    bench_table_add(&b->table, row, best, 0, "msgs/s", BENCH_TABLE_NO_GOAL, 0);
    snprintf(row, sizeof row, "1 x %d with %d headers of %d B / without (median of turns)%s", WINDOW_MSGS,
             HEADER_COUNT, HEADER_VALUE_BYTES, b->pass);
    bench_table_add(&b->table, row, median(ratio, turns), 2, "x", BENCH_TABLE_AT_LEAST, TARGET_HEADERS_VS_NONE);
    return 0;
}
