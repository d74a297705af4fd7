/* grouping.c: node similarity groups and labels from NodeProfiles (see grouping.h for the
 * decisions and their reasons). */
#include "profiler/grouping.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/nodegroups.h"
#include "profiler/kmeans.h"
#include "profiler/silhouette.h"

static const char *const feature_names[PROF_F_COUNT] = {
    "cpu_single", "cpu_multi",  "mem",    "seq_read", "seq_write",
    "rand_read",  "rand_write", "seq_io", "rand_io",
};

const char *prof_feature_name(prof_feature f) {
    return (unsigned)f < PROF_F_COUNT ? feature_names[f] : "?";
}

int prof_feature_parse(const char *name, prof_feature *f, tm_err *err) {
    for (int i = 0; i < PROF_F_COUNT; i++)
        if (strcmp(name, feature_names[i]) == 0) {
            *f = (prof_feature)i;
            return 0;
        }
    return tm_err_set(err,
                      "unknown feature '%s' (choose from cpu_single, cpu_multi, mem, seq_read, "
                      "seq_write, rand_read, rand_write, seq_io, rand_io)",
                      name);
}

prof_label prof_feature_label(prof_feature f) {
    switch (f) {
    case PROF_F_CPU_SINGLE:
    case PROF_F_CPU_MULTI:
        return PROF_L_CPU;
    case PROF_F_MEM:
        return PROF_L_MEM;
    default:
        return PROF_L_IO;
    }
}

/* The label keys are the node-groups document's (lib/nodegroups.h): one definition. */
_Static_assert((int)PROF_L_CPU == (int)TM_NG_CPU && (int)PROF_L_MEM == (int)TM_NG_MEM &&
                   (int)PROF_L_IO == (int)TM_NG_IO && (int)PROF_L_COUNT == (int)TM_NG_NLABELS,
               "profiler labels and node-groups labels in the same order");

const char *prof_label_key(prof_label l) {
    return (unsigned)l < PROF_L_COUNT ? tm_ng_label_key((tm_ng_label)l) : "?";
}

double prof_feature_value(const prof_profile *p, prof_feature f) {
    switch (f) {
    case PROF_F_CPU_SINGLE:
        return p->cpu_single_eps;
    case PROF_F_CPU_MULTI:
        return p->cpu_multi_eps;
    case PROF_F_MEM:
        return p->mem_mibps;
    case PROF_F_SEQ_READ:
        return p->seq_read_iops;
    case PROF_F_SEQ_WRITE:
        return p->seq_write_iops;
    case PROF_F_RAND_READ:
        return p->rand_read_iops;
    case PROF_F_RAND_WRITE:
        return p->rand_write_iops;
    /* sqrt(a) * sqrt(b), not sqrt(a * b): the product of two valid figures can overflow. */
    case PROF_F_SEQ_IO:
        return sqrt(p->seq_read_iops) * sqrt(p->seq_write_iops);
    case PROF_F_RAND_IO:
        return sqrt(p->rand_read_iops) * sqrt(p->rand_write_iops);
    default:
        return NAN;
    }
}

void prof_group_opts_default(prof_group_opts *o) {
    memset(o, 0, sizeof *o);
    o->features[0] = PROF_F_CPU_SINGLE;
    o->features[1] = PROF_F_MEM;
    o->features[2] = PROF_F_SEQ_IO;
    o->features[3] = PROF_F_RAND_IO;
    o->nfeatures = 4;
    o->k_max = PROF_K_LIMIT;
    o->restarts = 10;
    o->max_iter = 100;
    o->seed = 1;
    /* 5 %: sysbench and fio repeat within a few percent on one machine, and the paper's
     * Table IV shows within-group spreads of 1-4 % for nodes of one machine type. */
    o->noise = 0.05;
    /* Kaufman & Rousseeuw: a mean silhouette below 0.25 means no substantial structure. */
    o->min_silhouette = 0.25;
}

