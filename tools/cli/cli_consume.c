/*
 * cli_consume.c - `sluice consume`: receive messages and process each in a
 * worker thread, printing it, piping it to a command, or POSTing it to an
 * HTTP service (httpc.c).
 *
 * An sl_client is not thread-safe, so the main thread alone uses it: it
 * receives deliveries, pushes each to a crew of workers (cli_crew.c), and
 * settles each one a worker hands back, so a message is settled only after
 * its output left: ack, nack, or, when the command exits with EX_TEMPFAIL
 * (75) because the sink refused it, THROTTLED, which returns it without
 * charging an attempt and makes the broker slow down (76: THROTTLED for the
 * message's tag alone, so only that tag waits: --post does the same for a
 * 429 carrying the header --tag-limit-header names). Workers (cli_work.c)
 * print a body as one whole line under a mutex, run the command on it or
 * POST it; they never touch the client. The credit window is the number of workers, or -c if
 * larger: the surplus waits in the crew's queue, in order.
 *
 * Without --exec or --post the main thread prints and settles each message
 * itself (consume_inline): a hand-off to a worker would cost two thread
 * switches per message for a printf. Settlements do not wait for the
 * broker's answer (sluice.h); before exiting, consume waits for them
 * (sl_flush), so a refused one is reported.
 *
 * HTTP delivery (--post URL) is cli_post.c's: a worker POSTs the body when
 * its pacing token is due and turns the answer into an outcome. Here: every
 * worker opens its connection before the subscription takes credit
 * (consume_warm), and the main thread hands the pacer the share of the sink
 * the broker tells it (cli_post_follow, after every receive). Workers added
 * later, when the pool's share grows, open theirs before the window grows
 * (consume_follow_share waits for them the same way).
 *
 * Following the pool. When the broker gives this consumer a share of a
 * sized pool (sl_share), the crew is resized to the share, at most
 * MAX_WORKERS, and the window with it. A worker that is no longer wanted
 * finishes its message first; the window shrinks as acks withhold credit.
 * The share is read after every receive and at least every RECV_SLICE_MS.
 *
 * Waiting. The main thread cannot wait on the socket and the workers at
 * once. While it holds a full window the broker sends nothing, so it waits
 * on the workers (looking at the socket every RECV_SLICE_MS, for share
 * changes). Otherwise it receives in slices: BUSY_SLICE_MS while work is in
 * hand, so that a finished message waits at most that long to be settled,
 * else RECV_SLICE_MS. The cost is up to BUSY_SLICE_MS of added delay per
 * settlement when the window is not full, and 1000 / BUSY_SLICE_MS wake-ups
 * a second while work is in hand.
 *
 * Stopping. -n counts settled messages, and sl_set_limit makes sure no more
 * than that many are ever delivered. SIGINT and SIGTERM set a flag that the
 * loop checks every slice. Either way, messages being processed are finished
 * and settled, the threads are joined, and closing the client returns the
 * unstarted ones to the broker at once. A second signal ends the process
 * without waiting; what it held returns when the broker notices.
 *
 * Several brokers (-b a,b). One consumer per broker, each on its own thread
 * (cli_multi_each) with its own client, crew and window, so each delivery is
 * settled on the broker it came from. They share the output lock, the count
 * of settled messages and the stop flag: -n ends them all once that many are
 * settled in all (each client's limit is -n, so a broker never delivers more
 * than that, and what another one holds then is finished and settled); with
 * --idle-exit each ends when its broker has been idle that long, and consume
 * exits when all have. The exit status is the worst of theirs; a broker that
 * fails ends only its own consumer.
 */
#include "cli_consume.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_crew.h"
#include "cli_work.h"
#include "cli_exec.h"
#include "cli_multi.h"
#include "cli_post.h"
#include "httpc.h"
#include "cli_text.h"

#define MAX_CREDIT    100000 /* the broker's cap per connection */
#define MAX_WORKERS   256    /* threads, whatever the share */
#define RECV_SLICE_MS 200    /* how often the loop looks at signals and the share */
#define BUSY_SLICE_MS 10     /* ... and at finished work, while there is some */
#define MAX_HEADERS   64     /* --header options */
#define FLUSH_MS      5000   /* at the end, the longest wait for settlements' answers */
#define WARM_WAIT_MS  5000   /* the longest wait for workers opening their connections */
#define RECONNECT_LIMIT_MS (10 * 60 * 1000) /* a broker gone this long ends consume (exit 1) */

