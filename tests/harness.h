/*
 * harness.h - helpers for the end-to-end tests: real sluiced processes in
 * fresh temporary directories, on ipc:// endpoints, with readiness signalled
 * through a pipe (never slept for).
 *
 * The broker binary comes from $SLUICE_BIN (a directory; default "bin"), so
 * the same tests run against the plain and the sanitized builds.
 */
#ifndef SLUICE_TEST_HARNESS_H
#define SLUICE_TEST_HARNESS_H

#include <stdint.h>
#include <sys/types.h>

typedef struct th_broker {
    pid_t pid;
    char dir[256];        /* the test's temporary directory */
    char data[300];       /* dir/data */
    char endpoint[320];   /* ipc://dir/s.sock */
    char log[300];        /* dir/sluiced.log: the broker's stderr */
    const char *extra[16];/* extra arguments, NULL-terminated */
    const char *wrap[16]; /* a command to run sluiced under (strace ...), NULL-terminated */
} th_broker;

/* th_broker_init makes a fresh temporary directory; extra (NULL-terminated,
 * may be NULL) is kept for every start. Returns 0 or -1. */
int th_broker_init(th_broker *b, const char *const *extra);

/* th_broker_start starts sluiced on b's directory and waits (up to 20 s) for
 * its READY line. Returns 0, or -1 (and prints the broker's log). */
int th_broker_start(th_broker *b);

/* th_broker_stop sends SIGTERM and waits (up to 20 s, then SIGKILL). Returns
 * the exit status, or -1 when it had to be killed or died of a signal. */
int th_broker_stop(th_broker *b);

/* th_broker_wait waits up to timeout_ms for the broker to exit by itself.
 * Returns its exit status, 128 + the signal that ended it, or -1 if it is
 * still running. */
int th_broker_wait(th_broker *b, int timeout_ms);

/* th_broker_kill9 kills the broker with SIGKILL and reaps it. */
void th_broker_kill9(th_broker *b);

/* th_broker_fini stops the broker if running and removes the directory. */
void th_broker_fini(th_broker *b);

/* th_run runs a command (argv, NULL-terminated) with stdin from in_text (may
 * be NULL), captures stdout into out (NUL-terminated, up to out_len-1 bytes)
 * and returns its exit status (-1 on a signal or a 60 s timeout). */
int th_run(const char *const *argv, const char *in_text, char *out, size_t out_len);

/* th_bin returns "$SLUICE_BIN/name" in a static buffer (one per call site is
 * enough: the buffer rotates among 8). */
const char *th_bin(const char *name);

/* th_now_ms reads the monotonic clock in ms. */
uint64_t th_now_ms(void);

/* th_seed returns the test's random seed ($SLUICE_SEED or the time), printed
 * once so that a failure can be replayed. */
unsigned th_seed(void);

/* th_rmrf removes a directory tree. */
void th_rmrf(const char *path);

#endif /* SLUICE_TEST_HARNESS_H */
