/* fake_http.h: reading one HTTP/1.1 request on a socket, for the unit tests' fake API servers
 * (they script answers byte by byte, which a real server cannot). */
#ifndef TAREMA_TESTS_FAKE_HTTP_H
#define TAREMA_TESTS_FAKE_HTTP_H

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Reads the request line and headers into head (NUL-terminated, cut after the blank line) and
 * the whole body, which it returns (malloc'd, NUL-terminated; the caller frees). The body is
 * always read: closing with unread data would reset the connection. NULL when the peer closed
 * before the headers ended. */
static inline char *fake_http_read(int c, char *head, size_t head_size) {
    size_t n = 0;
    head[0] = '\0';
    while (n < head_size - 1 && !strstr(head, "\r\n\r\n")) {
        ssize_t r = recv(c, head + n, head_size - 1 - n, 0);
        if (r <= 0)
            return NULL;
        n += (size_t)r;
        head[n] = '\0';
    }
    char *end = strstr(head, "\r\n\r\n");
    if (!end)
        return NULL;
    end += 4;
    const char *cl = strcasestr(head, "\r\nContent-Length:");
    size_t want = cl && cl < end ? (size_t)strtoul(cl + 17, NULL, 10) : 0;
    size_t have = n - (size_t)(end - head);
    char *body = calloc(1, want + 1);
    if (!body)
        return NULL;
    memcpy(body, end, have < want ? have : want);
    while (have < want) {
        ssize_t r = recv(c, body + have, want - have, 0);
        if (r <= 0)
            break;
        have += (size_t)r;
    }
    *end = '\0';
    return body;
}

#endif
