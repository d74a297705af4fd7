/* planner_parse_test.c: the planner's inputs: the native workflow YAML, the CWL v1.2 subset
 * with its deployment file, the cluster (nodes TYPE-N from 1) and busy lists, durations; every
 * bad input is an error naming the step or field. Fixtures in tests/fixtures/planner/; run
 * from the repository root or set REPO_ROOT. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/yamljson.h"
#include "planner/cluster.h"
#include "planner/kobj.h"
#include "planner/predict.h"
#include "planner/problem.h"
#include "planner/units.h"
#include "planner/workflow.h"

static const char *fixture(const char *name, char *buf, size_t size) {
    const char *root = getenv("REPO_ROOT");
    snprintf(buf, size, "%s/tests/fixtures/planner/%s", root ? root : ".", name);
    return buf;
}

static pl_workflow *native(const char *yaml, tm_err *err) {
    json_t *j = tm_yaml_parse(yaml, strlen(yaml), "wf.yaml", err);
    pl_workflow *wf = j ? pl_workflow_from_native(j, "wf.yaml", err) : NULL;
    json_decref(j);
    return wf;
}

static const char *deploy_yaml = "tools: {les: {image: les:1.0}, hpda: {image: hpda:1.0}}\n";

static pl_workflow *cwl(const char *yaml, const char *deploy, tm_err *err) {
    json_t *j = tm_yaml_parse(yaml, strlen(yaml), "wf.cwl", err);
    json_t *d = j ? tm_yaml_parse(deploy, strlen(deploy), "deploy.yaml", err) : NULL;
    pl_workflow *wf = d ? pl_workflow_from_cwl(j, "wf.cwl", d, "deploy.yaml", err) : NULL;
    json_decref(j);
    json_decref(d);
    return wf;
}

/* Expects a refusal whose message holds every part. */
static void expect_native_error(const char *yaml, const char *const *parts) {
    tm_err err = {0};
    pl_workflow *wf = native(yaml, &err);
    CHECKF(wf == NULL, "accepted: %s", yaml);
    for (const char *const *p = parts; *p; p++)
        CHECKF(strstr(err.msg, *p) != NULL, "'%s' not in '%s'", *p, err.msg);
    pl_workflow_free(wf);
}

static void expect_cwl_error(const char *yaml, const char *deploy, const char *const *parts) {
    tm_err err = {0};
    pl_workflow *wf = cwl(yaml, deploy, &err);
    CHECKF(wf == NULL, "accepted: %s", yaml);
    for (const char *const *p = parts; *p; p++)
        CHECKF(strstr(err.msg, *p) != NULL, "'%s' not in '%s'", *p, err.msg);
    pl_workflow_free(wf);
}

static void check_turbine(const pl_workflow *wf) {
    CHECK_INT(wf->nsteps, 2);
    int les = pl_workflow_find(wf, "LES"), hpda = pl_workflow_find(wf, "HPDA");
    CHECK(les >= 0 && hpda >= 0);
    if (les < 0 || hpda < 0)
        return;
    CHECK_INT(wf->steps[les].pods, 2);
    CHECK_INT(wf->steps[hpda].pods, 5);
    CHECK_INT(wf->steps[les].cpu_milli, 36000);
    CHECK_INT(wf->steps[hpda].mem_bytes, 64LL << 30);
    CHECK_INT(wf->steps[les].duration_s, 900);
    CHECK_INT(wf->steps[hpda].duration_s, 1800);
    CHECK_INT(wf->steps[les].nafter, 0);
    CHECK_INT(wf->steps[hpda].nafter, 1);
    CHECK_INT(wf->steps[hpda].after[0], les);
    CHECK_STR(wf->steps[les].image, "les:1.0");
    CHECK_STR(wf->steps[hpda].image, "hpda:1.0");
    CHECK_INT(wf->order[0], les);
    CHECK_INT(wf->order[1], hpda);
}

