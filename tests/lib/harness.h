/*
 * harness.h - helpers for the tests: real sluiced and sluice-sink processes
 * in fresh temporary directories (sluiced on ipc:// endpoints, the sink on
 * 127.0.0.1 port 0), with readiness signalled through a pipe (never slept
 * for), optionally under a preloaded fault shim; clients and a
 * broker-plus-client fixture for the end-to-end tests; per-test alarms; and
 * a scripted fake broker for the client library's own tests.
 *
 * The programs come from $SLUICE_BIN (a directory; default "bin"), so the
 * same tests run against the plain and the sanitized builds.
 *
 * Nothing here uses cmocka (the reliability campaigns link it too): what can
 * fail because of what a test checks returns an error for the test to assert
 * on; what can only fail when the machine or the harness itself is broken
 * prints why and aborts.
 */
#ifndef SLUICE_TEST_HARNESS_H
#define SLUICE_TEST_HARNESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"
#include "sluice.h"

/* ---- real brokers ---- */

#define TH_EXTRA_MAX 23 /* extra arguments a broker may be started with */

typedef struct th_broker {
    pid_t pid;
    char dir[256];        /* the test's temporary directory */
    char data[300];       /* dir/data */
    char endpoint[320];   /* ipc://dir/s.sock */
    char log[300];        /* dir/sluiced.log: the broker's stderr */
    const char *extra[TH_EXTRA_MAX + 1]; /* extra arguments, NULL-terminated */
    const char *wrap[16]; /* a command to run sluiced under (strace ...), NULL-terminated */
    char preload[600];    /* th_broker_preload's LD_PRELOAD= and ASAN_OPTIONS= */
    char asan[600];
} th_broker;

/* th_broker_init makes a fresh temporary directory; extra (NULL-terminated,
 * may be NULL) is kept for every start. Returns 0 or -1. */
int th_broker_init(th_broker *b, const char *const *extra);

/* th_broker_start starts sluiced on b's directory and waits (up to 20 s) for
 * its READY line. Returns 0, or -1 (and prints the broker's log). */
int th_broker_start(th_broker *b);

/* th_broker_stop sends SIGTERM and waits (up to 20 s, then SIGKILL). Returns
 * the exit status, or -1 when it had to be killed or died of a signal. */
int th_broker_stop(th_broker *b);

/* th_broker_wait waits up to timeout_ms for the broker to exit by itself.
 * Returns its exit status, 128 + the signal that ended it, or -1 if it is
 * still running. */
int th_broker_wait(th_broker *b, int timeout_ms);

/* th_broker_kill9 kills the broker with SIGKILL and reaps it. */
void th_broker_kill9(th_broker *b);

/* th_broker_fini stops the broker if running and removes the directory. */
void th_broker_fini(th_broker *b);

/* th_broker_preload makes b's starts run sluiced under env with
 * LD_PRELOAD of shim (a path in the build directory, the one above this
 * program's tests/: "slowdisk.so", "tests/lib/nospace_shim.so"), then the
 * variables in env ("NAME=value", NULL-terminated, may be NULL; they must
 * outlive the starts), then the inherited ASAN_OPTIONS plus
 * verify_asan_link_order=0. Prints why and aborts when the shim cannot be
 * read. */
void th_broker_preload(th_broker *b, const char *shim, const char *const *env);

/* th_broker_new allocates a broker, inits it with extra and starts it.
 * Returns 0 and sets *out, or -1 with *out NULL and nothing left behind. */
int th_broker_new(const char *const *extra, th_broker **out);

/* th_broker_destroy stops the broker (th_broker_stop), removes its directory,
 * frees it and sets *b to NULL; accepts NULL or *b == NULL (returns -1).
 * Returns th_broker_stop's result: 0 is a clean exit, which under ASan also
 * means no leaks. */
int th_broker_destroy(th_broker **b);

/* ---- clients and the end-to-end fixture ---- */

/* th_client connects a client to b with timeout_ms for its synchronous calls
 * and a 200 ms heartbeat; the caller closes it with sl_close. Connecting is
 * asynchronous, so it fails only on a bad endpoint or no memory: it then
 * prints why and aborts (it may be called from a worker thread). */
sl_client *th_client(const th_broker *b, int timeout_ms);

/* A broker started for one test, and a client on it (th_client, 5000 ms). */
typedef struct th_fixture {
    th_broker b;
    sl_client *c;
} th_fixture;

/* th_fixture_start starts a broker with extra (NULL-terminated, may be NULL)
 * in a fresh directory and connects f->c. Returns 0 and sets *out, or -1
 * with *out NULL (and prints the broker's log). */
int th_fixture_start(const char *const *extra, th_fixture **out);

