/* lib_metrics_test.c: the Prometheus registry: exact text exposition of a small registry, value
 * formatting, registration errors, misuse, and updates from several threads at once. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/log.h"
#include "lib/metrics.h"

static void test_exposition_exact(void) {
    tm_err err = {0};
    tm_metrics *reg = tm_metrics_new();
    tm_metric *att = tm_metrics_counter(
        reg, "tarema_attempts_total", "Scheduling attempts by result.", TM_LABELS("result"), &err);
    tm_metric *q = tm_metrics_gauge(reg, "tarema_queue_length", "Pods waiting.", NULL, &err);
    double bounds[] = {0.005, 0.1, 1};
    tm_metric *lat = tm_metrics_histogram(reg, "tarema_latency_seconds", "Latency.\nSecond line \\",
                                          TM_LABELS("op"), bounds, 3, &err);
    tm_metric *plain = tm_metrics_histogram(reg, "plain_hist", NULL, NULL, bounds, 1, &err);
    tm_metric *esc = tm_metrics_gauge(reg, "esc", "", TM_LABELS("a", "b"), &err);
    CHECK(att && q && lat && plain && esc);
    if (!(att && q && lat && plain && esc)) {
        tm_metrics_free(reg);
        return;
    }
    tm_metrics_inc(att, TM_LABELS("unschedulable"));
    tm_metrics_inc(att, TM_LABELS("scheduled"));
    tm_metrics_add(att, TM_LABELS("scheduled"), 2);
    tm_metrics_set(q, NULL, 7);
    tm_metrics_observe(lat, TM_LABELS("bind"), 0.001);
    tm_metrics_observe(lat, TM_LABELS("bind"), 0.5);
    tm_metrics_observe(lat, TM_LABELS("bind"), 3);
    tm_metrics_observe(lat, TM_LABELS("filter"), 0.1); /* on a bound: counts in that bucket */
    tm_metrics_set(esc, TM_LABELS("q\"uo\\te", "new\nline"), -1.5);
    char *text = tm_metrics_render(reg);
    const char *want = "# HELP tarema_attempts_total Scheduling attempts by result.\n"
                       "# TYPE tarema_attempts_total counter\n"
                       "tarema_attempts_total{result=\"scheduled\"} 3\n"
                       "tarema_attempts_total{result=\"unschedulable\"} 1\n"
                       "# HELP tarema_queue_length Pods waiting.\n"
                       "# TYPE tarema_queue_length gauge\n"
                       "tarema_queue_length 7\n"
                       "# HELP tarema_latency_seconds Latency.\\nSecond line \\\\\n"
                       "# TYPE tarema_latency_seconds histogram\n"
                       "tarema_latency_seconds_bucket{op=\"bind\",le=\"0.005\"} 1\n"
                       "tarema_latency_seconds_bucket{op=\"bind\",le=\"0.1\"} 1\n"
                       "tarema_latency_seconds_bucket{op=\"bind\",le=\"1\"} 2\n"
                       "tarema_latency_seconds_bucket{op=\"bind\",le=\"+Inf\"} 3\n"
                       "tarema_latency_seconds_sum{op=\"bind\"} 3.501\n"
                       "tarema_latency_seconds_count{op=\"bind\"} 3\n"
                       "tarema_latency_seconds_bucket{op=\"filter\",le=\"0.005\"} 0\n"
                       "tarema_latency_seconds_bucket{op=\"filter\",le=\"0.1\"} 1\n"
                       "tarema_latency_seconds_bucket{op=\"filter\",le=\"1\"} 1\n"
                       "tarema_latency_seconds_bucket{op=\"filter\",le=\"+Inf\"} 1\n"
                       "tarema_latency_seconds_sum{op=\"filter\"} 0.1\n"
                       "tarema_latency_seconds_count{op=\"filter\"} 1\n"
                       "# TYPE plain_hist histogram\n"
                       "plain_hist_bucket{le=\"0.005\"} 0\n"
                       "plain_hist_bucket{le=\"+Inf\"} 0\n"
                       "plain_hist_sum 0\n"
                       "plain_hist_count 0\n"
                       "# TYPE esc gauge\n"
                       "esc{a=\"q\\\"uo\\\\te\",b=\"new\\nline\"} -1.5\n";
    CHECK_STR(text, want);
    free(text);
    CHECK_NEAR(tm_metrics_value(att, TM_LABELS("scheduled")), 3, 0);
    CHECK_NEAR(tm_metrics_value(att, TM_LABELS("never")), 0, 0);
    CHECK_NEAR(tm_metrics_value(lat, TM_LABELS("bind")), 3.501, 1e-12);
    CHECK_INT(tm_metrics_count(lat, TM_LABELS("bind")), 3);
    CHECK_INT(tm_metrics_count(att, TM_LABELS("scheduled")), 0);
    tm_metrics_free(reg);
}

