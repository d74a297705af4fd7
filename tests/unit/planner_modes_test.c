/* planner_modes_test.c: the step modes' pure decisions (planner/modes.h): mode choice, the
 * proactive ungate time (predecessors' predicted end - estimate, never before submission), the
 * order gate (never before every predecessor succeeded) and the estimate lookup. */
#include <math.h>

#include "harness.h"
#include "planner/modes.h"
#include "planner/workflow.h"

static void test_parse(void) {
    pl_mode m = PL_MODE_RESERVE;
    CHECK(pl_mode_parse(NULL, &m) == 0 && m == PL_MODE_AUTO);
    CHECK(pl_mode_parse("", &m) == 0 && m == PL_MODE_AUTO);
    CHECK(pl_mode_parse("reserve", &m) == 0 && m == PL_MODE_RESERVE);
    CHECK(pl_mode_parse("proactive", &m) == 0 && m == PL_MODE_PROACTIVE);
    CHECK(pl_mode_parse("on-completion", &m) == 0 && m == PL_MODE_ON_COMPLETION);
    CHECK(pl_mode_parse("Proactive", &m) < 0);
    CHECK(pl_mode_parse("eager", &m) < 0);
    CHECK_STR(pl_mode_name(PL_MODE_ON_COMPLETION), "on-completion");
    CHECK_STR(pl_mode_name(PL_MODE_PROACTIVE), "proactive");
}

static void test_choose(void) {
    /* explicit modes are kept whatever the load */
    CHECK(pl_mode_choose(PL_MODE_RESERVE, 0.99, 0.5) == PL_MODE_RESERVE);
    CHECK(pl_mode_choose(PL_MODE_ON_COMPLETION, 0.1, 0.5) == PL_MODE_ON_COMPLETION);
    CHECK(pl_mode_choose(PL_MODE_PROACTIVE, 0.1, 0.5) == PL_MODE_PROACTIVE);
    /* auto: reserve below the threshold, proactive at or above it */
    CHECK(pl_mode_choose(PL_MODE_AUTO, 0.49, 0.5) == PL_MODE_RESERVE);
    CHECK(pl_mode_choose(PL_MODE_AUTO, 0.5, 0.5) == PL_MODE_PROACTIVE);
    CHECK(pl_mode_choose(PL_MODE_AUTO, 0.8, 0.5) == PL_MODE_PROACTIVE);
    CHECK(pl_mode_choose(PL_MODE_AUTO, NAN, 0.5) == PL_MODE_PROACTIVE);
    /* threshold off: always reserve */
    CHECK(pl_mode_choose(PL_MODE_AUTO, 5.0, 0) == PL_MODE_RESERVE);
}

static void test_ungate_at(void) {
    int64_t ends[] = {1000, 1600, 1300};
    /* latest predecessor end minus the estimate */
    CHECK(pl_proactive_ungate_at(100, ends, 3, 250) == 1350);
    CHECK(pl_proactive_ungate_at(100, ends, 3, 0) == 1600);
    /* never before submission */
    CHECK(pl_proactive_ungate_at(1500, ends, 3, 600) == 1500);
    CHECK(pl_proactive_ungate_at(100, ends, 3, 1e9) == 100);
    /* no predecessor: at submission */
    CHECK(pl_proactive_ungate_at(100, NULL, 0, 30) == 100);
    /* absurd estimates count as 0: never later than the predecessors' end, never NaN-driven */
    CHECK(pl_proactive_ungate_at(100, ends, 3, -5) == 1600);
    CHECK(pl_proactive_ungate_at(100, ends, 3, NAN) == 1600);
    CHECK(pl_proactive_ungate_at(100, ends, 3, INFINITY) == 1600);
}

static void test_release_at(void) {
    int64_t ends[] = {1000, 1600, 1300}, started[] = {400, 900, 700}, some[] = {400, -1, 700};
    pl_release_rule on = -1;
    int64_t asa = pl_proactive_ungate_at(100, ends, 3, 250); /* 1350 */
    /* every predecessor started: released at the latest start, before ASA's point */
    CHECK(pl_proactive_release_at(asa, 100, started, 3, &on) == 900);
    CHECK(on == 1);
    /* ASA's point earlier than that (a long learned wait): it stays */
    CHECK(pl_proactive_release_at(pl_proactive_ungate_at(100, ends, 3, 800), 100, started, 3,
                                  &on) == 800);
    CHECK(on == 0);
    /* one not started yet: ASA's point alone, whatever the others did */
    CHECK(pl_proactive_release_at(asa, 100, some, 3, &on) == 1350);
    CHECK(on == 0);
    CHECK(pl_proactive_release_at(asa, 100, NULL, 3, &on) == 1350);
    /* never before submission: predecessors that started before it (a resubmitted workflow) */
    CHECK(pl_proactive_release_at(pl_proactive_ungate_at(950, ends, 3, 0), 950, started, 3, &on) ==
          950);
    CHECK(on == 1);
    /* no predecessor: at submission, the start rule says nothing */
    CHECK(pl_proactive_release_at(pl_proactive_ungate_at(100, NULL, 0, 30), 100, NULL, 0, &on) ==
          100);
    CHECK(on == 0);
    /* rule may be NULL */
    CHECK(pl_proactive_release_at(asa, 100, started, 3, NULL) == 900);
    CHECK(pl_proactive_release_at(asa, 100, some, 3, NULL) == 1350);
}

