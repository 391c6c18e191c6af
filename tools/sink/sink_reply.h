/*
 * sink_reply.h - sluice-sink's HTTP answers, on a libmicrohttpd connection.
 */
#ifndef SLUICE_SINK_REPLY_H
#define SLUICE_SINK_REPLY_H

#include <microhttpd.h>

/* sink_reply queues a response of status with body text of content type
 * type; extra is the value of Retry-After (for a 429) or of Allow (for a
 * 405), else NULL. Returns libmicrohttpd's verdict. */
enum MHD_Result sink_reply(struct MHD_Connection *c, unsigned status, const char *type, const char *text,
                           const char *extra);

/* sink_reply_429 queues a 429 with its Retry-After and, when scope is not
 * NULL, X-Limit-Scope and (when key_text is not NULL) X-Limit-Key. */
enum MHD_Result sink_reply_429(struct MHD_Connection *c, const char *retry, const char *scope,
                               const char *key_text);

/* sink_reply_json queues a JSON answer of status. */
enum MHD_Result sink_reply_json(struct MHD_Connection *c, unsigned status, const char *json);

#endif /* SLUICE_SINK_REPLY_H */