static void test_native_turbine(void) {
    char path[512];
    tm_err err = {0};
    json_t *j = tm_yaml_load_file(fixture("turbine.yaml", path, sizeof path), &err);
    pl_workflow *wf = j ? pl_workflow_from_native(j, path, &err) : NULL;
    CHECKF(wf != NULL, "%s", err.msg);
    if (wf)
        check_turbine(wf);
    CHECK_STR(wf ? wf->name : NULL, "turbine");
    pl_workflow_free(wf);
    json_decref(j);
}

static void test_native_defaults_and_order(void) {
    /* listed out of order: C waits for A and B, B for A; order must be A, B, C */
    tm_err err = {0};
    pl_workflow *wf = native("name: w\n"
                             "steps:\n"
                             "  - {name: C, after: [A, B], requests: {cpu: 500m, memory: 1e9}, "
                             "duration: 90, image: x}\n"
                             "  - {name: B, after: [A], requests: {cpu: 1, memory: 1Gi}, "
                             "duration: 1h30m, command: [sleep, '1']}\n"
                             "  - {name: A, requests: {cpu: 2.5, memory: 512Mi}, duration: 1.5m, "
                             "image: x}\n",
                             &err);
    CHECKF(wf != NULL, "%s", err.msg);
    if (!wf)
        return;
    CHECK_INT(wf->steps[0].pods, 1);
    CHECK_INT(wf->steps[0].cpu_milli, 500);
    CHECK_INT(wf->steps[0].mem_bytes, 1000000000);
    CHECK_INT(wf->steps[0].duration_s, 90);
    CHECK_INT(wf->steps[1].duration_s, 5400);
    CHECK_INT(wf->steps[2].duration_s, 90);
    CHECK_INT(wf->steps[2].cpu_milli, 2500);
    CHECK_INT(wf->order[0], 2);
    CHECK_INT(wf->order[1], 1);
    CHECK_INT(wf->order[2], 0);
    pl_workflow_free(wf);
}

static void test_native_bad_input(void) {
    expect_native_error("name: w\nsteps:\n"
                        "  - {name: A, after: [C], requests: {cpu: 1, memory: 1Gi}, duration: 1m, "
                        "image: x}\n"
                        "  - {name: B, after: [A], requests: {cpu: 1, memory: 1Gi}, duration: 1m, "
                        "image: x}\n"
                        "  - {name: C, after: [B], requests: {cpu: 1, memory: 1Gi}, duration: 1m, "
                        "image: x}\n",
                        (const char *const[]){"cycle", "A", "B", "C", NULL});
    expect_native_error("name: w\nsteps:\n"
                        "  - {name: A, after: [Z], requests: {cpu: 1, memory: 1Gi}, duration: 1m, "
                        "image: x}\n",
                        (const char *const[]){"step 'A'", "unknown step 'Z'", NULL});
    expect_native_error("name: w\nsteps:\n"
                        "  - {name: A, after: [A], requests: {cpu: 1, memory: 1Gi}, duration: 1m, "
                        "image: x}\n",
                        (const char *const[]){"step 'A'", "itself", NULL});
    expect_native_error("name: w\nsteps:\n"
                        "  - {name: A, requests: {cpu: 1, memory: 1Gi}, task: BWA_MEM, image: x}\n",
                        (const char *const[]){"step 'A'", "task must be WORKFLOW/PROCESS", NULL});
    expect_native_error("name: w\nsteps:\n"
                        "  - {name: A, requests: {cpu: 1, memory: 1Gi}, task: a/b, duration: 1m, "
                        "image: x}\n",
                        (const char *const[]){"step 'A'", "either duration or task", NULL});
    expect_native_error(
        "name: w\nsteps:\n  - {name: A, requests: {cpu: 1, memory: 1Gi}, image: x}\n",
        (const char *const[]){"step 'A'", "duration is required", NULL});
    expect_native_error("name: w\nsteps:\n"
                        "  - {name: A, requests: {cpu: 1, memory: 1Gi}, duration: 5x, image: x}\n",
                        (const char *const[]){"step 'A'", "duration", "'5x'", NULL});
    expect_native_error("name: w\nsteps:\n"
                        "  - {name: A, requests: {cpu: 0, memory: 1Gi}, duration: 1m, image: x}\n",
                        (const char *const[]){"step 'A'", "requests.cpu", NULL});
    expect_native_error("name: w\nsteps:\n"
                        "  - {name: A, requests: {cpu: 1, memory: 1Gb}, duration: 1m, image: x}\n",
                        (const char *const[]){"step 'A'", "requests.memory", "1Gb", NULL});
    expect_native_error("name: w\nsteps:\n  - {name: A, duration: 1m, image: x}\n",
                        (const char *const[]){"step 'A'", "requests", NULL});
    expect_native_error("name: w\nsteps:\n"
                        "  - {name: A, pods: 0, requests: {cpu: 1, memory: 1Gi}, duration: 1m, "
                        "image: x}\n",
                        (const char *const[]){"step 'A'", "pods", NULL});
    expect_native_error("name: w\nsteps:\n"
                        "  - {name: A, requests: {cpu: 1, memory: 1Gi}, duration: 1m, image: x}\n"
                        "  - {name: A, requests: {cpu: 1, memory: 1Gi}, duration: 1m, image: x}\n",
                        (const char *const[]){"'A' is defined twice", NULL});
    expect_native_error("name: w\nsteps:\n"
                        "  - {name: A, requests: {cpu: 1, memory: 1Gi}, duration: 1m, image: x, "
                        "walltime: 3}\n",
                        (const char *const[]){"step 'A'", "unknown key 'walltime'", NULL});
    expect_native_error("name: w\nsteps:\n"
                        "  - {name: A, requests: {cpu: 1, memory: 1Gi}, duration: 1m}\n",
                        (const char *const[]){"step 'A'", "image", NULL});
    expect_native_error("name: w\nsteps: []\n", (const char *const[]){"steps", NULL});
    expect_native_error("steps:\n  - {name: A, requests: {cpu: 1, memory: 1Gi}, duration: 1m, "
                        "image: x}\n",
                        (const char *const[]){"name", NULL});
}