/* Long-only options get values outside the char range. */
enum {
    OPT_POOL = 256, OPT_EXEC, OPT_IDLE_EXIT, OPT_WORKERS, OPT_POST, OPT_HEADER, OPT_HTTP_TIMEOUT, OPT_TAG_LIMIT
};

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_signal = 1;
}

/* signals_install makes the first SIGINT or SIGTERM ask for a clean stop;
 * the handler then reverts to the default, so a second one ends the process
 * at once. */
static void signals_install(void)
{
    struct sigaction sa = {.sa_handler = on_stop_signal, .sa_flags = SA_RESETHAND};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* a closed stdout or a command that ignores its stdin shows as EPIPE */
    sa.sa_handler = SIG_IGN;
    sa.sa_flags = 0;
    sigaction(SIGPIPE, &sa, NULL);
}

/* levels_parse resolves a comma-separated list such as "high,2". */
static int levels_parse(cli_core *g, const char *cmd, const char *list, unsigned *levels, size_t *n)
{
    char item[128];
    const char *p = list;
    *n = 0;
    for (;;) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof item)
            return cli_text_usage_error(cmd,
                                        "bad level list '%s' (expected names or numbers "
                                        "separated by commas)",
                                        list);
        if (*n == SL_MAX_LEVELS)
            return cli_text_usage_error(cmd, "more than %d levels in '%s'", SL_MAX_LEVELS,
                                        list);
        memcpy(item, p, len);
        item[len] = '\0';
        int st = cli_core_level_resolve(g, cmd, item, &levels[*n]);
        if (st)
            return st;
        (*n)++;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

/* One delivery in the crew, and what its worker adds to the outcome. */
static unsigned consumer_window(const consumer *k)
{
    return k->workers > k->credit ? k->workers : k->credit;
}

/* consume_settle acks, nacks or reports as throttled j's delivery, as its
 * worker decided. Returns 0 or an exit status. */
static int consume_settle(consumer *k, const job *j, int outcome)
{
    static const char *const verb[] = {[CLI_OUTCOME_ACK] = "ack", [CLI_OUTCOME_NACK] = "nack",
                                       [CLI_OUTCOME_THROTTLED] = "THROTTLED",
                                       [CLI_OUTCOME_REFUSED] = "reject",
                                       [CLI_OUTCOME_THROTTLED_TAG] = "THROTTLED (scope tag)"};
    const sl_delivery *d = j->d;
    int rc = outcome == CLI_OUTCOME_ACK             ? sl_ack(k->g->c, d)
             : outcome == CLI_OUTCOME_THROTTLED     ? sl_throttled(k->g->c, d, j->delay_ms)
             : outcome == CLI_OUTCOME_THROTTLED_TAG ? sl_throttled_scope(k->g->c, d, j->delay_ms, SL_SCOPE_TAG)
             : outcome == CLI_OUTCOME_REFUSED       ? sl_reject(k->g->c, d, j->why)
                                                    : sl_nack(k->g->c, d, j->delay_ms);
    if (rc == SL_ESTALE) {
        /* settlements do not wait for their answer: this reports an earlier
         * one whose lease ran out first; the broker will deliver it again */
        cli_text_say(k->cmd, "a settlement came too late: %s (SL_ESTALE); its message will be delivered again",
                     sl_last_error(k->g->c));
        return 0;
    }
    if (rc == SL_ECONNECT) {
        /* settlements sent on a connection that was lost: the broker delivers
         * their messages again; this consumer goes on once it is back */
        cli_text_say(k->cmd, "lost the connection to the broker: %s; going on", sl_last_error(k->g->c));
        return 0;
    }
    if (rc) {
        char context[64];
        snprintf(context, sizeof context, "%s of message %" PRIu64, verb[outcome], d->id);
        return cli_core_broker_error(k->g, k->cmd, rc, context, NULL);
    }
    return 0;
}

/* consume_watch says when the broker stops answering and when it is back,
 * and gives up (exit 1) once it has been gone for RECONNECT_LIMIT_MS.
 * ZeroMQ reconnects by itself; the subscription and credit are renewed on
 * the new connection. Returns 0 or an exit status. */
