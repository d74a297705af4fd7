/* ingest.h: loads a Nextflow trace file into the store, in batches of one transaction each. */
#ifndef TAREMA_LABELER_INGEST_H
#define TAREMA_LABELER_INGEST_H

#include <jansson.h>
#include <stdio.h>

#include "labeler/store.h"
#include "lib/error.h"

typedef struct lab_ingest_stats {
    long stored;   /* rows written (new + updated) */
    long inserted; /* rows that were not stored before */
    long updated;  /* rows that replaced a stored run (re-ingest) */
    long skipped;  /* bad rows, each reported with its line number */
} lab_ingest_stats;

/* Reads the trace from f (source names it in messages), stamps each row with workflow and
 * run_name, and stores it. Bad rows are logged at warn level and counted. Returns 0, or -1
 * with err when the file has no usable header or the database fails (batches already
 * committed stay stored; ingesting again is safe). */
int lab_ingest_trace(lab_store *s, FILE *f, const char *source, const char *workflow,
                     const char *run_name, lab_ingest_stats *stats, tm_err *err);

/* The same, and each row whose hostname is in node_groups (node name -> group id, node_group.h;
 * NULL = none known) is stored with that node group. */
int lab_ingest_trace_groups(lab_store *s, FILE *f, const char *source, const char *workflow,
                            const char *run_name, const json_t *node_groups,
                            lab_ingest_stats *stats, tm_err *err);

/* The default run name of a trace file: its base name without the extension, e.g.
 * "execution_trace_2023-05-01_12-34-56" (nf-core names one file per run). */
void lab_ingest_default_run(const char *path, char *out, size_t size);

#endif
