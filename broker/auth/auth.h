/*
 * auth.h - who may do what: the principal table read from the auth file,
 * and the check every command passes when auth is on.
 *
 * A principal is one line of the file: NAME ROLE PUBLIC-KEY
 * [levels=L1,L2] [tags=GLOB,...]. Connections are matched to principals by
 * the User-Id the ZAP handler gave them (their CURVE public key), never by
 * anything the client says. The role each command needs comes from proto's
 * PROTO_MSG_ROLES and PROTO_CMD_ROLES.
 */
#ifndef SLUICE_AUTH_H
#define SLUICE_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "bk.h"
#include "net.h"

#define AUTH_MAX_TAGS 16
#define AUTH_KEY_LEN 40     /* a CURVE public key in Z85 */
#define AUTH_MAX_PRINCIPALS 100000

typedef struct auth_principal {
    char name[PROTO_MAX_NAME + 1];
    char key[AUTH_KEY_LEN + 1];
    proto_role role;
    uint32_t levels_mask;   /* levels it may publish to and subscribe to; 0: all */
    unsigned ntags;         /* tag globs it may publish with; 0: any tag */
    char tags[AUTH_MAX_TAGS][PROTO_MAX_TAG + 1];
} auth_principal;

typedef struct auth_table {
    auth_principal *v;      /* sorted by key */
    size_t n;
} auth_table;

/* auth_table_load parses the auth file at path (levels are resolved by
 * cfg's names or numbers) into out, which the caller frees with
 * auth_table_fini. Returns SL_OK; SL_EINVAL with "path:line: why" in err for
 * a malformed line (an unknown role, a key that is not 40 Z85 characters, a
 * key or a name twice, an unknown level, too many tags); SL_ENOTFOUND when
 * the file cannot be read; SL_ENOMEM. out is untouched on error. */
int auth_table_load(const char *path, const conf *cfg, auth_table *out, char *err, size_t errlen);

/* auth_table_admit hands t's keys to the ZAP handler z (NULL: CURVE is
 * off, nothing to do): each principal's handshake passes. SL_OK or
 * SL_ENOMEM (the handler's old set stays). */
struct zap;
int auth_table_admit(const auth_table *t, struct zap *z);

/* auth_table_fini frees t's principals (accepts an empty table). */
void auth_table_fini(auth_table *t);

/* auth_find returns the principal whose key is user_id[0..len), or NULL.
 * O(log principals). */
const auth_principal *auth_find(const auth_table *t, const char *user_id, size_t len);

/* auth_open loads b->cfg.auth_file when set (b->auth stays NULL when not)
 * and hands its keys to the ZAP handler. Returns SL_OK, or
 * auth_table_load's error (logged with the file and line). */
int auth_open(bk *b);

/* auth_reload re-reads the auth file (on SIGHUP): on success the new table
 * replaces the old at once, the ZAP handler takes the new keys, and the
 * consumers of keys no longer present are dropped (their deliveries go
 * back uncharged); a malformed file is refused, logged with its line, and
 * the old table stays. Returns SL_OK (also when auth is off) or the load's
 * error. */
int auth_reload(bk *b);

/* auth_close frees the table; accepts a broker without one. */
void auth_close(bk *b);

/* auth_secret_load reads the secret key of the key file at path (as
 * `sluice keygen` writes it) into secret (AUTH_KEY_LEN + 1 bytes), warning
 * when others may read the file. Returns SL_OK; SL_ENOTFOUND when it cannot
 * be read; SL_EINVAL when it holds no valid secret key; the reason in err. */
int auth_secret_load(const char *path, char *secret, char *err, size_t errlen);

/* auth_check decides whether the connection in may send m. With an admin
 * endpoint (--admin-listen), what needs the admin role must come through it
 * and publishing and consuming through the main one, auth or not. Without
 * auth, that is all; otherwise the connection's principal (by User-Id) must
 * exist and its role allow m's type (for ADMIN, its command; a subscribing
 * HELLO needs consumer), and a PUT or subscription must stay within its
 * levels and tags. Returns SL_OK, or SL_EPERM with a sentence naming the
 * command and the role in text; refusals are counted in b->auth_refused,
 * logged at a limited rate, and drop the consumer state of an unknown key. */
int auth_check(bk *b, const net_in *in, const proto_msg *m, char *text, size_t text_len);

/* auth_note_conn records on c, a consumer joining a pool or made by its
 * credit, the key of its connection in and its principal's name (when auth
 * is on), so that a reload that removes the key drops it, and narrows its
 * levels to its principal's (allowed_mask: the levels a THROTTLED of it
 * may pause, settle.c). */
void auth_note_conn(bk *b, conn *c, const net_in *in);

#endif /* SLUICE_AUTH_H */
