/*
 * peers.c - which descriptor each CURVE key's connections use, so that a
 * key removed by a reload loses its open connections, not only its next
 * command.
 *
 * A ROUTER socket has no way to disconnect one peer. But libzmq tells, for
 * every message, the descriptor it was read from (ZMQ_SRCFD), and a
 * shutdown(2) of that descriptor makes libzmq's I/O thread see the
 * connection end and tear it down as if the peer had closed it: the peer
 * sees a disconnection and reconnects, and the ZAP handler, which has the
 * new key set, refuses the handshake.
 *
 * The table is indexed by descriptor: for each, the key of the last message
 * read from it and the socket's inode when that was recorded. A descriptor
 * is reused once libzmq closes a connection, possibly for a connection of
 * another key; so an entry is rewritten whenever a message brings another
 * key, and before a shutdown the descriptor's inode is checked against the
 * recorded one (sockets' inodes are not reused while the old one is
 * remembered here in practice: they come from a counter). A connection that
 * has sent nothing since its descriptor was reused is thus never closed in
 * another's name; a revoked key's connection that has sent nothing at all
 * is not in the table, and is closed at its first message (auth.c refuses
 * it and calls peers_drop_fd).
 *
 * Only the loop's thread uses it. Costs: a note is O(1), with an fstat when
 * the descriptor's key changes; a drop is O(highest descriptor seen), on a
 * reload only; memory is 48 bytes per descriptor up to the highest seen.
 */
#include "peers.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "grow.h"
#include "log.h"
#include "sluice_errors.h"

#define PEERS_MAX_FD (1 << 20)
#define PEERS_KEY 40

typedef struct peer_fd {
    uint64_t ino;              /* 0: nothing recorded */
    char key[PEERS_KEY + 1];
} peer_fd;

struct peers {
    peer_fd *by_fd;
    size_t cap;
};

uint64_t peers_inode(int fd)
{
    if (fd < 0)
        return 0;
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) ? (uint64_t)st.st_ino : 0;
}

int peers_note(peers **pp, int fd, const char *user_id, size_t len)
{
    if (fd < 0 || fd >= PEERS_MAX_FD || !user_id || len == 0 || len > PEERS_KEY)
        return SL_EINVAL;
    peers *p = *pp;
    if (!p && !(p = *pp = calloc(1, sizeof *p)))
        return SL_ENOMEM;
    if ((size_t)fd >= p->cap) {
        size_t was = p->cap;
        peer_fd *v = grow_array(p->by_fd, &p->cap, (size_t)fd + 1, sizeof *v, 64);
        if (!v)
            return SL_ENOMEM;
        memset(v + was, 0, (p->cap - was) * sizeof *v);
        p->by_fd = v;
    }
    peer_fd *e = &p->by_fd[fd];
    if (e->ino && strncmp(e->key, user_id, len) == 0 && e->key[len] == '\0')
        return SL_OK;
    e->ino = peers_inode(fd);
    memcpy(e->key, user_id, len);
    e->key[len] = '\0';
    return SL_OK;
}

/* drop shuts e's descriptor when it is still the recorded socket. */
static int drop(peer_fd *e, int fd)
{
    uint64_t ino = e->ino;
    e->ino = 0;
    if (!ino || peers_inode(fd) != ino)
        return 0; /* closed, or reused by another connection since */
    if (shutdown(fd, SHUT_RDWR) != 0)
        return 0;
    log_info("peers", "closed the connection of key %.8s... (descriptor %d): the key was revoked", e->key, fd);
    return 1;
}

unsigned peers_drop(peers *p, peers_keep_fn keep, void *ctx)
{
    unsigned n = 0;
    for (size_t fd = 0; p && fd < p->cap; fd++) {
        peer_fd *e = &p->by_fd[fd];
        if (e->ino && !keep(ctx, e->key))
            n += (unsigned)drop(e, (int)fd);
    }
    return n;
}

int peers_drop_fd(peers *p, int fd, const char *user_id, size_t len)
{
    if (!p || fd < 0 || (size_t)fd >= p->cap || !user_id || len > PEERS_KEY)
        return 0;
    peer_fd *e = &p->by_fd[fd];
    if (!e->ino || strncmp(e->key, user_id, len) != 0 || e->key[len] != '\0')
        return 0;
    return drop(e, fd);
}

void peers_destroy(peers **pp)
{
    if (!pp || !*pp)
        return;
    free((*pp)->by_fd);
    free(*pp);
    *pp = NULL;
}
