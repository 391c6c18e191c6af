/*
 * bench_headers.c - what a message's headers cost a publisher: the 1 x 100
 * confirmed enqueue (row 3) with 4 headers of 64-byte values on every
 * message, against the same without, in paired turns on one broker.
 *
 * Each turn publishes a fixed count without headers, as many with, and as
 * many with no headers but a body longer by the headers' names and values
 * (a quarter of the drain's backlog each, at least 20,000: what the turns
 * add to the backlog stays bounded, whatever the machine's speed), the
 * three in a rotating order (whatever the first pays, a checkpoint of the
 * previous one's bytes, falls on each alike), and takes the ratios of their
 * rates; the rows report the median ratios of HEADER_TURNS turns (a slow
 * second of the machine falls on one turn, not on the figure) and the best
 * rate with headers.
 *
 * What headers cost is the client's check and encoding, the broker's
 * decode, check and pack into the record, and 4 x (64 + 9) more bytes
 * through the log and LMDB per message. The bytes are the larger part, and
 * what they cost is the machine's (memory and disk bandwidth against its
 * flush): a record of about 3.5 times the size. So beside the ratio
 * (with headers / without) the second row compares with the same bytes as
 * body, which isolates what headers cost as headers: that row's target is
 * the one Sluice answers for on any machine.
 *
 * Costs: 3 x HEADER_TURNS x drain_msgs / 4 publishes (375,000 in a full
 * run; 3 x HEADER_QUICK_TURNS x HEADER_QUICK_MSGS with --quick), which stay
 * in the backlog the drain rows take.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "bench_args.h"
#include "bench_client.h"
#include "bench_core.h"
#include "bench_run.h"

#define HEADER_TURNS 5
#define HEADER_QUICK_TURNS 3     /* --quick: a smoke run */
#define HEADER_QUICK_MSGS  2000
#define HEADER_COUNT 4
#define HEADER_VALUE_BYTES 64
#define TARGET_HEADERS_VS_NONE 0.8 /* the 1 x 100 row with 4 headers of 64 B / without */
#define TARGET_HEADERS_VS_BYTES 0.8 /* ... / without, the same bytes as body */

int row_send_headers(bench *b)
{
    static char names[HEADER_COUNT][24], values[HEADER_COUNT][HEADER_VALUE_BYTES + 1];
    sl_header h[HEADER_COUNT];
    for (int i = 0; i < HEADER_COUNT; i++) {
        snprintf(names[i], sizeof names[i], "X-Bench-%d", i);
        memset(values[i], 'a' + i, HEADER_VALUE_BYTES);
        h[i] = (sl_header){names[i], values[i]};
    }
    size_t padded = BENCH_CORE_BODY_BYTES;
    for (int i = 0; i < HEADER_COUNT; i++)
        padded += strlen(names[i]) + strlen(values[i]);
    uint64_t msgs = b->quick ? HEADER_QUICK_MSGS : b->drain_msgs / 4 < 20000 ? 20000 : b->drain_msgs / 4;
    int nturns = b->quick ? HEADER_QUICK_TURNS : HEADER_TURNS;
    double ratio[HEADER_TURNS], same[HEADER_TURNS], best = 0;
    int turns = 0;
    bench_core_progress("confirmed enqueue, 1 x %d, with %d headers of %d B, without, and with a %zu-byte body "
                        "(%d turns of 3 x %" PRIu64 " messages)", WINDOW_MSGS, HEADER_COUNT, HEADER_VALUE_BYTES,
                        padded, nturns, msgs);
    for (; turns < nturns && !bench_core_stopping(); turns++) {
        double rate[3]; /* without, with, the same bytes as body */
        for (int k = 0; k < 3; k++) {
            int which = (turns + k) % 3;
            if (bench_client_window_turn(b->endpoint, WINDOW_MSGS, msgs, which == 1 ? h : NULL,
                                         which == 1 ? HEADER_COUNT : 0, which == 2 ? padded : 0, &rate[which]))
                return -1;
        }
        ratio[turns] = rate[0] > 0 ? rate[1] / rate[0] : 0;
        same[turns] = rate[2] > 0 ? rate[1] / rate[2] : 0;
        best = rate[1] > best ? rate[1] : best;
    }
    char row[128];
    snprintf(row, sizeof row, "confirmed enqueue, 1 producer, %d outstanding, %d headers of %d B%s", WINDOW_MSGS,
             HEADER_COUNT, HEADER_VALUE_BYTES, b->pass);
    bench_table_add(&b->table, row, best, 0, "msgs/s", BENCH_TABLE_NO_GOAL, 0);
    snprintf(row, sizeof row, "1 x %d with %d headers of %d B / without (median of turns)%s", WINDOW_MSGS,
             HEADER_COUNT, HEADER_VALUE_BYTES, b->pass);
    bench_table_add(&b->table, row, bench_core_median(ratio, turns), 2, "x", BENCH_TABLE_AT_LEAST,
                    TARGET_HEADERS_VS_NONE);
    snprintf(row, sizeof row, "... / without, a %zu-byte body: the same bytes (median)%s", padded, b->pass);
    bench_table_add(&b->table, row, bench_core_median(same, turns), 2, "x", BENCH_TABLE_AT_LEAST,
                    TARGET_HEADERS_VS_BYTES);
    return 0;
}
