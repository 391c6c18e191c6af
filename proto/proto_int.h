/*
 * proto_int.h - what the model's tables look like, shared by the three parts
 * of the codec: proto.c (the tables and names), proto_dec.c (the guard and the
 * decoder) and proto_enc.c (the encoder). Not part of the API.
 */
#ifndef SLUICE_PROTO_INT_H
#define SLUICE_PROTO_INT_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define DIR_C2B 1
#define DIR_B2C 2
#define DIR_ANY 3

typedef struct msg_def {
    const char *name;
    int dir;
    proto_mask req, opt;
} msg_def;

/* A field: its key, type, limit (bytes, or for ROWS the row kind) and where
 * its member sits in proto_msg. */
typedef struct field_def {
    const char *key;
    uint8_t key_len;
    uint8_t type;
    uint32_t max;
    size_t offset;
} field_def;

/* A column of a row kind: its key, type, whether rows must carry it, and
 * where its member sits in the row. */
typedef struct col_def {
    const char *key;
    uint8_t key_len;
    uint8_t type;
    size_t offset;
} col_def;

/* A row kind: its columns, the most rows a list holds, and the layout of
 * proto_rows_K (n first, then the rows). */
typedef struct kind_def {
    const col_def *cols;
    uint32_t ncols;
    uint32_t most;
    uint32_t req; /* bits of the REQ columns */
    size_t row_size, rows_at;
} kind_def;

/* The tables, generated from the model in proto.h (defined in proto.c). */
extern const msg_def proto_msg_defs[PROTO_TYPE_COUNT_];
extern const field_def proto_field_defs[PROTO_F_COUNT_];
extern const kind_def proto_kind_defs[PROTO_ROWS_COUNT_];

/* proto_member is where field f sits in m. */
static inline void *proto_member(const proto_msg *m, proto_field f)
{
    return (char *)m + proto_field_defs[f].offset;
}

/* proto_json_utf8_len returns the length of the well-formed UTF-8 sequence
 * at s (n bytes left, n > 0), or 0 when there is none (proto_json_parse.c;
 * the JSON writer and parser share it). */
unsigned proto_json_utf8_len(const unsigned char *s, size_t n);

#endif /* SLUICE_PROTO_INT_H */
