/*
 * bench_curve.c - the CURVE broker of the bench's encrypted rows.
 *
 * The same rows as the plaintext enqueue and drain rows run a second time
 * against a broker started with --curve-secret and --auth, so the table
 * shows both and what CURVE (Curve25519 handshake, then an XSalsa20-Poly1305
 * box per frame) and the per-command role check cost. The keys are made
 * fresh for the run (sl_keygen) and live in the run's directory, which the
 * driver removes at the end. One principal, role admin, serves every client
 * of the bench.
 *
 * The 1 x 100 row's ratio to plaintext is taken in paired turns as well
 * (row_curve_window_pairs): the plain row runs minutes before this pass,
 * and a CPU-bound row moves by a tenth or more with the machine's load in
 * that time. Here two fresh brokers of their own, one with CURVE and one
 * without, run side by side (the pass's CURVE broker has served the
 * drain's backlog by then, and a store that has held 300,000 messages
 * takes the 1 x 100 about a tenth slower than a fresh one), the two take
 * turns of a fixed count (a quarter of the drain's backlog, at least
 * 20,000), which goes first turning about, and the row is the median of
 * the pairs' ratios. Costs: 2 x CURVE_PAIRS turns, CURVE_PAIRS x the count
 * left in each broker's backlog.
 */
#include "bench_curve.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "bench_args.h"
#include "bench_client.h"
#include "bench_core.h"
#include "bench_run.h"
#include "sluice.h"

#define CURVE_PAIR_MSGS_MIN 20000
#define CURVE_PAIR_MSGS_QUICK 2000

/* The bench's keys, kept for the paired turns, which switch between
 * CURVE and plaintext. */
static char server_pub[SL_KEY_BYTES], pub[SL_KEY_BYTES], sec[SL_KEY_BYTES];
static char server_sec[SL_KEY_BYTES]; /* the brokers' (spawn_curve writes it into each one's directory) */

static void keys_use(int curve)
{
    if (curve)
        bench_client_keys_set(server_pub, pub, sec);
    else
        bench_client_keys_set(NULL, NULL, NULL);
}

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        return bench_core_fail("cannot write %s", path);
    chmod(path, 0600);
    return 0;
}

/* spawn_curve starts a CURVE broker in dir with the run's keys: its key
 * pair, and an auth file admitting the bench's key as admin. */
static int spawn_curve(bench_spawn *s, const char *path, const char *dir)
{
    char key_path[160], auth_path[160], text[300];
    snprintf(key_path, sizeof key_path, "%s/broker.key", dir);
    snprintf(auth_path, sizeof auth_path, "%s/auth.txt", dir);
    snprintf(text, sizeof text, "public = %s\nsecret = %s\n", server_pub, server_sec);
    if (write_text(key_path, text) != 0)
        return -1;
    snprintf(text, sizeof text, "bench admin %s\n", pub);
    if (write_text(auth_path, text) != 0)
        return -1;
    const char *const extra[] = {"--curve-secret", key_path, "--auth", auth_path, NULL};
    return bench_spawn_start_with(s, path, dir, extra, NULL, 0);
}

int bench_curve_start(bench_spawn *s, const char *path, const char *dir)
{
    if (sl_keygen(server_pub, server_sec) != SL_OK || sl_keygen(pub, sec) != SL_OK)
        return bench_core_fail("this ZeroMQ library has no CURVE support");
    if (spawn_curve(s, path, dir) != 0)
        return -1;
    keys_use(1);
    return 0;
}

int bench_curve_stop(bench_spawn *s)
{
    keys_use(0);
    return bench_spawn_stop(s);
}

int row_curve_window_pairs(bench *b)
{
    if (!b->curve || !b->sluiced || b->slow)
        return 0;
    char dir[96], cdir[96];
    snprintf(dir, sizeof dir, "%s/curve-plain", b->dir);
    snprintf(cdir, sizeof cdir, "%s/curve-pairs", b->dir);
    if ((mkdir(dir, 0700) != 0 && errno != EEXIST) || (mkdir(cdir, 0700) != 0 && errno != EEXIST))
        return bench_core_fail("cannot create %s and %s: %s", dir, cdir, strerror(errno));
    bench_spawn plain, curved;
    keys_use(0);
    int rc = bench_spawn_start(&plain, b->sluiced, dir);
    keys_use(1);
    if (rc != 0)
        return -1;
    if (spawn_curve(&curved, b->sluiced, cdir) != 0) {
        bench_spawn_stop(&plain);
        return -1;
    }
    uint64_t msgs = b->quick ? CURVE_PAIR_MSGS_QUICK
                    : b->drain_msgs / 4 < CURVE_PAIR_MSGS_MIN ? CURVE_PAIR_MSGS_MIN : b->drain_msgs / 4;
    bench_core_progress("1 x %d enqueue, CURVE and without, %d paired turns of %" PRIu64 " messages", WINDOW_MSGS,
                        CURVE_PAIRS, msgs);
    double r[CURVE_PAIRS];
    int n = 0;
    for (int i = 0; i < CURVE_PAIRS && rc == 0 && !bench_core_stopping(); i++) {
        double rate[2] = {0, 0}; /* without CURVE, with */
        for (int k = 0; k < 2 && rc == 0; k++) {
            int curve = (i + k) % 2;
            keys_use(curve);
            rc = bench_client_window_turn(curve ? curved.endpoint : plain.endpoint, WINDOW_MSGS, msgs, NULL, 0,
                                          0, &rate[curve]);
        }
        keys_use(1);
        if (rc == 0 && rate[0] > 0 && rate[1] > 0)
            r[n++] = rate[1] / rate[0];
    }
    if (bench_spawn_stop(&plain) != 0 || bench_spawn_stop(&curved) != 0)
        rc = -1;
    if (rc == 0 && n == CURVE_PAIRS)
        b->curve_window_pairs_ratio = bench_core_median(r, n);
    return rc;
}
