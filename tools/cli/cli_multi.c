/*
 * cli_multi.c - `sluice stats` over several brokers (sl_multi): one table,
 * a row per broker (its endpoint, whether it answered, its levels summed,
 * consumers, the shared sink's slices held and granted rate) and a row of
 * totals; --json gives each broker's figures and the totals.
 *
 * Every broker is asked in turn with the global timeout; one that does not
 * answer is a row "down" and makes the exit status 1, the others still show.
 *
 * cli_multi_each runs a command once per broker, each on a thread of its own
 * with its own copy of the global options and its own sl_client (a client
 * is one thread's), and joins them: `sluice consume -b a,b` is one consumer
 * per broker, so every delivery is settled on the connection it came from.
 * Costs one thread per broker (at most SL_MAX_BROKERS) besides the command's.
 */
#include "cli_multi.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_coord.h"
#include "cli_table.h"
#include "cli_text.h"

enum { F_DEPTH, F_INFLIGHT, F_DELAYED, F_DEAD, F_ENQ, F_DISP, F_ACK, F_NACK, F_CONSUMERS, F_SLICES,
       F_GRANTED, NF };
static const char *const keys[NF] = {"depth",  "inflight", "delayed",   "dead",   "enqueued",     "dispatched",
                                     "acked",  "nacked",   "consumers", "slices", "granted_milli"};

bool cli_multi_is(const cli_core *g)
{
    return g->endpoint && strchr(g->endpoint, ',') != NULL;
}

static void sum(const sl_stats *st, uint64_t f[NF])
{
    memset(f, 0, NF * sizeof f[0]);
    for (unsigned l = 0; l < st->nlevels; l++) {
        const sl_level_stats *v = &st->level[l];
        f[F_DEPTH] += v->depth, f[F_INFLIGHT] += v->inflight, f[F_DELAYED] += v->delayed;
        f[F_DEAD] += v->dead, f[F_ENQ] += v->enqueued, f[F_DISP] += v->dispatched;
        f[F_ACK] += v->acked, f[F_NACK] += v->nacked;
    }
    f[F_CONSUMERS] = st->consumers;
    f[F_SLICES] = st->coord.slices_held;
    f[F_GRANTED] = st->coord.granted_milli;
}

