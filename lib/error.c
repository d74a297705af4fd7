/* error.c: formatting of tm_err messages (see error.h). */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int tm_err_set(tm_err *err, const char *fmt, ...) {
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int tm_err_wrap(tm_err *err, const char *fmt, ...) {
    if (!err)
        return -1;
    char prefix[TM_ERR_MAX], old[TM_ERR_MAX];
    memcpy(old, err->msg, sizeof old);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    snprintf(err->msg, sizeof err->msg, "%.500s: %.500s", prefix, old);
    return -1;
}

void tm_err_clear(tm_err *err) {
    if (err) {
        err->msg[0] = '\0';
        err->http_status = 0;
    }
}
