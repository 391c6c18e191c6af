/*
 * proto_json.c - the wire model in JSON (proto_json.h): a writer derived
 * from the field and column tables (proto_int.h), and a reader from a
 * parsed JSON object (proto_json_parse.c) into a proto_msg through the same
 * tables. Numbers are read only as the non-negative integers the model
 * holds; a key is looked up by a scan of the field table.
 *
 * Costs: read O(keys x fields) (fields: about seventy); write O(fields +
 * bytes).
 */
#include "proto_json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_int.h"

/* ---- writing ---- */

static int put(proto_wbuf *o, const void *p, size_t n)
{
    if (o->len + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 1024;
        while (cap < o->len + n + 1)
            cap *= 2;
        char *d = realloc(o->data, cap);
        if (!d)
            return SL_ENOMEM;
        o->data = d;
        o->cap = cap;
    }
    memcpy(o->data + o->len, p, n);
    o->len += n;
    o->data[o->len] = '\0';
    return SL_OK;
}

int proto_json_raw(proto_wbuf *o, const char *text)
{
    return put(o, text, strlen(text));
}

int proto_json_printf(proto_wbuf *o, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return SL_EINVAL;
    if ((size_t)n < sizeof buf)
        return put(o, buf, (size_t)n);
    char *big = malloc((size_t)n + 1);
    if (!big)
        return SL_ENOMEM;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = put(o, big, (size_t)n);
    free(big);
    return rc;
}

int proto_json_str(proto_wbuf *o, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    int rc = put(o, "\"", 1);
    size_t run = 0; /* bytes copied as they are, flushed before each escape */
    for (size_t i = 0; i < len && rc == SL_OK;) {
        unsigned c = p[i], n = proto_json_utf8_len(p + i, len - i);
        const char *esc = NULL;
        char u[8];
        if (n == 0)
            esc = "\\ufffd";
        else if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\t')
            esc = "\\t";
        else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7F) {
            snprintf(u, sizeof u, "\\u%04x", c);
            esc = u;
        } else if (n == 3 && c == 0xE2 && p[i + 1] == 0x80 && (p[i + 2] == 0xA8 || p[i + 2] == 0xA9)) {
            esc = p[i + 2] == 0xA8 ? "\\u2028" : "\\u2029";
        }
        if (!esc) {
            run += n;
            i += n;
            continue;
        }
        if (run)
            rc = put(o, s + i - run, run);
        run = 0;
        if (rc == SL_OK)
            rc = put(o, esc, strlen(esc));
        i += n ? n : 1;
    }
    if (rc == SL_OK && run)
        rc = put(o, s + len - run, run);
    return rc == SL_OK ? put(o, "\"", 1) : rc;
}

int proto_json_b64(proto_wbuf *o, const void *p, size_t len)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *s = p;
    char out[4];
    int rc = put(o, "\"", 1);
    for (size_t i = 0; i < len && rc == SL_OK; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < len ? (uint32_t)s[i + 1] << 8 : 0) | (i + 2 < len ? s[i + 2] : 0);
        out[0] = abc[v >> 18 & 63];
        out[1] = abc[v >> 12 & 63];
        out[2] = i + 1 < len ? abc[v >> 6 & 63] : '=';
        out[3] = i + 2 < len ? abc[v & 63] : '=';
        rc = put(o, out, 4);
    }
    return rc == SL_OK ? put(o, "\"", 1) : rc;
}

static int key(proto_wbuf *o, int *first, const char *k, const char *suffix)
{
    int rc = put(o, *first ? "\"" : ", \"", *first ? 1 : 3);
    *first = 0;
    if (rc == SL_OK)
        rc = proto_json_raw(o, k);
    if (rc == SL_OK && suffix)
        rc = proto_json_raw(o, suffix);
    return rc == SL_OK ? put(o, "\": ", 3) : rc;
}

