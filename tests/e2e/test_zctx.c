/*
 * test_zctx.c - the clients of one process share one ZeroMQ context
 * (client/zctx.c), against the real sluiced: eight clients add one I/O
 * thread and one reaper to the process, not sixteen threads; clients opened
 * and closed from several threads at once all work, and the context made
 * again after the last client closed works too; a child made by fork()
 * connects clients of its own (the parent's context has no threads there).
 */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "sluice.h"

enum { CLIENTS = 8, THREADS = 6, ROUNDS = 15 };

/* threads counts the calling process's threads. */
static int threads(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void eight_clients_add_two_threads(void **state)
{
    (void)state;
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    int before = threads();
    sl_client *c[CLIENTS] = {0};
    for (int i = 0; i < CLIENTS; i++) {
        c[i] = th_client(b, 5000);
        assert_int_equal(th_put_many(c[i], 1, 1, 1), SL_OK); /* each one connected and confirmed */
    }
    int during = threads();
    fprintf(stderr, "# threads: %d before, %d with %d clients\n", before, during, CLIENTS);
    assert_true(during - before <= 2); /* a context per client: 2 each */
    for (int i = 0; i < CLIENTS; i++)
        sl_close(&c[i]);
    /* the last one closed ended the context; a new client makes it again */
    sl_client *again = th_client(b, 5000);
    assert_int_equal(th_put_many(again, 1, 1, 1), SL_OK);
    sl_stats st;
    assert_int_equal(sl_stats_get(again, &st), SL_OK);
    assert_int_equal(st.level[1].depth, CLIENTS + 1);
    sl_close(&again);
    assert_int_equal(th_broker_destroy(&b), 0);
}

typedef struct churn {
    const th_broker *b;
    int failures;
} churn;

static void *churn_main(void *arg)
{
    churn *ch = arg;
    for (int i = 0; i < ROUNDS; i++) {
        sl_client *c = NULL;
        sl_options o = {.timeout_ms = 5000};
        if (sl_connect(ch->b->endpoint, &o, &c) != SL_OK || th_put_many(c, 1, 1, 1) != SL_OK)
            ch->failures++;
        sl_close(&c);
    }
    return NULL;
}

static void clients_opened_and_closed_from_many_threads(void **state)
{
    (void)state;
    th_broker *b = NULL;
    assert_int_equal(th_broker_new(NULL, &b), 0);
    pthread_t t[THREADS];
    churn ch[THREADS];
    for (int i = 0; i < THREADS; i++) {
        ch[i] = (churn){.b = b};
        assert_int_equal(pthread_create(&t[i], NULL, churn_main, &ch[i]), 0);
    }
    int failures = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        failures += ch[i].failures;
    }
    assert_int_equal(failures, 0);
    sl_client *c = th_client(b, 5000);
    sl_stats st;
    assert_int_equal(sl_stats_get(c, &st), SL_OK);
    assert_int_equal(st.level[1].depth, THREADS * ROUNDS);
    sl_close(&c);
    assert_int_equal(th_broker_destroy(&b), 0);
}

static void a_forked_child_connects_on_its_own(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0); /* f->c: the parent's context exists */
    assert_int_equal(th_put_many(f->c, 1, 1, 1), SL_OK);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(30);
        sl_client *c = NULL;
        sl_options o = {.timeout_ms = 5000};
        int rc = sl_connect(f->b.endpoint, &o, &c);
        if (rc == SL_OK)
            rc = th_put_many(c, 1, 1, 1);
        sl_close(&c);
        _exit(rc == SL_OK ? 0 : 1);
    }
    int status = -1;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[1].depth, 2); /* the child's publish is there too */
    assert_int_equal(th_fixture_finish(&f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(eight_clients_add_two_threads),
        cmocka_unit_test(clients_opened_and_closed_from_many_threads),
        cmocka_unit_test(a_forked_child_connects_on_its_own),
    };
    th_seed();
    return cmocka_run_group_tests_name("zctx", tests, NULL, NULL);
}