/* th_fixture_finish closes f->c, stops the broker, removes its directory,
 * frees the fixture and sets *f to NULL. Returns th_broker_stop's result: 0
 * is a clean exit (and, under ASan, no leaks); -1 when *f is NULL. */
int th_fixture_finish(th_fixture **f);

/* th_put_many publishes n messages (body "m") to level with cost (0 means
 * 1), pipelined with sl_send_async in windows of 200, and waits (5 s each)
 * for every confirmation. Returns SL_OK when every one was confirmed SL_OK,
 * else the first error (sl_send_async's, sl_send_wait's or a confirmation's),
 * printed with the message's number. */
int th_put_many(sl_client *c, int level, unsigned n, uint32_t cost);

/* ---- other programs ---- */

/* th_run runs a command (argv, NULL-terminated) with stdin from in_text (may
 * be NULL), captures stdout into out (NUL-terminated, up to out_len-1 bytes)
 * and returns its exit status (-1 on a signal or a 60 s timeout). */
int th_run(const char *const *argv, const char *in_text, char *out, size_t out_len);

/* th_bin returns "$SLUICE_BIN/name" in a static buffer (one per call site is
 * enough: the buffer rotates among 8). */
const char *th_bin(const char *name);

/* A sluice-sink process on 127.0.0.1, its files in a directory of the test. */
typedef struct th_sink {
    pid_t pid;
    uint16_t port;  /* the port the kernel chose */
    char log[320];  /* dir/requests.log (--log): one line per POST, "<ns> <status> <body>" */
    char out[320];  /* dir/sink.out: its stdout, a line per second */
    char err[320];  /* dir/sink.err: its stderr */
    char url[64];   /* http://127.0.0.1:PORT/orders */
} th_sink;

/* th_sink_start starts sluice-sink --listen 127.0.0.1:0 --log dir/requests.log
 * with extra arguments (NULL-terminated, may be NULL), waits up to 20 s for
 * READY on --ready-fd and reads the port from its stderr. The sink dies with
 * the test program (PR_SET_PDEATHSIG, and an exit handler). Returns 0, or -1
 * (it then prints the sink's stderr and leaves nothing running). */
int th_sink_start(th_sink *s, const char *dir, const char *const *extra);

/* th_sink_stop sends SIGTERM and waits up to 20 s (then SIGKILL), so that
 * its log is complete. Returns its exit status, or -1 when it had to be
 * killed or died of a signal. */
int th_sink_stop(th_sink *s);

/* th_loopback_socket opens a TCP socket bound to 127.0.0.1 on a port the
 * kernel picks (written to *port), listening (backlog 8) when listening is
 * true. Bound and not listening, the port refuses connections while the
 * socket is open. Returns the descriptor, or -1 (and prints why). */
int th_loopback_socket(bool listening, uint16_t *port);

/* ---- time, seeds, files ---- */

/* th_now_ms reads the monotonic clock in ms. */
uint64_t th_now_ms(void);

/* th_seed returns the test's random seed ($SLUICE_SEED or the time), printed
 * once so that a failure can be replayed. */
unsigned th_seed(void);

/* th_timeout_s is how long one test may run under th_timeout_arm and
 * th_fake_setup: 60 s unless main sets it before running the tests. */
extern unsigned th_timeout_s;

/* th_timeout_arm is a cmocka setup that arms alarm(th_timeout_s), so that a
 * hung test kills its program instead of stalling the run; state is left
 * alone. Returns 0. */
int th_timeout_arm(void **state);

/* th_timeout_disarm is the matching teardown: alarm(0). Returns 0. */
int th_timeout_disarm(void **state);

/* th_rmrf removes a directory tree, unless th_keep_dirs is set: then it
 * names the tree on stderr and leaves it (a campaign keeping a failed
 * trial's brokers, logs and stores for a look). */
void th_rmrf(const char *path);
extern int th_keep_dirs;

/* th_read_file reads up to len-1 bytes of path into buf, NUL-terminated ("" when
 * it cannot be opened). Returns the number of bytes read. */
size_t th_read_file(const char *path, char *buf, size_t len);

/* ---- a fake broker, for the client library's tests ----
 *
 * A real ZeroMQ ROUTER socket bound on ipc:// in the test's own temporary
 * directory and, when started, served by a thread that decodes each message
 * with proto/, records it and hands it to the test's handler, which answers
 * with the th_fake_* senders below. What it received is read after
 * th_fake_stop has joined the thread, or through nseen while it runs. */

#define TH_SEEN_MAX 32

/* What the fake received, one message: scalars, and copies of pool, cmd and a
 * short body (strings point into frames the fake frees). */
