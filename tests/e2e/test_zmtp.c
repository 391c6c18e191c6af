/*
 * test_zmtp.c - a hand-written ZMTP 3.0 peer against the real sluiced: no
 * libzmq on the client's side, so nothing stops it from claiming whatever it
 * likes in its handshake. It speaks the NULL mechanism and puts a User-Id
 * property (an admin's public key) in its READY, then sends commands.
 *
 * Against a broker with auth off it is served (which shows the peer speaks
 * ZMTP well enough to be believed) and its User-Id is ignored; against a
 * CURVE broker the NULL greeting is refused before any command: nothing it
 * sends is processed, and the broker stays up.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"
#include "proto.h"
#include "sluice.h"

/* ipc_connect opens a UNIX stream socket to an ipc:// endpoint. */
static int ipc_connect(const char *endpoint)
{
    const char *path = endpoint + strlen("ipc://");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    assert_true(strlen(path) < sizeof sa.sun_path);
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

static void send_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n <= 0)
            return; /* the broker may already have hung up: that is checked by reading */
        p += n;
        len -= (size_t)n;
    }
}

/* read_some reads what arrives within timeout_ms into buf (appending at
 * *len); returns 0 on EOF or error, 1 when the time ran out with the
 * connection open. */
static int read_some(int fd, uint8_t *buf, size_t cap, size_t *len, int timeout_ms)
{
    uint64_t until = th_now_ms() + (uint64_t)timeout_ms;
    while (th_now_ms() < until) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        if (*len == cap)
            return 1;
        ssize_t n = recv(fd, buf + *len, cap - *len, 0);
        if (n <= 0)
            return 0;
        *len += (size_t)n;
    }
    return 1;
}

/* read_exact reads len bytes within timeout_ms; 1 when it did, 0 when the
 * connection ended first or the time ran out. */
static int read_exact(int fd, uint8_t *buf, size_t len, int timeout_ms)
{
    size_t got = 0;
    uint64_t until = th_now_ms() + (uint64_t)timeout_ms;
    while (got < len && th_now_ms() < until) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        ssize_t n = recv(fd, buf + got, len - got, 0);
        if (n <= 0)
            return 0;
        got += (size_t)n;
    }
    return got == len;
}

/* greeting_null: signature, version 3.0, mechanism NULL, as-server 0. */
static void send_greeting_null(int fd)
{
    uint8_t g[64] = {0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 3, 0};
    memcpy(g + 12, "NULL", 4);
    send_all(fd, g, sizeof g);
}

static size_t prop(uint8_t *p, const char *name, const char *value)
{
    size_t n = strlen(name), v = strlen(value);
    p[0] = (uint8_t)n;
    memcpy(p + 1, name, n);
    p[1 + n] = 0, p[2 + n] = 0, p[3 + n] = 0, p[4 + n] = (uint8_t)v;
    memcpy(p + 5 + n, value, v);
    return 5 + n + v;
}

/* send_ready_forged sends READY with Socket-Type DEALER and User-Id user_id. */
static void send_ready_forged(int fd, const char *user_id)
{
    uint8_t c[256];
    size_t n = 2;
    c[n++] = 5;
    memcpy(c + n, "READY", 5);
    n += 5;
    n += prop(c + n, "Socket-Type", "DEALER");
    n += prop(c + n, "User-Id", user_id);
    c[0] = 0x04; /* a command, short */
    c[1] = (uint8_t)(n - 2);
    send_all(fd, c, n);
}

/* handshake does what a ZMTP 3.0 peer does with the NULL mechanism: its
 * greeting, the broker's (whose mechanism lands in mech, 20 bytes), then
 * its READY with a forged User-Id. Returns 1 when the broker's greeting
 * came. */
static int handshake(int fd, const char *user_id, char *mech)
{
    uint8_t g[64];
    send_greeting_null(fd);
    if (!read_exact(fd, g, sizeof g, 5000))
        return 0;
    memcpy(mech, g + 12, 20);
    mech[20] = '\0';
    send_ready_forged(fd, user_id);
    return 1;
}

/* send_msg sends m as one ZMTP message frame. */
static void send_msg(int fd, const proto_msg *m)
{
    proto_wbuf out = {0};
    assert_int_equal(proto_encode(m, &out), SL_OK);
    assert_true(out.len < 256);
    uint8_t hdr[2] = {0x00, (uint8_t)out.len}; /* a message, short, last */
    send_all(fd, hdr, 2);
    send_all(fd, out.data, out.len);
    proto_wbuf_free(&out);
}

/* send_commands sends what an admin would: PUT, a pool resize, STATS. */
static void send_commands(int fd)
{
    proto_msg m;
    proto_init(&m, PROTO_PUT);
    proto_set(&m, seq, 1);
    proto_set(&m, level, 2);
    proto_set(&m, body, ((proto_buf){"forged", 6}));
    send_msg(fd, &m);
    proto_init(&m, PROTO_ADMIN);
    proto_set(&m, seq, 2);
    proto_set_str(&m, PROTO_F_cmd, "pool.resize", strlen("pool.resize"));
    proto_set_str(&m, PROTO_F_pool, "forged", 6);
    proto_set(&m, size, 7);
    send_msg(fd, &m);
    proto_init(&m, PROTO_STATS);
    proto_set(&m, seq, 3);
    send_msg(fd, &m);
}

