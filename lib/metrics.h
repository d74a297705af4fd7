/* metrics.h: Prometheus counters, gauges and histograms with text exposition format 0.0.4.
 *
 *   tm_metrics *reg = tm_metrics_new();
 *   tm_metric *att = tm_metrics_counter(reg, "tarema_schedule_attempts_total",
 *                                       "Scheduling attempts by result.", TM_LABELS("result"),
 *                                       &err);
 *   tm_metrics_inc(att, TM_LABELS("scheduled"));
 *   char *text = tm_metrics_render(reg);   // serve at /metrics, then free(text)
 *
 * Label names are given once at registration as a NULL-terminated array (NULL for none;
 * TM_LABELS adds the terminator). Label values are passed on every update as an array with
 * exactly as many entries as there are label names (NULL for a metric without labels; a NULL
 * array or NULL entry for a labelled metric counts as empty values). The first update of a label
 * set allocates its series; later updates of that set only take the metric's own mutex, so updates
 * are cheap and safe from any thread.
 *
 * Registration (tm_metrics_counter/gauge/histogram) and tm_metrics_render are thread-safe too.
 * Metric handles belong to the registry: valid until tm_metrics_free, never freed by callers.
 * A handle of the wrong kind (tm_metrics_set on a counter, a negative counter increment) is a
 * programming error: the update is ignored and logged once per metric at warn level. */
#ifndef TAREMA_METRICS_H
#define TAREMA_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Builds a NULL-terminated array of label names or values in place: TM_LABELS("a", "b"). */
#define TM_LABELS(...) ((const char *const[]){__VA_ARGS__, NULL})

typedef struct tm_metrics tm_metrics;
typedef struct tm_metric tm_metric;

tm_metrics *tm_metrics_new(void);
void tm_metrics_free(tm_metrics *reg); /* frees every metric handle too; NULL is fine */

/* Registers a metric. name must match [a-zA-Z_:][a-zA-Z0-9_:]*, label names
 * [a-zA-Z_][a-zA-Z0-9_]* not starting with "__" (and not "le" for histograms); a name already
 * registered is an error. help may be NULL. A metric without labels shows 0 from the start;
 * labelled series appear once first updated. Returns NULL with err naming the problem. */
tm_metric *tm_metrics_counter(tm_metrics *reg, const char *name, const char *help,
                              const char *const *label_names, tm_err *err);
tm_metric *tm_metrics_gauge(tm_metrics *reg, const char *name, const char *help,
                            const char *const *label_names, tm_err *err);
/* bounds: strictly increasing finite upper bounds; the +Inf bucket is added automatically. */
tm_metric *tm_metrics_histogram(tm_metrics *reg, const char *name, const char *help,
                                const char *const *label_names, const double *bounds,
                                size_t nbounds, tm_err *err);

/* An alias: the series of `of` shown a second time under another name and help, with constant
 * labels before of's own (const_labels: name, value, name, value, ..., NULL; NULL for none).
 * For dashboards written for another program's names (kube-scheduler's scheduler_* beside
 * tarema_*): one update, two names, nothing counted twice. Updates and reads through the alias
 * act on `of`. The same checks as registration (a name taken, a label name twice). Returns
 * NULL with err. */
tm_metric *tm_metrics_alias(tm_metrics *reg, tm_metric *of, const char *name, const char *help,
                            const char *const *const_labels, tm_err *err);

/* Fills out[0..n) with start, start*factor, start*factor^2, ... (start > 0, factor > 1). */
void tm_metrics_exp_buckets(double start, double factor, size_t n, double *out);

/* Updates. lv: label values (see above). */
void tm_metrics_inc(tm_metric *m, const char *const *lv);           /* counter/gauge += 1 */
void tm_metrics_add(tm_metric *m, const char *const *lv, double v); /* counter (v >= 0), gauge */
void tm_metrics_set(tm_metric *m, const char *const *lv, double v); /* gauge only */
void tm_metrics_observe(tm_metric *m, const char *const *lv, double v); /* histogram only */
/* Many observations at once, counted elsewhere (a caller aggregating a hot path without the
 * mutex): counts[0..n) per bucket, not cumulative, n = the number of bounds + 1 (the last is
 * +Inf), and their sum. A wrong n is a misuse (ignored, logged once). */
void tm_metrics_observe_buckets(tm_metric *m, const char *const *lv, const uint64_t *counts,
                                size_t n, double sum);

/* Reads a series back: the value of a counter or gauge, the sum of a histogram. A label set never
 * updated reads as 0. */
double tm_metrics_value(tm_metric *m, const char *const *lv);
/* Histogram count of observations (0 for other kinds or an unseen label set). */
uint64_t tm_metrics_count(tm_metric *m, const char *const *lv);

/* The whole registry in text exposition format 0.0.4 (content type
 * TM_METRICS_CONTENT_TYPE): metrics in registration order, series sorted by label values.
 * Returns a malloc'd string the caller frees, or NULL when out of memory. */
char *tm_metrics_render(tm_metrics *reg);

#define TM_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
