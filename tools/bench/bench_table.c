/*
 * bench_table.c - sluice-bench's results table.
 *
 * It owns the rows of one run, in a fixed array of BENCH_TABLE_MAX_ROWS:
 * the driver knows how many rows it defines, so running out is a bug, not
 * a condition to handle. Rows keep their figures as numbers; they become
 * text only when the table is printed, once, at the end of the run.
 *
 * Printing formats every cell first, so that each column is as wide as its
 * widest cell, then writes the lines: text left-aligned, results
 * right-aligned, the last column unpadded, columns separated by " | ".
 * Above the table one comment line ("# sluice-bench, ...") records what a
 * reader needs to compare two tables: when, the CPUs this process may use,
 * the kernel and machine, the body size and the length of each timed row.
 * Only stdout carries the table; progress and errors go to stderr.
 */
#include "bench_table.h"

#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bench_core.h"

enum { COLS = 5, COL_RESULT = 1 };

void bench_table_add(bench_table *t, const char *scenario, double value, int decimals,
                     const char *unit, bench_table_goal g, double target)
{
    if (t->nrows == BENCH_TABLE_MAX_ROWS) {
        fprintf(stderr, "%s:%d: more than %d rows\n", __FILE__, __LINE__, BENCH_TABLE_MAX_ROWS);
        abort();
    }
    bench_table_row *r = &t->rows[t->nrows++];
    *r = (bench_table_row){.value = value, .decimals = decimals, .unit = unit, .goal = g,
                           .target = target};
    snprintf(r->scenario, sizeof r->scenario, "%s", scenario);
}

static int cpu_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* line_print prints one line of cells: the result right-aligned, the last
 * column unpadded. */
static void line_print(FILE *out, const char *const cells[COLS], const size_t width[COLS])
{
    for (int k = 0; k < COLS - 1; k++)
        fprintf(out, k == COL_RESULT ? "%*s | " : "%-*s | ", (int)width[k], cells[k]);
    fprintf(out, "%s\n", cells[COLS - 1]);
}

void bench_table_print(const bench_table *t, time_t started, int seconds, FILE *out)
{
    static const char *const head[COLS] = {"scenario", "result", "unit", "target", "ok?"};
    char text[BENCH_TABLE_MAX_ROWS][COLS][96];
    size_t width[COLS];
    for (int k = 0; k < COLS; k++)
        width[k] = strlen(head[k]);
    for (size_t i = 0; i < t->nrows; i++) {
        const bench_table_row *r = &t->rows[i];
        bool met = r->goal == BENCH_TABLE_AT_LEAST ? r->value >= r->target : r->value <= r->target;
        snprintf(text[i][0], sizeof text[i][0], "%s", r->scenario);
        snprintf(text[i][1], sizeof text[i][1], "%.*f", r->decimals, r->value);
        snprintf(text[i][2], sizeof text[i][2], "%s", r->unit);
        if (r->goal == BENCH_TABLE_NO_GOAL)
            snprintf(text[i][3], sizeof text[i][3], "-");
        else
            snprintf(text[i][3], sizeof text[i][3], "%s %.*f",
                     r->goal == BENCH_TABLE_AT_LEAST ? ">=" : "<=", r->target == (double)(long long)r->target ? 0 : 2,
                     r->target);
        snprintf(text[i][4], sizeof text[i][4], "%s",
                 r->goal == BENCH_TABLE_NO_GOAL ? "-" : met ? "yes" : "MISS");
        for (int k = 0; k < COLS; k++)
            if (strlen(text[i][k]) > width[k])
                width[k] = strlen(text[i][k]);
    }

    struct utsname u;
    struct tm tm;
    char date[64] = "?";
    if (uname(&u) != 0)
        memset(&u, 0, sizeof u);
    if (localtime_r(&started, &tm))
        strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", &tm);
    fprintf(out, "# sluice-bench, %s, nproc %d, %s %s %s, %d-byte bodies, %d s per timed row\n",
            date, cpu_count(), u.sysname, u.release, u.machine, BENCH_CORE_BODY_BYTES, seconds);
    line_print(out, head, width);
    for (int k = 0; k < COLS; k++) {
        for (size_t n = 0; n < width[k]; n++)
            fputc('-', out);
        fputs(k + 1 < COLS ? "-+-" : "\n", out);
    }
    for (size_t i = 0; i < t->nrows; i++) {
        const char *const cells[COLS] = {text[i][0], text[i][1], text[i][2], text[i][3],
                                         text[i][4]};
        line_print(out, cells, width);
    }
    fflush(out);
}
