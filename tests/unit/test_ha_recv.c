/*
 * test_ha_recv.c - a standby's copy of its primary's store (ha_recv.c) in
 * a temporary directory: received, checked, swapped in; bad chunks and a
 * whole that does not check discard the copy and leave the store alone.
 *
 * Pinned down: a copy written in chunks, ended with its size and CRC-32C,
 * is complete (no marker) with the epoch file in it, and the swap puts it
 * at DATA, the old store kept at DATA.replaced-EPOCH-RECORD-TIME; a chunk
 * with a wrong checksum, out of order, or past the announced size is
 * refused (SL_ECORRUPT) and the copy, freed, is gone while DATA is as it
 * was, and the swap finds nothing (SL_ENOTFOUND); a whole with a wrong
 * checksum or a missing tail is refused likewise; a cut-short copy left
 * beside DATA (its marker) is removed by the next copy's start, anything
 * else there is kept aside as DATA.kept-*; a marked copy is never swapped in.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "harness.h"
#include "ha_recv.h"
#include "proto.h"

static char tmp[64], data[128];

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    strcpy(tmp, "/tmp/sluice-harecv-XXXXXX");
    if (!mkdtemp(tmp))
        return -1;
    snprintf(data, sizeof data, "%s/data", tmp);
    if (mkdir(data, 0750) != 0)
        return -1;
    char f[200];
    snprintf(f, sizeof f, "%s/data.mdb", data);
    put_file(f, "the old store");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    th_rmrf(tmp);
    return 0;
}

static int exists(const char *fmt, const char *a)
{
    char p[300];
    snprintf(p, sizeof p, fmt, a);
    return access(p, F_OK) == 0;
}

/* count counts the entries of tmp whose names start with prefix. */
static int count(const char *prefix)
{
    DIR *d = opendir(tmp);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += !strncmp(e->d_name, prefix, strlen(prefix));
    if (d)
        closedir(d);
    return n;
}

static void old_store_intact(void)
{
    char f[200], buf[64];
    snprintf(f, sizeof f, "%s/data.mdb", data);
    th_read_file(f, buf, sizeof buf);
    assert_string_equal(buf, "the old store");
}

static unsigned char copy[1000];

static void fill(void)
{
    for (size_t i = 0; i < sizeof copy; i++)
        copy[i] = (unsigned char)(i * 7 + 3);
}

static void a_checked_copy_is_swapped_in_and_the_old_store_kept(void **state)
{
    (void)state;
    fill();
    ha_recv *r = NULL;
    assert_int_equal(ha_recv_begin(data, sizeof copy, &r), SL_OK);
    assert_true(exists("%s.copy/copy.partial", data));
    for (size_t off = 0; off < sizeof copy; off += 300) {
        size_t n = sizeof copy - off < 300 ? sizeof copy - off : 300;
        assert_int_equal(ha_recv_write(r, off, copy + off, n, crc32c_extend(0, copy + off, n)), SL_OK);
    }
    assert_int_equal(ha_recv_got(r), sizeof copy);
    assert_int_equal(ha_recv_end(r, sizeof copy, crc32c_extend(0, copy, sizeof copy), 7), SL_OK);
    assert_false(exists("%s.copy/copy.partial", data));
    assert_true(exists("%s.copy/ha.epoch", data));
    ha_recv_free(&r);
    assert_true(exists("%s.copy/data.mdb", data)); /* complete: kept by free */
    char aside[300];
    assert_int_equal(ha_recv_swap(data, 3, 41, aside, sizeof aside), SL_OK);
    assert_non_null(strstr(aside, "/data.replaced-3-41-"));
    assert_false(exists("%s.copy", data));
    assert_int_equal(count("data.replaced-3-41-"), 1);
    char f[320], buf[64];
    snprintf(f, sizeof f, "%s/data.mdb", aside);
    th_read_file(f, buf, sizeof buf);
    assert_string_equal(buf, "the old store");
    snprintf(f, sizeof f, "%s/data.mdb", data);
    unsigned char got[sizeof copy + 1];
    int fd = open(f, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, got, sizeof got), sizeof copy);
    close(fd);
    assert_memory_equal(got, copy, sizeof copy);
}