/* With auth off a NULL peer is served: the PUT is stored, so the peer is a
 * real ZMTP client; its User-Id changes nothing. */
static void a_hand_written_null_peer_is_served_without_auth(void **state)
{
    (void)state;
    th_fixture *f = NULL;
    assert_int_equal(th_fixture_start(NULL, &f), 0);
    char admin_pub[SL_KEY_BYTES], admin_sec[SL_KEY_BYTES];
    assert_int_equal(sl_keygen(admin_pub, admin_sec), SL_OK);
    int fd = ipc_connect(f->b.endpoint);
    char mech[21];
    assert_true(handshake(fd, admin_pub, mech));
    assert_string_equal(mech, "NULL");
    static uint8_t in[1 << 16];
    size_t len = 0;
    uint64_t until = th_now_ms() + 5000; /* the broker's READY, before any message */
    while (!memmem(in, len, "READY", 5) && th_now_ms() < until)
        assert_int_equal(read_some(fd, in, sizeof in, &len, 100), 1);
    send_commands(fd);
    assert_int_equal(read_some(fd, in, sizeof in, &len, 1500), 1); /* still connected */
    assert_true(len > 64);
    assert_non_null(memmem(in, len, "READY", 5));
    assert_non_null(memmem(in, len, "PUT_OK", 6));
    close(fd);
    sl_stats st;
    assert_int_equal(sl_stats_get(f->c, &st), SL_OK);
    assert_int_equal(st.level[2].enqueued, 1);
    assert_int_equal(th_fixture_finish(&f), 0);
}

/* Against a CURVE broker the NULL greeting is refused before any command:
 * the broker never says READY, hangs up, processes none of the commands
 * (nothing stored, no pool made, not even a refusal counted), and serves a
 * real admin afterwards. */
static void a_forged_user_id_over_null_gets_nothing_from_a_curve_broker(void **state)
{
    (void)state;
    th_broker b;
    assert_int_equal(th_broker_init(&b, NULL), 0);
    char srv_pub[SL_KEY_BYTES], srv_sec[SL_KEY_BYTES], adm_pub[SL_KEY_BYTES], adm_sec[SL_KEY_BYTES];
    assert_int_equal(sl_keygen(srv_pub, srv_sec), SL_OK);
    assert_int_equal(sl_keygen(adm_pub, adm_sec), SL_OK);
    char key_path[300], auth_path[300], text[300];
    snprintf(key_path, sizeof key_path, "%s/broker.key", b.dir);
    snprintf(auth_path, sizeof auth_path, "%s/auth.txt", b.dir);
    FILE *fp = fopen(key_path, "w");
    assert_non_null(fp);
    fprintf(fp, "public = %s\nsecret = %s\n", srv_pub, srv_sec);
    fclose(fp);
    chmod(key_path, 0600);
    fp = fopen(auth_path, "w");
    assert_non_null(fp);
    snprintf(text, sizeof text, "ops admin %s\n", adm_pub);
    fputs(text, fp);
    fclose(fp);
    const char *extra[] = {"--curve-secret", key_path, "--auth", auth_path, NULL};
    for (int i = 0; extra[i]; i++)
        b.extra[i] = extra[i];
    assert_int_equal(th_broker_start(&b), 0);

    for (int attempt = 0; attempt < 3; attempt++) {
        int fd = ipc_connect(b.endpoint);
        char mech[21] = "";
        if (handshake(fd, adm_pub, mech)) /* the broker may hang up at once */
            assert_string_equal(mech, "CURVE");
        send_commands(fd); /* regardless, as a hostile peer would */
        static uint8_t in[1 << 16];
        size_t len = 0;
        assert_int_equal(read_some(fd, in, sizeof in, &len, 5000), 0); /* hung up on */
        assert_null(memmem(in, len, "READY", 5));
        assert_null(memmem(in, len, "PUT_OK", 6));
        close(fd);
    }
    assert_int_equal(th_broker_wait(&b, 0), -1); /* still up */
    sl_options o = {.timeout_ms = 5000, .server_key = srv_pub, .public_key = adm_pub, .secret_key = adm_sec};
    sl_client *c = NULL;
    assert_int_equal(sl_connect(b.endpoint, &o, &c), SL_OK);
    sl_stats st;
    assert_int_equal(sl_stats_get(c, &st), SL_OK);
    assert_int_equal(st.auth_refused, 0); /* not one command reached the check */
    for (unsigned l = 0; l < st.nlevels; l++)
        assert_int_equal(st.level[l].enqueued, 0);
    static sl_pool_info pools[SL_MAX_POOLS];
    unsigned n = 0;
    assert_int_equal(sl_pool_list(c, pools, &n), SL_OK);
    for (unsigned i = 0; i < n; i++)
        assert_string_not_equal(pools[i].name, "forged");
    sl_close(&c);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_hand_written_null_peer_is_served_without_auth, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(a_forged_user_id_over_null_gets_nothing_from_a_curve_broker,
                                        th_timeout_arm, th_timeout_disarm),
    };
    th_seed();
    return cmocka_run_group_tests_name("zmtp", tests, NULL, NULL);
}
