/* queue_view.c: the scheduling queue's rows and their table (queue_view.h). */
#include "scheduler/cmd/queue_view.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "scheduler/backend/pod.h"
#include "scheduler/backend/queue.h"
#include "scheduler/cmd/explain.h"
#include "scheduler/plugins/gang/gang.h"
#include "scheduler/plugins/gang/gang_plugin.h"
#include "scheduler/plugins/gang/podgroup.h"
#include "scheduler/plugins/policy/policy.h"
#include "scheduler/plugins/scheduling_gates.h"

bool sched_queue_view_pending(const json_t *pod, const char *scheduler_name,
                              const char *const *namespaces) {
    /* an empty spec.schedulerName is the API server's default before defaulting */
    const char *sn = tm_json_str(pod, "spec.schedulerName", "");
    if (strcmp(*sn ? sn : "default-scheduler", scheduler_name) != 0)
        return false;
    if (*tm_json_str(pod, "spec.nodeName", "") ||
        *tm_json_str(pod, "metadata.deletionTimestamp", ""))
        return false;
    const char *phase = tm_json_str(pod, "status.phase", "");
    if (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)
        return false;
    if (!namespaces || !namespaces[0]) /* none configured: all */
        return true;
    const char *ns = tm_json_str(pod, "metadata.namespace", "");
    for (size_t i = 0; namespaces[i]; i++)
        if (strcmp(namespaces[i], ns) == 0)
            return true;
    return false;
}

/* ---- formatting ---- */

void sched_queue_view_when(long long in_s, char *buf, size_t cap) {
    long long a = in_s < 0 ? -in_s : in_s;
    const char *pre = in_s < 0 ? "overdue " : "in ";
    if (in_s == 0)
        snprintf(buf, cap, "now");
    else if (a < 120)
        snprintf(buf, cap, "%s%lld s", pre, a);
    else if (a < 120 * 60)
        snprintf(buf, cap, "%s%lld min", pre, a / 60);
    else
        snprintf(buf, cap, "%s%lld h", pre, a / 3600);
}

/* v / unit with at most `dec` decimals, trailing zeros dropped: 1.50 -> "1.5", 2.00 -> "2". */
static void trimmed(char *buf, size_t cap, double v, int dec) {
    snprintf(buf, cap, "%.*f", dec, v);
    char *dot = strchr(buf, '.');
    if (!dot)
        return;
    char *e = buf + strlen(buf);
    while (e > dot + 1 && e[-1] == '0')
        *--e = '\0';
    if (e == dot + 1)
        *dot = '\0';
}

static void bytes_short(char *buf, size_t cap, int64_t b) {
    static const char *const units[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 5)
        v /= 1024, u++;
    char n[32];
    trimmed(n, sizeof n, v, 1);
    snprintf(buf, cap, "%s%s", n, units[u]);
}

void sched_queue_view_asks(size_t pods, int64_t cpu_milli, int64_t mem_bytes, const json_t *ext,
                           char *buf, size_t cap) {
    char c[32], m[32];
    trimmed(c, sizeof c, (double)cpu_milli / 1000, 3);
    bytes_short(m, sizeof m, mem_bytes);
    size_t off = 0;
    if (pods != 1)
        off += (size_t)snprintf(buf, cap, "%zu pods: ", pods);
    if (off < cap)
        off += (size_t)snprintf(buf + off, cap - off, "%s cpu, %s", c, m);
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)ext, name, v) {
        if (off < cap)
            off += (size_t)snprintf(buf + off, cap - off, ", %" JSON_INTEGER_FORMAT " %s",
                                    json_integer_value(v), name);
    }
}

void sched_queue_view_why(const char *message, size_t max, char *buf, size_t cap) {
    if (!cap)
        return;
    const char *p = strstr(message, " preemption: ");
    size_t n = p ? (size_t)(p - message) : strlen(message);
    while (n && (message[n - 1] == '.' || message[n - 1] == ' '))
        n--;
    if (max < 4)
        max = 4;
    if (n > max) {
        /* the last ", " whose part ends within max - 4 (room for ", ...") */
        size_t cut = 0;
        for (size_t i = 0; i + 1 < n && i + 4 <= max; i++)
            if (message[i] == ',' && message[i + 1] == ' ')
                cut = i;
        if (cut)
            snprintf(buf, cap, "%.*s, ...", (int)cut, message);
        else
            snprintf(buf, cap, "%.*s...", (int)(max - 3), message);
        return;
    }
    snprintf(buf, cap, "%.*s", (int)n, message);
}

/* ---- rows ---- */

typedef struct view_ctx {
    sched_framework *fw;
    const sched_snapshot *s;
} view_ctx;