static int consume_watch(consumer *k)
{
    int64_t now = cli_core_now_ms();
    if (sl_connected(k->g->c)) {
        if (k->lost_ms)
            cli_text_say(k->cmd, "the broker at %s is back after %.1f s; going on", k->g->endpoint,
                         (double)(now - k->lost_ms) / 1000.0);
        k->lost_ms = 0;
        k->was_connected = true;
        return 0;
    }
    if (!k->was_connected)
        return 0; /* not seen up yet (the subscription's answer came, so it is) */
    if (!k->lost_ms) {
        k->lost_ms = now;
        cli_text_say(k->cmd, "the broker at %s does not answer (stopped, restarting or stalled); reconnecting "
                             "for up to %d minutes",
                     k->g->endpoint, RECONNECT_LIMIT_MS / 60000);
    } else if (now - k->lost_ms >= RECONNECT_LIMIT_MS) {
        cli_text_say(k->cmd, "the broker at %s has not answered for %d minutes; giving up", k->g->endpoint,
                     RECONNECT_LIMIT_MS / 60000);
        return CLI_TEXT_EXIT_FAILURE;
    }
    return 0;
}

/* consume_finish settles every delivery the workers are done with; at the
 * end (last) it also waits for the broker's answers to every settlement.
 * Returns 0 or an exit status. */
static int consume_finish(consumer *k, cli_crew *crew, bool last)
{
    void *arg;
    int outcome, st = 0;
    while (cli_crew_take(crew, &arg, &outcome)) {
        job *j = arg;
        int s = CLI_TEXT_EXIT_FAILURE;
        if (outcome != CLI_OUTCOME_FAILED && !k->broken) {
            s = consume_settle(k, j, outcome);
            k->broken = s != 0;
            atomic_fetch_add(k->settled, s == 0);
        }
        st = st ? st : s;
        k->held--;
        k->last_ms = cli_core_now_ms();
        cli_work_drop(j);
    }
    /* settlements went without waiting: at the end, wait for their answers,
     * so that a refused one is reported and nothing is left in doubt at exit.
     * Not on the way: a round trip per pass kept deliveries waiting in the
     * socket while the broker answered (varying lags, which the pacer's hold
     * must then cover), and the next settlement reports a refusal anyway */
    int rc = k->broken || !last ? SL_OK : sl_flush(k->g->c, FLUSH_MS);
    if (rc == SL_ESTALE)
        cli_text_say(k->cmd, "a settlement came too late: %s (SL_ESTALE); its message will be delivered again",
                     sl_last_error(k->g->c));
    else if (rc && !st)
        st = cli_core_broker_error(k->g, k->cmd, rc, "waiting for the broker to accept the settlements", NULL);
    return st;
}

/* consume_warm waits (bounded, WARM_WAIT_MS) until every worker started
 * so far has opened its connection (--post: the crew's start function,
 * cli_work_warm), so that the credit asked for next is taken only by warm
 * workers. Says how many did not open, or are still trying. */
static void consume_warm(consumer *k, cli_crew *crew, const char *when)
{
    unsigned pending = 0, failed = cli_crew_started(crew, WARM_WAIT_MS, &pending);
    if (failed)
        cli_text_say(k->cmd, "%u HTTP connection%s did not open before %s; each POST tries again", failed,
                     failed == 1 ? "" : "s", when);
    if (pending)
        cli_text_say(k->cmd, "%u HTTP connection%s still opening after %d s; %s anyway", pending,
                     pending == 1 ? "" : "s", WARM_WAIT_MS / 1000, when);
}

/* consume_follow_share resizes the crew, and the window with it, when the
 * broker gave this consumer a new share of its pool. Returns 0 or an exit
 * status. */
static int consume_follow_share(consumer *k, cli_crew *crew)
{
    unsigned share = sl_share(k->g->c);
    if (share == 0 || share == k->share)
        return 0;
    k->share = share;
    unsigned want = share < MAX_WORKERS ? share : MAX_WORKERS;
    unsigned got = cli_crew_resize(crew, want);
    if (got < want)
        cli_text_say(k->cmd, "cannot start more than %u workers: %s", got,
                     cli_text_strerror(errno));
    if (got != k->workers)
        cli_text_say(k->cmd, "pool share is now %u; running %u worker%s%s", share, got,
                     got == 1 ? "" : "s", share > MAX_WORKERS ? " (the most it runs)" : "");
    if (k->http && got > k->workers)
        consume_warm(k, crew, "taking more credit"); /* the added workers, like the first ones */
    k->workers = got;
    int rc = sl_set_window(k->g->c, consumer_window(k));
    return rc ? cli_core_broker_error(k->g, k->cmd, rc, "changing the credit window", NULL) : 0;
}

