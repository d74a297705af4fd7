/* units.h: the planner's input scalars: durations ("90s", "15m", "1h30m", or a number of
 * seconds), cpu (cores as a number or a Kubernetes quantity, "500m") and memory (bytes as a
 * number or a quantity, "64Gi"), read from parsed YAML values. */
#ifndef TAREMA_PLANNER_UNITS_H
#define TAREMA_PLANNER_UNITS_H

#include <jansson.h>
#include <stdint.h>

#include "lib/error.h"

/* Parses a duration string: one or more NUMBER UNIT parts (units s, m, h, d; "1h30m"), or a
 * plain non-negative integer of seconds. Fractions are allowed ("1.5h"); the result is rounded
 * up to whole seconds. Returns 0, or -1 with err quoting s. */
int pl_duration_parse(const char *s, int64_t *out_s, tm_err *err);

/* The same from a YAML value (a string, or a number of seconds); what names the field. */
int pl_json_duration(const json_t *v, const char *what, int64_t *out_s, tm_err *err);

/* Cores from a number (36, 0.5) or a quantity string ("500m"), as milli-cores; > 0. */
int pl_json_cpu_milli(const json_t *v, const char *what, int64_t *out, tm_err *err);

/* Bytes from a number or a quantity string ("64Gi"); > 0 unless allow_zero. */
int pl_json_bytes(const json_t *v, const char *what, int allow_zero, int64_t *out, tm_err *err);

#endif
