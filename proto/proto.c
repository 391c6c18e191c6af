/*
 * proto.c - tables, guarded decoder and encoder for the Sluice wire model.
 *
 * This is the only file that includes msgpack.h. Everything here is pure: no
 * I/O, no globals that change.
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
 * Fields and columns are reached through offset tables generated from the
 * model, so the codec has one path per value type, not one per field.
 *
 * Cost: O(bytes) for the guard, O(keys x known keys) for the mapping; the
 * field table has about fifty entries, a column table under twenty.
 */
#include "proto.h"

#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tables derived from the model ---- */

#define DIR_C2B 1
#define DIR_B2C 2
#define DIR_ANY 3

typedef struct msg_def {
    const char *name;
    int dir;
    proto_mask req, opt;
} msg_def;

static const msg_def msg_defs[PROTO_TYPE_COUNT_] = {
    [PROTO_NONE] = {"?", 0, 0, 0},
#define MSG_DEF_(ID, name, dir, req, opt) [PROTO_##ID] = {name, DIR_##dir, (req), (opt)},
    PROTO_MSGS(MSG_DEF_)
#undef MSG_DEF_
};

/* A field: its key, type, limit (bytes, or for ROWS the row kind) and where
 * its member sits in proto_msg. */
typedef struct field_def {
    const char *key;
    uint8_t key_len;
    uint8_t type;
    uint32_t max;
    size_t offset;
} field_def;

#define FMAX_U64(x)  (x)
#define FMAX_STR(x)  (x)
#define FMAX_BIN(x)  (x)
#define FMAX_U64S(x) (x)
#define FMAX_STRS(x) (x)
#define FMAX_ROWS(kind) PROTO_ROWS_##kind

