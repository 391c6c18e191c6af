/*
 * metrics.c - GET /metrics: a snapshot in the Prometheus text exposition
 * format (version 0.0.4), served by the broker's one HTTP server (http.c).
 *
 * What is served, and where it comes from: per level the queue's gauges and
 * counters, picks by reason and the publish-to-deliver wait of first
 * deliveries (a histogram that deliver fills); the sink's meter and breaker;
 * each pool's size, members, in-flight and recommended size; the store's
 * commits, their latency (a histogram that loop fills), fsyncs and map use;
 * connections and bad input. Names follow Prometheus conventions: sluice_
 * prefix, base units (seconds, bytes), _total for counters; a rate of 0
 * means unlimited; the breaker is a state set (one series per state, 1 for
 * the current one). Change a name and the dashboard
 * (tools/dist/grafana-sluice.json) and broker/README.md's table go with it.
 *
 * It formats a copy of the last snapshot the loop published (http.c takes
 * it under the snapshot's lock, for one memcpy), so a scrape never waits for
 * the loop nor the loop for a scrape. Costs: O(levels x buckets + pools).
 */
#include "http_int.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "hist.h"

/* label writes a label value with \, " and newline escaped. */
static void label(FILE *f, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            fputc('\\', f), fputc(*v, f);
        else if (*v == '\n')
            fputs("\\n", f);
        else
            fputc(*v, f);
    }
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sec(FILE *f, uint64_t ns)
{
    fprintf(f, "%.9g", (double)ns / 1e9);
}

/* hist_series writes the series of one histogram, labelled with lname="lval" when
 * lname is not NULL. */
static void hist_series(FILE *f, const char *name, const char *lname, const char *lval, const hist *h,
                        hist_kind kind)
{
    uint64_t cum = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        cum += h->bucket[i];
        int last = i == HIST_BUCKETS - 1 || !hist_bounds(kind)[i];
        fprintf(f, "%s_bucket{", name);
        if (lname) {
            fprintf(f, "%s=\"", lname);
            label(f, lval);
            fputs("\",", f);
        }
        fputs("le=\"", f);
        if (last) {
            for (unsigned j = i + 1; j < HIST_BUCKETS; j++)
                cum += h->bucket[j];
            fputs("+Inf", f);
        } else {
            sec(f, hist_bounds(kind)[i]);
        }
        fprintf(f, "\"} %llu\n", (unsigned long long)cum);
        if (last)
            break;
    }
    const char *sfx[2] = {"_sum", "_count"};
    for (int k = 0; k < 2; k++) {
        fprintf(f, "%s%s", name, sfx[k]);
        if (lname) {
            fprintf(f, "{%s=\"", lname);
            label(f, lval);
            fputs("\"}", f);
        }
        fputc(' ', f);
        if (k == 0)
            sec(f, h->sum_ns);
        else
            fprintf(f, "%llu", (unsigned long long)h->count);
        fputc('\n', f);
    }
}

/* The per-level series: X(name suffix, type, help, member). */
#define LEVEL_SERIES(X)                                                                                    \
    X(depth, gauge, "Messages ready for delivery.", depth)                                               \
    X(inflight, gauge, "Messages delivered and not yet settled.", inflight)                              \
    X(delayed, gauge, "Messages waiting for their delay to pass.", delayed)                              \
    X(dead, gauge, "Dead letters held.", dead)                                                           \
    X(enqueued_total, counter, "Messages published since start.", enqueued)                              \
    X(dispatched_total, counter, "Deliveries since start.", dispatched)                                  \
    X(acked_total, counter, "Deliveries acknowledged since start.", acked)                               \
    X(nacked_total, counter, "Deliveries given back (NACK) since start.", nacked)                        \
    X(expired_total, counter, "Leases that ran out since start.", expired)                               \
    X(dead_lettered_total, counter, "Messages moved to the dead letters since start.", buried)           \
    X(throttled_total, counter, "Deliveries the sink refused (THROTTLED) since start.", throttled)           \
    X(throttled_tag_total, counter, "Of those, refused for their tag alone (scope tag) since start.", throttled_tag)

static void level_gauge(FILE *f, const char *name, const char *type, const char *help, const snap *s,
                        size_t off)
{
    head(f, name, type, help);
    for (unsigned l = 0; l < s->nlevels; l++) {
        uint64_t v;
        memcpy(&v, (const char *)&s->lv[l] + off, sizeof v);
        fprintf(f, "%s{level=\"", name);
        label(f, s->lv[l].name);
        fprintf(f, "\"} %llu\n", (unsigned long long)v);
    }
}

