/* weblog.c: see weblog.h. */
#include "labeler/weblog.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "labeler/units.h"
#include "lib/jsonutil.h"

/* ISO 8601 UTC as Nextflow writes utcTime: "2023-05-01T12:34:56Z" or with ".123Z". */
static long long parse_utc(const char *s) {
    struct tm tmv;
    memset(&tmv, 0, sizeof tmv);
    const char *end = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tmv) : NULL;
    if (!end)
        return LAB_NONE;
    long long ms = 0;
    if (*end == '.') {
        int digits = 0;
        for (end++; *end >= '0' && *end <= '9'; end++)
            if (digits++ < 3)
                ms = ms * 10 + (*end - '0');
        while (digits++ < 3)
            ms *= 10;
    }
    return (long long)timegm(&tmv) * 1000 + ms;
}

/* A text field: absent or null is "", a string is copied (see lab_set_text), anything else is
 * an error, so a wrong type is reported instead of silently read as "not reported". */
static int text_field(const json_t *obj, const char *prefix, const char *key, char *dst,
                      size_t size, tm_err *err) {
    const json_t *v = json_object_get(obj, key);
    dst[0] = '\0';
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return tm_err_set(err, "%s%s must be a string", prefix, key);
    if (lab_set_text(dst, size, json_string_value(v), err) < 0)
        return tm_err_wrap(err, "%s%s", prefix, key);
    return 0;
}

typedef int (*parse_fn)(const char *, int64_t *, tm_err *);

/* A numeric trace field: a JSON number (raw units) or a string in either unit style. Sizes
 * and durations (nonneg) must not be negative, as in a trace file. */
static int num_field(const json_t *trace, const char *key, parse_fn parse, bool nonneg,
                     int64_t *out, tm_err *err) {
    const json_t *v = json_object_get(trace, key);
    *out = LAB_NONE;
    if (!v || json_is_null(v))
        return 0;
    if (json_is_string(v)) {
        if (parse(json_string_value(v), out, err) < 0)
            return tm_err_wrap(err, "trace.%s", key);
        return 0;
    }
    if (!json_is_number(v))
        return tm_err_set(err, "trace.%s must be a number or a string", key);
    double d = json_number_value(v);
    /* llround() outside int64 is undefined; INT64_MIN itself would read as "unknown". */
    if (!(d > -9.2e18 && d < 9.2e18) || (nonneg && d < 0))
        return tm_err_set(err, "trace.%s: %g is out of range", key, d);
    *out = json_is_integer(v) ? json_integer_value(v) : (int64_t)llround(d);
    return 0;
}

static int parse_trace(const json_t *t, lab_task_run *r, tm_err *err) {
    lab_task_run_init(r);
    if (!json_is_object(t))
        return tm_err_set(err, "process_completed event without a trace object");
    if (text_field(t, "trace.", "name", r->name, sizeof r->name, err) < 0 ||
        text_field(t, "trace.", "process", r->process, sizeof r->process, err) < 0 ||
        text_field(t, "trace.", "hash", r->hash, sizeof r->hash, err) < 0 ||
        text_field(t, "trace.", "status", r->status, sizeof r->status, err) < 0 ||
        text_field(t, "trace.", "hostname", r->node, sizeof r->node, err) < 0)
        return -1;
    if (!r->process[0] && !lab_process_from_name(r->name, r->process, sizeof r->process))
        return tm_err_set(err, "trace.name: the process name is longer than %zu bytes",
                          sizeof r->process - 1);
    if (!r->process[0])
        return tm_err_set(err, "trace has neither process nor name");
    if (num_field(t, "task_id", lab_parse_int, false, &r->task_id, err) < 0 ||
        num_field(t, "attempt", lab_parse_int, false, &r->attempt, err) < 0 ||
        num_field(t, "exit", lab_parse_int, false, &r->exit_code, err) < 0 ||
        num_field(t, "cpus", lab_parse_int, true, &r->cpus, err) < 0 ||
        num_field(t, "memory", lab_parse_bytes, true, &r->memory, err) < 0 ||
        num_field(t, "peak_rss", lab_parse_bytes, true, &r->peak_rss, err) < 0 ||
        num_field(t, "rchar", lab_parse_bytes, true, &r->rchar, err) < 0 ||
        num_field(t, "wchar", lab_parse_bytes, true, &r->wchar, err) < 0 ||
        num_field(t, "read_bytes", lab_parse_bytes, true, &r->read_bytes, err) < 0 ||
        num_field(t, "write_bytes", lab_parse_bytes, true, &r->write_bytes, err) < 0 ||
        num_field(t, "realtime", lab_parse_duration_ms, true, &r->realtime_ms, err) < 0 ||
        num_field(t, "submit", lab_parse_timestamp_ms, false, &r->submit_ms, err) < 0 ||
        num_field(t, "start", lab_parse_timestamp_ms, false, &r->start_ms, err) < 0 ||
        num_field(t, "complete", lab_parse_timestamp_ms, false, &r->complete_ms, err) < 0)
        return -1;
    if (r->attempt == LAB_NONE)
        r->attempt = 1;
    const json_t *cpu = json_object_get(t, "%cpu");
    if (json_is_number(cpu)) {
        r->cpu_pct = json_number_value(cpu);
        if (r->cpu_pct < 0)
            return tm_err_set(err, "trace.%%cpu: %g is negative", r->cpu_pct);
    } else if (json_is_string(cpu)) {
        if (lab_parse_percent(json_string_value(cpu), &r->cpu_pct, err) < 0)
            return tm_err_wrap(err, "trace.%%cpu");
    } else if (cpu && !json_is_null(cpu)) {
        return tm_err_set(err, "trace.%%cpu must be a number or a string");
    }
    char key[80];
    if (!lab_task_run_key(r, key, sizeof key))
        return tm_err_set(err, "trace has neither hash nor task_id");
    return 0;
}