static int rows(proto_wbuf *o, const void *list, proto_row_kind kind)
{
    const kind_def *kd = &proto_kind_defs[kind];
    uint32_t n;
    memcpy(&n, list, sizeof n);
    int rc = put(o, "[", 1);
    for (uint32_t i = 0; i < n && rc == SL_OK; i++) {
        const char *row = (const char *)list + kd->rows_at + i * kd->row_size;
        uint32_t present;
        int first = 1;
        memcpy(&present, row, sizeof present);
        rc = put(o, i ? ", {" : "{", i ? 3 : 1);
        for (uint32_t c = 0; c < kd->ncols && rc == SL_OK; c++) {
            const col_def *cd = &kd->cols[c];
            if (!(present & (1u << c)))
                continue;
            rc = key(o, &first, cd->key, NULL);
            if (rc != SL_OK)
                break;
            if (cd->type == PROTO_T_U64) {
                uint64_t v;
                memcpy(&v, row + cd->offset, sizeof v);
                rc = proto_json_printf(o, "%llu", (unsigned long long)v);
            } else {
                proto_buf b;
                memcpy(&b, row + cd->offset, sizeof b);
                rc = proto_json_str(o, b.ptr, b.len);
            }
        }
        if (rc == SL_OK)
            rc = put(o, "}", 1);
    }
    return rc == SL_OK ? put(o, "]", 1) : rc;
}

int proto_json_msg(proto_wbuf *o, const proto_msg *m, proto_mask skip)
{
    int first = 1, rc = put(o, "{", 1);
    skip |= PF(op) | PF(seq);
    for (int f = 0; f < PROTO_F_COUNT_ && rc == SL_OK; f++) {
        const field_def *fd = &proto_field_defs[f];
        const void *at = proto_member(m, (proto_field)f);
        if (!(m->present & ((proto_mask)1 << f)) || (skip & ((proto_mask)1 << f)))
            continue;
        if (fd->type != PROTO_T_BIN && (rc = key(o, &first, fd->key, NULL)) != SL_OK)
            break;
        switch (fd->type) {
        case PROTO_T_U64:
            rc = proto_json_printf(o, "%llu", (unsigned long long)*(const uint64_t *)at);
            break;
        case PROTO_T_STR:
            rc = proto_json_str(o, ((const proto_buf *)at)->ptr, ((const proto_buf *)at)->len);
            break;
        case PROTO_T_BIN: {
            const proto_buf *b = at;
            if (proto_utf8_prefix(b->ptr, b->len) == b->len &&
                ((rc = key(o, &first, fd->key, NULL)) != SL_OK || (rc = proto_json_str(o, b->ptr, b->len)) != SL_OK))
                break;
            if ((rc = key(o, &first, fd->key, "_base64")) == SL_OK)
                rc = proto_json_b64(o, b->ptr, b->len);
            break;
        }
        case PROTO_T_U64S: {
            const proto_u64s *a = at;
            rc = put(o, "[", 1);
            for (uint32_t i = 0; i < a->n && rc == SL_OK; i++)
                rc = proto_json_printf(o, i ? ", %llu" : "%llu", (unsigned long long)a->v[i]);
            if (rc == SL_OK)
                rc = put(o, "]", 1);
            break;
        }
        case PROTO_T_STRS: {
            const proto_strs *a = at;
            rc = put(o, "[", 1);
            for (uint32_t i = 0; i < a->n && rc == SL_OK; i++)
                if ((rc = i ? put(o, ", ", 2) : SL_OK) == SL_OK)
                    rc = proto_json_str(o, a->v[i].ptr, a->v[i].len);
            if (rc == SL_OK)
                rc = put(o, "]", 1);
            break;
        }
        case PROTO_T_HDRS: {
            const proto_hdrs *h = at;
            rc = put(o, "{", 1);
            for (uint32_t i = 0; i < h->n && rc == SL_OK; i++) {
                if ((rc = i ? put(o, ", ", 2) : SL_OK) == SL_OK &&
                    (rc = proto_json_str(o, h->name[i].ptr, h->name[i].len)) == SL_OK &&
                    (rc = put(o, ": ", 2)) == SL_OK)
                    rc = proto_json_str(o, h->value[i].ptr, h->value[i].len);
            }
            if (rc == SL_OK)
                rc = put(o, "}", 1);
            break;
        }
        default:
            rc = rows(o, at, (proto_row_kind)fd->max);
            break;
        }
    }
    return rc == SL_OK ? put(o, "}", 1) : rc;
}

