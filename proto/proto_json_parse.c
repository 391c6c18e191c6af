/*
 * proto_json_parse.c - a strict RFC 8259 parser into a flat token array
 * (proto_json.h), for the JSON codec of the wire model (proto_json.c).
 *
 * It checks everything before anything is read from it: the grammar, every
 * string's escapes and UTF-8 (surrogates paired, no overlong forms, no
 * control characters), the depth and the token count; numbers are kept as
 * text. A document is parsed once into tokens whose "next" links skip a
 * whole value, so a reader walks an object's keys in O(keys). Strings are
 * decoded only when asked (proto_json_string), never longer than their
 * escaped text.
 *
 * Pure: no I/O, no allocation (the caller holds the token array). Costs:
 * O(bytes).
 */
#include "proto_json.h"

#include <stdio.h>
#include <string.h>

#include "proto_int.h"

/* proto_json_utf8_len (proto_int.h) returns the length of the well-formed UTF-8 sequence at s
 * (n bytes left), or 0 when there is none. */
unsigned proto_json_utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0], len;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, cp = c & 0x07;
    else
        return 0;
    if (n < len)
        return 0;
    for (unsigned i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return len;
}

typedef struct parser {
    const char *s;
    size_t len, at;
    proto_json_doc *doc;
    char *why;
    size_t why_len;
    int rc;
} parser;

static int bad(parser *p, const char *what)
{
    if (p->rc == SL_OK) {
        snprintf(p->why, p->why_len, "not valid JSON at byte %zu: %s", p->at, what);
        p->rc = SL_EINVAL;
    }
    return -1;
}

static void blank(parser *p)
{
    while (p->at < p->len && (p->s[p->at] == ' ' || p->s[p->at] == '\t' || p->s[p->at] == '\n' || p->s[p->at] == '\r'))
        p->at++;
}

static int hex4(const char *s, uint32_t *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        *v = *v << 4 | (uint32_t)d;
    }
    return 0;
}

