/* duration.c: Go-style durations as milliseconds (duration.h). */
#include "duration.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_DURATION_MS ((int64_t)10 * 365 * 24 * 3600 * 1000)

int64_t tm_wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int tm_duration_parse_ms(const char *s, int64_t *out, tm_err *err) {
    if (!s || !*s)
        return tm_err_set(err, "empty duration");
    char *end;
    double plain = strtod(s, &end);
    double total = 0;
    if (!*end) {
        total = plain * 1000;
    } else {
        const char *p = s;
        while (*p) {
            double v = strtod(p, &end);
            if (end == p)
                return tm_err_set(err, "\"%s\" is not a duration (90s, 10m, 1h30m)", s);
            p = end;
            double unit;
            if (strncmp(p, "ms", 2) == 0) {
                unit = 1, p += 2;
            } else if (*p == 's') {
                unit = 1000, p++;
            } else if (*p == 'm') {
                unit = 60000, p++;
            } else if (*p == 'h') {
                unit = 3600000, p++;
            } else {
                return tm_err_set(err, "\"%s\": a number needs a unit (ms, s, m, h)", s);
            }
            total += v * unit;
        }
    }
    if (!(total >= 0) || total > (double)MAX_DURATION_MS)
        return tm_err_set(err, "duration \"%s\" is negative or longer than 10 years", s);
    *out = (int64_t)total;
    return 0;
}
