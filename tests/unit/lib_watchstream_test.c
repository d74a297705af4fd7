/* Unit tests for lib/watchstream.c: whole events, chunks split anywhere (inside a UTF-8
 * sequence, between \r and \n, one byte at a time), BOOKMARK and ERROR events, bad lines. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/jsonutil.h"
#include "lib/watchstream.h"

static const char *stream =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\xc3\xa9-1\","
    "\"resourceVersion\":\"10\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\xc3\xa9-1\","
    "\"resourceVersion\":\"11\"},\"note\":\"\xe2\x82\xac \xf0\x9f\x9a\x80\"}}\r\n"
    "\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":"
    "\"12\"}}}\n"
    "{\"type\":\"DELETED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\xc3\xa9-1\","
    "\"resourceVersion\":\"13\"}}}\n"
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":"
    "\"too old resource version: 5 (13)\",\"reason\":\"Expired\",\"code\":410}}\n";

/* Feeds `stream` in chunks of `chunk` bytes and checks the five events come out whole. */
static void check_split(size_t chunk) {
    tm_watchstream *ws = tm_watchstream_new(0);
    tm_err err = {0};
    size_t len = strlen(stream);
    tm_watch_event evs[8];
    int n = 0;
    for (size_t off = 0; off < len; off += chunk) {
        size_t c = len - off < chunk ? len - off : chunk;
        CHECK(tm_watchstream_feed(ws, stream + off, c, &err) == 0);
        int r;
        while (n < 8 && (r = tm_watchstream_next(ws, &evs[n], &err)) == 1)
            n++;
        CHECK(r == 0 || n == 8);
    }
    CHECKF(n == 5, "chunk %zu: %d events", chunk, n);
    if (n == 5) {
        CHECK_INT(evs[0].type, TM_WS_ADDED);
        CHECK_STR(tm_json_str(evs[0].object, "metadata.name", NULL), "p\xc3\xa9-1");
        CHECK_INT(evs[1].type, TM_WS_MODIFIED);
        CHECK_STR(tm_json_str(evs[1].object, "note", NULL), "\xe2\x82\xac \xf0\x9f\x9a\x80");
        CHECK_INT(evs[2].type, TM_WS_BOOKMARK);
        CHECK_STR(tm_json_str(evs[2].object, "metadata.resourceVersion", NULL), "12");
        CHECK_INT(evs[3].type, TM_WS_DELETED);
        CHECK_INT(evs[4].type, TM_WS_ERROR);
        CHECK_INT(evs[4].code, 410);
        CHECK_STR(tm_json_str(evs[4].object, "reason", NULL), "Expired");
        CHECK_INT(evs[0].code, 0);
    }
    for (int i = 0; i < n; i++)
        json_decref(evs[i].object);
    CHECK_INT(tm_watchstream_pending(ws), 0);
    tm_watchstream_free(ws);
}

static void test_whole_stream(void) {
    check_split(strlen(stream));
}

static void test_split_every_size(void) {
    /* 1 splits inside every UTF-8 sequence and between \r and \n; the rest hit other places. */
    for (size_t c = 1; c <= 97; c++)
        check_split(c);
}

static void test_partial_line_waits(void) {
    tm_watchstream *ws = tm_watchstream_new(0);
    tm_err err = {0};
    tm_watch_event ev;
    const char *a = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\"}}}";
    CHECK(tm_watchstream_feed(ws, a, strlen(a), &err) == 0);
    CHECK_INT(tm_watchstream_next(ws, &ev, &err), 0); /* no newline yet */
    CHECK_INT(tm_watchstream_pending(ws), strlen(a));
    CHECK(tm_watchstream_feed(ws, "\n", 1, &err) == 0);
    CHECK_INT(tm_watchstream_next(ws, &ev, &err), 1);
    json_decref(ev.object);
    tm_watchstream_free(ws);
}

static void test_bad_lines_are_reported_and_skipped(void) {
    tm_watchstream *ws = tm_watchstream_new(0);
    tm_err err = {0};
    tm_watch_event ev;
    const char *in = "not json\n"
                     "{\"type\":\"RENAMED\",\"object\":{}}\n"
                     "{\"type\":\"ADDED\"}\n"
                     "[1,2]\n"
                     "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"ok\"}}}\n";
    CHECK(tm_watchstream_feed(ws, in, strlen(in), &err) == 0);
    CHECK_INT(tm_watchstream_next(ws, &ev, &err), -1);
    CHECKF(strstr(err.msg, "invalid JSON") != NULL, "%s", err.msg);
    CHECK_INT(tm_watchstream_next(ws, &ev, &err), -1);
    CHECKF(strstr(err.msg, "'RENAMED'") != NULL, "%s", err.msg);
    CHECK_INT(tm_watchstream_next(ws, &ev, &err), -1);
    CHECKF(strstr(err.msg, "without an object") != NULL, "%s", err.msg);
    CHECK_INT(tm_watchstream_next(ws, &ev, &err), -1);
    CHECK_INT(tm_watchstream_next(ws, &ev, &err), 1);
    CHECK_STR(tm_json_str(ev.object, "metadata.name", NULL), "ok");
    json_decref(ev.object);
    CHECK_INT(tm_watchstream_next(ws, &ev, &err), 0);
    tm_watchstream_free(ws);
}

