/*
 * route.h - the JSON API's admin routes, derived from proto's admin command
 * list (route.c).
 */
#ifndef SLUICE_ROUTE_H
#define SLUICE_ROUTE_H

#include <stddef.h>

#include "proto.h"

/* A path matched to an admin command. */
typedef struct route_hit {
    proto_cmd cmd;
    int get;                      /* a read (GET); else a change (POST with a JSON body) */
    proto_field key;              /* the field the path names, or PROTO_F_COUNT_ */
    char key_text[PROTO_MAX_TAG * 3 + 1]; /* its value, unescaped */
    size_t key_len;
} route_hit;

/* route_of matches path (after /api/v1, e.g. "/levels/high/pause") to an
 * admin command. Returns 1 and fills hit, or 0. Commands that are not
 * served over HTTP (web.login: a link is minted over ZeroMQ) never match. */
int route_of(const char *path, route_hit *hit);

/* route_path writes command c's path template ("/levels/{level}/pause")
 * into buf and tells whether it is a read (1: GET) or not (0: POST);
 * -1 when c is not served over HTTP. */
int route_path(proto_cmd c, char *buf, size_t len);

/* route_unescape percent-decodes s[0..len) into out (cap bytes; the result
 * is never longer), '+' as a space when plus. Returns the length, or -1
 * for a malformed escape or an escaped NUL. */
long route_unescape(const char *s, size_t len, char *out, size_t cap, int plus);

#endif /* SLUICE_ROUTE_H */
