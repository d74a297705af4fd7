/* weblog.h: Nextflow weblog events (`-with-weblog URL`) decoded into task runs.
 *
 * Nextflow POSTs one JSON object per event: {runName, runId, event, utcTime, trace|metadata}.
 * `started` carries metadata.workflow (manifest, projectName, ...): it names the workflow of
 * the run. `process_completed` carries the task's trace record in raw units (ms, bytes, epoch
 * ms). `completed` (the run ended; metadata.workflow.success false when it failed) marks a
 * successful run complete, so its tasks feed each process's tail to the run's end
 * (run_tail.h). Other events (process_submitted, process_started, error) are accepted and not
 * stored. Pure: decodes JSON already in memory. */
#ifndef TAREMA_LABELER_WEBLOG_H
#define TAREMA_LABELER_WEBLOG_H

#include <jansson.h>
#include <stdbool.h>

#include "labeler/taskrun.h"
#include "lib/error.h"

typedef enum {
    LAB_WEBLOG_STARTED,
    LAB_WEBLOG_PROCESS_COMPLETED,
    LAB_WEBLOG_COMPLETED, /* the run ended: `success` says how */
    LAB_WEBLOG_OTHER,
} lab_weblog_kind;

typedef struct lab_weblog_event {
    lab_weblog_kind kind;
    char event[64];
    char run_id[128];
    char run_name[128];
    char workflow[128]; /* STARTED: the workflow key from the metadata ("" if absent) */
    long long utc_ms;   /* utcTime, LAB_NONE when absent */
    bool success;       /* COMPLETED: metadata.workflow.success (true when absent) */
    lab_task_run run;   /* PROCESS_COMPLETED: the task (workflow left empty) */
} lab_weblog_event;

/* Decodes an event. workflow_key is the path under metadata.workflow that names the workflow
 * (NULL: "manifest.name", falling back to "projectName"). Returns 0, or -1 with err naming the
 * missing or malformed field. */
int lab_weblog_parse(const json_t *body, const char *workflow_key, lab_weblog_event *ev,
                     tm_err *err);

/* Checks a parsed event against what the store accepts (labeler/migrations: integer columns
 * are 32-bit, timestamps must be real dates), so an event the database would refuse is
 * refused before it is acknowledged instead of being dropped later. Returns 0, or -1 with err
 * naming the field and the limit. (Whether the run is known is the caller's to check.) */
int lab_weblog_validate(const lab_weblog_event *ev, tm_err *err);

#endif
