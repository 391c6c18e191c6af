/*
 * headers.c - a message's headers on the client's side: the caller's
 * sl_header array checked and pointed at for a PUT (client_hdrs_build), a
 * reply's headers copied NUL-terminated for the caller (client_hdrs_view,
 * client_more_fill: sl_explain_ex, sl_dead_peek_ex), and a delivery's
 * header found by name (sl_delivery_header). The rules are proto's
 * (proto_hdrs.h): the library refuses what the broker would, with the
 * same sentence, before anything is sent. They are checked once, by the
 * encoder (proto_encode); only a refusal looks again, for the sentence
 * (client_hdrs_why): a publish with headers pays for one check. A delivery's own headers are
 * copied into it by route.c.
 *
 * Costs: O(bytes) per check and per copy; a lookup is O(headers).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "client.h"

void client_hdrs_view(sl_client *c, const proto_hdrs *h, const sl_header **out, size_t *n)
{
    char *text = c->hdr_text, *end = c->hdr_text + sizeof c->hdr_text;
    uint32_t k = 0;
    for (uint32_t i = 0; i < h->n && i < SL_MAX_HEADERS; i++) {
        const proto_buf *nm = &h->name[i], *v = &h->value[i];
        if ((size_t)(end - text) < (size_t)nm->len + v->len + 2)
            break; /* not reached: the decoder checked the headers' limits */
        c->hdr_view[k].name = memcpy(text, nm->ptr, nm->len);
        text[nm->len] = '\0';
        text += nm->len + 1;
        c->hdr_view[k].value = text;
        if (v->len)
            memcpy(text, v->ptr, v->len);
        text[v->len] = '\0';
        text += v->len + 1;
        k++;
    }
    *out = k ? c->hdr_view : NULL;
    *n = k;
}

void client_more_fill(sl_client *c, const proto_msg *r, sl_msg_more *more)
{
    sl_msg_more all = {.size = sizeof all};
    static const proto_hdrs none;
    client_hdrs_view(c, (r->present & PF(headers)) ? &r->headers : &none, &all.headers, &all.nheaders);
    all.wait_ms = (r->present & PF(wait_ms)) ? r->wait_ms : 0;
    size_t size = more->size < sizeof all ? more->size : sizeof all;
    memcpy((char *)more + sizeof more->size, (const char *)&all + sizeof all.size, size - sizeof all.size);
}

int client_hdrs_build(sl_client *c, const sl_header *headers, size_t n, proto_hdrs *h)
{
    char why[256];
    h->n = 0;
    if (n == 0)
        return SL_OK;
    if (!headers)
        return client_fail(c, SL_EINVAL);
    if (n > PROTO_MAX_HEADERS) {
        snprintf(why, sizeof why, "headers: %s", proto_hdr_fault_text(PROTO_HDR_COUNT));
        return client_fail_text(c, SL_ETOOBIG, why, strlen(why));
    }
    for (size_t i = 0; i < n; i++) {
        if (!headers[i].name || !headers[i].value) {
            snprintf(why, sizeof why, "headers: header %zu has a NULL name or value", i);
            return client_fail_text(c, SL_EINVAL, why, strlen(why));
        }
        size_t nl = strnlen(headers[i].name, PROTO_MAX_HEADER_NAME + 1);
        size_t vl = strnlen(headers[i].value, PROTO_MAX_HEADER_VALUE + 1);
        h->name[i] = (proto_buf){headers[i].name, (uint32_t)nl};
        h->value[i] = (proto_buf){headers[i].value, (uint32_t)vl};
    }
    h->n = (uint32_t)n;
    return SL_OK; /* the rules: proto_encode checks them, client_hdrs_why says which broke */
}

int client_hdrs_why(sl_client *c, const proto_hdrs *h, int rc)
{
    char why[256];
    int code = proto_hdrs_explain(h, why, sizeof why);
    return code ? client_fail_text(c, code, why, strlen(why)) : rc;
}

const char *sl_delivery_header(const sl_delivery *d, const char *name)
{
    if (!d || !name)
        return NULL;
    for (size_t i = 0; i < d->nheaders; i++)
        if (strcasecmp(d->headers[i].name, name) == 0)
            return d->headers[i].value;
    return NULL;
}