/* consume_loop receives deliveries for the crew and settles what it hands
 * back, until the count, the idle time, a signal or an error ends it.
 * Returns 0 or an exit status. */
/* consume_inline prints d and settles it on this thread: without --exec or
 * --post there is nothing worth a hand-off to a worker, which would cost
 * two thread switches per message. Frees d. Returns 0 or an exit status. */
static int consume_inline(consumer *k, sl_delivery *d)
{
    job j = {.d = d};
    int outcome = cli_work_run(k, &j), st = CLI_TEXT_EXIT_FAILURE;
    if (outcome != CLI_OUTCOME_FAILED && !k->broken) {
        st = consume_settle(k, &j, outcome);
        k->broken = st != 0;
        atomic_fetch_add(k->settled, st == 0);
    }
    k->last_ms = cli_core_now_ms();
    sl_delivery_free(&d);
    return st;
}

static int consume_loop(consumer *k, cli_crew *crew, long count, long idle_ms)
{
    int st = 0;
    while (!st && !stop_signal && (count == 0 || atomic_load(k->settled) < count)) {
        if ((st = consume_follow_share(k, crew)))
            break;
        bool full = k->held >= consumer_window(k);
        if (full && cli_crew_wait(crew, RECV_SLICE_MS)) {
            st = consume_finish(k, crew, false);
            continue;
        }
        /* room for more, or a full window whose workers are all still busy:
         * then the receive only runs the pump, for share changes */
        int slice_ms = full ? 0 : k->held ? BUSY_SLICE_MS : RECV_SLICE_MS;
        if (idle_ms && k->held == 0) {
            int64_t left_ms = k->last_ms + idle_ms - cli_core_now_ms();
            if (left_ms <= 0)
                break;
            if (left_ms < slice_ms)
                slice_ms = (int)left_ms;
        }
        sl_delivery *d = NULL;
        int rc = sl_recv(k->g->c, slice_ms, &d);
        if ((st = consume_watch(k))) {
            sl_delivery_free(&d); /* unsettled: it returns to the broker */
            break;
        }
        if (k->http)
            cli_post_follow(&k->post, k->g->c, k->cmd, k->verbose);
        if (rc == SL_OK && !k->exec && !k->http) {
            st = consume_inline(k, d);
            continue;
        }
        job *j = rc == SL_OK ? malloc(sizeof *j) : NULL;
        if (j)
            *j = (job){.d = d};
        if (j && cli_crew_push(crew, j) == 0) {
            k->held++;
            k->last_ms = cli_core_now_ms();
        } else if (rc == SL_OK) {
            cli_text_say(k->cmd, "out of memory");
            free(j);
            sl_delivery_free(&d); /* unsettled: it returns to the broker */
            st = CLI_TEXT_EXIT_FAILURE;
        } else if (rc != SL_ETIMEDOUT) {
            k->broken = true;
            st = cli_core_broker_error(k->g, k->cmd, rc, "receiving", NULL);
        }
        int s = consume_finish(k, crew, false);
        st = st ? st : s;
    }
    return st;
}

/* consume_run starts the crew (and, with --post, the pacer and the
 * connections), subscribes and runs the loop; then lets the workers finish
 * what they hold, settles it, and joins them. */