static void test_lead_at(void) {
    int64_t ends[] = {1000, 1600, 1300};
    pl_release_rule rule = PL_RELEASE_ON_START;
    /* off, or later than what is already decided: unchanged */
    CHECK(pl_proactive_lead_at(900, 100, ends, 3, 0, &rule) == 900 && rule == PL_RELEASE_ON_START);
    CHECK(pl_proactive_lead_at(900, 100, ends, 3, 600, &rule) == 900 &&
          rule == PL_RELEASE_ON_START);
    /* 1000 s before the latest predicted end (1600): 600, earlier than 900 */
    CHECK(pl_proactive_lead_at(900, 100, ends, 3, 1000, &rule) == 600 && rule == PL_RELEASE_LEAD);
    /* never before submission */
    CHECK(pl_proactive_lead_at(900, 100, ends, 3, 5000, NULL) == 100);
}

static void test_order(void) {
    int none[] = {0, 0}, one[] = {1, 0}, both[] = {1, 1};
    CHECK(!pl_order_satisfied(none, 2));
    CHECK(!pl_order_satisfied(one, 2));
    CHECK(pl_order_satisfied(both, 2));
    CHECK(pl_order_satisfied(NULL, 0));
    /* the ungate time says nothing about order: a step ungated long before its predecessor
     * ends still may not bind until the predecessor succeeded */
    int64_t end = 1000;
    int64_t at = pl_proactive_ungate_at(0, &end, 1, 900);
    CHECK(at == 100);
    CHECK(!pl_order_satisfied(none, 1));
}

static void test_estimate(void) {
    asa_key k, other;
    tm_err err = {0};
    CHECK(asa_key_make(&k, "default", "", 2, 500, 1LL << 28, &err) == 0);
    CHECK(asa_key_make(&other, "default", "", 4, 500, 1LL << 28, &err) == 0);
    waits_record recs[2];
    waits_record_init(&recs[0], &other);
    waits_record_init(&recs[1], &k);
    asa_config cfg;
    asa_config_default(&cfg, ASA_POLICY_TUNED);
    asa_rng rng;
    asa_rng_seed(&rng, 7);
    for (int i = 0; i < 200; i++)
        CHECK(waits_observe(&recs[1], &cfg, 600, &rng, &err) == 0);
    int learned = -1;
    double e = pl_mode_estimate(recs, 2, &k, &learned);
    CHECK(learned == 1);
    CHECKF(fabs(e - waits_estimate(&recs[1])) < 1e-9 && e > 0, "estimate %g", e);
    /* unknown shape or no store: the documented default */
    asa_key unknown;
    CHECK(asa_key_make(&unknown, "default", "", 3, 500, 1LL << 28, &err) == 0);
    CHECK(pl_mode_estimate(recs, 2, &unknown, &learned) == ASA_DEFAULT_ESTIMATE_S);
    CHECK(learned == 0);
    CHECK(pl_mode_estimate(NULL, 0, &k, &learned) == ASA_DEFAULT_ESTIMATE_S && learned == 0);
}

/* the native workflow and the Workflow object take a step's mode, and refuse a wrong one */
static void test_workflow_mode(void) {
    tm_err err = {0};
    json_t *ok =
        json_loads("{\"name\":\"w\",\"steps\":[{\"name\":\"a\",\"mode\":\"proactive\","
                   "\"requests\":{\"cpu\":1,\"memory\":\"1Gi\"},\"duration\":10,\"image\":\"x\"}]}",
                   0, NULL);
    pl_workflow *wf = pl_workflow_from_native(ok, "t", &err);
    CHECKF(wf != NULL, "%s", err.msg);
    pl_workflow_free(wf);
    json_t *bad =
        json_loads("{\"name\":\"w\",\"steps\":[{\"name\":\"a\",\"mode\":\"eager\","
                   "\"requests\":{\"cpu\":1,\"memory\":\"1Gi\"},\"duration\":10,\"image\":\"x\"}]}",
                   0, NULL);
    CHECK(pl_workflow_from_native(bad, "t", &err) == NULL);
    CHECKF(strstr(err.msg, "mode must be reserve, proactive or on-completion") != NULL, "%s",
           err.msg);
    json_decref(ok);
    json_decref(bad);
}

int main(void) {
    RUN(test_parse);
    RUN(test_choose);
    RUN(test_ungate_at);
    RUN(test_release_at);
    RUN(test_lead_at);
    RUN(test_order);
    RUN(test_estimate);
    RUN(test_workflow_mode);
    return TEST_SUMMARY();
}
