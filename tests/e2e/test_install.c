/*
 * test_install.c - running it as a service, as a packager sees it:
 * `make install PREFIX=/usr DESTDIR=$tmp` lays out the programs, headers,
 * libsluice.a and libsluice.so.1 (its soname, sl_* only), sluice.pc (a
 * program builds against the shared library, and with --static against the
 * archive), the five man pages, the hardened unit (whose Documentation=
 * passes systemd-analyze verify: man: URIs under /usr/share/man, file: URIs
 * under a MANDIR man does not search), the example sluice.conf and the
 * Grafana dashboard; the installed sluiced starts with the installed
 * configuration, and a program that loads the library with dlopen, uses it
 * from a thread and closes it while that thread runs ends cleanly (-z
 * nodelete). With another PREFIX, the pages and the example name the config
 * file where it is installed.
 *
 * The man pages: sluiced(8), sluice.conf(5), sluice(1), sluice-bench(1) and
 * sluice-sink(1) are in step with the programs (every option of --help is
 * in its page, and the pages sluiced writes are the built ones); each one
 * formats without a groff warning, renders with man -l within 80 columns,
 * names the others under SEE ALSO and the programs' version. sluice.conf(5)
 * holds every key of the settings table by section, says which ones a
 * SIGHUP applies (and those are the ones the broker applies), and its
 * example loads. Every program answers --version as sluice does, with one
 * version, and sluiced --help names the config file as installed.
 *
 * The make run is the build under test (SAN=address,undefined when
 * $SLUICE_BIN is the sanitized one), already up to date: it only copies.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "conf.h"
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

/* The five pages, as make builds them under $(BUILD)/man and installs them. */
static const struct {
    const char *file, *program; /* program: whose --help the page follows ("" for sluice.conf) */
} pages[] = {
    {"sluiced.8", "sluiced"}, {"sluice.conf.5", ""}, {"sluice.1", "sluice"},
    {"sluice-bench.1", "sluice-bench"}, {"sluice-sink.1", "sluice-sink"},
};
#define NPAGES (sizeof pages / sizeof pages[0])

/* build_dir writes the build under test (build/rel or build/san) into dir. */
static void build_dir(char *dir, size_t len)
{
    const char *bin = getenv("SLUICE_BIN") ? getenv("SLUICE_BIN") : "bin";
    snprintf(dir, len, "%s", strcmp(bin, "bin") ? bin : "build/rel/bin");
    char *slash = strrchr(dir, '/');
    assert_non_null(slash);
    *slash = '\0';
}

/* read_page reads built page i into buf. */
static void read_page(size_t i, char *buf, size_t len)
{
    char build[256], path[400];
    build_dir(build, sizeof build);
    snprintf(path, sizeof path, "%s/man/%s", build, pages[i].file);
    if (th_read_file(path, buf, len) == 0)
        fail_msg("make did not build %s", path);
}

/* version_of runs program --version and writes its version (the second
 * word of its first line) into v; the first word must be the program's
 * name, as `sluice --version` says "sluice 1.0.0 (wire protocol 2)". */