static void test_cwl_turbine_files(void) {
    const char *files[] = {"turbine.cwl", "turbine-graph.cwl"};
    for (int f = 0; f < 2; f++) {
        char path[512], dpath[512];
        tm_err err = {0};
        json_t *j = tm_yaml_load_file(fixture(files[f], path, sizeof path), &err);
        json_t *d = tm_yaml_load_file(fixture("turbine-deploy.yaml", dpath, sizeof dpath), &err);
        CHECKF(j && d && pl_is_cwl(j), "%s: %s", files[f], err.msg);
        pl_workflow *wf = j && d ? pl_workflow_from_cwl(j, path, d, dpath, &err) : NULL;
        CHECKF(wf != NULL, "%s: %s", files[f], err.msg);
        if (wf)
            check_turbine(wf);
        pl_workflow_free(wf);
        json_decref(j);
        json_decref(d);
    }
}

/* A CWL workflow with one tool: `extra_step` goes into the step, `extra_req` into the tool's
 * requirements list, `extra_top` at the top. */
static char *one_step(const char *extra_top, const char *extra_step, const char *extra_req) {
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "cwlVersion: v1.2\nclass: Workflow\n$namespaces: {tarema: 'https://tarema.io/cwl#'}\n"
             "inputs: {x: File}\noutputs: {}\n%s"
             "steps:\n"
             "  les:\n"
             "    in: {x: x}\n"
             "    out: [y]\n%s"
             "    run:\n"
             "      class: CommandLineTool\n"
             "      inputs: {}\n      outputs: {}\n"
             "      requirements:\n"
             "        - {class: ToolTimeLimit, timelimit: 60}\n%s",
             extra_top, extra_step, extra_req);
    return buf;
}

