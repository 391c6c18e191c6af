/*
 * proto_dec.c - the guarded decoder of the Sluice wire model.
 *
 * With proto_enc.c, the only files that include msgpack.h. Pure: no I/O, no
 * globals that change (the per-thread zone below is memory only).
 *
 * Decoding runs in two steps. proto_guard walks the raw bytes once, without
 * allocating, and checks that every declared str/bin/ext length and every
 * array/map count fits in the bytes that remain, that no array holds more
 * than PROTO_MAX_ARRAY items (rows included), that containers nest at most
 * PROTO_MAX_DEPTH deep (map > array of rows > row map > scalar) and that the
 * message has at most PROTO_MAX_OBJECTS objects. Only then does msgpack-c's
 * unpacker run: its allocations are bounded by those checks (msgpack-c
 * reserves memory from declared counts, so five bytes could otherwise ask
 * for half a gigabyte). The second step maps the msgpack object onto the
 * flat proto_msg, field by field, and each ROWS field row by row, column by
 * column, checking names, types, sizes, duplicates and what is required.
 *
 * The unpacker's memory (the map's and arrays' object tables; strings
 * point into the input) comes from one msgpack zone per thread, cleared
 * after each message and freed when the thread ends. A zone made and freed
 * per message (msgpack_unpack_next's way) was a malloc and a free of an
 * 8 KiB chunk each time: 8 % of a publishing client's main thread (broker/DESIGN.md,
 * "A msgpack zone per thread"). The zone is the one state kept
 * between calls; it holds no message. Built with AddressSanitizer, each
 * call has a zone of its own again, so that a pointer kept into the decoded
 * objects is still caught.
 *
 * Cost: O(bytes) for the guard, O(keys x known keys) for the mapping; the
 * field table has about fifty entries, a column table under twenty.
 */
#include "proto.h"
#include "proto_int.h"

#include <msgpack.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- guard: structural walk over raw msgpack, no allocation ---- */

typedef struct guard {
    const uint8_t *p;
    size_t len, off;
    unsigned objects;
    const char *why;
} guard;

static int g_fail(guard *g, int err, const char *why)
{
    g->why = why;
    return err;
}

static int g_need(guard *g, size_t n)
{
    return g->len - g->off >= n;
}

static uint64_t g_be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* g_len reads an n-byte big-endian length after the type byte. */
static int g_len(guard *g, int n, uint64_t *out)
{
    if (!g_need(g, (size_t)n))
        return g_fail(g, SL_EPROTO, "truncated length");
    *out = g_be(g->p + g->off, n);
    g->off += (size_t)n;
    return SL_OK;
}

static int g_skip(guard *g, uint64_t n, const char *what)
{
    if (n > PROTO_MAX_FRAME)
        return g_fail(g, SL_ETOOBIG, what);
    if (!g_need(g, (size_t)n))
        return g_fail(g, SL_EPROTO, "declared length exceeds message");
    g->off += (size_t)n;
    return SL_OK;
}

static int g_obj(guard *g, int depth);

static int g_items(guard *g, uint64_t count, int per_item, int depth)
{
    /* every object takes at least one byte */
    if (count > (g->len - g->off) / (uint64_t)per_item)
        return g_fail(g, SL_EPROTO, "declared count exceeds message");
    if (per_item == 1 && count > PROTO_MAX_ARRAY)
        return g_fail(g, SL_ETOOBIG, "array longer than 64");
    if (depth >= PROTO_MAX_DEPTH)
        return g_fail(g, SL_EPROTO, "nesting too deep");
    for (uint64_t i = 0; i < count * (uint64_t)per_item; i++) {
        int rc = g_obj(g, depth + 1);
        if (rc)
            return rc;
    }
    return SL_OK;
}

