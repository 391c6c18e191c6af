/*
 * th_http.c - the end-to-end tests' HTTP client (libcurl), raw TCP
 * connections for the floods, and small JSON readers.
 *
 * Requests go through libcurl as any program's would, one easy handle per
 * request (tests measure behaviour, not speed); cookies through a jar file
 * in the test's directory. JSON is read by looking for a key, enough for
 * the flat answers the tests check (the API's own parser is tested in
 * tests/unit/test_proto_json.c).
 */
#include "th_http.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

unsigned th_http_port(const th_broker *b)
{
    static char log[65536];
    for (uint64_t until = th_now_ms() + 10000; th_now_ms() < until; usleep(20 * 1000)) {
        th_read_file(b->log, log, sizeof log);
        const char *p = strstr(log, "http: serving http");
        if (p && (p = strstr(p, "://")) && (p = strchr(p + 3, ':')))
            return (unsigned)atoi(p + 1);
    }
    return 0;
}

typedef struct sink {
    char *buf;
    size_t len, cap;
} sink;

static size_t take(char *data, size_t size, size_t n, void *cls)
{
    sink *s = cls;
    size_t k = size * n, room = s->cap - 1 - s->len;
    memcpy(s->buf + s->len, data, k < room ? k : room);
    s->len += k < room ? k : room;
    s->buf[s->len] = '\0';
    return k;
}

int th_http(const th_req *q, th_resp *r)
{
    static int inited;
    if (!inited) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        inited = 1;
    }
    memset(r, 0, sizeof *r);
    CURL *c = curl_easy_init();
    if (!c) {
        fprintf(stderr, "th_http: curl_easy_init failed\n");
        abort();
    }
    struct curl_slist *hs = NULL;
    for (int i = 0; q->headers && q->headers[i]; i++)
        hs = curl_slist_append(hs, q->headers[i]);
    sink body = {r->body, 0, sizeof r->body}, head = {r->headers, 0, sizeof r->headers};
    curl_easy_setopt(c, CURLOPT_URL, q->url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, q->method);
    if (!strcmp(q->method, "HEAD"))
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (q->body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, q->body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(q->body));
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hs);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, take);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, take);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &head);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, q->timeout_ms ? q->timeout_ms : 10000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    if (q->jar) {
        curl_easy_setopt(c, CURLOPT_COOKIEFILE, q->jar);
        curl_easy_setopt(c, CURLOPT_COOKIEJAR, q->jar);
    }
    char iface[64];
    if (q->from) {
        snprintf(iface, sizeof iface, "host!%s", q->from);
        curl_easy_setopt(c, CURLOPT_INTERFACE, iface);
    }
    if (q->insecure) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_getinfo(c, CURLINFO_TOTAL_TIME, &r->seconds);
    r->body_len = body.len;
    curl_slist_free_all(hs);
    curl_easy_cleanup(c);
    return rc == CURLE_OK ? 0 : -1;
}

int th_http_json_post(const char *url, const char *jar, const char *csrf, const char *body, th_resp *r)
{
    char token[128];
    const char *hs[3] = {"Content-Type: application/json", NULL, NULL};
    if (csrf) {
        snprintf(token, sizeof token, "X-CSRF-Token: %s", csrf);
        hs[1] = token;
    }
    th_req q = {.method = "POST", .url = url, .headers = hs, .body = body, .jar = jar};
    return th_http(&q, r);
}

int th_http_get(const char *url, const char *jar, th_resp *r)
{
    th_req q = {.method = "GET", .url = url, .jar = jar};
    return th_http(&q, r);
}

int th_json_str(const char *json, const char *key, char *out, size_t len)
{
    char k[128];
    snprintf(k, sizeof k, "\"%s\": \"", key);
    const char *p = strstr(json, k);
    if (!p)
        return -1;
    p += strlen(k);
    size_t n = 0;
    while (p[n] && p[n] != '"' && n + 1 < len)
        n++;
    memcpy(out, p, n);
    out[n] = '\0';
    return 0;
}

double th_json_num(const char *json, const char *key)
{
    char k[128];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *p = strstr(json, k);
    return p ? strtod(p + strlen(k), NULL) : -1;
}

int th_tcp_connect(const char *from, unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (from) {
        struct sockaddr_in me = {.sin_family = AF_INET};
        inet_pton(AF_INET, from, &me.sin_addr);
        if (bind(fd, (struct sockaddr *)&me, sizeof me) != 0) {
            close(fd);
            return -1;
        }
    }
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    if (connect(fd, (struct sockaddr *)&to, sizeof to) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int th_tcp_closed(int fd, int wait_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char c;
    if (poll(&p, 1, wait_ms) <= 0)
        return 0;
    ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
    return n == 0 || (n < 0 && errno != EAGAIN);
}

unsigned long th_files_at_least(unsigned long n)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    if (rl.rlim_cur < n) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > n ? n : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    return (unsigned long)rl.rlim_cur;
}

int th_cert_make(const char *dir)
{
    char key[512], cert[512], out[4096];
    snprintf(key, sizeof key, "%s/key.pem", dir);
    snprintf(cert, sizeof cert, "%s/cert.pem", dir);
    const char *argv[] = {"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                          "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
                          "-addext", "subjectAltName=IP:127.0.0.1", NULL};
    return th_run(argv, NULL, out, sizeof out) == 0 ? 0 : -1;
}
