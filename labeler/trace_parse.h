/* trace_parse.h: reads Nextflow trace files (`-with-trace`, trace.txt) row by row.
 *
 * Columns are found by the header line, so any column order and any subset of the trace
 * fields work; unknown columns are ignored. Values may be raw (`trace.raw = true`) or
 * human-readable (see units.h). A row that cannot be read is reported with its line number
 * and the reader moves on to the next one. The separator is a tab (Nextflow's default) unless
 * the header has no tab and has commas. Pure: reads only the FILE it is given. */
#ifndef TAREMA_LABELER_TRACE_PARSE_H
#define TAREMA_LABELER_TRACE_PARSE_H

#include <stdio.h>

#include "labeler/taskrun.h"
#include "lib/error.h"

typedef struct lab_trace_reader lab_trace_reader;

/* Reads the header from f (which the caller keeps and closes). source names the input in
 * messages ("trace.txt"). Returns NULL with err when the header is missing or lacks both
 * `name` and `process`, or both `hash` and `task_id`. Free with lab_trace_close. */
lab_trace_reader *lab_trace_open(FILE *f, const char *source, tm_err *err);

/* Next row into *out (workflow and run_name are left empty for the caller). Returns 1 for a
 * row, 0 at the end, -1 for a bad row with err "<source>:<line>: <what>" (call again to
 * continue with the next row). */
int lab_trace_next(lab_trace_reader *r, lab_task_run *out, tm_err *err);

/* Line number of the row last returned (the header is line 1). */
long lab_trace_line(const lab_trace_reader *r);

void lab_trace_close(lab_trace_reader *r);

#endif
