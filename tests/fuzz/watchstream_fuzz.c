/* watchstream_fuzz.c: fuzzes the watch-event stream decoder (lib/watchstream.h). The input is
 * a response body; it is decoded once fed whole and once fed in chunks split at places derived
 * from the input (inside UTF-8 sequences, between \r and \n, ...). Both must give the same
 * events and errors: the chunking of the network must never change what the informer sees. */
#include "fuzz/fuzz_util.h"
#include "lib/watchstream.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

/* Decodes data in chunks (chunks NULL: whole) and appends one line per outcome to *log.
 * Returns the log (caller frees) or NULL when feeding failed. */
static char *watchstream_decode(const uint8_t *data, size_t size, fz_rng *chunks) {
    tm_watchstream *ws = tm_watchstream_new(0);
    if (!ws)
        return NULL;
    char *log = NULL;
    size_t loglen = 0;
    FILE *out = open_memstream(&log, &loglen);
    size_t off = 0;
    tm_err err = {{0}, 0};
    while (off < size) {
        size_t n = size - off;
        if (chunks) {
            uint32_t r = fz_rng_next(chunks);
            n = (r & 7) == 0 ? (size_t)(r >> 3) % 64 : (size_t)(r >> 3) % 4; /* 0..3, some 0..63 */
            if (n > size - off)
                n = size - off;
        }
        if (tm_watchstream_feed(ws, (const char *)data + off, n, &err) != 0) {
            fprintf(out, "feed error: %s\n", err.msg);
            break;
        }
        off += n;
        for (;;) {
            tm_watch_event ev = {0};
            int rc = tm_watchstream_next(ws, &ev, &err);
            if (rc == 0)
                break;
            if (rc < 0) {
                fprintf(out, "error: %s\n", err.msg);
                continue;
            }
            FZ_CHECK(ev.object != NULL);
            char *obj = json_dumps(ev.object, JSON_SORT_KEYS | JSON_ENCODE_ANY);
            fprintf(out, "%s %d %s\n", tm_ws_type_name(ev.type), ev.code, obj ? obj : "?");
            free(obj);
            json_decref(ev.object);
        }
    }
    fprintf(out, "pending %zu\n", tm_watchstream_pending(ws));
    fclose(out);
    tm_watchstream_free(ws);
    return log;
}

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    fz_rng rng = fz_rng_from(data, size);
    char *whole = watchstream_decode(data, size, NULL);
    char *split = watchstream_decode(data, size, &rng);
    if (whole && split && strcmp(whole, split) != 0) {
        fprintf(stderr, "--- fed whole:\n%s--- fed in chunks:\n%s", whole, split);
        FZ_FAIL("chunked decoding differs from whole decoding");
    }
    free(whole);
    free(split);

    /* A small line limit: over-long lines must be refused, never overflow. */
    tm_watchstream *ws = tm_watchstream_new(64);
    if (ws) {
        tm_err err = {{0}, 0};
        size_t off = 0;
        while (off < size) {
            size_t n = 1 + fz_rng_next(&rng) % 16;
            if (n > size - off)
                n = size - off;
            if (tm_watchstream_feed(ws, (const char *)data + off, n, &err) != 0)
                break;
            off += n;
            tm_watch_event ev;
            int rc;
            while ((rc = tm_watchstream_next(ws, &ev, &err)) != 0)
                if (rc > 0)
                    json_decref(ev.object);
            FZ_CHECK(tm_watchstream_pending(ws) <= 64 + 16);
        }
        tm_watchstream_free(ws);
    }
    return 0;
}
