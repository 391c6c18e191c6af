/*
 * handle.h - one handler per message type; routes a decoded message to the
 * modules that do the work.
 */
#ifndef SLUICE_HANDLE_H
#define SLUICE_HANDLE_H

#include "bk.h"
#include "net.h"

/* handle_message decodes one received message and runs its handler. Bad
 * input gets a typed ERROR reply and a counter; it never stops the broker. */
void handle_message(bk *b, const net_in *in);

/* handle_refuse answers a request received during shutdown with
 * SL_ESHUTDOWN (when it carries a seq to answer to). */
void handle_refuse(bk *b, const net_in *in);

#endif /* SLUICE_HANDLE_H */