static int consume_run(consumer *k, const char *pool, const unsigned *levels, size_t nlevels,
                       long count, long idle_ms)
{
    if (!k->signals_set)
        signals_install();
    cli_crew *crew = NULL;
    unsigned asked = k->workers;
    int err = 0;
    if (k->http && sl_pacer_new(&k->post.pacer) != SL_OK)
        err = ENOMEM;
    k->post.http = k->http;
    if (!err)
        err = cli_crew_new(cli_work_run, cli_work_warm, k, MAX_WORKERS, &crew);
    if (err == 0 && (k->workers = cli_crew_resize(crew, asked)) == 0)
        err = errno ? errno : EAGAIN;
    if (err) {
        cli_text_say(k->cmd, "cannot start a worker thread: %s", cli_text_strerror(err));
        cli_crew_destroy(&crew, NULL);
        sl_pacer_free(&k->post.pacer);
        return CLI_TEXT_EXIT_FAILURE;
    }
    if (k->workers < asked)
        cli_text_say(k->cmd, "started only %u of %u workers: %s", k->workers, asked,
                     cli_text_strerror(errno));
    if (k->http)
        consume_warm(k, crew, "subscribing");
    int st = 0, rc = sl_subscribe(k->g->c, pool, levels, nlevels, consumer_window(k));
    if (rc) {
        st = cli_core_broker_error(k->g, k->cmd, rc, "subscribing", NULL);
    } else {
        k->g->answered = true;
        /* the workers read a copy of the level names: the client is this
         * thread's alone (the subscription cached them); no job reaches a
         * worker before this */
        const char *const *names = NULL;
        if (sl_levels(k->g->c, &k->nlevels, &names) == SL_OK)
            for (unsigned i = 0; i < k->nlevels; i++)
                snprintf(k->level_names[i], sizeof k->level_names[i], "%s", names[i]);
        k->last_ms = cli_core_now_ms();
        st = consume_loop(k, crew, count, idle_ms);
    }
    cli_crew_stop(crew);
    int s = consume_finish(k, crew, true);
    cli_crew_destroy(&crew, cli_work_drop); /* unstarted: sl_close returns them */
    sl_pacer_free(&k->post.pacer);
    return st ? st : s;
}

/* consume_connect connects, resolves the levels and runs the consumer.
 * Returns the exit status. */
static int consume_connect(consumer *k, const char *pool, const char *level_list,
                           long count, long idle_ms)
{
    cli_core *g = k->g;
    int st = cli_core_connect(g, k->cmd);
    if (st)
        return st;
    unsigned levels[SL_MAX_LEVELS];
    size_t nlevels = 0;
    if (level_list && (st = levels_parse(g, k->cmd, level_list, levels, &nlevels)))
        return st;
    if (count > 0)
        sl_set_limit(g->c, (uint64_t)count); /* never pull an extra message */
    return consume_run(k, pool, levels, nlevels, count, idle_ms);
}

/* What every broker's consumer starts from (-b a,b). */
typedef struct consume_plan {
    const consumer *k;
    const char *pool, *level_list;
    long count, idle_ms;
} consume_plan;

/* consume_one_broker runs one broker's consumer on its own thread, from a
 * copy of the plan's consumer. */
static int consume_one_broker(cli_core *sub, void *ctx)
{
    const consume_plan *p = ctx;
    consumer k = *p->k;
    char name[200];
    snprintf(name, sizeof name, "consume (%s)", sub->endpoint);
    k.g = sub;
    k.cmd = name;
    k.post.origin = sub->endpoint; /* ids are a broker's own: a keyless Idempotency-Key names it */
    return consume_connect(&k, p->pool, p->level_list, p->count, p->idle_ms);
}

