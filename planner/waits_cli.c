/* waits_cli.c: `tarema-planner waits [--namespace NS] [--json] [--db URI]`: reads the learned
 * waits from PostgreSQL (labeler/waits_store.h) and prints, per job shape, the current estimate,
 * its distribution, the hit and miss ratios and the over-prediction overhead. Rows the store
 * cannot read are skipped with a warning on stderr. */
#include "planner/waits_cli.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "labeler/waits_store.h"
#include "lib/quantity.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: tarema-planner waits [--namespace NS] [--json] [--db URI]\n"
            "  the learned queue wait per job shape (namespace, node group, pods, cpu and\n"
            "  memory per pod): the estimate (the most probable of the 53 alternatives),\n"
            "  its distribution (median, 90th percentile, most probable alternatives), the\n"
            "  hit and miss (over-prediction) ratios of past estimates and the core-hours\n"
            "  over-predictions would have held idle. Shapes never observed: %.0f s.\n"
            "  --db URI   the labeler's database (else $DATABASE_URL, else PG* variables)\n",
            ASA_DEFAULT_ESTIMATE_S);
}

static void on_warn(void *ud, const char *msg) {
    (void)ud;
    fprintf(stderr, "tarema-planner waits: warning: %s\n", msg);
}

/* The three most probable alternatives. */
static void top3(const asa_learner *l, int idx[3]) {
    for (int k = 0; k < 3; k++) {
        idx[k] = -1;
        for (int i = 0; i < ASA_M; i++) {
            if ((k > 0 && i == idx[0]) || (k > 1 && i == idx[1]))
                continue;
            if (idx[k] < 0 || l->p[i] > l->p[idx[k]])
                idx[k] = i;
        }
    }
}

static json_t *record_json(const waits_record *r) {
    const waits_stats *s = &r->st;
    int top[3];
    top3(&r->l, top);
    json_t *best = json_array();
    for (int k = 0; k < 3; k++)
        json_array_append_new(
            best, json_pack("{s:f, s:f}", "wait_s", asa_alternative(top[k]), "p", r->l.p[top[k]]));
    double mean = s->observations ? s->wait_sum_s / (double)s->observations : 0;
    return json_pack("{s:s, s:s, s:i, s:I, s:I, s:f, s:{s:f, s:f, s:o, s:I}, s:I, s:I, s:f, s:f,"
                     " s:{s:I, s:f, s:f, s:f}, s:{s:f, s:f, s:f, s:f}}",
                     "namespace", r->key.ns, "node_group", r->key.group, "pods", r->key.pods,
                     "cpu_milli", (json_int_t)r->key.cpu_milli, "memory_bytes",
                     (json_int_t)r->key.mem_bytes, "estimate_s", waits_estimate(r), "distribution",
                     "p50_s", waits_quantile(&r->l, 0.5), "p90_s", waits_quantile(&r->l, 0.9),
                     "most_probable", best, "rounds", (json_int_t)r->l.round, "observations",
                     (json_int_t)s->observations, "scored", (json_int_t)s->scored, "hit_ratio",
                     waits_hit_ratio(r), "miss_ratio", waits_miss_ratio(r), "over_prediction",
                     "count", (json_int_t)s->overs, "total_s", s->over_s, "mean_s",
                     s->scored ? s->over_s / (double)s->scored : 0.0, "core_hours",
                     waits_overhead_core_h(r), "waits", "min_s", s->wait_min_s, "mean_s", mean,
                     "max_s", s->wait_max_s, "last_s", s->last_wait_s);
}

static void print_table(const waits_record *v, size_t n) {
    printf("%-16s %-10s %5s %7s %8s %9s %9s %9s %6s %6s %6s %10s %s\n", "NAMESPACE", "GROUP",
           "PODS", "CPU", "MEMORY", "ESTIMATE", "P50", "P90", "WAITS", "HIT", "MISS", "OH(CORE-H)",
           "OBSERVED(MIN/MEAN/MAX)");
    for (size_t i = 0; i < n; i++) {
        const waits_record *r = &v[i];
        char cpu[TM_QUANTITY_BUF], mem[TM_QUANTITY_BUF], hit[16], miss[16];
        tm_quantity_format_milli(r->key.cpu_milli, cpu, sizeof cpu);
        tm_quantity_format_bytes(r->key.mem_bytes, mem, sizeof mem);
        if (r->st.scored) {
            snprintf(hit, sizeof hit, "%.0f%%", 100 * waits_hit_ratio(r));
            snprintf(miss, sizeof miss, "%.0f%%", 100 * waits_miss_ratio(r));
        } else {
            snprintf(hit, sizeof hit, "-");
            snprintf(miss, sizeof miss, "-");
        }
        printf(
            "%-16s %-10s %5d %7s %8s %8.0fs %8.0fs %8.0fs %6lld %6s %6s %10.3f %.0f/%.0f/%.0fs\n",
            r->key.ns, r->key.group[0] ? r->key.group : "-", r->key.pods, cpu, mem,
            waits_estimate(r), waits_quantile(&r->l, 0.5), waits_quantile(&r->l, 0.9),
            r->st.observations, hit, miss, waits_overhead_core_h(r), r->st.wait_min_s,
            r->st.observations ? r->st.wait_sum_s / (double)r->st.observations : 0,
            r->st.wait_max_s);
    }
    if (n == 0)
        printf("(no waits observed yet: every shape uses the default estimate of %.0f s)\n",
               ASA_DEFAULT_ESTIMATE_S);
}

int planner_waits_main(int argc, char **argv) {
    static const struct option longopts[] = {{"namespace", required_argument, 0, 'n'},
                                             {"json", no_argument, 0, 'j'},
                                             {"db", required_argument, 0, 'd'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    const char *ns = NULL, *db = getenv("DATABASE_URL");
    int as_json = 0, ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "n:", longopts, NULL)) != -1) {
        switch (ch) {
        case 'n':
            ns = optarg;
            break;
        case 'j':
            as_json = 1;
            break;
        case 'd':
            db = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr,
                "tarema-planner waits: unexpected argument '%s' (a namespace is given with "
                "--namespace)\n",
                argv[optind]);
        usage(stderr);
        return 2;
    }
    tm_err err = {0};
    lab_waits_store *s = lab_waits_store_open(db, NULL, on_warn, NULL, &err);
    waits_record *v = NULL;
    size_t n = 0;
    if (!s || lab_waits_store_list(s, ns, &v, &n, &err) < 0) {
        fprintf(stderr, "tarema-planner waits: %s\n", err.msg);
        lab_waits_store_close(s);
        return 1;
    }
    lab_waits_store_close(s);
    if (as_json) {
        json_t *shapes = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(shapes, record_json(&v[i]));
        json_t *doc =
            json_pack("{s:f, s:s, s:s, s:o}", "default_estimate_s", ASA_DEFAULT_ESTIMATE_S,
                      "estimate", "mode of p", "policy", "full", "shapes", shapes);
        json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
        fputc('\n', stdout);
        json_decref(doc);
    } else {
        print_table(v, n);
    }
    free(v);
    return 0;
}
