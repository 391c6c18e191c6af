/*
 * reload.h - SIGHUP: reopen the log, re-read the settings that can change
 * live, and run every other reload hook, in one place (reload.c).
 */
#ifndef SLUICE_RELOAD_H
#define SLUICE_RELOAD_H

#include <signal.h>
#include <stdint.h>

struct bk;

/* reload_init keeps sluiced's command line (argc, argv: they must outlive
 * the broker), which a reload parses again over a re-read config file so
 * that the command line still wins. */
void reload_init(int argc, char **argv);

/* reload_request asks for a reload (counts one SIGHUP). Async-signal-safe:
 * the SIGHUP handler calls it. */
void reload_request(void);

/* reload_due tells whether a reload was requested and may run at now_ns:
 * at most one runs every second; requests in between are coalesced into
 * the next. */
int reload_due(uint64_t now_ns);

/* reload_wake_ns returns when a coalesced reload falls due (the loop's
 * clock), or UINT64_MAX when none waits. */
uint64_t reload_wake_ns(void);

/* reload_run runs the reload hooks (RELOAD_HOOKS in reload.c) in order, in
 * the loop's thread, between passes (no write transaction is open), telling
 * the service manager RELOADING=1 before and READY=1 after. Nothing here
 * stops the broker: a config file that no longer parses is logged and every
 * setting stays as it was. */
void reload_run(struct bk *b);

#endif /* SLUICE_RELOAD_H */
