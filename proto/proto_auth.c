/*
 * proto_auth.c - the roles model and the key file's format.
 *
 * Owns the tables derived from PROTO_ROLES, PROTO_MSG_ROLES and
 * PROTO_CMD_ROLES (proto.h): the role a message type or an admin command
 * needs. Each table is built by walking PROTO_MSGS or PROTO_ADMIN_CMDS and
 * naming PROTO_MSG_ROLE_<type> or PROTO_CMD_ROLE_<command>, so a type or a
 * command added without its role line fails to compile: nobody can add a
 * command that every principal may send by forgetting it.
 *
 * Also the text of a CURVE key file ("public = Z85", "secret = Z85", "#"
 * comments), read by the broker (--curve-secret) and the client library
 * (sl_key_read) alike. Pure: no I/O. O(1) per lookup, O(text) per parse.
 */
#include "proto.h"

#include <string.h>

static const unsigned char msg_roles[PROTO_TYPE_COUNT_] = {
#define MSG_ROLE_(ID, name, dir, req, opt) [PROTO_##ID] = PROTO_MSG_ROLE_##ID,
    PROTO_MSGS(MSG_ROLE_)
#undef MSG_ROLE_
};

static const unsigned char cmd_roles[PROTO_CMD_COUNT_] = {
#define CMD_ROLE_(ID, name, req, opt, res, fields) [PROTO_CMD_##ID] = PROTO_CMD_ROLE_##ID,
    PROTO_ADMIN_CMDS(CMD_ROLE_)
#undef CMD_ROLE_
};

static const char *const role_names[PROTO_ROLE_COUNT_] = {
#define ROLE_NAME_(ID, name) [PROTO_ROLE_##ID] = name,
    PROTO_ROLES(ROLE_NAME_)
#undef ROLE_NAME_
};

proto_role proto_msg_role(proto_type t)
{
    return t > PROTO_NONE && t < PROTO_TYPE_COUNT_ ? (proto_role)msg_roles[t] : PROTO_ROLE_ANY;
}

proto_role proto_cmd_role(proto_cmd c)
{
    return (int)c >= 0 && c < PROTO_CMD_COUNT_ ? (proto_role)cmd_roles[c] : PROTO_ROLE_ADMIN;
}

int proto_role_allows(proto_role have, proto_role need)
{
    return need == PROTO_ROLE_ANY || have == PROTO_ROLE_ADMIN || have == need;
}

const char *proto_role_name(proto_role r)
{
    return (int)r >= 0 && r < PROTO_ROLE_COUNT_ ? role_names[r] : "?";
}

int proto_role_of(const char *name, size_t len)
{
    for (int r = 0; r < PROTO_ROLE_COUNT_; r++)
        if (strlen(role_names[r]) == len && memcmp(role_names[r], name, len) == 0)
            return r;
    return -1;
}

#define Z85_CHARS "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
#define KEY_LEN 40

int proto_key_parse(const char *text, char *pub, char *sec)
{
    if (pub)
        pub[0] = '\0';
    if (sec)
        sec[0] = '\0';
    while (*text) {
        size_t len = strcspn(text, "\n");
        const char *p = text, *end = text + len;
        text = *end ? end + 1 : end;
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
            p++;
        while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
            end--;
        if (p == end || *p == '#')
            continue;
        char *dst;
        if ((size_t)(end - p) > 6 && memcmp(p, "public", 6) == 0)
            dst = pub, p += 6;
        else if ((size_t)(end - p) > 6 && memcmp(p, "secret", 6) == 0)
            dst = sec, p += 6;
        else
            return SL_EINVAL;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (p == end || *p++ != '=')
            return SL_EINVAL;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (end - p != KEY_LEN)
            return SL_EINVAL;
        for (const char *q = p; q < end; q++)
            if (!*q || !strchr(Z85_CHARS, *q))
                return SL_EINVAL;
        if (dst) {
            memcpy(dst, p, KEY_LEN);
            dst[KEY_LEN] = '\0';
        }
    }
    return SL_OK;
}
