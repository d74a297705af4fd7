/* cwl.c: the CWL v1.2 subset the planner reads (documented in docs/planner.md).
 *
 * A `Workflow` whose `steps` run `CommandLineTool`s (inline, or `#id` references into a
 * `$graph` document). A step depends on the steps named in its `in` sources ("LES/fields").
 * Each tool gives ResourceRequirement coresMin/ramMin (per pod; CWL's defaults 1 core and
 * 256 MiB when absent), a ToolTimeLimit (the walltime, required) and optionally the hint
 * `tarema:Gang` with `pods: N` (the gang size, default 1; the `tarema` prefix must be declared in
 * `$namespaces`). CWL is implementation-agnostic, so, as WARP's configuration file does, a
 * deployment file maps every tool to an image:
 *     tools:
 *       les: {image: les:1.0}
 * Anything else CWL can say (scatter, when, subworkflows, expressions, ExpressionTool, other
 * requirements) is refused with an error naming the feature rather than planned wrongly. */
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "planner/workflow.h"

#define CWL_MIB (1024LL * 1024LL)

/* "#les" and "les" name the same thing; file-relative ids "main.cwl#les" keep the fragment. */
static const char *bare_id(const char *id) {
    const char *h = strrchr(id, '#');
    return h ? h + 1 : id;
}

typedef struct cwl_ctx {
    const json_t *root;   /* the document: $namespaces and $graph */
    const json_t *wf;     /* the Workflow object: its inputs */
    const json_t *graph;  /* $graph array or NULL */
    const json_t *deploy; /* deployment file root */
    const char *source, *deploy_source;
    tm_err *err;
    const char *wf_id; /* the Workflow's bare id: packed sources read "#main/LES/fields" */
} cwl_ctx;

static int namespace_declared(const cwl_ctx *c, const char *prefix) {
    json_t *ns = json_object_get(c->root, "$namespaces");
    return json_is_object(ns) && json_object_get(ns, prefix);
}

/* Calls fn for every entry of a requirements/hints value: a list of {class: ...} or a mapping
 * {Class: {...}}. */
typedef int (*req_fn)(cwl_ctx *c, const char *cls, const json_t *body, void *arg, const char *what);
static int each_requirement(cwl_ctx *c, const json_t *v, req_fn fn, void *arg, const char *what) {
    if (!v)
        return 0;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *e = json_array_get(v, i);
            const char *cls = tm_json_str(e, "class", NULL);
            if (!cls)
                return tm_err_set(c->err, "%s[%zu]: each entry needs a class", what, i);
            if (fn(c, cls, e, arg, what) < 0)
                return -1;
        }
        return 0;
    }
    if (json_is_object(v)) {
        const char *cls;
        json_t *body;
        json_object_foreach((json_t *)v, cls, body) {
            if (fn(c, cls, body, arg, what) < 0)
                return -1;
        }
        return 0;
    }
    return tm_err_set(c->err, "%s: expected a list of {class: ...} or a mapping", what);
}

static int number_field(cwl_ctx *c, const json_t *body, const char *key, double *out,
                        const char *what) {
    json_t *v = json_object_get(body, key);
    if (!v)
        return 0;
    if (json_is_string(v) && strchr(json_string_value(v), '$'))
        return tm_err_set(c->err, "%s: %s: CWL expressions ('%s') are not supported; give a number",
                          what, key, json_string_value(v));
    if (!json_is_number(v) || json_number_value(v) <= 0)
        return tm_err_set(c->err, "%s: %s must be a number > 0", what, key);
    *out = json_number_value(v);
    return 1;
}

typedef struct tool_facts {
    double cores, ram_mib;
    long long timelimit;
    long long pods;
} tool_facts;

