/* trace_parse.c: see trace_parse.h. */
#include "labeler/trace_parse.h"

#include <stdlib.h>
#include <string.h>

#include "labeler/units.h"

typedef enum {
    COL_IGNORED = 0,
    COL_TASK_ID,
    COL_HASH,
    COL_PROCESS,
    COL_NAME,
    COL_STATUS,
    COL_EXIT,
    COL_CPUS,
    COL_MEMORY,
    COL_ATTEMPT,
    COL_SUBMIT,
    COL_START,
    COL_COMPLETE,
    COL_REALTIME,
    COL_CPU_PCT,
    COL_PEAK_RSS,
    COL_RCHAR,
    COL_WCHAR,
    COL_READ_BYTES,
    COL_WRITE_BYTES,
    COL_HOSTNAME,
} col_kind;

/* Trace field names as Nextflow documents them (docs: config scope `trace`, `trace.fields`). */
static const struct {
    const char *name;
    col_kind kind;
} known_cols[] = {
    {"task_id", COL_TASK_ID},
    {"hash", COL_HASH},
    {"process", COL_PROCESS},
    {"name", COL_NAME},
    {"status", COL_STATUS},
    {"exit", COL_EXIT},
    {"cpus", COL_CPUS},
    {"memory", COL_MEMORY},
    {"attempt", COL_ATTEMPT},
    {"submit", COL_SUBMIT},
    {"start", COL_START},
    {"complete", COL_COMPLETE},
    {"realtime", COL_REALTIME},
    {"%cpu", COL_CPU_PCT},
    {"peak_rss", COL_PEAK_RSS},
    {"rchar", COL_RCHAR},
    {"wchar", COL_WCHAR},
    {"read_bytes", COL_READ_BYTES},
    {"write_bytes", COL_WRITE_BYTES},
    {"hostname", COL_HOSTNAME},
};

#define MAX_COLS 128

struct lab_trace_reader {
    FILE *f;
    char source[256];
    char sep;
    int ncols;
    col_kind cols[MAX_COLS];
    long line;
    lab_ts_cache ts_cache;
    char *buf;
    size_t cap;
};

static void chomp(char *s) {
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
}

/* Splits s in place at sep; returns the number of fields (at most max). */
static int split(char *s, char sep, char **fields, int max) {
    int n = 0;
    char *p = s;
    for (;;) {
        if (n == max)
            return max + 1; /* too many: the caller reports it */
        fields[n++] = p;
        char *q = strchr(p, sep);
        if (!q)
            return n;
        *q = '\0';
        p = q + 1;
    }
}

static col_kind lookup_col(const char *name) {
    for (size_t i = 0; i < sizeof known_cols / sizeof known_cols[0]; i++)
        if (strcmp(known_cols[i].name, name) == 0)
            return known_cols[i].kind;
    return COL_IGNORED;
}

lab_trace_reader *lab_trace_open(FILE *f, const char *source, tm_err *err) {
    lab_trace_reader *r = calloc(1, sizeof *r);
    if (!r) {
        tm_err_set(err, "%s: out of memory", source);
        return NULL;
    }
    r->f = f;
    snprintf(r->source, sizeof r->source, "%s", source);
    ssize_t len;
    /* The header is the first non-empty line. */
    do {
        len = getline(&r->buf, &r->cap, f);
        r->line++;
    } while (len > 0 && strspn(r->buf, " \t\r\n") == (size_t)len);
    if (len <= 0) {
        tm_err_set(err, "%s: empty file, expected a Nextflow trace header line", source);
        goto fail;
    }
    chomp(r->buf);
    r->sep = strchr(r->buf, '\t') || !strchr(r->buf, ',') ? '\t' : ',';
    char *fields[MAX_COLS + 1];
    int n = split(r->buf, r->sep, fields, MAX_COLS);
    if (n > MAX_COLS) {
        tm_err_set(err, "%s: header has more than %d columns", source, MAX_COLS);
        goto fail;
    }
    bool have_name = false, have_key = false;
    for (int i = 0; i < n; i++) {
        r->cols[i] = lookup_col(fields[i]);
        for (int j = 0; j < i && r->cols[i] != COL_IGNORED; j++) {
            if (r->cols[j] == r->cols[i]) {
                /* Which copy holds the real value is unknowable: refuse rather than guess. */
                tm_err_set(err, "%s:%ld: header has column '%s' twice (columns %d and %d)", source,
                           r->line, fields[i], j + 1, i + 1);
                goto fail;
            }
        }
        have_name |= r->cols[i] == COL_NAME || r->cols[i] == COL_PROCESS;
        have_key |= r->cols[i] == COL_HASH || r->cols[i] == COL_TASK_ID;
    }
    r->ncols = n;
    if (!have_name || !have_key) {
        tm_err_set(err,
                   "%s:%ld: header lacks a '%s' column; is this a Nextflow trace file? "
                   "(header needs 'name' or 'process', and 'hash' or 'task_id')",
                   source, r->line, have_name ? "hash" : "name");
        goto fail;
    }
    return r;
fail:
    lab_trace_close(r);
    return NULL;
}