static void test_cwl_defaults(void) {
    /* no ResourceRequirement: CWL's defaults, 1 core and 256 MiB; no Gang hint: one pod; the
     * tool has no id, so the deployment entry is the step's name */
    tm_err err = {0};
    pl_workflow *wf = cwl(one_step("", "", ""), deploy_yaml, &err);
    CHECKF(wf != NULL, "%s", err.msg);
    if (!wf)
        return;
    CHECK_INT(wf->steps[0].cpu_milli, 1000);
    CHECK_INT(wf->steps[0].mem_bytes, 256LL << 20);
    CHECK_INT(wf->steps[0].pods, 1);
    CHECK_INT(wf->steps[0].duration_s, 60);
    CHECK_STR(wf->steps[0].image, "les:1.0");
    pl_workflow_free(wf);
}

static void test_cwl_bad_input(void) {
    expect_cwl_error(
        one_step("", "    scatter: x\n", ""), deploy_yaml,
        (const char *const[]){"step 'les'", "unsupported CWL feature 'scatter'", NULL});
    expect_cwl_error(one_step("", "    when: $(inputs.x)\n", ""), deploy_yaml,
                     (const char *const[]){"step 'les'", "'when'", NULL});
    expect_cwl_error(
        one_step("requirements: [{class: ScatterFeatureRequirement}]\n", "", ""), deploy_yaml,
        (const char *const[]){"unsupported CWL feature 'ScatterFeatureRequirement'", NULL});
    expect_cwl_error(one_step("", "", "        - {class: InlineJavascriptRequirement}\n"),
                     deploy_yaml,
                     (const char *const[]){"step 'les'", "InlineJavascriptRequirement", NULL});
    expect_cwl_error(
        one_step("", "", "        - {class: ResourceRequirement, coresMin: $(inputs.n)}\n"),
        deploy_yaml, (const char *const[]){"step 'les'", "coresMin", "expressions", NULL});
    expect_cwl_error(one_step("", "", "        - {class: ResourceRequirement, tmpdirMin: 100}\n"),
                     deploy_yaml, (const char *const[]){"step 'les'", "tmpdirMin", NULL});
    expect_cwl_error(one_step("", "", ""), "tools: {hpda: {image: h}}\n",
                     (const char *const[]){"deploy.yaml", "no entry for tool 'les'", NULL});
    expect_cwl_error(one_step("", "", ""), "images: {}\n",
                     (const char *const[]){"deploy.yaml", "tools", NULL});
    /* the Gang hint without its namespace */
    char *s = one_step("", "", "        - {class: 'tarema:Gang', pods: 3}\n");
    char *ns = strstr(s, "$namespaces");
    memcpy(ns, "#namespace", 10); /* comment the declaration out */
    expect_cwl_error(s, deploy_yaml, (const char *const[]){"'tarema' is not declared", NULL});
    expect_cwl_error(one_step("", "", "        - {class: 'tarema:Gang', pods: 0}\n"), deploy_yaml,
                     (const char *const[]){"tarema:Gang", "pods", NULL});
    /* no walltime */
    expect_cwl_error("cwlVersion: v1.2\nclass: Workflow\ninputs: {}\noutputs: {}\nsteps:\n"
                     "  les: {in: {}, out: [], run: {class: CommandLineTool, inputs: {}, "
                     "outputs: {}}}\n",
                     deploy_yaml, (const char *const[]){"step 'les'", "ToolTimeLimit", NULL});
    expect_cwl_error("cwlVersion: v1.2\nclass: Workflow\ninputs: {}\noutputs: {}\nsteps:\n"
                     "  les: {in: {}, out: [], run: sub.cwl}\n",
                     deploy_yaml, (const char *const[]){"step 'les'", "sub.cwl", NULL});
    expect_cwl_error("cwlVersion: v1.2\nclass: Workflow\ninputs: {}\noutputs: {}\nsteps:\n"
                     "  les: {in: {}, out: [], run: {class: Workflow, steps: {}}}\n",
                     deploy_yaml, (const char *const[]){"step 'les'", "nested Workflow", NULL});
    expect_cwl_error("cwlVersion: v1.2\nclass: Workflow\ninputs: {}\noutputs: {}\nsteps:\n"
                     "  les: {in: {}, out: [], run: {class: ExpressionTool, expression: x}}\n",
                     deploy_yaml, (const char *const[]){"step 'les'", "ExpressionTool", NULL});
    expect_cwl_error("cwlVersion: v1.0\nclass: Workflow\ninputs: {}\noutputs: {}\nsteps: {}\n",
                     deploy_yaml, (const char *const[]){"cwlVersion", "v1.0", NULL});
    expect_cwl_error("cwlVersion: v1.2\nclass: CommandLineTool\ninputs: {}\noutputs: {}\n",
                     deploy_yaml, (const char *const[]){"class must be Workflow", NULL});
    /* dependency on an unknown step, and on a workflow input that does not exist */
    const char *tool = "{class: CommandLineTool, id: les, inputs: {}, outputs: {}, "
                       "requirements: [{class: ToolTimeLimit, timelimit: 5}]}";
    char buf[2048];
    snprintf(buf, sizeof buf,
             "cwlVersion: v1.2\nclass: Workflow\ninputs: {}\noutputs: {}\nsteps:\n"
             "  les: {in: {a: NOPE/out}, out: [], run: %s}\n",
             tool);
    expect_cwl_error(buf, deploy_yaml,
                     (const char *const[]){"step 'les'", "unknown step 'NOPE'", NULL});
    snprintf(buf, sizeof buf,
             "cwlVersion: v1.2\nclass: Workflow\ninputs: {}\noutputs: {}\nsteps:\n"
             "  les: {in: {a: missing}, out: [], run: %s}\n",
             tool);
    expect_cwl_error(buf, deploy_yaml, (const char *const[]){"step 'les'", "'missing'", NULL});
    /* a cycle through in/out links */
    snprintf(buf, sizeof buf,
             "cwlVersion: v1.2\nclass: Workflow\ninputs: {}\noutputs: {}\nsteps:\n"
             "  A: {in: {a: B/o}, out: [o], run: %s}\n"
             "  B: {in: {b: A/o}, out: [o], run: %s}\n",
             tool, tool);
    expect_cwl_error(buf, deploy_yaml, (const char *const[]){"cycle", "A", "B", NULL});
}

