/* asa_tables.c: the Tables 1 and 2 simulation (see asa_tables.h; the model and every number
 * in it: docs/asa.md, "Tables 1 and 2"). */
#include "sim/asa_tables.h"

#include <math.h>
#include <string.h>

#include "labeler/asa_table.h"

/* A stage: parallel ones use the peak size and run work / cores + PAR_OVERHEAD_S; sequential
 * ones use one 28-core node (or the peak when smaller) for a fixed time. Shaped after the
 * paper's section 4.3: Montage "nine ordered stages ... two parallel (first two, and fifth) and
 * two sequential (third and fourth, and last three)", BLAST one parallel then one sequential,
 * Statistics "two sequential and two parallel stages, intertwined". Work and times are ours,
 * chosen so that Big Job's run time at 28 cores is near Table 1's makespan minus its wait. */
typedef struct {
    int parallel;
    double amount; /* core-seconds of work (parallel) or seconds (sequential) */
} stage_def;

static const stage_def MONTAGE[] = {{1, 8000}, {1, 6000}, {0, 40}, {0, 30}, {1, 10000},
                                    {0, 25},   {0, 25},   {0, 30}, {0, 30}};
static const stage_def BLAST[] = {{1, 72000}, {0, 60}};
static const stage_def STATS[] = {{0, 600}, {1, 70000}, {0, 500}, {1, 45000}};
static const struct {
    const char *name;
    const stage_def *st;
    int n;
} WF[ASA_TAB_WORKFLOWS] = {{"montage", MONTAGE, 9}, {"blast", BLAST, 2}, {"statistics", STATS, 4}};

#define PAR_OVERHEAD_S 30.0
#define NODE_CORES     28
#define MAX_STAGES     9
#define SLOT_S         60.0 /* the planner's default slot */
#define WARMUP_WAITS   50   /* queue waits ASA sees from other users before the first run */

static const int SIZES[ASA_TAB_SIZES] = {28, 56, 112, 160, 320, 640};
/* Mean wait of a peak-size request: Table 1's Big Job TWT for Montage at that size. Spread:
 * Table 2's real waits vary by ~0.5-0.75 of their mean at HPC2n (28-112 cores) and by ~0.1 at
 * UPPMAX (160-640). A smaller request waits mean x sqrt(cores / peak). */
static const double MEAN_WAIT_S[ASA_TAB_SIZES] = {150, 206, 452, 1415, 8135, 10200};
static const double WAIT_CV[ASA_TAB_SIZES] = {0.6, 0.6, 0.6, 0.1, 0.1, 0.1};
/* Each run's queue is busier or calmer than the mean by a factor of this spread (the load of
 * the other users drifts between runs; every strategy of a run sees the same factor). */
#define RUN_CV 0.2

const char *asa_tab_workflow_name(int w) {
    return w >= 0 && w < ASA_TAB_WORKFLOWS ? WF[w].name : "?";
}

const char *asa_tab_strategy_name(int s) {
    static const char *const names[] = {"bigjob", "perstage", "asa", "reserve"};
    return s >= 0 && s < ASA_TAB_STRATEGIES ? names[s] : "?";
}

int asa_tab_size(int i) {
    return i >= 0 && i < ASA_TAB_SIZES ? SIZES[i] : 0;
}

/* A log-normal draw with the given mean and coefficient of variation (Box-Muller). */
static double lognormal(asa_rng *r, double mean, double cv) {
    double u1 = asa_rng_uniform(r), u2 = asa_rng_uniform(r);
    double z = sqrt(-2 * log(u1 > 0 ? u1 : 1e-300)) * cos(2 * M_PI * u2);
    double s2 = log(1 + cv * cv);
    return mean * exp(sqrt(s2) * z - s2 / 2);
}

typedef struct {
    int n, width[MAX_STAGES], peak, size;
    double runtime[MAX_STAGES];
    double factor; /* this run's queue load */
} run_ctx;

static void build(run_ctx *c, int w, int size) {
    c->n = WF[w].n;
    c->size = size;
    c->peak = SIZES[size];
    for (int i = 0; i < c->n; i++) {
        const stage_def *d = &WF[w].st[i];
        c->width[i] = d->parallel ? c->peak : (c->peak < NODE_CORES ? c->peak : NODE_CORES);
        c->runtime[i] = d->parallel ? d->amount / c->peak + PAR_OVERHEAD_S : d->amount;
    }
}

static double draw_wait(const run_ctx *c, int width, asa_rng *r) {
    double mean = MEAN_WAIT_S[c->size] * sqrt((double)width / c->peak) * c->factor;
    return lognormal(r, mean, WAIT_CV[c->size]);
}

