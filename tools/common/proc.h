/*
 * proc.h - the one process supervisor: start a program with its arguments
 * and environment, wait until it says it is ready, stop it by its PID,
 * wait for its exit status, and show the end of its log when it fails.
 *
 * Used by the tests' harness and the reliability campaigns (sluiced,
 * sluice-sink), by sluice-bench (the broker it spawns) and by its load
 * scenarios (sluiced, sluice-sink, `sluice consume`, gnuplot).
 *
 * A proc is a plain value: its PID, a name for messages and the path of its
 * log. Only the thread that started a child may wait for it or stop it.
 * Every wait polls waitpid with a short sleep, bounded in count as well as
 * in time. Failures are reported on stderr as "PROGRAM: NAME: why".
 */
#ifndef SLUICE_PROC_H
#define SLUICE_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PROC_MAX_ARGS  64   /* arguments of one child, --ready-fd FD included */
#define PROC_PATH_BYTES 512
#define PROC_TAIL_BYTES 8192 /* how much of a log proc_tail shows by default */
#define PROC_RUNNING   (-1) /* from proc_wait: still running */

/* One child process. */
typedef struct proc {
    pid_t pid;                  /* 0 when none runs */
    char name[32];              /* for messages: "sluiced", "consumer 2" */
    char log[PROC_PATH_BYTES];  /* the file its stderr goes to; "" when inherited */
} proc;

/* How to start one child. Zeroed fields mean: inherit, append, no ready wait. */
typedef struct proc_spec {
    const char *const *argv;  /* NULL-terminated; argv[0] is a path, or a name found in PATH */
    const char *const *env;   /* the child's whole environment; NULL: this process's */
    const char *out_path;     /* its stdout goes to this file; NULL: stays this process's */
    const char *err_path;     /* its stderr; NULL: the same file as out_path (or inherited) */
    bool truncate;            /* truncate those files first rather than append */
    bool null_stdin;          /* stdin from /dev/null; else inherited */
    bool ready;               /* add "--ready-fd FD" and wait for the line "READY" */
    int ready_ms;             /* how long to wait for it (0: 20000) */
    bool own_group;           /* its own process group: a terminal's Ctrl-C stays ours */
    bool die_with_parent;     /* SIGKILL it when this process dies (PR_SET_PDEATHSIG) */
    bool (*stopping)(void);   /* may be NULL: when it returns true, the ready wait gives up */
    bool quiet;               /* a failed start is expected: no report, no log shown */
} proc_spec;

/* proc_start starts the child s describes, naming it name in messages, and
 * with s->ready waits for its READY line. p needs no setup. Returns 0 with
 * p->pid set; or -1, reported (unless s->quiet) with the end of its log
 * shown, p->pid 0 and nothing left running (a child that exits or stays
 * silent is killed and reaped). */
int proc_start(proc *p, const char *name, const proc_spec *s);

/* proc_stop sends SIGTERM to p->pid, waits up to wait_ms for it to exit,
 * then sends SIGKILL and waits a little more. Returns the exit status; or
 * -1, reported with the end of its log, when it had to be killed or died of
 * a signal; 0 when nothing ran. p->pid is 0 afterwards. */
int proc_stop(proc *p, int wait_ms);

/* proc_wait waits up to wait_ms for p to exit by itself (no signal sent).
 * Returns its exit status, 128 + the signal that ended it, or PROC_RUNNING
 * (p->pid is then kept); 0 when nothing ran. */
int proc_wait(proc *p, int wait_ms);

/* proc_kill sends SIGKILL to p and reaps it; p->pid is 0 afterwards. Does
 * nothing when nothing runs. */
void proc_kill(proc *p);

/* proc_running tells whether p's process has not exited; when it has, it
 * is reaped, p->pid becomes 0 and the end of its log is shown. */
bool proc_running(proc *p);

/* proc_tail copies the last max_bytes of p's log to stderr, between marker
 * lines; nothing when it has no log or the log cannot be read. */
void proc_tail(const proc *p, size_t max_bytes);

#endif /* SLUICE_PROC_H */
