/*
 * handle.h - one handler per message type; routes a decoded message to the
 * modules that do the work.
 */
#ifndef SLUICE_HANDLE_H
#define SLUICE_HANDLE_H

#include "bk.h"
#include "net.h"

/* handle_message decodes one received message and runs its handler. Bad
 * input gets a typed ERROR reply and a counter; it never stops the broker.
 * While a commit is out (store_committing), a message whose handling writes
 * the store, or whose reply must follow a write of its own, is left alone:
 * HANDLE_WAIT, and the caller hands it in again once the commit has ended
 * (park.c). Otherwise HANDLE_DONE. */
#define HANDLE_DONE 0
#define HANDLE_WAIT 1
int handle_message(bk *b, const net_in *in);

/* handle_refuse answers a request received during shutdown with
 * SL_ESHUTDOWN (when it carries a seq to answer to). */
void handle_refuse(bk *b, const net_in *in);

#endif /* SLUICE_HANDLE_H */