/* The live loop's queue sort (loop.c queue_cmp): the framework's QueueSort; pods it cannot tell
 * apart (created in the same second) by name here, where the loop keeps the order they arrived
 * in, which a listing cannot know. */
static int view_cmp(void *ud, const sched_pod *a, const sched_pod *b) {
    const view_ctx *c = ud;
    return sched_framework_queue_cmp(c->fw, c->s, a, b);
}

/* The PodScheduled=False condition of pod, NULL when none. */
static const json_t *unscheduled_condition(const json_t *pod) {
    size_t i;
    const json_t *c;
    json_array_foreach(tm_json_path(pod, "status.conditions"), i, c) {
        if (strcmp(tm_json_str(c, "type", ""), "PodScheduled") == 0 &&
            strcmp(tm_json_str(c, "status", ""), "False") == 0)
            return c;
    }
    return NULL;
}

/* The row of one pod (the first of a gang): everything but position, members and requests. */
static json_t *row_new(const json_t *pod, const sched_pod *sp, const char *gang, int64_t now_ms) {
    json_t *row =
        json_pack("{s:o, s:s, s:s, s:s, s:i, s:o, s:[], s:i}", "position", json_null(), "namespace",
                  sp->ns, "name", sp->name, "uid", sp->uid, "priority", (int)sp->priority, "gang",
                  gang ? json_string(gang) : json_null(), "members", "pods", 0);
    if (!row)
        return NULL;
    sched_explain_expected_start(row, pod, now_ms); /* the same reading as explain's */
    const json_t *gates = tm_json_path(pod, "spec.schedulingGates");
    json_t *names = json_array_size(gates) ? json_array() : json_null();
    size_t i;
    const json_t *g;
    json_array_foreach(gates, i, g) {
        json_array_append_new(names, json_string(tm_json_str(g, "name", "?")));
    }
    json_object_set_new(row, "gated", names);
    const json_t *cond = unscheduled_condition(pod);
    const char *reason = cond ? tm_json_str(cond, "reason", NULL) : NULL;
    const char *msg = cond ? tm_json_str(cond, "message", NULL) : NULL;
    json_object_set_new(row, "reason", reason ? json_string(reason) : json_null());
    json_object_set_new(row, "message", msg ? json_string(msg) : json_null());
    char why[512];
    if (json_array_size(names)) {
        size_t off = (size_t)snprintf(why, sizeof why, "gated:");
        json_array_foreach(names, i, g) {
            if (off < sizeof why)
                off += (size_t)snprintf(why + off, sizeof why - off, "%s %s", i ? "," : "",
                                        json_string_value(g));
        }
    } else if (msg && *msg) {
        /* a gang's message starts "gang KEY: ", which the GANG column already says */
        size_t gl = gang ? strlen(gang) : 0;
        const char *m = msg;
        if (gang && strncmp(m, "gang ", 5) == 0 && strncmp(m + 5, gang, gl) == 0 &&
            strncmp(m + 5 + gl, ": ", 2) == 0)
            m += 5 + gl + 2;
        sched_queue_view_why(m, SCHED_QUEUE_VIEW_WHY_MAX, why, sizeof why);
    } else {
        snprintf(why, sizeof why, "not tried yet");
    }
    json_object_set_new(row, "why", json_string(why));
    return row;
}

/* Adds sp to row: a member, its requests to the sums (extended resources by name). */
static void row_add(json_t *row, const sched_snapshot *s, const sched_pod *sp, int64_t *cpu,
                    int64_t *mem) {
    json_array_append_new(json_object_get(row, "members"), json_string(sp->name));
    json_object_set_new(row, "pods",
                        json_integer(json_integer_value(json_object_get(row, "pods")) + 1));
    cpu[0] += sp->requests.v[SCHED_RES_CPU];
    mem[0] += sp->requests.v[SCHED_RES_MEMORY];
    json_t *ext = json_object_get(json_object_get(row, "requests"), "extended");
    for (int k = SCHED_RES_FIRST_EXT; k < SCHED_RES_MAX; k++) {
        const char *name = sched_snapshot_resource_name(s, k);
        if (!name || sp->requests.v[k] <= 0)
            continue;
        json_int_t had = json_integer_value(json_object_get(ext, name));
        json_object_set_new(ext, name, json_integer(had + sp->requests.v[k]));
    }
}

/* Writes the requests and NODES text of a finished row. */
static void row_close(json_t *row, int64_t cpu, int64_t mem) {
    json_t *req = json_object_get(row, "requests");
    json_object_set_new(req, "cpuMilli", json_integer(cpu));
    json_object_set_new(req, "memoryBytes", json_integer(mem));
    char asks[256];
    sched_queue_view_asks((size_t)json_integer_value(json_object_get(row, "pods")), cpu, mem,
                          json_object_get(req, "extended"), asks, sizeof asks);
    json_object_set_new(row, "nodes", json_string(asks));
}

