/*
 * httpc.c - POST message bodies to an HTTP service with libcurl, and
 * read what the answer means for the message.
 *
 * This module owns libcurl for the tools (`sluice consume --post`, the
 * scenarios of sluice-bench): its global state, the one request-header list
 * every request sends, and one easy handle per sending thread. The senders
 * (the consumer's workers, a scenario's threads) call httpc_send; the main
 * thread builds the target before they start and destroys it after they
 * are joined, so the target needs no lock: after httpc_new it is only read.
 *
 * Handles. A handle is made on a thread's first send, with everything but
 * the body set once, and stored under a pthread key whose destructor
 * frees it when the thread ends. Reusing it keeps its connection open, so
 * a busy worker pays the TCP (and TLS) handshake once, not per message;
 * libcurl reconnects by itself when the server has closed it. Each handle
 * has its own connection cache, so N workers hold at most N connections.
 * Signals are off in libcurl (CURLOPT_NOSIGNAL): the workers block them,
 * and the timeout must not rely on SIGALRM.
 *
 * Verdicts. 2xx delivered the message. 429 and 503 are the service asking
 * for a pause: THROTTLED, with the Retry-After header read as delta-seconds
 * or an HTTP date (curl_getdate), cut at a day. Another 4xx says the request
 * itself is wrong, so sending it again cannot help: REFUSED. Everything else
 * may pass later: another 5xx, an unexpected 1xx or 3xx (redirects are not
 * followed: a POST must not silently move), no answer at all, or the
 * timeout: RETRY. The answer's body is read and dropped.
 *
 * Per-tag limits. A service that limits each tenant as well as itself
 * may say which limit a 429 hit in a header (sluice-sink: X-Limit-Scope:
 * key); told that header (httpc_tag_limit_set), httpc_send marks such an
 * answer tag_limited, so the consumer can throttle that tag alone.
 *
 * Tags. httpc_send_tagged adds "X-Sluice-Tag: TAG" to one request by
 * putting a node on the stack in front of the shared header list for that
 * request only (libcurl reads the list during the transfer and keeps no
 * pointer to it after CURLOPT_HTTPHEADER is set back), so a service can
 * limit or route per tenant at no allocation.
 *
 * Request headers. httpc_send_with adds a message's own header lines to
 * one request the same way (a list of nodes in front of the target's,
 * freed after it): a header the operator gave the target (--header) wins
 * over a line of the same name, which is left out, so a producer cannot
 * replace the consumer's credentials; a default (Content-Type) yields to a
 * line that names it.
 *
 * Costs: one request per message, no pipelining; the whole body is handed
 * to libcurl as is (no copy). The header list is copied once, at new.
 */
#include "httpc.h"

#include <ctype.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sluice_errors.h"

#define USER_AGENT "sluice/" SLUICE_VERSION

struct httpc {
    char *url;                  /* as given */
    char *shown_url;            /* without user name and password, for messages */
    long timeout_ms;
    struct curl_slist *headers; /* the given ones, then the defaults not overridden */
    size_t ngiven;              /* how many of headers were given (the rest are defaults) */
    pthread_key_t key;          /* each thread's handle */
    char tag_limit_name[HTTPC_TAG_LIMIT_NAME_BYTES + 1];   /* "": no per-tag limit is told apart */
    char tag_limit_value[HTTPC_TAG_LIMIT_VALUE_BYTES + 1]; /* "": any value */
};

/* One thread's easy handle, with the buffer libcurl explains failures in. */
typedef struct handle {
    CURL *curl;
    char error[CURL_ERROR_SIZE];
} handle;

static void handle_free(void *arg)
{
    handle *h = arg;
    if (!h)
        return;
    curl_easy_cleanup(h->curl);
    free(h);
}

/* discard is the write callback: the answer's body is not wanted. */
static size_t discard(char *data, size_t size, size_t n, void *ctx)
{
    (void)data, (void)ctx;
    return size * n;
}