static void version_of(const char *program, char *v, size_t len)
{
    const char *argv[] = {th_bin(program), "--version", NULL};
    int rc = th_run(argv, NULL, out, sizeof out);
    if (rc != 0)
        fail_msg("%s --version exits %d:\n%s", program, rc, out);
    char name[64], ver[64];
    if (sscanf(out, "%63s %63s", name, ver) != 2 || strcmp(name, program) != 0 || !strchr(ver, '.'))
        fail_msg("%s --version says '%s', not '%s VERSION'", program, out, program);
    snprintf(v, len, "%s", ver);
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
        "usr/include/sluice.h", "usr/include/sluice_pace.h", "usr/include/sluice_admin.h",
        "usr/include/sluice_errors.h", "usr/lib/libsluice.a", "usr/lib/libsluice.so.1",
        "usr/lib/libsluice.so", "usr/lib/pkgconfig/sluice.pc", "usr/share/man/man1/sluice.1",
        "usr/share/man/man1/sluice-bench.1", "usr/share/man/man1/sluice-sink.1", "usr/share/man/man5/sluice.conf.5",
        "usr/share/man/man8/sluiced.8", "usr/lib/systemd/system/sluiced.service", "etc/sluice/sluice.conf",
        "usr/share/sluice/grafana-sluice.json",
    };
    char path[512];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", tmp, files[i]);
        if (access(path, R_OK) != 0)
            fail_msg("make install did not install %s", files[i]);
    }
    /* the dashboard as shipped; the pages as built (with /etc as SYSCONFDIR, nothing to rewrite) */
    assert_int_equal(sh("cmp tools/dist/grafana-sluice.json %s/usr/share/sluice/grafana-sluice.json 2>&1", tmp), 0);
    char build[256];
    build_dir(build, sizeof build);
    for (size_t i = 0; i < NPAGES; i++) {
        const char *ext = strrchr(pages[i].file, '.') + 1;
        if (sh("cmp %s/man/%s %s/usr/share/man/man%s/%s 2>&1", build, pages[i].file, tmp, ext, pages[i].file) != 0)
            fail_msg("the installed %s is not the built one: %s", pages[i].file, out);
    }

    /* the shared library: its soname, and only the public API exported */
    assert_int_equal(sh("readelf -d %s/usr/lib/libsluice.so.1", tmp), 0);
    assert_non_null(strstr(out, "Library soname: [libsluice.so.1]"));
    assert_int_equal(sh("nm -D --defined-only %s/usr/lib/libsluice.so.1 | awk '$2 == \"T\" && $3 !~ /^sl_/' ", tmp), 0);
    if (out[0])
        fail_msg("libsluice.so.1 exports more than sl_*: %s", out);

    /* the unit: notify, the installed paths, the hardening, the man pages */
    snprintf(path, sizeof path, "%s/usr/lib/systemd/system/sluiced.service", tmp);
    static char unit[16384];
    th_read_file(path, unit, sizeof unit);
    static const char *const lines[] = {"Type=notify", "ExecStart=/usr/bin/sluiced --config /etc/sluice/sluice.conf",
                                        "ExecReload=/bin/kill -HUP $MAINPID", "DynamicUser=yes", "User=sluice",
                                        "StateDirectory=sluice", "ProtectSystem=strict", "NoNewPrivileges=yes",
                                        "WatchdogSec=",
                                        "\nDocumentation=man:sluiced(8) man:sluice.conf(5) man:sluice(1)\n"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        if (!strstr(unit, lines[i]))
            fail_msg("the unit lacks %s:\n%s", lines[i], unit);
    assert_null(strstr(unit, "@BINDIR@"));
    assert_null(strstr(unit, "@DOCUMENTATION@"));
    /* systemd's own check, where systemd-analyze exists (the unit pointed at the staged binary;
     * man finds the pages where they are staged, as it will where they are installed) */
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
    char conf_path[400];
    snprintf(conf_path, sizeof conf_path, "%s/etc/sluice/sluice.conf", tmp);
    const char *extra[] = {"--config", conf_path, "--metrics", "127.0.0.1:0", NULL};
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

/* Under another PREFIX, SYSCONFDIR is PREFIX/etc and MANDIR one man does not
 * search: the pages and the example name the config file there, and the
 * unit points at the pages with file: URIs, which systemd-analyze verify
 * accepts without a MANPATH. */
static void make_install_elsewhere_names_its_own_paths(void **state)
{
    (void)state;
    char tmp[] = "/tmp/sluice-install-XXXXXX";
    assert_non_null(mkdtemp(tmp));
    int rc = sh("make -s --no-print-directory %s install PREFIX=/opt/sluice DESTDIR=%s 2>&1",
                sanitized() ? "SAN=address,undefined" : "", tmp);
    if (rc != 0)
        fail_msg("make install failed (%d):\n%s", rc, out);
    static char text[1 << 17];
    char path[512];
    static const char *const named[] = {"share/man/man8/sluiced.8", "share/man/man5/sluice.conf.5",
                                        "etc/sluice/sluice.conf"};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        snprintf(path, sizeof path, "%s/opt/sluice/%s", tmp, named[i]);
        assert_true(th_read_file(path, text, sizeof text) > 0);
        if (!strstr(text, "/opt/sluice/etc/sluice/sluice.conf"))
            fail_msg("%s does not name /opt/sluice/etc/sluice/sluice.conf", named[i]);
        for (const char *p = strstr(text, "/etc/sluice/"); p; p = strstr(p + 1, "/etc/sluice/"))
            if (p - text < 11 || strncmp(p - 11, "/opt/sluice", 11) != 0)
                fail_msg("%s still names %.40s", named[i], p);
    }
    snprintf(path, sizeof path, "%s/opt/sluice/lib/systemd/system/sluiced.service", tmp);
    static char unit[16384];
    th_read_file(path, unit, sizeof unit);
    if (!strstr(unit, "\nDocumentation=file:/opt/sluice/share/man/man8/sluiced.8 "
                      "file:/opt/sluice/share/man/man5/sluice.conf.5 file:/opt/sluice/share/man/man1/sluice.1\n"))
        fail_msg("the unit does not point at the installed pages:\n%s", unit);
    if (sh("command -v systemd-analyze") == 0) {
        rc = sh("cd %s && sed 's|/opt/sluice/bin/sluiced|%s/opt/sluice/bin/sluiced|' %s > sluiced.service && "
                "env -u MANPATH systemd-analyze verify ./sluiced.service 2>&1",
                tmp, tmp, path);
        if (rc != 0 || out[0])
            fail_msg("systemd-analyze verify (%d): %s", rc, out);
    }
    th_rmrf(tmp);
}

