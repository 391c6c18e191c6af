/*
 * test_proto_model.c - the wire model beyond the codec: the admin command
 * list's checks of a request (an unknown command, a missing or unexpected
 * argument, each named), and proto/PROTOCOL.md documenting every message,
 * field, admin command and column of the model.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "proto.h"

static void admin_commands_are_checked_by_the_list(void **state)
{
    (void)state;
    char say[PROTO_MAX_STR];
    proto_cmd cmd;
    proto_msg m;
    proto_init(&m, PROTO_ADMIN);
    proto_set(&m, seq, 1);
    proto_set_str(&m, PROTO_F_cmd, "level.sat", 9);
    assert_int_equal(proto_cmd_check(&m, &cmd, say, sizeof say), SL_EUNKNOWN);
    assert_string_equal(say, "unknown admin command 'level.sat'");
    proto_set_str(&m, PROTO_F_cmd, "level.set", 9);
    assert_int_equal(proto_cmd_check(&m, &cmd, say, sizeof say), SL_EINVAL);
    assert_string_equal(say, "level.set needs the argument level");
    proto_set(&m, level, 1);
    proto_set(&m, aging_ms, 0);
    assert_int_equal(proto_cmd_check(&m, &cmd, say, sizeof say), SL_OK);
    assert_int_equal(cmd, PROTO_CMD_level_set);
    proto_set(&m, size, 3);
    assert_int_equal(proto_cmd_check(&m, &cmd, say, sizeof say), SL_EINVAL);
    assert_string_equal(say, "level.set does not take the argument size");
    assert_int_equal(proto_cmd_of("pool.list", 9), PROTO_CMD_pool_list);
    assert_int_equal(proto_cmd_of("pool.lis", 8), -1);
    assert_string_equal(proto_cmd_name(PROTO_CMD_sink_show), "sink.show");
    assert_string_equal(proto_field_key(PROTO_F_retry_ms), "retry_after_ms");

    /* the list is consistent: a ROWS result is one ROWS field, a FIELDS
     * result some fields, NONE nothing; arguments are never results */
    for (int c = 0; c < PROTO_CMD_COUNT_; c++) {
        proto_mask req, opt, fields;
        int result;
        assert_int_equal(proto_cmd_def((proto_cmd)c, &req, &opt, &result, &fields), 0);
        assert_int_equal(proto_cmd_of(proto_cmd_name((proto_cmd)c), strlen(proto_cmd_name((proto_cmd)c))), c);
        assert_false(req & opt);
        assert_false((req | opt) & (PF(op) | PF(seq) | PF(cmd)));
        if (result == PROTO_RES_NONE)
            assert_true(fields == 0);
        else if (result == PROTO_RES_FIELDS)
            assert_true(fields != 0 && !(fields & (PF(level_rows) | PF(pool_rows) | PF(level_stats) | PF(dead_rows))));
            /* (msg.peek: its rows and where the next page goes on) */
        else
            assert_true((fields & ~PF(window_rows)) == PF(level_rows) || fields == PF(pool_rows) ||
                        fields == PF(dead_rows) || (fields & ~PF(window_rows)) == PF(tag_rows));
                        /* level.list, tag.list: their windows beside */
    }
    assert_int_equal(proto_cmd_def(PROTO_CMD_COUNT_, NULL, NULL, NULL, NULL), -1);
}

/* read_protocol returns proto/PROTOCOL.md (from the repository root, where
 * tests run, or beside this file), NUL-terminated; the caller frees it. */
static char *read_protocol(void)
{
    static const char *const paths[] = {"proto/PROTOCOL.md", "../proto/PROTOCOL.md"};
    char beside[512];
    const char *slash = strrchr(__FILE__, '/');
    snprintf(beside, sizeof beside, "%.*s/../../proto/PROTOCOL.md", slash ? (int)(slash - __FILE__) : 1,
             slash ? __FILE__ : ".");
    FILE *f = NULL;
    for (size_t i = 0; i < 2 && !f; i++)
        f = fopen(paths[i], "rb");
    if (!f)
        f = fopen(beside, "rb");
    if (!f)
        fail_msg("cannot find proto/PROTOCOL.md (run from the repository root)");
    char *doc = malloc(1 << 20);
    assert_non_null(doc);
    size_t n = fread(doc, 1, (1 << 20) - 1, f);
    fclose(f);
    doc[n] = '\0';
    return doc;
}

/* documented tells whether doc[0..len) names key in code quotes: `key`. */
static int documented_in(const char *doc, size_t len, const char *key)
{
    char quoted[128];
    int n = snprintf(quoted, sizeof quoted, "`%s`", key);
    return memmem(doc, len, quoted, (size_t)n) != NULL;
}

static int documented(const char *doc, const char *key)
{
    return documented_in(doc, strlen(doc), key);
}

/* kind_table finds the column table of row kind K in doc: from the line
 * that opens with `K` ( to the blank line after its table. */
static const char *kind_table(const char *doc, const char *kind, size_t *len)
{
    char head[64];
    snprintf(head, sizeof head, "\n`%s` (", kind);
    const char *start = strstr(doc, head), *table = start ? strstr(start, "\n|") : NULL;
    if (!table)
        return NULL;
    const char *end = strstr(table, "\n\n");
    *len = end ? (size_t)(end - start) : strlen(start);
    return start;
}

static void protocol_md_documents_the_model(void **state)
{
    (void)state;
    char *doc = read_protocol();
    int missing = 0;
    for (int c = 0; c < PROTO_CMD_COUNT_; c++)
        if (!documented(doc, proto_cmd_name((proto_cmd)c))) {
            print_error("admin command %s is not in proto/PROTOCOL.md\n", proto_cmd_name((proto_cmd)c));
            missing++;
        }
    for (int f = 0; f < PROTO_F_COUNT_; f++)
        if (!documented(doc, proto_field_key((proto_field)f))) {
            print_error("field %s is not in proto/PROTOCOL.md\n", proto_field_key((proto_field)f));
            missing++;
        }
    /* each kind's columns in that kind's table */
    const char *table;
    size_t len = 0;
#define COL_DOC_(K, mm, k, t, req) \
    if (!table || !documented_in(table, len, k)) { \
        print_error("column %s is not in the table of %s rows in proto/PROTOCOL.md\n", k, #K); \
        missing++; \
    }
#define KIND_DOC_(K, most) table = kind_table(doc, #K, &len); PROTO_COLS_##K(COL_DOC_, K)
    PROTO_ROW_KINDS(KIND_DOC_)
#undef KIND_DOC_
#undef COL_DOC_
    free(doc);
    assert_int_equal(missing, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(admin_commands_are_checked_by_the_list),
        cmocka_unit_test(protocol_md_documents_the_model),
    };
    return cmocka_run_group_tests_name("proto_model", tests, NULL, NULL);
}
