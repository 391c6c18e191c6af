/*
 * proto_roles.h - who may send what: the roles of the broker's auth file,
 * the role each admin command needs and the role each message type needs.
 * Part of the wire model (included by proto.h, after the admin commands):
 * proto_auth.c derives its tables from these lists beside PROTO_ADMIN_CMDS
 * and PROTO_MSGS, so a command or message type without its line here does
 * not compile.
 */
#ifndef SLUICE_PROTO_ROLES_H
#define SLUICE_PROTO_ROLES_H

/* X(ID, "name"). A principal of the broker's auth file has one role; admin
 * may send everything, the others what their role names. ANY marks what
 * every principal may send (the handshake's HELLO, PING, BYE). replica is
 * a standby's key on the replication stream (--repl-key): on a client
 * endpoint it may send nothing beyond ANY. */
#define PROTO_ROLES(X)          \
    X(ANY,      "any")          \
    X(PRODUCER, "producer")     \
    X(CONSUMER, "consumer")     \
    X(MONITOR,  "monitor")      \
    X(ADMIN,    "admin")        \
    X(REPLICA,  "replica")

typedef enum proto_role {
#define PROTO_ROLE_ENUM_(ID, name) PROTO_ROLE_##ID,
    PROTO_ROLES(PROTO_ROLE_ENUM_)
#undef PROTO_ROLE_ENUM_
    PROTO_ROLE_COUNT_
} proto_role;

/* The role each admin command needs: X(ID, ROLE), a line per line of
 * PROTO_ADMIN_CMDS. proto.c derives its table from PROTO_ADMIN_CMDS, so a
 * command without a line here does not compile. Reading is MONITOR,
 * changing is ADMIN; web.login is ANY: every principal may mint a console
 * link for itself, whose session then has its own role. */
#define PROTO_CMD_ROLES(X)        \
    X(level_list,     MONITOR)    \
    X(level_set,      ADMIN)      \
    X(level_pause,    ADMIN)      \
    X(level_resume,   ADMIN)      \
    X(pool_list,      MONITOR)    \
    X(pool_resize,    ADMIN)      \
    X(pool_pause,     ADMIN)      \
    X(pool_resume,    ADMIN)      \
    X(pool_autoscale, ADMIN)      \
    X(pool_delete,    ADMIN)      \
    X(sink_set,       ADMIN)      \
    X(sink_show,      MONITOR)    \
    X(explain,        MONITOR)    \
    X(dead_list,      MONITOR)    \
    X(dead_peek,      ADMIN)      \
    X(dead_requeue,   ADMIN)      \
    X(dead_purge,     ADMIN)      \
    X(tag_set,        ADMIN)      \
    X(tag_list,       MONITOR)    \
    X(tag_pause,      ADMIN)      \
    X(tag_resume,     ADMIN)      \
    X(msg_peek,       ADMIN)      \
    X(msg_delete,     ADMIN)      \
    X(msg_purge,      ADMIN)      \
    X(msg_move,       ADMIN)      \
    X(backup,         ADMIN)      \
    X(backup_status,  MONITOR)    \
    X(settings_export, MONITOR)   \
    X(sink_resume,    ADMIN)      \
    X(web_login,      ANY)        \
    X(ha_status,      MONITOR)    \
    X(ha_switchover,  ADMIN)      \
    X(ha_recover,     ADMIN)

enum {
#define PROTO_CMD_ROLE_ENUM_(ID, role) PROTO_CMD_ROLE_##ID = PROTO_ROLE_##role,
    PROTO_CMD_ROLES(PROTO_CMD_ROLE_ENUM_)
#undef PROTO_CMD_ROLE_ENUM_
};

/* The role each message type needs: X(ID, ROLE), a line per line of
 * PROTO_MSGS; as with commands, a type without a line does not compile.
 * ADMIN needs its command's role (PROTO_CMD_ROLES); a HELLO that subscribes
 * (it names a pool, levels or credit) needs CONSUMER; what the broker sends
 * is ANY here and refused as unexpected by the broker anyway. */
#define PROTO_MSG_ROLES(X)     \
    X(HELLO,     ANY)          \
    X(WELCOME,   ANY)          \
    X(PUT,       PRODUCER)     \
    X(PUT_OK,    ANY)          \
    X(CREDIT,    CONSUMER)     \
    X(DELIVER,   ANY)          \
    X(ACK,       CONSUMER)     \
    X(NACK,      CONSUMER)     \
    X(TOUCH,     CONSUMER)     \
    X(THROTTLED, CONSUMER)     \
    X(REJECT,    CONSUMER)     \
    X(OK,        ANY)          \
    X(STATS,     MONITOR)      \
    X(STATS_OK,  ANY)          \
    X(BYE,       ANY)          \
    X(ADMIN,     ANY)          \
    X(ADMIN_OK,  ANY)          \
    X(POOL,      ANY)          \
    X(PING,      ANY)          \
    X(PONG,      ANY)          \
    X(ERROR,     ANY)

enum {
#define PROTO_MSG_ROLE_ENUM_(ID, role) PROTO_MSG_ROLE_##ID = PROTO_ROLE_##role,
    PROTO_MSG_ROLES(PROTO_MSG_ROLE_ENUM_)
#undef PROTO_MSG_ROLE_ENUM_
};

#endif /* SLUICE_PROTO_ROLES_H */
