/* config_backfill.c: the scheduler config's backfill mapping (config.h, docs/backfill.md). */
#include <stdio.h>

#include "lib/duration.h"
#include "lib/jsonutil.h"
#include "scheduler/live/config.h"

/* A duration given as a string ("30s", "1h") or a number of seconds. "" = 0 when allow_empty. */
static int get_duration(const json_t *o, const char *key, int64_t *dst, bool allow_empty,
                        const char *where, tm_err *err) {
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (json_is_integer(v) && json_integer_value(v) >= 0 &&
        json_integer_value(v) <= 10LL * 365 * 86400) {
        *dst = json_integer_value(v) * 1000;
        return 0;
    }
    if (json_is_string(v) && allow_empty && json_string_value(v)[0] == '\0') {
        *dst = 0;
        return 0;
    }
    tm_err e = {0};
    if (!json_is_string(v) || tm_duration_parse_ms(json_string_value(v), dst, &e) != 0)
        return tm_err_set(err, "%s: %s must be a duration like \"30s\" or \"10m\"%s%s", where, key,
                          e.msg[0] ? ": " : "", e.msg);
    return 0;
}

int sched_config_apply_backfill(sched_config *c, const json_t *v, const char *what, tm_err *err) {
    static const char *const keys[] = {"reserveDepth", "resolution",     "maxJobTest",
                                       "window",       "defaultRuntime", NULL};
    char where[256];
    snprintf(where, sizeof where, "%s: backfill", what);
    if (!json_is_object(v))
        return tm_err_set(err, "%s must be a mapping", where);
    if (tm_json_check_keys(v, keys, where, err))
        return -1;
    bf_config b = c->backfill;
    const json_t *d = json_object_get(v, "reserveDepth");
    if (d && !json_is_null(d)) {
        char buf[32];
        if (json_is_integer(d))
            snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(d));
        else if (json_is_string(d))
            snprintf(buf, sizeof buf, "%s", json_string_value(d));
        else
            return tm_err_set(err, "%s: reserveDepth must be \"all\" or an integer 0..100000",
                              where);
        if (bf_depth_parse(buf, &b.reserve_depth, err) != 0)
            return tm_err_wrap(err, "%s", what);
    }
    const json_t *m = json_object_get(v, "maxJobTest");
    if (m && !json_is_null(m)) {
        if (!json_is_integer(m) || json_integer_value(m) < 1 || json_integer_value(m) > 100000)
            return tm_err_set(err, "%s: maxJobTest must be an integer from 1 to 100000", where);
        b.max_job_test = (int)json_integer_value(m);
    }
    if (get_duration(v, "resolution", &b.resolution_ms, false, where, err) ||
        get_duration(v, "window", &b.window_ms, false, where, err) ||
        get_duration(v, "defaultRuntime", &b.default_runtime_ms, true, where, err))
        return -1;
    if (bf_config_check(&b, err) != 0)
        return tm_err_wrap(err, "%s", what);
    c->backfill = b;
    return 0;
}
