/* fio_parse.h: parser for `fio --output-format=json` reports (fio 2.x and 3.x).
 *
 * Pure function over the captured text. Warnings fio prints before the JSON document are
 * skipped; errors name fio and the line (and column) of the original text. A job without an
 * `iops` figure gets total_ios / runtime, as older fio versions leave it out of some
 * sections. */
#ifndef TAREMA_PROFILER_FIO_PARSE_H
#define TAREMA_PROFILER_FIO_PARSE_H

#include "lib/error.h"

#define PROF_FIO_MAX_JOBS 8
/* Physical bound: the fastest NVMe devices do some 10^7 IOPS; above 10^9 a report is broken or
 * forged, and refused with the job, direction and figure named. */
#define PROF_MAX_IOPS 1e9

typedef struct prof_fio_job {
    char name[64];
    double read_iops, write_iops;
} prof_fio_job;

typedef struct prof_fio_result {
    char version[32]; /* "fio-3.33", or "" when the report has none */
    prof_fio_job jobs[PROF_FIO_MAX_JOBS];
    int njobs;
} prof_fio_result;

/* Parses the report. A job whose "error" is non-zero is an error naming the job and errno. */
int prof_fio_parse(const char *text, prof_fio_result *res, tm_err *err);

/* The job called name, or NULL. */
const prof_fio_job *prof_fio_job_find(const prof_fio_result *res, const char *name);

#endif
