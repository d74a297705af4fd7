/* weblog.c: see weblog.h. */
#include "labeler/weblog.h"

#include <math.h>
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

static void copy_json_str(char *dst, size_t size, const json_t *obj, const char *key) {
    const char *v = json_string_value(json_object_get(obj, key));
    snprintf(dst, size, "%s", v ? v : "");
}

typedef int (*parse_fn)(const char *, int64_t *, tm_err *);

/* A numeric trace field: a JSON number (raw units) or a string in either unit style. */
static int num_field(const json_t *trace, const char *key, parse_fn parse, int64_t *out,
                     tm_err *err) {
    const json_t *v = json_object_get(trace, key);
    if (!v || json_is_null(v)) {
        *out = LAB_NONE;
        return 0;
    }
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 0;
    }
    if (json_is_real(v)) {
        *out = (int64_t)llround(json_real_value(v));
        return 0;
    }
    if (json_is_string(v) && parse(json_string_value(v), out, err) == 0)
        return 0;
    if (!json_is_string(v))
        tm_err_set(err, "not a number");
    return tm_err_wrap(err, "trace.%s", key);
}

static int parse_trace(const json_t *t, lab_task_run *r, tm_err *err) {
    lab_task_run_init(r);
    if (!json_is_object(t))
        return tm_err_set(err, "process_completed event without a trace object");
    copy_json_str(r->name, sizeof r->name, t, "name");
    copy_json_str(r->process, sizeof r->process, t, "process");
    copy_json_str(r->hash, sizeof r->hash, t, "hash");
    copy_json_str(r->status, sizeof r->status, t, "status");
    copy_json_str(r->node, sizeof r->node, t, "hostname");
    if (!r->process[0])
        lab_process_from_name(r->name, r->process, sizeof r->process);
    if (!r->process[0])
        return tm_err_set(err, "trace has neither process nor name");
    if (num_field(t, "task_id", lab_parse_int, &r->task_id, err) < 0 ||
        num_field(t, "attempt", lab_parse_int, &r->attempt, err) < 0 ||
        num_field(t, "exit", lab_parse_int, &r->exit_code, err) < 0 ||
        num_field(t, "cpus", lab_parse_int, &r->cpus, err) < 0 ||
        num_field(t, "memory", lab_parse_bytes, &r->memory, err) < 0 ||
        num_field(t, "peak_rss", lab_parse_bytes, &r->peak_rss, err) < 0 ||
        num_field(t, "rchar", lab_parse_bytes, &r->rchar, err) < 0 ||
        num_field(t, "wchar", lab_parse_bytes, &r->wchar, err) < 0 ||
        num_field(t, "read_bytes", lab_parse_bytes, &r->read_bytes, err) < 0 ||
        num_field(t, "write_bytes", lab_parse_bytes, &r->write_bytes, err) < 0 ||
        num_field(t, "realtime", lab_parse_duration_ms, &r->realtime_ms, err) < 0 ||
        num_field(t, "submit", lab_parse_timestamp_ms, &r->submit_ms, err) < 0 ||
        num_field(t, "start", lab_parse_timestamp_ms, &r->start_ms, err) < 0 ||
        num_field(t, "complete", lab_parse_timestamp_ms, &r->complete_ms, err) < 0)
        return -1;
    if (r->attempt == LAB_NONE)
        r->attempt = 1;
    const json_t *cpu = json_object_get(t, "%cpu");
    if (json_is_number(cpu))
        r->cpu_pct = json_number_value(cpu);
    else if (json_is_string(cpu) && lab_parse_percent(json_string_value(cpu), &r->cpu_pct, err) < 0)
        return tm_err_wrap(err, "trace.%%cpu");
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
    const char *event = json_string_value(json_object_get(body, "event"));
    if (!event)
        return tm_err_set(err, "weblog event has no \"event\" field");
    snprintf(ev->event, sizeof ev->event, "%s", event);
    copy_json_str(ev->run_id, sizeof ev->run_id, body, "runId");
    copy_json_str(ev->run_name, sizeof ev->run_name, body, "runName");
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
        snprintf(ev->workflow, sizeof ev->workflow, "%s", name);
        return 0;
    }
    if (strcmp(event, "process_completed") == 0) {
        ev->kind = LAB_WEBLOG_PROCESS_COMPLETED;
        if (parse_trace(json_object_get(body, "trace"), &ev->run, err) < 0)
            return tm_err_wrap(err, "weblog process_completed (run %s)", ev->run_name);
        snprintf(ev->run.run_name, sizeof ev->run.run_name, "%s", ev->run_name);
        return 0;
    }
    ev->kind = LAB_WEBLOG_OTHER;
    return 0;
}