/* options_in_page checks that every --option of help is in page (as roff
 * writes it, \-\-option), and that help has at least min of them. */
static void options_in_page(const char *help, const char *page, const char *what, unsigned min)
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
    assert_true(n >= min);
}

static void man_pages_follow_help(void **state)
{
    (void)state;
    static char help[1 << 16], page[1 << 17], fresh[1 << 17];
    for (size_t i = 0; i < NPAGES; i++) {
        if (!pages[i].program[0])
            continue;
        /* sluice --help is an overview; its page is made from `sluice help --all` */
        bool sluice = strcmp(pages[i].program, "sluice") == 0;
        const char *argv[] = {th_bin(pages[i].program), sluice ? "help" : "--help", sluice ? "--all" : NULL,
                              NULL};
        assert_int_equal(th_run(argv, NULL, help, sizeof help), 0);
        read_page(i, page, sizeof page);
        options_in_page(help, page, pages[i].file, 10);
    }

    /* the pages sluiced writes are the built ones */
    static const char *const man_args[] = {"--man", "--man=sluice.conf"};
    for (size_t i = 0; i < 2; i++) {
        const char *argv[] = {th_bin("sluiced"), man_args[i], NULL};
        assert_int_equal(th_run(argv, NULL, fresh, sizeof fresh), 0);
        read_page(i, page, sizeof page);
        if (strcmp(fresh, page) != 0)
            fail_msg("sluiced %s is not the built %s", man_args[i], pages[i].file);
    }

    /* every command of sluice --help's list has its entry in sluice(1), and
     * every option of its own --help is in the page */
    const char *sluice_help[] = {th_bin("sluice"), "--help", NULL};
    assert_int_equal(th_run(sluice_help, NULL, help, sizeof help), 0);
    read_page(2, page, sizeof page);
    const char *list = strstr(help, "\nCommands:\n");
    assert_non_null(list);
    unsigned commands = 0;
    /* the list: "  NAME  what it does" lines up to a blank line */
    for (const char *p = strchr(list + 1, '\n'); p && strncmp(p, "\n  ", 3) == 0; p = strchr(p + 1, '\n')) {
        char cmd[64];
        if (sscanf(p + 3, "%63s", cmd) != 1)
            break;
        char entry[96];
        snprintf(entry, sizeof entry, "sluice %s", cmd);
        if (!strstr(page, entry))
            fail_msg("sluice(1) lacks the command '%s'", cmd);
        static char own[1 << 14];
        const char *argv[] = {th_bin("sluice"), cmd, "--help", NULL};
        if (strcmp(cmd, "bench") != 0) { /* bench --help is sluice-bench's */
            assert_int_equal(th_run(argv, NULL, own, sizeof own), 0);
            options_in_page(own, page, entry, 1);
        }
        commands++;
    }
    assert_true(commands >= 12);
}