static int tool_requirement(cwl_ctx *c, const char *cls, const json_t *body, void *arg,
                            const char *what) {
    tool_facts *f = arg;
    char w[512];
    snprintf(w, sizeof w, "%s: %s", what, cls);
    if (strcmp(cls, "ResourceRequirement") == 0) {
        static const char *const keys[] = {"class",  "coresMin", "coresMax",
                                           "ramMin", "ramMax",   NULL};
        if (json_is_object(body) && tm_json_check_keys(body, keys, w, c->err) < 0)
            return tm_err_wrap(c->err, "unsupported CWL feature");
        if (number_field(c, body, "coresMin", &f->cores, w) < 0 ||
            number_field(c, body, "ramMin", &f->ram_mib, w) < 0)
            return -1;
        return 0;
    }
    if (strcmp(cls, "ToolTimeLimit") == 0) {
        json_t *v = json_object_get(body, "timelimit");
        if (json_is_string(v) && strchr(json_string_value(v), '$'))
            return tm_err_set(c->err, "%s: timelimit: CWL expressions are not supported", w);
        if (!json_is_integer(v) || json_integer_value(v) <= 0)
            return tm_err_set(c->err,
                              "%s: timelimit must be a whole number of seconds > 0 (the step's "
                              "walltime; 0, no limit, cannot be planned)",
                              w);
        f->timelimit = json_integer_value(v);
        return 0;
    }
    const char *colon = strchr(cls, ':');
    if (colon && strcmp(colon + 1, "Gang") == 0 && strncmp(cls, "tarema", 6) == 0 &&
        colon == cls + 6) {
        if (!namespace_declared(c, "tarema"))
            return tm_err_set(c->err,
                              "%s: the prefix 'tarema' is not declared: add $namespaces: "
                              "{tarema: \"https://tarema.io/cwl#\"}",
                              w);
        json_t *p = json_object_get(body, "pods");
        if (!json_is_integer(p) || json_integer_value(p) < 1 || json_integer_value(p) > 100000)
            return tm_err_set(c->err, "%s: pods must be an integer from 1 to 100000", w);
        f->pods = json_integer_value(p);
        return 0;
    }
    /* Say nothing about these: the deployment file decides the image, and planning does not
     * depend on network access or reuse. */
    if (strcmp(cls, "DockerRequirement") == 0 || strcmp(cls, "NetworkAccess") == 0 ||
        strcmp(cls, "WorkReuse") == 0)
        return 0;
    return tm_err_set(c->err, "%s: unsupported CWL feature '%s'", what, cls);
}

/* The step's tool: an inline mapping, or "#id" in $graph. */
static const json_t *resolve_run(cwl_ctx *c, const json_t *run, const char *what) {
    if (json_is_object(run))
        return run;
    if (!json_is_string(run)) {
        tm_err_set(c->err, "%s: run must be an inline tool or a '#id' in $graph", what);
        return NULL;
    }
    const char *ref = json_string_value(run);
    if (ref[0] == '#' && c->graph) {
        for (size_t i = 0; i < json_array_size(c->graph); i++) {
            const char *id = tm_json_str(json_array_get(c->graph, i), "id", NULL);
            if (id && strcmp(bare_id(id), ref + 1) == 0)
                return json_array_get(c->graph, i);
        }
        tm_err_set(c->err, "%s: run: '%s' is not in $graph", what, ref);
        return NULL;
    }
    tm_err_set(c->err,
               "%s: run: '%s': unsupported CWL feature: tools in separate files (inline the "
               "tool or put it in $graph)",
               what, ref);
    return NULL;
}

