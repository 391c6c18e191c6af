/*
 * api.h - the JSON API under /api/v1/ (api.c; proto/HTTP.md).
 */
#ifndef SLUICE_API_H
#define SLUICE_API_H

#include "http_int.h"

/* api_route answers an API request whose whole body is in (r->path begins
 * with /api/). */
enum MHD_Result api_route(hreq *r);

/* api_early runs the checks that need only the headers (the Host, another
 * site, a JSON body, the session and its CSRF token) as soon as they are
 * in: a refused write is answered before its body is read. Returns 1 with
 * *res set when refused, else 0. */
int api_early(hreq *r, enum MHD_Result *res);

#endif /* SLUICE_API_H */