/* render writes page (a path) as man shows it at 80 columns into out;
 * groff with man's line length (78n at MANWIDTH=80) where man is missing.
 * Fails when the formatter says anything on stderr. */
static void render(const char *page)
{
    int have_man = sh("command -v man >/dev/null") == 0;
    const char *fmt = have_man ? "MANWIDTH=80 MAN_KEEP_FORMATTING= man -l %s 2>&1 >/dev/null"
                               : "groff -man -Tutf8 -rLL=78n -rLT=78n -P-cbou %s 2>&1 >/dev/null";
    assert_int_equal(sh(fmt, page), 0);
    if (out[0])
        fail_msg("%s on %s: %s", have_man ? "man -l" : "groff", page, out);
    fmt = have_man ? "MANWIDTH=80 MAN_KEEP_FORMATTING= man -l %s 2>/dev/null"
                   : "groff -man -Tutf8 -rLL=78n -rLT=78n -P-cbou %s 2>/dev/null";
    assert_int_equal(sh(fmt, page), 0);
}

/* section_text returns the text of section title in a rendered page (up to
 * the next line at column 0), copied into buf. */
static const char *section_text(const char *rendered, const char *title, char *buf, size_t len)
{
    char head[64];
    snprintf(head, sizeof head, "\n%s\n", title);
    const char *p = strstr(rendered, head);
    if (!p)
        return NULL;
    p += strlen(head);
    const char *end = p;
    while (*end && !(end[0] == '\n' && end[1] && end[1] != ' ' && end[1] != '\n'))
        end++;
    snprintf(buf, len, "%.*s", (int)(end - p), p);
    return buf;
}