/* handle_new makes a handle with every option but the body set. Returns it,
 * or NULL when memory ran out. */
static handle *handle_new(const httpc *p)
{
    handle *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->curl = curl_easy_init();
    if (!h->curl) {
        free(h);
        return NULL;
    }
    CURL *c = h->curl;
    CURLcode rc = CURLE_OK;
    /* each setopt returns CURLE_OK or an out-of-memory code; keep the first */
#define SET(opt, val) (rc = rc != CURLE_OK ? rc : curl_easy_setopt(c, opt, val))
    SET(CURLOPT_URL, p->url);
    SET(CURLOPT_POST, 1L);
    SET(CURLOPT_HTTPHEADER, p->headers);
    SET(CURLOPT_USERAGENT, USER_AGENT);
    SET(CURLOPT_TIMEOUT_MS, p->timeout_ms);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_FOLLOWLOCATION, 0L);
    SET(CURLOPT_WRITEFUNCTION, discard);
    SET(CURLOPT_ERRORBUFFER, h->error);
#undef SET
    if (rc != CURLE_OK) {
        handle_free(h);
        return NULL;
    }
    return h;
}

bool httpc_header_check(const char *line)
{
    static const char tchar[] = "!#$%&'*+-.^_`|~";
    const char *p = line;
    while (*p && (isalnum((unsigned char)*p) || strchr(tchar, *p)))
        p++;
    if (p == line || *p != ':')
        return false;
    return strpbrk(p, "\r\n") == NULL;
}

/* header_named says whether any of headers is the header name. */
static bool header_named(const char *const *headers, size_t n, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < n; i++)
        if (strncasecmp(headers[i], name, len) == 0 && headers[i][len] == ':')
            return true;
    return false;
}

/* url_shown checks that url is http or https and returns it without user
 * name and password (malloc'd), or NULL: *err says SL_EINVAL or SL_ENOMEM. */
static char *url_shown(const char *url, int *err)
{
    char *scheme = NULL, *shown = NULL;
    CURLU *u = curl_url();
    *err = SL_ENOMEM;
    if (!u)
        return NULL;
    CURLUcode rc = curl_url_set(u, CURLUPART_URL, url, 0);
    if (rc == CURLUE_OK)
        rc = curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
    if (rc == CURLUE_OK && strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)
        rc = CURLUE_UNSUPPORTED_SCHEME;
    if (rc == CURLUE_OK)
        rc = curl_url_set(u, CURLUPART_USER, NULL, 0);
    if (rc == CURLUE_OK)
        rc = curl_url_set(u, CURLUPART_PASSWORD, NULL, 0);
    if (rc == CURLUE_OK)
        rc = curl_url_get(u, CURLUPART_URL, &shown, 0);
    if (rc == CURLUE_OK) {
        char *copy = strdup(shown);
        curl_free(shown);
        shown = copy;
    } else {
        *err = rc == CURLUE_OUT_OF_MEMORY ? SL_ENOMEM : SL_EINVAL;
    }
    curl_free(scheme);
    curl_url_cleanup(u);
    return shown;
}

/* headers_build copies the given headers into p->headers, then adds the
 * defaults they do not override. Returns SL_OK or SL_ENOMEM. */
static int headers_build(httpc *p, const char *const *headers, size_t n)
{
    static const char *const defaults[][2] = {
        {"Content-Type", "Content-Type: application/octet-stream"},
        {"Expect", "Expect:"}, /* no 100-continue round trip for large bodies */
    };
    for (size_t i = 0; i < n + 2; i++) {
        const char *line;
        if (i < n)
            line = headers[i];
        else if (!header_named(headers, n, defaults[i - n][0]))
            line = defaults[i - n][1];
        else
            continue;
        struct curl_slist *l = curl_slist_append(p->headers, line);
        if (!l)
            return SL_ENOMEM;
        p->headers = l;
        p->ngiven += i < n;
    }
    return SL_OK;
}

