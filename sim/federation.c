/* federation.c: the DAM paper's federated simulation (see federation.h, docs/dam.md). */
#include "sim/federation.h"

#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dam/rank.h"
#include "sim/cli.h"
#include "sim/model.h"
#include "sim/rng.h"

/* ---- the platform (our choice: the paper's Figure 2 is not in its text) ---- */

typedef struct fed_spec {
    const char *name, *site, *location;
    int cloud;
    double cores;
    double perf;                     /* speed per core relative to the fastest HPC cores */
    double queue_mean_s, queue_sd_s; /* HPC only */
} fed_spec;

/* Two datacentres as the LEXIS federation of section 5: IT4Innovations and LRZ, three HPC
 * clusters and one cloud partition at the first, two and one at the second. */
static const fed_spec PLATFORM[] = {
    {"it4i-salomon", "it4i", "it4i-lustre", 0, 4096, 0.45, 3600, 600},
    {"it4i-barbora", "it4i", "it4i-lustre", 0, 2048, 0.70, 2400, 400},
    {"it4i-karolina", "it4i", "it4i-lustre", 0, 8192, 0.90, 1800, 300},
    {"lrz-supermuc-ng", "lrz", "lrz-dss", 0, 16384, 1.00, 1800, 60},
    {"lrz-linux", "lrz", "lrz-dss", 0, 2048, 0.35, 1200, 200},
    {"it4i-cloud", "it4i", "it4i-cloud", 1, 1024, 0.80, 0, 0},
    {"lrz-cloud", "lrz", "lrz-cloud", 1, 1024, 1.00, 0, 0},
};
#define NCLUSTERS (sizeof PLATFORM / sizeof PLATFORM[0])

/* The workflow: pre-processing (cloud), simulation (HPC), post-processing (cloud). Work is in
 * core-seconds on cores of speed 1; each job reads the previous one's output. */
typedef struct fed_stage {
    int cloud;
    double cores, work, input_bytes;
} fed_stage;
static const fed_stage STAGES[3] = {
    {1, 10, 10 * 4000.0, 40e9},    /* 40 GB of input data at LRZ */
    {0, 128, 128 * 80000.0, 20e9}, /* the heavy WRF-like phase */
    {1, 10, 10 * 4000.0, 20e9},
};
static const char *const INPUT_LOCATION = "lrz-dss", *const INPUT_SITE = "lrz";

#define OCC_MEAN        0.50
#define OCC_SD          0.05
#define OCC_HOT_MEAN    0.95 /* setup 2: the location greedy chose most in setup 1 */
#define UPDATE_MEAN_S   3600.0
#define ARRIVAL_MEAN_S  1800.0 /* workflows arrive as a Poisson process */
#define LAN_BYTES_PER_S 1e9    /* within a datacentre */
#define WAN_BYTES_PER_S 1e8    /* between datacentres (the VPN) */
#define PERF_WEIGHT_2   0.25

const char *fed_strategy_name(fed_strategy s) {
    static const char *const n[] = {"greedy", "random", "round-robin"};
    return s < FED_NSTRATEGIES ? n[s] : "?";
}

size_t fed_hpc_count(void) {
    size_t n = 0;
    for (size_t i = 0; i < NCLUSTERS; i++)
        n += !PLATFORM[i].cloud;
    return n;
}

const char *fed_hpc_name(size_t i) {
    for (size_t c = 0; c < NCLUSTERS; c++)
        if (!PLATFORM[c].cloud && i-- == 0)
            return PLATFORM[c].name;
    return NULL;
}

/* ---- random numbers: sim/rng.h, one stream per cluster and one per strategy ---- */

typedef struct fed_rng {
    uint64_t s;
} fed_rng;

static uint64_t rng_next(fed_rng *r) {
    return sim_rng_next(&r->s);
}
static double rng_unit(fed_rng *r) { /* (0, 1) */
    return sim_rng_unit(&r->s);
}
static double rng_normal(fed_rng *r, double mean, double sd) {
    return sim_rng_normal(&r->s, mean, sd);
}