static int parse_tool(cwl_ctx *c, const json_t *tool, const char *step_name, pl_step *s,
                      const char *what) {
    static const char *const keys[] = {"class",
                                       "id",
                                       "label",
                                       "doc",
                                       "cwlVersion",
                                       "inputs",
                                       "outputs",
                                       "requirements",
                                       "hints",
                                       "baseCommand",
                                       "stdin",
                                       "stdout",
                                       "stderr",
                                       "successCodes",
                                       "temporaryFailCodes",
                                       "arguments",
                                       "permanentFailCodes",
                                       "$namespaces",
                                       NULL};
    const char *cls = tm_json_str(tool, "class", "");
    if (strcmp(cls, "CommandLineTool") != 0) {
        if (strcmp(cls, "Workflow") == 0)
            return tm_err_set(c->err,
                              "%s: unsupported CWL feature: a nested Workflow "
                              "(SubworkflowFeatureRequirement)",
                              what);
        return tm_err_set(c->err, "%s: unsupported CWL feature: class '%s' (only CommandLineTool)",
                          what, cls);
    }
    char w[512];
    snprintf(w, sizeof w, "%s: tool", what);
    if (tm_json_check_keys(tool, keys, w, c->err) < 0)
        return tm_err_wrap(c->err, "unsupported CWL feature");
    tool_facts f = {1, 256, 0, 1}; /* CWL v1.2 defaults: coresMin 1, ramMin 256 MiB */
    snprintf(w, sizeof w, "%s: requirements", what);
    if (each_requirement(c, json_object_get(tool, "requirements"), tool_requirement, &f, w) < 0)
        return -1;
    snprintf(w, sizeof w, "%s: hints", what);
    if (each_requirement(c, json_object_get(tool, "hints"), tool_requirement, &f, w) < 0)
        return -1;
    if (f.timelimit <= 0)
        return tm_err_set(c->err, "%s: ToolTimeLimit is required (the step's walltime in seconds)",
                          what);
    s->pods = (int)f.pods;
    s->cpu_milli = (int64_t)(f.cores * 1000 + 0.999);
    s->mem_bytes = (int64_t)(f.ram_mib * CWL_MIB + 0.999);
    s->duration_s = f.timelimit;
    /* The tool's name in the deployment file: its id, else the step's name. */
    const char *tid = tm_json_str(tool, "id", NULL);
    const char *tname = tid ? bare_id(tid) : step_name;
    json_t *tools = json_object_get(c->deploy, "tools");
    json_t *entry = json_object_get(tools, tname);
    if (!entry)
        return tm_err_set(c->err,
                          "%s: no entry for tool '%s' (step %s) under tools:", c->deploy_source,
                          tname, step_name);
    const char *img = tm_json_str(entry, "image", NULL);
    if (!img || !*img || strlen(img) >= sizeof s->image)
        return tm_err_set(c->err, "%s: tools.%s.image must be a non-empty string", c->deploy_source,
                          tname);
    snprintf(s->image, sizeof s->image, "%s", img);
    return 0;
}

/* Adds to names the step named by a source "STEP/out"; workflow inputs add nothing. */
static int add_source(cwl_ctx *c, const char *src, const json_t *steps_ids, char **names, int *n,
                      int cap, const char *what) {
    const char *s = src[0] == '#' ? src + 1 : src;
    size_t idl = c->wf_id ? strlen(c->wf_id) : 0;
    if (src[0] == '#' && idl && strncmp(s, c->wf_id, idl) == 0 && s[idl] == '/')
        s += idl + 1;
    const char *slash = strchr(s, '/');
    if (!slash) {
        json_t *inputs = json_object_get(c->wf, "inputs");
        int known = 0;
        if (json_is_object(inputs))
            known = json_object_get(inputs, s) != NULL;
        else
            for (size_t i = 0; json_is_array(inputs) && i < json_array_size(inputs); i++) {
                const char *id = tm_json_str(json_array_get(inputs, i), "id", "");
                known |= strcmp(bare_id(id), s) == 0;
            }
        if (!known)
            return tm_err_set(c->err, "%s: source '%s' is neither a workflow input nor STEP/output",
                              what, src);
        return 0;
    }
    char step[PL_NAME_MAX];
    snprintf(step, sizeof step, "%.*s", (int)(slash - s), s);
    if (!json_object_get(steps_ids, step))
        return tm_err_set(c->err, "%s: source '%s' names unknown step '%s'", what, src, step);
    for (int k = 0; k < *n; k++)
        if (strcmp(names[k], step) == 0)
            return 0;
    if (*n >= cap)
        return tm_err_set(c->err, "%s: too many sources", what);
    if (!(names[*n] = strdup(step)))
        return tm_err_set(c->err, "%s: out of memory", what);
    (*n)++;
    return 0;
}