int httpc_new(const char *url, const char *const *headers, size_t nheaders, long timeout_ms,
                 httpc **out)
{
    *out = NULL;
    if (timeout_ms < 1 || timeout_ms > HTTPC_TIMEOUT_MS_MAX)
        return SL_EINVAL;
    for (size_t i = 0; i < nheaders; i++)
        if (!httpc_header_check(headers[i]))
            return SL_EINVAL;
    if (curl_global_init(CURL_GLOBAL_ALL) != CURLE_OK)
        return SL_EIO;
    int err = SL_ENOMEM;
    httpc *p = calloc(1, sizeof *p);
    if (!p)
        goto global_cleanup;
    p->timeout_ms = timeout_ms;
    if (!(p->shown_url = url_shown(url, &err)))
        goto post_free;
    err = SL_ENOMEM;
    if (!(p->url = strdup(url)) || headers_build(p, headers, nheaders) != SL_OK)
        goto post_free;
    if (pthread_key_create(&p->key, handle_free) != 0)
        goto post_free;
    *out = p;
    return SL_OK;

post_free:
    curl_slist_free_all(p->headers);
    free(p->url);
    free(p->shown_url);
    free(p);
global_cleanup:
    curl_global_cleanup();
    return err;
}

/* verdict_of sorts an HTTP status. */
static httpc_verdict verdict_of(long status)
{
    if (status >= 200 && status < 300)
        return HTTPC_DELIVERED;
    if (status == 429 || status == 503)
        return HTTPC_THROTTLED;
    if (status >= 400 && status < 500)
        return HTTPC_REFUSED;
    return HTTPC_RETRY;
}

/* handle_get returns the calling thread's handle, made on first use, or
 * NULL when memory ran out. */
static handle *handle_get(httpc *p)
{
    handle *h = pthread_getspecific(p->key);
    if (!h) {
        if (!(h = handle_new(p)))
            return NULL;
        if (pthread_setspecific(p->key, h) != 0) {
            handle_free(h);
            return NULL;
        }
    }
    return h;
}

int httpc_warm(httpc *p, long *status)
{
    *status = 0;
    handle *h = handle_get(p);
    if (!h)
        return SL_ENOMEM;
    h->error[0] = '\0';
    curl_easy_setopt(h->curl, CURLOPT_NOBODY, 1L);
    CURLcode rc = curl_easy_perform(h->curl);
    curl_easy_setopt(h->curl, CURLOPT_NOBODY, 0L);
    curl_easy_setopt(h->curl, CURLOPT_POST, 1L); /* NOBODY 0 made it a GET */
    if (rc != CURLE_OK)
        return SL_EIO;
    curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, status);
    return SL_OK;
}

size_t httpc_value_encode(const char *s, size_t max, char *out)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (size_t i = 0; s[i] && i < max; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch > 0x20 && ch < 0x7f && ch != '%') {
            out[n++] = (char)ch;
        } else {
            out[n++] = '%';
            out[n++] = hex[ch >> 4];
            out[n++] = hex[ch & 15];
        }
    }
    out[n] = '\0';
    return n;
}

/* tag_header writes "X-Sluice-Tag: " and tag into line (HTTPC_TAG_LINE_BYTES),
 * bytes outside 0x21..0x7e and '%' percent-encoded. */
static void tag_header(const char *tag, char *line)
{
    size_t n = (size_t)sprintf(line, "%s: ", HTTPC_TAG_HEADER);
    httpc_value_encode(tag, HTTPC_TAG_BYTES, line + n);
}

int httpc_send_tagged(httpc *p, const char *tag, const void *body, size_t body_len, httpc_result *out)
{
    if (!tag || !tag[0])
        return httpc_send(p, body, body_len, out);
    handle *h = handle_get(p);
    if (!h)
        return httpc_send(p, body, body_len, out); /* reports SL_ENOMEM the same way */
    /* One node in front of the target's list, for this request only: no
     * copy of the list, nothing allocated. */
    char line[HTTPC_TAG_LINE_BYTES];
    tag_header(tag, line);
    struct curl_slist first = {.data = line, .next = p->headers};
    curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, &first);
    int rc = httpc_send(p, body, body_len, out);
    curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, p->headers);
    return rc;
}