static void run_bigjob(const run_ctx *c, asa_rng *r, asa_tab_cell *out) {
    double w = draw_wait(c, c->peak, r), rt = 0;
    for (int i = 0; i < c->n; i++)
        rt += c->runtime[i];
    out->twt_s = w;
    out->makespan_s = w + rt;
    out->core_h = c->peak * rt / 3600;
}

static void run_perstage(const run_ctx *c, asa_rng *r, asa_tab_cell *out) {
    double now = 0;
    memset(out, 0, sizeof *out);
    for (int i = 0; i < c->n; i++) {
        double w = draw_wait(c, c->width[i], r);
        out->twt_s += w;
        now += w + c->runtime[i];
        out->core_h += c->width[i] * c->runtime[i] / 3600;
    }
    out->makespan_s = now;
}

static void run_reserve(const run_ctx *c, asa_rng *r, asa_tab_cell *out) {
    double w = draw_wait(c, c->peak, r), t = w;
    memset(out, 0, sizeof *out);
    out->twt_s = w;
    for (int i = 0; i < c->n; i++) {
        double held = ceil(c->runtime[i] / SLOT_S) * SLOT_S;
        out->core_h += c->width[i] * held / 3600;
        if (i + 1 < c->n) {
            out->twt_s += held - c->runtime[i]; /* the next stage starts at its slot */
            t += held;
        } else {
            t += c->runtime[i];
        }
    }
    out->makespan_s = t;
}

static asa_key width_key(int width) {
    asa_key k;
    asa_key_make(&k, "sim", "", 1, (long long)width * 1000, 0, NULL);
    return k;
}

/* ASA pro-active: see asa_tables.h. Event-driven over ungating and grants; predictions use
 * the estimate for stages not granted yet and the truth once granted. */
static void run_asa(const run_ctx *c, asa_table *tab, asa_rng *r, int free_early, asa_tab_cell *out,
                    asa_tab_asa *acc) {
    double u[MAX_STAGES], g[MAX_STAGES], w[MAX_STAGES], est[MAX_STAGES];
    int act[MAX_STAGES], ungated[MAX_STAGES] = {0}, granted[MAX_STAGES] = {0};
    for (int i = 0; i < c->n; i++) {
        asa_key k = width_key(c->width[i]);
        est[i] = i == 0 ? 0 : asa_table_estimate(tab, &k, r, &act[i]);
        if (i == 0)
            act[i] = -1;
    }
    double now = 0;
    u[0] = 0;
    w[0] = draw_wait(c, c->width[0], r);
    g[0] = w[0];
    ungated[0] = 1;
    for (;;) {
        double pe = 0, next_u = INFINITY, next_g = INFINITY;
        int iu = -1, ig = -1;
        for (int i = 0; i < c->n; i++) {
            double pg;
            if (granted[i]) {
                pg = g[i];
            } else if (ungated[i]) {
                pg = fmax(u[i] + est[i], now);
                if (g[i] < next_g)
                    next_g = g[i], ig = i;
            } else {
                double planned = fmax(now, pe - est[i]);
                pg = planned + est[i];
                if (planned < next_u)
                    next_u = planned, iu = i;
            }
            pe = fmax(pg, pe) + c->runtime[i];
        }
        if (iu < 0 && ig < 0)
            break;
        if (iu >= 0 && next_u <= next_g) {
            now = next_u;
            u[iu] = now;
            w[iu] = draw_wait(c, c->width[iu], r);
            g[iu] = now + w[iu];
            ungated[iu] = 1;
        } else {
            now = next_g;
            granted[ig] = 1;
            asa_key k = width_key(c->width[ig]);
            asa_table_observe(tab, &k, act[ig], w[ig], r, NULL);
        }
    }
    memset(out, 0, sizeof *out);
    double end = 0;
    for (int i = 0; i < c->n; i++) {
        double s = i == 0 ? g[0] : fmax(g[i], end);
        double idle = i == 0 || free_early ? 0 : fmax(0, end - g[i]);
        out->twt_s += s - end;
        out->core_h += c->width[i] * (c->runtime[i] + idle) / 3600;
        if (i > 0) {
            acc->real_wt_s += w[i];
            acc->est_wt_s += est[i];
            acc->pwt_s += s - end;
            acc->hit += act[i] >= 0 && act[i] == asa_closest(w[i]);
            acc->miss += est[i] > w[i];
            acc->oh_core_h += c->width[i] * idle / 3600;
        }
        end = s + c->runtime[i];
    }
    out->makespan_s = end;
}

