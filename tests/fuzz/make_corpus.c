/*
 * make_corpus.c - writes the decoder fuzzer's seed corpus and dictionary.
 *
 * The seeds are one valid message per type in PROTO_MSGS, each carrying its
 * required and optional fields with plausible values (ROWS fields three rows
 * of every column), encoded by proto_encode; for every admin command of
 * PROTO_ADMIN_CMDS a request and, when it answers with something, its
 * ADMIN_OK; and the malformed inputs that tests/unit/test_proto.c pins down (huge
 * declared sizes, deep nesting, too many objects, trailing bytes, bad rows).
 * The dictionary holds every field key, every column key, every message name
 * and every command name as a msgpack string, so mutations reach the
 * per-field and per-column checks instead of stalling at "unknown key".
 *
 * Everything is derived from the model in proto/proto.h and the output is
 * deterministic: run tests/fuzz/make_corpus.sh after changing the model and
 * commit what changed. The fuzzer never writes into this corpus.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

static const char *const names[] = {"high", "normal", "low"};

/* fill_rows_K sets three rows of kind K (fewer if the kind allows fewer) (level names, or "pool0".."pool2"),
 * every column set, numbers in every integer width. */
static const char *const pools[] = {"pool0", "pool1", "pool2"};
#define COL_FILL_U64(K, mm) r->mm = (uint64_t)(PROTO_COL_##K##_##mm + 1) << (8 * i);
#define COL_FILL_STR(K, mm) \
    r->mm = (proto_buf){names_of[i], (uint32_t)strlen(names_of[i])};
#define COL_FILL_(K, mm, k, t, req) COL_FILL_##t(K, mm)
#define FILL_KIND_(K, most) \
    static void fill_rows_##K(proto_rows_##K *rows) \
    { \
        const char *const *names_of = PROTO_ROWS_##K == PROTO_ROWS_pool ? pools : names; \
        (void)names_of; /* a kind without string columns (window) */ \
        rows->n = (most) < 3 ? (most) : 3; \
        for (uint32_t i = 0; i < rows->n; i++) { \
            proto_row_##K *r = &rows->v[i]; \
            r->present = PROTO_ROW_ALL(K); \
            PROTO_COLS_##K(COL_FILL_, K) \
        } \
    }
PROTO_ROW_KINDS(FILL_KIND_)
#undef FILL_KIND_

/* fill sets every field in mask to a value a real peer could send. */
static void fill(proto_msg *m, proto_mask mask)
{
    static const char body[] = "hello world";
#define FILL_U64(mm, x)  m->mm = 1 + PROTO_F_##mm;
#define FILL_STR(mm, x)  m->mm = (proto_buf){#mm, sizeof #mm - 1};
#define FILL_BIN(mm, x)  m->mm = (proto_buf){body, sizeof body - 1};
#define FILL_U64S(mm, x) m->mm.n = 3; for (uint32_t i = 0; i < 3; i++) m->mm.v[i] = i + PROTO_F_##mm;
#define FILL_STRS(mm, x) m->mm.n = 3; for (uint32_t i = 0; i < 3; i++) \
        m->mm.v[i] = (proto_buf){names[i], (uint32_t)strlen(names[i])};
#define FILL_ROWS(mm, kind) fill_rows_##kind(&m->mm);
#define FILL_HDRS(mm, x) m->mm.n = 2; m->mm.name[0] = (proto_buf){"traceparent", 11}; \
    m->mm.value[0] = (proto_buf){"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", 55}; \
    m->mm.name[1] = (proto_buf){"X-Custom", 8}; m->mm.value[1] = (proto_buf){"", 0};
#define FILL_(mm, k, t, max) if (mask & PF(mm)) { FILL_##t(mm, max) }
    PROTO_FIELDS(FILL_)
#undef FILL_
    m->present |= mask;
    /* a few values the broker would actually see, in every integer width */
    m->seq = 70000;
    m->id = UINT64_MAX;
    m->token = UINT64_C(1) << 40;
    m->n = 300;
    m->credit = 200;
    m->v = PROTO_VERSION;
    m->level = 1;
    m->attempt = 1;
    m->code = SL_ENOLEVEL;
    m->levels.n = 2;
    m->levels.v[0] = 0;
    m->levels.v[1] = 2;
    m->tag = (proto_buf){"paying", 6};
    m->pool = (proto_buf){"default", 7};
    m->cmd = (proto_buf){"pool.list", 9};
    m->state = (proto_buf){"ready", 5};
    m->scope = (proto_buf){"tag", 3}; /* THROTTLED: a tag's own limit */
    m->msg = (proto_buf){"no such level: this broker has high, normal and low", 51}; /* str8 */
}