typedef struct row_acc {
    json_t *row;
    int64_t cpu, mem;
} row_acc;

/* Appends the rows of q's pods (in q's order) to rows: one per pod, or per gang when group. */
static int add_rows(json_t *rows, const sched_queue *q, sched_gang_registry *reg,
                    const sched_snapshot *s, const json_t *by_uid, const json_t *pods, bool group,
                    size_t *position, const char *only_ns, int64_t now_ms, tm_err *err) {
    size_t n = sched_queue_count(q, SCHED_Q_ACTIVE) + sched_queue_count(q, SCHED_Q_BACKOFF) +
               sched_queue_count(q, SCHED_Q_UNSCHEDULABLE);
    const sched_pod **order = malloc((n ? n : 1) * sizeof *order);
    row_acc *acc = calloc(n ? n : 1, sizeof *acc);
    json_t *gang_row = json_object(); /* gang key -> index into acc */
    size_t nacc = 0;
    int rc = -1;
    if (!order || !acc || !gang_row) {
        tm_err_set(err, "out of memory");
        goto out;
    }
    n = sched_queue_waiting(q, order, n);
    for (size_t i = 0; i < n; i++) {
        const sched_pod *sp = order[i];
        sched_gang *g = sched_gang_registry_of(reg, sp->uid);
        const json_t *pod =
            json_array_get(pods, (size_t)json_integer_value(json_object_get(by_uid, sp->uid)));
        row_acc *a = NULL;
        if (group && g && json_object_get(gang_row, g->key))
            a = &acc[json_integer_value(json_object_get(gang_row, g->key))];
        if (!a) {
            a = &acc[nacc];
            if (!(a->row = row_new(pod, sp, g ? g->key : NULL, now_ms)) ||
                json_object_set_new(a->row, "requests", json_pack("{s:{}}", "extended"))) {
                tm_err_set(err, "out of memory");
                goto out;
            }
            if (group) { /* waiting: a place in the queue */
                json_object_set_new(a->row, "position", json_integer((json_int_t)++ * position));
                if (g)
                    json_object_set_new(gang_row, g->key, json_integer((json_int_t)nacc));
            }
            nacc++;
        }
        row_add(a->row, s, sp, &a->cpu, &a->mem);
    }
    for (size_t i = 0; i < nacc; i++) {
        row_close(acc[i].row, acc[i].cpu, acc[i].mem);
        if (!only_ns || strcmp(tm_json_str(acc[i].row, "namespace", ""), only_ns) == 0)
            json_array_append(rows, acc[i].row);
    }
    rc = 0;
out:
    for (size_t i = 0; acc && i < nacc; i++)
        json_decref(acc[i].row);
    free(order);
    free(acc);
    json_decref(gang_row);
    return rc;
}

json_t *sched_queue_view_rows(sched_snapshot *s, const char *policy, const json_t *pods,
                              const char *scheduler_name, const char *const *namespaces,
                              const char *only_ns, const sched_keys *keys, int64_t now_ms,
                              tm_err *err) {
    /* the live loop's framework as far as the queue sort goes: the policy and the Gang plugin
     * over a registry of the listed gangs (loop.c, sched_loop_new) */
    sched_gang_registry *reg = sched_gang_registry_new();
    sched_framework *fw = reg ? sched_policy_new(policy, err) : NULL;
    view_ctx ctx = {fw, s};
    /* waiting pods in the live queue's sort; gated ones (out of the queue) in the same sort */
    sched_queue *q = sched_queue_new(view_cmp, &ctx, 1000, 10000);
    sched_queue *gated = sched_queue_new(view_cmp, &ctx, 1000, 10000);
    json_t *by_uid = json_object(), *rows = json_array(), *out = NULL;
    if (!reg || !q || !gated || !by_uid || !rows) {
        tm_err_set(err, "out of memory");
        goto done;
    }
    if (!fw || sched_gang_plugin_add(fw, reg, err) < 0)
        goto done;
    size_t i;
    const json_t *p;
    json_array_foreach(pods, i, p) {
        /* one queue serves every profile (keys->profiles, scheduler_name first) */
        const char *sn = tm_json_str(p, "spec.schedulerName", "");
        bool other = keys && sched_profile_index(keys->profiles, sn) > 0;
        if (!sched_queue_view_pending(p, other ? sn : scheduler_name, namespaces))
            continue;
        tm_err pe = {0};
        sched_pod *sp = sched_pod_from_json(s, p, keys, &pe);
        if (!sp) { /* a pod the scheduler cannot read is not in its queue either */
            continue;
        }
        json_object_set_new(by_uid, sp->uid, json_integer((json_int_t)i));
        sched_gang_ref ref;
        if (sched_gang_ref_from_pod_json(p, &ref, &pe) == 0 && ref.kind != SCHED_GANG_NONE) {
            /* first seen: the earliest member's creation (the live registry's first sight) */
            sched_gang *g = sched_gang_registry_set_member(reg, &ref, sp->uid, sp->name,
                                                           SCHED_GANG_POD_PENDING, sp->created_ms);
            if (g && sp->created_ms < g->first_seen_ms)
                g->first_seen_ms = sp->created_ms;
        }
        /* PreEnqueue's SchedulingGates check, as the live queue's gate hook runs it */
        sched_queue *to = sched_scheduling_gated(sp, NULL, 0) ? gated : q;
        if (sched_queue_add(to, sp, now_ms)) {
            tm_err_set(err, "out of memory");
            goto done;
        }
    }
    size_t position = 0;
    if (add_rows(rows, q, reg, s, by_uid, pods, true, &position, only_ns, now_ms, err) ||
        add_rows(rows, gated, reg, s, by_uid, pods, false, &position, only_ns, now_ms, err))
        goto done;
    out = json_incref(rows);
done:
    json_decref(rows);
    json_decref(by_uid);
    sched_queue_free(q);
    sched_queue_free(gated);
    sched_framework_free(fw);
    sched_gang_registry_free(reg);
    return out;
}

