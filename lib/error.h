/* error.h: the one error convention of libtarema.
 *
 * Functions that can fail return an int status (0 ok, -1 error) or NULL and fill a
 * caller-provided tm_err with a message a human can act on ("kubeconfig /x: context 'y' not
 * found"), never just a code. The struct lives on the caller's stack; nothing to free. */
#ifndef TAREMA_ERROR_H
#define TAREMA_ERROR_H

#include <stddef.h>

#define TM_ERR_MAX 1024

typedef struct tm_err {
    char msg[TM_ERR_MAX];
    int http_status; /* HTTP status when the error came from an API server, else 0 */
} tm_err;

/* Sets err's message (printf-style); err may be NULL. Always returns -1 so callers can write
 * `return tm_err_set(err, ...)`. */
int tm_err_set(tm_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes the existing message with context: "loading config: <old message>". Returns -1. */
int tm_err_wrap(tm_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void tm_err_clear(tm_err *err);

#endif