static int g_obj(guard *g, int depth)
{
    uint64_t n = 0;
    int rc;
    if (!g_need(g, 1))
        return g_fail(g, SL_EPROTO, "truncated");
    if (++g->objects > PROTO_MAX_OBJECTS)
        return g_fail(g, SL_ETOOBIG, "too many objects");
    uint8_t b = g->p[g->off++];
    if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
        return SL_OK;
    if (b >= 0x80 && b <= 0x8f)
        return g_items(g, b & 0x0f, 2, depth);
    if (b >= 0x90 && b <= 0x9f)
        return g_items(g, b & 0x0f, 1, depth);
    if (b >= 0xa0 && b <= 0xbf)
        return g_skip(g, b & 0x1f, "string too long");
    switch (b) {
    case 0xc4: case 0xc5: case 0xc6: /* bin 8/16/32 */
        if ((rc = g_len(g, 1 << (b - 0xc4), &n)))
            return rc;
        return g_skip(g, n, "bin too long");
    case 0xd9: case 0xda: case 0xdb: /* str 8/16/32 */
        if ((rc = g_len(g, 1 << (b - 0xd9), &n)))
            return rc;
        return g_skip(g, n, "string too long");
    case 0xca: return g_skip(g, 4, "float");
    case 0xcb: return g_skip(g, 8, "float");
    case 0xcc: case 0xcd: case 0xce: case 0xcf:
        return g_skip(g, (uint64_t)1 << (b - 0xcc), "uint");
    case 0xd0: case 0xd1: case 0xd2: case 0xd3:
        return g_skip(g, (uint64_t)1 << (b - 0xd0), "int");
    case 0xdc: case 0xdd: /* array 16/32 */
        if ((rc = g_len(g, b == 0xdc ? 2 : 4, &n)))
            return rc;
        return g_items(g, n, 1, depth);
    case 0xde: case 0xdf: /* map 16/32 */
        if ((rc = g_len(g, b == 0xde ? 2 : 4, &n)))
            return rc;
        return g_items(g, n, 2, depth);
    default: /* 0xc1 (never used) and ext types: Sluice has no use for them */
        return g_fail(g, SL_EPROTO, "unsupported msgpack type");
    }
}

int proto_guard(const void *buf, size_t len, const char **why)
{
    guard g = {.p = buf, .len = len};
    int rc;
    if (why)
        *why = NULL;
    if (!buf || len == 0) {
        rc = g_fail(&g, SL_EPROTO, "empty message");
    } else if (len > PROTO_MAX_FRAME) {
        rc = g_fail(&g, SL_ETOOBIG, "message too large");
    } else if (!((g.p[0] >= 0x80 && g.p[0] <= 0x8f) || g.p[0] == 0xde || g.p[0] == 0xdf)) {
        rc = g_fail(&g, SL_EPROTO, "message is not a map");
    } else {
        rc = g_obj(&g, 0);
        if (rc == SL_OK && g.off != len)
            rc = g_fail(&g, SL_EPROTO, "trailing bytes after message");
    }
    if (why && rc)
        *why = g.why;
    return rc;
}

/* ---- decode ---- */

static int find_field(const char *key, uint32_t len)
{
    for (int f = 0; f < PROTO_F_COUNT_; f++)
        if (proto_field_defs[f].key_len == len && memcmp(proto_field_defs[f].key, key, len) == 0)
            return f;
    return -1;
}

/* set_str checks that v is a string (or, when bin_ok, a bin) of at most max
 * bytes and points *out at it. A str for a field that is not a body must be
 * well-formed UTF-8 (SL_EPROTO otherwise), so that nothing the broker passes
 * on as a msgpack str breaks a strict decoder; a body is bytes either way. */
static int set_str(proto_buf *out, const msgpack_object *v, int bin_ok, uint32_t max, const char **why)
{
    if (v->type == MSGPACK_OBJECT_STR) {
        *out = (proto_buf){v->via.str.ptr, v->via.str.size};
    } else if (v->type == MSGPACK_OBJECT_BIN && bin_ok) {
        *out = (proto_buf){v->via.bin.ptr, v->via.bin.size};
    } else {
        *why = bin_ok ? "expected bin or string" : "expected a string";
        return SL_EPROTO;
    }
    if (out->len > max) {
        *why = "string or body exceeds its limit";
        return SL_ETOOBIG;
    }
    if (!bin_ok && proto_utf8_prefix(out->ptr, out->len) != out->len) {
        *why = "string is not valid UTF-8";
        return SL_EPROTO;
    }
    return SL_OK;
}

