/*
 * cli_table.c - tables of text cells, printed with their columns aligned.
 *
 * Cells are formatted as they are added and measured when printed, in
 * characters rather than bytes, so a UTF-8 level name does not push its row
 * out of line. Columns are two spaces apart; a left-aligned last column is
 * not padded, so no line ends in spaces. Every cell goes through
 * cli_text_safe: a tag, a pool name or a reason a client wrote cannot move
 * the cursor, ring the bell or start a row of its own. A table costs one allocation per
 * cell; the ones `sluice` prints have at most a few hundred.
 */
#include "cli_table.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_text.h"

struct cli_table {
    unsigned ncols, max_rows;
    size_t filled; /* cells added so far */
    bool failed;
    const char *const *head;
    const char *align;
    char *cell[]; /* max_rows * ncols, row by row */
};

cli_table *cli_table_new(unsigned ncols, const char *const *head, const char *align,
                         unsigned max_rows)
{
    if (ncols == 0 || ncols > CLI_TABLE_MAX_COLS)
        return NULL;
    cli_table *t = calloc(1, sizeof *t + (size_t)ncols * max_rows * sizeof t->cell[0]);
    if (!t)
        return NULL;
    t->ncols = ncols;
    t->max_rows = max_rows;
    t->head = head;
    t->align = align;
    return t;
}

void cli_table_add(cli_table *t, const char *fmt, ...)
{
    if (t->filled == (size_t)t->ncols * t->max_rows)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *cell = NULL;
    if (vasprintf(&cell, fmt, ap) < 0) {
        cell = NULL;
        t->failed = true;
    } else if (!cli_text_is_safe(cell)) { /* a client's text: no control reaches the terminal */
        char *safe = cli_text_safe_dup(cell, strlen(cell));
        free(cell);
        cell = safe;
        t->failed |= !safe;
    }
    t->cell[t->filled] = cell;
    va_end(ap);
    t->filled++;
}

/* text_width counts the characters of UTF-8 text: every byte but the
 * continuation bytes. */
static size_t text_width(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static void row_print(const cli_table *t, const char *const *cells, const size_t *width)
{
    for (unsigned k = 0; k < t->ncols; k++) {
        size_t pad = width[k] - text_width(cells[k]);
        bool right = t->align[k] == 'r';
        if (k)
            fputs("  ", stdout);
        for (size_t i = 0; right && i < pad; i++)
            putchar(' ');
        fputs(cells[k], stdout);
        for (size_t i = 0; !right && k + 1 < t->ncols && i < pad; i++)
            putchar(' ');
    }
    putchar('\n');
}

int cli_table_print(const cli_table *t)
{
    if (t->failed)
        return -1;
    size_t width[CLI_TABLE_MAX_COLS] = {0};
    size_t rows = t->filled / t->ncols;
    for (unsigned k = 0; k < t->ncols; k++)
        width[k] = text_width(t->head[k]);
    for (size_t i = 0; i < rows * t->ncols; i++) {
        size_t w = text_width(t->cell[i]);
        if (w > width[i % t->ncols])
            width[i % t->ncols] = w;
    }
    row_print(t, t->head, width);
    for (size_t r = 0; r < rows; r++)
        row_print(t, (const char *const *)&t->cell[r * t->ncols], width);
    return 0;
}

void cli_table_destroy(cli_table **t)
{
    if (!t || !*t)
        return;
    for (size_t i = 0; i < (*t)->filled; i++)
        free((*t)->cell[i]);
    free(*t);
    *t = NULL;
}
