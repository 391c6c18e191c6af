/*
 * scen_proc.h - the child processes of `sluice-bench --scenario` (sluiced,
 * sluice-sink, `sluice consume`, gnuplot), started by the one supervisor
 * (proc.h), and the directories a run makes.
 *
 * Children are stopped by their PID only, with proc_stop; only the thread
 * that started a child may stop it.
 */
#ifndef SLUICE_SCEN_PROC_H
#define SLUICE_SCEN_PROC_H

#include <stdbool.h>
#include <stddef.h>

#include "proc.h"
#include "scen.h"

/* scen_proc_start runs argv[0] (a path) with argv, in its own process
 * group, its stdout and stderr appended to log_path and stdin from
 * /dev/null (proc_start). With ready, it adds "--ready-fd FD" and waits up
 * to ready_ms for the READY line, giving up when the run is stopping; a
 * child that exits or stays silent is killed and reaped, and the end of its
 * log shown. p needs no setup. Returns 0 with p->pid set, or -1, reported,
 * with p->pid 0 and nothing left running. */
int scen_proc_start(proc *p, const char *name, char *const argv[], const char *log_path,
                    bool ready, int ready_ms);

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
