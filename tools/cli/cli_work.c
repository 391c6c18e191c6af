/*
 * cli_work.c - the worker side of `sluice consume`: what a worker thread of
 * the crew (cli_crew.c) does with one job. The main thread alone uses the
 * client; a worker only reads what was fixed before it started (the
 * command, the HTTP target and pacer, the level names) and hands back an
 * outcome that the main thread settles.
 *
 *   print    the body as one whole line under the output lock (shared by
 *            every broker's consumer), with -v its id, level, tag, attempt
 *   --exec   the command on the body (cli_exec.c): exit 0 acks, 65
 *            (EX_DATAERR) rejects (a dead letter at once, its reason the
 *            status and the last line of standard error), 75
 *            (EX_TEMPFAIL) is THROTTLED, 76 THROTTLED for the message's
 *            tag alone (scope tag; the sink's for an untagged one),
 *            anything else nacks with --post's backoff (0.5 s doubling per
 *            attempt, at most 60 s)
 *   --post   cli_post.c: paced, POSTed, the answer read as an outcome
 *   warm-up  (--post) a new worker opens its own connection before it
 *            takes a job (cli_work_warm, the crew's start function), the
 *            first ones before the consumer subscribes and those a pool
 *            resize adds before the window grows (cli_consume.c)
 *
 * Costs: nothing beyond the job itself and, per worker, one HEAD.
 */
#include "cli_work.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "cli_consume.h"
#include "cli_exec.h"
#include "cli_text.h"

#define EXIT_DATAERR 65  /* sysexits.h's EX_DATAERR: the message can never succeed */
#define EXIT_TEMPFAIL 75 /* sysexits.h's EX_TEMPFAIL: the sink is throttled */
#define EXIT_TAG_THROTTLED 76 /* the sink throttled this message's tag alone (a per-tenant limit) */

/* exec_outcome runs the command on j's delivery, on a worker thread, and
 * sets what its settlement carries: a NACK's backoff (0.5 s doubling per
 * attempt, at most 60 s, as --post's), a REJECT's reason (the exit status
 * and the last line of standard error). */
static int exec_outcome(const consumer *k, job *j)
{
    const sl_delivery *d = j->d;
    char last[CLI_EXEC_LINE_MAX + 1];
    int status;
    char **env = cli_exec_env_new(d); /* the message's identity and headers */
    int ran = env ? cli_exec_run_env(k->exec, env, d->body, d->body_len, &status, last, sizeof last) : -1;
    if (!env)
        errno = ENOMEM;
    free(env);
    if (ran) {
        cli_text_say(k->cmd, "cannot run the command: %s", cli_text_strerror(errno));
        return CLI_OUTCOME_FAILED; /* unacknowledged: it returns to the broker */
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return CLI_OUTCOME_ACK;
    if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_DATAERR) {
        snprintf(j->why, sizeof j->why, "the command exited with status %d (EX_DATAERR)%s%s", EXIT_DATAERR,
                 last[0] ? ": " : "", last);
        cli_text_say(k->cmd, "message %" PRIu64 ": the command exited with status %d (EX_DATAERR); rejected, now a "
                     "dead letter", d->id, EXIT_DATAERR);
        return CLI_OUTCOME_REFUSED;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_TEMPFAIL) {
        cli_text_say(k->cmd,
                     "message %" PRIu64 ": the command exited with status %d (EX_TEMPFAIL); "
                     "returned as throttled, without charging an attempt",
                     d->id, EXIT_TEMPFAIL);
        return CLI_OUTCOME_THROTTLED;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_TAG_THROTTLED) {
        bool tag = d->tag[0] != '\0'; /* an untagged message has only the sink's scope */
        cli_text_say(k->cmd,
                     "message %" PRIu64 ": the command exited with status %d (its tag throttled); "
                     "returned as throttled, scope %s, without charging an attempt",
                     d->id, EXIT_TAG_THROTTLED, tag ? "tag" : "sink (it has no tag)");
        return tag ? CLI_OUTCOME_THROTTLED_TAG : CLI_OUTCOME_THROTTLED;
    }
    j->delay_ms = httpc_backoff_ms(d->attempt);
    if (WIFEXITED(status))
        cli_text_say(k->cmd, "message %" PRIu64 ": the command exited with status %d; nacked (attempt %u), back "
                     "off %" PRIu32 " ms", d->id, WEXITSTATUS(status), d->attempt, j->delay_ms);
    else if (WIFSIGNALED(status))
        /* glibc's strsignal returns constant text for every real signal */
        cli_text_say(k->cmd,
                     "message %" PRIu64 ": the command was killed by signal %d (%s); "
                     "nacked (attempt %u), back off %" PRIu32 " ms",
                     d->id, WTERMSIG(status), strsignal(WTERMSIG(status)), d->attempt, j->delay_ms);
    return CLI_OUTCOME_NACK;
}

/* cli_work_run handles one job on a worker thread: runs the command on the
 * delivery, POSTs it, or prints it as one whole line under out_lock. It
 * never touches the client. Returns an outcome. */
int cli_work_run(void *ctx, void *arg)
{
    consumer *k = ctx;
    job *j = arg;
    const sl_delivery *d = j->d;
    if (k->http)
        return cli_post_outcome(&k->post, k->cmd, k->verbose, d, &j->delay_ms, j->why, sizeof j->why);
    if (k->exec)
        return exec_outcome(k, j);
    pthread_mutex_lock(k->out_lock);
    if (k->verbose) {
        char number[16], tag[4 * 256 + 1];
        snprintf(number, sizeof number, "%u", d->level);
        cli_text_safe(d->tag, strlen(d->tag), tag, sizeof tag); /* the producer's text */
        printf("id=%" PRIu64 " level=%s tag=%s attempt=%u ", d->id,
               d->level < k->nlevels ? k->level_names[d->level] : number, tag, d->attempt);
        if (d->cost != 1)
            printf("cost=%" PRIu32 " ", d->cost);
    }
    fwrite(d->body, 1, d->body_len, stdout);
    putchar('\n');
    bool failed = fflush(stdout) != 0 || ferror(stdout);
    int err = errno;
    pthread_mutex_unlock(k->out_lock);
    if (failed) {
        cli_text_say(k->cmd, "writing to standard output: %s", cli_text_strerror(err));
        return CLI_OUTCOME_FAILED; /* not acked: it returns to the broker */
    }
    return CLI_OUTCOME_ACK;
}

int cli_work_warm(void *ctx)
{
    consumer *k = ctx;
    return k->http ? cli_post_warm(&k->post) : 0;
}

void cli_work_drop(void *arg)
{
    job *j = arg;
    sl_delivery_free(&j->d);
    free(j);
}
