/* measure.c: the simulator's measurements: rows of lotaru CSV files and Nextflow traces read
 * into a table (sim_meas_read), before the workload matches them to its processes, and the rows
 * one machine's file copies from another's (see model.h). */
#include "sim/model.h"
#include "sim/model_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "labeler/trace_parse.h"

int sim_meas_table_push(sim_meas_table *t, const sim_meas_row *r) {
    if (sim_grow(&t->rows, t->n, &t->cap, sizeof *t->rows, 256) < 0)
        return -1;
    t->rows[t->n++] = *r;
    return 0;
}

void sim_meas_table_free(sim_meas_table *t) {
    if (!t)
        return;
    free(t->rows);
    t->rows = NULL;
    t->n = t->cap = 0;
}

/* Splits a CSV line in place at commas (lotaru has no quoted fields). */
static int split_csv(char *s, char **f, int max) {
    int n = 0;
    for (char *p = s;;) {
        if (n == max)
            return n + 1;
        f[n++] = p;
        char *q = strchr(p, ',');
        if (!q)
            break;
        *q = '\0';
        p = q + 1;
    }
    char *last = f[n - 1];
    last[strcspn(last, "\r\n")] = '\0';
    return n;
}

static int parse_num(const char *s, double *out) {
    char *end;
    if (!*s)
        return -1;
    *out = strtod(s, &end);
    return *end == '\0' && isfinite(*out) ? 0 : -1;
}

static long read_lotaru(sim_meas_table *t, FILE *f, const char *path, const char *machine,
                        const char *label, tm_err *err) {
    enum {
        C_LABEL,
        C_MACHINE,
        C_TASK,
        C_RT,
        C_CPU,
        C_PEAK,
        C_RCHAR,
        C_WCHAR,
        C_INSIZE,
        C_SEQ,
        C_N
    };
    static const char *const want[C_N] = {"Label",         "Machine",        "Task",  "Realtime",
                                          "%cpu",          "peak_rss",       "rchar", "wchar",
                                          "TaskInputSize", "NumberSequences"};
    int col[C_N];
    char line[8192];
    char *fld[128];
    if (!fgets(line, sizeof line, f))
        return tm_err_set(err, "%s: empty file, expected a lotaru CSV header", path);
    if (!strchr(line, '\n') && !feof(f))
        return tm_err_set(err, "%s:1: header longer than %zu bytes", path, sizeof line - 2);
    int nf = split_csv(line, fld, 128);
    for (int k = 0; k < C_N; k++) {
        col[k] = -1;
        for (int i = 0; i < nf && i < 128; i++)
            if (strcmp(fld[i], want[k]) == 0)
                col[k] = i;
        if (col[k] < 0 && k != C_SEQ && k != C_LABEL && !(k == C_MACHINE && machine))
            return tm_err_set(err, "%s:1: lotaru CSV header lacks the column '%s'", path, want[k]);
    }
    long added = 0, lineno = 1;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f))
            return tm_err_set(err, "%s:%ld: line longer than %zu bytes", path, lineno,
                              sizeof line - 2);
        if (line[0] == '\n' || line[0] == '\r' || line[0] == '\0')
            continue;
        nf = split_csv(line, fld, 128);
        sim_meas_row r = {0};
        for (int k = 0; k < C_N; k++)
            if (col[k] >= nf)
                return tm_err_set(err, "%s:%ld: %d fields, the header has more", path, lineno, nf);
        if (label && col[C_LABEL] >= 0 && strcmp(fld[col[C_LABEL]], label) != 0)
            continue;
        snprintf(r.process, sizeof r.process, "%s", fld[col[C_TASK]]);
        snprintf(r.machine, sizeof r.machine, "%s", machine ? machine : fld[col[C_MACHINE]]);
        if (col[C_LABEL] >= 0)
            snprintf(r.label, sizeof r.label, "%s", fld[col[C_LABEL]]);
        double rt, cpu, peak, rc, wc, insz, seq = 0;
        if (!r.process[0] || !r.machine[0] || parse_num(fld[col[C_RT]], &rt) < 0 ||
            parse_num(fld[col[C_CPU]], &cpu) < 0 || parse_num(fld[col[C_PEAK]], &peak) < 0 ||
            parse_num(fld[col[C_RCHAR]], &rc) < 0 || parse_num(fld[col[C_WCHAR]], &wc) < 0 ||
            parse_num(fld[col[C_INSIZE]], &insz) < 0 ||
            (col[C_SEQ] >= 0 && parse_num(fld[col[C_SEQ]], &seq) < 0))
            return tm_err_set(err,
                              "%s:%ld: expected numbers in Realtime, %%cpu, peak_rss, rchar, "
                              "wchar, TaskInputSize and a Task and Machine name",
                              path, lineno);
        if (rt < 0 || cpu < 0 || peak < 0 || rc < 0 || wc < 0)
            return tm_err_set(err,
                              "%s:%ld: negative Realtime, %%cpu, peak_rss, rchar or wchar: "
                              "the measurement is corrupt",
                              path, lineno);
        if (rt == 0)
            continue; /* a zero runtime says nothing about speed */
        r.order = insz + seq * 1e-12;
        r.m = (sim_meas){rt / 1000.0, cpu, peak, rc + wc};
        if (sim_meas_table_push(t, &r) < 0)
            return tm_err_set(err, "%s: out of memory", path);
        added++;
    }
    return added;
}

