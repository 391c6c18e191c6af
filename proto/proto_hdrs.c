/*
 * proto_hdrs.c - the rules of a message's headers, and their stored block.
 *
 * Owns the checks every publish path runs (proto_hdrs_check, from the
 * fault list and the refused names in proto_hdrs.h) and the packed block the
 * store keeps after a record's body. Pure: no I/O, no state, no allocation;
 * every proto_buf it fills points into memory the caller owns.
 *
 * Why a block of its own and not the wire's msgpack map: the store never
 * includes msgpack.h, a record must be checked by its lengths alone
 * (rec.c), and delivery unpacks the block into proto_hdrs without a zone or
 * a copy; the encoder then packs the map from those pointers.
 *
 * Cost: proto_hdrs_check is O(bytes + n^2) for the duplicate check, with n
 * at most 32 (under 500 name comparisons); pack and unpack are O(bytes).
 */
#include "proto.h"

#include <stdio.h>
#include <string.h>

typedef struct fault_def {
    int code;
    const char *text;
} fault_def;

static const fault_def faults[PROTO_HDR_FAULT_COUNT_] = {
    [PROTO_HDR_OK] = {SL_OK, ""},
#define FAULT_DEF_(ID, code, text) [PROTO_HDR_##ID] = {code, text},
    PROTO_HDR_FAULTS(FAULT_DEF_)
#undef FAULT_DEF_
};

typedef struct refused_def {
    const char *name;
    uint8_t len;
    uint8_t fault;
    uint8_t prefix;
} refused_def;

static const refused_def refused[] = {
#define REFUSED_DEF_(name, fault, prefix) {name, sizeof(name) - 1, PROTO_HDR_##fault, prefix},
    PROTO_HDR_REFUSED(REFUSED_DEF_)
#undef REFUSED_DEF_
};

const char *proto_hdr_fault_text(proto_hdr_fault f)
{
    return (unsigned)f < PROTO_HDR_FAULT_COUNT_ ? faults[f].text : "?";
}

int proto_hdr_fault_code(proto_hdr_fault f)
{
    return (unsigned)f < PROTO_HDR_FAULT_COUNT_ ? faults[f].code : SL_EINVAL;
}

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

static int same_name(const char *a, size_t alen, const char *b, size_t blen)
{
    if (alen != blen)
        return 0;
    for (size_t i = 0; i < alen; i++)
        if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
            return 0;
    return 1;
}