/* ---- reading a message ---- */

typedef struct reader {
    const proto_json_doc *doc;
    const proto_json_names *names;
    char *arena;
    size_t used, cap;
    char *why;
    size_t why_len;
} reader;

static int wrong(reader *r, const char *k, const char *what)
{
    snprintf(r->why, r->why_len, "'%s' must be %s", k, what);
    return SL_EINVAL;
}

static int text(reader *r, int t, proto_buf *out)
{
    size_t n;
    if (proto_json_string(r->doc, t, r->arena + r->used, r->cap - r->used, &n) != SL_OK)
        return SL_EINVAL;
    out->ptr = r->arena + r->used;
    out->len = (uint32_t)n;
    r->used += n;
    return SL_OK;
}

static int u64(reader *r, int t, const char *k, int level_ok, uint64_t *v)
{
    const proto_json_tok *tk = &r->doc->tok[t];
    if (tk->kind == PROTO_JSON_TRUE || tk->kind == PROTO_JSON_FALSE) {
        *v = tk->kind == PROTO_JSON_TRUE;
        return SL_OK;
    }
    if (tk->kind == PROTO_JSON_STRING && level_ok && r->names) {
        const char *s = r->doc->text + tk->start;
        size_t n = tk->end - tk->start;
        for (unsigned l = 0; l < r->names->nlevels; l++)
            if (strlen(r->names->level[l]) == n && !memcmp(r->names->level[l], s, n)) {
                *v = l;
                return SL_OK;
            }
        char what[160];
        snprintf(what, sizeof what, "a level's number or name; '%.*s' names none", (int)(n > 64 ? 64 : n), s);
        return wrong(r, k, what);
    }
    if (tk->kind != PROTO_JSON_NUMBER)
        return wrong(r, k, level_ok ? "a level's number or name" : "a number");
    uint64_t x = 0;
    for (uint32_t i = tk->start; i < tk->end; i++) {
        char c = r->doc->text[i];
        if (c < '0' || c > '9')
            return wrong(r, k, "a whole number from 0 up");
        if (x > (UINT64_MAX - (uint64_t)(c - '0')) / 10)
            return wrong(r, k, "at most 18446744073709551615");
        x = x * 10 + (uint64_t)(c - '0');
    }
    *v = x;
    return SL_OK;
}

/* b64 decodes string token t (base64, padded or not) into the arena. */
static int b64(reader *r, int t, const char *k, proto_buf *out)
{
    const proto_json_tok *tk = &r->doc->tok[t];
    if (tk->kind != PROTO_JSON_STRING)
        return wrong(r, k, "a string of base64");
    uint32_t acc = 0;
    int bits = 0, pad = 0;
    char *o = r->arena + r->used;
    size_t n = 0;
    for (uint32_t i = tk->start; i < tk->end; i++) {
        char c = r->doc->text[i];
        int d = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
              : c == '+' || c == '-' ? 62 : c == '/' || c == '_' ? 63 : c == '=' ? -2 : -1;
        if (d == -2) {
            pad++;
            continue;
        }
        if (d < 0 || pad)
            return wrong(r, k, "base64 (RFC 4648)");
        acc = acc << 6 | (uint32_t)d;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            o[n++] = (char)(acc >> bits & 0xFF);
        }
    }
    if (pad > 2 || bits >= 6)
        return wrong(r, k, "base64 (RFC 4648)");
    out->ptr = o;
    out->len = (uint32_t)n;
    r->used += n;
    return SL_OK;
}

static int is_level_key(const char *k)
{
    return !strcmp(k, "level") || !strcmp(k, "to_level") || !strcmp(k, "levels");
}

