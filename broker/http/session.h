/*
 * session.h - logins and sessions of the console (session.c).
 */
#ifndef SLUICE_SESSION_H
#define SLUICE_SESSION_H

#include "http_int.h"

#define SESSION_MAX 1024       /* sessions at once; a new one past it ends the one unused longest */
#define SESSION_MAX_TOKENS 64  /* login links minted and not yet used */
#define SESSION_LINK_MS (10ULL * 60 * 1000) /* the most a link stays usable, whatever its --ttl */

/* session_open allocates h->sessions; SL_OK, SL_ENOMEM or SL_EIO (no
 * randomness). */
int session_open(http *h);
void session_close(http *h);

/* session_mint makes a login token (http_login_mint). */
int session_mint(http *h, const char *principal, const char *key, proto_role role, uint64_t ttl_ms,
                 uint64_t now_ns, char *token);

/* session_refresh applies a reloaded auth table (http_sessions_refresh). */
void session_refresh(http *h, http_role_fn role_of, void *ctx);

/* session_sweep ends sessions past their idle or absolute end and forgets
 * tokens past theirs. */
void session_sweep(http *h, uint64_t now_ns);

/* session_who fills r's caller from its session cookie, or, without
 * --auth, as the open console (principal "anonymous", role admin). Returns
 * 1 when r has a caller, 0 when not (no cookie, an unknown or ended
 * session). */
int session_who(hreq *r);

/* session_login redeems token (once) for a new session: r's caller is
 * set, its cookie goes with r's response. Returns SL_OK; SL_EPERM for a
 * token unknown, used or past its end; SL_ETHROTTLED when r's address
 * tried too often (retry-after in *retry_s); SL_EIO without randomness. */
int session_login(hreq *r, const char *token, size_t len, unsigned *retry_s);

/* session_logout ends r's session and clears its cookie. */
void session_logout(hreq *r);

/* session_csrf_ok tells whether r's X-CSRF-Token is its session's
 * (always 1 without --auth). */
int session_csrf_ok(hreq *r);

/* session_headers adds r's pending Set-Cookie to rs. */
void session_headers(hreq *r, struct MHD_Response *rs);

#endif /* SLUICE_SESSION_H */
