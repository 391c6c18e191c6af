/*
 * admin_web.c - web.login: a one-time link to the web console for the
 * principal that asks, over ZeroMQ with its own key (`sluice web login`).
 *
 * The HTTP server keeps the token (http_login_mint); this command only
 * decides who may have one and for how long: any principal of the auth
 * file, for itself (the session it opens has the principal's role, and
 * every request of it carries the principal's key to the loop's auth
 * check); not through the HTTP server itself (a session cannot mint
 * sessions); and with --admin-listen, an admin's link only on the admin
 * endpoint, as every admin command. Without --auth the console is open, and
 * the link is for "anonymous" with the admin role.
 *
 * The answer's strings live in static memory until the next call (the loop
 * encodes the reply before it handles anything else). Costs: one token.
 */
#include "admin.h"

#include <stdio.h>
#include <string.h>

#include "http.h"
#include "log.h"
#include "net.h"

#define WEB_LOGIN_TTL_MS (8ULL * 3600 * 1000) /* a working day, unless --ttl says otherwise */

int admin_web_login(bk *b, const proto_msg *req, const admin_caller *who, proto_msg *rep, char *text,
                    size_t text_len)
{
    static char url[128], token[HTTP_TOKEN_CHARS + 1];
    const char *role = proto_role_name(who->role);
    uint64_t ttl_ms = (req->present & PF(ttl_ms)) ? req->ttl_ms : WEB_LOGIN_TTL_MS;
    if (!b->http) {
        snprintf(text, text_len, "this broker serves no console: start it with --http ADDR:PORT");
        return SL_ESTATE;
    }
    if (who->sock == NET_HTTP) {
        snprintf(text, text_len, "a console session cannot mint login links: run `sluice web login` with your key");
        return SL_EPERM;
    }
    if (b->cfg.admin_listen[0] && who->role == PROTO_ROLE_ADMIN && who->sock != NET_ADMIN) {
        snprintf(text, text_len, "an admin's console link is minted on the admin endpoint (--admin-listen %s)",
                 b->cfg.admin_listen);
        return SL_EPERM;
    }
    if (ttl_ms == 0 || ttl_ms > HTTP_MAX_TTL_MS) {
        snprintf(text, text_len, "a login link lasts from 1 ms to 7 days (ttl_ms at most %llu)",
                 (unsigned long long)HTTP_MAX_TTL_MS);
        return SL_EINVAL;
    }
    int rc = http_login_mint(b->http, who->name, who->key, who->role, ttl_ms, b->mono_ns, token, url, sizeof url);
    if (rc != SL_OK) {
        snprintf(text, text_len, "%s", rc == SL_EFULL ? "too many login links wait unused; use one, or retry in ten "
                                                        "minutes when they expire"
                                                      : "cannot make a login token: no randomness");
        return rc;
    }
    log_info("admin", "console login link minted for %s (role %s), valid %llu s", who->name, role,
             (unsigned long long)(ttl_ms / 1000));
    proto_set_str(rep, PROTO_F_url, url, strlen(url));
    proto_set_str(rep, PROTO_F_login_token, token, strlen(token));
    proto_set(rep, ttl_ms, ttl_ms);
    proto_set_str(rep, PROTO_F_state, role, strlen(role));
    return SL_OK;
}
