/* fw_metrics.h: kube-scheduler's framework timings for the live scheduler and the extender:
 *   scheduler_framework_extension_point_duration_seconds{extension_point,status,profile}
 *     every run of an extension point (framework.h's observer point hook)
 *   scheduler_plugin_execution_duration_seconds{plugin,extension_point,status}
 *     every plugin call in the sampled cycles (kube's pluginMetricsSamplePercent, 10 by default)
 * with kube-scheduler's buckets and label values, as aliases of tarema_* series of the same
 * names (docs/operations.md). The framework reads no clock: a recorder gives it one through a
 * sched_observer and keeps the observations in plain per-series bucket counts, no lock, no
 * label lookup, so that timing every Filter call of a sampled cycle (nodes x filters) costs a
 * clock read and a bucket search each; the counts reach the registry at each flush (the live
 * loop flushes once per batch, the extender once per request).
 *
 *   sched_fw_metrics *m = sched_fw_metrics_new(reg, "tarema", 10, &err);   // shared
 *   sched_fw_recorder *r = sched_fw_recorder_new(m);                       // one per thread
 *   sched_framework_set_observer(fw, sched_fw_recorder_observer(r));
 *   sched_framework_sample(fw, sched_fw_metrics_sample(m));   // per cycle
 *   ... cycles ...
 *   sched_fw_recorder_flush(r);
 */
#ifndef TAREMA_SCHED_FW_METRICS_H
#define TAREMA_SCHED_FW_METRICS_H

#include <stdbool.h>

#include "lib/error.h"
#include "lib/metrics.h"
#include "scheduler/framework/framework.h"

typedef struct sched_fw_metrics sched_fw_metrics;
typedef struct sched_fw_recorder sched_fw_recorder;

/* Registers the four series on reg (profile: kube's label for the scheduler name) and keeps
 * the sample rate (0..100, percent of cycles whose plugin calls are timed). NULL with err. */
sched_fw_metrics *sched_fw_metrics_new(tm_metrics *reg, const char *profile, int sample_percent,
                                       tm_err *err);
void sched_fw_metrics_free(sched_fw_metrics *m);
/* Whether the next cycle is sampled: exactly sample_percent of the calls, spread evenly (the
 * n-th call is sampled when n * percent mod 100 < percent), from any thread. */
bool sched_fw_metrics_sample(sched_fw_metrics *m);

/* A recorder for one thread's frameworks. NULL on OOM. Free flushes. */
sched_fw_recorder *sched_fw_recorder_new(sched_fw_metrics *m);
void sched_fw_recorder_free(sched_fw_recorder *r);
/* The observer to hand to sched_framework_set_observer (valid while r lives). */
const sched_observer *sched_fw_recorder_observer(sched_fw_recorder *r);
/* Adds what r counted since the last flush to the registry's series. */
void sched_fw_recorder_flush(sched_fw_recorder *r);

/* kube-scheduler's status label of an outcome: "Success", "Unschedulable",
 * "UnschedulableAndUnresolvable", "Error", "Wait", "Skip". */
const char *sched_fw_status_name(sched_outcome o);

#endif
