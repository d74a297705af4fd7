/* httpd_resp.c: the HTTP server's responses (text, JSON, errors, headers), built by handlers and
 * sent by the server (see httpd.h). */
#include "httpd.h"
#include "httpd_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- responses ---- */

void tm_httpd_resp_reset_body(tm_httpd_resp *resp) {
    free(resp->body);
    free(resp->content_type);
    resp->body = NULL;
    resp->content_type = NULL;
    resp->len = 0;
}

void tm_httpd_body(tm_httpd_resp *resp, int status, const char *content_type, const char *data,
                   size_t len) {
    tm_httpd_resp_reset_body(resp);
    resp->status = status;
    resp->content_type = content_type ? strdup(content_type) : NULL;
    if (len) {
        resp->body = malloc(len);
        if (!resp->body) { /* nothing better to send than an empty 500 */
            resp->status = 500;
            return;
        }
        memcpy(resp->body, data, len);
        resp->len = len;
    }
}

void tm_httpd_text(tm_httpd_resp *resp, int status, const char *text) {
    tm_httpd_body(resp, status, "text/plain; charset=utf-8", text ? text : "",
                  text ? strlen(text) : 0);
}

void tm_httpd_json(tm_httpd_resp *resp, int status, json_t *body) {
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(body);
    if (!text) {
        tm_httpd_error(resp, 500, "handler produced no JSON response");
        return;
    }
    tm_httpd_resp_reset_body(resp);
    resp->status = status;
    resp->content_type = strdup("application/json");
    resp->body = text;
    resp->len = strlen(text);
}

static void set_error_v(tm_httpd_resp *resp, int status, const char *fmt, va_list ap) {
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    json_t *j = json_pack("{s:s}", "error", msg);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!text) { /* msg was not valid UTF-8, or no memory: keep the status, plain message */
        tm_httpd_text(resp, status, "request failed");
        return;
    }
    tm_httpd_resp_reset_body(resp);
    resp->status = status;
    resp->content_type = strdup("application/json");
    resp->body = text;
    resp->len = strlen(text);
}

void tm_httpd_error(tm_httpd_resp *resp, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_error_v(resp, status, fmt, ap);
    va_end(ap);
}

void tm_httpd_header_set(tm_httpd_resp *resp, const char *name, const char *value) {
    hdr *h = calloc(1, sizeof *h);
    if (!h)
        return;
    h->name = strdup(name);
    h->value = strdup(value);
    if (!h->name || !h->value) {
        free(h->name);
        free(h->value);
        free(h);
        return;
    }
    h->next = resp->headers;
    resp->headers = h;
}

static void resp_clear(tm_httpd_resp *resp) {
    tm_httpd_resp_reset_body(resp);
    while (resp->headers) {
        hdr *h = resp->headers;
        resp->headers = h->next;
        free(h->name);
        free(h->value);
        free(h);
    }
}

/* Queues resp on conn; the body moves to libmicrohttpd. */
enum MHD_Result tm_httpd_send_resp(struct MHD_Connection *conn, tm_httpd_resp *resp) {
    struct MHD_Response *r;
    if (resp->len) {
        r = MHD_create_response_from_buffer(resp->len, resp->body, MHD_RESPMEM_MUST_FREE);
        if (r)
            resp->body = NULL;
    } else {
        r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    }
    if (!r) {
        resp_clear(resp);
        return MHD_NO; /* libmicrohttpd closes the connection */
    }
    if (resp->content_type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, resp->content_type);
    for (hdr *h = resp->headers; h; h = h->next)
        MHD_add_response_header(r, h->name, h->value);
    enum MHD_Result ok = MHD_queue_response(conn, (unsigned)resp->status, r);
    MHD_destroy_response(r);
    resp_clear(resp);
    return ok;
}
