/*
 * harness.c - the processes, clients and fakes the tests run against.
 *
 * Real programs: sluiced (th_broker) and sluice-sink (th_sink) are started
 * by the tools' one process supervisor (tools/common/proc.c) with
 * --ready-fd pointing at a pipe and write "READY\n" once they serve; the
 * supervisor polls that pipe with a deadline. Every process started here is
 * stopped by its PID: a test that fails half-way (cmocka jumps out of it)
 * leaves its process registered, and an exit handler kills and reaps every
 * one still registered (up to MAX_LIVE at once). A sink also gets
 * PR_SET_PDEATHSIG, so a program killed by its alarm leaves none behind.
 *
 * Clients: th_client and th_fixture give the end-to-end tests one way to
 * connect (5 s timeout, 200 ms heartbeat) and one way to end a test (the
 * broker must exit cleanly on SIGTERM). Connecting is asynchronous in
 * ZeroMQ, so a failed sl_connect is a broken harness and aborts; a broker
 * that does not start, or does not stop cleanly, is a test's failure and is
 * returned for the test to assert on.
 *
 * The fake broker (th_fake) is a ROUTER socket and one thread per test that
 * decodes with proto/, records scalars into a fixed array (published through
 * an atomic count) and calls the test's handler; handlers answer through
 * th_fake_send and friends. Those run on the fake's thread, where a cmocka
 * assertion cannot jump back to the test, so a message that does not encode
 * aborts instead.
 *
 * Costs: every wait polls (2 ms for processes, 20 ms for the fake's socket);
 * the fake handles one peer, the last one that spoke.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "proc.h"

unsigned th_timeout_s = 60;

/* fatal prints what broke and aborts: for failures of the harness itself. */
void th_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("harness: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

#define MAX_LIVE 64
static pid_t live[MAX_LIVE];

static void reap_live(void)
{
    for (int i = 0; i < MAX_LIVE; i++)
        if (live[i] > 0) {
            kill(live[i], SIGKILL);
            waitpid(live[i], NULL, 0);
            live[i] = 0;
        }
}

static void track(pid_t pid, int add)
{
    static int registered;
    if (!registered) {
        atexit(reap_live);
        registered = 1;
    }
    for (int i = 0; i < MAX_LIVE; i++)
        if (add ? live[i] == 0 : live[i] == pid) {
            live[i] = add ? pid : 0;
            return;
        }
}

uint64_t th_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

unsigned th_seed(void)
{
    static unsigned seed;
    static int done;
    if (!done) {
        const char *s = getenv("SLUICE_SEED");
        seed = s ? (unsigned)strtoul(s, NULL, 10) : (unsigned)time(NULL);
        fprintf(stderr, "# seed %u (set SLUICE_SEED to replay)\n", seed);
        done = 1;
    }
    return seed;
}

const char *th_bin(const char *name)
{
    static char bufs[8][512];
    static int next;
    const char *dir = getenv("SLUICE_BIN");
    char *out = bufs[next++ % 8];
    snprintf(out, sizeof bufs[0], "%s/%s", dir && *dir ? dir : "bin", name);
    return out;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

int th_keep_dirs;

void th_rmrf(const char *path)
{
    if (th_keep_dirs) {
        fprintf(stderr, "# kept %s\n", path);
        return;
    }
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void th_wire_send(void *sock, const proto_msg *m)
{
    proto_wbuf out = {0};
    int rc = proto_encode(m, &out);
    if (rc != SL_OK)
        th_fatal("a %s does not encode: %s", proto_name(m->type), sl_errname(rc));
    if (zmq_send(sock, out.data, out.len, 0) != (int)out.len)
        th_fatal("cannot send a %s: %s", proto_name(m->type), zmq_strerror(zmq_errno()));
    proto_wbuf_free(&out);
}

size_t th_read_file(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
    return n;
}

int th_timeout_arm(void **state)
{
    (void)state;
    alarm(th_timeout_s);
    return 0;
}

int th_timeout_disarm(void **state)
{
    (void)state;
    alarm(0);
    return 0;
}

/* ---- real brokers ---- */

int th_broker_init(th_broker *b, const char *const *extra)
{
    memset(b, 0, sizeof *b);
    strcpy(b->dir, "/tmp/sluice-test-XXXXXX");
    if (!mkdtemp(b->dir))
        return -1;
    snprintf(b->data, sizeof b->data, "%s/data", b->dir);
    snprintf(b->endpoint, sizeof b->endpoint, "ipc://%s/s.sock", b->dir);
    snprintf(b->log, sizeof b->log, "%s/sluiced.log", b->dir);
    for (int i = 0; extra && extra[i] && i < TH_EXTRA_MAX; i++)
        b->extra[i] = extra[i];
    return 0;
}

/* broker_proc is b's process as the supervisor sees it. */
static proc broker_proc(const th_broker *b)
{
    proc p = {.pid = b->pid};
    snprintf(p.name, sizeof p.name, "sluiced");
    snprintf(p.log, sizeof p.log, "%s", b->log);
    return p;
}

int th_broker_start(th_broker *b)
{
    const char *argv[48];
    int n = 0;
    for (int i = 0; b->wrap[i] && i < 15; i++)
        argv[n++] = b->wrap[i];
    argv[n++] = th_bin("sluiced");
    argv[n++] = "--data";
    argv[n++] = b->data;
    argv[n++] = "--listen";
    argv[n++] = b->endpoint;
    for (int i = 0; b->extra[i]; i++)
        argv[n++] = b->extra[i];
    argv[n] = NULL;
    const proc_spec spec = {.argv = argv, .err_path = b->log, .ready = true, .ready_ms = 20000};
    proc p;
    if (proc_start(&p, "sluiced", &spec) != 0)
        return -1; /* reported, its log shown, nothing left running */
    b->pid = p.pid;
    track(p.pid, 1);
    return 0;
}

int th_broker_stop(th_broker *b)
{
    if (b->pid <= 0)
        return -1;
    proc p = broker_proc(b);
    track(b->pid, 0);
    b->pid = 0;
    int st = proc_stop(&p, 20000);
    if (st > 0)
        proc_tail(&p, 1 << 20);
    return st;
}

int th_broker_wait(th_broker *b, int timeout_ms)
{
    if (b->pid <= 0)
        return -1;
    proc p = broker_proc(b);
    int st = proc_wait(&p, timeout_ms);
    if (st == PROC_RUNNING)
        return -1;
    track(b->pid, 0);
    b->pid = 0;
    return st;
}

void th_broker_kill9(th_broker *b)
{
    if (b->pid <= 0)
        return;
    proc p = broker_proc(b);
    track(b->pid, 0);
    proc_kill(&p);
    b->pid = 0;
}

void th_broker_fini(th_broker *b)
{
    if (b->pid > 0)
        th_broker_kill9(b);
    if (b->dir[0])
        th_rmrf(b->dir);
    b->dir[0] = '\0';
}

/* broker_up inits and starts b; on failure nothing is left behind. */
static int broker_up(th_broker *b, const char *const *extra)
{
    if (th_broker_init(b, extra) != 0) {
        fprintf(stderr, "harness: cannot make a temporary directory: %s\n", strerror(errno));
        return -1;
    }
    if (th_broker_start(b) != 0) {
        th_broker_fini(b);
        return -1;
    }
    return 0;
}

void th_broker_preload(th_broker *b, const char *shim, const char *const *env)
{
    char exe[sizeof b->preload];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        th_fatal("readlink /proc/self/exe: %s", strerror(errno));
    exe[n] = '\0';
    char *tests = NULL; /* .../tests/e2e/test_x -> the build directory, above tests/ */
    for (char *p = strstr(exe, "/tests/"); p; p = strstr(p + 1, "/tests/"))
        tests = p;
    if (!tests)
        th_fatal("no build directory above %s", exe);
    *tests = '\0';
    int len = snprintf(b->preload, sizeof b->preload, "LD_PRELOAD=%s/%s", exe, shim);
    if (len < 0 || (size_t)len >= sizeof b->preload)
        th_fatal("shim path too long: %s/%s", exe, shim);
    if (access(b->preload + strlen("LD_PRELOAD="), R_OK) != 0)
        th_fatal("cannot read the shim %s: %s", b->preload + strlen("LD_PRELOAD="), strerror(errno));
    const char *old = getenv("ASAN_OPTIONS");
    snprintf(b->asan, sizeof b->asan, "ASAN_OPTIONS=%s%sverify_asan_link_order=0", old ? old : "",
             old ? ":" : "");
    int i = 0;
    b->wrap[i++] = "env";
    b->wrap[i++] = b->preload;
    for (int j = 0; env && env[j] && i < 14; j++)
        b->wrap[i++] = env[j];
    b->wrap[i++] = b->asan;
    b->wrap[i] = NULL;
}

int th_broker_new(const char *const *extra, th_broker **out)
{
    th_broker *b = calloc(1, sizeof *b);
    *out = NULL;
    if (!b)
        return -1;
    if (broker_up(b, extra) != 0) {
        free(b);
        return -1;
    }
    *out = b;
    return 0;
}

int th_broker_destroy(th_broker **bp)
{
    if (!bp || !*bp)
        return -1;
    int status = th_broker_stop(*bp);
    th_broker_fini(*bp);
    free(*bp);
    *bp = NULL;
    return status;
}

/* ---- clients and the end-to-end fixture ---- */

sl_client *th_client(const th_broker *b, int timeout_ms)
{
    sl_client *c = NULL;
    sl_options o = {.timeout_ms = timeout_ms, .heartbeat_ms = 200};
    int rc = sl_connect(b->endpoint, &o, &c);
    if (rc != SL_OK)
        th_fatal("sl_connect(%s): %s", b->endpoint, sl_errname(rc));
    return c;
}

int th_fixture_start(const char *const *extra, th_fixture **out)
{
    th_fixture *f = calloc(1, sizeof *f);
    *out = NULL;
    if (!f)
        return -1;
    if (broker_up(&f->b, extra) != 0) {
        free(f);
        return -1;
    }
    f->c = th_client(&f->b, 5000);
    *out = f;
    return 0;
}

int th_fixture_finish(th_fixture **fp)
{
    if (!fp || !*fp)
        return -1;
    th_fixture *f = *fp;
    sl_close(&f->c);
    int status = th_broker_stop(&f->b);
    th_broker_fini(&f->b);
    free(f);
    *fp = NULL;
    return status;
}

/* put_failed says which publish of th_put_many failed, and how. */
static int put_failed(sl_client *c, const char *what, unsigned i, unsigned n, int rc)
{
    fprintf(stderr, "harness: th_put_many: %s after %u of %u sent: %s: %s\n", what, i + 1, n,
            sl_errname(rc), sl_last_error(c));
    return rc;
}

int th_put_many(sl_client *c, int level, unsigned n, uint32_t cost)
{
    for (unsigned i = 0; i < n; i++) {
        sl_put m = {.body = "m", .body_len = 1, .level = level, .cost = cost};
        int rc = sl_send_async(c, &m, NULL);
        if (rc != SL_OK)
            return put_failed(c, "sl_send_async", i, n, rc);
        if (sl_send_pending(c) >= 200 || i + 1 == n)
            while (sl_send_pending(c)) {
                sl_confirm cf;
                rc = sl_send_wait(c, 5000, &cf);
                if (rc != SL_OK)
                    return put_failed(c, "sl_send_wait", i, n, rc);
                if (cf.err != SL_OK)
                    return put_failed(c, "a confirmation", i, n, cf.err);
            }
    }
    return SL_OK;
}

/* ---- other programs ---- */

int th_run(const char *const *argv, const char *in_text, char *out, size_t out_len)
{
    int in[2], outp[2], status = 0;
    if (pipe2(in, O_CLOEXEC) || pipe2(outp, O_CLOEXEC))
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(outp[1], 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    close(outp[1]);
    if (in_text) {
        size_t len = strlen(in_text), off = 0;
        while (off < len) {
            ssize_t w = write(in[1], in_text + off, len - off);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
    }
    close(in[1]);
    size_t got = 0;
    uint64_t end = th_now_ms() + 60000;
    struct pollfd pfd = {.fd = outp[0], .events = POLLIN};
    while (th_now_ms() < end) {
        if (poll(&pfd, 1, 200) <= 0)
            continue;
        char tmp[4096];
        ssize_t r = read(outp[0], tmp, sizeof tmp);
        if (r <= 0)
            break;
        size_t room = out_len ? out_len - 1 - got : 0;
        size_t take = (size_t)r < room ? (size_t)r : room;
        if (out && take) {
            memcpy(out + got, tmp, take);
            got += take;
        }
    }
    close(outp[0]);
    if (out && out_len)
        out[got] = '\0';
    proc p = {.pid = pid, .name = "command"};
    status = proc_wait(&p, th_now_ms() < end ? (int)(end - th_now_ms()) : 1);
    if (status == PROC_RUNNING) {
        proc_kill(&p);
        return -1;
    }
    return status < 128 ? status : -1;
}

/* ---- sluice-sink ---- */

int th_sink_start(th_sink *s, const char *dir, const char *const *extra)
{
    memset(s, 0, sizeof *s);
    snprintf(s->log, sizeof s->log, "%s/requests.log", dir);
    snprintf(s->out, sizeof s->out, "%s/sink.out", dir);
    snprintf(s->err, sizeof s->err, "%s/sink.err", dir);
    const char *argv[32];
    int n = 0;
    argv[n++] = th_bin("sluice-sink");
    argv[n++] = "--listen";
    argv[n++] = "127.0.0.1:0";
    argv[n++] = "--log";
    argv[n++] = s->log;
    for (int i = 0; extra && extra[i] && n < 31; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    const proc_spec spec = {.argv = argv,
                            .out_path = s->out,
                            .err_path = s->err,
                            .truncate = true,
                            .ready = true,
                            .ready_ms = 20000,
                            .die_with_parent = true};
    proc p;
    if (proc_start(&p, "sluice-sink", &spec) != 0)
        return -1; /* reported, its stderr shown, nothing left running */
    track(p.pid, 1);
    char err_text[4096];
    th_read_file(s->err, err_text, sizeof err_text);
    static const char at_text[] = "listening on http://127.0.0.1:";
    const char *at = strstr(err_text, at_text);
    unsigned long port = at ? strtoul(at + strlen(at_text), NULL, 10) : 0;
    if (port == 0 || port >= 65536) {
        fprintf(stderr, "harness: sluice-sink said no port; its stderr:\n%s\n", err_text);
        track(p.pid, 0);
        proc_kill(&p);
        return -1;
    }
    s->pid = p.pid;
    s->port = (uint16_t)port;
    snprintf(s->url, sizeof s->url, "http://127.0.0.1:%u/orders", (unsigned)s->port);
    return 0;
}

int th_sink_stop(th_sink *s)
{
    if (s->pid <= 0)
        return -1;
    proc p = {.pid = s->pid, .name = "sluice-sink"};
    snprintf(p.log, sizeof p.log, "%s", s->err);
    track(s->pid, 0);
    s->pid = 0;
    return proc_stop(&p, 20000);
}

int th_loopback_socket(bool listening, uint16_t *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t alen = sizeof a;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0 || (listening && listen(fd, 8) != 0)) {
        fprintf(stderr, "harness: a loopback socket: %s\n", strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}
