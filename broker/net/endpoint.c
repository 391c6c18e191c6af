/*
 * endpoint.c - an ipc:// endpoint is never taken from a live broker.
 *
 * ZeroMQ binds an ipc:// path by unlinking whatever socket file is there
 * and binding anew, so a second broker started with the same path (on
 * another data directory, which its lock does not cover) would take the
 * endpoint: new clients reach it and the first broker, still running, is
 * orphaned. endpoint_claim runs before each bind: it connects to the path
 * as a client would. An answer means a live process owns it, and the start
 * is refused; ECONNREFUSED means a socket file with nobody behind it (a
 * broker killed with -9), which is removed so the bind starts clean; no file
 * means nothing to check. Anything else (not a socket, no permission) is
 * refused rather than guessed at.
 *
 * Invariant: a broker never unlinks a socket file that a process answers on.
 * Cost: one connect(2) per ipc:// endpoint at start. Limit: two brokers
 * starting at the same instant on the same stale path can both pass the
 * check; the kernel orders their binds and the second one wins (as before).
 */
#include "endpoint.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "sluice_errors.h"

int endpoint_claim(const char *endpoint)
{
    static const char scheme[] = "ipc://";
    if (strncmp(endpoint, scheme, sizeof scheme - 1) != 0)
        return SL_OK;
    const char *path = endpoint + sizeof scheme - 1;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (path[0] == '@' || path[0] == '*' || strlen(path) >= sizeof sa.sun_path)
        return SL_OK; /* abstract or generated: the kernel refuses a taken name; too long: bind says so */
    struct stat st;
    if (lstat(path, &st) != 0)
        return SL_OK; /* nothing there */
    if (!S_ISSOCK(st.st_mode)) {
        log_error("net", "cannot listen on %s: %s exists and is not a socket", endpoint, path);
        return SL_ESTATE;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        log_error("net", "cannot check %s: socket: %s", endpoint, strerror(errno));
        return SL_ESTATE;
    }
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa), e = errno;
    close(fd);
    if (rc == 0) {
        log_error("net", "cannot listen on %s: another process answers on it (another sluiced?); stop it or "
                  "choose another --listen", endpoint);
        return SL_ESTATE;
    }
    if (e != ECONNREFUSED) {
        log_error("net", "cannot check %s: connect: %s", endpoint, strerror(e));
        return SL_ESTATE;
    }
    if (unlink(path) != 0 && errno != ENOENT) {
        log_error("net", "cannot remove the stale socket %s: %s", path, strerror(errno));
        return SL_ESTATE;
    }
    log_info("net", "removed the stale socket %s (nothing answered on it)", path);
    return SL_OK;
}