static uint64_t mix(uint64_t seed, int a, int b, int s, int run) {
    return seed * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)a << 48) ^ ((uint64_t)b << 40) ^
           ((uint64_t)s << 32) ^ (uint64_t)run;
}

int asa_tables_run(asa_tables *t, int runs, uint64_t seed, int policy, int free_early,
                   tm_err *err) {
    if (runs < 1 || runs > 1000)
        return tm_err_set(err, "asa tables: runs %d not in 1..1000", runs);
    memset(t, 0, sizeof *t);
    t->runs = runs;
    t->seed = seed;
    t->policy = policy;
    t->free_early = free_early;
    asa_config cfg;
    asa_config_default(&cfg, (asa_policy)policy);
    if (asa_config_check(&cfg, err) < 0)
        return -1;
    for (int wf = 0; wf < ASA_TAB_WORKFLOWS; wf++) {
        for (int sz = 0; sz < ASA_TAB_SIZES; sz++) {
            run_ctx c;
            build(&c, wf, sz);
            asa_table *tab = asa_table_new(&cfg);
            if (!tab)
                return tm_err_set(err, "asa tables: out of memory");
            asa_rng lr;
            asa_rng_seed(&lr, mix(seed, wf, sz, 7, 0));
            c.factor = 1;
            for (int i = 0; i < c.n; i++) /* other users' waits, seen before the first run */
                for (int k = 0; k < WARMUP_WAITS / c.n + 1; k++) {
                    asa_key key = width_key(c.width[i]);
                    asa_table_observe(tab, &key, -1, draw_wait(&c, c.width[i], &lr), &lr, NULL);
                }
            asa_tab_asa *acc = &t->asa[wf][sz];
            for (int run = 0; run < runs; run++) {
                asa_rng fr;
                asa_rng_seed(&fr, mix(seed, wf, sz, 9, run));
                c.factor = lognormal(&fr, 1, RUN_CV);
                for (int s = 0; s < ASA_TAB_STRATEGIES; s++) {
                    asa_rng r;
                    asa_rng_seed(&r, mix(seed, wf, sz, s, run));
                    asa_tab_cell one;
                    if (s == ASA_TAB_BIGJOB)
                        run_bigjob(&c, &r, &one);
                    else if (s == ASA_TAB_PERSTAGE)
                        run_perstage(&c, &r, &one);
                    else if (s == ASA_TAB_RESERVE)
                        run_reserve(&c, &r, &one);
                    else
                        run_asa(&c, tab, &r, free_early, &one, acc);
                    asa_tab_cell *cell = &t->cell[wf][sz][s];
                    cell->twt_s += one.twt_s / runs;
                    cell->makespan_s += one.makespan_s / runs;
                    cell->core_h += one.core_h / runs;
                }
            }
            double reqs = (double)runs * (c.n - 1);
            acc->real_wt_s /= reqs;
            acc->est_wt_s /= reqs;
            acc->pwt_s /= reqs;
            acc->hit /= reqs;
            acc->miss /= reqs;
            acc->oh_core_h /= runs;
            asa_table_free(tab);
        }
    }
    return 0;
}

json_t *asa_tables_json(const asa_tables *t) {
    json_t *rows = json_array();
    for (int wf = 0; wf < ASA_TAB_WORKFLOWS; wf++)
        for (int sz = 0; sz < ASA_TAB_SIZES; sz++) {
            json_t *st = json_object();
            for (int s = 0; s < ASA_TAB_STRATEGIES; s++) {
                const asa_tab_cell *c = &t->cell[wf][sz][s];
                json_object_set_new(st, asa_tab_strategy_name(s),
                                    json_pack("{s:f, s:f, s:f}", "twt_s", c->twt_s, "makespan_s",
                                              c->makespan_s, "core_h", c->core_h));
            }
            const asa_tab_asa *a = &t->asa[wf][sz];
            json_array_append_new(
                rows,
                json_pack("{s:s, s:i, s:o, s:{s:f, s:f, s:f, s:f, s:f, s:f}}", "workflow",
                          WF[wf].name, "cores", SIZES[sz], "strategies", st, "asa_accuracy",
                          "real_wt_s", a->real_wt_s, "asa_wt_s", a->est_wt_s, "pwt_s", a->pwt_s,
                          "hit_ratio", a->hit, "miss_ratio", a->miss, "oh_core_h", a->oh_core_h));
        }
    return json_pack("{s:s, s:s, s:s, s:i, s:I, s:o}", "scenario", "tables", "policy",
                     asa_policy_name((asa_policy)t->policy), "early",
                     t->free_early ? "free" : "hold", "runs", t->runs, "seed", (json_int_t)t->seed,
                     "rows", rows);
}