static int write_file(const char *dir, const char *name, const void *p, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        return -1;
    }
    int bad = fwrite(p, 1, len, f) != len;
    bad |= fclose(f) != 0;
    if (bad)
        perror(path);
    return bad ? -1 : 0;
}

static int write_valid(const char *dir)
{
    for (int t = PROTO_NONE + 1; t < PROTO_TYPE_COUNT_; t++) {
        proto_mask req, opt;
        proto_msg m;
        proto_wbuf buf = {0};
        char name[64];
        if (proto_fields_of((proto_type)t, &req, &opt))
            return -1;
        proto_init(&m, (proto_type)t);
        fill(&m, req | opt);
        int rc = proto_encode(&m, &buf);
        if (rc) {
            fprintf(stderr, "make_corpus: encoding %s: %s\n", proto_name((proto_type)t), proto_strerror(rc));
            return -1;
        }
        if ((rc = proto_decode(buf.data, buf.len, &m, NULL))) {
            fprintf(stderr, "make_corpus: %s does not decode: %s\n", proto_name((proto_type)t),
                    proto_strerror(rc));
            return -1;
        }
        size_t i = 0;
        for (const char *s = proto_name((proto_type)t); *s && i < sizeof name - 1; s++)
            name[i++] = (char)tolower((unsigned char)*s);
        snprintf(name + i, sizeof name - i, ".msgpack");
        rc = write_file(dir, name, buf.data, buf.len);
        proto_wbuf_free(&buf);
        if (rc)
            return -1;
    }
    return 0;
}

/* write_msg encodes m (which must be valid) into dir/name. */
static int write_msg(const char *dir, const char *name, const proto_msg *m)
{
    proto_wbuf buf = {0};
    int rc = proto_encode(m, &buf);
    if (rc) {
        fprintf(stderr, "make_corpus: encoding %s: %s\n", name, proto_strerror(rc));
        return -1;
    }
    rc = write_file(dir, name, buf.data, buf.len);
    proto_wbuf_free(&buf);
    return rc;
}

/* write_admin writes, for every admin command, a request with its required
 * arguments and an ADMIN_OK with its results: level.list's and pool.list's
 * rows alone, sink.show's and explain's fields. */
static int write_admin(const char *dir)
{
    for (int c = 0; c < PROTO_CMD_COUNT_; c++) {
        proto_mask req, fields;
        proto_msg m;
        char name[96];
        const char *cmd = proto_cmd_name((proto_cmd)c);
        proto_cmd_def((proto_cmd)c, &req, NULL, NULL, &fields);
        proto_init(&m, PROTO_ADMIN);
        fill(&m, PF(seq) | req);
        m.cmd = (proto_buf){cmd, (uint32_t)strlen(cmd)};
        m.present |= PF(cmd);
        snprintf(name, sizeof name, "admin-%s.msgpack", cmd);
        if (write_msg(dir, name, &m))
            return -1;
        if (!fields)
            continue;
        proto_init(&m, PROTO_ADMIN_OK);
        fill(&m, PF(seq) | fields);
        snprintf(name, sizeof name, "admin_ok-%s.msgpack", cmd);
        if (write_msg(dir, name, &m))
            return -1;
    }
    return 0;
}

/* write_times writes publishes and a NACK whose times are past
 * PROTO_MAX_TIME_MS (the broker refuses them with SL_EINVAL) or exactly at it. */
