/* duration.h: Go-style durations ("90s", "10m", "1h30m", "1.5h", "250ms") and plain seconds
 * ("600") as milliseconds. The scheduler's pods (annotation tarema.io/expected-duration) and its
 * Reservations (spec.duration) both use this form, so it lives below both. No allocation. */
#ifndef TAREMA_DURATION_H
#define TAREMA_DURATION_H

#include <stdint.h>

#include "error.h"

/* s -> *out in ms. -1 with err when empty, malformed (a number without a unit after another
 * unit, an unknown unit), negative or absurd (more than 10 years). */
int tm_duration_parse_ms(const char *s, int64_t *out, tm_err *err);

/* The wall clock (CLOCK_REALTIME) in ms since the epoch: the clock of the API's RFC 3339 times
 * (expected starts, Reservation windows, condition times). Delays and timeouts use the
 * monotonic clock instead (tm_kube_now_ms). */
int64_t tm_wall_ms(void);

#endif
