/*
 * bench_raw.c - the raw rows of sluice-bench: what this machine's disk and
 * IPC allow before any broker logic runs.
 *
 * This is the one file in tools/ that includes lmdb.h and zmq.h; everything
 * else in the bench talks to Sluice through sluice.h. Each measurement owns
 * its resources for the length of one call and releases them on every path:
 *
 *   LMDB   a fresh environment in a directory of the caller's, mapped
 *          LMDB_MAP_BYTES, with the default (durable) flags. Each timed step
 *          is one write transaction of puts_per_txn puts of the bench's body,
 *          committed. Keys cycle through LMDB_KEYSPACE, so later puts
 *          overwrite and the file stays small: each commit still writes its
 *          dirty pages and syncs twice (data, then meta page), which is the
 *          cost measured.
 *   ZeroMQ a context, a ROUTER bound to an ipc:// endpoint and echoed by a
 *          thread of its own, and a DEALER connected to it. Each timed step
 *          is one send and one receive of the bench's body. The echo thread
 *          wakes every BENCH_CORE_POLL_MS to look at its stop flag; linger
 *          is 0 on both sockets, so closing never waits for the peer.
 *
 * Both run for the caller's seconds through bench_core_timed, so they stop
 * at the deadline, a signal or BENCH_CORE_MAX_OPS steps, and every socket
 * operation has a timeout (BENCH_CORE_CLIENT_TIMEOUT_MS).
 */
#include "bench_raw.h"

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <lmdb.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <zmq.h>

#include "bench_core.h"

#define LMDB_KEYSPACE  65536 /* keys cycle, so the file stays small */
#define LMDB_MAP_BYTES ((size_t)256 << 20)

/* ---- LMDB durable commits ---- */

typedef struct lmdb_run {
    MDB_env *env;
    MDB_dbi dbi;
    unsigned puts_per_txn;
    uint64_t key_n;
    unsigned char value[BENCH_CORE_BODY_BYTES];
} lmdb_run;

static int lmdb_fail(const char *what, int rc)
{
    return bench_core_fail("lmdb: %s: %s", what, mdb_strerror(rc));
}

