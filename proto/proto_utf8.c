/*
 * proto_utf8.c - what the wire model calls text: well-formed UTF-8 (RFC
 * 3629: no overlong forms, no surrogates, nothing past U+10FFFF).
 *
 * The decoder refuses a str value that is not (proto_dec.c), the headers'
 * rules require it of a value (proto_hdrs.c), and a sender cuts text it did
 * not check at the longest good prefix. Pure; O(bytes).
 */
#include "proto.h"

uint32_t proto_utf8_prefix(const void *buf, uint32_t len)
{
    const unsigned char *p = buf;
    uint32_t i = 0;
    while (i < len) {
        unsigned c = p[i];
        uint32_t n;
        unsigned lo = 0x80, hi = 0xbf; /* bounds of the second byte */
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            if (c == 0xe0)
                lo = 0xa0; /* overlong */
            else if (c == 0xed)
                hi = 0x9f; /* surrogates */
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            if (c == 0xf0)
                lo = 0x90; /* overlong */
            else if (c == 0xf4)
                hi = 0x8f; /* past U+10FFFF */
        } else {
            return i;
        }
        if (len - i <= n || p[i + 1] < lo || p[i + 1] > hi)
            return i;
        for (uint32_t k = 2; k <= n; k++)
            if ((p[i + k] & 0xc0) != 0x80)
                return i;
        i += n + 1;
    }
    return len;
}
