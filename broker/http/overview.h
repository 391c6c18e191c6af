/*
 * overview.h - the console's overview as JSON, from a snapshot (overview.c).
 */
#ifndef SLUICE_OVERVIEW_H
#define SLUICE_OVERVIEW_H

#include "series.h"
#include "http_int.h"
#include "snap.h"

typedef struct overview_in {
    const snap *cur;            /* the snapshot shown */
    const snap *prev;           /* the one a second before it, or NULL: for the last picks and 429s a second */
    const series_point *point; /* the point history computed from the two (its rates), or NULL */
    conns_stats conns;          /* the server's connection counters */
    unsigned streams;           /* event streams open */
    int auth;                   /* the API needs a session */
} overview_in;

/* overview_json appends the overview (proto/HTTP.md) to o. Returns SL_OK or
 * SL_ENOMEM. */
int overview_json(const overview_in *in, proto_wbuf *o);

#endif /* SLUICE_OVERVIEW_H */
