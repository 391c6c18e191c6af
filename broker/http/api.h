/*
 * api.h - the JSON API under /api/v1/ (api.c; proto/HTTP.md).
 */
#ifndef SLUICE_API_H
#define SLUICE_API_H

#include "http_int.h"

/* api_route answers an API request whose whole body is in (r->path begins
 * with /api/). */
enum MHD_Result api_route(hreq *r);

#endif /* SLUICE_API_H */
