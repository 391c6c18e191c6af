/*
 * proto.c - the wire model's tables and names: messages, fields, row kinds
 * and their columns, admin commands and errors, all generated from the lists
 * in proto.h; and the small helpers that build a message.
 *
 * The codec lives beside it: proto_dec.c (the guarded decoder) and
 * proto_enc.c (the encoder), which reach fields and columns through the
 * offset tables defined here, so the codec has one path per value type, not
 * one per field. Everything in proto/ is pure: no I/O, no globals that
 * change. Only proto_dec.c and proto_enc.c include msgpack.h.
 *
 * Cost: name lookups are O(entries): the field table has about fifty
 * entries, a column table under twenty, the command table about a dozen.
 */
#include "proto.h"
#include "proto_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tables derived from the model ---- */

const msg_def proto_msg_defs[PROTO_TYPE_COUNT_] = {
    [PROTO_NONE] = {"?", 0, 0, 0},
#define MSG_DEF_(ID, name, dir, req, opt) [PROTO_##ID] = {name, DIR_##dir, (req), (opt)},
    PROTO_MSGS(MSG_DEF_)
#undef MSG_DEF_
};

#define FMAX_U64(x)  (x)
#define FMAX_STR(x)  (x)
#define FMAX_BIN(x)  (x)
#define FMAX_U64S(x) (x)
#define FMAX_STRS(x) (x)
#define FMAX_ROWS(kind) PROTO_ROWS_##kind
#define FMAX_HDRS(x) (x)

const field_def proto_field_defs[PROTO_F_COUNT_] = {
#define FIELD_DEF_(m, k, t, max) \
    [PROTO_F_##m] = {k, sizeof(k) - 1, PROTO_T_##t, FMAX_##t(max), offsetof(proto_msg, m)},
    PROTO_FIELDS(FIELD_DEF_)
#undef FIELD_DEF_
};

_Static_assert(PROTO_F_COUNT_ <= 8 * sizeof(proto_mask), "a bit of the presence mask per field");

#define COL_REQ_REQ 1u
#define COL_REQ_OPT 0u
#define COL_DEF_(K, m, k, t, r) {k, sizeof(k) - 1, PROTO_T_##t, offsetof(proto_row_##K, m)},
#define COL_REQBIT_(K, m, k, t, r) | (COL_REQ_##r << PROTO_COL_##K##_##m)
#define KIND_COLS_(K, most) \
    _Static_assert(PROTO_COL_##K##_COUNT_ <= 32, "a row's presence mask is 32 bits"); \
    static const col_def cols_##K[] = {PROTO_COLS_##K(COL_DEF_, K)};
PROTO_ROW_KINDS(KIND_COLS_)
#undef KIND_COLS_

const kind_def proto_kind_defs[PROTO_ROWS_COUNT_] = {
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
    return proto_msg_defs[t].name;
}

proto_type proto_type_of(const char *name, size_t len)
{
    for (int t = PROTO_NONE + 1; t < PROTO_TYPE_COUNT_; t++)
        if (strlen(proto_msg_defs[t].name) == len && memcmp(proto_msg_defs[t].name, name, len) == 0)
            return (proto_type)t;
    return PROTO_NONE;
}

int proto_fields_of(proto_type t, proto_mask *req, proto_mask *opt)
{
    if (t <= PROTO_NONE || t >= PROTO_TYPE_COUNT_)
        return -1;
    *req = proto_msg_defs[t].req;
    *opt = proto_msg_defs[t].opt;
    return 0;
}

/* Clearing a field: a scalar to zero, a list (u64s, strs, rows, headers) to no
 * items. A list's items are never read past its n, and every writer sets
 * an item whole (a compound literal, or the decoder's memset of each row),
 * so the 30 KiB of item storage a message has is not cleared: that was a
 * memset of 30 KiB per message, three messages per request in the broker. */
#define PROTO_CLEAR_U64(x)  ((x) = 0)
#define PROTO_CLEAR_STR(x)  ((x) = (proto_buf){0})
#define PROTO_CLEAR_BIN(x)  ((x) = (proto_buf){0})
#define PROTO_CLEAR_U64S(x) ((x).n = 0)
#define PROTO_CLEAR_STRS(x) ((x).n = 0)
#define PROTO_CLEAR_ROWS(x) ((x).n = 0)
#define PROTO_CLEAR_HDRS(x) ((x).n = 0)

void proto_init(proto_msg *m, proto_type type)
{
    m->type = type;
    m->present = 0;
#define PROTO_CLEAR_(mem, k, t, max) PROTO_CLEAR_##t(m->mem);
    PROTO_FIELDS(PROTO_CLEAR_)
#undef PROTO_CLEAR_
}

int proto_has(const proto_msg *m, proto_field f)
{
    return (m->present >> f) & 1;
}

const char *proto_field_key(proto_field f)
{
    if ((int)f < 0 || f >= PROTO_F_COUNT_)
        return "?";
    return proto_field_defs[f].key;
}

int proto_field_type(proto_field f)
{
    return (int)f < 0 || f >= PROTO_F_COUNT_ ? 0 : proto_field_defs[f].type;
}

void proto_set_u64(proto_msg *m, proto_field f, uint64_t v)
{
    if (proto_field_type(f) != PROTO_T_U64)
        return;
    memcpy(proto_member(m, f), &v, sizeof v);
    m->present |= (proto_mask)1 << f;
}

static const unsigned char cmd_repeats[PROTO_CMD_COUNT_] = {
#define CMD_REPEAT_(ID, name, req, opt, res, fields) [PROTO_CMD_##ID] = PROTO_CMD_REPEAT_##ID,
    PROTO_ADMIN_CMDS(CMD_REPEAT_)
#undef CMD_REPEAT_
};

int proto_cmd_repeatable(proto_cmd c)
{
    return (int)c >= 0 && c < PROTO_CMD_COUNT_ && cmd_repeats[c] == PROTO_REPEAT_SAFE;
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
        snprintf(text, text_len, "%s needs the argument %s", d->name, proto_field_defs[lowest_field(missing)].key);
        return SL_EINVAL;
    }
    if (extra) {
        snprintf(text, text_len, "%s does not take the argument %s", d->name, proto_field_defs[lowest_field(extra)].key);
        return SL_EINVAL;
    }
    *cmd = (proto_cmd)c;
    return SL_OK;
}

void proto_set_str(proto_msg *m, proto_field f, const char *ptr, size_t len)
{
    if ((int)f < 0 || f >= PROTO_F_COUNT_ ||
        (proto_field_defs[f].type != PROTO_T_STR && proto_field_defs[f].type != PROTO_T_BIN))
        return;
    proto_buf *b = proto_member(m, f);
    b->ptr = ptr;
    b->len = (uint32_t)len;
    m->present |= (proto_mask)1 << f;
}
