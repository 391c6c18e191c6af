/*
 * scen_proc.c - the scenarios' children and directories.
 *
 * Children are started by the one supervisor (tools/common/proc.c): each in
 * its own process group (a terminal's Ctrl-C is the scenario's to handle,
 * and it stops its children in order), stdin from /dev/null, stdout and
 * stderr appended to its log, readiness read from --ready-fd, and a start
 * that gives up when SIGINT or SIGTERM asked the run to stop. The rest is
 * the ground of a run: the directory of the running executable (whose
 * sibling programs a run starts), creating and removing directories, and a
 * free loopback port for the sink.
 */
#include "scen_proc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

int scen_proc_start(proc *p, const char *name, char *const argv[], const char *log_path,
                    bool ready, int ready_ms)
{
    const proc_spec spec = {.argv = (const char *const *)argv,
                            .out_path = log_path,
                            .null_stdin = true,
                            .ready = ready,
                            .ready_ms = ready_ms,
                            .own_group = true,
                            .stopping = scen_stopping};
    return proc_start(p, name, &spec);
}

int scen_proc_exe_dir(char *buf, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n <= 0 || (size_t)n >= size - 1)
        return scen_fail("cannot read /proc/self/exe: %s", n < 0 ? strerror(errno) : "too long");
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash)
        return scen_fail("/proc/self/exe is not a path: %s", buf);
    *slash = '\0';
    return 0;
}

int scen_proc_mkdirs(const char *path)
{
    char buf[SCEN_PATH_BYTES];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return scen_fail("path too long: %s", path);
    for (char *s = buf + 1;; s++) {
        char c = *s;
        if (c != '/' && c != '\0')
            continue;
        *s = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return scen_fail("cannot create %s: %s", buf, strerror(errno));
        *s = c;
        if (!c)
            break;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return scen_fail("%s is not a directory", path);
    return 0;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

void scen_proc_rmtree(const char *path)
{
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

unsigned scen_proc_free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    unsigned port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}
