/* workflow.c: the native workflow YAML and the checks every workflow passes (workflow.h). */
#include "planner/workflow.h"

#include "planner/modes.h"

#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "planner/units.h"

int pl_workflow_find(const pl_workflow *wf, const char *name) {
    for (int i = 0; i < wf->nsteps; i++)
        if (strcmp(wf->steps[i].name, name) == 0)
            return i;
    return -1;
}

void pl_workflow_free(pl_workflow *wf) {
    if (!wf)
        return;
    for (int i = 0; i < wf->nsteps; i++)
        free(wf->steps[i].after);
    free(wf->steps);
    free(wf->order);
    free(wf);
}

int pl_is_cwl(const json_t *root) {
    return json_is_object(root) &&
           (json_object_get(root, "cwlVersion") || json_object_get(root, "$graph"));
}

static void free_names(pl_workflow *wf, char ***names) {
    if (!names)
        return;
    for (int i = 0; i < wf->nsteps; i++) {
        for (int k = 0; names[i] && k < wf->steps[i].nafter; k++)
            free(names[i][k]);
        free(names[i]);
    }
    free(names);
}

/* Depth-first search for a cycle; on finding one, writes "A -> B -> A" into msg. */
static int find_cycle(const pl_workflow *wf, int v, int *state, int *stack, int depth, char *msg,
                      size_t size) {
    state[v] = 1;
    stack[depth] = v;
    for (int k = 0; k < wf->steps[v].nafter; k++) {
        int u = wf->steps[v].after[k];
        if (state[u] == 1) {
            size_t len = 0;
            int from = depth;
            while (from > 0 && stack[from] != u)
                from--;
            /* stack[from..depth] each waits for the next via after; print in run order */
            for (int j = depth; j >= from && len < size; j--)
                len += (size_t)snprintf(msg + len, size - len, "%s -> ", wf->steps[stack[j]].name);
            if (len < size)
                snprintf(msg + len, size - len, "%s", wf->steps[v].name);
            return 1;
        }
        if (state[u] == 0 && find_cycle(wf, u, state, stack, depth + 1, msg, size))
            return 1;
    }
    state[v] = 2;
    return 0;
}

int pl_workflow_finish(pl_workflow *wf, char ***after_names, const char *source, tm_err *err) {
    int rc = -1;
    int *state = NULL, *stack = NULL, *indeg = NULL;
    if (wf->nsteps == 0) {
        tm_err_set(err, "%s: the workflow has no steps", source);
        goto out;
    }
    for (int i = 0; i < wf->nsteps; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(wf->steps[i].name, wf->steps[j].name) == 0) {
                tm_err_set(err, "%s: step '%s' is defined twice", source, wf->steps[i].name);
                goto out;
            }
    for (int i = 0; i < wf->nsteps; i++) {
        pl_step *s = &wf->steps[i];
        if (s->nafter && !(s->after = calloc((size_t)s->nafter, sizeof *s->after))) {
            tm_err_set(err, "%s: out of memory", source);
            goto out;
        }
        for (int k = 0; k < s->nafter; k++) {
            int j = pl_workflow_find(wf, after_names[i][k]);
            if (j < 0) {
                tm_err_set(err, "%s: step '%s': after: unknown step '%s'", source, s->name,
                           after_names[i][k]);
                goto out;
            }
            if (j == i) {
                tm_err_set(err, "%s: step '%s': after: a step cannot wait for itself", source,
                           s->name);
                goto out;
            }
            s->after[k] = j;
        }
    }
    size_t n = wf->nsteps > 0 ? (size_t)wf->nsteps : 1;
    state = calloc(n, sizeof *state);
    stack = calloc(n + 1, sizeof *stack);
    indeg = calloc(n, sizeof *indeg);
    wf->order = calloc(n, sizeof *wf->order);
    if (!state || !stack || !indeg || !wf->order) {
        tm_err_set(err, "%s: out of memory", source);
        goto out;
    }
    for (int i = 0; i < wf->nsteps; i++)
        if (state[i] == 0) {
            char msg[512] = "";
            if (find_cycle(wf, i, state, stack, 0, msg, sizeof msg)) {
                tm_err_set(err, "%s: the steps' dependencies form a cycle: %s", source, msg);
                goto out;
            }
        }
    /* Kahn's algorithm in input order: the order is stable for equal inputs. */
    for (int i = 0; i < wf->nsteps; i++)
        indeg[i] = wf->steps[i].nafter;
    int done = 0;
    while (done < wf->nsteps) {
        for (int i = 0; i < wf->nsteps; i++) {
            if (indeg[i] != 0)
                continue;
            indeg[i] = -1;
            wf->order[done++] = i;
            for (int j = 0; j < wf->nsteps; j++)
                for (int k = 0; k < wf->steps[j].nafter; k++)
                    if (wf->steps[j].after[k] == i)
                        indeg[j]--;
        }
    }
    rc = 0;
out:
    free_names(wf, after_names);
    free(state);
    free(stack);
    free(indeg);
    return rc;
}

