/* watchstream.h: decoder for a Kubernetes watch response body.
 *
 * The API server sends one JSON object per line: {"type":"ADDED|MODIFIED|DELETED|BOOKMARK|
 * ERROR","object":{...}}. Bytes arrive in arbitrary chunks (split anywhere, even inside a
 * UTF-8 sequence or between \r and \n); feed them as they come and pull whole events out.
 * Splitting on '\n' is safe for UTF-8 because 0x0A never occurs inside a multi-byte sequence.
 * ERROR events carry a Status object; tm_watch_event.code holds its HTTP code (410 = the
 * resourceVersion is too old: re-list). */
#ifndef TAREMA_WATCHSTREAM_H
#define TAREMA_WATCHSTREAM_H

#include <jansson.h>
#include <stddef.h>

#include "error.h"

typedef enum {
    TM_WS_ADDED,
    TM_WS_MODIFIED,
    TM_WS_DELETED,
    TM_WS_BOOKMARK,
    TM_WS_ERROR,
} tm_ws_type;

typedef struct tm_watch_event {
    tm_ws_type type;
    json_t *object; /* new reference the caller decrefs (the Status for ERROR) */
    int code;       /* ERROR: the Status code (0 if absent); else 0 */
} tm_watch_event;

typedef struct tm_watchstream tm_watchstream;

/* max_line: the longest event accepted (0 = 64 MiB); a longer line is an error. Caller frees
 * with tm_watchstream_free. NULL only when out of memory. */
tm_watchstream *tm_watchstream_new(size_t max_line);
void tm_watchstream_free(tm_watchstream *ws);

/* Appends bytes. Returns -1 with err when buffered data exceeds max_line without a newline. */
int tm_watchstream_feed(tm_watchstream *ws, const char *data, size_t len, tm_err *err);

/* Takes the next complete event: 1 and *ev filled, 0 when no whole line is buffered, -1 with
 * err (naming what was wrong) for a line that is not a valid watch event; that line is
 * consumed, so the caller may go on. Blank lines are skipped. */
int tm_watchstream_next(tm_watchstream *ws, tm_watch_event *ev, tm_err *err);

/* Bytes buffered that do not yet form a whole line. */
size_t tm_watchstream_pending(const tm_watchstream *ws);

const char *tm_ws_type_name(tm_ws_type t);

#endif
