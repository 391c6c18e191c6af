/*
 * test_docs.c - every relative link in the repository's markdown files
 * resolves. In each markdown file git tracks (every *.md under the root,
 * build/, bin/ and dot-folders aside, when git cannot say), each inline link
 * or image, [text](target), and each reference definition, [id]: target,
 * outside code (fenced blocks and `code spans`) must name a file or a
 * folder that exists: relative to the document's folder, or to the root
 * when it starts with '/', once its #anchor and ?query are cut and its %XX
 * escapes decoded. Links with a scheme (https:, http:, mailto: ...) and
 * links to an anchor of the same page (#name) are not checked.
 *
 * The checker is tried first on a small tree of its own, written in a
 * temporary directory: the links that resolve pass, each kind of broken
 * one is reported with its file and line, and code is left alone. Then the
 * repository's documents. Run from the repository root (README.md), as the
 * other tests that read documents are. Nothing here is random.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

enum { PATH_BYTES = 4096, REPORT_BYTES = 1 << 16, FILES_MAX = 4096 };

/* What one check found: the links it looked at, the broken ones, and a
 * line "file:line: target" for each broken one. */
typedef struct check {
    unsigned links, broken;
    char report[REPORT_BYTES];
} check;

/* ---- which documents ---- */

typedef struct files {
    char *name[FILES_MAX]; /* paths relative to the root */
    unsigned n;
} files;

static void files_add(files *f, const char *name)
{
    if (f->n == FILES_MAX)
        fail_msg("more than %d markdown files", FILES_MAX);
    f->name[f->n] = strdup(name);
    assert_non_null(f->name[f->n]);
    f->n++;
}

static void files_free(files *f)
{
    for (unsigned i = 0; i < f->n; i++)
        free(f->name[i]);
    f->n = 0;
}

static int is_markdown(const char *name)
{
    size_t len = strlen(name);
    return len > 3 && strcmp(name + len - 3, ".md") == 0;
}

/* walk adds the markdown files under root/rel (rel "" for the root itself),
 * skipping dot-folders, and build/ and bin/ at the root (the build's output). */
static void walk(const char *root, const char *rel, files *f)
{
    char dir[PATH_BYTES];
    snprintf(dir, sizeof dir, "%s%s%s", root, *rel ? "/" : "", rel);
    DIR *d = opendir(dir);
    if (!d)
        fail_msg("cannot read %s: %s", dir, strerror(errno));
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        if (!*rel && (strcmp(e->d_name, "build") == 0 || strcmp(e->d_name, "bin") == 0))
            continue;
        char sub[PATH_BYTES], full[2 * PATH_BYTES + 2];
        snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
        snprintf(full, sizeof full, "%s/%s", root, sub);
        struct stat st;
        if (lstat(full, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode))
            walk(root, sub, f);
        else if (S_ISREG(st.st_mode) && is_markdown(e->d_name))
            files_add(f, sub);
    }
    closedir(d);
}

/* tracked lists the markdown files git tracks under root. Returns 0, or -1
 * when git cannot say (no git, or root is not a work tree). */
static int tracked(const char *root, files *f)
{
    char cmd[PATH_BYTES + 64];
    snprintf(cmd, sizeof cmd, "git -C '%s' ls-files -z -- '*.md' 2>/dev/null", root);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char name[PATH_BYTES];
    size_t len = 0;
    for (int c; (c = fgetc(p)) != EOF;) {
        if (c != '\0') {
            if (len + 1 < sizeof name)
                name[len++] = (char)c;
            continue;
        }
        name[len] = '\0';
        len = 0;
        files_add(f, name);
    }
    int status = pclose(p);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        files_free(f);
        return -1;
    }
    return 0;
}

/* ---- the links of one document ---- */

/* unescape decodes %XX escapes in place. */
static void unescape(char *s)
{
    char *out = s;
    for (const char *in = s; *in; in++) {
        if (in[0] == '%' && isxdigit((unsigned char)in[1]) && isxdigit((unsigned char)in[2])) {
            char hex[3] = {in[1], in[2], '\0'};
            *out++ = (char)strtol(hex, NULL, 16);
            in += 2;
        } else {
            *out++ = *in;
        }
    }
    *out = '\0';
}

/* has_scheme tells whether target starts with a URI scheme ("https:",
 * "mailto:") or is protocol-relative ("//host"): not a file of ours. */
