/*
 * cli_table.h - tables of text cells, printed on standard output with their
 * columns aligned: the `sluice` command's stats and lists.
 */
#ifndef SLUICE_CLI_TABLE_H
#define SLUICE_CLI_TABLE_H

#define CLI_TABLE_MAX_COLS 32

/* A table of text cells, printed with its columns aligned. */
typedef struct cli_table cli_table;

/* cli_table_new makes a table with ncols (1..CLI_TABLE_MAX_COLS) columns
 * headed head[0..ncols) and aligned by align[k], 'l' or 'r', for up to
 * max_rows rows. head and align are borrowed. Returns NULL when out of
 * memory or ncols is out of range. */
cli_table *cli_table_new(unsigned ncols, const char *const *head, const char *align,
                         unsigned max_rows);

/* cli_table_add fills the next cell, row by row; cells past the last row
 * are ignored. An allocation failure is remembered for cli_table_print. */
void cli_table_add(cli_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* cli_table_print writes the header and the rows to standard output, two
 * spaces between columns, widths counted in characters. Returns 0, or -1
 * when a cell could not be stored (nothing is printed). */
int cli_table_print(const cli_table *t);

/* cli_table_destroy frees *t and sets it to NULL; accepts NULL. */
void cli_table_destroy(cli_table **t);

#endif /* SLUICE_CLI_TABLE_H */
