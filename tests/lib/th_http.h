/*
 * th_http.h - the HTTP side of the end-to-end tests: sluiced's --http port,
 * requests through libcurl (the way any HTTP client would send them), raw
 * sockets for the connection floods, and reading a JSON field.
 *
 * Nothing here uses cmocka: what can fail because of what a test checks is
 * returned; a broken harness aborts.
 */
#ifndef SLUICE_TEST_TH_HTTP_H
#define SLUICE_TEST_TH_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "harness.h"

/* th_http_port waits (up to 10 s) for b's log to name the console's
 * address ("serving http://ADDR:PORT/ " or https) and returns the port, or
 * 0. */
unsigned th_http_port(const th_broker *b);

/* One response: its status (0: no answer), its headers and body,
 * NUL-terminated and cut to their buffers. */
typedef struct th_resp {
    long status;
    char headers[8192];
    char body[256 * 1024];
    size_t body_len;
    double seconds;            /* the request's time, connect included */
} th_resp;

/* A request: method, URL ("http://127.0.0.1:PORT/api/v1/..."), extra
 * header lines (NULL-terminated, may be NULL: "Content-Type: ..."), a body
 * (may be NULL), and a cookie jar file (may be NULL) kept between
 * requests. insecure: accept any certificate (a test's own). timeout_ms
 * bounds it. Returns 0, or -1 when no response came (r->status 0). */
typedef struct th_req {
    const char *method;
    const char *url;
    const char *const *headers;
    const char *body;
    const char *jar;
    int insecure;
    long timeout_ms;
    const char *from;          /* the source address ("127.0.0.2"), or NULL */
} th_req;
int th_http(const th_req *q, th_resp *r);

/* th_http_json_post is th_http for a write: POST with Content-Type
 * application/json, X-CSRF-Token csrf (NULL: none) and the jar. */
int th_http_json_post(const char *url, const char *jar, const char *csrf, const char *body, th_resp *r);

/* th_http_get is th_http for a plain GET with the jar (may be NULL). */
int th_http_get(const char *url, const char *jar, th_resp *r);

/* th_json_str copies the string value of the first "key": in json into
 * out (escapes kept as they are); returns 0, or -1 when there is none. */
int th_json_str(const char *json, const char *key, char *out, size_t len);

/* th_json_num returns the number after the first "key": in json, or -1. */
double th_json_num(const char *json, const char *key);

/* th_tcp_connect opens a TCP connection from source address from
 * ("127.0.0.2"; NULL: any) to 127.0.0.1:port, blocking. Returns the
 * descriptor or -1. */
int th_tcp_connect(const char *from, unsigned port);

/* th_tcp_closed tells whether the peer closed fd (a read returns 0 or an
 * error) within wait_ms. */
int th_tcp_closed(int fd, int wait_ms);

/* th_files_at_least raises this process's open-file limit to n, as far as
 * the hard limit allows. Returns the limit now. */
unsigned long th_files_at_least(unsigned long n);

/* th_cert_make writes a self-signed certificate and key for 127.0.0.1 as
 * dir/cert.pem and dir/key.pem (openssl). Returns 0 or -1. */
int th_cert_make(const char *dir);

#endif /* SLUICE_TEST_TH_HTTP_H */