static int set_u64(uint64_t *out, const msgpack_object *v, const char **why)
{
    if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
        *why = "expected a non-negative integer";
        return SL_EPROTO;
    }
    *out = v->via.u64;
    return SL_OK;
}

static int find_col(const kind_def *kd, const char *key, uint32_t len)
{
    for (uint32_t c = 0; c < kd->ncols; c++)
        if (kd->cols[c].key_len == len && memcmp(kd->cols[c].key, key, len) == 0)
            return (int)c;
    return -1;
}

/* set_row maps the msgpack map v onto row (kind kd), which it zeroes first. */
static int set_row(char *row, const kind_def *kd, const msgpack_object *v, const char **why)
{
    uint32_t *present = (uint32_t *)row; /* every row starts with its mask */
    memset(row, 0, kd->row_size);
    if (v->type != MSGPACK_OBJECT_MAP) {
        *why = "a row is not a map";
        return SL_EPROTO;
    }
    for (uint32_t i = 0; i < v->via.map.size; i++) {
        const msgpack_object *k = &v->via.map.ptr[i].key, *val = &v->via.map.ptr[i].val;
        int c = k->type == MSGPACK_OBJECT_STR ? find_col(kd, k->via.str.ptr, k->via.str.size) : -1;
        if (c < 0) {
            *why = "unknown column";
            return SL_EPROTO;
        }
        if ((*present >> c) & 1) {
            *why = "duplicate column";
            return SL_EPROTO;
        }
        const col_def *cd = &kd->cols[c];
        int rc = cd->type == PROTO_T_U64 ? set_u64((uint64_t *)(row + cd->offset), val, why)
                                         : set_str((proto_buf *)(row + cd->offset), val, 0, PROTO_MAX_NAME, why);
        if (rc)
            return rc;
        *present |= 1u << c;
    }
    if ((*present & kd->req) != kd->req) {
        *why = "required column missing";
        return SL_EPROTO;
    }
    return SL_OK;
}

/* set_rows maps the msgpack array v onto rows, a proto_rows_K of kind kd. */
static int set_rows(void *rows, const kind_def *kd, const msgpack_object *v, const char **why)
{
    if (v->type != MSGPACK_OBJECT_ARRAY) {
        *why = "expected an array of rows";
        return SL_EPROTO;
    }
    if (v->via.array.size > kd->most) {
        *why = "too many rows";
        return SL_ETOOBIG;
    }
    char *base = (char *)rows + kd->rows_at;
    for (uint32_t i = 0; i < v->via.array.size; i++) {
        int rc = set_row(base + i * kd->row_size, kd, &v->via.array.ptr[i], why);
        if (rc)
            return rc;
    }
    *(uint32_t *)rows = v->via.array.size; /* n comes first */
    return SL_OK;
}

/* set_hdrs maps the msgpack map v (name to value, both str) onto *h and
 * checks it against the headers' rules (proto_hdrs.h). */
static int set_hdrs(proto_hdrs *h, const msgpack_object *v, const char **why)
{
    proto_hdr_fault fault;
    h->n = 0;
    if (v->type != MSGPACK_OBJECT_MAP) {
        *why = "headers must be a map of strings";
        return SL_EPROTO;
    }
    if (v->via.map.size > PROTO_MAX_HEADERS) {
        *why = proto_hdr_fault_text(PROTO_HDR_COUNT);
        return SL_ETOOBIG;
    }
    for (uint32_t i = 0; i < v->via.map.size; i++) {
        const msgpack_object *k = &v->via.map.ptr[i].key, *val = &v->via.map.ptr[i].val;
        if (k->type != MSGPACK_OBJECT_STR || val->type != MSGPACK_OBJECT_STR) {
            *why = "headers must be a map of strings";
            return SL_EPROTO;
        }
        h->name[i] = (proto_buf){k->via.str.ptr, k->via.str.size};
        h->value[i] = (proto_buf){val->via.str.ptr, val->via.str.size};
    }
    h->n = v->via.map.size;
    int rc = proto_hdrs_check(h, &fault, NULL);
    if (rc)
        *why = proto_hdr_fault_text(fault);
    return rc;
}

