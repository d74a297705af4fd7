/* watchstream.c: see watchstream.h. A single buffer with a read offset; consumed bytes are
 * dropped by moving the tail down only when the consumed part dominates, so a burst of many
 * small events costs linear time. */
#include "watchstream.h"

#include <stdlib.h>
#include <string.h>

struct tm_watchstream {
    char *buf;
    size_t off, len, cap, max_line;
    size_t tail; /* bytes after the last newline buffered */
};

tm_watchstream *tm_watchstream_new(size_t max_line) {
    tm_watchstream *ws = calloc(1, sizeof *ws);
    if (ws)
        ws->max_line = max_line ? max_line : (size_t)64 << 20;
    return ws;
}

void tm_watchstream_free(tm_watchstream *ws) {
    if (!ws)
        return;
    free(ws->buf);
    free(ws);
}

size_t tm_watchstream_pending(const tm_watchstream *ws) {
    return ws->len - ws->off;
}

int tm_watchstream_feed(tm_watchstream *ws, const char *data, size_t len, tm_err *err) {
    if (ws->off > 0 && ws->off >= ws->len / 2) {
        memmove(ws->buf, ws->buf + ws->off, ws->len - ws->off);
        ws->len -= ws->off;
        ws->off = 0;
    }
    if (ws->len + len + 1 > ws->cap) {
        size_t cap = ws->cap ? ws->cap : 4096;
        while (cap < ws->len + len + 1)
            cap *= 2;
        char *nb = realloc(ws->buf, cap);
        if (!nb)
            return tm_err_set(err, "watch stream: out of memory buffering %zu bytes", len);
        ws->buf = nb;
        ws->cap = cap;
    }
    memcpy(ws->buf + ws->len, data, len);
    ws->len += len;
    ws->buf[ws->len] = '\0';
    /* Only the unterminated tail can be too long; whole lines are checked when taken. Only the
     * new bytes are searched, so a long line arriving in small chunks costs linear time. */
    const char *nl = len ? memrchr(data, '\n', len) : NULL;
    ws->tail = nl ? (size_t)(data + len - nl - 1) : ws->tail + len;
    if (ws->tail > ws->max_line)
        return tm_err_set(err, "watch stream: event longer than %zu bytes without a newline",
                          ws->max_line);
    return 0;
}

static const char *const type_names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

const char *tm_ws_type_name(tm_ws_type t) {
    return (unsigned)t < 5 ? type_names[t] : "?";
}

static int parse_line(const char *line, size_t n, tm_watch_event *ev, tm_err *err) {
    json_error_t je;
    json_t *root = json_loadb(line, n, 0, &je);
    if (!root)
        return tm_err_set(err, "watch stream: invalid JSON at column %d: %s", je.column, je.text);
    const char *type = json_string_value(json_object_get(root, "type"));
    json_t *obj = json_object_get(root, "object");
    int t = -1;
    for (int i = 0; type && i < 5; i++)
        if (strcmp(type, type_names[i]) == 0)
            t = i;
    if (t < 0) {
        tm_err_set(err,
                   "watch stream: event type '%s' is not one of ADDED, MODIFIED, DELETED, "
                   "BOOKMARK, ERROR",
                   type ? type : "(missing)");
        json_decref(root);
        return -1;
    }
    if (!json_is_object(obj)) {
        tm_err_set(err, "watch stream: %s event without an object", type);
        json_decref(root);
        return -1;
    }
    ev->type = (tm_ws_type)t;
    ev->object = json_incref(obj);
    ev->code = 0;
    if (ev->type == TM_WS_ERROR) {
        json_t *code = json_object_get(obj, "code");
        ev->code = json_is_integer(code) ? (int)json_integer_value(code) : 0;
    }
    json_decref(root);
    return 1;
}

int tm_watchstream_next(tm_watchstream *ws, tm_watch_event *ev, tm_err *err) {
    for (;;) {
        if (ws->off >= ws->len)
            return 0;
        char *start = ws->buf + ws->off;
        char *nl = memchr(start, '\n', ws->len - ws->off);
        if (!nl)
            return 0;
        size_t n = (size_t)(nl - start);
        ws->off += n + 1;
        while (n > 0 && (start[n - 1] == '\r' || start[n - 1] == ' ' || start[n - 1] == '\t'))
            n--;
        size_t skip = 0;
        while (skip < n && (start[skip] == ' ' || start[skip] == '\t'))
            skip++;
        if (skip == n)
            continue;
        if (n > ws->max_line)
            return tm_err_set(err, "watch stream: event of %zu bytes exceeds the limit of %zu", n,
                              ws->max_line);
        return parse_line(start + skip, n - skip, ev, err);
    }
}
