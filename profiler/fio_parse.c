/* fio_parse.c: see fio_parse.h. */
#include "profiler/fio_parse.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* IOPS of one direction ("read" or "write") of a job. */
static int direction_iops(const json_t *job, const char *jobname, const char *dir, double *out,
                          tm_err *err) {
    json_t *d = json_object_get(job, dir);
    if (!json_is_object(d))
        return tm_err_set(err, "fio: job '%s' has no '%s' section", jobname, dir);
    json_t *iops = json_object_get(d, "iops");
    if (json_is_number(iops)) {
        *out = json_number_value(iops);
    } else {
        json_t *ios = json_object_get(d, "total_ios");
        json_t *rt = json_object_get(d, "runtime"); /* milliseconds */
        if (!json_is_number(ios) || !json_is_number(rt))
            return tm_err_set(err,
                              "fio: job '%s' section '%s' has neither 'iops' nor 'total_ios' "
                              "and 'runtime'",
                              jobname, dir);
        double ms = json_number_value(rt);
        *out = ms > 0 ? json_number_value(ios) * 1000.0 / ms : 0;
    }
    if (!isfinite(*out) || *out < 0)
        return tm_err_set(err, "fio: job '%s' section '%s' has an invalid iops figure", jobname,
                          dir);
    if (*out > PROF_MAX_IOPS)
        return tm_err_set(err, "fio: job '%s' section '%s': %g IOPS is above the plausible %g",
                          jobname, dir, *out, PROF_MAX_IOPS);
    return 0;
}

int prof_fio_parse(const char *text, prof_fio_result *res, tm_err *err) {
    memset(res, 0, sizeof *res);
    /* fio may print warnings ("fio: ...") before the document: start at the first line that
     * begins with '{', and count the skipped lines so error positions match the output. */
    const char *start = text;
    int skipped = 0;
    while (*start && *start != '{') {
        const char *nl = strchr(start, '\n');
        if (!nl) {
            start += strlen(start);
            break;
        }
        start = nl + 1;
        skipped++;
    }
    if (!*start)
        return tm_err_set(err,
                          "fio: no JSON document in the output (%d lines; was "
                          "--output-format=json given?)",
                          skipped);
    json_error_t je;
    json_t *doc = json_loads(start, JSON_DISABLE_EOF_CHECK, &je);
    if (!doc)
        return tm_err_set(err, "fio: line %d column %d: invalid JSON: %s", je.line + skipped,
                          je.column, je.text);
    int rc = 0;
    snprintf(res->version, sizeof res->version, "%s",
             json_is_string(json_object_get(doc, "fio version"))
                 ? json_string_value(json_object_get(doc, "fio version"))
                 : "");
    json_t *jobs = json_object_get(doc, "jobs");
    if (!json_is_array(jobs) || json_array_size(jobs) == 0) {
        rc = tm_err_set(err, "fio: the report has no 'jobs' array (or it is empty)");
        goto out;
    }
    size_t i;
    json_t *job;
    json_array_foreach(jobs, i, job) {
        if (res->njobs == PROF_FIO_MAX_JOBS) {
            rc = tm_err_set(err, "fio: more than %d jobs in the report", PROF_FIO_MAX_JOBS);
            goto out;
        }
        prof_fio_job *j = &res->jobs[res->njobs];
        json_t *name = json_object_get(job, "jobname");
        if (!json_is_string(name)) {
            rc = tm_err_set(err, "fio: jobs[%zu] has no 'jobname'", i);
            goto out;
        }
        snprintf(j->name, sizeof j->name, "%s", json_string_value(name));
        json_t *e = json_object_get(job, "error");
        if (json_is_integer(e) && json_integer_value(e) != 0) {
            rc = tm_err_set(err, "fio: job '%s' failed with error %lld (%s)", j->name,
                            (long long)json_integer_value(e), strerror((int)json_integer_value(e)));
            goto out;
        }
        if (direction_iops(job, j->name, "read", &j->read_iops, err) != 0 ||
            direction_iops(job, j->name, "write", &j->write_iops, err) != 0) {
            rc = -1;
            goto out;
        }
        res->njobs++;
    }
out:
    json_decref(doc);
    return rc;
}

const prof_fio_job *prof_fio_job_find(const prof_fio_result *res, const char *name) {
    for (int i = 0; i < res->njobs; i++)
        if (strcmp(res->jobs[i].name, name) == 0)
            return &res->jobs[i];
    return NULL;
}