static void bad_chunks_discard_the_copy(void **state)
{
    (void)state;
    fill();
    ha_recv *r = NULL;
    char aside[300];
    /* a wrong checksum; a chunk out of order; one past the size */
    for (int k = 0; k < 3; k++) {
        assert_int_equal(ha_recv_begin(data, sizeof copy, &r), SL_OK);
        assert_int_equal(ha_recv_write(r, 0, copy, 500, crc32c_extend(0, copy, 500)), SL_OK);
        if (k == 0)
            assert_int_equal(ha_recv_write(r, 500, copy + 500, 500, crc32c_extend(0, copy, 500)), SL_ECORRUPT);
        else if (k == 1)
            assert_int_equal(ha_recv_write(r, 600, copy + 600, 100, crc32c_extend(0, copy + 600, 100)), SL_ECORRUPT);
        else
            assert_int_equal(ha_recv_write(r, 500, copy, 600, crc32c_extend(0, copy, 600)), SL_ECORRUPT);
        ha_recv_free(&r);
        assert_false(exists("%s.copy", data));
        old_store_intact();
        assert_int_equal(ha_recv_swap(data, 1, 1, aside, sizeof aside), SL_ENOTFOUND);
    }
    /* a whole that does not check: its checksum, its length */
    for (int k = 0; k < 2; k++) {
        assert_int_equal(ha_recv_begin(data, sizeof copy, &r), SL_OK);
        size_t n = k ? sizeof copy - 1 : sizeof copy;
        assert_int_equal(ha_recv_write(r, 0, copy, n, crc32c_extend(0, copy, n)), SL_OK);
        assert_int_equal(ha_recv_end(r, sizeof copy, crc32c_extend(0, copy, sizeof copy) ^ (k ? 0 : 1), 1),
                         SL_ECORRUPT);
        ha_recv_free(&r);
        assert_false(exists("%s.copy", data));
        old_store_intact();
    }
    assert_int_equal(count("data.replaced-"), 0);
}

static void a_cut_short_copy_is_removed_and_anything_else_kept(void **state)
{
    (void)state;
    char d[200], f[220], aside[300];
    /* a copy cut short (a killed standby's): its marker */
    snprintf(d, sizeof d, "%s.copy", data);
    assert_int_equal(mkdir(d, 0750), 0);
    snprintf(f, sizeof f, "%s/copy.partial", d);
    put_file(f, "");
    snprintf(f, sizeof f, "%s/data.mdb", d);
    put_file(f, "half a copy");
    assert_int_equal(ha_recv_swap(data, 1, 1, aside, sizeof aside), SL_ENOTFOUND); /* never swapped in */
    ha_recv *r = NULL;
    assert_int_equal(ha_recv_begin(data, 10, &r), SL_OK);
    assert_int_equal(ha_recv_got(r), 0);
    ha_recv_free(&r);
    assert_false(exists("%s", d));
    assert_int_equal(count("data.kept-"), 0);
    /* something else there (no marker): kept aside */
    assert_int_equal(mkdir(d, 0750), 0);
    snprintf(f, sizeof f, "%s/data.mdb", d);
    put_file(f, "not a copy being received");
    assert_int_equal(ha_recv_begin(data, 10, &r), SL_OK);
    ha_recv_free(&r);
    assert_int_equal(count("data.kept-"), 1);
    assert_false(exists("%s", d));
    old_store_intact();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_checked_copy_is_swapped_in_and_the_old_store_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_chunks_discard_the_copy, setup, teardown),
        cmocka_unit_test_setup_teardown(a_cut_short_copy_is_removed_and_anything_else_kept, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
