/* sizing_samples.h: sizing plans (sizing_plan.h) from the labeler store's samples (pure).
 *
 * The store's samples (lab_store_samples) are a workflow's completed runs: %cpu, peak RSS and
 * realtime per run. A process's plan learns from its own runs (the paper's level 3): cores =
 * %cpu / 100, memory = peak RSS, weight = realtime. */
#ifndef TAREMA_LABELER_SIZING_SAMPLES_H
#define TAREMA_LABELER_SIZING_SAMPLES_H

#include <jansson.h>
#include <stddef.h>

#include "labeler/labels.h"
#include "labeler/sizing_plan.h"
#include "lib/error.h"

/* The plan of `process` from the samples v[0..n-1] of its workflow (other processes' samples
 * are skipped). Returns 0, or -1 with err (bad options, out of memory). */
int lab_sizing_plan(const lab_sample *v, size_t n, const char *process, const sz_plan_opts *o,
                    sz_plan *out, tm_err *err);

/* TaskProfile status.sizing of `process` (sz_plan_json of its plan, strategy paper, cold start
 * 2, against the paper's machine of 16 cores and 64 GiB like `tarema-sim sizing`: the webhook
 * recomputes against the cluster's largest node when it applies it); JSON null when the plan
 * cannot be made. New reference. */
json_t *lab_sizing_status(const lab_sample *v, size_t n, const char *process);

#endif
