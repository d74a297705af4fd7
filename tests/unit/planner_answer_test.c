/* planner_answer_test.c: the plan's two views: offsets as +M:SS / +H:MM:SS, the table grouping a
 * step's pods per node ("n-1(2 pods)"), the JSON listing one node per pod with times in
 * seconds, and the gap to the bound. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/yamljson.h"
#include "planner/answer.h"
#include "planner/heuristic.h"
#include "planner/problem.h"
#include "planner/solve.h"

static void test_offsets(void) {
    char b[32];
    CHECK_STR(pl_format_offset(0, b, sizeof b), "+0:00");
    CHECK_STR(pl_format_offset(900, b, sizeof b), "+15:00");
    CHECK_STR(pl_format_offset(3599, b, sizeof b), "+59:59");
    CHECK_STR(pl_format_offset(3900, b, sizeof b), "+1:05:00");
    CHECK_STR(pl_format_offset(90061, b, sizeof b), "+25:01:01");
}

/* One node of 8 cores; A: 2 pods of 4 cores for 90 s (2 slots of 60 s), then B: 1 pod. Both of
 * A's pods fit the one node, so the table says n-1(2 pods) and the JSON lists n-1 twice. */
static void test_table_and_json(void) {
    tm_err err = {0};
    const char *wfy = "name: two\nsteps:\n"
                      "  - {name: A, pods: 2, requests: {cpu: 4, memory: 1Gi}, duration: 90s, "
                      "image: x}\n"
                      "  - {name: B, after: [A], requests: {cpu: 8, memory: 1Gi}, duration: 1m, "
                      "image: x}\n";
    const char *cly = "node_types:\n  - {name: n, count: 1, cores: 8, memory: 8Gi}\n";
    json_t *w = tm_yaml_parse(wfy, strlen(wfy), "wf", &err);
    json_t *c = tm_yaml_parse(cly, strlen(cly), "cl", &err);
    pl_workflow *wf = pl_workflow_from_native(w, "wf", &err);
    pl_cluster *cl = pl_cluster_from_json(c, "cl", &err);
    pl_problem p;
    pl_plan plan;
    pl_outcome o;
    CHECK(wf && cl && pl_problem_init(&p, wf, cl, NULL, 0, 60, PL_OBJ_MAKESPAN, &err) == 0);
    pl_plan_init(&plan, &p);
    CHECK(pl_solve(&p, PL_SOLVER_HEURISTIC, 1, &plan, &o, &err) == 0);
    char *t = pl_answer_table(&p, &plan, &o);
    CHECKF(t && strstr(t, "step A starts at +0:00 on n-1(2 pods), ends +2:00\n"), "%s",
           t ? t : "(null)");
    CHECKF(t && strstr(t, "step B starts at +2:00 on n-1, ends +3:00\n"), "%s", t ? t : "(null)");
    CHECKF(t && strstr(t, "makespan 3:00 (first start +0:00, end +3:00); solver heuristic, "
                          "optimal; lower bound on the makespan 3:00 (critical-path), gap 0.0%"),
           "%s", t);
    free(t);
    json_t *j = pl_answer_json(&p, &plan, &o);
    json_t *a = json_array_get(json_object_get(j, "steps"), 0);
    CHECK_STR(json_string_value(json_object_get(j, "solver")), "heuristic");
    CHECK(json_is_true(json_object_get(j, "optimal")));
    CHECK_INT(json_integer_value(json_object_get(j, "makespan_s")), 180);
    CHECK_INT(json_integer_value(json_object_get(j, "end_s")), 180);
    CHECK_INT(json_integer_value(json_object_get(j, "bound_s")), 180);
    CHECK_INT(json_integer_value(json_object_get(a, "end_s")), 120);
    CHECK_INT(json_array_size(json_object_get(a, "nodes")), 2);
    CHECK_STR(json_string_value(json_array_get(json_object_get(a, "nodes"), 1)), "n-1");
    CHECK(json_object_get(j, "ilp") == NULL); /* not tried */
    json_decref(j);
    pl_plan_free(&plan);
    pl_problem_free(&p);
    pl_workflow_free(wf);
    pl_cluster_free(cl);
    json_decref(w);
    json_decref(c);
}

int main(void) {
    RUN(test_offsets);
    RUN(test_table_and_json);
    return TEST_SUMMARY();
}
