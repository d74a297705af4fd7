/* sysbench_parse.c: see sysbench_parse.h. */
#include "profiler/sysbench_parse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Walks text line by line: *line gets a NUL-terminated copy (at most cap-1 bytes), returns
 * the position after the line or NULL at the end. */
static const char *next_line(const char *p, char *line, size_t cap) {
    if (!p || !*p)
        return NULL;
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    size_t c = len < cap - 1 ? len : cap - 1;
    memcpy(line, p, c);
    line[c] = '\0';
    if (c && line[c - 1] == '\r')
        line[c - 1] = '\0';
    return nl ? nl + 1 : p + len;
}

/* Parses the number after `key` in line, which must be in 0..max; 0 if found and valid, -1
 * with err otherwise. */
static int number_after(const char *line, const char *key, double max, const char *tool, int lineno,
                        double *out, tm_err *err) {
    const char *p = strstr(line, key) + strlen(key);
    char *end;
    double v = strtod(p, &end);
    if (end == p || !isfinite(v) || v < 0)
        return tm_err_set(err, "%s: line %d: '%s' has no valid number: '%.200s'", tool, lineno, key,
                          line);
    if (v > max)
        return tm_err_set(err, "%s: line %d: '%s' is %g, above the plausible %g", tool, lineno, key,
                          v, max);
    *out = v;
    return 0;
}

/* A "FATAL:" line means sysbench itself reported failure; its message is the best error. */
static int check_fatal(const char *line, const char *tool, int lineno, tm_err *err) {
    if (strstr(line, "FATAL:"))
        return tm_err_set(err, "%s: line %d: sysbench failed: %.300s", tool, lineno, line);
    return 0;
}

int prof_sysbench_parse_cpu(const char *text, double *eps, tm_err *err) {
    const char *tool = "sysbench cpu";
    char line[512];
    int lineno = 0, eps_found = 0;
    double total_time = -1, events = -1;
    const char *p = text;
    while ((p = next_line(p, line, sizeof line))) {
        lineno++;
        if (check_fatal(line, tool, lineno, err) != 0)
            return -1;
        if (strstr(line, "events per second:")) {
            if (number_after(line, "events per second:", PROF_MAX_CPU_EPS, tool, lineno, eps,
                             err) != 0)
                return -1;
            eps_found = 1;
        } else if (strstr(line, "events/s (eps):")) { /* 1.1's "Throughput:" section */
            if (number_after(line, "events/s (eps):", PROF_MAX_CPU_EPS, tool, lineno, eps, err) !=
                0)
                return -1;
            eps_found = 1;
        } else if (strstr(line, "time elapsed:")) {
            if (number_after(line, "time elapsed:", HUGE_VAL, tool, lineno, &total_time, err) != 0)
                return -1;
        } else if (strstr(line, "total time:")) {
            if (number_after(line, "total time:", HUGE_VAL, tool, lineno, &total_time, err) != 0)
                return -1;
        } else if (strstr(line, "total number of events:")) {
            if (number_after(line, "total number of events:", HUGE_VAL, tool, lineno, &events,
                             err) != 0)
                return -1;
        }
    }
    if (eps_found) {
        if (*eps <= 0)
            return tm_err_set(err, "%s: 'events per second' is 0: the benchmark did no work", tool);
        return 0;
    }
    if (total_time > 0 && events > 0) {
        double rate = events / total_time;
        if (rate > PROF_MAX_CPU_EPS)
            return tm_err_set(err,
                              "%s: %g events in %g s is %g events per second, above the "
                              "plausible %g",
                              tool, events, total_time, rate, PROF_MAX_CPU_EPS);
        *eps = rate;
        return 0;
    }
    return tm_err_set(err,
                      "%s: no 'events per second:' line, nor 'total time:' and 'total number of "
                      "events:' to compute it from, in %d lines of output (truncated, or not a "
                      "cpu run?)",
                      tool, lineno);
}

int prof_sysbench_parse_mem(const char *text, double *mibps, tm_err *err) {
    const char *tool = "sysbench memory";
    char line[512];
    int lineno = 0;
    const char *p = text;
    while ((p = next_line(p, line, sizeof line))) {
        lineno++;
        if (check_fatal(line, tool, lineno, err) != 0)
            return -1;
        const char *t = strstr(line, "transferred (");
        if (!t)
            continue;
        char *end;
        double v = strtod(t + strlen("transferred ("), &end);
        while (*end == ' ')
            end++;
        if (end == t + strlen("transferred (") || !isfinite(v) ||
            (strncmp(end, "MiB/sec", 7) != 0 && strncmp(end, "MB/sec", 6) != 0))
            return tm_err_set(err,
                              "%s: line %d: expected 'transferred (<number> MiB/sec)': '%.200s'",
                              tool, lineno, line);
        if (v <= 0)
            return tm_err_set(err, "%s: line %d: transfer rate is 0: the benchmark did no work",
                              tool, lineno);
        if (v > PROF_MAX_MEM_MIBPS)
            return tm_err_set(err,
                              "%s: line %d: transfer rate %g MiB/sec is above the plausible %g",
                              tool, lineno, v, PROF_MAX_MEM_MIBPS);
        *mibps = v;
        return 0;
    }
    return tm_err_set(err,
                      "%s: no 'MiB transferred (... MiB/sec)' line in %d lines of output "
                      "(truncated, or not a memory run?)",
                      tool, lineno);
}