/* line_named says whether header line names name[0..len) (case-insensitively). */
static bool line_named(const char *line, const char *name, size_t len)
{
    return strncasecmp(line, name, len) == 0 && line[len] == ':';
}

/* named_in says whether any of lines[0..n) has the name of header line. */
static bool named_in(const char *const *lines, size_t n, const char *line)
{
    const char *colon = strchr(line, ':');
    size_t len = colon ? (size_t)(colon - line) : strlen(line);
    for (size_t i = 0; i < n; i++)
        if (line_named(lines[i], line, len))
            return true;
    return false;
}

int httpc_send_with(httpc *p, const char *const *lines, size_t nlines, const void *body, size_t body_len,
                    httpc_result *out)
{
    if (nlines == 0)
        return httpc_send(p, body, body_len, out);
    handle *h = handle_get(p);
    if (!h)
        return httpc_send(p, body, body_len, out); /* reports SL_ENOMEM the same way */
    size_t ntarget = 0;
    for (struct curl_slist *l = p->headers; l; l = l->next)
        ntarget++;
    struct curl_slist *nodes = calloc(nlines + ntarget, sizeof *nodes), *first = NULL, **tail = &first;
    if (!nodes) {
        memset(out, 0, sizeof *out);
        return SL_ENOMEM;
    }
    size_t k = 0, i;
    for (i = 0; i < nlines; i++) { /* a request's line yields to a header the target was given */
        bool given = false;
        size_t g = 0;
        for (struct curl_slist *l = p->headers; l && g < p->ngiven && !given; l = l->next, g++)
            given = named_in((const char *const *)&l->data, 1, lines[i]);
        if (!given) {
            nodes[k].data = (char *)lines[i];
            *tail = &nodes[k++];
            tail = &(*tail)->next;
        }
    }
    i = 0;
    for (struct curl_slist *l = p->headers; l; l = l->next, i++)
        if (i < p->ngiven || !named_in(lines, nlines, l->data)) { /* a default yields to a request's line */
            nodes[k].data = l->data;
            *tail = &nodes[k++];
            tail = &(*tail)->next;
        }
    curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, first);
    int rc = httpc_send(p, body, body_len, out);
    curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, p->headers);
    free(nodes);
    return rc;
}

/* tag_limited tells whether the answer h just read carries p's per-tag
 * limit header (with its value, when one was given). */
static bool tag_limited(const httpc *p, handle *h)
{
    struct curl_header *hd;
    if (!p->tag_limit_name[0] ||
        curl_easy_header(h->curl, p->tag_limit_name, 0, CURLH_HEADER, -1, &hd) != CURLHE_OK)
        return false;
    if (!p->tag_limit_value[0])
        return true;
    const char *v = hd->value;
    size_t len = strlen(v);
    while (len && isspace((unsigned char)*v))
        v++, len--;
    while (len && isspace((unsigned char)v[len - 1]))
        len--;
    return len == strlen(p->tag_limit_value) && strncasecmp(v, p->tag_limit_value, len) == 0;
}