static int has_scheme(const char *target)
{
    if (target[0] == '/' && target[1] == '/')
        return 1;
    if (!isalpha((unsigned char)target[0]))
        return 0;
    const char *p = target + 1;
    while (isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
        p++;
    return *p == ':';
}

/* check_target checks one link target of root/doc, at line. */
static void check_target(check *c, const char *root, const char *doc, unsigned line, const char *target)
{
    if (target[0] == '#' || has_scheme(target))
        return;
    c->links++;
    char path[PATH_BYTES];
    snprintf(path, sizeof path, "%s", target);
    path[strcspn(path, "#?")] = '\0';
    unescape(path);
    char full[2 * PATH_BYTES + 2];
    if (path[0] == '/') {
        snprintf(full, sizeof full, "%s%s", root, path);
    } else {
        const char *slash = strrchr(doc, '/');
        int dir_len = slash ? (int)(slash - doc) : 0;
        snprintf(full, sizeof full, "%s/%.*s%s%s", root, dir_len, doc, slash ? "/" : "", path);
    }
    struct stat st;
    if (path[0] && stat(full, &st) == 0)
        return;
    c->broken++;
    size_t used = strlen(c->report);
    snprintf(c->report + used, sizeof c->report - used, "%s:%u: %s\n", doc, line, target);
}

/* link_target reads the target that starts at p (just after "](" or after
 * a definition's ':'), into out: <bracketed>, or up to white space or the
 * parenthesis that closes the link (balanced ones belong to it). Returns
 * the length read, 0 when there is none. */
static size_t link_target(const char *p, char *out, size_t len)
{
    while (*p == ' ' || *p == '\t')
        p++;
    size_t n = 0;
    if (*p == '<') {
        for (p++; *p && *p != '>' && n + 1 < len; p++)
            out[n++] = *p;
    } else {
        int depth = 0;
        for (; *p && !isspace((unsigned char)*p) && n + 1 < len; p++) {
            if (*p == '(')
                depth++;
            else if (*p == ')' && depth-- == 0)
                break;
            out[n++] = *p;
        }
    }
    out[n] = '\0';
    return n;
}

/* fence returns the length of the code fence (``` or ~~~, up to three
 * spaces in) that line opens or closes, and its character; 0 if none. */
static size_t fence(const char *line, char *ch)
{
    const char *p = line;
    for (int i = 0; i < 3 && *p == ' '; i++)
        p++;
    if (*p != '`' && *p != '~')
        return 0;
    size_t n = 0;
    while (p[n] == *p)
        n++;
    if (n < 3)
        return 0;
    *ch = *p;
    return n;
}

/* check_doc checks every link of root/doc. */
static void check_doc(check *c, const char *root, const char *doc)
{
    char full[2 * PATH_BYTES];
    snprintf(full, sizeof full, "%s/%s", root, doc);
    FILE *f = fopen(full, "r");
    if (!f)
        return; /* tracked but deleted in the work tree: nothing to check */
    static char line[1 << 16];
    char target[PATH_BYTES];
    size_t in_fence = 0; /* the open fence's length, 0 outside one */
    char fence_ch = 0;
    for (unsigned n = 1; fgets(line, sizeof line, f); n++) {
        char ch;
        size_t len = fence(line, &ch);
        if (in_fence) {
            if (len >= in_fence && ch == fence_ch)
                in_fence = 0;
            continue;
        }
        if (len) {
            in_fence = len;
            fence_ch = ch;
            continue;
        }
        /* a reference definition: up to three spaces, [label]: target */
        const char *p = line;
        for (int i = 0; i < 3 && *p == ' '; i++)
            p++;
        if (*p == '[') {
            const char *close = strstr(p, "]:");
            if (close && close > p + 1 && !memchr(p + 1, ']', (size_t)(close - p - 1)) &&
                link_target(close + 2, target, sizeof target))
                check_target(c, root, doc, n, target);
        }
        /* inline links and images, outside `code spans` */
        for (p = line; *p; p++) {
            if (*p == '`') {
                size_t ticks = 0;
                while (p[ticks] == '`')
                    ticks++;
                const char *end = p + ticks;
                for (;;) { /* the closing run of the same length */
                    end = strchr(end, '`');
                    if (!end)
                        break;
                    size_t run = 0;
                    while (end[run] == '`')
                        run++;
                    if (run == ticks)
                        break;
                    end += run;
                }
                if (!end)
                    break; /* unclosed: the rest of the line is code */
                p = end + ticks - 1;
                continue;
            }
            if (p[0] == ']' && p[1] == '(' && link_target(p + 2, target, sizeof target))
                check_target(c, root, doc, n, target);
        }
    }
    fclose(f);
}

/* check_tree checks every markdown file under root: the ones git tracks
 * when use_git and git can say, else every one the walk finds. */
static void check_tree(check *c, const char *root, int use_git)
{
    static files f;
    memset(c, 0, sizeof *c);
    if (!use_git || tracked(root, &f) != 0)
        walk(root, "", &f);
    for (unsigned i = 0; i < f.n; i++)
        check_doc(c, root, f.name[i]);
    files_free(&f);
}

/* ---- the checker on a tree of its own ---- */

static void put_file(const char *root, const char *name, const char *text)
{
    char path[PATH_BYTES];
    snprintf(path, sizeof path, "%s/%s", root, name);
    for (char *s = strchr(path + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(path, 0755);
        *s = '/';
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void the_checker_finds_each_broken_link_and_only_those(void **state)
{
    (void)state;
    char root[] = "/tmp/sluice-docs-XXXXXX";
    assert_non_null(mkdtemp(root));
    put_file(root, "README.md",
             "# Title\n"
             "See [the guide](docs/guide.md), [its folder](docs/), [a part](docs/guide.md#part),\n"
             "[plain](docs/guide.md?plain=1), [from the root](/docs/guide.md), [spaced](docs/a%20b.md),\n"
             "[bracketed](<docs/a b.md>), [titled](docs/guide.md \"The guide\"), ![a picture](img/pic.png),\n"
             "[wiki](https://example.com/missing), [mail](mailto:someone@example.com), [top](#title),\n"
             "[then words](docs/guide.md) (in parentheses), [nested (parentheses)](docs/guide.md).\n"
             "A link across lines: [the\n"
             "guide](docs/guide.md).\n"
             "`[in a code span](missing/in-span.md)` and ``[two ticks`](missing/in-span2.md)``.\n"
             "```c\n"
             "[in a fence](missing/in-fence.md)\n"
             "~~~\n"
             "```\n"
             "~~~~\n"
             "[in a tilde fence](missing/in-tilde.md)\n"
             "```\n"
             "~~~~\n"
             "[ref]: docs/guide.md\n"
             "Broken: [gone](docs/missing.md) and ![no picture](img/none.png).\n");
    put_file(root, "docs/guide.md",
             "Back [up](../README.md), [here](./guide.md).\n"
             "[far](./nothere.md#x)\n"
             "  [dead ref]: nope/\n");
    put_file(root, "docs/a b.md", "no links\n");
    put_file(root, "img/pic.png", "");
    put_file(root, "build/out.md", "[not checked](nothing.md)\n");
    put_file(root, ".hidden/notes.md", "[not checked](nothing.md)\n");
    put_file(root, "notes.txt", "[not markdown](nothing.md)\n");

    static check c;
    check_tree(&c, root, 0);
    printf("# %u links, %u broken:\n%s", c.links, c.broken, c.report);
    assert_int_equal(c.links, 19);
    assert_int_equal(c.broken, 4);
    assert_non_null(strstr(c.report, "README.md:19: docs/missing.md\n"));
    assert_non_null(strstr(c.report, "README.md:19: img/none.png\n"));
    assert_non_null(strstr(c.report, "docs/guide.md:2: ./nothere.md#x\n"));
    assert_non_null(strstr(c.report, "docs/guide.md:3: nope/\n"));
    th_rmrf(root);
}

/* ---- the repository's documents ---- */

static void every_relative_link_in_the_markdown_files_resolves(void **state)
{
    (void)state;
    struct stat st;
    if (stat("README.md", &st) != 0)
        fail_msg("run from the repository root: no README.md here");
    static check c;
    check_tree(&c, ".", 1);
    printf("# %u relative links checked\n", c.links);
    if (c.broken) {
        printf("%s", c.report);
        fail_msg("%u of %u relative links in the markdown files lead nowhere", c.broken, c.links);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(the_checker_finds_each_broken_link_and_only_those, th_timeout_arm,
                                        th_timeout_disarm),
        cmocka_unit_test_setup_teardown(every_relative_link_in_the_markdown_files_resolves, th_timeout_arm,
                                        th_timeout_disarm),
    };
    return cmocka_run_group_tests_name("docs", tests, NULL, NULL);
}