typedef struct th_seen {
    proto_type type;
    proto_mask present;
    uint64_t seq, token, credit, delay_ms, lease_ms, n;
    uint64_t id, level, size, enabled, deadline_ms, aging_ms, min, max, target_wait_ms;
    uint64_t cost, retry_ms, rate_milli, min_rate_milli, burst, max_inflight;
    char pool[PROTO_MAX_NAME + 1];
    char cmd[PROTO_MAX_NAME + 1];
    char body[64];
} th_seen;

typedef struct th_fake th_fake;

/* A handler: called on the fake's thread for every message decoded. */
typedef void (*th_fake_fn)(th_fake *f, const proto_msg *m);

struct th_fake {
    char dir[64];
    char endpoint[128];
    void *ctx, *router;
    pthread_t thread;
    bool running;
    atomic_int stop;
    th_fake_fn on_msg;
    unsigned char peer[256];
    size_t peer_len;
    uint64_t held_seq;  /* for handlers that answer late */
    uint64_t puts;      /* for handlers that count PUTs: PUT_OK's id is 100 + puts */
    uint64_t delivered; /* for handlers that count deliveries */
    int variant;        /* for handlers that can answer in more than one way */
    atomic_int nseen;
    th_seen seen[TH_SEEN_MAX];
};

/* th_fake_setup is a cmocka setup: it arms alarm(th_timeout_s), makes a fake
 * (*state) with a temporary directory, its endpoint and a ZeroMQ context;
 * nothing is bound yet. Returns 0 or -1. */
int th_fake_setup(void **state);

/* th_fake_teardown is the matching teardown: it stops the thread, closes the
 * socket and the context, removes the directory, frees the fake and disarms
 * the alarm. Returns 0. */
int th_fake_teardown(void **state);

/* th_fake_bind binds f's ROUTER socket on f->endpoint. Returns 0 or -1. */
int th_fake_bind(th_fake *f);

/* th_fake_start serves the bound socket from a thread that calls on_msg
 * (may be NULL: record only) for every message. Returns 0 or -1. */
int th_fake_start(th_fake *f, th_fake_fn on_msg);

/* th_fake_stop stops and joins the thread; accepts a fake not running. */
void th_fake_stop(th_fake *f);

/* th_fake_restart plays a broker that goes away and comes back on the same
 * endpoint: it stops the thread, closes the socket, forgets what was seen,
 * binds again and starts with on_msg. Returns 0 or -1. */
int th_fake_restart(th_fake *f, th_fake_fn on_msg);

/* th_fake_find returns the index of the first message of type at or after
 * from in f->seen, or -1. */
int th_fake_find(const th_fake *f, proto_type type, int from);

/* th_fake_client connects a client to f with timeout_ms for its synchronous
 * calls (the default heartbeat). Aborts as th_client does. */
sl_client *th_fake_client(const th_fake *f, int timeout_ms);

/* The senders below run on the fake's thread, in handlers, to the peer that
 * sent the last message. A message that does not encode is a bug in the
 * test: they print it and abort. */

/* th_fake_send encodes m and sends it. */
void th_fake_send(th_fake *f, const proto_msg *m);

/* th_fake_reply sends an empty reply of type to seq; a PUT_OK carries id
 * 100 + f->puts. */
void th_fake_reply(th_fake *f, proto_type type, uint64_t seq);

/* th_fake_error sends an ERROR with code and text for seq. */
void th_fake_error(th_fake *f, uint64_t seq, uint64_t code, const char *text);

/* th_fake_names sets m's level names to n names (n <= 17): high, normal, low,
 * then l3, l4, ... */
void th_fake_names(proto_msg *m, uint32_t n);

/* th_fake_welcome answers a HELLO: nlevels names (th_fake_names), heartbeat
 * 1000 ms, lease 30000 ms, max_body 1024. */
void th_fake_welcome(th_fake *f, uint64_t seq, uint32_t nlevels);

/* th_fake_deliver sends a DELIVER at level 1, attempt 2, lease 5000 ms; tag
 * NULL and cost 0 leave those fields out. */
void th_fake_deliver(th_fake *f, uint64_t id, uint64_t token, const char *body, const char *tag,
                     uint64_t cost);

/* th_wire_send encodes m and sends it as one frame on sock (a DEALER a
 * test speaks the wire on); a message that does not encode, or a send that
 * fails, is fatal. */
void th_wire_send(void *sock, const proto_msg *m);

/* th_fatal prints what broke and aborts: for failures of the harness itself
 * (a broken machine), never for what a test checks. */
__attribute__((format(printf, 1, 2))) _Noreturn void th_fatal(const char *fmt, ...);

#endif /* SLUICE_TEST_HARNESS_H */
