/*
 * ha_epoch.c - the highest epoch a node has seen, on its own disk.
 *
 * An epoch is acted on only once it is durable here: a primary before it
 * confirms anything in it, a standby before it accepts records of it. So
 * when Redis loses its data (and its epochs start again from nothing), a
 * node still knows the epoch it was in: the leadership script then
 * promotes nobody (ha.lua: "lost") until an operator runs `sluice ha
 * recover`, and a standby never accepts records of an older epoch again.
 *
 * The file is "EPOCH\n" in decimal, replaced by rename after a flush, with
 * the directory flushed after: a crash leaves the old or the new value.
 *
 * Costs: two fsyncs per new epoch (a promotion, a restart in place).
 */
#include "ha_epoch.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "proto.h"

int ha_epoch_load(const char *dir, uint64_t *epoch)
{
    char path[4200], buf[64];
    snprintf(path, sizeof path, "%s/%s", dir, HA_EPOCH_FILE);
    *epoch = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return SL_OK;
        log_error("ha", "cannot read %s: %s", path, strerror(errno));
        return SL_EIO;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) {
        log_error("ha", "%s is empty or unreadable: the epoch this node saw is unknown", path);
        return SL_ECORRUPT;
    }
    buf[n] = '\0';
    char *end;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (errno || end == buf || (*end && *end != '\n')) {
        log_error("ha", "%s does not hold an epoch", path);
        return SL_ECORRUPT;
    }
    *epoch = v;
    return SL_OK;
}

int ha_epoch_save(const char *dir, uint64_t epoch)
{
    char path[4200], tmp[4210], buf[32];
    snprintf(path, sizeof path, "%s/%s", dir, HA_EPOCH_FILE);
    snprintf(tmp, sizeof tmp, "%s.new", path);
    int len = snprintf(buf, sizeof buf, "%" PRIu64 "\n", epoch);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd < 0 || write(fd, buf, (size_t)len) != len || fsync(fd) != 0) {
        log_error("ha", "cannot write %s: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        return SL_EIO;
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        log_error("ha", "cannot rename %s: %s", tmp, strerror(errno));
        return SL_EIO;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        if (fsync(dfd) != 0)
            log_warn("ha", "cannot flush %s: %s", dir, strerror(errno));
        close(dfd);
    }
    return SL_OK;
}