static int step_inputs(cwl_ctx *c, const json_t *in, const json_t *ids, char **names, int *n,
                       int cap, const char *what) {
    if (!in)
        return 0;
    if (!json_is_object(in) && !json_is_array(in))
        return tm_err_set(c->err, "%s: in must be a mapping or a list", what);
    size_t cnt = json_is_object(in) ? json_object_size(in) : json_array_size(in);
    void *it = json_is_object(in) ? json_object_iter((json_t *)in) : NULL;
    for (size_t i = 0; i < cnt; i++) {
        json_t *v = it ? json_object_iter_value(it) : json_array_get(in, i);
        if (it)
            it = json_object_iter_next((json_t *)in, it);
        json_t *src = json_is_object(v) ? json_object_get(v, "source") : v;
        if (json_is_object(v)) {
            static const char *const keys[] = {"id", "source", "default", "linkMerge", NULL};
            if (tm_json_check_keys(v, keys, what, c->err) < 0)
                return tm_err_wrap(c->err, "unsupported CWL feature in a step input");
        }
        if (!src)
            continue; /* a default only */
        if (json_is_string(src)) {
            if (add_source(c, json_string_value(src), ids, names, n, cap, what) < 0)
                return -1;
        } else if (json_is_array(src)) {
            for (size_t k = 0; k < json_array_size(src); k++) {
                json_t *e = json_array_get(src, k);
                if (!json_is_string(e))
                    return tm_err_set(c->err, "%s: a source must be a string", what);
                if (add_source(c, json_string_value(e), ids, names, n, cap, what) < 0)
                    return -1;
            }
        } else {
            return tm_err_set(c->err, "%s: a source must be a string or a list", what);
        }
    }
    return 0;
}

static int workflow_requirement(cwl_ctx *c, const char *cls, const json_t *body, void *arg,
                                const char *what) {
    (void)body;
    (void)arg;
    return tm_err_set(c->err, "%s: unsupported CWL feature '%s'", what, cls);
}

