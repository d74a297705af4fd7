/* quantity.h: Kubernetes resource.Quantity strings ("100m", "1Gi", "2.5", "1e3") as integers.
 *
 * Follows k8s.io/apimachinery/pkg/api/resource: an optional sign, a decimal number (digits with
 * at most one '.'), then either nothing, a decimal SI suffix (n u m k M G T P E), a binary suffix
 * (Ki Mi Gi Ti Pi Ei) or a decimal exponent (e3, E-2). Values that are not whole in the target
 * unit are rounded up away from zero, as Kubernetes does with Value() and MilliValue().
 * Anything else (empty, spaces, "1.2.3", "1Kb", "1i", overflow of int64) is an error whose
 * message quotes the offending string. Strings longer than 128 characters are refused. No
 * allocation; safe from any thread. */
#ifndef TAREMA_QUANTITY_H
#define TAREMA_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Big enough for every string the format functions produce (int64 digits, sign, suffix). */
#define TM_QUANTITY_BUF 32

/* Parses s into thousandths of a unit: cpu "100m" -> 100, "2" -> 2000, "0.5" -> 500,
 * "1n" -> 1 (rounded up). Returns 0, or -1 with err naming s. */
int tm_quantity_parse_milli(const char *s, int64_t *out, tm_err *err);

/* Parses s into whole units rounded up: memory "1Gi" -> 1073741824, "1.5" -> 2, "100m" -> 1,
 * "1k" -> 1000. Returns 0, or -1 with err naming s. */
int tm_quantity_parse(const char *s, int64_t *out, tm_err *err);

/* Formats milli-units the way kubectl shows cpu: 2000 -> "2", 100 -> "100m", 1500 -> "1500m",
 * 0 -> "0". Writes into buf (at least TM_QUANTITY_BUF bytes) and returns buf. */
char *tm_quantity_format_milli(int64_t milli, char *buf, size_t size);

/* Formats a byte count: the largest binary suffix that divides it exactly ("1Gi", "512Mi",
 * "1536Ki"), else plain digits ("1000"). Returns buf (at least TM_QUANTITY_BUF bytes). */
char *tm_quantity_format_bytes(int64_t bytes, char *buf, size_t size);

#endif
