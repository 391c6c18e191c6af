/*
 * proto_hdrs.h - a message's headers: the model, its limits and its faults.
 *
 * A message may carry up to PROTO_MAX_HEADERS name/value pairs, in the order
 * given (the order is kept: a header round-trips byte for byte). The rules
 * are declared here once; the codec (decoder and encoder), the broker's
 * publish path, the client library and the HTTP publish route all check
 * headers with proto_hdrs_check, so a fault gets the same code and sentence
 * wherever it is found.
 *
 *   - a name is 1..PROTO_MAX_HEADER_NAME token characters (RFC 9110 tchar:
 *     letters, digits and !#$%&'*+-.^_`|~); names compare case-insensitively
 *     and a name may appear once;
 *   - a value is 0..PROTO_MAX_HEADER_VALUE bytes of UTF-8 text with no
 *     control character but tab, and no space or tab at its start or end
 *     (so it survives an HTTP header line byte for byte);
 *   - names and values together hold at most PROTO_MAX_HEADER_BYTES bytes;
 *   - hop-by-hop names (they describe one HTTP connection, not a message)
 *     and the names `sluice consume --post` sets itself are refused
 *     (PROTO_HDR_REFUSED).
 *
 * On the wire, headers are one field, "headers": a msgpack map from name
 * (str) to value (str). In the store they are a packed block
 * (proto_hdrs_pack): for each pair a byte of name length, the name, a
 * little-endian u16 of value length, the value. Change that block: bump
 * STORE_FORMAT (broker/store/store.h).
 */
#ifndef SLUICE_PROTO_HDRS_H
#define SLUICE_PROTO_HDRS_H

#include <stddef.h>
#include <stdint.h>

#define PROTO_MAX_HEADERS       32
#define PROTO_MAX_HEADER_NAME   64
#define PROTO_MAX_HEADER_VALUE  1024
#define PROTO_MAX_HEADER_BYTES  8192 /* names and values of one message together */
/* the packed block's most bytes: every pair's 3 length bytes besides */
#define PROTO_MAX_HEADER_BLOCK  (PROTO_MAX_HEADER_BYTES + 3 * PROTO_MAX_HEADERS)

/* X(ID, code, sentence): every way a set of headers can be refused. */
#define PROTO_HDR_FAULTS(X)                                                                              \
    X(COUNT,      SL_ETOOBIG, "more than 32 headers")                                                   \
    X(NAME_EMPTY, SL_EINVAL,  "a header name is empty")                                                 \
    X(NAME_LEN,   SL_ETOOBIG, "a header name is longer than 64 bytes")                                  \
    X(NAME_CHAR,  SL_EINVAL,  "a header name holds a character that is not a token character "          \
                              "(letters, digits, !#$%&'*+-.^_`|~)")                                     \
    X(VALUE_LEN,  SL_ETOOBIG, "a header value is longer than 1024 bytes")                               \
    X(VALUE_CHAR, SL_EINVAL,  "a header value holds a control character or invalid UTF-8, or starts "  \
                              "or ends with a space or tab")                                            \
    X(TOTAL,      SL_ETOOBIG, "the headers hold more than 8192 bytes of names and values")              \
    X(DUPLICATE,  SL_EINVAL,  "a header name appears twice (names are case-insensitive)")               \
    X(HOP,        SL_EINVAL,  "a hop-by-hop header name (Connection, Keep-Alive, TE, Trailer, "         \
                              "Transfer-Encoding, Upgrade, Proxy-*) describes a connection, not a message") \
    X(RESERVED,   SL_EINVAL,  "a reserved header name (Host, Content-Length, Expect, Idempotency-Key, " \
                              "X-Sluice-*): the consumer sets it")

typedef enum proto_hdr_fault {
    PROTO_HDR_OK = 0,
#define PROTO_HDR_FAULT_ENUM_(ID, code, text) PROTO_HDR_##ID,
    PROTO_HDR_FAULTS(PROTO_HDR_FAULT_ENUM_)
#undef PROTO_HDR_FAULT_ENUM_
    PROTO_HDR_FAULT_COUNT_
} proto_hdr_fault;

/* X(name, fault, prefix): names refused at publish (compared
 * case-insensitively); prefix 1 refuses every name that starts with it. */
#define PROTO_HDR_REFUSED(X)                   \
    X("Connection",          HOP,      0)      \
    X("Keep-Alive",          HOP,      0)      \
    X("TE",                  HOP,      0)      \
    X("Trailer",             HOP,      0)      \
    X("Transfer-Encoding",   HOP,      0)      \
    X("Upgrade",             HOP,      0)      \
    X("Proxy-",              HOP,      1)      \
    X("Host",                RESERVED, 0)      \
    X("Content-Length",      RESERVED, 0)      \
    X("Expect",              RESERVED, 0)      \
    X("Idempotency-Key",     RESERVED, 0)      \
    X("X-Sluice-",           RESERVED, 1)

/* Headers as a list of pairs, pointing into a decoded buffer, a stored
 * block or the caller's memory. Not NUL-terminated. */
typedef struct proto_hdrs {
    uint32_t n;
    proto_buf name[PROTO_MAX_HEADERS];
    proto_buf value[PROTO_MAX_HEADERS];
} proto_hdrs;

/* proto_hdrs_check checks h against every rule above. Returns SL_OK, or
 * the fault's code (SL_EINVAL or SL_ETOOBIG) with *fault (may be NULL) set
 * to the first fault found and *at (may be NULL) to the pair it is in
 * (h->n for COUNT and TOTAL). */
int proto_hdrs_check(const proto_hdrs *h, proto_hdr_fault *fault, uint32_t *at);

/* proto_hdrs_explain is proto_hdrs_check that also writes a sentence
 * naming the fault and the header it is in ("headers: ... (header
 * 'Connection')") into text (text_len bytes, at least 1) when it fails. */
int proto_hdrs_explain(const proto_hdrs *h, char *text, size_t text_len);

/* proto_hdr_fault_text returns the fault's sentence ("" for PROTO_HDR_OK). */
const char *proto_hdr_fault_text(proto_hdr_fault f);

/* proto_hdr_fault_code returns the fault's error code (SL_OK for
 * PROTO_HDR_OK). */
int proto_hdr_fault_code(proto_hdr_fault f);

/* proto_hdr_name_ok tells whether name[0..len) is a valid header name that
 * may be published (length, token characters, not refused); *fault (may be
 * NULL) names what is wrong. */
int proto_hdr_name_ok(const char *name, size_t len, proto_hdr_fault *fault);

/* proto_hdrs_packed_bytes returns the size of h's packed block (0 for no
 * headers); h must have passed proto_hdrs_check. */
size_t proto_hdrs_packed_bytes(const proto_hdrs *h);

/* proto_hdrs_pack writes h's packed block into buf, which holds
 * proto_hdrs_packed_bytes(h) bytes. */
void proto_hdrs_pack(const proto_hdrs *h, void *buf);

/* proto_hdrs_unpack reads the packed block buf[0..len) into *out, whose
 * names and values then point into buf. Returns SL_OK, or SL_ECORRUPT when
 * the lengths do not account for every byte or there are too many pairs
 * (*out is then empty). */
int proto_hdrs_unpack(const void *buf, size_t len, proto_hdrs *out);

/* proto_hdrs_find returns the index of the pair named name[0..len)
 * (case-insensitively), or -1. */
int proto_hdrs_find(const proto_hdrs *h, const char *name, size_t len);

#endif /* SLUICE_PROTO_HDRS_H */