#define POOL_SERIES(X)                                                                                     \
    X(size, "Most deliveries the pool's members may hold at once; 0 = no limit.", size)                 \
    X(members, "Consumers in the pool.", members)                                                        \
    X(inflight, "Deliveries the pool's members hold.", inflight)                                         \
    X(recommended_size, "The size autoscaling would choose (Little's law).", recommended)                \
    X(paused, "1 when the pool is paused.", paused)

/* The group's series (--ha): X(name suffix, type, help, who serves it, how
 * it prints, value). Who: HA_P the primary, HA_S a standby. A standby runs
 * no broker: its /metrics is these, its role and its uptime. */
#define HA_P 1
#define HA_S 2
#define HA_SERIES(X)                                                                                       \
    X(epoch, gauge, "The group's epoch this node serves in (a primary) or has seen (a standby); one more "    \
      "per promotion.", HA_P | HA_S, count, s->ha_epoch)                                                 \
    X(records_total, counter, "The replication stream's position: records made (a primary) or durable in " \
      "this store (a standby).", HA_P | HA_S, count, s->ha_records)                                      \
    X(promotions_total, counter, "Times this node went from standby to primary (a failover or a "          \
      "switchover), kept across the restart in place each role change makes.", HA_P | HA_S, count,        \
      s->ha_promotions)                                                                                   \
    X(lag_records, gauge, "Records of the stream the standby has not acknowledged (on a standby: as its "   \
      "primary last said, twice a second while it streams).", HA_P | HA_S, count, s->ha_lag_records)     \
    X(lag_seconds, gauge, "How long the oldest unacknowledged record has waited (on a standby: as its "     \
      "primary last said).", HA_P | HA_S, sec, s->ha_lag_ns)                                             \
    X(diverged_total, counter, "Acknowledgements whose checksum differed from the stream's.", HA_P, count,  \
      s->ha_diverged)                                                                                     \
    X(streaming, gauge, "1 while a primary streams to this standby.", HA_S, count, s->ha_streaming)        \
    X(in_sync, gauge, "1 while Redis names this standby in sync: the node that promotes when the "         \
      "primary's lease ends.", HA_S, count, s->ha_in_sync)                                                \
    X(refused_total, counter, "Records this standby refused (of an older epoch, or out of order) since it " \
      "started.", HA_S, count, s->ha_refused)

static void count(FILE *f, uint64_t v)
{
    fprintf(f, "%llu", (unsigned long long)v);
}

