/*
 * dlclose_probe.c - built and run by test_install.c against the installed
 * libsluice.so.1: a program that loads the library with dlopen, publishes
 * one message from a thread of its own (the confirmation is decoded on
 * that thread, which gives the thread a decoder zone, proto_dec.c), closes
 * the library with dlclose while the thread still runs, then lets the
 * thread end. The thread's zone is freed at its end by a destructor in the
 * library, so the library must stay loaded (it is linked -z nodelete);
 * unloaded, the thread's exit jumps into unmapped code.
 *
 * usage: dlclose_probe LIBRARY ENDPOINT; prints "ok" and exits 0, or says
 * what failed and exits 1. Not a test of its own (it sits in tests/lib/).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "sluice.h"

typedef int (*connect_fn)(const char *, const sl_options *, sl_client **);
typedef int (*send_fn)(sl_client *, const sl_put *, uint64_t *);
typedef void (*close_fn)(sl_client **);

static connect_fn do_connect;
static send_fn do_send;
static close_fn do_close;
static const char *endpoint;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stage, sent_rc = -1;

static void step(int to)
{
    pthread_mutex_lock(&mu);
    stage = to;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void wait_for(int at)
{
    pthread_mutex_lock(&mu);
    while (stage < at)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

static void *publisher(void *arg)
{
    (void)arg;
    sl_client *c = NULL;
    int rc = do_connect(endpoint, NULL, &c);
    if (rc == SL_OK) {
        sl_put m = {.body = "x", .body_len = 1, .level = SL_LEVEL_DEFAULT};
        rc = do_send(c, &m, NULL); /* waits for the confirmation: decoded here */
        do_close(&c);
    }
    sent_rc = rc;
    step(1);
    wait_for(2); /* the library is closed now; this thread ends after it */
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: dlclose_probe LIBRARY ENDPOINT\n");
        return 1;
    }
    endpoint = argv[2];
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    do_connect = (connect_fn)dlsym(lib, "sl_connect");
    do_send = (send_fn)dlsym(lib, "sl_send");
    do_close = (close_fn)dlsym(lib, "sl_close");
    if (!do_connect || !do_send || !do_close) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        return 1;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, publisher, NULL) != 0) {
        fprintf(stderr, "pthread_create failed\n");
        return 1;
    }
    wait_for(1);
    int closed = dlclose(lib);
    step(2);
    pthread_join(t, NULL);
    if (sent_rc != SL_OK || closed != 0) {
        fprintf(stderr, "publish: %d, dlclose: %d\n", sent_rc, closed);
        return 1;
    }
    puts("ok");
    return 0;
}