static long read_trace(sim_meas_table *t, FILE *f, const char *path, const char *machine,
                       tm_err *err) {
    lab_trace_reader *tr = lab_trace_open(f, path, err);
    if (!tr)
        return -1;
    long added = 0;
    lab_task_run run;
    for (;;) {
        int rc = lab_trace_next(tr, &run, err);
        if (rc == 0)
            break;
        if (rc < 0) {
            lab_trace_close(tr);
            return -1; /* a bad row in a measurement file would skew every result */
        }
        if (run.status[0] && strcmp(run.status, "COMPLETED") != 0)
            continue;
        if (run.realtime_ms == LAB_NONE || run.realtime_ms <= 0)
            continue;
        sim_meas_row r = {0};
        if (run.process[0])
            snprintf(r.process, sizeof r.process, "%.127s", run.process);
        else
            lab_process_from_name(run.name, r.process, sizeof r.process);
        snprintf(r.machine, sizeof r.machine, "%s", machine);
        r.order = (double)added;
        double io = 0;
        if (run.rchar != LAB_NONE)
            io += (double)run.rchar;
        if (run.wchar != LAB_NONE)
            io += (double)run.wchar;
        r.m = (sim_meas){(double)run.realtime_ms / 1000.0, run.cpu_pct,
                         run.peak_rss == LAB_NONE ? NAN : (double)run.peak_rss,
                         (run.rchar == LAB_NONE && run.wchar == LAB_NONE) ? NAN : io};
        if (sim_meas_table_push(t, &r) < 0) {
            lab_trace_close(tr);
            return tm_err_set(err, "%s: out of memory", path);
        }
        added++;
    }
    lab_trace_close(tr);
    return added;
}

long sim_meas_read(sim_meas_table *t, const char *path, const char *format, const char *machine,
                   const char *label, tm_err *err) {
    if (!format) {
        size_t n = strlen(path);
        format = (n > 4 && strcmp(path + n - 4, ".csv") == 0) ? "lotaru" : "trace";
    }
    int lotaru = strcmp(format, "lotaru") == 0;
    if (!lotaru && strcmp(format, "trace") != 0)
        return tm_err_set(err, "%s: unknown measurement format '%s' (lotaru or trace)", path,
                          format);
    if (!lotaru && !machine)
        return tm_err_set(err, "%s: a Nextflow trace needs `machine:` (the node type it ran on)",
                          path);
    FILE *f = fopen(path, "r");
    if (!f)
        return tm_err_set(err, "%s: cannot open measurement file: %s", path, strerror(errno));
    long n = lotaru ? read_lotaru(t, f, path, machine, label, err)
                    : read_trace(t, f, path, machine, err);
    fclose(f);
    return n;
}

static int same_but_machine(const sim_meas_row *a, const sim_meas_row *b) {
    if (strcmp(a->process, b->process) != 0 || strcmp(a->label, b->label) != 0 ||
        a->order != b->order)
        return 0;
    const double x[4] = {a->m.runtime_s, a->m.cpu_pct, a->m.peak_rss, a->m.io_bytes};
    const double y[4] = {b->m.runtime_s, b->m.cpu_pct, b->m.peak_rss, b->m.io_bytes};
    for (int k = 0; k < 4; k++)
        if (!(x[k] == y[k] || (isnan(x[k]) && isnan(y[k]))))
            return 0;
    return 1;
}

size_t sim_meas_duplicates(const sim_meas_row *a, size_t na, const sim_meas_row *b, size_t nb) {
    size_t n = 0;
    for (size_t j = 0; j < nb; j++)
        for (size_t i = 0; i < na; i++)
            if (same_but_machine(&a[i], &b[j])) {
                n++;
                break;
            }
    return n;
}