int cli_consume_main(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const struct option opts[] = {
        {"pool", required_argument, NULL, OPT_POOL},
        {"levels", required_argument, NULL, 'p'},
        {"count", required_argument, NULL, 'n'},
        {"credit", required_argument, NULL, 'c'},
        {"workers", required_argument, NULL, OPT_WORKERS},
        {"exec", required_argument, NULL, OPT_EXEC},
        {"post", required_argument, NULL, OPT_POST},
        {"header", required_argument, NULL, OPT_HEADER},
        {"http-timeout", required_argument, NULL, OPT_HTTP_TIMEOUT},
        {"tag-limit-header", required_argument, NULL, OPT_TAG_LIMIT},
        {"verbose", no_argument, NULL, 'v'},
        {"idle-exit", required_argument, NULL, OPT_IDLE_EXIT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
    atomic_long settled = 0;
    consumer k = {.g = g, .cmd = cmd, .out_lock = &out_lock, .settled = &settled, .credit = 1, .workers = 1};
    const char *pool = NULL, *level_list = NULL, *post_url = NULL, *tag_limit = NULL;
    const char *headers[MAX_HEADERS];
    size_t nheaders = 0;
    long count = 0, credit = 1, workers = 1, idle_ms = 0;
    long http_timeout_ms = HTTPC_TIMEOUT_MS_DEFAULT;
    bool http_timeout_set = false;
    uint64_t duration;
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, ":p:n:c:vh", opts, NULL)) != -1) {
        switch (ch) {
        case OPT_POOL: pool = optarg; break;
        case 'p': level_list = optarg; break;
        case 'n':
            if (!cli_text_number_parse(optarg, 1, LONG_MAX, &count))
                return cli_text_usage_error(cmd, "bad count '%s' (expected a positive number)",
                                            optarg);
            break;
        case 'c':
            if (!cli_text_number_parse(optarg, 1, MAX_CREDIT, &credit))
                return cli_text_usage_error(cmd, "bad credit '%s' (expected 1 to %d)", optarg,
                                            MAX_CREDIT);
            break;
        case OPT_WORKERS:
            if (!cli_text_number_parse(optarg, 1, MAX_WORKERS, &workers))
                return cli_text_usage_error(cmd, "bad --workers '%s' (expected 1 to %d)", optarg,
                                            MAX_WORKERS);
            break;
        case OPT_EXEC: k.exec = optarg; break;
        case OPT_POST: post_url = optarg; break;
        case OPT_HEADER:
            if (!httpc_header_check(optarg))
                return cli_text_usage_error(cmd,
                                            "bad --header '%s' (expected 'Name: value', one "
                                            "header per option)",
                                            optarg);
            if (nheaders == MAX_HEADERS)
                return cli_text_usage_error(cmd, "more than %d --header options", MAX_HEADERS);
            headers[nheaders++] = optarg;
            break;
        case OPT_HTTP_TIMEOUT:
            if (!cli_text_duration_parse(optarg, 1, false, HTTPC_TIMEOUT_MS_MAX, &duration) ||
                !duration)
                return cli_text_usage_error(cmd,
                                            "bad --http-timeout '%s' (expected 1 to %d "
                                            "milliseconds, or 30s)",
                                            optarg, HTTPC_TIMEOUT_MS_MAX);
            http_timeout_ms = (long)duration;
            http_timeout_set = true;
            break;
        case OPT_TAG_LIMIT: tag_limit = optarg; break;
        case 'v': k.verbose = true; break;
        case OPT_IDLE_EXIT:
            if (!cli_text_duration_parse(optarg, 1, false, INT_MAX, &duration) || !duration)
                return cli_text_usage_error(cmd, "bad --idle-exit '%s' (expected milliseconds, or 2s, 5m)",
                                            optarg);
            idle_ms = (long)duration;
            break;
        case 'h': return cli_core_help_show(g, cmd);
        default: return cli_text_option_error(cmd, ch, argv);
        }
    }
    if (optind < argc)
        return cli_text_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (post_url && k.exec)
        return cli_text_usage_error(cmd, "--post and --exec cannot be used together");
    if (!post_url && (nheaders || http_timeout_set || tag_limit))
        return cli_text_usage_error(cmd, "--%s works only with --post",
                                    nheaders ? "header" : http_timeout_set ? "http-timeout" : "tag-limit-header");
    if (pool && cli_core_pool_check(cmd, pool) != CLI_CORE_GO_ON)
        return CLI_TEXT_EXIT_USAGE;
    k.credit = (unsigned)credit;
    k.workers = (unsigned)workers;
    if (post_url) {
        int rc = httpc_new(post_url, headers, nheaders, http_timeout_ms, &k.http);
        if (rc == SL_EINVAL)
            return cli_text_usage_error(cmd,
                                        "bad --post URL '%s' (expected http://HOST[:PORT]/PATH "
                                        "or https://...)",
                                        post_url);
        if (rc) {
            cli_text_say(cmd, "cannot start libcurl: %s", sl_strerror(rc));
            return CLI_TEXT_EXIT_FAILURE;
        }
        if (tag_limit && httpc_tag_limit_set(k.http, tag_limit) != SL_OK) {
            httpc_destroy(&k.http);
            return cli_text_usage_error(cmd,
                                        "bad --tag-limit-header '%s' (expected NAME or NAME=VALUE, "
                                        "a header name such as X-Limit-Scope=key)",
                                        tag_limit);
        }
    }
    int st;
    if (cli_multi_is(g)) { /* -b a,b: a consumer per broker, each on its own thread */
        consume_plan plan = {.k = &k, .pool = pool, .level_list = level_list, .count = count, .idle_ms = idle_ms};
        signals_install();
        k.signals_set = true;
        st = cli_multi_each(g, cmd, consume_one_broker, &plan);
    } else {
        st = consume_connect(&k, pool, level_list, count, idle_ms);
    }
    httpc_destroy(&k.http); /* the workers have ended: their handles are freed */
    return st;
}
