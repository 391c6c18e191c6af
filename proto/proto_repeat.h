/*
 * proto_repeat.h - which admin commands a client may send again when the
 * connection that carried one was lost before its answer came.
 *
 * A client of a high-availability group that loses the primary while it
 * waits for an answer moves to the node that takes over (client/failover.c)
 * and sends again what was not answered. For most commands that is what
 * the caller wants: reading twice, or setting the same value twice, leaves
 * the broker as once would. For some, the lost node may have run the
 * command and its effect reached the standby before the answer was lost,
 * and running it again would not be the same: a second msg.move takes the
 * next batch, a second switchover switches back. Those are ONCE: the
 * client returns SL_ECONNECT, saying the command may have run, and leaves
 * the caller to look and decide. Publishes are not here: a publish sent
 * again is stored at least once, or once with an idempotency key.
 *
 * Part of the wire model (included by proto.h, after the admin commands):
 * proto.c derives its table by walking PROTO_ADMIN_CMDS and naming
 * PROTO_CMD_REPEAT_<command>, so a command without its line here does not
 * compile.
 */
#ifndef SLUICE_PROTO_REPEAT_H
#define SLUICE_PROTO_REPEAT_H

#define PROTO_REPEAT_SAFE 1 /* the same effect sent once or twice */
#define PROTO_REPEAT_ONCE 0 /* a second run would do more, or undo the first */

/* X(ID, SAFE or ONCE), a line per line of PROTO_ADMIN_CMDS. */
#define PROTO_CMD_REPEATS(X)      \
    X(level_list,      SAFE)      \
    X(level_set,       SAFE)      \
    X(level_pause,     SAFE)      \
    X(level_resume,    SAFE)      \
    X(pool_list,       SAFE)      \
    X(pool_resize,     SAFE)      \
    X(pool_pause,      SAFE)      \
    X(pool_resume,     SAFE)      \
    X(pool_autoscale,  SAFE)      \
    X(pool_delete,     ONCE)      \
    X(sink_set,        SAFE)      \
    X(sink_show,       SAFE)      \
    X(explain,         SAFE)      \
    X(dead_list,       SAFE)      \
    X(dead_peek,       SAFE)      \
    X(dead_requeue,    ONCE)      \
    X(dead_purge,      ONCE)      \
    X(tag_set,         SAFE)      \
    X(tag_list,        SAFE)      \
    X(tag_pause,       SAFE)      \
    X(tag_resume,      SAFE)      \
    X(msg_peek,        SAFE)      \
    X(msg_delete,      ONCE)      \
    X(msg_purge,       ONCE)      \
    X(msg_move,        ONCE)      \
    X(backup,          ONCE)      \
    X(backup_status,   SAFE)      \
    X(settings_export, SAFE)      \
    X(sink_resume,     SAFE)      \
    X(web_login,       SAFE)      \
    X(ha_status,       SAFE)      \
    X(ha_switchover,   ONCE)      \
    X(ha_recover,      ONCE)

enum {
#define PROTO_CMD_REPEAT_ENUM_(ID, r) PROTO_CMD_REPEAT_##ID = PROTO_REPEAT_##r,
    PROTO_CMD_REPEATS(PROTO_CMD_REPEAT_ENUM_)
#undef PROTO_CMD_REPEAT_ENUM_
};

#endif /* SLUICE_PROTO_REPEAT_H */