int lab_weblog_parse(const json_t *body, const char *workflow_key, lab_weblog_event *ev,
                     tm_err *err) {
    memset(ev, 0, sizeof *ev);
    if (!json_is_object(body))
        return tm_err_set(err, "weblog event is not a JSON object");
    if (!json_is_string(json_object_get(body, "event")))
        return tm_err_set(err, "weblog event has no \"event\" string field");
    if (text_field(body, "", "event", ev->event, sizeof ev->event, err) < 0 ||
        text_field(body, "", "runId", ev->run_id, sizeof ev->run_id, err) < 0 ||
        text_field(body, "", "runName", ev->run_name, sizeof ev->run_name, err) < 0)
        return tm_err_wrap(err, "weblog event");
    const char *event = ev->event;
    if (!ev->run_id[0] || !ev->run_name[0])
        return tm_err_set(err, "weblog event '%s' lacks runId or runName", event);
    ev->utc_ms = parse_utc(json_string_value(json_object_get(body, "utcTime")));
    if (strcmp(event, "started") == 0) {
        ev->kind = LAB_WEBLOG_STARTED;
        const json_t *wf = tm_json_path(body, "metadata.workflow");
        const char *name = NULL;
        if (workflow_key)
            name = tm_json_str(wf, workflow_key, NULL);
        else
            name = tm_json_str(wf, "manifest.name", NULL);
        if (!name || !*name)
            name = tm_json_str(wf, "projectName", "");
        if (lab_set_text(ev->workflow, sizeof ev->workflow, name, err) < 0)
            return tm_err_wrap(err, "weblog started event: metadata.workflow.%s",
                               workflow_key ? workflow_key : "manifest.name");
        return 0;
    }
    if (strcmp(event, "process_completed") == 0) {
        ev->kind = LAB_WEBLOG_PROCESS_COMPLETED;
        if (parse_trace(json_object_get(body, "trace"), &ev->run, err) < 0)
            return tm_err_wrap(err, "weblog process_completed (run %s)", ev->run_name);
        snprintf(ev->run.run_name, sizeof ev->run.run_name, "%s", ev->run_name);
        return 0;
    }
    if (strcmp(event, "completed") == 0) {
        ev->kind = LAB_WEBLOG_COMPLETED;
        const json_t *ok = tm_json_path(body, "metadata.workflow.success");
        ev->success = !json_is_false(ok);
        return 0;
    }
    ev->kind = LAB_WEBLOG_OTHER;
    return 0;
}

/* task_runs.attempt, exit_code and cpus are `integer`. */
static int int32_field(const char *name, int64_t v, tm_err *err) {
    if (v == LAB_NONE || (v >= INT32_MIN && v <= INT32_MAX))
        return 0;
    return tm_err_set(err,
                      "trace.%s: %lld is out of range (the store keeps a 32-bit integer, "
                      "%d..%d)",
                      name, (long long)v, INT32_MIN, INT32_MAX);
}

/* Epoch milliseconds of 9999-12-31T23:59:59.999Z: later (or negative) times are no task's. */
#define MAX_EPOCH_MS 253402300799999LL

static int time_field(const char *name, int64_t v, tm_err *err) {
    if (v == LAB_NONE || (v >= 0 && v <= MAX_EPOCH_MS))
        return 0;
    return tm_err_set(err,
                      "%s: %lld is not a time (epoch milliseconds between 1970 and the year "
                      "9999)",
                      name, (long long)v);
}

int lab_weblog_validate(const lab_weblog_event *ev, tm_err *err) {
    if (ev->kind == LAB_WEBLOG_STARTED || ev->kind == LAB_WEBLOG_COMPLETED)
        return time_field("utcTime", ev->utc_ms, err);
    if (ev->kind != LAB_WEBLOG_PROCESS_COMPLETED)
        return 0;
    const lab_task_run *r = &ev->run;
    if (int32_field("attempt", r->attempt, err) < 0 || int32_field("exit", r->exit_code, err) < 0 ||
        int32_field("cpus", r->cpus, err) < 0 ||
        time_field("trace.submit", r->submit_ms, err) < 0 ||
        time_field("trace.start", r->start_ms, err) < 0 ||
        time_field("trace.complete", r->complete_ms, err) < 0)
        return tm_err_wrap(err, "weblog process_completed (run %s)", ev->run_name);
    return 0;
}