static int read_rows(reader *r, int t, const char *k, proto_row_kind kind, void *list)
{
    const kind_def *kd = &proto_kind_defs[kind];
    const proto_json_tok *arr = &r->doc->tok[t];
    char what[96];
    if (arr->kind != PROTO_JSON_ARRAY)
        return wrong(r, k, "an array of objects");
    if (arr->size > kd->most) {
        snprintf(what, sizeof what, "an array of at most %u objects", kd->most);
        return wrong(r, k, what);
    }
    uint32_t n = 0;
    memcpy(list, &n, sizeof n);
    uint32_t it = (uint32_t)t + 1;
    for (uint32_t i = 0; i < arr->size; i++, it = r->doc->tok[it].next) {
        char *row = (char *)list + kd->rows_at + i * kd->row_size;
        uint32_t present = 0;
        memset(row, 0, kd->row_size);
        if (r->doc->tok[it].kind != PROTO_JSON_OBJECT)
            return wrong(r, k, "an array of objects");
        uint32_t kt = it + 1;
        for (uint32_t j = 0; j < r->doc->tok[it].size; j++, kt = r->doc->tok[kt + 1].next) {
            const proto_json_tok *kk = &r->doc->tok[kt];
            uint32_t c;
            for (c = 0; c < kd->ncols; c++)
                if (kd->cols[c].key_len == kk->end - kk->start &&
                    !memcmp(kd->cols[c].key, r->doc->text + kk->start, kd->cols[c].key_len))
                    break;
            if (c == kd->ncols) {
                snprintf(r->why, r->why_len, "'%s' rows have no column '%.*s'", k,
                         (int)(kk->end - kk->start > 64 ? 64 : kk->end - kk->start), r->doc->text + kk->start);
                return SL_EINVAL;
            }
            int vt = (int)kt + 1;
            if (r->doc->tok[vt].kind == PROTO_JSON_NULL)
                continue;
            if (present & (1u << c)) {
                snprintf(r->why, r->why_len, "a '%s' row names '%s' twice", k, kd->cols[c].key);
                return SL_EINVAL;
            }
            int rc;
            if (kd->cols[c].type == PROTO_T_U64) {
                uint64_t v;
                rc = u64(r, vt, kd->cols[c].key, !strcmp(kd->cols[c].key, "level"), &v);
                memcpy(row + kd->cols[c].offset, &v, sizeof v);
            } else {
                proto_buf b = {NULL, 0};
                rc = r->doc->tok[vt].kind == PROTO_JSON_STRING ? text(r, vt, &b) : wrong(r, kd->cols[c].key, "a string");
                memcpy(row + kd->cols[c].offset, &b, sizeof b);
            }
            if (rc != SL_OK)
                return rc;
            present |= 1u << c;
        }
        memcpy(row, &present, sizeof present);
        n++;
        memcpy(list, &n, sizeof n);
    }
    return SL_OK;
}

/* read_hdrs reads object token t, name to string value, into *h; the
 * headers' rules are left to the decoder that receives the message, but
 * for their count, which bounds h. */
static int read_hdrs(reader *r, int t, const char *k, proto_hdrs *h)
{
    const proto_json_tok *tk = &r->doc->tok[t];
    int rc = SL_OK;
    h->n = 0;
    if (tk->kind != PROTO_JSON_OBJECT)
        return wrong(r, k, "an object of strings (header name: value)");
    if (tk->size > PROTO_MAX_HEADERS) {
        snprintf(r->why, r->why_len, "%s", proto_hdr_fault_text(PROTO_HDR_COUNT));
        return SL_ETOOBIG;
    }
    uint32_t kt = (uint32_t)t + 1;
    for (uint32_t i = 0; i < tk->size && rc == SL_OK; i++, kt = r->doc->tok[kt + 1].next) {
        if (r->doc->tok[kt + 1].kind != PROTO_JSON_STRING)
            return wrong(r, k, "an object of strings (header name: value)");
        if ((rc = text(r, (int)kt, &h->name[i])) == SL_OK)
            rc = text(r, (int)kt + 1, &h->value[i]);
    }
    h->n = tk->size;
    return rc;
}