/* tchar[c] is 1 for the token characters of RFC 9110: a header name's. */
static const unsigned char tchar[256] = {
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1, ['+'] = 1, ['-'] = 1,
    ['.'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1, ['~'] = 1,
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1,
    ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1,
    ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1,
    ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1,
    ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

int proto_hdr_name_ok(const char *name, size_t len, proto_hdr_fault *fault)
{
    proto_hdr_fault f = PROTO_HDR_OK;
    if (len == 0)
        f = PROTO_HDR_NAME_EMPTY;
    else if (len > PROTO_MAX_HEADER_NAME)
        f = PROTO_HDR_NAME_LEN;
    for (size_t i = 0; f == PROTO_HDR_OK && i < len; i++)
        if (!tchar[(unsigned char)name[i]])
            f = PROTO_HDR_NAME_CHAR;
    for (size_t i = 0; f == PROTO_HDR_OK && i < sizeof refused / sizeof refused[0]; i++)
        if ((refused[i].prefix ? len >= refused[i].len : len == refused[i].len) && /* most differ here, */
            lower((unsigned char)name[0]) == lower((unsigned char)refused[i].name[0]) && /* or here */
            same_name(name, refused[i].len, refused[i].name, refused[i].len))
            f = (proto_hdr_fault)refused[i].fault;
    if (fault)
        *fault = f;
    return f == PROTO_HDR_OK;
}

/* plain8 tells whether none of the 8 bytes at p is a control character,
 * DEL or above 0x7f: the common case, 8 bytes at a time (a value is
 * checked by the client, and again by the encoder and the broker). */
static int plain8(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    uint64_t below_space = (w - ones * 0x20) & ~w & highs;    /* some byte < 0x20 (or >= 0x80) */
    uint64_t del = ((w ^ (ones * 0x7f)) - ones) & ~(w ^ (ones * 0x7f)) & highs; /* some byte == 0x7f */
    return !(below_space | del | (w & highs));
}

/* value_ok: text without control characters but tab, no space or tab at
 * either end; the UTF-8 check only for a value that is not all ASCII. */
static int value_ok(const char *v, size_t len)
{
    const unsigned char *p = (const unsigned char *)v;
    if (len && (p[0] == ' ' || p[0] == '\t' || p[len - 1] == ' ' || p[len - 1] == '\t'))
        return 0;
    size_t i = 0;
    while (i + 8 <= len && plain8(p + i))
        i += 8;
    unsigned high = 0;
    for (; i < len; i++) {
        unsigned char c = p[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return 0;
        high |= c;
    }
    return !(high & 0x80) || proto_utf8_prefix(v, (uint32_t)len) == len;
}

int proto_hdrs_check(const proto_hdrs *h, proto_hdr_fault *fault, uint32_t *at)
{
    proto_hdr_fault f = PROTO_HDR_OK;
    uint32_t i = 0;
    size_t total = 0;
    if (h->n > PROTO_MAX_HEADERS) {
        f = PROTO_HDR_COUNT;
        i = h->n;
    }
    for (; f == PROTO_HDR_OK && i < h->n; i++) {
        const proto_buf *nm = &h->name[i], *v = &h->value[i];
        if (!proto_hdr_name_ok(nm->ptr, nm->len, &f))
            break;
        if (v->len > PROTO_MAX_HEADER_VALUE) {
            f = PROTO_HDR_VALUE_LEN;
            break;
        }
        if (!value_ok(v->ptr, v->len)) {
            f = PROTO_HDR_VALUE_CHAR;
            break;
        }
        for (uint32_t j = 0; j < i && f == PROTO_HDR_OK; j++)
            if (same_name(nm->ptr, nm->len, h->name[j].ptr, h->name[j].len))
                f = PROTO_HDR_DUPLICATE;
        if (f)
            break;
        total += nm->len + v->len;
    }
    if (f == PROTO_HDR_OK && total > PROTO_MAX_HEADER_BYTES)
        f = PROTO_HDR_TOTAL; /* i == h->n */
    if (fault)
        *fault = f;
    if (at)
        *at = i;
    return faults[f].code;
}

int proto_hdrs_explain(const proto_hdrs *h, char *text, size_t text_len)
{
    proto_hdr_fault f;
    uint32_t at;
    int rc = proto_hdrs_check(h, &f, &at);
    if (rc == SL_OK)
        return rc;
    if (at < h->n) {
        uint32_t len = proto_utf8_prefix(h->name[at].ptr, h->name[at].len > 64 ? 64 : h->name[at].len);
        snprintf(text, text_len, "headers: %s (header '%.*s')", faults[f].text, (int)len, h->name[at].ptr);
    } else {
        snprintf(text, text_len, "headers: %s", faults[f].text);
    }
    return rc;
}

size_t proto_hdrs_packed_bytes(const proto_hdrs *h)
{
    size_t n = 0;
    for (uint32_t i = 0; i < h->n; i++)
        n += 3 + h->name[i].len + h->value[i].len;
    return n;
}

void proto_hdrs_pack(const proto_hdrs *h, void *buf)
{
    unsigned char *p = buf;
    for (uint32_t i = 0; i < h->n; i++) {
        *p++ = (unsigned char)h->name[i].len;
        memcpy(p, h->name[i].ptr, h->name[i].len);
        p += h->name[i].len;
        *p++ = (unsigned char)(h->value[i].len & 0xff);
        *p++ = (unsigned char)(h->value[i].len >> 8);
        if (h->value[i].len) /* (an empty value may come as NULL) */
            memcpy(p, h->value[i].ptr, h->value[i].len);
        p += h->value[i].len;
    }
}

int proto_hdrs_unpack(const void *buf, size_t len, proto_hdrs *out)
{
    const unsigned char *p = buf;
    size_t off = 0;
    out->n = 0;
    while (off < len) {
        if (out->n == PROTO_MAX_HEADERS)
            goto corrupt;
        size_t nlen = p[off];
        if (len - off < 1 + nlen + 2)
            goto corrupt;
        size_t vlen = p[off + 1 + nlen] | (size_t)p[off + 2 + nlen] << 8;
        if (len - off - 3 - nlen < vlen)
            goto corrupt;
        out->name[out->n] = (proto_buf){(const char *)p + off + 1, (uint32_t)nlen};
        out->value[out->n] = (proto_buf){(const char *)p + off + 3 + nlen, (uint32_t)vlen};
        out->n++;
        off += 3 + nlen + vlen;
    }
    return SL_OK;
corrupt:
    out->n = 0;
    return SL_ECORRUPT;
}

int proto_hdrs_find(const proto_hdrs *h, const char *name, size_t len)
{
    for (uint32_t i = 0; i < h->n; i++)
        if (same_name(h->name[i].ptr, h->name[i].len, name, len))
            return (int)i;
    return -1;
}