static int write_times(const char *dir)
{
    static const struct {
        const char *name;
        proto_type type;
        uint64_t ttl_ms, delay_ms;
    } cases[] = {
        {"time-put-ttl-max-u64.msgpack", PROTO_PUT, UINT64_MAX, 0},
        {"time-put-delay-max-u64.msgpack", PROTO_PUT, 0, UINT64_MAX},
        {"time-put-ttl-over-limit.msgpack", PROTO_PUT, PROTO_MAX_TIME_MS + 1, 0},
        {"time-put-at-limit.msgpack", PROTO_PUT, PROTO_MAX_TIME_MS, PROTO_MAX_TIME_MS},
        {"time-nack-delay-max-u64.msgpack", PROTO_NACK, 0, UINT64_MAX},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        proto_msg m;
        proto_init(&m, cases[i].type);
        if (cases[i].type == PROTO_PUT) {
            fill(&m, PF(seq) | PF(body) | PF(level));
            if (cases[i].ttl_ms)
                proto_set(&m, ttl_ms, cases[i].ttl_ms);
        } else {
            fill(&m, PF(seq) | PF(token));
        }
        if (cases[i].delay_ms)
            proto_set(&m, delay_ms, cases[i].delay_ms);
        if (write_msg(dir, cases[i].name, &m))
            return -1;
    }
    return 0;
}

/* write_utf8 writes publishes whose tag is not UTF-8 (a lone continuation
 * byte, a truncated sequence, an overlong '/', a surrogate, past U+10FFFF:
 * each SL_EPROTO) and one whose tag is ("café"). */