static pl_cluster *cluster_of(const char *yaml, tm_err *err) {
    json_t *j = tm_yaml_parse(yaml, strlen(yaml), "cluster.yaml", err);
    pl_cluster *c = j ? pl_cluster_from_json(j, "cluster.yaml", err) : NULL;
    json_decref(j);
    return c;
}

static const char *two_types = "node_types:\n"
                               "  - {name: n1, count: 2, cores: 8, memory: 32Gi}\n"
                               "  - {name: c2, count: 3, cores: 16, memory: 64Gi}\n";

static void test_cluster_names(void) {
    tm_err err = {0};
    pl_cluster *c = cluster_of(two_types, &err);
    CHECKF(c != NULL, "%s", err.msg);
    if (!c)
        return;
    CHECK_INT(c->nnodes, 5);
    CHECK_INT(c->ntypes, 2);
    CHECK_STR(c->nodes[0].name, "n1-1"); /* as the kwok node files: from 1 */
    CHECK_STR(c->nodes[1].name, "n1-2");
    CHECK_STR(c->nodes[4].name, "c2-3");
    CHECK_INT(c->nodes[4].type, 1);
    CHECK_INT(c->nodes[4].cpu_milli, 16000);
    CHECK_INT(c->nodes[0].mem_bytes, 32LL << 30);
    CHECK_INT(pl_cluster_find_node(c, "n1-0"), -1);
    pl_cluster_free(c);
    c = cluster_of("node_types:\n  - {name: n1, count: 2}\n", &err);
    CHECK(c == NULL && strstr(err.msg, "cores and memory are required"));
    pl_cluster_free(c);
}

static int busy_of(const char *yaml, const pl_cluster *c, pl_busy **b, int *n, tm_err *err) {
    json_t *j = tm_yaml_parse(yaml, strlen(yaml), "busy.yaml", err);
    int rc = j || strlen(yaml) == 0
                 ? pl_busy_from_json(j ? j : json_null(), "busy.yaml", c, b, n, err)
                 : -1;
    json_decref(j);
    return rc;
}

