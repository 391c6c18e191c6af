/*
 * test_install.c - running it as a service, as a packager sees it:
 * `make install PREFIX=/usr DESTDIR=$tmp` lays out the programs, headers,
 * libsluice.a and libsluice.so.1 (its soname, sl_* only), sluice.pc (a
 * program builds against the shared library, and with --static against the
 * archive), the man pages, the hardened unit and the example sluice.conf;
 * the installed sluiced starts with the installed configuration, and a
 * program that loads the library with dlopen, uses it from a thread and
 * closes it while that thread runs ends cleanly (-z nodelete); and the
 * man pages are in step with --help: every option of `sluiced --help` and
 * `sluice --help` is in its page, which groff formats without a warning.
 *
 * The make run is the build under test (SAN=address,undefined when
 * $SLUICE_BIN is the sanitized one), already up to date: it only copies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "sluice.h"

static char out[1 << 18];

/* sh runs script with /bin/sh -c and returns its exit status; its standard
 * output (and, with 2>&1 in the script, its errors) lands in out. */
static int sh(const char *fmt, ...)
{
    char script[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(script, sizeof script, fmt, ap);
    va_end(ap);
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    return th_run(argv, NULL, out, sizeof out);
}

static int sanitized(void)
{
    const char *bin = getenv("SLUICE_BIN");
    return bin && strstr(bin, "san") != NULL;
}

static void make_install_lays_out_the_files(void **state)
{
    (void)state;
    char tmp[] = "/tmp/sluice-install-XXXXXX";
    assert_non_null(mkdtemp(tmp));
    int rc = sh("make -s --no-print-directory %s install PREFIX=/usr DESTDIR=%s 2>&1",
                sanitized() ? "SAN=address,undefined" : "", tmp);
    if (rc != 0)
        fail_msg("make install failed (%d):\n%s", rc, out);
    static const char *const files[] = {
        "usr/bin/sluiced", "usr/bin/sluice", "usr/bin/sluice-bench", "usr/bin/sluice-sink",
        "usr/include/sluice.h", "usr/include/sluice_admin.h", "usr/include/sluice_errors.h", "usr/lib/libsluice.a", "usr/lib/libsluice.so.1",
        "usr/lib/libsluice.so", "usr/lib/pkgconfig/sluice.pc", "usr/share/man/man1/sluice.1",
        "usr/share/man/man8/sluiced.8", "usr/lib/systemd/system/sluiced.service", "etc/sluice/sluice.conf",
    };
    char path[512];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", tmp, files[i]);
        if (access(path, R_OK) != 0)
            fail_msg("make install did not install %s", files[i]);
    }
    /* the shared library: its soname, and only the public API exported */
    assert_int_equal(sh("readelf -d %s/usr/lib/libsluice.so.1", tmp), 0);
    assert_non_null(strstr(out, "Library soname: [libsluice.so.1]"));
    assert_int_equal(sh("nm -D --defined-only %s/usr/lib/libsluice.so.1 | awk '$2 == \"T\" && $3 !~ /^sl_/' ", tmp), 0);
    if (out[0])
        fail_msg("libsluice.so.1 exports more than sl_*: %s", out);

    /* the unit: notify, the installed paths, the hardening */
    snprintf(path, sizeof path, "%s/usr/lib/systemd/system/sluiced.service", tmp);
    static char unit[16384];
    th_read_file(path, unit, sizeof unit);
    static const char *const lines[] = {"Type=notify", "ExecStart=/usr/bin/sluiced --config /etc/sluice/sluice.conf",
                                        "ExecReload=/bin/kill -HUP $MAINPID", "DynamicUser=yes", "User=sluice",
                                        "StateDirectory=sluice", "ProtectSystem=strict", "NoNewPrivileges=yes",
                                        "WatchdogSec="};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        if (!strstr(unit, lines[i]))
            fail_msg("the unit lacks %s:\n%s", lines[i], unit);
    assert_null(strstr(unit, "@BINDIR@"));
    /* systemd's own check, where systemd-analyze exists (the unit pointed at the staged binary) */
    if (sh("command -v systemd-analyze") == 0) {
        rc = sh("cd %s && sed 's|/usr/bin/sluiced|%s/usr/bin/sluiced|' %s > sluiced.service && "
                "MANPATH=%s/usr/share/man systemd-analyze verify ./sluiced.service 2>&1 && "
                "systemd-analyze security --offline=yes ./sluiced.service 2>&1 | grep 'Overall exposure'",
                tmp, tmp, path, tmp);
        if (rc != 0)
            fail_msg("systemd-analyze verify: %s", out);
        printf("# %s", out);
    }

    /* a program builds against the installed library: shared, then static */
    sh("printf '#include <sluice.h>\\n#include <stdio.h>\\nint main(void) { puts(sl_errname(SL_ENOTFOUND)); "
       "return 0; }\\n' > %s/x.c",
       tmp);
    const char *pc = "PKG_CONFIG_SYSROOT_DIR=%s PKG_CONFIG_PATH=%s/usr/lib/pkgconfig pkg-config";
    char pkg[600];
    snprintf(pkg, sizeof pkg, pc, tmp, tmp);
    /* the sanitized build's library needs its runtime in the program too */
    const char *cc = sanitized() ? "cc -fsanitize=address,undefined" : "cc";
    rc = sh("cd %s && %s x.c $(%s --cflags --libs sluice) -o x_shared 2>&1 && LD_LIBRARY_PATH=%s/usr/lib ./x_shared "
            "2>&1 && readelf -d x_shared | grep -c 'libsluice.so.1'",
            tmp, cc, pkg, tmp);
    if (rc != 0 || !strstr(out, "SL_ENOTFOUND\n1"))
        fail_msg("building against libsluice.so.1 with pkg-config failed (%d):\n%s", rc, out);
    rc = sh("cd %s && %s x.c $(%s --cflags sluice) $(%s --static --libs sluice | sed 's/-lsluice/-l:libsluice.a/') "
            "-o x_static 2>&1 && ./x_static 2>&1 && ! readelf -d x_static | grep -q libsluice",
            tmp, cc, pkg, pkg);
    if (rc != 0 || !strstr(out, "SL_ENOTFOUND"))
        fail_msg("building against libsluice.a with pkg-config --static failed (%d):\n%s", rc, out);

    /* the installed broker starts with the installed example configuration */
    th_broker b;
    char conf[400];
    snprintf(conf, sizeof conf, "%s/etc/sluice/sluice.conf", tmp);
    const char *extra[] = {"--config", conf, "--metrics", "127.0.0.1:0", NULL};
    assert_int_equal(th_broker_init(&b, extra), 0);
    assert_int_equal(th_broker_start(&b), 0);

    /* loaded with dlopen, used from a thread, closed with dlclose while that
     * thread runs: the thread still ends cleanly (tests/lib/dlclose_probe.c) */
    rc = sh("cd %s && %s %s/tests/lib/dlclose_probe.c -I%s/usr/include -o dlclose_probe -ldl -lpthread 2>&1 && "
            "./dlclose_probe %s/usr/lib/libsluice.so.1 %s 2>&1",
            tmp, cc, getenv("PWD") ? getenv("PWD") : ".", tmp, tmp, b.endpoint);
    size_t got = strlen(out);
    if (rc != 0 || got < 3 || strcmp(out + got - 3, "ok\n") != 0)
        fail_msg("a program that dlcloses libsluice.so.1 while a thread that used it runs failed (%d):\n%s", rc,
                 out);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
    th_rmrf(tmp);
}