static void ha_render(FILE *f, const snap *s)
{
    static const char *const roles[] = {[SNAP_HA_PRIMARY] = "primary", [SNAP_HA_STANDBY] = "standby"};
    static const char *const modes[] = {"sync", "alone", "fenced"};
    int who = s->ha_role == SNAP_HA_STANDBY ? HA_S : HA_P;
    head(f, "sluice_ha_role", "gauge", "This node's role in its group: 1 for the current one.");
    for (int r = SNAP_HA_PRIMARY; r <= SNAP_HA_STANDBY; r++)
        fprintf(f, "sluice_ha_role{role=\"%s\"} %d\n", roles[r], r == s->ha_role);
    if (who == HA_P) {
        head(f, "sluice_ha_mode", "gauge", "The primary's mode: 1 for the current one (sync: with its standby; "
             "alone: Redis records no standby in sync; fenced: no valid lease, nothing confirmed or dispatched).");
        for (int m = SNAP_HA_SYNC; m <= SNAP_HA_FENCED; m++)
            fprintf(f, "sluice_ha_mode{mode=\"%s\"} %d\n", modes[m], m == s->ha_mode);
    }
#define HA_EMIT_(sfx, type, help, whom, print, value)                                                      \
    if ((whom) & who) {                                                                                    \
        head(f, "sluice_ha_" #sfx, #type, help);                                                           \
        fputs("sluice_ha_" #sfx " ", f);                                                                   \
        print(f, value);                                                                                   \
        fputc('\n', f);                                                                                    \
    }
    HA_SERIES(HA_EMIT_)
#undef HA_EMIT_
}

static void uptime(FILE *f, const snap *s)
{
    head(f, "sluice_uptime_seconds", "gauge", "Seconds since the broker started.");
    fputs("sluice_uptime_seconds ", f);
    sec(f, s->uptime_ns);
    fputc('\n', f);
}

void metrics_render(FILE *f, const snap *s)
{
    if (s->ha && s->ha_role == SNAP_HA_STANDBY) { /* no broker: nothing else is true of it */
        ha_render(f, s);
        uptime(f, s);
        return;
    }
#define LEVEL_EMIT_(sfx, type, help, member)                                                               \
    level_gauge(f, "sluice_level_" #sfx, #type, help, s, offsetof(snap_level, member));
    LEVEL_SERIES(LEVEL_EMIT_)
#undef LEVEL_EMIT_
    head(f, "sluice_level_oldest_age_seconds", "gauge", "Age of the oldest ready message.");
    for (unsigned l = 0; l < s->nlevels; l++) {
        fputs("sluice_level_oldest_age_seconds{level=\"", f);
        label(f, s->lv[l].name);
        fprintf(f, "\"} %.3f\n", (double)s->lv[l].oldest_ms / 1e3);
    }
    head(f, "sluice_level_picks_total", "counter", "Deliveries by the reason the pick rule chose the level.");
    for (unsigned l = 0; l < s->nlevels; l++)
        for (int r = DISP_PRIORITY; r < DISP_REASON_COUNT_; r++) {
            fputs("sluice_level_picks_total{level=\"", f);
            label(f, s->lv[l].name);
            fprintf(f, "\",reason=\"%s\"} %llu\n", disp_reason_name((disp_reason)r),
                    (unsigned long long)s->lv[l].picks[r]);
        }
    head(f, "sluice_level_pause_remaining_seconds", "gauge",
         "How long the level's pause after THROTTLED still lasts (a consumer limited to it, or a FIFO level "
         "waiting for its head's tag); 0: none.");
    for (unsigned l = 0; l < s->nlevels; l++) {
        fputs("sluice_level_pause_remaining_seconds{level=\"", f);
        label(f, s->lv[l].name);
        fputs("\"} ", f);
        sec(f, s->lv[l].pause_ns);
        fputc('\n', f);
    }
    head(f, "sluice_level_wait_seconds", "histogram", "Time from publish to first delivery.");
    for (unsigned l = 0; l < s->nlevels; l++)
        hist_series(f, "sluice_level_wait_seconds", "level", s->lv[l].name, &s->lv[l].wait, HIST_WAIT);

    head(f, "sluice_sink_rate_per_second", "gauge", "The sink's configured rate; 0 = unlimited.");
    fprintf(f, "sluice_sink_rate_per_second %.3f\n", (double)s->sink_rate_milli / 1e3);
    head(f, "sluice_sink_effective_rate_per_second", "gauge",
         "The rate in use after THROTTLED cuts (AIMD); 0 = unlimited.");
    fprintf(f, "sluice_sink_effective_rate_per_second %.3f\n", (double)s->sink_effective_milli / 1e3);
    head(f, "sluice_sink_tokens", "gauge", "Units the sink's bucket lets go now; +Inf when unlimited.");
    if (s->sink_tokens_milli == UINT64_MAX)
        fputs("sluice_sink_tokens +Inf\n", f);
    else
        fprintf(f, "sluice_sink_tokens %.3f\n", (double)s->sink_tokens_milli / 1e3);
    head(f, "sluice_sink_burst", "gauge", "The sink bucket's burst.");
    fprintf(f, "sluice_sink_burst %llu\n", (unsigned long long)s->sink_burst);
    head(f, "sluice_sink_inflight", "gauge", "Deliveries out to consumers of the sink.");
    fprintf(f, "sluice_sink_inflight %llu\n", (unsigned long long)s->sink_inflight);
    head(f, "sluice_sink_inflight_max", "gauge", "The sink's in-flight cap; 0 = none.");
    fprintf(f, "sluice_sink_inflight_max %llu\n", (unsigned long long)s->sink_max_inflight);
    uint64_t throttled = 0;
    for (unsigned l = 0; l < s->nlevels; l++)
        throttled += s->lv[l].throttled;
    head(f, "sluice_sink_throttled_total", "counter", "Deliveries the sink refused (THROTTLED), all levels.");
    fprintf(f, "sluice_sink_throttled_total %llu\n", (unsigned long long)throttled);
    head(f, "sluice_sink_paused", "gauge", "1 while dispatch to the sink is paused after THROTTLED.");
    fprintf(f, "sluice_sink_paused %d\n", s->sink_pause_ns > 0);
    head(f, "sluice_sink_pause_remaining_seconds", "gauge", "How long the pause still lasts.");
    fputs("sluice_sink_pause_remaining_seconds ", f);
    sec(f, s->sink_pause_ns);
    fputc('\n', f);
    head(f, "sluice_sink_breaker_state", "gauge", "The circuit breaker's state: 1 for the current one.");
    for (int st = BREAKER_CLOSED; st <= BREAKER_HALF_OPEN; st++)
        fprintf(f, "sluice_sink_breaker_state{state=\"%s\"} %d\n", breaker_name((breaker_state)st),
                st == s->breaker_state);
    head(f, "sluice_sink_breaker_trips_total", "counter", "Times the circuit breaker opened.");
    fprintf(f, "sluice_sink_breaker_trips_total %llu\n", (unsigned long long)s->breaker_trips);
    if (s->ha)
        ha_render(f, s);

#define POOL_EMIT_(sfx, help, member)                                                                      \
    head(f, "sluice_pool_" #sfx, "gauge", help);                                                         \
    for (unsigned i = 0; i < s->npools; i++) {                                                             \
        fputs("sluice_pool_" #sfx "{pool=\"", f);                                                          \
        label(f, s->pool[i].name);                                                                         \
        fprintf(f, "\"} %llu\n", (unsigned long long)s->pool[i].member);                                  \
    }
    POOL_SERIES(POOL_EMIT_)
#undef POOL_EMIT_
    head(f, "sluice_pool_delivered_total", "counter", "Deliveries to the pool's members since start.");
    for (unsigned i = 0; i < s->npools; i++) {
        fputs("sluice_pool_delivered_total{pool=\"", f);
        label(f, s->pool[i].name);
        fprintf(f, "\"} %llu\n", (unsigned long long)s->pool[i].delivered);
    }

    head(f, "sluice_store_commit_seconds", "histogram",
         "Latency of the store's durable commits (a log record's flush, or an LMDB commit).");
    hist_series(f, "sluice_store_commit_seconds", NULL, NULL, &s->commit, HIST_COMMIT);
    head(f, "sluice_store_commits_total", "counter", "Batches made durable (group commits): log records or LMDB commits.");
    fprintf(f, "sluice_store_commits_total %llu\n", (unsigned long long)s->commits);
    head(f, "sluice_store_commit_stalls_total", "counter",
         "Commits out longer than half the watchdog period (watchdog pings withheld meanwhile).");
    fprintf(f, "sluice_store_commit_stalls_total %llu\n", (unsigned long long)s->commit_stalls);
    head(f, "sluice_store_fsyncs_total", "counter",
         "Syncs to disk: one per log record; two per LMDB commit (the data, then the meta page).");
    fprintf(f, "sluice_store_fsyncs_total %llu\n",
            (unsigned long long)(s->log_records + 2 * s->lmdb_commits));
    head(f, "sluice_store_log_records_total", "counter", "Write-ahead log records written and flushed (one a batch).");
    fprintf(f, "sluice_store_log_records_total %llu\n", (unsigned long long)s->log_records);
    head(f, "sluice_store_log_bytes_total", "counter", "Bytes written to the write-ahead log (records padded to 4 KiB).");
    fprintf(f, "sluice_store_log_bytes_total %llu\n", (unsigned long long)s->log_bytes);
    head(f, "sluice_store_lmdb_commits_total", "counter",
         "LMDB commits (with the write-ahead log: its checkpoints, which free the log's space).");
    fprintf(f, "sluice_store_lmdb_commits_total %llu\n", (unsigned long long)s->lmdb_commits);
    head(f, "sluice_store_map_used_bytes", "gauge", "Bytes of the LMDB map in use.");
    fprintf(f, "sluice_store_map_used_bytes %llu\n", (unsigned long long)s->map_used);
    head(f, "sluice_store_map_size_bytes", "gauge", "The LMDB map's current size.");
    fprintf(f, "sluice_store_map_size_bytes %llu\n", (unsigned long long)s->map_size);
    head(f, "sluice_store_map_max_bytes", "gauge", "The most the map may grow to.");
    fprintf(f, "sluice_store_map_max_bytes %llu\n", (unsigned long long)s->map_max);

    head(f, "sluice_connections", "gauge", "Connected peers (producers, consumers, admins).");
    fprintf(f, "sluice_connections %llu\n", (unsigned long long)s->connections);
    head(f, "sluice_consumers", "gauge", "Connected consumers in a pool.");
    fprintf(f, "sluice_consumers %llu\n", (unsigned long long)s->consumers);
    head(f, "sluice_bad_input_total", "counter", "Messages refused as malformed or unexpected.");
    fprintf(f, "sluice_bad_input_total %llu\n", (unsigned long long)s->rx_bad);
    head(f, "sluice_settlements_refused_total", "counter",
         "Settlements refused with SL_ESTALE: a token no lease has (expired, settled, from before a restart, "
         "never given), or a lease another connection holds.");
    fprintf(f, "sluice_settlements_refused_total{reason=\"unknown\"} %llu\n",
            (unsigned long long)(s->settle_refused - s->settle_foreign));
    fprintf(f, "sluice_settlements_refused_total{reason=\"not_holder\"} %llu\n", (unsigned long long)s->settle_foreign);
    head(f, "sluice_send_failed_total", "counter", "Replies and deliveries that could not be sent.");
    fprintf(f, "sluice_send_failed_total %llu\n", (unsigned long long)s->tx_failed);
    uptime(f, s);
}