/* Stores one field; returns -1 with err (without location) on a bad value. */
static int set_field(lab_task_run *out, col_kind kind, const char *v, lab_ts_cache *tc,
                     tm_err *err) {
    switch (kind) {
    case COL_IGNORED:
        return 0;
    case COL_TASK_ID:
        return lab_parse_int(v, &out->task_id, err);
    case COL_HASH:
        return lab_set_text(out->hash, sizeof out->hash, v, err);
    case COL_PROCESS:
        return lab_set_text(out->process, sizeof out->process, v, err);
    case COL_NAME:
        return lab_set_text(out->name, sizeof out->name, v, err);
    case COL_STATUS:
        return lab_set_text(out->status, sizeof out->status, v, err);
    case COL_HOSTNAME:
        return lab_set_text(out->node, sizeof out->node, v, err);
    case COL_EXIT:
        return lab_parse_int(v, &out->exit_code, err);
    case COL_CPUS:
        return lab_parse_int(v, &out->cpus, err);
    case COL_ATTEMPT: {
        int rc = lab_parse_int(v, &out->attempt, err);
        if (rc == 0 && out->attempt == LAB_NONE)
            out->attempt = 1;
        return rc;
    }
    case COL_MEMORY:
        return lab_parse_bytes(v, &out->memory, err);
    case COL_PEAK_RSS:
        return lab_parse_bytes(v, &out->peak_rss, err);
    case COL_RCHAR:
        return lab_parse_bytes(v, &out->rchar, err);
    case COL_WCHAR:
        return lab_parse_bytes(v, &out->wchar, err);
    case COL_READ_BYTES:
        return lab_parse_bytes(v, &out->read_bytes, err);
    case COL_WRITE_BYTES:
        return lab_parse_bytes(v, &out->write_bytes, err);
    case COL_SUBMIT:
        return lab_parse_timestamp_ms_cached(v, &out->submit_ms, tc, err);
    case COL_START:
        return lab_parse_timestamp_ms_cached(v, &out->start_ms, tc, err);
    case COL_COMPLETE:
        return lab_parse_timestamp_ms_cached(v, &out->complete_ms, tc, err);
    case COL_REALTIME:
        return lab_parse_duration_ms(v, &out->realtime_ms, err);
    case COL_CPU_PCT:
        return lab_parse_percent(v, &out->cpu_pct, err);
    }
    return 0;
}

static const char *col_name(col_kind kind) {
    for (size_t i = 0; i < sizeof known_cols / sizeof known_cols[0]; i++)
        if (known_cols[i].kind == kind)
            return known_cols[i].name;
    return "?";
}

int lab_trace_next(lab_trace_reader *r, lab_task_run *out, tm_err *err) {
    ssize_t len;
    for (;;) {
        len = getline(&r->buf, &r->cap, r->f);
        if (len < 0)
            return 0;
        r->line++;
        chomp(r->buf);
        if (r->buf[strspn(r->buf, " \t")] != '\0')
            break; /* blank lines (e.g. a trailing one) are not rows */
    }
    lab_task_run_init(out);
    char *fields[MAX_COLS + 1];
    int n = split(r->buf, r->sep, fields, MAX_COLS);
    if (n != r->ncols)
        return tm_err_set(err, "%s:%ld: %d fields, the header has %d", r->source, r->line, n,
                          r->ncols);
    for (int i = 0; i < n; i++) {
        if (set_field(out, r->cols[i], fields[i], &r->ts_cache, err) < 0)
            return tm_err_wrap(err, "%s:%ld: column '%s'", r->source, r->line,
                               col_name(r->cols[i]));
    }
    if (!out->process[0] && !lab_process_from_name(out->name, out->process, sizeof out->process))
        return tm_err_set(err, "%s:%ld: column 'name': the process name is longer than %zu bytes",
                          r->source, r->line, sizeof out->process - 1);
    if (!out->process[0])
        return tm_err_set(err, "%s:%ld: no process or task name", r->source, r->line);
    char key[80];
    if (!lab_task_run_key(out, key, sizeof key))
        return tm_err_set(err, "%s:%ld: neither hash nor task_id, the task cannot be identified",
                          r->source, r->line);
    return 1;
}

long lab_trace_line(const lab_trace_reader *r) {
    return r->line;
}

void lab_trace_close(lab_trace_reader *r) {
    if (!r)
        return;
    free(r->buf);
    free(r);
}