/* ---- each cluster's Monte Carlo state: occupancy and queue wait redrawn at Poisson times ---- */

typedef struct fed_state {
    double t, occ, queue; /* from time t on: occupancy share and queue wait (s) */
} fed_state;

typedef struct fed_timeline {
    fed_state *s;
    size_t n, cap;
    fed_rng rng;
} fed_timeline;

typedef struct fed_job {
    double start, end, cores;
} fed_job;

typedef struct fed_cluster {
    const fed_spec *spec;
    double occ_mean;
    fed_timeline tl;
    fed_job *jobs;
    size_t njobs, capjobs;
} fed_cluster;

static int tl_draw(fed_cluster *c, double t) {
    fed_timeline *tl = &c->tl;
    if (sim_grow(&tl->s, tl->n, &tl->cap, sizeof *tl->s, 256) < 0)
        return -1;
    double occ = rng_normal(&tl->rng, c->occ_mean, OCC_SD);
    double queue = rng_normal(&tl->rng, c->spec->queue_mean_s, c->spec->queue_sd_s);
    tl->s[tl->n++] = (fed_state){t, occ < 0 ? 0 : occ > 0.99 ? 0.99 : occ, queue < 0 ? 0 : queue};
    return 0;
}

/* Index of the state in force at time t (drawing the timeline that far). */
static long tl_at(fed_cluster *c, double t) {
    fed_timeline *tl = &c->tl;
    while (tl->s[tl->n - 1].t <= t)
        if (tl_draw(c, tl->s[tl->n - 1].t - UPDATE_MEAN_S * log(rng_unit(&tl->rng))) < 0)
            return -1;
    size_t lo = 0, hi = tl->n - 1; /* s[lo].t <= t < s[hi].t */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (tl->s[mid].t <= t)
            lo = mid;
        else
            hi = mid;
    }
    return (long)lo;
}

static double ours_at(const fed_cluster *c, double t) {
    double used = 0;
    for (size_t i = 0; i < c->njobs; i++)
        if (c->jobs[i].start <= t && t < c->jobs[i].end)
            used += c->jobs[i].cores;
    return used;
}

/* The first time >= t at which the cluster has `cores` free, background and our jobs counted. */
static double first_free(fed_cluster *c, double t, double cores) {
    for (int guard = 0; guard < 1000000; guard++) {
        long k = tl_at(c, t);
        if (k < 0)
            return -1;
        double free_cores = c->spec->cores * (1 - c->tl.s[k].occ) - ours_at(c, t);
        if (free_cores >= cores)
            return t;
        double next = c->tl.s[k + 1].t;
        for (size_t i = 0; i < c->njobs; i++)
            if (c->jobs[i].end > t && c->jobs[i].end < next)
                next = c->jobs[i].end;
        t = next;
    }
    return -1;
}

/* The wait the DAM is told for a job of `cores` submitted at t: the queue estimate in force plus,
 * when the cores are not free now, the time until our running jobs release enough of them with
 * the background occupancy as it is now (a shape-aware prediction from what is known at t, as
 * a learned waiting time would be; no peeking at future draws). When even that never frees
 * enough, one mean update interval more. */
static double predicted_wait(fed_cluster *c, long k, double t, double cores) {
    double wait = c->tl.s[k].queue;
    double free_cores = c->spec->cores * (1 - c->tl.s[k].occ) - ours_at(c, t);
    while (free_cores < cores) {
        double next = -1, released = 0;
        for (size_t i = 0; i < c->njobs; i++)
            if (c->jobs[i].start <= t && c->jobs[i].end > t && (next < 0 || c->jobs[i].end < next))
                next = c->jobs[i].end;
        if (next < 0)
            return wait + UPDATE_MEAN_S;
        for (size_t i = 0; i < c->njobs; i++)
            if (c->jobs[i].start <= t && c->jobs[i].end == next)
                released += c->jobs[i].cores;
        free_cores += released;
        wait = next - t > wait ? next - t : wait;
        t = next;
    }
    return wait;
}

