/*
 * proto_json.h - the wire model in JSON: a message's fields and rows
 * written as a JSON object, and a JSON object read into a message, both
 * derived from proto.h's field and column lists (PROTO_FIELDS,
 * PROTO_COLS_<kind>), so that the HTTP API (broker/http/) spells every
 * field and column as the ZeroMQ protocol does: no per-route encoder.
 *
 * The mapping (proto/HTTP.md has it for readers):
 *   U64      a number (read: a non-negative integer, or true/false as 1/0;
 *            a level, to_level or levels item may also be a level's name)
 *   STR      a string (UTF-8)
 *   BIN      "key": the bytes as text when they are UTF-8 (read: the text's
 *            bytes), and "key_base64": the bytes in base64 (read: either)
 *   U64S     an array of numbers;  STRS  an array of strings
 *   ROWS     an array of objects, one per row, its columns by their keys
 *   HDRS     an object of strings, a message's headers in their order
 * null reads as absent. Written strings escape <, >, & and the line
 * separators, so JSON pasted into a page can never close a script.
 *
 * Pure: no I/O, no allocation but the output buffer's growth.
 */
#ifndef SLUICE_PROTO_JSON_H
#define SLUICE_PROTO_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/* ---- writing (each appends to o, growing it; SL_OK or SL_ENOMEM) ---- */

/* proto_json_raw appends text as it is (punctuation, keys known to be safe). */
int proto_json_raw(proto_wbuf *o, const char *text);

/* proto_json_printf appends a formatted piece (numbers, fixed keys). */
int proto_json_printf(proto_wbuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* proto_json_str appends s[0..len) as a JSON string; bytes that are not
 * UTF-8 become U+FFFD. */
int proto_json_str(proto_wbuf *o, const char *s, size_t len);

/* proto_json_b64 appends p[0..len) in base64 (RFC 4648, padded) as a JSON
 * string. */
int proto_json_b64(proto_wbuf *o, const void *p, size_t len);

/* proto_json_msg appends m as one JSON object: every present field but op,
 * seq and those in skip, in the model's order. */
int proto_json_msg(proto_wbuf *o, const proto_msg *m, proto_mask skip);

/* ---- reading ---- */

#define PROTO_JSON_MAX_TOKENS 4096 /* values in one document */
#define PROTO_JSON_MAX_DEPTH 8     /* nested arrays and objects */

typedef enum proto_json_kind {
    PROTO_JSON_OBJECT = 1, PROTO_JSON_ARRAY, PROTO_JSON_STRING, PROTO_JSON_NUMBER, PROTO_JSON_TRUE,
    PROTO_JSON_FALSE, PROTO_JSON_NULL
} proto_json_kind;

/* One value of a parsed document: its kind, its bytes in the text (a
 * string's without the quotes), how many items (object: keys) it holds,
 * and where the next value at its level starts. An object's items are
 * key, value, key, value, ... */
typedef struct proto_json_tok {
    uint8_t kind;
    uint32_t start, end;
    uint32_t size;
    uint32_t next;
} proto_json_tok;

typedef struct proto_json_doc {
    const char *text;
    size_t len;
    uint32_t n;
    proto_json_tok tok[PROTO_JSON_MAX_TOKENS];
} proto_json_doc;

/* proto_json_parse parses text[0..len) (RFC 8259: one value, strict; every
 * string well-formed UTF-8) into doc, whose first token is the document's
 * value. Returns SL_OK, SL_EINVAL (why names the problem and its offset),
 * or SL_ETOOBIG past PROTO_JSON_MAX_TOKENS values or PROTO_JSON_MAX_DEPTH
 * levels. */
int proto_json_parse(const char *text, size_t len, proto_json_doc *doc, char *why, size_t why_len);

/* proto_json_get returns the token of key's value in object obj, or -1. */
int proto_json_get(const proto_json_doc *doc, int obj, const char *key);

/* proto_json_string decodes string token t into out (cap bytes; the bytes
 * are never more than the escaped text's) and sets *len. Returns SL_OK, or
 * SL_EINVAL when t is not a string or out is too small. */
int proto_json_string(const proto_json_doc *doc, int t, char *out, size_t cap, size_t *len);

/* What a level may be called when a JSON value names it by name. */
typedef struct proto_json_names {
    const char *const *level;  /* level names, index = number */
    unsigned nlevels;
} proto_json_names;

/* proto_json_read reads object obj of doc into m (already proto_init'ed):
 * each key must be a field in allowed (or "key_base64" of an allowed BIN
 * field), with a value of the field's type; strings are decoded into
 * arena (arena_len bytes: doc's text length is always enough), which m
 * then points into. names (may be NULL) lets "level", "to_level", a
 * "levels" item and a row's "level" column be a level's name. Returns
 * SL_OK, or SL_EINVAL with a sentence naming the key in why. Limits (a
 * string's length, a list's items) are left to the decoder that receives
 * the message. */
int proto_json_read(const proto_json_doc *doc, int obj, proto_mask allowed, const proto_json_names *names,
                    proto_msg *m, char *arena, size_t arena_len, char *why, size_t why_len);

#endif /* SLUICE_PROTO_JSON_H */
