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
 */
#include "bench_curve.h"

#include <stdio.h>
#include <sys/stat.h>

#include "bench_client.h"
#include "bench_core.h"
#include "sluice.h"

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        return bench_core_fail("cannot write %s", path);
    chmod(path, 0600);
    return 0;
}

int bench_curve_start(bench_spawn *s, const char *path, const char *dir)
{
    char server_pub[SL_KEY_BYTES], server_sec[SL_KEY_BYTES], pub[SL_KEY_BYTES], sec[SL_KEY_BYTES];
    char key_path[160], auth_path[160], text[300];
    if (sl_keygen(server_pub, server_sec) != SL_OK || sl_keygen(pub, sec) != SL_OK)
        return bench_core_fail("this ZeroMQ library has no CURVE support");
    snprintf(key_path, sizeof key_path, "%s/broker.key", dir);
    snprintf(auth_path, sizeof auth_path, "%s/auth.txt", dir);
    snprintf(text, sizeof text, "public = %s\nsecret = %s\n", server_pub, server_sec);
    if (write_text(key_path, text) != 0)
        return -1;
    snprintf(text, sizeof text, "bench admin %s\n", pub);
    if (write_text(auth_path, text) != 0)
        return -1;
    const char *const extra[] = {"--curve-secret", key_path, "--auth", auth_path, NULL};
    if (bench_spawn_start_with(s, path, dir, extra, NULL, 0) != 0)
        return -1;
    bench_client_keys_set(server_pub, pub, sec);
    return 0;
}

int bench_curve_stop(bench_spawn *s)
{
    bench_client_keys_set(NULL, NULL, NULL);
    return bench_spawn_stop(s);
}