static int add_job(fed_cluster *c, double start, double end, double cores) {
    if (sim_grow(&c->jobs, c->njobs, &c->capjobs, sizeof *c->jobs, 64) < 0)
        return -1;
    c->jobs[c->njobs++] = (fed_job){start, end, cores};
    return 0;
}

/* ---- placement ---- */

typedef struct fed_world {
    fed_cluster c[NCLUSTERS];
    dam_weights weights;
    fed_strategy strategy;
    fed_rng pick;
    fed_rng arrivals; /* the same for every strategy */
    size_t rr[2];     /* round robin position per kind (HPC, cloud) */
} fed_world;

static double transfer_s(const char *from_loc, const char *from_site, const fed_spec *to,
                         double bytes) {
    if (strcmp(from_loc, to->location) == 0)
        return 0;
    return bytes / (strcmp(from_site, to->site) == 0 ? LAN_BYTES_PER_S : WAN_BYTES_PER_S);
}

/* The greedy choice: the DAM ranking over the clusters of the job's kind, as they look now. */
static int pick_greedy(fed_world *w, const fed_stage *st, const char *loc, const char *site,
                       double now, const size_t *cand, size_t ncand, tm_err *err) {
    dam_cluster dc[NCLUSTERS];
    memset(dc, 0, sizeof dc);
    for (size_t i = 0; i < ncand; i++) {
        fed_cluster *c = &w->c[cand[i]];
        long k = tl_at(c, now);
        if (k < 0)
            return tm_err_set(err, "out of memory");
        double used = c->spec->cores * c->tl.s[k].occ + ours_at(c, now);
        dc[i].name = c->spec->name;
        dc[i].site = c->spec->site;
        dc[i].location = c->spec->location;
        dc[i].cores_total = c->spec->cores;
        dc[i].cores_used = used < dc[i].cores_total ? used : dc[i].cores_total;
        dc[i].perf_per_core = c->spec->perf;
        dc[i].wait_s = predicted_wait(c, k, now, st->cores);
        dc[i].wait_source = DAM_WAIT_PREDICTED;
    }
    dam_dataset ds = {"input", loc, site, st->input_bytes};
    const char *names[] = {"input"};
    dam_job job = {.name = "workflow-job",
                   .cores = st->cores,
                   .runtime_s = st->work / st->cores,
                   .reference_perf = 1,
                   .datasets = names,
                   .ndatasets = 1};
    dam_input in = {.clusters = dc,
                    .nclusters = ncand,
                    .datasets = &ds,
                    .ndatasets = 1,
                    .weights = w->weights,
                    .now_s = now};
    dam_ranking rk;
    if (dam_rank(&in, &job, &rk, err) < 0)
        return -1;
    if (rk.chosen < 0)
        return tm_err_set(err, "no cluster qualifies for a job of %g cores", st->cores);
    return (int)cand[rk.chosen];
}

static int pick(fed_world *w, const fed_stage *st, const char *loc, const char *site, double now,
                tm_err *err) {
    size_t cand[NCLUSTERS], n = 0;
    for (size_t i = 0; i < NCLUSTERS; i++)
        if (PLATFORM[i].cloud == st->cloud)
            cand[n++] = i;
    switch (w->strategy) {
    case FED_RANDOM:
        return (int)cand[rng_next(&w->pick) % n];
    case FED_ROUND_ROBIN:
        return (int)cand[w->rr[st->cloud]++ % n];
    default:
        return pick_greedy(w, st, loc, site, now, cand, n, err);
    }
}

/* ---- one run ---- */

typedef struct fed_flow {
    int stage;
    double arrival, ready;
    const char *loc, *site;
} fed_flow;

static void world_free(fed_world *w) {
    for (size_t i = 0; i < NCLUSTERS; i++) {
        free(w->c[i].tl.s);
        free(w->c[i].jobs);
    }
}