static int copy_str(char *dst, size_t size, const json_t *v, const char *what, tm_err *err) {
    if (!json_is_string(v) || !*json_string_value(v))
        return tm_err_set(err, "%s: expected a non-empty string", what);
    if (strlen(json_string_value(v)) >= size)
        return tm_err_set(err, "%s: longer than %zu characters", what, size - 1);
    snprintf(dst, size, "%s", json_string_value(v));
    return 0;
}

/* durations: {GROUP: D, ...}: the step's walltime on those node groups (duration: is the
 * walltime on every other group). Group ids as the scheduler keeps them (1-15 characters, at
 * most PL_GROUPS_MAX); whether the cluster has them is checked against it
 * (pl_check_step_groups). */
static int parse_group_durations(const json_t *ds, pl_step *s, int has_task, const char *what,
                                 tm_err *err) {
    if (has_task)
        return tm_err_set(err,
                          "%s: durations: give it with duration (the walltime on the other "
                          "groups), not with task (its groups' runtimes come from the "
                          "TaskProfile)",
                          what);
    if (!json_is_object(ds) || json_object_size(ds) == 0)
        return tm_err_set(err,
                          "%s: durations must be a mapping of node groups to walltimes (e.g. "
                          "{c2: 10m})",
                          what);
    if (json_object_size(ds) > PL_GROUPS_MAX)
        return tm_err_set(err, "%s: durations: more than %d node groups", what, PL_GROUPS_MAX);
    const char *g;
    json_t *v;
    json_object_foreach((json_t *)ds, g, v) {
        if (!*g || strlen(g) >= sizeof s->group_s[0].group)
            return tm_err_set(err, "%s: durations: node group '%s' must be 1 to %zu characters",
                              what, g, sizeof s->group_s[0].group - 1);
        char gwhat[PL_NAME_MAX + 400];
        snprintf(gwhat, sizeof gwhat, "%s: durations.%s", what, g);
        pl_group_time *gt = &s->group_s[s->ngroup_s];
        if (pl_json_duration(v, gwhat, &gt->seconds, err) < 0)
            return -1;
        if (gt->seconds <= 0)
            return tm_err_set(err, "%s must be > 0", gwhat);
        snprintf(gt->group, sizeof gt->group, "%s", g);
        s->ngroup_s++;
    }
    s->group_s_given = 1;
    return 0;
}