static void test_busy(void) {
    tm_err err = {0};
    pl_cluster *c = cluster_of(two_types, &err);
    pl_busy *b = NULL;
    int n = 0;
    CHECK(busy_of("- {node: n1-2, cores: 8, memory: 32Gi, until: 35m}\n"
                  "- {node: c2-3, cores: 500m, until: 90}\n",
                  c, &b, &n, &err) == 0);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK_INT(b[0].node, 1);
        CHECK_INT(b[0].cpu_milli, 8000);
        CHECK_INT(b[0].mem_bytes, 32LL << 30);
        CHECK_INT(b[0].until_s, 2100);
        CHECK_INT(b[1].node, 4);
        CHECK_INT(b[1].cpu_milli, 500);
        CHECK_INT(b[1].mem_bytes, 0);
        CHECK_INT(b[1].until_s, 90);
    }
    free(b);
    b = NULL;
    CHECK(busy_of("- {node: n1-9, cores: 8, until: 35m}\n", c, &b, &n, &err) < 0 &&
          strstr(err.msg, "'n1-9' is not in the cluster"));
    CHECK(busy_of("- {node: n1-1, cores: 8}\n", c, &b, &n, &err) < 0 && strstr(err.msg, "n1-1") &&
          strstr(err.msg, "until is required"));
    CHECK(busy_of("- {node: n1-1, until: 5m}\n", c, &b, &n, &err) < 0 &&
          strstr(err.msg, "cores, memory"));
    CHECK(busy_of("- {node: n1-1, cores: 1, until: 5m, gpu: 1}\n", c, &b, &n, &err) < 0 &&
          strstr(err.msg, "unknown key 'gpu'"));
    CHECK(busy_of("node: n1-1\n", c, &b, &n, &err) < 0 && strstr(err.msg, "a list"));
    pl_cluster_free(c);
}

static void test_step_larger_than_cluster(void) {
    tm_err err = {0};
    pl_cluster *c = cluster_of(two_types, &err);
    /* 4 pods of 10 cores: only the three c2 nodes hold one each */
    pl_workflow *wf = native("name: w\nsteps:\n"
                             "  - {name: big, pods: 4, requests: {cpu: 10, memory: 1Gi}, "
                             "duration: 1m, image: x}\n",
                             &err);
    pl_problem p;
    CHECK(c && wf && pl_problem_init(&p, wf, c, NULL, 0, 60, PL_OBJ_MAKESPAN, &err) < 0);
    CHECKF(strstr(err.msg, "step 'big' is larger than the cluster") != NULL, "%s", err.msg);
    pl_problem_free(&p);
    pl_workflow_free(wf);
    /* 3 pods fit */
    wf = native("name: w\nsteps:\n"
                "  - {name: ok, pods: 3, requests: {cpu: 10, memory: 1Gi}, duration: 1m, "
                "image: x}\n",
                &err);
    CHECK(wf && pl_problem_init(&p, wf, c, NULL, 0, 60, PL_OBJ_MAKESPAN, &err) == 0);
    pl_problem_free(&p);
    pl_workflow_free(wf);
    pl_cluster_free(c);
}

/* A busy entry 400 days ahead in 1 s slots would need 34.6 million cells per node: refused
 * with advice instead of an allocation of gigabytes. 60 s slots make it 576,000: fine. */
static void test_busy_too_far_for_the_slot(void) {
    tm_err err = {0};
    pl_cluster *c = cluster_of(two_types, &err);
    pl_workflow *wf = native("name: w\nsteps:\n"
                             "  - {name: a, requests: {cpu: 1, memory: 1Gi}, duration: 1m, "
                             "image: x}\n",
                             &err);
    pl_busy b = {0, 1000, 0, 400LL * 86400, 0};
    pl_problem p;
    CHECK(c && wf && pl_problem_init(&p, wf, c, &b, 1, 1, PL_OBJ_MAKESPAN, &err) < 0);
    CHECKF(strstr(err.msg, "use a longer --slot") != NULL, "%s", err.msg);
    pl_problem_free(&p);
    CHECK(pl_problem_init(&p, wf, c, &b, 1, 60, PL_OBJ_MAKESPAN, &err) == 0);
    CHECK_INT(p.release, 576000);
    pl_problem_free(&p);
    pl_workflow_free(wf);
    pl_cluster_free(c);
}