static void man_pages_render_and_name_each_other(void **state)
{
    (void)state;
    char build[256], path[400], version[64], tag[96];
    build_dir(build, sizeof build);
    version_of("sluiced", version, sizeof version);
    snprintf(tag, sizeof tag, "\"Sluice %s\"", version);
    static char page[1 << 17], text[1 << 16];
    for (size_t i = 0; i < NPAGES; i++) {
        snprintf(path, sizeof path, "%s/man/%s", build, pages[i].file);
        read_page(i, page, sizeof page);
        /* groff has nothing to say about it */
        assert_int_equal(sh("groff -man -ww -z %s 2>&1", path), 0);
        if (out[0])
            fail_msg("groff warns about %s: %s", pages[i].file, out);
        /* its version is the programs' */
        char *th = strstr(page, "\n.TH ");
        assert_non_null(th);
        if (!strstr(th, tag) || strstr(th, tag) > strchr(th + 1, '\n'))
            fail_msg("%s: its .TH line does not say %s", pages[i].file, tag);

        /* man shows it within 80 columns */
        render(path);
        unsigned lines = 0, wide = 0;
        for (const char *line = out; *line; lines++) {
            const char *nl = strchr(line, '\n');
            size_t bytes = nl ? (size_t)(nl - line) : strlen(line), cols = 0;
            for (size_t k = 0; k < bytes; k++)
                cols += ((unsigned char)line[k] & 0xC0) != 0x80; /* UTF-8: count characters */
            if (cols > 80 && wide++ < 3)
                printf("# %s, %zu columns: %.*s\n", pages[i].file, cols, (int)bytes, line);
            line += bytes + (nl != NULL);
        }
        if (lines < 20 || wide)
            fail_msg("%s: %u lines, %u of them wider than 80 columns", pages[i].file, lines, wide);

        /* SEE ALSO names the other four */
        assert_non_null(section_text(out, "SEE ALSO", text, sizeof text));
        for (size_t j = 0; j < NPAGES; j++) {
            if (j == i)
                continue;
            char name[64];
            snprintf(name, sizeof name, "%s", pages[j].file);
            char *dot = strrchr(name, '.');
            snprintf(dot, sizeof name - (size_t)(dot - name), "(%s)", strrchr(pages[j].file, '.') + 1);
            if (!strstr(text, name))
                fail_msg("%s: SEE ALSO does not name %s:%s", pages[i].file, name, text);
        }
    }

    /* the tools' pages say what the tool is for */
    static const char *const purpose[][2] = {
        {"sluice-bench.1", "measures a Sluice broker against its performance targets"},
        {"sluice-sink.1", "stands in for a rate-limited downstream service"},
        {"sluice-sink.1", "It is for trying what Sluice does in front of such a service"},
    };
    for (size_t i = 0; i < sizeof purpose / sizeof purpose[0]; i++) {
        snprintf(path, sizeof path, "%s/man/%s", build, purpose[i][0]);
        render(path);
        assert_non_null(section_text(out, "DESCRIPTION", text, sizeof text));
        for (char *q = text; *q; q++) /* one line */
            *q = *q == '\n' ? ' ' : *q;
        for (char *q; (q = strstr(text, "  ")); ) /* as filled: single spaces */
            memmove(q, q + 1, strlen(q));
        if (!strstr(text, purpose[i][1]))
            fail_msg("%s: DESCRIPTION does not say '%s':%s", purpose[i][0], purpose[i][1], text);
    }
}

static void every_program_answers_version_as_sluice_does(void **state)
{
    (void)state;
    static const char *const programs[] = {"sluiced", "sluice", "sluice-bench", "sluice-sink"};
    char first[64] = "", v[64];
    for (size_t i = 0; i < sizeof programs / sizeof programs[0]; i++) {
        version_of(programs[i], v, sizeof v);
        if (first[0] && strcmp(first, v))
            fail_msg("%s --version says %s, %s says %s", programs[i], v, programs[0], first);
        snprintf(first, sizeof first, "%s", v);
        /* and --help lists it */
        const char *argv[] = {th_bin(programs[i]), "--help", NULL};
        assert_int_equal(th_run(argv, NULL, out, sizeof out), 0);
        if (!strstr(out, "--version"))
            fail_msg("%s --help does not list --version", programs[i]);
    }
}

/* sluice.conf(5) holds every key of the settings table, under its section,
 * with what a SIGHUP does with it, and an example that loads. */