static int parse_step(const json_t *o, pl_step *s, char ***names, int idx, const char *source,
                      tm_err *err) {
    static const char *const keys[] = {"name",      "pods",        "requests", "duration",
                                       "durations", "task",        "after",    "image",
                                       "command",   "annotations", "mode",     NULL};
    char what[PL_NAME_MAX + 300];
    snprintf(what, sizeof what, "%s: steps[%d]", source, idx);
    if (!json_is_object(o))
        return tm_err_set(err, "%s: expected a mapping", what);
    if (copy_str(s->name, sizeof s->name, json_object_get(o, "name"), what, err) < 0)
        return tm_err_wrap(err, "name");
    snprintf(what, sizeof what, "%s: step '%s'", source, s->name);
    if (tm_json_check_keys(o, keys, what, err) < 0)
        return -1;
    pl_mode mode; /* the controller reads it from the Workflow; here it is only checked */
    json_t *mj = json_object_get(o, "mode");
    if (mj && (!json_is_string(mj) || pl_mode_parse(json_string_value(mj), &mode) < 0))
        return tm_err_set(err, "%s: mode must be reserve, proactive or on-completion", what);
    json_t *pods = json_object_get(o, "pods");
    s->pods = 1;
    if (pods) {
        if (!json_is_integer(pods) || json_integer_value(pods) < 1 ||
            json_integer_value(pods) > 100000)
            return tm_err_set(err, "%s: pods must be an integer from 1 to 100000", what);
        s->pods = (int)json_integer_value(pods);
    }
    json_t *req = json_object_get(o, "requests");
    static const char *const rkeys[] = {"cpu", "memory", NULL};
    char rwhat[sizeof what + 32];
    snprintf(rwhat, sizeof rwhat, "%s: requests", what);
    if (!req)
        return tm_err_set(err, "%s: requests {cpu, memory} per pod are required", what);
    if (tm_json_check_keys(req, rkeys, rwhat, err) < 0)
        return -1;
    snprintf(rwhat, sizeof rwhat, "%s: requests.cpu", what);
    if (pl_json_cpu_milli(json_object_get(req, "cpu"), rwhat, &s->cpu_milli, err) < 0)
        return -1;
    snprintf(rwhat, sizeof rwhat, "%s: requests.memory", what);
    if (pl_json_bytes(json_object_get(req, "memory"), rwhat, 0, &s->mem_bytes, err) < 0)
        return -1;
    json_t *task = json_object_get(o, "task"), *d = json_object_get(o, "duration");
    if (task && d)
        return tm_err_set(err, "%s: give either duration or task, not both", what);
    if (task) {
        /* predicted later (pl_predict_durations); pl_problem_init refuses it unpredicted */
        const char *t = json_string_value(task);
        if (!t || !strchr(t, '/') || t[0] == '/' || !strchr(t, '/')[1])
            return tm_err_set(err, "%s: task must be WORKFLOW/PROCESS (e.g. chipseq/BWA_MEM)",
                              what);
        if (copy_str(s->task, sizeof s->task, task, what, err) < 0)
            return tm_err_wrap(err, "task");
    } else {
        if (!d)
            return tm_err_set(err, "%s: duration is required (the step's walltime, e.g. 15m)",
                              what);
        snprintf(rwhat, sizeof rwhat, "%s: duration", what);
        if (pl_json_duration(d, rwhat, &s->duration_s, err) < 0)
            return -1;
        if (s->duration_s <= 0)
            return tm_err_set(err, "%s: duration must be > 0", what);
    }
    json_t *ds = json_object_get(o, "durations");
    if (ds && parse_group_durations(ds, s, task != NULL, what, err) < 0)
        return -1;
    json_t *ann = json_object_get(o, "annotations");
    if (ann) {
        const char *k;
        json_t *v;
        if (!json_is_object(ann))
            return tm_err_set(err, "%s: annotations must be a mapping of strings", what);
        json_object_foreach((json_t *)ann, k, v) {
            if (!json_is_string(v))
                return tm_err_set(err, "%s: annotations.%s must be a string", what, k);
        }
    }
    json_t *img = json_object_get(o, "image");
    if (img && copy_str(s->image, sizeof s->image, img, what, err) < 0)
        return tm_err_wrap(err, "image");
    json_t *cmd = json_object_get(o, "command");
    if (!img && !cmd)
        return tm_err_set(err, "%s: give an image (or a command)", what);
    if (cmd && !json_is_array(cmd) && !json_is_string(cmd))
        return tm_err_set(err, "%s: command must be a string or a list", what);
    json_t *after = json_object_get(o, "after");
    if (after) {
        if (!json_is_array(after))
            return tm_err_set(err, "%s: after must be a list of step names", what);
        size_t na = json_array_size(after);
        if (na && !(names[idx] = calloc(na, sizeof *names[idx])))
            return tm_err_set(err, "%s: out of memory", what);
        for (size_t k = 0; k < na; k++) {
            json_t *a = json_array_get(after, k);
            if (!json_is_string(a))
                return tm_err_set(err, "%s: after[%zu] must be a step name", what, k);
            if (!(names[idx][k] = strdup(json_string_value(a))))
                return tm_err_set(err, "%s: out of memory", what);
            s->nafter = (int)k + 1;
        }
    }
    return 0;
}

pl_workflow *pl_workflow_from_native(const json_t *root, const char *source, tm_err *err) {
    static const char *const keys[] = {"name", "steps", NULL};
    if (!json_is_object(root)) {
        tm_err_set(err, "%s: expected a mapping with name and steps", source);
        return NULL;
    }
    if (tm_json_check_keys(root, keys, source, err) < 0)
        return NULL;
    json_t *steps = json_object_get(root, "steps");
    if (!json_is_array(steps) || json_array_size(steps) == 0) {
        tm_err_set(err, "%s: steps must be a non-empty list", source);
        return NULL;
    }
    if (json_array_size(steps) > 100000) {
        tm_err_set(err, "%s: more than 100000 steps", source);
        return NULL;
    }
    pl_workflow *wf = calloc(1, sizeof *wf);
    size_t n = json_array_size(steps);
    char ***names = calloc(n, sizeof *names);
    if (!wf || !names || !(wf->steps = calloc(n, sizeof *wf->steps))) {
        free(names);
        free(wf);
        tm_err_set(err, "%s: out of memory", source);
        return NULL;
    }
    wf->nsteps = (int)n;
    const char *name = tm_json_str(root, "name", NULL);
    if (!name || !*name || strlen(name) >= sizeof wf->name) {
        tm_err_set(err, "%s: name must be a string of 1 to %zu characters", source,
                   sizeof wf->name - 1);
        goto fail;
    }
    snprintf(wf->name, sizeof wf->name, "%s", name);
    for (size_t i = 0; i < n; i++)
        if (parse_step(json_array_get(steps, i), &wf->steps[i], names, (int)i, source, err) < 0)
            goto fail;
    if (pl_workflow_finish(wf, names, source, err) < 0) {
        names = NULL; /* freed by finish */
        goto fail;
    }
    return wf;
fail:
    if (names) {
        for (size_t i = 0; i < n; i++) {
            for (int k = 0; names[i] && k < wf->steps[i].nafter; k++)
                free(names[i][k]);
            free(names[i]);
        }
        free(names);
    }
    pl_workflow_free(wf);
    return NULL;
}