/* x relative to best as "+12%" ("" within 1 %), like Table 1's parentheses. */
static void rel(char *buf, size_t n, double x, double best) {
    double p = best > 0 ? 100 * (x / best - 1) : 0;
    if (p >= 1)
        snprintf(buf, n, "(+%.0f%%)", p);
    else
        buf[0] = 0;
}

void asa_tables_print(FILE *out, const asa_tables *t) {
    fprintf(out,
            "ASA Table 1 (simulated, %d runs per cell, seed %llu, ASA policy %s, early grants %s): "
            "mean per run\n",
            t->runs, (unsigned long long)t->seed, asa_policy_name((asa_policy)t->policy),
            t->free_early ? "free" : "held");
    fprintf(out, "%-10s %5s |", "workflow", "cores");
    for (int s = 0; s < ASA_TAB_STRATEGIES; s++)
        fprintf(out, " %-36s|", asa_tab_strategy_name(s));
    fprintf(out, "\n%-10s %5s |", "", "");
    for (int s = 0; s < ASA_TAB_STRATEGIES; s++)
        fprintf(out, " %11s %13s %10s|", "TWT(s)", "makespan(s)", "CH(h)");
    fprintf(out, "\n");
    for (int wf = 0; wf < ASA_TAB_WORKFLOWS; wf++) {
        double norm[ASA_TAB_STRATEGIES][3] = {{0}};
        for (int sz = 0; sz < ASA_TAB_SIZES; sz++) {
            double best[3] = {INFINITY, INFINITY, INFINITY};
            for (int s = 0; s < ASA_TAB_STRATEGIES; s++) {
                const asa_tab_cell *c = &t->cell[wf][sz][s];
                best[0] = fmin(best[0], c->twt_s);
                best[1] = fmin(best[1], c->makespan_s);
                best[2] = fmin(best[2], c->core_h);
            }
            fprintf(out, "%-10s %5d |", WF[wf].name, SIZES[sz]);
            for (int s = 0; s < ASA_TAB_STRATEGIES; s++) {
                const asa_tab_cell *c = &t->cell[wf][sz][s];
                char a[16], b[16], d[16];
                rel(a, sizeof a, c->twt_s, best[0]);
                rel(b, sizeof b, c->makespan_s, best[1]);
                rel(d, sizeof d, c->core_h, best[2]);
                fprintf(out, " %5.0f%-6s %6.0f%-7s %4.1f%-6s|", c->twt_s, a, c->makespan_s, b,
                        c->core_h, d);
                norm[s][0] += c->twt_s / best[0] / ASA_TAB_SIZES;
                norm[s][1] += c->makespan_s / best[1] / ASA_TAB_SIZES;
                norm[s][2] += c->core_h / best[2] / ASA_TAB_SIZES;
            }
            fprintf(out, "\n");
        }
        fprintf(out, "%-10s %5s |", "normalized", "avg");
        for (int s = 0; s < ASA_TAB_STRATEGIES; s++)
            fprintf(out, " %10.0f%% %12.0f%% %9.0f%%|", 100 * (norm[s][0] - 1),
                    100 * (norm[s][1] - 1), 100 * (norm[s][2] - 1));
        fprintf(out, "\n");
    }
    fprintf(out, "\nASA Table 2 (simulated): per stage request after the first\n");
    fprintf(out, "(hit: the estimate was the alternative closest to the wait; miss: above it,\n"
                 " Table 2's miss; Table 2's hit is 1 - miss)\n");
    fprintf(out, "%-10s %5s %10s %10s %10s %6s %6s %10s\n", "workflow", "cores", "realWT(s)",
            "asaWT(s)", "PWT(s)", "hit", "miss", "OH(CH h)");
    for (int wf = 0; wf < ASA_TAB_WORKFLOWS; wf++)
        for (int sz = 0; sz < ASA_TAB_SIZES; sz++) {
            const asa_tab_asa *a = &t->asa[wf][sz];
            fprintf(out, "%-10s %5d %10.0f %10.0f %10.0f %5.0f%% %5.0f%% %10.2f\n", WF[wf].name,
                    SIZES[sz], a->real_wt_s, a->est_wt_s, a->pwt_s, 100 * a->hit, 100 * a->miss,
                    a->oh_core_h);
        }
}