int cli_multi_stats(cli_core *g, const char *cmd, bool json)
{
    static const char *const head[] = {"BROKER", "STATE", "DEPTH", "INFLIGHT", "DELAYED", "DEAD", "ENQ",
                                       "DISP",   "ACK",   "NACK",  "CONSUMERS", "SLICES", "GRANTED"};
    sl_options o = {.timeout_ms = g->timeout_ms};
    sl_multi *m;
    int rc = sl_multi_connect(g->endpoint, &o, &m);
    if (rc == SL_EINVAL)
        return cli_text_usage_error(cmd, "invalid broker list '%s' (expected ENDPOINT,ENDPOINT,...)", g->endpoint);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, "cannot create the clients", NULL);
    unsigned n = sl_multi_count(m), down = 0;
    uint64_t total[NF] = {0}, f[NF];
    cli_table *t = json ? NULL : cli_table_new(13, head, "llrrrrrrrrrrr", n + 1);
    if (json)
        printf("{\"brokers\":[");
    for (unsigned i = 0; i < n; i++) {
        sl_stats st;
        rc = sl_stats_get(sl_multi_at(m, i), &st);
        const char *state = rc ? sl_strerror(rc) : st.coord.coordinated ? st.coord.state : "up";
        down += rc != 0;
        if (!rc) {
            sum(&st, f);
            for (int k = 0; k < NF; k++)
                total[k] += f[k];
        }
        if (json) {
            printf("%s{\"endpoint\":", i ? "," : "");
            cli_text_json_string(sl_multi_endpoint(m, i));
            printf(",\"ok\":%s", rc ? "false" : "true");
            if (!rc) {
                for (int k = 0; k < NF; k++)
                    printf(",\"%s\":%" PRIu64, keys[k], f[k]);
                printf(",\"uptime_ms\":%" PRIu64, st.uptime_ms);
                cli_coord_json(&st.coord);
            } else {
                printf(",\"error\":");
                cli_text_json_string(sl_strerror(rc));
            }
            printf("}");
            continue;
        }
        cli_table_add(t, "%s", sl_multi_endpoint(m, i));
        cli_table_add(t, "%s", rc ? "down" : state);
        for (int k = 0; k < NF; k++) {
            if (rc)
                cli_table_add(t, "-");
            else if (k == F_GRANTED)
                cli_table_add(t, "%" PRIu64 ".%03" PRIu64 "/s", f[k] / 1000, f[k] % 1000);
            else
                cli_table_add(t, "%" PRIu64, f[k]);
        }
    }
    if (json) {
        printf("],\"totals\":{\"brokers\":%u,\"down\":%u", n, down);
        for (int k = 0; k < NF; k++)
            printf(",\"%s\":%" PRIu64, keys[k], total[k]);
        printf("}}\n");
    } else {
        cli_table_add(t, "TOTAL (%u brokers)", n);
        cli_table_add(t, "%u down", down);
        for (int k = 0; k < NF; k++) {
            if (k == F_GRANTED)
                cli_table_add(t, "%" PRIu64 ".%03" PRIu64 "/s", total[k] / 1000, total[k] % 1000);
            else
                cli_table_add(t, "%" PRIu64, total[k]);
        }
        if (cli_table_print(t)) {
            cli_table_destroy(&t);
            sl_multi_close(&m);
            cli_text_say(cmd, "out of memory");
            return CLI_TEXT_EXIT_FAILURE;
        }
        cli_table_destroy(&t);
    }
    sl_multi_close(&m);
    if (down) {
        cli_text_say(cmd, "%u of %u brokers did not answer", down, n);
        fflush(stdout);
        return CLI_TEXT_EXIT_FAILURE;
    }
    return cli_core_output_done(cmd);
}

typedef struct each_run {
    cli_core sub;
    cli_multi_fn fn;
    void *ctx;
    int status;
    pthread_t thread;
} each_run;

static void *each_main(void *arg)
{
    each_run *r = arg;
    r->status = r->fn(&r->sub, r->ctx);
    sl_close(&r->sub.c);
    return NULL;
}

int cli_multi_each(cli_core *g, const char *cmd, cli_multi_fn fn, void *ctx)
{
    char *list = strdup(g->endpoint);
    each_run *run = calloc(SL_MAX_BROKERS, sizeof *run);
    unsigned n = 0;
    int st = 0;
    if (!list || !run) {
        free(list);
        free(run);
        cli_text_say(cmd, "out of memory");
        return CLI_TEXT_EXIT_FAILURE;
    }
    char *rest = list;
    for (char *e = strsep(&rest, ","); e; e = strsep(&rest, ",")) {
        while (*e == ' ')
            e++;
        if (!*e || n == SL_MAX_BROKERS) {
            st = cli_text_usage_error(cmd, "invalid broker list '%s' (expected ENDPOINT,ENDPOINT,... "
                                      "with at most %d)", g->endpoint, SL_MAX_BROKERS);
            break;
        }
        run[n].sub = *g;
        run[n].sub.endpoint = e;
        run[n].sub.c = NULL;
        run[n].sub.answered = false;
        run[n].fn = fn;
        run[n].ctx = ctx;
        n++;
    }
    unsigned started = 0;
    for (; !st && started < n; started++)
        if (pthread_create(&run[started].thread, NULL, each_main, &run[started])) {
            cli_text_say(cmd, "cannot start a thread for broker %s", run[started].sub.endpoint);
            st = CLI_TEXT_EXIT_FAILURE;
            break;
        }
    for (unsigned i = 0; i < started; i++) {
        pthread_join(run[i].thread, NULL);
        if (run[i].status && (!st || run[i].status > st))
            st = run[i].status;
    }
    free(run);
    free(list);
    return st;
}
