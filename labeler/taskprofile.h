/* taskprofile.h: TaskProfile objects (tarema.io/v1alpha1, manifests/crds/taskprofile.yaml),
 * the labeler's published output. The scheduler watches them instead of the database.
 *
 * One object per workflow and process: spec.{workflow, process}; status.labels.{cpu,mem,io}
 * (absent when unlabeled), status.runs, status.mean.{cpuPercent, peakRssBytes, ioBytes,
 * realtimeMs}, status.groups.<feature>.{n, shares}, status.bounds.<feature>,
 * status.lastUpdate; the publisher (serve.c) adds status.sizing (sizing_samples.h) and
 * status.runtimeByGroup (group_runtime.h). Building is pure; publishing uses lib/kube.h. */
#ifndef TAREMA_LABELER_TASKPROFILE_H
#define TAREMA_LABELER_TASKPROFILE_H

#include <jansson.h>
#include <stddef.h>

#include "labeler/labels.h"
#include "lib/error.h"
#include "lib/kube.h"

#define LAB_TP_GROUP_VERSION "tarema.io/v1alpha1"
#define LAB_TP_RESOURCE      "taskprofiles"

/* The object name: "<workflow>-<process>" lowered to DNS-1123 ([a-z0-9-], at most 200
 * characters, no leading/trailing '-') plus "-" and 8 hex digits of a hash of the exact
 * workflow and process, so names that sanitise alike still differ. size >= 212. */
void lab_taskprofile_name(const char *workflow, const char *process, char *out, size_t size);

/* The status for process p of labeling l. Unlabeled features are JSON null so a merge patch
 * removes an earlier label. now_rfc3339 is the lastUpdate. New reference. */
json_t *lab_taskprofile_status(const lab_labeling *l, const lab_process_label *p,
                               const char *now_rfc3339);

/* The whole object (apiVersion, kind, metadata, spec; no status). New reference. */
json_t *lab_taskprofile_object(const char *ns, const char *workflow, const char *process);

/* Creates the object if it does not exist, then merge-patches its status subresource. */
int lab_taskprofile_publish(tm_kube *k, const char *ns, const char *workflow, const char *process,
                            const json_t *status, tm_err *err);

#endif