static int set_field(proto_msg *m, proto_field f, const msgpack_object *v, const char **why)
{
    const field_def *d = &proto_field_defs[f];
    void *p = proto_member(m, f);
    switch (d->type) {
    case PROTO_T_U64:
        return set_u64(p, v, why);
    case PROTO_T_STR:
    case PROTO_T_BIN:
        return set_str(p, v, d->type == PROTO_T_BIN, d->max, why);
    case PROTO_T_ROWS:
        return set_rows(p, &proto_kind_defs[d->max], v, why);
    case PROTO_T_HDRS:
        return set_hdrs(p, v, why);
    case PROTO_T_U64S:
    case PROTO_T_STRS: {
        if (v->type != MSGPACK_OBJECT_ARRAY) {
            *why = "expected an array";
            return SL_EPROTO;
        }
        if (v->via.array.size > PROTO_MAX_ARRAY) {
            *why = "array longer than 64";
            return SL_ETOOBIG;
        }
        for (uint32_t i = 0; i < v->via.array.size; i++) {
            const msgpack_object *e = &v->via.array.ptr[i];
            int rc = d->type == PROTO_T_U64S ? set_u64(&((proto_u64s *)p)->v[i], e, why)
                                             : set_str(&((proto_strs *)p)->v[i], e, 0, d->max, why);
            if (rc)
                return rc;
        }
        if (d->type == PROTO_T_U64S)
            ((proto_u64s *)p)->n = v->via.array.size;
        else
            ((proto_strs *)p)->n = v->via.array.size;
        return SL_OK;
    }
    }
    *why = "internal: bad field type";
    return SL_EPROTO;
}

/* find_seq reads a well-typed "seq" wherever it is, for error replies. */
static void find_seq(const msgpack_object *o, proto_msg *out)
{
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        const msgpack_object_kv *kv = &o->via.map.ptr[i];
        if (kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size == 3 &&
            memcmp(kv->key.via.str.ptr, "seq", 3) == 0 && kv->val.type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
            out->seq = kv->val.via.u64;
            out->present |= PF(seq);
            return;
        }
    }
}

static int map_fields(const msgpack_object *o, proto_msg *out, const char **why)
{
    const msgpack_object_map *map = &o->via.map;
    int op_at = -1;

    for (uint32_t i = 0; i < map->size; i++) {
        const msgpack_object *k = &map->ptr[i].key;
        if (k->type != MSGPACK_OBJECT_STR) {
            *why = "map key is not a string";
            return SL_EPROTO;
        }
        if (k->via.str.size == 2 && memcmp(k->via.str.ptr, "op", 2) == 0) {
            op_at = (int)i;
            break;
        }
    }
    if (op_at < 0) {
        *why = "missing \"op\"";
        return SL_EPROTO;
    }
    const msgpack_object *opv = &map->ptr[op_at].val;
    if (opv->type != MSGPACK_OBJECT_STR) {
        *why = "\"op\" is not a string";
        return SL_EPROTO;
    }
    out->type = proto_type_of(opv->via.str.ptr, opv->via.str.size);
    if (out->type == PROTO_NONE) {
        *why = "unknown \"op\"";
        return SL_EUNKNOWN;
    }
    const msg_def *md = &proto_msg_defs[out->type];
    proto_mask allowed = md->req | md->opt | PF(op);

    for (uint32_t i = 0; i < map->size; i++) {
        const msgpack_object *k = &map->ptr[i].key;
        if (k->type != MSGPACK_OBJECT_STR) {
            *why = "map key is not a string";
            return SL_EPROTO;
        }
        int f = find_field(k->via.str.ptr, k->via.str.size);
        if (f < 0 || !((allowed >> f) & 1)) {
            *why = "field not allowed for this message type";
            return SL_EPROTO;
        }
        if ((out->present >> f) & 1) {
            *why = "duplicate field";
            return SL_EPROTO;
        }
        int rc = set_field(out, (proto_field)f, &map->ptr[i].val, why);
        if (rc)
            return rc;
        out->present |= (proto_mask)1 << f;
    }
    if ((out->present & md->req) != md->req) {
        *why = "required field missing";
        return SL_EPROTO;
    }
    return SL_OK;
}

