/*
 * proto_enc.c - the encoder of the Sluice wire model.
 *
 * proto_encode checks a message against the model before it writes a byte:
 * every required field present, no field the type does not allow, strings
 * and row lists within their limits, every row carrying its kind's required
 * columns. It then packs one msgpack map, fields in model order, rows as an
 * array of maps. On any error the output buffer is left as it was.
 *
 * With proto_dec.c, the only files that include msgpack.h. Pure: no I/O.
 * Cost: O(fields + rows x columns) per message; the buffer grows by doubling.
 */
#include "proto.h"
#include "proto_int.h"

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

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
    if (len) /* (an empty string may come as NULL) */
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

static int count_bits(proto_mask v)
{
    int n = 0;
    for (; v; v &= v - 1)
        n++;
    return n;
}

/* lowest_bit returns the number of v's lowest set bit (v != 0): the fields
 * of a message are walked by its presence mask, not all PROTO_F_COUNT_. */
static proto_field lowest_bit(proto_mask v)
{
    uint64_t lo = (uint64_t)v;
    return (proto_field)(lo ? __builtin_ctzll(lo) : 64 + __builtin_ctzll((uint64_t)(v >> 64)));
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
    const field_def *d = &proto_field_defs[f];
    const void *p = proto_member(m, f);
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
        return pack_rows(pk, p, &proto_kind_defs[d->max]);
    case PROTO_T_HDRS: {
        const proto_hdrs *h = p;
        if (msgpack_pack_map(pk, h->n))
            return -1;
        for (uint32_t i = 0; i < h->n; i++)
            if (pack_str(pk, h->name[i].ptr, h->name[i].len) || pack_str(pk, h->value[i].ptr, h->value[i].len))
                return -1;
        return 0;
    }
    }
    return -1;
}

/* field_check tells whether field f of m may be encoded (sizes, counts). */
static int field_check(const proto_msg *m, proto_field f)
{
    const field_def *d = &proto_field_defs[f];
    const void *p = proto_member(m, f);
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
        return rows_check(p, &proto_kind_defs[d->max]);
    case PROTO_T_HDRS:
        return proto_hdrs_check(p, NULL, NULL);
    default:
        return SL_OK;
    }
}

int proto_encode(const proto_msg *m, proto_wbuf *out)
{
    if (m->type <= PROTO_NONE || m->type >= PROTO_TYPE_COUNT_)
        return SL_EINVAL;
    const msg_def *md = &proto_msg_defs[m->type];
    proto_mask fields = m->present & ~PF(op);
    if ((fields & md->req) != md->req || (fields & ~(md->req | md->opt)))
        return SL_EINVAL;
    for (proto_mask rest = fields; rest; rest &= rest - 1) {
        int rc = field_check(m, lowest_bit(rest));
        if (rc)
            return rc;
    }

    size_t start = out->len;
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, wbuf_write);
    int bad = msgpack_pack_map(&pk, (size_t)count_bits(fields) + 1);
    bad = bad || pack_str(&pk, "op", 2) || pack_str(&pk, md->name, strlen(md->name));
    for (proto_mask rest = fields; rest && !bad; rest &= rest - 1)
        bad = pack_field(&pk, m, lowest_bit(rest));
    if (bad) {
        out->len = start;
        return SL_ENOMEM;
    }
    return SL_OK;
}
