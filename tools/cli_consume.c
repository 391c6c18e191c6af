/*
 * cli_consume.c - `sluice consume`: receive messages and process each in a
 * worker thread, printing it or piping it to a command.
 *
 * An sl_client is not thread-safe, so the main thread alone uses it: it
 * receives deliveries, pushes each to a crew of workers (cli_crew.c), and
 * settles each one a worker hands back, so a message is settled only after
 * its output left: ack, nack, or, when the command exits with EX_TEMPFAIL
 * (75) because the sink refused it, THROTTLED, which returns it without
 * charging an attempt and makes the broker slow down. Workers print a body
 * as one whole line under a mutex, or run the command on it; they never
 * touch the client. The credit window is the number of workers, or -c if
 * larger: the surplus waits in the crew's queue, in order.
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
 */
#include "cli_consume.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_crew.h"
#include "cli_text.h"

#define MAX_CREDIT    100000 /* the broker's cap per connection */
#define MAX_WORKERS   256    /* threads, whatever the share */
#define RECV_SLICE_MS 200    /* how often the loop looks at signals and the share */
#define BUSY_SLICE_MS 10     /* ... and at finished work, while there is some */
#define EXIT_TEMPFAIL 75     /* sysexits.h's EX_TEMPFAIL: the sink is throttled */

/* Long-only options get values outside the char range. */
enum { OPT_POOL = 256, OPT_EXEC, OPT_IDLE_EXIT, OPT_WORKERS };

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
static int levels_parse(cli_core *g, const char *list, unsigned *levels, size_t *n)
{
    char item[128];
    const char *p = list;
    *n = 0;
    for (;;) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof item)
            return cli_text_usage_error("consume",
                                        "bad level list '%s' (expected names or numbers "
                                        "separated by commas)",
                                        list);
        if (*n == SL_MAX_LEVELS)
            return cli_text_usage_error("consume", "more than %d levels in '%s'", SL_MAX_LEVELS,
                                        list);
        memcpy(item, p, len);
        item[len] = '\0';
        int st = cli_core_level_resolve(g, "consume", item, &levels[*n]);
        if (st)
            return st;
        (*n)++;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

static bool write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return false;
        p += w;
        len -= (size_t)w;
    }
    return true;
}

/* exec_run runs /bin/sh -c cmd with the body on its stdin and waits for it.
 * Returns 0 with *status set, or -1 with errno when it could not run it. */