/* ---- the unpacker's zone, one per thread ---- */

/* Under AddressSanitizer every call takes a zone of its own, freed after
 * it: a cleared zone keeps its first chunk, so a pointer into the decoded
 * objects kept past proto_decode would read stale memory unseen, where a
 * freed one is reported (the sanitized suite and the fuzzer look for that). */
#if defined(__SANITIZE_ADDRESS__)
#define ZONE_PER_CALL 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ZONE_PER_CALL 1
#endif
#endif
#ifndef ZONE_PER_CALL
#define ZONE_PER_CALL 0
#endif

static pthread_key_t zone_key;
static pthread_once_t zone_once = PTHREAD_ONCE_INIT;
static int zone_key_ok;

static void zone_free(void *z)
{
    msgpack_zone_free(z);
}

static void zone_key_make(void)
{
    zone_key_ok = pthread_key_create(&zone_key, zone_free) == 0;
}

/* zone_take returns this thread's zone (made on first use), or a zone of
 * the call's own (*own set: free it) when the thread's cannot be kept or
 * under AddressSanitizer; NULL when out of memory. */
static msgpack_zone *zone_take(int *own)
{
    msgpack_zone *z = NULL;
    *own = 0;
    if (ZONE_PER_CALL) {
        *own = 1;
        return msgpack_zone_new(MSGPACK_ZONE_CHUNK_SIZE);
    }
    pthread_once(&zone_once, zone_key_make);
    if (zone_key_ok && (z = pthread_getspecific(zone_key)) != NULL)
        return z;
    if ((z = msgpack_zone_new(MSGPACK_ZONE_CHUNK_SIZE)) == NULL)
        return NULL;
    if (!zone_key_ok || pthread_setspecific(zone_key, z) != 0)
        *own = 1;
    return z;
}

/* zone_give empties z for the next message, or frees it if it was the
 * call's own. */
static void zone_give(msgpack_zone *z, int own)
{
    if (own)
        msgpack_zone_free(z);
    else
        msgpack_zone_clear(z);
}

int proto_decode(const void *buf, size_t len, proto_msg *out, const char **why)
{
    const char *w = NULL;
    int own = 0;
    proto_init(out, PROTO_NONE);
    int rc = proto_guard(buf, len, &w);
    msgpack_zone *zone = rc == SL_OK ? zone_take(&own) : NULL;
    if (rc == SL_OK && !zone) {
        rc = SL_ENOMEM;
        w = "out of memory";
    }
    if (rc == SL_OK) {
        msgpack_object data;
        size_t off = 0;
        /* msgpack_unpack (the caller's zone) rather than msgpack_unpack_next,
         * which makes and frees a zone every time */
        msgpack_unpack_return ur = msgpack_unpack(buf, len, &off, zone, &data);
        if (ur != MSGPACK_UNPACK_SUCCESS || off != len) {
            rc = ur == MSGPACK_UNPACK_NOMEM_ERROR ? SL_ENOMEM : SL_EPROTO;
            w = "msgpack parse error";
        } else if (data.type != MSGPACK_OBJECT_MAP) {
            rc = SL_EPROTO;
            w = "message is not a map";
        } else {
            rc = map_fields(&data, out, &w);
            if (rc) {
                proto_type t = out->type;
                proto_init(out, rc == SL_EUNKNOWN ? PROTO_NONE : t);
                find_seq(&data, out);
            }
        }
        zone_give(zone, own);
    }
    if (why)
        *why = rc ? w : NULL;
    return rc;
}