static void test_line_limit(void) {
    tm_watchstream *ws = tm_watchstream_new(16);
    tm_err err = {0};
    CHECK(tm_watchstream_feed(ws, "{\"type\":", 8, &err) == 0);
    CHECK(tm_watchstream_feed(ws, "\"ADDED\",\"object\":{}}", 20, &err) == -1);
    CHECKF(strstr(err.msg, "longer than 16 bytes") != NULL, "%s", err.msg);
    tm_watchstream_free(ws);
}

static void test_error_without_code(void) {
    tm_watchstream *ws = tm_watchstream_new(0);
    tm_err err = {0};
    tm_watch_event ev;
    const char *in = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"message\":\"boom\"}}\n";
    CHECK(tm_watchstream_feed(ws, in, strlen(in), &err) == 0);
    CHECK_INT(tm_watchstream_next(ws, &ev, &err), 1);
    CHECK_INT(ev.type, TM_WS_ERROR);
    CHECK_INT(ev.code, 0);
    CHECK_STR(tm_ws_type_name(ev.type), "ERROR");
    json_decref(ev.object);
    tm_watchstream_free(ws);
}

static void test_many_events_compact_buffer(void) {
    /* Thousands of small events fed and drained one by one keep the buffer small. */
    tm_watchstream *ws = tm_watchstream_new(0);
    tm_err err = {0};
    tm_watch_event ev;
    int got = 0;
    for (int i = 0; i < 5000; i++) {
        char line[128];
        int n = snprintf(line, sizeof line,
                         "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p%d\"}}}\n", i);
        CHECK(tm_watchstream_feed(ws, line, (size_t)n, &err) == 0);
        while (tm_watchstream_next(ws, &ev, &err) == 1) {
            got++;
            json_decref(ev.object);
        }
    }
    CHECK_INT(got, 5000);
    tm_watchstream_free(ws);
}

/* A large object (1 MiB here, etcd allows 1.5) fed in tiny chunks: each feed looks only at the
 * new bytes for the line limit, not at the whole buffered line again, so this takes linear
 * time (re-scanning made it 5e11 byte comparisons, minutes); the limit still holds after a
 * newline was seen, and the event after it is intact. */
static void test_long_line_in_tiny_chunks(void) {
    size_t body = (size_t)1 << 20;
    const char *head =
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"big\"},\"data\":\"";
    size_t hn = strlen(head);
    char *buf = malloc(hn + body + 8);
    memcpy(buf, head, hn);
    memset(buf + hn, 'x', body);
    memcpy(buf + hn + body, "\"}}\n", 5);
    size_t n = hn + body + 4;
    tm_watchstream *ws = tm_watchstream_new(2u << 20);
    tm_err err = {0};
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += tm_watchstream_feed(ws, buf + i, 1, &err) != 0;
    CHECK_INT(bad, 0);
    tm_watch_event ev;
    CHECK_INT(tm_watchstream_next(ws, &ev, &err), 1);
    CHECK_STR(tm_json_str(ev.object, "metadata.name", NULL), "big");
    CHECK_INT(strlen(tm_json_str(ev.object, "data", "")), body);
    json_decref(ev.object);
    /* After the newline, the limit counts from zero again: 2 MiB more without one is too long. */
    memset(buf, 'y', hn + body);
    CHECK(tm_watchstream_feed(ws, buf, hn + body, &err) == 0);
    CHECK(tm_watchstream_feed(ws, buf, hn + body, &err) == -1);
    CHECKF(strstr(err.msg, "without a newline") != NULL, "%s", err.msg);
    tm_watchstream_free(ws);
    free(buf);
}

int main(void) {
    RUN(test_whole_stream);
    RUN(test_long_line_in_tiny_chunks);
    RUN(test_split_every_size);
    RUN(test_partial_line_waits);
    RUN(test_bad_lines_are_reported_and_skipped);
    RUN(test_line_limit);
    RUN(test_error_without_code);
    RUN(test_many_events_compact_buffer);
    return TEST_SUMMARY();
}