int httpc_tag_limit_set(httpc *p, const char *spec)
{
    const char *eq = strchr(spec, '=');
    size_t nlen = eq ? (size_t)(eq - spec) : strlen(spec);
    if (nlen == 0 || nlen > HTTPC_TAG_LIMIT_NAME_BYTES)
        return SL_EINVAL;
    for (size_t i = 0; i < nlen; i++)
        if (!isalnum((unsigned char)spec[i]) && !strchr("!#$%&'*+-.^_`|~", spec[i]))
            return SL_EINVAL;
    const char *v = eq ? eq + 1 : "";
    while (*v == ' ' || *v == '\t')
        v++;
    size_t vlen = strlen(v);
    while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
        vlen--;
    if ((eq && vlen == 0) || vlen > HTTPC_TAG_LIMIT_VALUE_BYTES)
        return SL_EINVAL;
    for (size_t i = 0; i < vlen; i++)
        if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
            return SL_EINVAL;
    memcpy(p->tag_limit_name, spec, nlen);
    p->tag_limit_name[nlen] = '\0';
    memcpy(p->tag_limit_value, v, vlen);
    p->tag_limit_value[vlen] = '\0';
    return SL_OK;
}

int httpc_send(httpc *p, const void *body, size_t body_len, httpc_result *out)
{
    out->verdict = HTTPC_RETRY;
    out->status = 0;
    out->retry_after_ms = 0;
    out->tag_limited = false;
    out->what[0] = '\0';
    handle *h = handle_get(p);
    if (!h)
        return SL_ENOMEM;
    h->error[0] = '\0';
    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body_len ? body : "");
    CURLcode rc = curl_easy_perform(h->curl);
    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, NULL); /* the body is the caller's */
    if (rc != CURLE_OK) {
        snprintf(out->what, sizeof out->what, "no answer from %s: %s", p->shown_url,
                 h->error[0] ? h->error : curl_easy_strerror(rc));
        return SL_OK;
    }
    curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &out->status);
    snprintf(out->what, sizeof out->what, "HTTP %ld from %s", out->status, p->shown_url);
    out->verdict = verdict_of(out->status);
    struct curl_header *ra;
    if (out->verdict == HTTPC_THROTTLED &&
        curl_easy_header(h->curl, "Retry-After", 0, CURLH_HEADER, -1, &ra) == CURLHE_OK)
        out->retry_after_ms = httpc_retry_after_ms(ra->value, time(NULL));
    out->tag_limited = out->verdict == HTTPC_THROTTLED && tag_limited(p, h);
    return SL_OK;
}

void httpc_destroy(httpc **pp)
{
    if (!pp || !*pp)
        return;
    httpc *p = *pp;
    handle_free(pthread_getspecific(p->key));
    pthread_setspecific(p->key, NULL);
    pthread_key_delete(p->key);
    curl_slist_free_all(p->headers);
    free(p->url);
    free(p->shown_url);
    free(p);
    curl_global_cleanup();
    *pp = NULL;
}

uint32_t httpc_backoff_ms(unsigned attempt)
{
    uint32_t ms = HTTPC_BACKOFF_MS_FIRST;
    for (unsigned i = 1; i < attempt && ms < HTTPC_BACKOFF_MS_MAX; i++)
        ms *= 2;
    return ms < HTTPC_BACKOFF_MS_MAX ? ms : HTTPC_BACKOFF_MS_MAX;
}

uint32_t httpc_retry_after_ms(const char *value, time_t now_s)
{
    char text[128];
    while (*value == ' ' || *value == '\t')
        value++;
    size_t len = strlen(value);
    while (len && (value[len - 1] == ' ' || value[len - 1] == '\t'))
        len--;
    if (len == 0 || len >= sizeof text)
        return 0;
    memcpy(text, value, len);
    text[len] = '\0';
    uint64_t s = 0;
    if (strspn(text, "0123456789") == len) {
        /* delta-seconds; stop counting once past the cap */
        for (size_t i = 0; i < len && s <= HTTPC_RETRY_AFTER_MS_MAX / 1000; i++)
            s = s * 10 + (uint64_t)(text[i] - '0');
    } else {
        time_t at = curl_getdate(text, NULL);
        if (at == -1 || at <= now_s)
            return 0;
        s = (uint64_t)(at - now_s);
    }
    uint64_t ms = s * 1000;
    return ms < HTTPC_RETRY_AFTER_MS_MAX ? (uint32_t)ms : HTTPC_RETRY_AFTER_MS_MAX;
}