static int exec_run(const char *cmd, const sl_delivery *d, int *status)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC))
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        close(fds[0]);
        close(fds[1]);
        errno = err;
        return -1;
    }
    if (pid == 0) {
        /* only async-signal-safe calls here: the parent has threads. The
         * command gets the signals its caller would: none blocked (workers
         * block them), SIGPIPE back to its default. */
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigset_t none;
        sigemptyset(&none);
        sigaction(SIGPIPE, &dfl, NULL);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (dup2(fds[0], STDIN_FILENO) < 0)
            _exit(127);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(fds[0]);
    write_all(fds[1], d->body, d->body_len); /* EPIPE: it did not read it all */
    close(fds[1]);
    while (waitpid(pid, status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return 0;
}

/* What a worker made of a delivery; the main thread settles it so. */
enum { OUTCOME_ACK, OUTCOME_NACK, OUTCOME_THROTTLED, OUTCOME_FAILED };

typedef struct consumer {
    cli_core *g;
    pthread_mutex_t out_lock; /* a worker prints one whole line under it */
    /* read by the workers, fixed before they start */
    const char *exec;
    bool verbose;
    unsigned nlevels;
    char level_names[SL_MAX_LEVELS][72];
    /* the main thread's */
    unsigned credit;  /* the least window, from -c */
    unsigned workers; /* the crew's size */
    unsigned share;   /* the pool share the crew was last matched to */
    size_t held;      /* received and not yet settled */
    long settled;
    int64_t last_ms; /* when a message last arrived or was settled */
    bool broken;     /* settling failed: settle no more */
} consumer;

static unsigned consumer_window(const consumer *k)
{
    return k->workers > k->credit ? k->workers : k->credit;
}

/* exec_outcome runs the command on d, on a worker thread. */
static int exec_outcome(const consumer *k, const sl_delivery *d)
{
    int status;
    if (exec_run(k->exec, d, &status)) {
        cli_text_say("consume", "cannot run the command: %s", cli_text_strerror(errno));
        return OUTCOME_FAILED; /* unacknowledged: it returns to the broker */
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return OUTCOME_ACK;
    if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_TEMPFAIL) {
        cli_text_say("consume",
                     "message %" PRIu64 ": the command exited with status %d (EX_TEMPFAIL); "
                     "returned as throttled, without charging an attempt",
                     d->id, EXIT_TEMPFAIL);
        return OUTCOME_THROTTLED;
    }
    if (WIFEXITED(status))
        cli_text_say("consume", "message %" PRIu64 ": the command exited with status %d; nacked",
                     d->id, WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        /* glibc's strsignal returns constant text for every real signal */
        cli_text_say("consume",
                     "message %" PRIu64 ": the command was killed by signal %d (%s); "
                     "nacked",
                     d->id, WTERMSIG(status), strsignal(WTERMSIG(status)));
    return OUTCOME_NACK;
}

/* consume_work handles one delivery on a worker thread: runs the command on
 * it, or prints it as one whole line under out_lock. It never touches the
 * client. Returns an outcome. */
static int consume_work(void *ctx, void *job)
{
    consumer *k = ctx;
    const sl_delivery *d = job;
    if (k->exec)
        return exec_outcome(k, d);
    pthread_mutex_lock(&k->out_lock);
    if (k->verbose) {
        char number[16];
        snprintf(number, sizeof number, "%u", d->level);
        printf("id=%" PRIu64 " level=%s tag=%s attempt=%u ", d->id,
               d->level < k->nlevels ? k->level_names[d->level] : number, d->tag, d->attempt);
        if (d->cost != 1)
            printf("cost=%" PRIu32 " ", d->cost);
    }
    fwrite(d->body, 1, d->body_len, stdout);
    putchar('\n');
    bool failed = fflush(stdout) != 0 || ferror(stdout);
    int err = errno;
    pthread_mutex_unlock(&k->out_lock);
    if (failed) {
        cli_text_say("consume", "writing to standard output: %s", cli_text_strerror(err));
        return OUTCOME_FAILED; /* not acked: it returns to the broker */
    }
    return OUTCOME_ACK;
}

static void delivery_drop(void *job)
{
    sl_delivery *d = job;
    sl_delivery_free(&d);
}

/* consume_settle acks, nacks or reports as throttled d, as its worker
 * decided. Returns 0 or an exit status. */
static int consume_settle(consumer *k, const sl_delivery *d, int outcome)
{
    static const char *const verb[] = {[OUTCOME_ACK] = "ack", [OUTCOME_NACK] = "nack",
                                       [OUTCOME_THROTTLED] = "THROTTLED"};
    int rc = outcome == OUTCOME_ACK    ? sl_ack(k->g->c, d)
             : outcome == OUTCOME_NACK ? sl_nack(k->g->c, d, 0)
                                       : sl_throttled(k->g->c, d, 0);
    if (rc == SL_ESTALE) {
        /* the lease ran out first: the broker will deliver it again */
        cli_text_say("consume",
                     "message %" PRIu64 ": %s came too late: %s (SL_ESTALE); it will be "
                     "delivered again",
                     d->id, verb[outcome], sl_last_error(k->g->c));
        return 0;
    }
    if (rc) {
        char context[64];
        snprintf(context, sizeof context, "%s of message %" PRIu64, verb[outcome], d->id);
        return cli_core_broker_error(k->g, "consume", rc, context, NULL);
    }
    return 0;
}

/* consume_finish settles every delivery the workers are done with. Returns
 * 0 or an exit status. */
static int consume_finish(consumer *k, cli_crew *crew)
{
    void *job;
    int outcome, st = 0;
    while (cli_crew_take(crew, &job, &outcome)) {
        sl_delivery *d = job;
        int s = CLI_TEXT_EXIT_FAILURE;
        if (outcome != OUTCOME_FAILED && !k->broken) {
            s = consume_settle(k, d, outcome);
            k->broken = s != 0;
            k->settled += s == 0;
        }
        st = st ? st : s;
        k->held--;
        k->last_ms = cli_core_now_ms();
        sl_delivery_free(&d);
    }
    return st;
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
        cli_text_say("consume", "cannot start more than %u workers: %s", got,
                     cli_text_strerror(errno));
    if (got != k->workers)
        cli_text_say("consume", "pool share is now %u; running %u worker%s%s", share, got,
                     got == 1 ? "" : "s", share > MAX_WORKERS ? " (the most it runs)" : "");
    k->workers = got;
    int rc = sl_set_window(k->g->c, consumer_window(k));
    return rc ? cli_core_broker_error(k->g, "consume", rc, "changing the credit window", NULL) : 0;
}

/* consume_loop receives deliveries for the crew and settles what it hands
 * back, until the count, the idle time, a signal or an error ends it.
 * Returns 0 or an exit status. */
static int consume_loop(consumer *k, cli_crew *crew, long count, long idle_ms)
{
    int st = 0;
    while (!st && !stop_signal && (count == 0 || k->settled < count)) {
        if ((st = consume_follow_share(k, crew)))
            break;
        bool full = k->held >= consumer_window(k);
        if (full && cli_crew_wait(crew, RECV_SLICE_MS)) {
            st = consume_finish(k, crew);
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
        if (rc == SL_OK && cli_crew_push(crew, d) == 0) {
            k->held++;
            k->last_ms = cli_core_now_ms();
        } else if (rc == SL_OK) {
            cli_text_say("consume", "out of memory");
            sl_delivery_free(&d); /* unsettled: it returns to the broker */
            st = CLI_TEXT_EXIT_FAILURE;
        } else if (rc != SL_ETIMEDOUT) {
            k->broken = true;
            st = cli_core_broker_error(k->g, "consume", rc, "receiving", NULL);
        }
        int s = consume_finish(k, crew);
        st = st ? st : s;
    }
    return st;
}

/* consume_run subscribes, starts the crew and runs the loop; then lets the
 * workers finish what they hold, settles it, and joins them. Deliveries that
 * arrive before the crew starts wait in the client. */
static int consume_run(consumer *k, const char *pool, const unsigned *levels, size_t nlevels,
                       long count, long idle_ms)
{
    int rc = sl_subscribe(k->g->c, pool, levels, nlevels, consumer_window(k));
    if (rc)
        return cli_core_broker_error(k->g, "consume", rc, "subscribing", NULL);
    k->g->answered = true;
    /* the workers read a copy of the level names: the client is this
     * thread's alone (the subscription cached them) */
    const char *const *names = NULL;
    if (sl_levels(k->g->c, &k->nlevels, &names) == SL_OK)
        for (unsigned i = 0; i < k->nlevels; i++)
            snprintf(k->level_names[i], sizeof k->level_names[i], "%s", names[i]);
    signals_install();

    cli_crew *crew = NULL;
    unsigned asked = k->workers;
    int err = cli_crew_new(consume_work, k, MAX_WORKERS, &crew);
    if (err == 0 && (k->workers = cli_crew_resize(crew, asked)) == 0)
        err = errno ? errno : EAGAIN;
    if (err) {
        cli_text_say("consume", "cannot start a worker thread: %s", cli_text_strerror(err));
        cli_crew_destroy(&crew, NULL);
        return CLI_TEXT_EXIT_FAILURE;
    }
    int st = 0;
    if (k->workers < asked) {
        cli_text_say("consume", "started only %u of %u workers: %s", k->workers, asked,
                     cli_text_strerror(errno));
        if ((rc = sl_set_window(k->g->c, consumer_window(k))))
            st = cli_core_broker_error(k->g, "consume", rc, "changing the credit window", NULL);
    }
    k->last_ms = cli_core_now_ms();
    if (!st)
        st = consume_loop(k, crew, count, idle_ms);
    cli_crew_stop(crew);
    int s = consume_finish(k, crew);
    cli_crew_destroy(&crew, delivery_drop); /* unstarted: sl_close returns them */
    return st ? st : s;
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
        {"verbose", no_argument, NULL, 'v'},
        {"idle-exit", required_argument, NULL, OPT_IDLE_EXIT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    consumer k = {.g = g, .out_lock = PTHREAD_MUTEX_INITIALIZER, .credit = 1, .workers = 1};
    const char *pool = NULL, *level_list = NULL;
    long count = 0, credit = 1, workers = 1, idle_ms = 0;
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
        case 'v': k.verbose = true; break;
        case OPT_IDLE_EXIT:
            if (!cli_text_number_parse(optarg, 1, INT_MAX, &idle_ms))
                return cli_text_usage_error(cmd, "bad --idle-exit '%s' (expected milliseconds)",
                                            optarg);
            break;
        case 'h': fputs(g->help, stdout); return cli_core_output_done(cmd);
        default: return cli_text_option_error(cmd, ch, argv);
        }
    }
    if (optind < argc)
        return cli_text_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (pool && cli_core_pool_check(cmd, pool) != CLI_CORE_GO_ON)
        return CLI_TEXT_EXIT_USAGE;
    k.credit = (unsigned)credit;
    k.workers = (unsigned)workers;

    int st = cli_core_connect(g, cmd);
    if (st)
        return st;
    unsigned levels[SL_MAX_LEVELS];
    size_t nlevels = 0;
    if (level_list && (st = levels_parse(g, level_list, levels, &nlevels)))
        return st;
    if (count > 0)
        sl_set_limit(g->c, (uint64_t)count); /* never pull an extra message */
    return consume_run(&k, pool, levels, nlevels, count, idle_ms);
}
