/*
 * live.h - the server's ticker, the shared overview, the history and the
 * event streams (live.c).
 */
#ifndef SLUICE_LIVE_H
#define SLUICE_LIVE_H

#include "http_int.h"

typedef struct live live;

/* live_open allocates h->live (the history's rings among it). SL_OK or
 * SL_ENOMEM. */
int live_open(http *h);

/* live_start starts the ticker (once the daemon runs). SL_OK or SL_ENOMEM. */
int live_start(http *h);

/* live_kick wakes the ticker now (the loop's first snapshot is in). */
void live_kick(http *h);

/* live_stop stops the ticker, ends the calls to the loop and every event
 * stream, and waits (bounded) until libmicrohttpd has let go of them. */
void live_stop(http *h);

/* live_close frees h->live (stopping first if need be). */
void live_close(http *h);

/* live_overview returns a copy (malloc'd, NUL-terminated; *len its length)
 * of the last overview (before the ticker's first, one made now from the
 * last snapshot, without rates), or NULL when the loop has published no
 * snapshot yet, or out of memory. */
char *live_overview(http *h, size_t *len);

/* live_history appends the history (the 1 s ring, or the 1 min ring when
 * minutes) as JSON to o. SL_OK or SL_ENOMEM. */
int live_history(http *h, int minutes, proto_wbuf *o);

/* live_stream answers r with an event stream of the overview. */
enum MHD_Result live_stream(hreq *r);

#endif /* SLUICE_LIVE_H */