/* field reads value token t into field f of m. */
static int field(reader *r, proto_msg *m, proto_field f, int t, int base64)
{
    const field_def *fd = &proto_field_defs[f];
    void *at = proto_member(m, f);
    const proto_json_tok *tk = &r->doc->tok[t];
    int rc = SL_OK;
    switch (fd->type) {
    case PROTO_T_U64:
        rc = u64(r, t, fd->key, is_level_key(fd->key), at);
        break;
    case PROTO_T_STR:
    case PROTO_T_BIN:
        if (base64)
            rc = b64(r, t, fd->key, at);
        else
            rc = tk->kind == PROTO_JSON_STRING ? text(r, t, at) : wrong(r, fd->key, "a string");
        break;
    case PROTO_T_U64S:
    case PROTO_T_STRS: {
        if (tk->kind != PROTO_JSON_ARRAY || tk->size > PROTO_MAX_ARRAY)
            return wrong(r, fd->key, "an array of at most 64 items");
        uint32_t it = (uint32_t)t + 1;
        for (uint32_t i = 0; i < tk->size && rc == SL_OK; i++, it = r->doc->tok[it].next) {
            if (fd->type == PROTO_T_U64S)
                rc = u64(r, (int)it, fd->key, is_level_key(fd->key), &((proto_u64s *)at)->v[i]);
            else
                rc = r->doc->tok[it].kind == PROTO_JSON_STRING ? text(r, (int)it, &((proto_strs *)at)->v[i])
                                                               : wrong(r, fd->key, "an array of strings");
        }
        if (fd->type == PROTO_T_U64S)
            ((proto_u64s *)at)->n = tk->size;
        else
            ((proto_strs *)at)->n = tk->size;
        break;
    }
    case PROTO_T_HDRS:
        rc = read_hdrs(r, t, fd->key, at);
        break;
    default:
        rc = read_rows(r, t, fd->key, (proto_row_kind)fd->max, at);
        break;
    }
    if (rc == SL_OK)
        m->present |= (proto_mask)1 << f;
    return rc;
}

int proto_json_read(const proto_json_doc *doc, int obj, proto_mask allowed, const proto_json_names *names,
                    proto_msg *m, char *arena, size_t arena_len, char *why, size_t why_len)
{
    reader r = {doc, names, arena, 0, arena_len, why, why_len};
    if (obj < 0 || doc->tok[obj].kind != PROTO_JSON_OBJECT) {
        snprintf(why, why_len, "the body must be a JSON object");
        return SL_EINVAL;
    }
    uint32_t kt = (uint32_t)obj + 1;
    for (uint32_t i = 0; i < doc->tok[obj].size; i++, kt = doc->tok[kt + 1].next) {
        const proto_json_tok *k = &doc->tok[kt];
        const char *ks = doc->text + k->start;
        size_t kl = k->end - k->start;
        int base64 = kl > 7 && !memcmp(ks + kl - 7, "_base64", 7);
        size_t name_len = base64 ? kl - 7 : kl;
        int f;
        for (f = 0; f < PROTO_F_COUNT_; f++)
            if (proto_field_defs[f].key_len == name_len && !memcmp(proto_field_defs[f].key, ks, name_len))
                break;
        if (f == PROTO_F_COUNT_ || !(allowed & ((proto_mask)1 << f)) ||
            (base64 && proto_field_defs[f].type != PROTO_T_BIN)) {
            snprintf(why, why_len, "this request takes no field '%.*s'", (int)(kl > 64 ? 64 : kl), ks);
            return SL_EINVAL;
        }
        if (doc->tok[kt + 1].kind == PROTO_JSON_NULL)
            continue;
        if (m->present & ((proto_mask)1 << f)) {
            snprintf(why, why_len, "'%s' is given twice", proto_field_defs[f].key);
            return SL_EINVAL;
        }
        int rc = field(&r, m, (proto_field)f, (int)kt + 1, base64);
        if (rc != SL_OK)
            return rc;
    }
    return SL_OK;
}
