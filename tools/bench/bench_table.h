/*
 * bench_table.h - the rows sluice-bench has measured and the table it
 * prints them as: scenario, result, unit, target, and whether it was met.
 */
#ifndef SLUICE_BENCH_TABLE_H
#define SLUICE_BENCH_TABLE_H

#include <stddef.h>
#include <stdio.h>
#include <time.h>

#define BENCH_TABLE_MAX_ROWS 192

typedef enum bench_table_goal {
    BENCH_TABLE_NO_GOAL,  /* a figure to read, not to meet */
    BENCH_TABLE_AT_LEAST, /* met when value >= target */
    BENCH_TABLE_AT_MOST,  /* met when value <= target */
} bench_table_goal;

typedef struct bench_table_row {
    char scenario[96];
    double value;
    int decimals;
    const char *unit;     /* a static string */
    bench_table_goal goal;
    double target;
} bench_table_row;

/* A zeroed bench_table is empty. nrows may be lowered, never raised, to drop
 * the rows added last. */
typedef struct bench_table {
    bench_table_row rows[BENCH_TABLE_MAX_ROWS];
    size_t nrows;
} bench_table;

/* bench_table_add appends a row: scenario is copied (95 bytes at most),
 * unit must outlive t, value is shown with decimals places, and target is
 * read only when g is not BENCH_TABLE_NO_GOAL. More than
 * BENCH_TABLE_MAX_ROWS rows is a broken invariant: it aborts. */
void bench_table_add(bench_table *t, const char *scenario, double value, int decimals,
                     const char *unit, bench_table_goal g, double target);

/* bench_table_print writes t to out: a comment line naming the date the run
 * started, the machine, the body size and the seconds of each timed row,
 * then a header, a rule and one aligned line per row, and flushes out. */
void bench_table_print(const bench_table *t, time_t started, int seconds, FILE *out);

#endif /* SLUICE_BENCH_TABLE_H */
