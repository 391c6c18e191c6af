/*
 * ha_wire.h - the replication stream's messages, between a primary
 * (ha_prim.c) and its standby (ha_stby.c), over repl_link.c.
 *
 * Each message is a header frame of HA_WIRE_HDR bytes, little-endian:
 *   u8 type, 7 bytes zero, u64 epoch, u64 seq, u64 sum, u64 session, then
 *   the node's name (a HELLO) up to PROTO_MAX_NAME bytes;
 * a RECORD has the record's bytes (the write-ahead log's record, opaque
 * here: store_repl.c) as a second frame.
 *
 *   HELLO  standby -> primary: epoch = the highest it has seen, seq = the
 *          last record durable in its store, sum = the epoch that record
 *          was made in, session = a random number per
 *          connection (a new one: stream again from seq + 1); sent on
 *          connecting and every HA_HELLO_MS as a keepalive.
 *   RECORD primary -> standby: the record seq of epoch; sum = the running
 *          CRC-32C of the session's records up to this one.
 *   ACK    standby -> primary: seq and everything before it are durable in
 *          the standby's store; sum its own running CRC-32C up to seq.
 *   SWITCH primary -> standby: Redis now names the standby leader (a
 *          switchover): ask it at once instead of at the next TTL/3.
 *   POS    primary -> standby, in answer to each keepalive HELLO of the
 *          session it streams to: seq = the primary's last record, sum =
 *          how long (ms) its oldest record this standby has not yet
 *          acknowledged has waited (0: none): the standby's own lag, which
 *          only the primary knows.
 *   FAR    primary -> standby: the records after seq are no longer held
 *          (or the standby's store diverged): the stream cannot resume; a
 *          copy of the primary's store follows (the COPY messages).
 *
 * A copy of the primary's store (ha_prim.c sends, ha_recv.c receives), for
 * the session that was told FAR:
 *   COPY_BEGIN primary -> standby: seq = the copy's size in bytes.
 *   COPY_CHUNK primary -> standby: seq = the chunk's offset in the copy,
 *          sum = the CRC-32C of the chunk; its bytes as a second frame, at
 *          most HA_COPY_CHUNK of them.
 *   COPY_END   primary -> standby: seq = the size, sum = the CRC-32C of the
 *          whole copy.
 *   COPY_ACK   standby -> primary: seq = the bytes written so far (the
 *          primary keeps at most HA_COPY_WINDOW beyond them in flight);
 *          after COPY_END, seq = the size and sum = the checksum it found,
 *          once the copy is flushed and checked (loaded at its restart).
 * Every COPY message carries the primary's epoch; the standby drops one of
 * an epoch below the highest it has seen, or of another session.
 *
 * Change a layout here: bump HA_WIRE_VERSION (sent in the type byte's high
 * bits is not done: both nodes of a group run the same build).
 */
#ifndef SLUICE_HA_WIRE_H
#define SLUICE_HA_WIRE_H

#include <stdint.h>
#include <string.h>

#include "byteorder.h"
#include "proto.h"

#define HA_WIRE_HDR 40u
#define HA_WIRE_MAX (HA_WIRE_HDR + PROTO_MAX_NAME)
#define HA_HELLO_MS 500u
#define HA_COPY_CHUNK (256u * 1024u)
#define HA_COPY_WINDOW (8u * HA_COPY_CHUNK)

enum {
    HA_HELLO = 'H', HA_RECORD = 'R', HA_ACK = 'A', HA_FAR = 'F', HA_SWITCH = 'S', HA_POS = 'P',
    HA_COPY_BEGIN = 'B', HA_COPY_CHUNK_T = 'C', HA_COPY_END = 'E', HA_COPY_ACK = 'K'
};

typedef struct ha_msg {
    int type;
    uint64_t epoch, seq, sum, session;
    char name[PROTO_MAX_NAME + 1];
} ha_msg;

/* ha_wire_encode writes m into buf (HA_WIRE_MAX bytes); returns its length. */
static inline size_t ha_wire_encode(const ha_msg *m, unsigned char *buf)
{
    memset(buf, 0, HA_WIRE_HDR);
    buf[0] = (unsigned char)m->type;
    put_le64(buf + 8, m->epoch);
    put_le64(buf + 16, m->seq);
    put_le64(buf + 24, m->sum);
    put_le64(buf + 32, m->session);
    size_t n = strnlen(m->name, PROTO_MAX_NAME);
    memcpy(buf + HA_WIRE_HDR, m->name, n);
    return HA_WIRE_HDR + n;
}

/* ha_wire_decode reads a header frame: 0, or -1 when it is not one. */
static inline int ha_wire_decode(const unsigned char *buf, size_t len, ha_msg *m)
{
    if (len < HA_WIRE_HDR || len > HA_WIRE_MAX)
        return -1;
    m->type = buf[0];
    m->epoch = get_le64(buf + 8);
    m->seq = get_le64(buf + 16);
    m->sum = get_le64(buf + 24);
    m->session = get_le64(buf + 32);
    memcpy(m->name, buf + HA_WIRE_HDR, len - HA_WIRE_HDR);
    m->name[len - HA_WIRE_HDR] = '\0';
    switch (m->type) {
    case HA_HELLO: case HA_RECORD: case HA_ACK: case HA_FAR: case HA_SWITCH: case HA_POS:
    case HA_COPY_BEGIN: case HA_COPY_CHUNK_T: case HA_COPY_END: case HA_COPY_ACK:
        return 0;
    default:
        return -1;
    }
}

#endif /* SLUICE_HA_WIRE_H */