void prof_grouping_free(prof_grouping *g) {
    if (!g)
        return;
    if (g->groups)
        for (int i = 0; i < g->k; i++)
            free(g->groups[i].members);
    free(g->groups);
    free(g->group_of);
    memset(g, 0, sizeof *g);
}

static int check_opts(const prof_group_opts *o, tm_err *err) {
    if (o->nfeatures < 1 || o->nfeatures > PROF_F_COUNT)
        return tm_err_set(err, "grouping: choose between 1 and %d features (got %d)", PROF_F_COUNT,
                          o->nfeatures);
    for (int i = 0; i < o->nfeatures; i++) {
        if ((unsigned)o->features[i] >= PROF_F_COUNT)
            return tm_err_set(err, "grouping: feature number %d is invalid", i + 1);
        for (int j = 0; j < i; j++)
            if (o->features[i] == o->features[j])
                return tm_err_set(err, "grouping: feature '%s' selected twice",
                                  prof_feature_name(o->features[i]));
    }
    if (o->k_max < 2 || o->k_max > PROF_K_LIMIT)
        return tm_err_set(err, "grouping: k_max must be in 2..%d (got %d)", PROF_K_LIMIT, o->k_max);
    if (!(o->noise >= 0 && o->noise < 1))
        return tm_err_set(err, "grouping: noise must be a fraction in [0, 1) (got %g)", o->noise);
    return 0;
}

/* 1 when every cluster is non-empty and every pair of clusters differs by more than tol on
 * at least one feature of lx (log values): groups the measurements can actually tell apart. */
static int well_separated(const double *lx, size_t n, size_t d, const int *assign, int k,
                          double tol, double *cm, size_t *cnt) {
    prof_cluster_means(lx, n, d, assign, k, cm, cnt);
    for (int a = 0; a < k; a++)
        if (cnt[a] == 0)
            return 0;
    for (int a = 0; a < k; a++)
        for (int b = a + 1; b < k; b++) {
            int differs = 0;
            for (size_t j = 0; j < d && !differs; j++)
                differs = fabs(cm[(size_t)a * d + j] - cm[(size_t)b * d + j]) > tol;
            if (!differs)
                return 0;
        }
    return 1;
}

/* Dense ranks 1.. of k scores (log scale), ascending; a score within tol of the first score of
 * the current rank shares that rank. */
