/*
 * proto_stream.h - the stream transport's framing: protocol messages over a
 * plain byte stream (TCP or a Unix socket), beside ZeroMQ.
 *
 * Over ZeroMQ a message is one frame, and ZeroMQ keeps the frames apart.
 * Over a plain stream the same message is a 4-byte big-endian length and
 * that many bytes of the same msgpack map: nothing else differs, so
 * proto_encode and proto_decode serve both. A connection opens with the
 * client's 4-byte greeting PROTO_STREAM_MAGIC (its last byte is the framing's
 * version), so that anything else that connects (a ZeroMQ peer, an HTTP
 * client) is told apart at once, before any length is believed.
 *
 * Why a second transport: each ZeroMQ message crosses an I/O thread at
 * each end, so a request and its reply cost six thread wake-ups where a
 * plain socket costs two; for a producer that waits for each confirmation
 * that is most of what a publish costs beside the disk's flush. The stream
 * carries no CURVE: a broker with --auth refuses to open one.
 *
 * Pure: no I/O, no allocation.
 */
#ifndef SLUICE_PROTO_STREAM_H
#define SLUICE_PROTO_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PROTO_STREAM_MAGIC     "SLS\x01" /* a client's first 4 bytes */
#define PROTO_STREAM_MAGIC_LEN 4
#define PROTO_STREAM_HDR       4         /* the length before each message */

/* proto_stream_put_len writes len as the 4-byte header at p. */
static inline void proto_stream_put_len(unsigned char *p, uint32_t len)
{
    p[0] = (unsigned char)(len >> 24);
    p[1] = (unsigned char)(len >> 16);
    p[2] = (unsigned char)(len >> 8);
    p[3] = (unsigned char)len;
}

/* proto_stream_frame looks at buf[0..len), which starts at a header: 1 when
 * a whole message is there (*body_len its length, the body at buf + 4), 0
 * when more bytes are needed, -1 when the header announces more than max
 * bytes (*body_len says how many): the stream cannot be read on. */
static inline int proto_stream_frame(const unsigned char *buf, size_t len, size_t max, size_t *body_len)
{
    if (len < PROTO_STREAM_HDR)
        return 0;
    *body_len = (size_t)buf[0] << 24 | (size_t)buf[1] << 16 | (size_t)buf[2] << 8 | (size_t)buf[3];
    if (*body_len > max)
        return -1;
    return len - PROTO_STREAM_HDR >= *body_len;
}

/* proto_stream_hostport splits HOST:PORT (the part of a tcp:// endpoint
 * after the scheme; [v6]:PORT for IPv6) into host (a NUL-terminated copy,
 * without brackets, at most cap - 1 bytes) and *port (pointing into
 * hostport). 0, or -1 when there is no colon, no host, no port or the host
 * does not fit. */
static inline int proto_stream_hostport(const char *hostport, char *host, size_t cap, const char **port)
{
    const char *colon = strrchr(hostport, ':');
    size_t len = colon ? (size_t)(colon - hostport) : 0;
    if (!colon || !len || len >= cap || !colon[1])
        return -1;
    if (hostport[0] == '[' && len >= 2 && hostport[len - 1] == ']')
        memcpy(host, hostport + 1, len -= 2);
    else
        memcpy(host, hostport, len);
    host[len] = '\0';
    *port = colon + 1;
    return 0;
}

#endif /* SLUICE_PROTO_STREAM_H */