static const field_def field_defs[PROTO_F_COUNT_] = {
#define FIELD_DEF_(m, k, t, max) \
    [PROTO_F_##m] = {k, sizeof(k) - 1, PROTO_T_##t, FMAX_##t(max), offsetof(proto_msg, m)},
    PROTO_FIELDS(FIELD_DEF_)
#undef FIELD_DEF_
};

_Static_assert(PROTO_F_COUNT_ <= 64, "the presence mask is 64 bits");

/* A column of a row kind: its key, type, whether rows must carry it, and
 * where its member sits in the row. */
typedef struct col_def {
    const char *key;
    uint8_t key_len;
    uint8_t type;
    size_t offset;
} col_def;

#define COL_REQ_REQ 1u
#define COL_REQ_OPT 0u
#define COL_DEF_(K, m, k, t, r) {k, sizeof(k) - 1, PROTO_T_##t, offsetof(proto_row_##K, m)},
#define COL_REQBIT_(K, m, k, t, r) | (COL_REQ_##r << PROTO_COL_##K##_##m)
#define KIND_COLS_(K, most) \
    _Static_assert(PROTO_COL_##K##_COUNT_ <= 32, "a row's presence mask is 32 bits"); \
    static const col_def cols_##K[] = {PROTO_COLS_##K(COL_DEF_, K)};
PROTO_ROW_KINDS(KIND_COLS_)
#undef KIND_COLS_

/* A row kind: its columns, the most rows a list holds, and the layout of
 * proto_rows_K (n first, then the rows). */
typedef struct kind_def {
    const col_def *cols;
    uint32_t ncols;
    uint32_t most;
    uint32_t req; /* bits of the REQ columns */
    size_t row_size, rows_at;
} kind_def;

static const kind_def kind_defs[PROTO_ROWS_COUNT_] = {
#define KIND_DEF_(K, most_) \
    [PROTO_ROWS_##K] = {cols_##K, PROTO_COL_##K##_COUNT_, (most_), 0u PROTO_COLS_##K(COL_REQBIT_, K), \
                        sizeof(proto_row_##K), offsetof(proto_rows_##K, v)},
    PROTO_ROW_KINDS(KIND_DEF_)
#undef KIND_DEF_
};

typedef struct cmd_def {
    const char *name;
    proto_mask req, opt;
    int result;
    proto_mask fields;
} cmd_def;

static const cmd_def cmd_defs[PROTO_CMD_COUNT_] = {
#define CMD_DEF_(ID, name, req, opt, res, fields) \
    [PROTO_CMD_##ID] = {name, (req), (opt), PROTO_RES_##res, (fields)},
    PROTO_ADMIN_CMDS(CMD_DEF_)
#undef CMD_DEF_
};

typedef struct err_def {
    const char *name, *text;
} err_def;

static const err_def err_defs[] = {
#define ERR_DEF_(name, code, text) [code] = {#name, text},
    SL_ERRORS(ERR_DEF_)
#undef ERR_DEF_
};

const char *proto_strerror(int err)
{
    if (err < 0 || (size_t)err >= sizeof err_defs / sizeof err_defs[0] || !err_defs[err].text)
        return "unknown error";
    return err_defs[err].text;
}

const char *proto_errname(int err)
{
    if (err < 0 || (size_t)err >= sizeof err_defs / sizeof err_defs[0] || !err_defs[err].name)
        return "SL_E?";
    return err_defs[err].name;
}

const char *proto_name(proto_type t)
{
    if (t <= PROTO_NONE || t >= PROTO_TYPE_COUNT_)
        return "?";
    return msg_defs[t].name;
}

proto_type proto_type_of(const char *name, size_t len)
{
    for (int t = PROTO_NONE + 1; t < PROTO_TYPE_COUNT_; t++)
        if (strlen(msg_defs[t].name) == len && memcmp(msg_defs[t].name, name, len) == 0)
            return (proto_type)t;
    return PROTO_NONE;
}

int proto_fields_of(proto_type t, proto_mask *req, proto_mask *opt)
{
    if (t <= PROTO_NONE || t >= PROTO_TYPE_COUNT_)
        return -1;
    *req = msg_defs[t].req;
    *opt = msg_defs[t].opt;
    return 0;
}

void proto_init(proto_msg *m, proto_type type)
{
    memset(m, 0, sizeof *m);
    m->type = type;
}

int proto_has(const proto_msg *m, proto_field f)
{
    return (m->present >> f) & 1;
}

/* member is where field f sits in m. */
static void *member(const proto_msg *m, proto_field f)
{
    return (char *)m + field_defs[f].offset;
}

const char *proto_field_key(proto_field f)
{
    if ((int)f < 0 || f >= PROTO_F_COUNT_)
        return "?";
    return field_defs[f].key;
}

const char *proto_cmd_name(proto_cmd c)
{
    if ((int)c < 0 || c >= PROTO_CMD_COUNT_)
        return "?";
    return cmd_defs[c].name;
}

int proto_cmd_of(const char *name, size_t len)
{
    for (int c = 0; c < PROTO_CMD_COUNT_; c++)
        if (strlen(cmd_defs[c].name) == len && memcmp(cmd_defs[c].name, name, len) == 0)
            return c;
    return -1;
}

int proto_cmd_def(proto_cmd c, proto_mask *req, proto_mask *opt, int *result, proto_mask *fields)
{
    if ((int)c < 0 || c >= PROTO_CMD_COUNT_)
        return -1;
    const cmd_def *d = &cmd_defs[c];
    if (req)
        *req = d->req;
    if (opt)
        *opt = d->opt;
    if (result)
        *result = d->result;
    if (fields)
        *fields = d->fields;
    return 0;
}

/* lowest_field is the field of the lowest bit set in mask (not 0). */
static proto_field lowest_field(proto_mask mask)
{
    int f = 0;
    while (!((mask >> f) & 1))
        f++;
    return (proto_field)f;
}

int proto_cmd_check(const proto_msg *m, proto_cmd *cmd, char *text, size_t text_len)
{
    int c = (m->present & PF(cmd)) ? proto_cmd_of(m->cmd.ptr, m->cmd.len) : -1;
    if (c < 0) {
        snprintf(text, text_len, "unknown admin command '%.*s'", (int)m->cmd.len, m->cmd.ptr ? m->cmd.ptr : "");
        return SL_EUNKNOWN;
    }
    const cmd_def *d = &cmd_defs[c];
    proto_mask args = m->present & ~(PF(op) | PF(seq) | PF(cmd));
    proto_mask missing = d->req & ~args, extra = args & ~(d->req | d->opt);
    if (missing) {
        snprintf(text, text_len, "%s needs the argument %s", d->name, field_defs[lowest_field(missing)].key);
        return SL_EINVAL;
    }
    if (extra) {
        snprintf(text, text_len, "%s does not take the argument %s", d->name, field_defs[lowest_field(extra)].key);
        return SL_EINVAL;
    }
    *cmd = (proto_cmd)c;
    return SL_OK;
}

void proto_set_str(proto_msg *m, proto_field f, const char *ptr, size_t len)
{
    if ((int)f < 0 || f >= PROTO_F_COUNT_ ||
        (field_defs[f].type != PROTO_T_STR && field_defs[f].type != PROTO_T_BIN))
        return;
    proto_buf *b = member(m, f);
    b->ptr = ptr;
    b->len = (uint32_t)len;
    m->present |= (proto_mask)1 << f;
}

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
        if (field_defs[f].key_len == len && memcmp(field_defs[f].key, key, len) == 0)
            return f;
    return -1;
}

/* set_str checks that v is a string (or, when bin_ok, a bin) of at most max
 * bytes and points *out at it. */
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

static int set_field(proto_msg *m, proto_field f, const msgpack_object *v, const char **why)
{
    const field_def *d = &field_defs[f];
    void *p = member(m, f);
    switch (d->type) {
    case PROTO_T_U64:
        return set_u64(p, v, why);
    case PROTO_T_STR:
    case PROTO_T_BIN:
        return set_str(p, v, d->type == PROTO_T_BIN, d->max, why);
    case PROTO_T_ROWS:
        return set_rows(p, &kind_defs[d->max], v, why);
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
    const msg_def *md = &msg_defs[out->type];
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

int proto_decode(const void *buf, size_t len, proto_msg *out, const char **why)
{
    const char *w = NULL;
    proto_init(out, PROTO_NONE);
    int rc = proto_guard(buf, len, &w);
    if (rc == SL_OK) {
        msgpack_unpacked up;
        size_t off = 0;
        msgpack_unpacked_init(&up);
        msgpack_unpack_return ur = msgpack_unpack_next(&up, buf, len, &off);
        if (ur != MSGPACK_UNPACK_SUCCESS || off != len) {
            rc = ur == MSGPACK_UNPACK_NOMEM_ERROR ? SL_ENOMEM : SL_EPROTO;
            w = "msgpack parse error";
        } else if (up.data.type != MSGPACK_OBJECT_MAP) {
            rc = SL_EPROTO;
            w = "message is not a map";
        } else {
            rc = map_fields(&up.data, out, &w);
            if (rc) {
                proto_type t = out->type;
                proto_init(out, rc == SL_EUNKNOWN ? PROTO_NONE : t);
                find_seq(&up.data, out);
            }
        }
        msgpack_unpacked_destroy(&up);
    }
    if (why)
        *why = rc ? w : NULL;
    return rc;
}

/* ---- encode ---- */

static int wbuf_write(void *data, const char *buf, size_t len)
{
    proto_wbuf *b = data;
    if (b->cap - b->len < len) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < len)
            cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p)
            return -1;
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, buf, len);
    b->len += len;
    return 0;
}

void proto_wbuf_reset(proto_wbuf *b)
{
    b->len = 0;
}

void proto_wbuf_free(proto_wbuf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

static int pack_str(msgpack_packer *pk, const char *p, size_t len)
{
    return msgpack_pack_str(pk, len) || msgpack_pack_str_body(pk, p, len);
}

/* row_mask is a row's presence mask, limited to its kind's columns. */
static uint32_t row_mask(const char *row, const kind_def *kd)
{
    return *(const uint32_t *)row & (uint32_t)((UINT64_C(1) << kd->ncols) - 1);
}

/* rows_check tells whether rows (kind kd) may be encoded: SL_OK, SL_EINVAL
 * for too many rows or a required column missing, SL_ETOOBIG for a string
 * column over PROTO_MAX_NAME. */
static int rows_check(const void *rows, const kind_def *kd)
{
    uint32_t n = *(const uint32_t *)rows;
    if (n > kd->most)
        return SL_EINVAL;
    const char *base = (const char *)rows + kd->rows_at;
    for (uint32_t i = 0; i < n; i++) {
        const char *row = base + i * kd->row_size;
        uint32_t present = row_mask(row, kd);
        if ((present & kd->req) != kd->req)
            return SL_EINVAL;
        for (uint32_t c = 0; c < kd->ncols; c++)
            if (((present >> c) & 1) && kd->cols[c].type == PROTO_T_STR &&
                ((const proto_buf *)(row + kd->cols[c].offset))->len > PROTO_MAX_NAME)
                return SL_ETOOBIG;
    }
    return SL_OK;
}

static int count_bits(uint64_t v)
{
    int n = 0;
    for (; v; v &= v - 1)
        n++;
    return n;
}

static int pack_rows(msgpack_packer *pk, const void *rows, const kind_def *kd)
{
    uint32_t n = *(const uint32_t *)rows;
    const char *base = (const char *)rows + kd->rows_at;
    if (msgpack_pack_array(pk, n))
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        const char *row = base + i * kd->row_size;
        uint32_t present = row_mask(row, kd);
        if (msgpack_pack_map(pk, (size_t)count_bits(present)))
            return -1;
        for (uint32_t c = 0; c < kd->ncols; c++) {
            if (!((present >> c) & 1))
                continue;
            const col_def *cd = &kd->cols[c];
            const proto_buf *b = (const proto_buf *)(row + cd->offset);
            if (pack_str(pk, cd->key, cd->key_len) ||
                (cd->type == PROTO_T_U64 ? msgpack_pack_uint64(pk, *(const uint64_t *)(row + cd->offset))
                                         : pack_str(pk, b->ptr, b->len)))
                return -1;
        }
    }
    return 0;
}

static int pack_field(msgpack_packer *pk, const proto_msg *m, proto_field f)
{
    const field_def *d = &field_defs[f];
    const void *p = member(m, f);
    if (pack_str(pk, d->key, d->key_len))
        return -1;
    switch (d->type) {
    case PROTO_T_U64:
        return msgpack_pack_uint64(pk, *(const uint64_t *)p);
    case PROTO_T_STR: {
        const proto_buf *b = p;
        return pack_str(pk, b->ptr, b->len);
    }
    case PROTO_T_BIN: {
        const proto_buf *b = p;
        return msgpack_pack_bin(pk, b->len) || msgpack_pack_bin_body(pk, b->ptr, b->len);
    }
    case PROTO_T_U64S: {
        const proto_u64s *a = p;
        if (msgpack_pack_array(pk, a->n))
            return -1;
        for (uint32_t i = 0; i < a->n; i++)
            if (msgpack_pack_uint64(pk, a->v[i]))
                return -1;
        return 0;
    }
    case PROTO_T_STRS: {
        const proto_strs *a = p;
        if (msgpack_pack_array(pk, a->n))
            return -1;
        for (uint32_t i = 0; i < a->n; i++)
            if (pack_str(pk, a->v[i].ptr, a->v[i].len))
                return -1;
        return 0;
    }
    case PROTO_T_ROWS:
        return pack_rows(pk, p, &kind_defs[d->max]);
    }
    return -1;
}

/* field_check tells whether field f of m may be encoded (sizes, counts). */
static int field_check(const proto_msg *m, proto_field f)
{
    const field_def *d = &field_defs[f];
    const void *p = member(m, f);
    switch (d->type) {
    case PROTO_T_STR:
    case PROTO_T_BIN:
        return ((const proto_buf *)p)->len > d->max ? SL_ETOOBIG : SL_OK;
    case PROTO_T_U64S:
        return ((const proto_u64s *)p)->n > PROTO_MAX_ARRAY ? SL_EINVAL : SL_OK;
    case PROTO_T_STRS: {
        const proto_strs *a = p;
        if (a->n > PROTO_MAX_ARRAY)
            return SL_EINVAL;
        for (uint32_t i = 0; i < a->n; i++)
            if (a->v[i].len > d->max)
                return SL_ETOOBIG;
        return SL_OK;
    }
    case PROTO_T_ROWS:
        return rows_check(p, &kind_defs[d->max]);
    default:
        return SL_OK;
    }
}

int proto_encode(const proto_msg *m, proto_wbuf *out)
{
    if (m->type <= PROTO_NONE || m->type >= PROTO_TYPE_COUNT_)
        return SL_EINVAL;
    const msg_def *md = &msg_defs[m->type];
    proto_mask fields = m->present & ~PF(op);
    if ((fields & md->req) != md->req || (fields & ~(md->req | md->opt)))
        return SL_EINVAL;
    for (int f = 0; f < PROTO_F_COUNT_; f++) {
        int rc = (fields >> f) & 1 ? field_check(m, (proto_field)f) : SL_OK;
        if (rc)
            return rc;
    }

    size_t start = out->len;
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, wbuf_write);
    int bad = msgpack_pack_map(&pk, (size_t)count_bits(fields) + 1);
    bad = bad || pack_str(&pk, "op", 2) || pack_str(&pk, md->name, strlen(md->name));
    for (int f = 0; f < PROTO_F_COUNT_ && !bad; f++)
        if ((fields >> f) & 1)
            bad = pack_field(&pk, m, (proto_field)f);
    if (bad) {
        out->len = start;
        return SL_ENOMEM;
    }
    return SL_OK;
}