static int write_utf8(const char *dir)
{
    static const struct {
        const char *name, *tag;
    } cases[] = {
        {"utf8-bad-continuation.msgpack", "a\x80" "b"},
        {"utf8-bad-truncated.msgpack", "ab\xe2\x82"},
        {"utf8-bad-overlong.msgpack", "\xc0\xaf"},
        {"utf8-bad-surrogate.msgpack", "\xed\xa0\x80"},
        {"utf8-bad-past-max.msgpack", "\xf4\x90\x80\x80"},
        {"utf8-good-tag.msgpack", "caf\xc3\xa9"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        proto_msg m;
        proto_init(&m, PROTO_PUT);
        fill(&m, PF(seq) | PF(body) | PF(tag));
        m.tag = (proto_buf){cases[i].tag, (uint32_t)strlen(cases[i].tag)};
        if (write_msg(dir, cases[i].name, &m))
            return -1;
    }
    return 0;
}

/* The malformed inputs of tests/unit/test_proto.c. */
static int write_bad(const char *dir)
{
    static const unsigned char map32[] = {0xdf, 0xff, 0xff, 0xff, 0xff};
    static const unsigned char arr32[] = {0x81, 0xa2, 'o', 'p', 0xdd, 0x7f, 0xff, 0xff, 0xff};
    static const unsigned char bin32[] = {0x81, 0xa2, 'o', 'p', 0xc6, 0x7f, 0xff, 0xff, 0xff, 0x00};
    static const unsigned char str32[] = {0x81, 0xa2, 'o', 'p', 0xdb, 0x00, 0x10, 0x00, 0x00, 'P'};
    static const unsigned char map16[] = {0xde, 0xff, 0xff, 0xa2, 'o', 'p'};
    static const unsigned char deep[] = {0x81, 0xa2, 'o', 'p', 0x91, 0x91, 0x91, 0x01};
    static const unsigned char trailing[] = {0x81, 0xa2, 'o', 'p', 0xa4, 'P', 'I', 'N', 'G', 0x00};
    static const unsigned char ext[] = {0x81, 0xa2, 'o', 'p', 0xd4, 0x01, 0x02};
    static const unsigned char neg_seq[] = {0x83, 0xa2, 'o', 'p', 0xa3, 'P', 'U', 'T', 0xa3, 's', 'e', 'q',
                                            0xff, 0xa4, 'b', 'o', 'd', 'y', 0xa1, 'x'};
    /* {"op": [40 x [60 x 1]]}: every array within bounds, 2443 objects */
    unsigned char many[4 + 3 + 40 * 63];
    memcpy(many, (const unsigned char[]){0x81, 0xa2, 'o', 'p', 0xdc, 0x00, 40}, 7);
    for (int i = 0; i < 40; i++) {
        memcpy(many + 7 + 63 * i, (const unsigned char[]){0xdc, 0x00, 60}, 3);
        memset(many + 7 + 63 * i + 3, 0x01, 60);
    }
    /* {"op":"ADMIN_OK","seq":7,"pool_rows":[{"size":"big"}]}: a mistyped column,
     * and the same with a row that holds an array (too deep) */
    static const unsigned char bad_col[] = {0x83, 0xa2, 'o', 'p', 0xa8, 'A', 'D', 'M', 'I', 'N', '_', 'O', 'K',
                                            0xa3, 's', 'e', 'q', 0x07, 0xa9, 'p', 'o', 'o', 'l', '_', 'r', 'o',
                                            'w', 's', 0x91, 0x81, 0xa4, 's', 'i', 'z', 'e', 0xa3, 'b', 'i', 'g'};
    static const unsigned char deep_row[] = {0x83, 0xa2, 'o', 'p', 0xa8, 'A', 'D', 'M', 'I', 'N', '_', 'O', 'K',
                                             0xa3, 's', 'e', 'q', 0x07, 0xa9, 'p', 'o', 'o', 'l', '_', 'r', 'o',
                                             'w', 's', 0x91, 0x81, 0xa4, 'n', 'a', 'm', 'e', 0x91, 0x01};
    return write_file(dir, "bad-map32-4g-pairs", map32, sizeof map32) ||
           write_file(dir, "bad-array32-2g-items", arr32, sizeof arr32) ||
           write_file(dir, "bad-bin32-2gib", bin32, sizeof bin32) ||
           write_file(dir, "bad-str32-1mib", str32, sizeof str32) ||
           write_file(dir, "bad-map16-64k-pairs", map16, sizeof map16) ||
           write_file(dir, "bad-deep-nesting", deep, sizeof deep) ||
           write_file(dir, "bad-trailing-byte", trailing, sizeof trailing) ||
           write_file(dir, "bad-ext-type", ext, sizeof ext) ||
           write_file(dir, "bad-negative-seq", neg_seq, sizeof neg_seq) ||
           write_file(dir, "bad-too-many-objects", many, sizeof many) ||
           write_file(dir, "bad-row-mistyped-column", bad_col, sizeof bad_col) ||
           write_file(dir, "bad-row-too-deep", deep_row, sizeof deep_row) ? -1 : 0;
}

/* dict_entry prints s as a msgpack string (fixstr, or str8 past 31 bytes) in
 * libFuzzer's dictionary syntax. */
static void dict_entry(FILE *f, const char *kind, const char *s)
{
    size_t len = strlen(s);
    if (len < 32)
        fprintf(f, "%s_%s=\"\\x%02x", kind, s, 0xa0 | (unsigned)len);
    else
        fprintf(f, "%s_%s=\"\\xd9\\x%02x", kind, s, (unsigned)len);
    for (; *s; s++)
        fputc(*s, f);
    fputs("\"\n", f);
}

static int write_dict(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return -1;
    }
    fputs("# Generated by tests/fuzz/make_corpus.c from proto/proto.h: field keys and message names as msgpack strings.\n", f);
#define DICT_KEY_(m, k, t, max) dict_entry(f, "key", k);
    PROTO_FIELDS(DICT_KEY_)
#undef DICT_KEY_
#define DICT_COL_(K, mm, k, t, req) dict_entry(f, "col_" #K, k);
#define DICT_KIND_(K, most) PROTO_COLS_##K(DICT_COL_, K)
    PROTO_ROW_KINDS(DICT_KIND_)
#undef DICT_KIND_
#undef DICT_COL_
    for (int t = PROTO_NONE + 1; t < PROTO_TYPE_COUNT_; t++)
        dict_entry(f, "op", proto_name((proto_type)t));
    for (int c = 0; c < PROTO_CMD_COUNT_; c++)
        dict_entry(f, "cmd", proto_cmd_name((proto_cmd)c));
    if (fclose(f)) {
        perror(path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: make_corpus CORPUS_DIR DICT_FILE\n");
        return 2;
    }
    if (write_valid(argv[1]) || write_admin(argv[1]) || write_times(argv[1]) || write_utf8(argv[1]) || write_bad(argv[1]) || write_dict(argv[2]))
        return 1;
    return 0;
}