static int simulate(fed_world *w, fed_result *out, tm_err *err) {
    fed_flow f[FED_WORKFLOWS];
    double t = 0;
    for (int i = 0; i < FED_WORKFLOWS; i++) {
        f[i] = (fed_flow){0, t, t, INPUT_LOCATION, INPUT_SITE};
        t -= ARRIVAL_MEAN_S * log(rng_unit(&w->arrivals));
    }
    for (;;) {
        int next = -1; /* the workflow whose next job is submitted first */
        for (int i = 0; i < FED_WORKFLOWS; i++)
            if (f[i].stage < 3 && (next < 0 || f[i].ready < f[next].ready))
                next = i;
        if (next < 0)
            break;
        fed_flow *fl = &f[next];
        const fed_stage *st = &STAGES[fl->stage];
        int ci = pick(w, st, fl->loc, fl->site, fl->ready, err);
        if (ci < 0)
            return -1;
        fed_cluster *c = &w->c[ci];
        long k = tl_at(c, fl->ready);
        if (k < 0)
            return tm_err_set(err, "out of memory");
        double queued =
            fl->ready + transfer_s(fl->loc, fl->site, c->spec, st->input_bytes) + c->tl.s[k].queue;
        double start = first_free(c, queued, st->cores);
        if (start < 0)
            return tm_err_set(err, "cluster %s never had %g cores free", c->spec->name, st->cores);
        double end = start + st->work / st->cores / c->spec->perf;
        if (add_job(c, start, end, st->cores) < 0)
            return tm_err_set(err, "out of memory");
        if (!st->cloud)
            for (size_t h = 0, i = 0; i < NCLUSTERS; i++)
                if (!PLATFORM[i].cloud && h++ < 16 && (int)i == ci)
                    out->hpc_choices[h - 1]++;
        fl->ready = end;
        fl->loc = c->spec->location;
        fl->site = c->spec->site;
        if (++fl->stage == 3)
            out->time_s[next] = end - fl->arrival;
    }
    double sum = 0, sq = 0;
    for (int i = 0; i < FED_WORKFLOWS; i++)
        sum += out->time_s[i];
    out->mean_s = sum / FED_WORKFLOWS;
    for (int i = 0; i < FED_WORKFLOWS; i++)
        sq += (out->time_s[i] - out->mean_s) * (out->time_s[i] - out->mean_s);
    out->stddev_s = sqrt(sq / (FED_WORKFLOWS - 1));
    return 0;
}

static int run_with(const double *occ_mean, const dam_weights *wt, fed_strategy s, uint64_t seed,
                    fed_result *out, tm_err *err) {
    fed_world w;
    memset(&w, 0, sizeof w);
    memset(out, 0, sizeof *out);
    w.weights = *wt;
    w.strategy = s;
    w.pick.s = seed * 0x100000001b3ULL + 0xdeadbeefULL + (uint64_t)s;
    w.arrivals.s = seed * 0x2545f4914f6cdd1dULL + 17;
    int rc = 0;
    for (size_t i = 0; i < NCLUSTERS && rc == 0; i++) {
        w.c[i].spec = &PLATFORM[i];
        w.c[i].occ_mean = occ_mean[i];
        w.c[i].tl.rng.s = seed * 1000003ULL + i * 7919ULL + 1;
        rc = tl_draw(&w.c[i], 0);
    }
    if (rc < 0)
        rc = tm_err_set(err, "out of memory");
    else
        rc = simulate(&w, out, err);
    world_free(&w);
    return rc;
}

int fed_run(int setup, fed_strategy s, uint64_t seed, fed_result *out, tm_err *err) {
    if (setup != 1 && setup != 2)
        return tm_err_set(err, "setup: %d, expected 1 or 2", setup);
    if (s >= FED_NSTRATEGIES)
        return tm_err_set(err, "strategy: unknown");
    double occ[NCLUSTERS];
    for (size_t i = 0; i < NCLUSTERS; i++)
        occ[i] = OCC_MEAN;
    dam_weights wt;
    dam_weights_default(&wt);
    if (setup == 2) {
        /* The paper: the occupancy of the location greedy chose most in experiment 1 is raised
         * and the performance weight lowered from 1 to 0.25. Find that location by running
         * setup 1 with the same seed. */
        fed_result first;
        if (run_with(occ, &wt, FED_GREEDY, seed, &first, err) < 0)
            return -1;
        size_t most = 0;
        for (size_t h = 1; h < fed_hpc_count(); h++)
            if (first.hpc_choices[h] > first.hpc_choices[most])
                most = h;
        for (size_t i = 0; i < NCLUSTERS; i++)
            if (strcmp(PLATFORM[i].name, fed_hpc_name(most)) == 0)
                occ[i] = OCC_HOT_MEAN;
        wt.w[DAM_S_PERF] = PERF_WEIGHT_2;
    }
    return run_with(occ, &wt, s, seed, out, err);
}