pl_workflow *pl_workflow_from_cwl(const json_t *root, const char *source, const json_t *deploy,
                                  const char *deploy_source, tm_err *err) {
    cwl_ctx c = {root, root, NULL, deploy, source, deploy_source, err, NULL};
    const json_t *wfj = root;
    if (!json_is_object(root)) {
        tm_err_set(err, "%s: expected a CWL document (a mapping)", source);
        return NULL;
    }
    if (!json_is_object(deploy) || !json_is_object(json_object_get(deploy, "tools"))) {
        tm_err_set(err, "%s: a deployment file with tools: {NAME: {image: ...}} is required",
                   deploy_source ? deploy_source : "--deployment");
        return NULL;
    }
    const char *ver = tm_json_str(root, "cwlVersion", "");
    if (strcmp(ver, "v1.2") != 0) {
        tm_err_set(err, "%s: cwlVersion '%s': only v1.2 is supported", source, ver);
        return NULL;
    }
    c.graph = json_object_get(root, "$graph");
    if (c.graph) {
        wfj = NULL;
        for (size_t i = 0; json_is_array(c.graph) && i < json_array_size(c.graph); i++) {
            json_t *e = json_array_get(c.graph, i);
            if (strcmp(tm_json_str(e, "class", ""), "Workflow") != 0)
                continue;
            if (wfj && strcmp(bare_id(tm_json_str(e, "id", "")), "main") != 0)
                continue;
            wfj = e;
        }
        if (!wfj) {
            tm_err_set(err, "%s: $graph holds no Workflow", source);
            return NULL;
        }
    }
    if (tm_json_str(wfj, "id", NULL))
        c.wf_id = bare_id(tm_json_str(wfj, "id", NULL));
    if (strcmp(tm_json_str(wfj, "class", ""), "Workflow") != 0) {
        tm_err_set(err, "%s: class must be Workflow (a single tool is not a workflow)", source);
        return NULL;
    }
    static const char *const wkeys[] = {
        "cwlVersion", "class",       "id",       "label",  "doc",          "inputs", "outputs",
        "steps",      "$namespaces", "$schemas", "$graph", "requirements", "hints",  NULL};
    if (tm_json_check_keys(wfj, wkeys, source, err) < 0) {
        tm_err_wrap(err, "unsupported CWL feature");
        return NULL;
    }
    char w[PL_NAME_MAX + 300];
    snprintf(w, sizeof w, "%s: Workflow requirements", source);
    if (each_requirement(&c, json_object_get(wfj, "requirements"), workflow_requirement, NULL, w) <
        0)
        return NULL;
    snprintf(w, sizeof w, "%s: Workflow hints", source);
    if (each_requirement(&c, json_object_get(wfj, "hints"), workflow_requirement, NULL, w) < 0)
        return NULL;
    c.wf = wfj;
    /* Steps as a list with ids or a mapping id -> step; ids collects the names. */
    json_t *steps = json_object_get(wfj, "steps");
    json_t *ids = json_object();
    size_t n = json_is_array(steps)    ? json_array_size(steps)
               : json_is_object(steps) ? json_object_size(steps)
                                       : 0;
    if (n == 0 || n > 100000) {
        tm_err_set(err, "%s: steps must be a non-empty list or mapping", source);
        json_decref(ids);
        return NULL;
    }
    pl_workflow *wf = calloc(1, sizeof *wf);
    char ***names = calloc(n, sizeof *names);
    const json_t **bodies = calloc(n, sizeof *bodies);
    if (!wf || !names || !bodies || !(wf->steps = calloc(n, sizeof *wf->steps))) {
        tm_err_set(err, "%s: out of memory", source);
        goto fail;
    }
    wf->nsteps = (int)n;
    snprintf(wf->name, sizeof wf->name, "%s",
             bare_id(tm_json_str(wfj, "id", tm_json_str(wfj, "label", "workflow"))));
    void *it = json_is_object(steps) ? json_object_iter(steps) : NULL;
    for (size_t i = 0; i < n; i++) {
        const char *id;
        if (it) {
            id = json_object_iter_key(it);
            bodies[i] = json_object_iter_value(it);
            it = json_object_iter_next(steps, it);
        } else {
            bodies[i] = json_array_get(steps, i);
            id = tm_json_str(bodies[i], "id", NULL);
            if (!id) {
                tm_err_set(err, "%s: steps[%zu]: id is required", source, i);
                goto fail;
            }
        }
        id = bare_id(id);
        if (strrchr(id, '/')) /* packed: "#main/LES" */
            id = strrchr(id, '/') + 1;
        if (!*id || strlen(id) >= PL_NAME_MAX || !json_is_object(bodies[i])) {
            tm_err_set(err, "%s: steps[%zu]: needs an id of 1 to %d characters and a mapping",
                       source, i, PL_NAME_MAX - 1);
            goto fail;
        }
        snprintf(wf->steps[i].name, PL_NAME_MAX, "%s", id);
        json_object_set_new(ids, id, json_true());
    }
    for (size_t i = 0; i < n; i++) {
        pl_step *s = &wf->steps[i];
        snprintf(w, sizeof w, "%s: step '%s'", source, s->name);
        static const char *const skeys[] = {"id",  "in",           "out",   "run", "label",
                                            "doc", "requirements", "hints", NULL};
        static const char *const features[] = {"scatter", "scatterMethod", "when", NULL};
        for (const char *const *f = features; *f; f++)
            if (json_object_get(bodies[i], *f)) {
                tm_err_set(err, "%s: unsupported CWL feature '%s'", w, *f);
                goto fail;
            }
        if (tm_json_check_keys(bodies[i], skeys, w, err) < 0) {
            tm_err_wrap(err, "unsupported CWL feature");
            goto fail;
        }
        if (json_object_get(bodies[i], "requirements") || json_object_get(bodies[i], "hints")) {
            tm_err_set(err,
                       "%s: unsupported CWL feature: requirements or hints on a step (put them "
                       "on its tool)",
                       w);
            goto fail;
        }
        const json_t *tool = resolve_run(&c, json_object_get(bodies[i], "run"), w);
        if (!tool || parse_tool(&c, tool, s->name, s, w) < 0)
            goto fail;
        json_t *in = json_object_get(bodies[i], "in");
        size_t cap = in ? (json_is_object(in) ? json_object_size(in) : json_array_size(in)) : 0;
        int cnt = 0;
        cap = cap * 4 + 4; /* a source list per input */
        if (!(names[i] = calloc(cap, sizeof *names[i]))) {
            tm_err_set(err, "%s: out of memory", w);
            goto fail;
        }
        int rc = step_inputs(&c, in, ids, names[i], &cnt, (int)cap, w);
        s->nafter = cnt;
        if (rc < 0)
            goto fail;
    }
    free(bodies);
    json_decref(ids);
    if (pl_workflow_finish(wf, names, source, err) < 0) {
        pl_workflow_free(wf);
        return NULL;
    }
    return wf;
fail:
    if (names && wf && wf->steps)
        for (size_t i = 0; i < n; i++) {
            for (int k = 0; names[i] && k < wf->steps[i].nafter; k++)
                free(names[i][k]);
            free(names[i]);
        }
    free(names);
    free(bodies);
    json_decref(ids);
    pl_workflow_free(wf);
    return NULL;
}
