/*
 * sink_count.c - count sluice-sink's decisions per second, print them.
 *
 * Each limited request is counted in the slot of the second (since start)
 * it was decided in; the ring keeps SINK_COUNT_SECONDS_KEPT seconds, and
 * the main loop prints finished ones at every tick (every 100 ms), so a
 * second is lost only if the main loop stalls for longer than the ring. The
 * line for second N (counting from 1) is "t=Ns ok=.. throttled=..
 * total=..", covering (N-1 s, N s] after start; a second with nothing in
 * it prints zeros. Adding runs on the daemons' threads under the sink's
 * lock; printing on the main loop, which reads each slot under the same
 * lock. O(1) per request.
 */
#include "sink_count.h"

#include <inttypes.h>
#include <string.h>

#include "sink_limit.h"

void sink_count_init(sink_count *c, uint64_t start_ns)
{
    memset(c, 0, sizeof *c);
    c->start_ns = start_ns;
}

uint64_t sink_count_second_of(const sink_count *c, uint64_t now_ns)
{
    return (now_ns > c->start_ns ? now_ns - c->start_ns : 0) / SINK_LIMIT_WINDOW_NS;
}

void sink_count_add(sink_count *c, uint64_t now_ns, int admitted)
{
    uint64_t index = sink_count_second_of(c, now_ns);
    sink_count_second *sec = &c->seconds[index % SINK_COUNT_SECONDS_KEPT];
    if (sec->index != index)
        *sec = (sink_count_second){.index = index};
    if (admitted) {
        c->ok++;
        sec->ok++;
    } else {
        c->throttled++;
        sec->throttled++;
    }
}

void sink_count_print(sink_count *c, uint64_t until, int last_if_busy, FILE *out, pthread_mutex_t *lock)
{
    if (last_if_busy) {
        pthread_mutex_lock(lock);
        const sink_count_second *last = &c->seconds[until % SINK_COUNT_SECONDS_KEPT];
        if (last->index == until && last->ok + last->throttled > 0)
            until++;
        pthread_mutex_unlock(lock);
    }
    if (until > c->next_print + SINK_COUNT_SECONDS_KEPT)
        c->next_print = until - SINK_COUNT_SECONDS_KEPT; /* the main loop stalled: those are gone */
    for (int i = 0; i < SINK_COUNT_SECONDS_KEPT && c->next_print < until; i++, c->next_print++) {
        pthread_mutex_lock(lock);
        sink_count_second sec = c->seconds[c->next_print % SINK_COUNT_SECONDS_KEPT];
        pthread_mutex_unlock(lock);
        if (sec.index != c->next_print)
            sec = (sink_count_second){.index = c->next_print};
        fprintf(out, "t=%" PRIu64 "s ok=%" PRIu64 " throttled=%" PRIu64 " total=%" PRIu64 "\n", sec.index + 1,
                sec.ok, sec.throttled, sec.ok + sec.throttled);
    }
    fflush(out);
}
