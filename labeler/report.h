/* report.h: a workflow's labels and the numbers behind them, for operators (`label`) and for
 * the TaskProfile status. Text goes to a FILE; JSON is built in memory. */
#ifndef TAREMA_LABELER_REPORT_H
#define TAREMA_LABELER_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "labeler/labels.h"

/* Pieces shared with the TaskProfile status (taskprofile.c). New references. */
json_t *lab_json_num_or_null(double v);                          /* null for NAN (unknown) */
json_t *lab_report_shares(const lab_classes *c);                 /* [m_i / sum(m)] */
json_t *lab_report_bounds(const lab_labeling *l, lab_feature f); /* the n-1 bounds */

/* {"workflow", "features": {"cpu": {"classes": [cores...], "shares": [...], "bounds": [...],
 * "samples": N}, ...}, "processes": [{"process", "runs", "labels": {...}, "estimates": {...},
 * "meanRealtimeMs"}]}. process NULL = all processes. New reference. */
json_t *lab_report_json(const lab_labeling *l, const char *workflow, const char *process);

/* The same as aligned text. Returns the number of processes printed. */
int lab_report_text(FILE *out, const lab_labeling *l, const char *workflow, const char *process);

#endif