static void test_value_format(void) {
    static const struct {
        double v;
        const char *want;
    } cases[] = {
        {0, "0"},
        {1, "1"},
        {-2, "-2"},
        {0.5, "0.5"},
        {123456, "123456"},
        {1e6, "1e+06"},
        {1234567, "1.234567e+06"},
        {0.0001, "0.0001"},
        {0.00001, "1e-05"},
        {3.14159, "3.14159"},
        {0.1 + 0.2, "0.30000000000000004"},
        {1e21, "1e+21"},
        {INFINITY, "+Inf"},
        {-INFINITY, "-Inf"},
        {NAN, "NaN"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tm_metrics *reg = tm_metrics_new();
        tm_metric *g = tm_metrics_gauge(reg, "g", NULL, NULL, NULL);
        tm_metrics_set(g, NULL, cases[i].v);
        char *text = tm_metrics_render(reg);
        char want[128];
        snprintf(want, sizeof want, "# TYPE g gauge\ng %s\n", cases[i].want);
        CHECK_STR(text, want);
        free(text);
        tm_metrics_free(reg);
    }
}

static void test_registration_errors(void) {
    tm_metrics *reg = tm_metrics_new();
    tm_err err = {0};
    CHECK(tm_metrics_counter(reg, "ok_total", "h", NULL, &err) != NULL);
    CHECK(tm_metrics_counter(reg, "ok_total", "h", NULL, &err) == NULL);
    CHECK(strstr(err.msg, "ok_total registered twice") != NULL);
    CHECK(tm_metrics_gauge(reg, "ok_total", "h", NULL, &err) == NULL);
    CHECK(tm_metrics_counter(reg, "9bad", "h", NULL, &err) == NULL);
    CHECK(strstr(err.msg, "\"9bad\"") != NULL);
    CHECK(tm_metrics_counter(reg, "bad-name", "h", NULL, &err) == NULL);
    CHECK(tm_metrics_counter(reg, "", "h", NULL, &err) == NULL);
    CHECK(tm_metrics_counter(reg, NULL, "h", NULL, &err) == NULL);
    CHECK(tm_metrics_counter(reg, "ns:sub_total", "h", NULL, &err) != NULL);
    CHECK(tm_metrics_counter(reg, "x_total", "h", TM_LABELS("a:b"), &err) == NULL);
    CHECK(strstr(err.msg, "\"a:b\"") != NULL);
    CHECK(tm_metrics_counter(reg, "x_total", "h", TM_LABELS("__x"), &err) == NULL);
    CHECK(tm_metrics_counter(reg, "x_total", "h", TM_LABELS("a", "a"), &err) == NULL);
    CHECK(strstr(err.msg, "given twice") != NULL);
    CHECK(tm_metrics_counter(reg, "le_ok_total", "h", TM_LABELS("le"), &err) != NULL);
    double b_ok[] = {1, 2}, b_dec[] = {1, 1}, b_inf[] = {1, INFINITY};
    CHECK(tm_metrics_histogram(reg, "h1", "h", TM_LABELS("le"), b_ok, 2, &err) == NULL);
    CHECK(strstr(err.msg, "reserved") != NULL);
    CHECK(tm_metrics_histogram(reg, "h2", "h", NULL, b_dec, 2, &err) == NULL);
    CHECK(strstr(err.msg, "increase strictly") != NULL);
    CHECK(tm_metrics_histogram(reg, "h3", "h", NULL, b_inf, 2, &err) == NULL);
    CHECK(strstr(err.msg, "not finite") != NULL);
    CHECK(tm_metrics_histogram(reg, "h4", "h", NULL, NULL, 2, &err) == NULL);
    CHECK(tm_metrics_histogram(reg, "h5", "h", NULL, NULL, 0, &err) != NULL);
    tm_metrics_free(reg);
}

static void test_misuse_ignored(void) {
    tm_metrics *reg = tm_metrics_new();
    tm_metric *c = tm_metrics_counter(reg, "c_total", NULL, NULL, NULL);
    tm_metric *h = tm_metrics_histogram(reg, "h", NULL, NULL, (double[]){1}, 1, NULL);
    tm_metrics_add(c, NULL, 5);
    tm_metrics_add(c, NULL, -1);  /* counters never go down */
    tm_metrics_add(c, NULL, NAN); /* nor become NaN */
    tm_metrics_set(c, NULL, 0);
    tm_metrics_observe(c, NULL, 1);
    tm_metrics_inc(h, NULL);
    tm_metrics_set(h, NULL, 9);
    CHECK_NEAR(tm_metrics_value(c, NULL), 5, 0);
    CHECK_INT(tm_metrics_count(h, NULL), 0);
    tm_metrics_inc(NULL, NULL); /* a NULL handle (failed registration) is harmless */
    CHECK_NEAR(tm_metrics_value(NULL, NULL), 0, 0);
    /* a labelled metric given no values records under empty values */
    tm_metric *l = tm_metrics_gauge(reg, "l", NULL, TM_LABELS("a", "b"), NULL);
    tm_metrics_set(l, NULL, 4);
    tm_metrics_add(l, (const char *const[]){"x", NULL}, 1);
    CHECK_NEAR(tm_metrics_value(l, TM_LABELS("", "")), 4, 0);
    CHECK_NEAR(tm_metrics_value(l, TM_LABELS("x", "")), 1, 0);
    char *text = tm_metrics_render(reg);
    CHECK(text && strstr(text, "l{a=\"\",b=\"\"} 4\nl{a=\"x\",b=\"\"} 1\n") != NULL);
    free(text);
    tm_metrics_free(reg);
    text = tm_metrics_render(NULL);
    CHECK_STR(text, "");
    free(text);
}

static void test_exp_buckets(void) {
    double b[4];
    tm_metrics_exp_buckets(0.001, 10, 4, b);
    CHECK_NEAR(b[0], 0.001, 1e-15);
    CHECK_NEAR(b[1], 0.01, 1e-15);
    CHECK_NEAR(b[2], 0.1, 1e-15);
    CHECK_NEAR(b[3], 1, 1e-12);
}

enum { NTHREADS = 4, NITER = 20000 };

typedef struct {
    tm_metric *c, *h, *g;
    int id;
} worker_arg;

static void *worker(void *p) {
    const worker_arg *a = p;
    static const char *const results[] = {"scheduled", "unschedulable", "error"};
    char mine[16];
    snprintf(mine, sizeof mine, "t%d", a->id);
    for (int i = 0; i < NITER; i++) {
        tm_metrics_inc(a->c, TM_LABELS(results[i % 3]));
        tm_metrics_inc(a->c, TM_LABELS(mine));
        tm_metrics_observe(a->h, NULL, (i % 4) * 0.5);
        tm_metrics_add(a->g, NULL, (i % 2) ? 1 : -1);
    }
    return NULL;
}

static void test_concurrent_updates(void) {
    tm_metrics *reg = tm_metrics_new();
    double bounds[] = {0.25, 0.75};
    tm_metric *c = tm_metrics_counter(reg, "c_total", NULL, TM_LABELS("result"), NULL);
    tm_metric *h = tm_metrics_histogram(reg, "h", NULL, NULL, bounds, 2, NULL);
    tm_metric *g = tm_metrics_gauge(reg, "g", NULL, NULL, NULL);
    pthread_t th[NTHREADS];
    worker_arg args[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        args[i] = (worker_arg){c, h, g, i};
        pthread_create(&th[i], NULL, worker, &args[i]);
    }
    for (int r = 0; r < 20; r++) { /* scrapes while updating must be safe */
        char *text = tm_metrics_render(reg);
        CHECK(text != NULL);
        free(text);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    double per = NITER / 3; /* 20000 = 6667 + 6667 + 6666 */
    CHECK_NEAR(tm_metrics_value(c, TM_LABELS("scheduled")), NTHREADS * (per + 1), 0);
    CHECK_NEAR(tm_metrics_value(c, TM_LABELS("unschedulable")), NTHREADS * (per + 1), 0);
    CHECK_NEAR(tm_metrics_value(c, TM_LABELS("error")), NTHREADS * per, 0);
    for (int i = 0; i < NTHREADS; i++) {
        char mine[16];
        snprintf(mine, sizeof mine, "t%d", i);
        CHECK_NEAR(tm_metrics_value(c, TM_LABELS(mine)), NITER, 0);
    }
    CHECK_INT(tm_metrics_count(h, NULL), NTHREADS * NITER);
    CHECK_NEAR(tm_metrics_value(h, NULL), NTHREADS * (NITER / 4) * (0 + 0.5 + 1 + 1.5), 1e-6);
    CHECK_NEAR(tm_metrics_value(g, NULL), 0, 0);
    char *text = tm_metrics_render(reg);
    char line[128];
    snprintf(line, sizeof line, "h_bucket{le=\"0.75\"} %d\n", NTHREADS * NITER / 2);
    CHECK(text && strstr(text, line));
    snprintf(line, sizeof line, "h_bucket{le=\"+Inf\"} %d\n", NTHREADS * NITER);
    CHECK(text && strstr(text, line));
    free(text);
    tm_metrics_free(reg);
}

/* An alias shows its metric's series under another name with constant labels first; updates
 * through either handle land in the one series; a histogram keeps its buckets; bad aliases are
 * refused with a reason. */
static void test_alias(void) {
    tm_err err = {0};
    tm_metrics *reg = tm_metrics_new();
    tm_metric *att =
        tm_metrics_counter(reg, "tarema_attempts_total", "Attempts.", TM_LABELS("result"), &err);
    tm_metric *k = tm_metrics_alias(reg, att, "scheduler_schedule_attempts_total", "Kube's.",
                                    TM_LABELS("profile", "tarema"), &err);
    double b[] = {0.5};
    tm_metric *h = tm_metrics_histogram(reg, "h_seconds", NULL, NULL, b, 1, &err);
    tm_metric *hk = tm_metrics_alias(reg, h, "k_seconds", NULL,
                                     TM_LABELS("profile", "p", "result", "scheduled"), &err);
    CHECK(att && k && h && hk);
    if (!(att && k && h && hk)) {
        tm_metrics_free(reg);
        return;
    }
    tm_metrics_inc(att, TM_LABELS("scheduled"));
    tm_metrics_inc(k, TM_LABELS("scheduled")); /* through the alias: the same series */
    tm_metrics_observe(h, NULL, 0.25);
    CHECK(tm_metrics_value(att, TM_LABELS("scheduled")) == 2);
    CHECK(tm_metrics_value(k, TM_LABELS("scheduled")) == 2);
    char *text = tm_metrics_render(reg);
    CHECK_STR(text, "# HELP tarema_attempts_total Attempts.\n"
                    "# TYPE tarema_attempts_total counter\n"
                    "tarema_attempts_total{result=\"scheduled\"} 2\n"
                    "# HELP scheduler_schedule_attempts_total Kube's.\n"
                    "# TYPE scheduler_schedule_attempts_total counter\n"
                    "scheduler_schedule_attempts_total{profile=\"tarema\",result=\"scheduled\"} 2\n"
                    "# TYPE h_seconds histogram\n"
                    "h_seconds_bucket{le=\"0.5\"} 1\n"
                    "h_seconds_bucket{le=\"+Inf\"} 1\n"
                    "h_seconds_sum 0.25\n"
                    "h_seconds_count 1\n"
                    "# TYPE k_seconds histogram\n"
                    "k_seconds_bucket{profile=\"p\",result=\"scheduled\",le=\"0.5\"} 1\n"
                    "k_seconds_bucket{profile=\"p\",result=\"scheduled\",le=\"+Inf\"} 1\n"
                    "k_seconds_sum{profile=\"p\",result=\"scheduled\"} 0.25\n"
                    "k_seconds_count{profile=\"p\",result=\"scheduled\"} 1\n");
    free(text);
    /* refused: a name taken, a label named twice, an odd constant list, no metric */
    CHECK(!tm_metrics_alias(reg, att, "tarema_attempts_total", NULL, NULL, &err));
    CHECK(strstr(err.msg, "registered twice") != NULL);
    CHECK(!tm_metrics_alias(reg, att, "x_total", NULL, TM_LABELS("result", "r"), &err));
    CHECK(strstr(err.msg, "given twice") != NULL);
    CHECK(!tm_metrics_alias(reg, att, "y_total", NULL, TM_LABELS("profile"), &err));
    CHECK(strstr(err.msg, "pairs") != NULL);
    CHECK(!tm_metrics_alias(reg, NULL, "z_total", NULL, NULL, &err));
    tm_metrics_free(reg);
}

/* Bucket counts gathered elsewhere (tm_metrics_observe_buckets): the same series as that many
 * single observations; a count array of another layout or a non-histogram is ignored. */
static void test_observe_buckets(void) {
    tm_err err;
    tm_metrics *reg = tm_metrics_new();
    const double bounds[] = {0.1, 1};
    tm_metric *h = tm_metrics_histogram(reg, "h", NULL, TM_LABELS("k"), bounds, 2, &err);
    tm_metric *c = tm_metrics_counter(reg, "c", NULL, NULL, &err);
    CHECK(h && c);
    tm_metrics_observe(h, TM_LABELS("a"), 0.05);
    const uint64_t counts[] = {2, 0, 3};
    tm_metrics_observe_buckets(h, TM_LABELS("a"), counts, 3, 7.5);
    tm_metrics_observe_buckets(h, TM_LABELS("a"), counts, 2, 100); /* wrong layout: ignored */
    tm_metrics_observe_buckets(c, NULL, counts, 3, 100);           /* not a histogram */
    CHECK_INT(tm_metrics_count(h, TM_LABELS("a")), 6);
    CHECK_NEAR(tm_metrics_value(h, TM_LABELS("a")), 7.55, 1e-9);
    CHECK_NEAR(tm_metrics_value(c, NULL), 0, 1e-9);
    char *text = tm_metrics_render(reg);
    CHECK(text && strstr(text, "h_bucket{k=\"a\",le=\"0.1\"} 3\n") &&
          strstr(text, "h_bucket{k=\"a\",le=\"1\"} 3\n") &&
          strstr(text, "h_bucket{k=\"a\",le=\"+Inf\"} 6\n"));
    free(text);
    tm_metrics_free(reg);
}

int main(void) {
    tm_log_configure("error", "text"); /* the misuse test logs warnings on purpose */
    RUN(test_exposition_exact);
    RUN(test_value_format);
    RUN(test_registration_errors);
    RUN(test_misuse_ignored);
    RUN(test_exp_buckets);
    RUN(test_concurrent_updates);
    RUN(test_alias);
    RUN(test_observe_buckets);
    return TEST_SUMMARY();
}