/* ---- text ---- */

/* A gang key without its namespace (the row's own): "podgroup/NS/NAME" -> "podgroup/NAME". */
static void gang_short(const char *key, char *buf, size_t cap) {
    const char *a = strchr(key, '/');
    const char *b = a ? strchr(a + 1, '/') : NULL;
    if (!b)
        snprintf(buf, cap, "%s", key);
    else
        snprintf(buf, cap, "%.*s%s", (int)(a - key), key, b);
}

enum { C_POS, C_NAME, C_PRIO, C_GANG, C_START, C_NODES, C_WHY, C_N };

static void cells(const json_t *row, char c[C_N][512]) {
    const json_t *pos = json_object_get(row, "position");
    if (json_is_integer(pos))
        snprintf(c[C_POS], 512, "%" JSON_INTEGER_FORMAT, json_integer_value(pos));
    else
        snprintf(c[C_POS], 512, "-");
    long long pods = tm_json_int(row, "pods", 1);
    snprintf(c[C_NAME], 512, "%s/%s%s", tm_json_str(row, "namespace", ""),
             tm_json_str(row, "name", ""), pods > 1 ? " +" : "");
    if (pods > 1) {
        size_t l = strlen(c[C_NAME]);
        snprintf(c[C_NAME] + l, 512 - l, "%lld", pods - 1);
    }
    snprintf(c[C_PRIO], 512, "%lld", tm_json_int(row, "priority", 0));
    const char *gang = tm_json_str(row, "gang", NULL);
    if (gang)
        gang_short(gang, c[C_GANG], 512);
    else
        snprintf(c[C_GANG], 512, "-");
    const json_t *es = json_object_get(row, "expectedStart");
    if (json_is_object(es)) {
        char when[64];
        sched_queue_view_when(tm_json_int(es, "inSeconds", 0), when, sizeof when);
        snprintf(c[C_START], 512, "%s (%s)", tm_json_str(es, "at", "?"), when);
    } else {
        snprintf(c[C_START], 512, "-");
    }
    snprintf(c[C_NODES], 512, "%s", tm_json_str(row, "nodes", ""));
    snprintf(c[C_WHY], 512, "%s", tm_json_str(row, "why", ""));
}

char *sched_queue_view_text(const json_t *rows) {
    static const char *const head[C_N] = {"POSITION",       "NAMESPACE/NAME", "PRIORITY", "GANG",
                                          "EXPECTED START", "NODES",          "WHY"};
    size_t w[C_N];
    for (int k = 0; k < C_N; k++)
        w[k] = strlen(head[k]);
    char(*c)[512] = malloc(C_N * sizeof *c);
    char *out = NULL;
    size_t len = 0;
    FILE *f = c ? open_memstream(&out, &len) : NULL;
    if (!f) {
        free(c);
        return NULL;
    }
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row) {
        cells(row, c);
        for (int k = 0; k < C_N; k++)
            if (strlen(c[k]) > w[k])
                w[k] = strlen(c[k]);
    }
    for (int k = 0; k < C_N - 1; k++)
        fprintf(f, "%-*s  ", (int)w[k], head[k]);
    fprintf(f, "%s\n", head[C_N - 1]);
    json_array_foreach(rows, i, row) {
        cells(row, c);
        for (int k = 0; k < C_N; k++)
            if (k < C_N - 1)
                fprintf(f, "%-*s  ", (int)w[k], c[k]);
            else
                fprintf(f, "%s\n", c[k]);
    }
    fclose(f);
    free(c);
    return out;
}
