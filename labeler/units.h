/* units.h: the value formats of Nextflow trace records, raw and human-readable.
 *
 * With `trace.raw = true` Nextflow writes plain numbers (milliseconds, bytes, epoch
 * milliseconds); by default it writes "3m 4s", "1.2 GB", "97.5%" and "2023-05-01 12:34:56.789".
 * Each parser accepts both, so one file may even mix them. "-" and "" mean "not reported" and
 * give LAB_NONE (NAN for percentages) with status 0. Errors quote the offending text. Pure. */
#ifndef TAREMA_LABELER_UNITS_H
#define TAREMA_LABELER_UNITS_H

#include <stdint.h>

#include "lib/error.h"

/* "1d 2h 3m 4s", "3m 4s", "4.5s", "500ms", or plain milliseconds "184000". */
int lab_parse_duration_ms(const char *s, int64_t *out, tm_err *err);
/* "1.2 GB", "512 MB", "10 KB", "7 B" (1024-based, like Nextflow's MemoryUnit) or plain bytes. */
int lab_parse_bytes(const char *s, int64_t *out, tm_err *err);
/* "97.5%" or "97.5". */
int lab_parse_percent(const char *s, double *out, tm_err *err);
/* "2023-05-01 12:34:56.789" (local time, as Nextflow writes it) or epoch milliseconds. */
int lab_parse_timestamp_ms(const char *s, int64_t *out, tm_err *err);
/* mktime() is slow (it re-reads the zone on every call) and a trace has 100,000s of
 * timestamps from a handful of hours: a reader keeps the last hour it converted. Zero it
 * before first use. */
typedef struct lab_ts_cache {
    int valid;                 /* 0 until the first conversion */
    int year, mon, mday, hour; /* the hour converted last, as parsed (not as written:
                                  "2023-5-1 7" and "2023-05-01 07" are one hour) */
    long long base;            /* epoch seconds of hour:00:00 local time */
} lab_ts_cache;
/* lab_parse_timestamp_ms with the cache (NULL = no cache). */
int lab_parse_timestamp_ms_cached(const char *s, int64_t *out, lab_ts_cache *cache, tm_err *err);
/* A plain integer ("0", "-1", "137"). */
int lab_parse_int(const char *s, int64_t *out, tm_err *err);

#endif