/* options_in_page checks that every --option of help is in page (as roff
 * writes it, \-\-option). */
static void options_in_page(const char *help, const char *page, const char *what)
{
    unsigned n = 0;
    for (const char *p = strstr(help, "--"); p; p = strstr(p + 2, "--")) {
        size_t len = strspn(p + 2, "abcdefghijklmnopqrstuvwxyz-");
        if (!len || (p > help && p[-1] != ' ' && p[-1] != '[' && p[-1] != '(' && p[-1] != '\''))
            continue;
        char opt[80];
        snprintf(opt, sizeof opt, "\\-\\-%.*s", (int)len, p + 2);
        for (char *q = opt + 4; *q; q++)
            if (*q == '-') { /* roff writes every '-' as \- */
                memmove(q + 1, q, strlen(q) + 1);
                *q++ = '\\';
            }
        if (!strstr(page, opt))
            fail_msg("%s: --%.*s is in --help but not in the man page", what, (int)len, p + 2);
        n++;
    }
    assert_true(n >= 10);
}

static void man_pages_follow_help(void **state)
{
    (void)state;
    const char *bin = getenv("SLUICE_BIN") ? getenv("SLUICE_BIN") : "bin";
    char build[256];
    snprintf(build, sizeof build, "%s", strcmp(bin, "bin") ? bin : "build/rel/bin");
    char *slash = strrchr(build, '/');
    assert_non_null(slash);
    *slash = '\0'; /* build/rel or build/san */

    static char help[1 << 16], page[1 << 17];
    const char *sluiced_help[] = {th_bin("sluiced"), "--help", NULL};
    assert_int_equal(th_run(sluiced_help, NULL, help, sizeof help), 0);
    char path[400];
    snprintf(path, sizeof path, "%s/man/sluiced.8", build);
    assert_true(th_read_file(path, page, sizeof page) > 0);
    options_in_page(help, page, "sluiced(8)");
    const char *sluiced_man[] = {th_bin("sluiced"), "--man", NULL};
    static char fresh[1 << 17];
    assert_int_equal(th_run(sluiced_man, NULL, fresh, sizeof fresh), 0);
    assert_string_equal(fresh, page); /* the built page is the binary's */
    assert_int_equal(sh("groff -man -z -ww %s 2>&1", path), 0);
    if (out[0])
        fail_msg("groff warns about sluiced.8: %s", out);

    const char *sluice_help[] = {th_bin("sluice"), "--help", NULL};
    assert_int_equal(th_run(sluice_help, NULL, help, sizeof help), 0);
    snprintf(path, sizeof path, "%s/man/sluice.1", build);
    assert_true(th_read_file(path, page, sizeof page) > 0);
    options_in_page(help, page, "sluice(1)");
    /* every command of --help has its entry */
    for (const char *p = strstr(help, "\n  sluice "); p; p = strstr(p + 1, "\n  sluice ")) {
        char cmd[64];
        if (sscanf(p + 10, "%63s", cmd) == 1) {
            char entry[96];
            snprintf(entry, sizeof entry, "sluice %s", cmd);
            if (!strstr(page, entry))
                fail_msg("sluice(1) lacks the command '%s'", cmd);
        }
    }
    assert_int_equal(sh("groff -man -z -ww %s 2>&1", path), 0);
    if (out[0])
        fail_msg("groff warns about sluice.1: %s", out);
}

int main(void)
{
    th_seed();
    th_timeout_s = 300; /* make install may have a library to link on a busy machine */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(man_pages_follow_help, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(make_install_lays_out_the_files, th_timeout_arm, th_timeout_disarm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
