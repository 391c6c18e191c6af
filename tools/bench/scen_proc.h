/*
 * scen_proc.h - the child processes of `sluice-bench --scenario` (sluiced,
 * sluice-sink, `sluice consume`, gnuplot) and the directories it makes.
 *
 * A child runs in its own process group, with its output in a log file, so
 * a Ctrl-C in the terminal reaches only the bench, which stops its children
 * in order. Children are stopped by their PID only. Only the thread that
 * started a child may stop it.
 */
#ifndef SLUICE_SCEN_PROC_H
#define SLUICE_SCEN_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "scen.h"

#define SCEN_PROC_MAX_ARGS 40

typedef struct scen_proc {
    pid_t pid;                           /* 0 when none runs */
    char name[32];                       /* for messages: "sluiced", "consumer 2" */
    char log[SCEN_PATH_BYTES];      /* its stdout and stderr */
} scen_proc;

/* scen_proc_start runs argv[0] (a path) with argv, its stdout and
 * stderr appended to log_path and stdin from /dev/null. With ready, it adds
 * "--ready-fd FD" and waits up to ready_ms for the READY line; a child that
 * exits or stays silent is killed and reaped, and the end of its log shown.
 * p needs no setup. Returns 0 with p->pid set, or -1, reported, with p->pid
 * 0 and nothing left running. */
int scen_proc_start(scen_proc *p, const char *name, char *const argv[],
                         const char *log_path, bool ready, int ready_ms);

/* scen_proc_stop sends SIGTERM to p->pid, waits up to wait_ms for it to
 * exit, then sends SIGKILL and waits a little more. Returns the exit status,
 * or -1 (reported) when it had to be killed or died of a signal; 0 when
 * nothing ran. p->pid is 0 afterwards. */
int scen_proc_stop(scen_proc *p, int wait_ms);

/* scen_proc_wait waits up to wait_ms for p to exit by itself (no
 * signal). Returns the exit status; -1 when it died of a signal; -2 when it
 * is still running (p->pid is then kept). */
int scen_proc_wait(scen_proc *p, int wait_ms);

/* scen_proc_running tells whether p's process has not exited; when it
 * has, it is reaped, p->pid becomes 0 and the end of its log is shown. */
bool scen_proc_running(scen_proc *p);

/* scen_proc_exe_dir writes the directory of the running executable
 * (from /proc/self/exe) into buf. Returns 0 or -1, reported. */
int scen_proc_exe_dir(char *buf, size_t size);

/* scen_proc_mkdirs creates path and its missing parents (like mkdir
 * -p). Returns 0 or -1, reported. */
int scen_proc_mkdirs(const char *path);

/* scen_proc_rmtree removes a directory tree; what cannot be removed
 * stays, silently. */
void scen_proc_rmtree(const char *path);

/* scen_proc_free_port finds a TCP port on 127.0.0.1 that is free now
 * (the kernel's choice for port 0). Returns it, or 0 when none could be had. */
unsigned scen_proc_free_port(void);

#endif /* SLUICE_SCEN_PROC_H */
