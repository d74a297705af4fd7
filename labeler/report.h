/* report.h: a workflow's labels and the numbers behind them, for operators (`label`) and for
 * the TaskProfile status. Text goes to a FILE; JSON is built in memory. */
#ifndef TAREMA_LABELER_REPORT_H
#define TAREMA_LABELER_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "labeler/labels.h"

/* {"workflow", "features": {"cpu": {"classes": [cores...], "shares": [...], "bounds": [...],
 * "samples": N}, ...}, "processes": [{"process", "runs", "labels": {...}, "estimates": {...},
 * "meanRealtimeMs"}]}. process NULL = all processes. New reference. */
json_t *lab_report_json(const lab_labeling *l, const char *workflow, const char *process);

/* The same as aligned text. Returns the number of processes printed. */
int lab_report_text(FILE *out, const lab_labeling *l, const char *workflow, const char *process);

#endif