/* string checks the string at p->at (its opening quote) and moves past it. */
static int string(parser *p, uint32_t *start, uint32_t *end)
{
    p->at++;
    *start = (uint32_t)p->at;
    while (p->at < p->len) {
        unsigned char c = (unsigned char)p->s[p->at];
        if (c == '"') {
            *end = (uint32_t)p->at++;
            return 0;
        }
        if (c < 0x20)
            return bad(p, "a control character inside a string");
        if (c == '\\') {
            if (p->at + 1 >= p->len)
                return bad(p, "an unfinished escape");
            char e = p->s[p->at + 1];
            if (e == 'u') {
                uint32_t v, lo;
                if (p->at + 6 > p->len || hex4(p->s + p->at + 2, &v))
                    return bad(p, "a \\u escape without four hex digits");
                p->at += 6;
                if (v >= 0xDC00 && v <= 0xDFFF)
                    return bad(p, "a lone low surrogate");
                if (v >= 0xD800 && v <= 0xDBFF) {
                    if (p->at + 6 > p->len || p->s[p->at] != '\\' || p->s[p->at + 1] != 'u' ||
                        hex4(p->s + p->at + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                        return bad(p, "a high surrogate without its low one");
                    p->at += 6;
                }
                continue;
            }
            if (!strchr("\"\\/bfnrt", e) || !e)
                return bad(p, "an unknown escape");
            p->at += 2;
            continue;
        }
        unsigned n = proto_json_utf8_len((const unsigned char *)p->s + p->at, p->len - p->at);
        if (!n)
            return bad(p, "bytes that are not UTF-8 inside a string");
        p->at += n;
    }
    return bad(p, "an unterminated string");
}

static int number(parser *p)
{
    size_t at = p->at;
    if (at < p->len && p->s[at] == '-')
        at++;
    if (at >= p->len || p->s[at] < '0' || p->s[at] > '9')
        return bad(p, "a malformed number");
    if (p->s[at] == '0')
        at++;
    else
        while (at < p->len && p->s[at] >= '0' && p->s[at] <= '9')
            at++;
    if (at < p->len && p->s[at] == '.') {
        at++;
        if (at >= p->len || p->s[at] < '0' || p->s[at] > '9')
            return bad(p, "a malformed fraction");
        while (at < p->len && p->s[at] >= '0' && p->s[at] <= '9')
            at++;
    }
    if (at < p->len && (p->s[at] == 'e' || p->s[at] == 'E')) {
        at++;
        if (at < p->len && (p->s[at] == '+' || p->s[at] == '-'))
            at++;
        if (at >= p->len || p->s[at] < '0' || p->s[at] > '9')
            return bad(p, "a malformed exponent");
        while (at < p->len && p->s[at] >= '0' && p->s[at] <= '9')
            at++;
    }
    p->at = at;
    return 0;
}

static int value(parser *p, unsigned depth);

static int add(parser *p, proto_json_kind kind, uint32_t start)
{
    proto_json_doc *d = p->doc;
    if (d->n >= PROTO_JSON_MAX_TOKENS) {
        if (p->rc == SL_OK) {
            snprintf(p->why, p->why_len, "the JSON document holds more than %d values", PROTO_JSON_MAX_TOKENS);
            p->rc = SL_ETOOBIG;
        }
        return -1;
    }
    d->tok[d->n] = (proto_json_tok){.kind = (uint8_t)kind, .start = start, .end = start};
    return (int)d->n++;
}

/* container parses an object or an array at p->at. */
static int container(parser *p, unsigned depth, int object)
{
    int t = add(p, object ? PROTO_JSON_OBJECT : PROTO_JSON_ARRAY, (uint32_t)p->at);
    if (t < 0)
        return -1;
    if (depth >= PROTO_JSON_MAX_DEPTH) {
        snprintf(p->why, p->why_len, "the JSON document nests deeper than %d", PROTO_JSON_MAX_DEPTH);
        p->rc = SL_ETOOBIG;
        return -1;
    }
    char close = object ? '}' : ']';
    p->at++;
    blank(p);
    if (p->at < p->len && p->s[p->at] == close) {
        p->at++;
        p->doc->tok[t].next = p->doc->n;
        return t;
    }
    for (;;) {
        blank(p);
        if (object) {
            uint32_t s, e;
            if (p->at >= p->len || p->s[p->at] != '"')
                return bad(p, "an object key that is not a string");
            int k = add(p, PROTO_JSON_STRING, (uint32_t)p->at);
            if (k < 0 || string(p, &s, &e) < 0)
                return -1;
            p->doc->tok[k].start = s, p->doc->tok[k].end = e, p->doc->tok[k].next = p->doc->n;
            blank(p);
            if (p->at >= p->len || p->s[p->at] != ':')
                return bad(p, "a missing ':' after a key");
            p->at++;
        }
        if (value(p, depth + 1) < 0)
            return -1;
        p->doc->tok[t].size++;
        blank(p);
        if (p->at < p->len && p->s[p->at] == ',') {
            p->at++;
            continue;
        }
        if (p->at < p->len && p->s[p->at] == close) {
            p->at++;
            p->doc->tok[t].end = (uint32_t)p->at;
            p->doc->tok[t].next = p->doc->n;
            return t;
        }
        return bad(p, object ? "a missing ',' or '}'" : "a missing ',' or ']'");
    }
}

static int literal(parser *p, const char *word, proto_json_kind kind)
{
    size_t n = strlen(word);
    if (p->len - p->at < n || memcmp(p->s + p->at, word, n))
        return bad(p, "an unknown word");
    int t = add(p, kind, (uint32_t)p->at);
    p->at += n;
    if (t >= 0)
        p->doc->tok[t].end = (uint32_t)p->at, p->doc->tok[t].next = p->doc->n;
    return t;
}

static int value(parser *p, unsigned depth)
{
    blank(p);
    if (p->at >= p->len)
        return bad(p, "the end, where a value was expected");
    char c = p->s[p->at];
    if (c == '{' || c == '[')
        return container(p, depth, c == '{');
    if (c == 't')
        return literal(p, "true", PROTO_JSON_TRUE);
    if (c == 'f')
        return literal(p, "false", PROTO_JSON_FALSE);
    if (c == 'n')
        return literal(p, "null", PROTO_JSON_NULL);
    if (c == '"') {
        uint32_t s, e;
        int t = add(p, PROTO_JSON_STRING, (uint32_t)p->at);
        if (t < 0 || string(p, &s, &e) < 0)
            return -1;
        p->doc->tok[t].start = s, p->doc->tok[t].end = e, p->doc->tok[t].next = p->doc->n;
        return t;
    }
    int t = add(p, PROTO_JSON_NUMBER, (uint32_t)p->at);
    if (t < 0 || number(p) < 0)
        return -1;
    p->doc->tok[t].end = (uint32_t)p->at, p->doc->tok[t].next = p->doc->n;
    return t;
}

int proto_json_parse(const char *text, size_t len, proto_json_doc *doc, char *why, size_t why_len)
{
    parser p = {text, len, 0, doc, why, why_len, SL_OK};
    doc->text = text;
    doc->len = len;
    doc->n = 0;
    if (len > UINT32_MAX - 1)
        return snprintf(why, why_len, "the JSON document is larger than 4 GiB"), SL_ETOOBIG;
    if (value(&p, 0) < 0)
        return p.rc;
    blank(&p);
    if (p.at != len) {
        bad(&p, "more after the value");
        return p.rc;
    }
    return SL_OK;
}

/* ---- reading tokens ---- */

int proto_json_get(const proto_json_doc *doc, int obj, const char *key)
{
    size_t kl = strlen(key);
    if (obj < 0 || doc->tok[obj].kind != PROTO_JSON_OBJECT)
        return -1;
    uint32_t t = (uint32_t)obj + 1;
    for (uint32_t i = 0; i < doc->tok[obj].size; i++) {
        const proto_json_tok *k = &doc->tok[t];
        /* keys with escapes never match a plain key */
        if (k->end - k->start == kl && !memcmp(doc->text + k->start, key, kl))
            return (int)t + 1;
        t = doc->tok[t + 1].next;
    }
    return -1;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80)
        return o[0] = (char)cp, 1;
    if (cp < 0x800)
        return o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000)
        return o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | (cp >> 6 & 0x3F)), o[2] = (char)(0x80 | (cp & 0x3F)), 3;
    return o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | (cp >> 12 & 0x3F)),
           o[2] = (char)(0x80 | (cp >> 6 & 0x3F)), o[3] = (char)(0x80 | (cp & 0x3F)), 4;
}

int proto_json_string(const proto_json_doc *doc, int t, char *out, size_t cap, size_t *len)
{
    if (t < 0 || doc->tok[t].kind != PROTO_JSON_STRING)
        return SL_EINVAL;
    const char *s = doc->text + doc->tok[t].start, *e = doc->text + doc->tok[t].end;
    size_t n = 0;
    if ((size_t)(e - s) > cap)
        return SL_EINVAL; /* the decoded bytes are never more than the text's */
    while (s < e) { /* the parser checked every escape */
        if (*s != '\\') {
            out[n++] = *s++;
            continue;
        }
        char c = s[1];
        s += 2;
        if (c != 'u') {
            out[n++] = c == 'b' ? '\b' : c == 'f' ? '\f' : c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : c;
            continue;
        }
        uint32_t v, lo;
        hex4(s, &v);
        s += 4;
        if (v >= 0xD800 && v <= 0xDBFF) {
            hex4(s + 2, &lo);
            s += 6;
            v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
        }
        n += put_utf8(out + n, v);
    }
    *len = n;
    return SL_OK;
}