static void dense_rank(const double *score, int k, double tol, int *rank) {
    int order[PROF_K_LIMIT + 1];
    if (k < 1)
        return;
    for (int i = 0; i < k; i++)
        order[i] = i;
    for (int i = 1; i < k; i++) /* insertion sort: k <= 10, and it is stable */
        for (int j = i; j > 0 && score[order[j]] < score[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    int r = 1;
    double anchor = score[order[0]];
    for (int i = 0; i < k; i++) {
        if (score[order[i]] - anchor > tol) {
            r++;
            anchor = score[order[i]];
        }
        rank[order[i]] = r;
    }
}

typedef struct work {
    size_t n, d;
    double *raw; /* n x d feature values */
    double *lx;  /* log values */
    double *z;   /* scaled log values */
    double *cm;  /* k x d scratch */
    size_t *cnt;
    int *assign[PROF_K_LIMIT + 1];
} work;

static void work_free(work *w) {
    free(w->raw), free(w->lx), free(w->z), free(w->cm), free(w->cnt);
    for (int k = 0; k <= PROF_K_LIMIT; k++)
        free(w->assign[k]);
}

/* Chooses k (see grouping.h) and leaves the winning assignment in w->assign[k]. */
static int choose_k(work *w, const prof_group_opts *o, double tol, int all_within_noise,
                    prof_grouping *g, tm_err *err) {
    size_t n = w->n, d = w->d;
    if (all_within_noise) {
        snprintf(g->reason, sizeof g->reason,
                 "one group: every feature varies by at most %.3g%% across the %zu nodes "
                 "(within measurement noise)",
                 o->noise * 100, n);
        return 1;
    }
    if (n == 2) {
        snprintf(g->reason, sizeof g->reason,
                 "two nodes that differ beyond measurement noise: one group each (silhouette "
                 "is undefined for two points)");
        w->assign[2] = calloc(2, sizeof(int));
        if (!w->assign[2])
            return tm_err_set(err, "grouping: out of memory");
        w->assign[2][1] = 1;
        g->separated[2] = 1;
        return 2;
    }
    int kmax = o->k_max < (int)n - 1 ? o->k_max : (int)n - 1;
    g->k_tried_max = kmax;
    prof_rng rng;
    prof_rng_seed(&rng, o->seed);
    const int *ok_assign[PROF_K_LIMIT + 1];
    int ok_k[PROF_K_LIMIT + 1];
    double sil[PROF_K_LIMIT + 1];
    size_t m = 0;
    for (int k = 2; k <= kmax; k++) {
        prof_kmeans_result r;
        int rc = prof_kmeans(w->z, n, d, k, o->restarts, o->max_iter, &rng, &r, err);
        if (rc < 0)
            return -1;
        if (rc == 1)
            continue; /* fewer distinct nodes than k */
        w->assign[k] = r.assign;
        r.assign = NULL;
        prof_kmeans_result_free(&r);
        g->separated[k] = well_separated(w->lx, n, d, w->assign[k], k, tol, w->cm, w->cnt);
        ok_assign[m] = w->assign[k];
        ok_k[m++] = k;
    }
    if (m > 0 && prof_silhouette_multi(w->z, n, d, ok_assign, ok_k, m, sil, err) != 0)
        return -1;
    int best = 1;
    double best_s = -2;
    for (size_t i = 0; i < m; i++) {
        g->silhouette[ok_k[i]] = sil[i];
        if (g->separated[ok_k[i]] && sil[i] >= o->min_silhouette && sil[i] > best_s + 1e-12) {
            best_s = sil[i];
            best = ok_k[i];
        }
    }
    if (best == 1)
        snprintf(g->reason, sizeof g->reason,
                 "one group: no k in 2..%d gave groups that all differ beyond %.3g%% noise with "
                 "a mean silhouette of at least %.2f",
                 kmax, o->noise * 100, o->min_silhouette);
    else
        snprintf(g->reason, sizeof g->reason,
                 "k=%d has the highest mean silhouette (%.3f) among groupings whose groups "
                 "differ beyond %.3g%% noise",
                 best, best_s, o->noise * 100);
    return best;
}

/* Fills g->groups and g->group_of from the assignment of the chosen k. */
static int build_groups(work *w, const prof_profile *pr, const prof_group_opts *o, double tol,
                        int k, const int *assign, prof_grouping *g, tm_err *err) {
    size_t n = w->n, d = w->d;
    prof_group *tmp = calloc((size_t)k, sizeof *tmp);
    g->groups = calloc((size_t)k, sizeof *g->groups);
    g->group_of = calloc(n, sizeof *g->group_of);
    double *rawc = calloc((size_t)k * d, sizeof *rawc);
    double *zc = calloc((size_t)k * d, sizeof *zc);
    if (!tmp || !g->groups || !g->group_of || !rawc || !zc) {
        free(tmp), free(rawc), free(zc);
        return tm_err_set(err, "grouping: out of memory");
    }
    prof_cluster_means(w->raw, n, d, assign, k, rawc, w->cnt);
    prof_cluster_means(w->z, n, d, assign, k, zc, w->cnt);
    prof_cluster_means(w->lx, n, d, assign, k, w->cm, w->cnt);
    for (int c = 0; c < k; c++) {
        tmp[c].members = malloc((w->cnt[c] ? w->cnt[c] : 1) * sizeof(size_t));
        if (!tmp[c].members) {
            for (int j = 0; j < c; j++)
                free(tmp[j].members);
            free(tmp), free(rawc), free(zc);
            return tm_err_set(err, "grouping: out of memory");
        }
        double p = 0;
        for (size_t j = 0; j < d; j++) {
            tmp[c].centroid[j] = rawc[(size_t)c * d + j];
            p += zc[(size_t)c * d + j];
        }
        tmp[c].power = p / (double)d;
    }
    for (size_t i = 0; i < n; i++) {
        prof_group *t = &tmp[assign[i]];
        t->members[t->nmembers++] = i;
        t->total_cores += pr[i].cores;
    }
    /* Order by power, ties by the first member's node name (members are ascending indices). */
    int order[PROF_K_LIMIT + 1];
    for (int c = 0; c < k; c++)
        order[c] = c;
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0; j--) {
            const prof_group *a = &tmp[order[j - 1]], *b = &tmp[order[j]];
            int later = a->power > b->power + 1e-12 ||
                        (fabs(a->power - b->power) <= 1e-12 &&
                         strcmp(pr[a->members[0]].node, pr[b->members[0]].node) > 0);
            if (!later)
                break;
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    double logc[PROF_K_LIMIT + 1];
    for (int i = 0; i < k; i++) {
        g->groups[i] = tmp[order[i]];
        g->groups[i].id = i + 1;
        for (size_t m = 0; m < g->groups[i].nmembers; m++)
            g->group_of[g->groups[i].members[m]] = i;
    }
    for (size_t j = 0; j < d; j++) {
        int rank[PROF_K_LIMIT + 1];
        for (int i = 0; i < k; i++)
            logc[i] = w->cm[(size_t)order[i] * d + j];
        dense_rank(logc, k, tol, rank);
        for (int i = 0; i < k; i++)
            g->groups[i].rank[j] = rank[i];
    }
    for (int l = 0; l < PROF_L_COUNT; l++) {
        int used = 0, rank[PROF_K_LIMIT + 1];
        for (int i = 0; i < k; i++)
            logc[i] = 0;
        for (size_t j = 0; j < d; j++) {
            if (prof_feature_label(o->features[j]) != (prof_label)l)
                continue;
            used++;
            for (int i = 0; i < k; i++)
                logc[i] += w->cm[(size_t)order[i] * d + j];
        }
        if (!used)
            continue;
        for (int i = 0; i < k; i++)
            logc[i] /= used;
        dense_rank(logc, k, tol, rank);
        for (int i = 0; i < k; i++)
            g->groups[i].label[l] = rank[i];
    }
    free(tmp), free(rawc), free(zc);
    return 0;
}

int prof_group_nodes(const prof_profile *profiles, size_t n, const prof_group_opts *opts,
                     prof_grouping *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    for (int k = 0; k <= PROF_K_LIMIT; k++)
        out->silhouette[k] = NAN;
    if (!profiles || n == 0)
        return tm_err_set(err, "grouping: no node profiles given");
    if (check_opts(opts, err) != 0)
        return -1;
    size_t d = (size_t)opts->nfeatures;
    out->nfeatures = opts->nfeatures;
    memcpy(out->features, opts->features, sizeof out->features);
    out->n = n;
    work w = {.n = n, .d = d};
    w.raw = malloc(n * d * sizeof(double));
    w.lx = malloc(n * d * sizeof(double));
    w.z = malloc(n * d * sizeof(double));
    w.cm = malloc((PROF_K_LIMIT + 1) * d * sizeof(double));
    w.cnt = malloc((PROF_K_LIMIT + 1) * sizeof(size_t));
    if (!w.raw || !w.lx || !w.z || !w.cm || !w.cnt) {
        work_free(&w);
        return tm_err_set(err, "grouping: out of memory for %zu nodes", n);
    }
    double tol = log1p(opts->noise);
    int within = 1;
    for (size_t j = 0; j < d; j++) {
        double sum = 0, sq = 0, mn = INFINITY, mx = -INFINITY;
        for (size_t i = 0; i < n; i++) {
            double v = prof_feature_value(&profiles[i], opts->features[j]);
            if (!(v > 0) || !isfinite(v)) {
                work_free(&w);
                return tm_err_set(err, "grouping: node '%s' has no positive value for '%s'",
                                  profiles[i].node, prof_feature_name(opts->features[j]));
            }
            w.raw[i * d + j] = v;
            double l = log(v);
            w.lx[i * d + j] = l;
            sum += l;
            mn = l < mn ? l : mn;
            mx = l > mx ? l : mx;
        }
        double mean = sum / (double)n;
        for (size_t i = 0; i < n; i++)
            sq += (w.lx[i * d + j] - mean) * (w.lx[i * d + j] - mean);
        double sd = sqrt(sq / (double)n);
        /* The noise floor keeps a feature that only varies within measurement noise small;
         * 1e-12 guards the division when noise is 0 and all values are equal. */
        double scale = sd > tol ? sd : tol;
        if (scale < 1e-12)
            scale = 1e-12;
        for (size_t i = 0; i < n; i++)
            w.z[i * d + j] = (w.lx[i * d + j] - mean) / scale;
        if (mx - mn > tol)
            within = 0;
    }
    int k = choose_k(&w, opts, tol, within, out, err);
    if (k < 0) {
        work_free(&w);
        prof_grouping_free(out);
        return -1;
    }
    if (k == 1) {
        w.assign[1] = calloc(n, sizeof(int));
        if (!w.assign[1]) {
            work_free(&w);
            return tm_err_set(err, "grouping: out of memory");
        }
    }
    out->k = k;
    int rc = build_groups(&w, profiles, opts, tol, k, w.assign[k], out, err);
    work_free(&w);
    if (rc != 0)
        prof_grouping_free(out);
    return rc;
}

json_t *prof_grouping_to_json(const prof_grouping *g, const prof_profile *profiles,
                              const prof_group_opts *opts) {
    const char *feat[PROF_F_COUNT];
    for (int j = 0; j < g->nfeatures; j++)
        feat[j] = prof_feature_name(g->features[j]);
    /* Two nodes always form two groups without a silhouette to compare (see choose_k); the
     * document still lists k = 2 for them. */
    int k_last = g->k_tried_max;
    if (k_last < 2 && g->n == 2 && g->k == 2)
        k_last = 2;
    tm_ng_header h = {.k = g->k,
                      .features = feat,
                      .nfeatures = g->nfeatures,
                      .scaling = "log, then z-score with a noise floor",
                      .noise = opts->noise,
                      .seed = (long long)opts->seed,
                      .restarts = opts->restarts,
                      .silhouette = g->silhouette,
                      .separated = g->separated,
                      .k_last = k_last,
                      .reason = g->reason};
    json_t *groups = json_array();
    for (int i = 0; i < g->k; i++) {
        const prof_group *gr = &g->groups[i];
        const char **names = malloc((gr->nmembers ? gr->nmembers : 1) * sizeof *names);
        if (!names) {
            json_decref(groups);
            return NULL;
        }
        for (size_t m = 0; m < gr->nmembers; m++)
            names[m] = profiles[gr->members[m]].node;
        tm_ng_group_out o = {.id = gr->id,
                             .total_cores = gr->total_cores,
                             .nodes = names,
                             .nnodes = gr->nmembers,
                             .features = feat,
                             .centroid = gr->centroid,
                             .rank = gr->rank,
                             .nfeatures = g->nfeatures};
        memcpy(o.label, gr->label, sizeof o.label);
        json_array_append_new(groups, tm_ng_group_json(&o));
        free(names);
    }
    json_t *nodes = json_array();
    for (size_t i = 0; i < g->n; i++) {
        const prof_group *gr = &g->groups[g->group_of[i]];
        json_array_append_new(nodes, tm_ng_node_json(profiles[i].node, gr->id, gr->label,
                                                     prof_profile_figures(&profiles[i])));
    }
    return tm_ng_doc_json(&h, groups, nodes);
}