static void sluice_conf_page_holds_every_key(void **state)
{
    (void)state;
    static char page[1 << 17];
    read_page(1, page, sizeof page);
    const char *keys = strstr(page, "\n.SH KEYS\n"), *reloading = strstr(page, "\n.SH RELOADING\n");
    assert_non_null(keys);
    assert_non_null(reloading);
    const char *live_list = strstr(reloading, "\n.IP\n");
    assert_non_null(live_list);
    live_list += 5;
    const char *live_end = strchr(live_list, '\n');
    unsigned nlive = 0;
    for (size_t i = 0; i < conf_setting_count(); i++) {
        const conf_setting *s = conf_setting_at(i);
        if (!s->section)
            continue;
        /* under its section's heading, before the next one */
        char want[128];
        snprintf(want, sizeof want, "\n.SS \"[%s]", s->section);
        const char *sec = strstr(keys, want);
        if (!sec) {
            fail_msg("sluice.conf(5) has no section [%s]", s->section);
            return;
        }
        const char *next = strstr(sec + 1, "\n.SS ");
        next = next && next < reloading ? next : reloading;
        snprintf(want, sizeof want, "\n.TP\n\\fB%s\\fR", s->key);
        const char *entry = strstr(sec, want);
        if (!entry || entry > next)
            fail_msg("sluice.conf(5) lacks %s under [%s]", s->key, s->section);
        if (s->alias) {
            snprintf(want, sizeof want, "(or \\fB%s\\fR)", s->alias);
            if (!strstr(entry, want) || strstr(entry, want) > strstr(entry + 1, "\n.TP"))
                fail_msg("sluice.conf(5): %s does not name its other key %s", s->key, s->alias);
        }
        /* live or not, as the table says, in its entry and in RELOADING */
        const char *end = strstr(entry + 1, "\n.TP");
        end = end && end < next ? end : next;
        const char *says = strstr(entry, conf_setting_live(s) ? "SIGHUP applies a new value at once"
                                                              : "A new value waits for a restart");
        if (!says || says > end)
            fail_msg("sluice.conf(5): %s does not say what SIGHUP does with it", s->key);
        char word[96];
        snprintf(word, sizeof word, "%s", s->key);
        int listed = 0;
        for (const char *p = live_list; (p = strstr(p, word)) && p < live_end; p++) {
            char after = p[strlen(word)];
            listed |= (p == live_list || p[-1] == ' ') && (after == ',' || after == '.');
        }
        if (listed != conf_setting_live(s))
            fail_msg("sluice.conf(5): RELOADING %s %s", listed ? "lists" : "does not list", s->key);
        nlive += (unsigned)listed;
    }
    assert_true(nlive >= 5);

    /* the example loads as sluiced reads a file */
    const char *ex = strstr(page, "\n.SH EXAMPLE\n");
    assert_non_null(ex);
    const char *from = strstr(ex, "\n.nf\n"), *to = strstr(ex, "\n.fi\n");
    assert_true(from && to && from < to);
    from += 5;
    char dir[] = "/tmp/sluice-conf5-XXXXXX", file[64];
    assert_non_null(mkdtemp(dir));
    snprintf(file, sizeof file, "%s/sluice.conf", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    for (const char *p = from; p <= to; p++) { /* roff to text: \- \e \& */
        if (p[0] == '\\' && p[1] == '-')
            fputc('-', f), p++;
        else if (p[0] == '\\' && p[1] == 'e')
            fputc('\\', f), p++;
        else if (p[0] == '\\' && p[1] == '&')
            p++;
        else
            fputc(*p, f);
    }
    assert_int_equal(fclose(f), 0);
    static conf c;
    char err[512] = "";
    conf_defaults(&c);
    if (conf_load_ini(&c, file, err, sizeof err) != SL_OK || conf_finish(&c, err, sizeof err) != SL_OK)
        fail_msg("the example of sluice.conf(5) does not load: %s", err);
    assert_true(c.ntag_rules >= 1);
    th_rmrf(dir);
}

/* A SIGHUP applies the keys sluice.conf(5) calls live, and no other: the
 * broker re-reads a file in which every number, flag, level and rule has a
 * new value, and the log names what it applied. */
static void the_keys_the_page_calls_live_are_the_ones_sighup_applies(void **state)
{
    (void)state;
    th_broker b;
    assert_int_equal(th_broker_init(&b, NULL), 0);
    char ini[400];
    snprintf(ini, sizeof ini, "%s/sluice.conf", b.dir);
    FILE *f = fopen(ini, "w");
    assert_non_null(f);
    fputs("; the defaults\n", f);
    assert_int_equal(fclose(f), 0);
    b.extra[0] = "--config";
    b.extra[1] = ini;
    assert_int_equal(th_broker_start(&b), 0);

    /* one new value per key, each section in turn */
    f = fopen(ini, "w");
    assert_non_null(f);
    int changed[128] = {0};
    assert_true(conf_setting_count() <= 128);
    for (size_t g = 0; conf_sections[g].name; g++) {
        fprintf(f, "[%s]\n", conf_sections[g].name);
        for (size_t i = 0; i < conf_setting_count(); i++) {
            const conf_setting *s = conf_setting_at(i);
            if (!s->section || strcmp(s->section, conf_sections[g].name))
                continue;
            char def[128];
            conf_default_text(s, def, sizeof def);
            switch (s->type) {
            case CONF_NUM:
            case CONF_MB: { /* the least value, or the one above it when that is the default */
                unsigned long long v = s->min;
                if (s->def && s->def[0] != '(' && strtoull(def, NULL, 10) == v)
                    v++;
                fprintf(f, "%s = %llu\n", s->key, v);
                break;
            }
            case CONF_BOOL: fprintf(f, "%s = yes\n", s->key); break;
            case CONF_LOG_LEVEL: fprintf(f, "%s = debug\n", s->key); break;
            case CONF_LEVEL: fprintf(f, "%s = 0\n", s->key); break;
            case CONF_RULE: fprintf(f, "%s = page-* 0\n", s->key); break;
            default: continue; /* text: paths and endpoints, left alone */
            }
            changed[i] = 1;
        }
    }
    assert_int_equal(fclose(f), 0);
    assert_int_equal(kill(b.pid, SIGHUP), 0);
    static char log[1 << 18];
    for (uint64_t until = th_now_ms() + 10000; th_now_ms() < until; usleep(10 * 1000)) {
        th_read_file(b.log, log, sizeof log);
        if (strstr(log, "reload: done") || strstr(log, "no longer reads"))
            break;
    }
    if (!strstr(log, "reload: done"))
        fail_msg("no reload after SIGHUP:\n%s", log);
    unsigned applied = 0, kept = 0;
    for (size_t i = 0; i < conf_setting_count(); i++) {
        if (!changed[i])
            continue;
        const conf_setting *s = conf_setting_at(i);
        char line[96];
        snprintf(line, sizeof line, "reload: %s: ", s->key);
        int was_applied = strstr(log, line) != NULL;
        if (was_applied != conf_setting_live(s))
            fail_msg("sluice.conf(5) says a SIGHUP %s %s, but the broker %s it:\n%s",
                     conf_setting_live(s) ? "applies" : "does not apply", s->key,
                     was_applied ? "applied" : "did not apply", log);
        applied += (unsigned)was_applied;
        kept += (unsigned)!was_applied;
    }
    assert_true(applied >= 5 && kept >= 5);
    assert_int_equal(th_broker_stop(&b), 0);
    th_broker_fini(&b);
}

/* sluiced --help, its pages and what make install ships name one config
 * file, as installed: sluice.conf under /etc/sluice. */
static void the_config_file_has_one_name(void **state)
{
    (void)state;
    const char *argv[] = {th_bin("sluiced"), "--help", NULL};
    assert_int_equal(th_run(argv, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "/etc/sluice/sluice.conf"));
    assert_non_null(strstr(out, "sluice.conf(5)"));
    if (sh("grep -rnE '[a-z0-9]\\.ini\\b' tools/dist broker/core 2>&1") != 1) /* a file.ini */
        fail_msg("another name for the config file:\n%s", out);
    static char page[1 << 17];
    for (size_t i = 0; i < 2; i++) {
        read_page(i, page, sizeof page);
        if (!strstr(page, "/etc/sluice/sluice.conf") || strstr(page, ".ini"))
            fail_msg("%s does not name /etc/sluice/sluice.conf alone", pages[i].file);
    }
}

int main(void)
{
    th_seed();
    th_timeout_s = 300; /* make install may have a library to link on a busy machine */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(man_pages_follow_help, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(man_pages_render_and_name_each_other, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(every_program_answers_version_as_sluice_does, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(sluice_conf_page_holds_every_key, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(the_keys_the_page_calls_live_are_the_ones_sighup_applies, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(the_config_file_has_one_name, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(make_install_lays_out_the_files, th_timeout_arm, th_timeout_disarm),
        cmocka_unit_test_setup_teardown(make_install_elsewhere_names_its_own_paths, th_timeout_arm,
                                        th_timeout_disarm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
