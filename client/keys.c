/*
 * keys.c - CURVE key pairs and key files for the client library.
 *
 * sl_keygen asks libzmq for a key pair (Z85); sl_key_read reads the files
 * `sluice keygen` writes, through proto's one reader of the format
 * (proto_key_parse), which the broker uses for --curve-secret too. Nothing
 * here touches a socket; a key file is at most 4 KiB.
 */
#include "sluice.h"

#include <errno.h>
#include <stdio.h>
#include <zmq.h>

#include "proto.h"

int sl_keygen(char *pub, char *sec)
{
    if (!pub || !sec || !zmq_has("curve") || zmq_curve_keypair(pub, sec) != 0)
        return SL_EINVAL;
    return SL_OK;
}

int sl_key_read(const char *path, char *pub, char *sec)
{
    char text[4096];
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return SL_ENOTFOUND;
    size_t n = fread(text, 1, sizeof text - 1, f);
    int failed = ferror(f) || n == sizeof text - 1;
    fclose(f);
    text[n] = '\0';
    if (failed)
        return SL_EINVAL;
    return proto_key_parse(text, pub, sec);
}
