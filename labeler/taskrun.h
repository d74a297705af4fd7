/* taskrun.h: one Nextflow task execution as the labeler stores it.
 *
 * Both ingest paths (trace files and weblog events) fill this struct and the store writes it.
 * Strings live in fixed buffers so a batch of runs is one flat array with nothing to free;
 * values a source did not report are LAB_NONE (integers) or NAN (cpu_pct) and become SQL NULL. */
#ifndef TAREMA_LABELER_TASKRUN_H
#define TAREMA_LABELER_TASKRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

#define LAB_NONE INT64_MIN

typedef struct lab_task_run {
    char workflow[128]; /* the configurable workflow key (Nextflow project/pipeline name) */
    char run_name[128]; /* Nextflow run name, e.g. "goofy_kilby" */
    char process[256];  /* fully qualified process name, as in the pod label nextflow.io/processName
                         */
    char name[512];     /* task name, "PROCESS (tag)" */
    char hash[64];      /* work directory hash, "0b/be0d1c"; "" when unknown */
    char status[24];    /* COMPLETED, FAILED, ABORTED, CACHED, ... */
    char node[256];     /* hostname the task ran on; "" when unknown */
    char node_group[64]; /* node group of that node when stored (node_group.h); "" unknown */
    int64_t task_id;
    int64_t attempt;
    int64_t exit_code;
    int64_t cpus;                                  /* cpus requested */
    int64_t memory;                                /* memory requested, bytes */
    double cpu_pct;                                /* %cpu, 100 = one full core; NAN when unknown */
    int64_t peak_rss;                              /* bytes */
    int64_t rchar, wchar, read_bytes, write_bytes; /* bytes */
    int64_t realtime_ms;
    int64_t submit_ms, start_ms, complete_ms; /* Unix epoch milliseconds */
} lab_task_run;

/* Clears every field to "unknown" (empty strings, LAB_NONE, NAN; attempt 1). */
void lab_task_run_init(lab_task_run *r);

/* The identity key of a run within (workflow, run_name): the hash when known, else
 * "id:<task_id>". Returns false when the run has neither, which makes it unstorable. */
bool lab_task_run_key(const lab_task_run *r, char *buf, int size);

/* Copies a text value of a task run into dst (size bytes). "-" (Nextflow's "not reported")
 * becomes "". Returns -1 with err when src is not valid UTF-8 (PostgreSQL would refuse the
 * whole batch it is in) or does not fit: a cut hash or process name would silently merge
 * different tasks. */
int lab_set_text(char *dst, size_t size, const char *src, tm_err *err);

/* Derives the process name from a task name: "NFCORE:FASTQC (s1)" -> "NFCORE:FASTQC". Returns
 * false (out "") when it does not fit in size bytes. */
bool lab_process_from_name(const char *name, char *out, int size);

#endif