/* lmdb_commit is one timed step: a transaction of puts_per_txn puts. */
static int lmdb_commit(void *arg)
{
    lmdb_run *l = arg;
    MDB_txn *txn = NULL;
    int rc = mdb_txn_begin(l->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return lmdb_fail("mdb_txn_begin", rc);
    for (unsigned p = 0; p < l->puts_per_txn; p++) {
        uint64_t key_be = htobe64(l->key_n++ % LMDB_KEYSPACE);
        MDB_val k = {.mv_size = sizeof key_be, .mv_data = &key_be};
        MDB_val v = {.mv_size = sizeof l->value, .mv_data = l->value};
        if ((rc = mdb_put(txn, l->dbi, &k, &v, 0)) != MDB_SUCCESS) {
            lmdb_fail("mdb_put", rc);
            goto txn_abort;
        }
    }
    rc = mdb_txn_commit(txn); /* frees txn, whether or not it commits */
    return rc == MDB_SUCCESS ? 0 : lmdb_fail("mdb_txn_commit", rc);

txn_abort:
    mdb_txn_abort(txn);
    return -1;
}

int bench_raw_lmdb_commits(const char *dir, unsigned puts_per_txn, int seconds, uint64_t *commits,
                           int64_t *elapsed_ns)
{
    lmdb_run l = {.puts_per_txn = puts_per_txn};
    MDB_txn *txn = NULL;
    int64_t start_ns, last_ns;
    int ret = -1;
    bench_core_body_fill(l.value);
    *commits = 0;
    *elapsed_ns = 0;
    if (mkdir(dir, 0700) != 0)
        return bench_core_fail("cannot create %s: %s", dir, strerror(errno));
    int rc = mdb_env_create(&l.env);
    if (rc != MDB_SUCCESS)
        return lmdb_fail("mdb_env_create", rc);
    if ((rc = mdb_env_set_mapsize(l.env, LMDB_MAP_BYTES)) != MDB_SUCCESS ||
        (rc = mdb_env_open(l.env, dir, 0, 0600)) != MDB_SUCCESS) {
        lmdb_fail("opening the environment", rc);
        goto env_close;
    }
    if ((rc = mdb_txn_begin(l.env, NULL, 0, &txn)) != MDB_SUCCESS ||
        (rc = mdb_dbi_open(txn, NULL, 0, &l.dbi)) != MDB_SUCCESS) {
        lmdb_fail("opening the database", rc);
        goto txn_abort;
    }
    rc = mdb_txn_commit(txn);
    txn = NULL;
    if (rc != MDB_SUCCESS) {
        lmdb_fail("mdb_txn_commit", rc);
        goto env_close;
    }

    start_ns = bench_core_now_ns();
    if (bench_core_timed(lmdb_commit, &l, start_ns, start_ns + seconds * BENCH_CORE_NS_PER_S,
                         commits, &last_ns) == 0) {
        *elapsed_ns = last_ns - start_ns;
        ret = 0;
    }

txn_abort:
    if (txn)
        mdb_txn_abort(txn);
env_close:
    mdb_env_close(l.env);
    return ret;
}

/* ---- ZeroMQ round trips ---- */

typedef struct echo {
    void *router;
    atomic_int stop;
    int rc;
} echo;

/* echo_run sends every [id, body] the ROUTER receives back to its sender. */
static void *echo_run(void *arg)
{
    echo *e = arg;
    zmq_msg_t id, body;
    zmq_msg_init(&id);
    zmq_msg_init(&body);
    for (uint64_t i = 0; i < BENCH_CORE_MAX_OPS && !atomic_load(&e->stop); i++) {
        if (zmq_msg_recv(&id, e->router, 0) < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue; /* ZMQ_RCVTIMEO: look at stop again */
            e->rc = bench_core_fail("zmq echo: recv: %s", zmq_strerror(errno));
            break;
        }
        if (!zmq_msg_more(&id) || zmq_msg_recv(&body, e->router, 0) < 0 || zmq_msg_more(&body) ||
            zmq_msg_send(&id, e->router, ZMQ_SNDMORE) < 0 ||
            zmq_msg_send(&body, e->router, 0) < 0) {
            e->rc = bench_core_fail("zmq echo: unexpected message or send failure: %s",
                                    zmq_strerror(errno));
            break;
        }
    }
    zmq_msg_close(&id);
    zmq_msg_close(&body);
    return NULL;
}

typedef struct trip {
    void *dealer;
    uint64_t done;  /* round trips so far, the uncounted first one included */
    unsigned char body[BENCH_CORE_BODY_BYTES];
} trip;

/* round_trip is one timed step: the body out to the echo and back. */
static int round_trip(void *arg)
{
    trip *t = arg;
    unsigned char back[BENCH_CORE_BODY_BYTES + 1];
    if (zmq_send(t->dealer, t->body, sizeof t->body, 0) != (int)sizeof t->body ||
        zmq_recv(t->dealer, back, sizeof back, 0) != (int)sizeof t->body)
        return bench_core_fail("zmq: round trip %" PRIu64 ": %s", t->done, zmq_strerror(errno));
    t->done++;
    return 0;
}

int bench_raw_zmq_round_trips(const char *endpoint, int seconds, uint64_t *trips,
                              int64_t *elapsed_ns)
{
    echo e = {.rc = 0};
    trip t = {.dealer = NULL};
    bench_core_thread echo_thread = {.fn = echo_run, .arg = &e};
    void *ctx = zmq_ctx_new();
    const int linger_ms = 0, poll_ms = BENCH_CORE_POLL_MS;
    const int timeout_ms = BENCH_CORE_CLIENT_TIMEOUT_MS;
    int64_t start_ns, last_ns;
    int rc = -1;
    bench_core_body_fill(t.body);
    *trips = 0;
    *elapsed_ns = 0;
    if (!ctx)
        return bench_core_fail("zmq_ctx_new: %s", zmq_strerror(errno));
    if (!(e.router = zmq_socket(ctx, ZMQ_ROUTER)) || !(t.dealer = zmq_socket(ctx, ZMQ_DEALER)) ||
        zmq_setsockopt(e.router, ZMQ_LINGER, &linger_ms, sizeof linger_ms) ||
        zmq_setsockopt(e.router, ZMQ_RCVTIMEO, &poll_ms, sizeof poll_ms) ||
        zmq_setsockopt(e.router, ZMQ_SNDTIMEO, &timeout_ms, sizeof timeout_ms) ||
        zmq_setsockopt(t.dealer, ZMQ_LINGER, &linger_ms, sizeof linger_ms) ||
        zmq_setsockopt(t.dealer, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms) ||
        zmq_setsockopt(t.dealer, ZMQ_SNDTIMEO, &timeout_ms, sizeof timeout_ms) ||
        zmq_bind(e.router, endpoint) || zmq_connect(t.dealer, endpoint)) {
        bench_core_fail("zmq: setting up %s: %s", endpoint, zmq_strerror(errno));
        goto sockets_close;
    }
    if (bench_core_threads_start(&echo_thread, 1) != 0)
        goto sockets_close;

    /* The first trip waits for the connection: it is not counted. */
    if (!bench_core_stopping() && round_trip(&t) != 0)
        goto thread_join;
    start_ns = bench_core_now_ns();
    if (bench_core_timed(round_trip, &t, start_ns, start_ns + seconds * BENCH_CORE_NS_PER_S, trips,
                         &last_ns) != 0)
        goto thread_join;
    *elapsed_ns = last_ns - start_ns;
    rc = 0;

thread_join:
    atomic_store(&e.stop, 1);
    bench_core_threads_join(&echo_thread, 1);
    rc |= e.rc;
sockets_close:
    if (t.dealer)
        zmq_close(t.dealer);
    if (e.router)
        zmq_close(e.router);
    for (int i = 0; i < 100 && zmq_ctx_term(ctx) < 0 && errno == EINTR; i++)
        ; /* linger is 0: only a signal can interrupt it */
    return rc;
}