/* ---- the subcommand ---- */

static void usage(FILE *f) {
    fprintf(f, "usage: tarema-sim federation --setup 1|2 [--seed N] [--json]\n"
               "  the LEXIS DAM paper's simulation: 100 workflows of 3 linear jobs, greedy\n"
               "  (the DAM ranking) against random and round robin (docs/dam.md)\n");
}

int sim_federation_main(int argc, char **argv) {
    static const struct option longopts[] = {{"setup", required_argument, 0, 'S'},
                                             {"seed", required_argument, 0, 's'},
                                             {"json", no_argument, 0, 'j'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    /* The paper's Table 1 (mean, sigma in s), printed next to ours in the table. */
    static const double paper[2][FED_NSTRATEGIES][2] = {
        {{93602, 49}, {196496, 91354}, {192351, 96866}},
        {{134294, 2472}, {248927, 85807}, {246124, 84648}}};
    int setup = 0, as_json = 0, ch;
    unsigned long long seed = 1;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "S:s:jh", longopts, NULL)) != -1) {
        char *end;
        switch (ch) {
        case 'S':
            setup = (int)strtol(optarg, &end, 10);
            if (*end || (setup != 1 && setup != 2)) {
                fprintf(stderr, "tarema-sim federation: --setup: '%s', expected 1 or 2\n", optarg);
                return 2;
            }
            break;
        case 's':
            if (sim_cli_seed("federation", optarg, &seed) < 0)
                return 2;
            break;
        case 'j':
            as_json = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (!setup || optind != argc) {
        usage(stderr);
        return 2;
    }
    fed_result r[FED_NSTRATEGIES];
    tm_err err = {0};
    for (int s = 0; s < FED_NSTRATEGIES; s++)
        if (fed_run(setup, (fed_strategy)s, seed, &r[s], &err) < 0) {
            fprintf(stderr, "tarema-sim federation: %s\n", err.msg);
            return 1;
        }
    if (as_json) {
        json_t *o = json_object(), *a = json_array();
        json_object_set_new(o, "setup", json_integer(setup));
        for (int s = 0; s < FED_NSTRATEGIES; s++)
            json_array_append_new(a, json_pack("{s:s, s:f, s:f}", "strategy",
                                               fed_strategy_name((fed_strategy)s), "mean_s",
                                               r[s].mean_s, "stddev_s", r[s].stddev_s));
        json_object_set_new(o, "results", a);
        sim_cli_print_json(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        return 0;
    }
    printf("setup %d, seed %llu: time to solution of %d workflows [10^3 s]\n", setup, seed,
           FED_WORKFLOWS);
    printf("%-12s %9s %9s   %9s %9s\n", "strategy", "mean", "sigma", "paper", "paper_s");
    for (int s = 0; s < FED_NSTRATEGIES; s++)
        printf("%-12s %9.3f %9.3f   %9.3f %9.3f\n", fed_strategy_name((fed_strategy)s),
               r[s].mean_s / 1e3, r[s].stddev_s / 1e3, paper[setup - 1][s][0] / 1e3,
               paper[setup - 1][s][1] / 1e3);
    printf("simulation jobs per HPC cluster (greedy):");
    for (size_t h = 0; h < fed_hpc_count(); h++)
        printf(" %s %d", fed_hpc_name(h), r[FED_GREEDY].hpc_choices[h]);
    printf("\n");
    return 0;
}