static void test_durations(void) {
    tm_err err = {0};
    int64_t s = -1;
    CHECK(pl_duration_parse("90s", &s, &err) == 0 && s == 90);
    CHECK(pl_duration_parse("15m", &s, &err) == 0 && s == 900);
    CHECK(pl_duration_parse("1h30m", &s, &err) == 0 && s == 5400);
    CHECK(pl_duration_parse("1.5h", &s, &err) == 0 && s == 5400);
    CHECK(pl_duration_parse("2d", &s, &err) == 0 && s == 172800);
    CHECK(pl_duration_parse("42", &s, &err) == 0 && s == 42);
    CHECK(pl_duration_parse("0.5s", &s, &err) == 0 && s == 1);
    CHECK(pl_duration_parse("", &s, &err) < 0);
    CHECK(pl_duration_parse("5x", &s, &err) < 0 && strstr(err.msg, "'5x'"));
    CHECK(pl_duration_parse("m", &s, &err) < 0);
    CHECK(pl_duration_parse("-5m", &s, &err) < 0);
    CHECK(pl_duration_parse("1h30", &s, &err) < 0);
}

/* durations: {GROUP: D}: a duration: step's walltime per node group (docs/planner.md). */
static void test_group_durations(void) {
    tm_err err = {0};
    pl_cluster *c = cluster_of(two_types, &err);
    pl_workflow *wf = native("name: w\nsteps:\n"
                             "  - {name: a, requests: {cpu: 1, memory: 1Gi}, duration: 20m, "
                             "durations: {c2: 10m, n1: 1500}, image: x}\n"
                             "  - {name: b, after: [a], requests: {cpu: 1, memory: 1Gi}, "
                             "duration: 5m, image: x}\n",
                             &err);
    CHECKF(wf != NULL, "%s", err.msg);
    if (!wf || !c) {
        pl_workflow_free(wf);
        pl_cluster_free(c);
        return;
    }
    const pl_step *a = &wf->steps[0], *b = &wf->steps[1];
    CHECK_INT(a->duration_s, 1200);
    CHECK_INT(a->ngroup_s, 2);
    CHECK(a->group_s_given);
    CHECK_STR(a->group_s[0].group, "c2");
    CHECK_INT(a->group_s[0].seconds, 600);
    CHECK_STR(a->group_s[1].group, "n1");
    CHECK_INT(a->group_s[1].seconds, 1500);
    CHECK_INT(b->ngroup_s, 0);
    CHECK(!b->group_s_given);
    CHECK(pl_check_step_groups(wf, c, &err) == 0);
    /* the plan's walltime per group: 10 slots on c2, 25 on n1 */
    pl_problem p;
    CHECK(pl_problem_init(&p, wf, c, NULL, 0, 60, PL_OBJ_MAKESPAN, &err) == 0);
    CHECK_INT(pl_step_slots(&p, 0, 0), 25); /* n1 is type 0 */
    CHECK_INT(pl_step_slots(&p, 0, 1), 10);
    CHECK_INT(pl_step_slots(&p, 1, 0), 5);
    pl_problem_free(&p);
    /* the controller's predictedSeconds: the slowest group the pods are on */
    const char *c2[] = {"c2"}, *both[] = {"c2", "n1"}, *other[] = {"zz"};
    CHECK_INT(pl_step_seconds_on(a, c2, 1), 600);
    CHECK_INT(pl_step_seconds_on(a, both, 2), 1500);
    CHECK_INT(pl_step_seconds_on(a, other, 1), 1200);
    CHECK_INT(pl_step_seconds_on(a, NULL, 0), 1200);
    CHECK_INT(pl_step_seconds_max(a), 1500);
    CHECK_INT(pl_step_seconds_max(b), 300);
    /* submit writes the step back with its durations (what the Workflow's spec holds) */
    json_t *j = pl_workflow_native_json(wf);
    json_t *ds = json_object_get(json_array_get(json_object_get(j, "steps"), 0), "durations");
    CHECK_STR(json_string_value(json_object_get(ds, "c2")), "600s");
    CHECK_STR(json_string_value(json_object_get(ds, "n1")), "1500s");
    CHECK(json_object_get(json_array_get(json_object_get(j, "steps"), 1), "durations") == NULL);
    json_decref(j);
    pl_workflow_free(wf);
    /* a group the cluster does not have: named with the cluster's groups */
    wf = native("name: w\nsteps:\n"
                "  - {name: a, requests: {cpu: 1, memory: 1Gi}, duration: 20m, "
                "durations: {c3: 10m}, image: x}\n",
                &err);
    CHECK(wf && pl_check_step_groups(wf, c, &err) < 0);
    CHECKF(strstr(err.msg, "step 'a': durations: node group 'c3' is not one of the cluster's "
                           "(n1, c2)") != NULL,
           "%s", err.msg);
    pl_workflow_free(wf);
    pl_cluster_free(c);
    /* bad input */
    static const char *const not_map[] = {"step 'a'", "durations must be a mapping", NULL};
    expect_native_error("name: w\nsteps:\n  - {name: a, requests: {cpu: 1, memory: 1Gi}, "
                        "duration: 1m, durations: 10m, image: x}\n",
                        not_map);
    expect_native_error("name: w\nsteps:\n  - {name: a, requests: {cpu: 1, memory: 1Gi}, "
                        "duration: 1m, durations: {}, image: x}\n",
                        not_map);
    static const char *const with_task[] = {"step 'a'", "durations", "not with task", NULL};
    expect_native_error("name: w\nsteps:\n  - {name: a, requests: {cpu: 1, memory: 1Gi}, "
                        "task: w/p, durations: {c2: 1m}, image: x}\n",
                        with_task);
    static const char *const no_default[] = {"step 'a'", "duration is required", NULL};
    expect_native_error("name: w\nsteps:\n  - {name: a, requests: {cpu: 1, memory: 1Gi}, "
                        "durations: {c2: 1m}, image: x}\n",
                        no_default);
    static const char *const bad_value[] = {"step 'a'", "durations.c2", "'ten'", NULL};
    expect_native_error("name: w\nsteps:\n  - {name: a, requests: {cpu: 1, memory: 1Gi}, "
                        "duration: 1m, durations: {c2: ten}, image: x}\n",
                        bad_value);
    static const char *const zero[] = {"step 'a'", "durations.c2 must be > 0", NULL};
    expect_native_error("name: w\nsteps:\n  - {name: a, requests: {cpu: 1, memory: 1Gi}, "
                        "duration: 1m, durations: {c2: 0}, image: x}\n",
                        zero);
    static const char *const long_name[] = {"step 'a'", "node group 'abcdefghijklmnop'",
                                            "1 to 15 characters", NULL};
    expect_native_error("name: w\nsteps:\n  - {name: a, requests: {cpu: 1, memory: 1Gi}, "
                        "duration: 1m, durations: {abcdefghijklmnop: 1m}, image: x}\n",
                        long_name);
    static const char *const too_many[] = {"step 'a'", "more than 8 node groups", NULL};
    expect_native_error("name: w\nsteps:\n  - {name: a, requests: {cpu: 1, memory: 1Gi}, "
                        "duration: 1m, durations: {a: 1, b: 1, c: 1, d: 1, e: 1, f: 1, g: 1, "
                        "h: 1, i: 1}, image: x}\n",
                        too_many);
}

int main(void) {
    RUN(test_native_turbine);
    RUN(test_native_defaults_and_order);
    RUN(test_native_bad_input);
    RUN(test_cwl_turbine_files);
    RUN(test_cwl_defaults);
    RUN(test_cwl_bad_input);
    RUN(test_cluster_names);
    RUN(test_busy);
    RUN(test_step_larger_than_cluster);
    RUN(test_busy_too_far_for_the_slot);
    RUN(test_durations);
    RUN(test_group_durations);
    return TEST_SUMMARY();
}
