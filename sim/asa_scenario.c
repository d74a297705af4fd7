/* asa_scenario.c: the ASA paper's Figure 5 scenario (see asa_scenario.h and docs/asa.md). */
#include "sim/asa_scenario.h"

#include <errno.h>
#include <math.h>
#include <string.h>

/* The paper says only that the true wait "is randomly varied at five different occasions"
 * (section 4.4); its values are not given. These were drawn once, one per decade of the grid
 * and in an order with rises and sudden drops (the case the paper discusses), and are fixed so
 * that every seed runs the same queue: 2700 s (closest alternative 3000), 420 (400), 75 (75),
 * 14000 (10000), 600 (600). */
static const double FIG5_TRUTH[ASA_FIG5_SEGMENTS] = {2700, 420, 75, 14000, 600};

static void summarise(asa_fig5 *f) {
    const int len = ASA_FIG5_ITERATIONS / ASA_FIG5_SEGMENTS;
    int hits = 0, overs = 0;
    for (int s = 0; s < ASA_FIG5_SEGMENTS; s++) {
        asa_fig5_segment *g = &f->seg[s];
        g->start = s * len;
        g->end = g->start + len;
        g->true_s = FIG5_TRUTH[s];
        g->optimal_s = asa_alternative(asa_closest(g->true_s));
        g->converged_after = -1;
        int h = 0, over = 0, under = 0, run = 0;
        for (int i = g->start; i < g->end; i++) {
            const asa_fig5_iter *it = &f->it[i];
            h += it->hit;
            over += it->estimate_s > it->true_s;
            under += it->estimate_s < it->true_s;
            run = it->hit ? run + 1 : 0;
            if (run == ASA_FIG5_RUN && g->converged_after < 0)
                g->converged_after = i - ASA_FIG5_RUN + 1 - g->start;
        }
        g->hit_ratio = (double)h / len;
        g->over_ratio = (double)over / len;
        g->under_ratio = (double)under / len;
        hits += h;
        overs += over;
    }
    f->hit_ratio = (double)hits / ASA_FIG5_ITERATIONS;
    f->over_ratio = (double)overs / ASA_FIG5_ITERATIONS;
}

int asa_fig5_run(asa_fig5 *f, const asa_config *cfg, uint64_t seed, tm_err *err) {
    if (asa_config_check(cfg, err) < 0)
        return -1;
    memset(f, 0, sizeof *f);
    f->cfg = *cfg;
    f->seed = seed;
    asa_learner l;
    asa_learner_init(&l);
    asa_rng r;
    asa_rng_seed(&r, seed);
    const int len = ASA_FIG5_ITERATIONS / ASA_FIG5_SEGMENTS;
    for (int i = 0; i < ASA_FIG5_ITERATIONS; i++) {
        double truth = FIG5_TRUTH[i / len];
        int a = asa_sample(&l, &r); /* the estimate the request is submitted with */
        f->it[i].true_s = truth;
        f->it[i].estimate_s = asa_alternative(a);
        f->it[i].hit = a == asa_closest(truth);
        if (asa_observe(&l, cfg, a, truth, &r, err) < 0)
            return -1;
    }
    summarise(f);
    return 0;
}

json_t *asa_fig5_json(const asa_fig5 *f) {
    json_t *alts = json_array(), *its = json_array(), *segs = json_array();
    for (int i = 0; i < ASA_M; i++)
        json_array_append_new(alts, json_real(asa_alternative(i)));
    for (int i = 0; i < ASA_FIG5_ITERATIONS; i++)
        json_array_append_new(its,
                              json_pack("{s:i, s:f, s:f, s:b}", "i", i, "true_s", f->it[i].true_s,
                                        "estimate_s", f->it[i].estimate_s, "hit", f->it[i].hit));
    for (int s = 0; s < ASA_FIG5_SEGMENTS; s++) {
        const asa_fig5_segment *g = &f->seg[s];
        json_array_append_new(
            segs,
            json_pack("{s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:o}", "start", g->start, "end", g->end,
                      "true_s", g->true_s, "optimal_s", g->optimal_s, "hit_ratio", g->hit_ratio,
                      "over_ratio", g->over_ratio, "under_ratio", g->under_ratio, "converged_after",
                      g->converged_after < 0 ? json_null() : json_integer(g->converged_after)));
    }
    return json_pack("{s:s, s:s, s:s, s:i, s:I, s:o, s:o, s:f, s:f, s:o}", "scenario", "figure5",
                     "policy", asa_policy_name(f->cfg.policy), "loss", asa_loss_name(f->cfg.loss),
                     "repetitions", f->cfg.repetitions, "seed", (json_int_t)f->seed,
                     "alternatives_s", alts, "iterations", its, "hit_ratio", f->hit_ratio,
                     "over_ratio", f->over_ratio, "segments", segs);
}

void asa_fig5_table(FILE *out, const asa_fig5 *f) {
    fprintf(out, "ASA figure 5: policy %s, loss %s, %d case(s) per observed wait, seed %llu\n",
            asa_policy_name(f->cfg.policy), asa_loss_name(f->cfg.loss), f->cfg.repetitions,
            (unsigned long long)f->seed);
    fprintf(out, "%-11s %9s %9s %6s %6s %6s %10s\n", "iterations", "true_s", "optimal_s", "hit",
            "over", "under", "converged");
    for (int s = 0; s < ASA_FIG5_SEGMENTS; s++) {
        const asa_fig5_segment *g = &f->seg[s];
        char conv[32];
        if (g->converged_after < 0)
            snprintf(conv, sizeof conv, "never");
        else
            snprintf(conv, sizeof conv, "+%d", g->converged_after);
        fprintf(out, "%4d-%-6d %9.0f %9.0f %5.1f%% %5.1f%% %5.1f%% %10s\n", g->start, g->end - 1,
                g->true_s, g->optimal_s, 100 * g->hit_ratio, 100 * g->over_ratio,
                100 * g->under_ratio, conv);
    }
    fprintf(out, "%-11s %9s %9s %5.1f%% %5.1f%%\n", "all", "", "", 100 * f->hit_ratio,
            100 * f->over_ratio);
}

/* Plot geometry: 1000 iterations across, 10 s .. 100k s on a log scale up. */
enum { W = 960, H = 440, ML = 70, MR = 20, MT = 56, MB = 50 };
static double px(double i) {
    return ML + i * (W - ML - MR) / ASA_FIG5_ITERATIONS;
}
static double py(double s) {
    double d = log10(s < 10 ? 10 : s > ASA_MAX_WAIT_S ? ASA_MAX_WAIT_S : s);
    return MT + (5 - d) / 4 * (H - MT - MB);
}

int asa_fig5_svg(const char *path, const asa_fig5 *f, tm_err *err) {
    FILE *o = fopen(path, "w");
    if (!o)
        return tm_err_set(err, "%s: cannot write: %s", path, strerror(errno));
    const char *colour = f->cfg.policy == ASA_POLICY_TUNED ? "#e7298a" : "#000000";
    fprintf(o,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
            W, H, W, H);
    fprintf(o,
            "<text x=\"%d\" y=\"18\" font-size=\"14\">ASA convergence (paper Figure 5): policy %s, "
            "loss %s, seed %llu, hit ratio %.1f%%</text>\n",
            ML, asa_policy_name(f->cfg.policy), asa_loss_name(f->cfg.loss),
            (unsigned long long)f->seed, 100 * f->hit_ratio);
    for (int d = 1; d <= 5; d++) { /* decades */
        double y = py(pow(10, d));
        fprintf(o,
                "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n"
                "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.0f s</text>\n",
                ML, y, W - MR, y, ML - 6, y + 4, pow(10, d));
    }
    for (int s = 0; s <= ASA_FIG5_SEGMENTS; s++) { /* segment borders and their hit ratios */
        double x = px(s * (ASA_FIG5_ITERATIONS / ASA_FIG5_SEGMENTS));
        fprintf(o,
                "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#bbbbbb\"/>\n"
                "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n",
                x, MT, x, H - MB, x, H - MB + 16, s * (ASA_FIG5_ITERATIONS / ASA_FIG5_SEGMENTS));
        if (s < ASA_FIG5_SEGMENTS)
            fprintf(o, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">hit %.0f%%</text>\n",
                    px(f->seg[s].start + 100), MT - 8, 100 * f->seg[s].hit_ratio);
    }
    fprintf(o, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">iteration</text>\n",
            (ML + W - MR) / 2, H - 12);
    /* the truth first, so that the estimate stays visible where it meets it */
    fprintf(o, "<polyline fill=\"none\" stroke=\"#1f3f9f\" stroke-width=\"2.5\" "
               "stroke-dasharray=\"8 4\" points=\"");
    for (int i = 0; i < ASA_FIG5_ITERATIONS; i++)
        fprintf(o, "%.1f,%.1f %.1f,%.1f ", px(i), py(f->it[i].true_s), px(i + 1),
                py(f->it[i].true_s));
    fprintf(o, "\"><title>true wait (s)</title></polyline>\n");
    fprintf(o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1\" points=\"", colour);
    for (int i = 0; i < ASA_FIG5_ITERATIONS; i++)
        fprintf(o, "%.1f,%.1f ", px(i), py(f->it[i].estimate_s));
    fprintf(o, "\"><title>estimate (s)</title></polyline>\n");
    /* legend, top right under the title */
    fprintf(o,
            "<line x1=\"%d\" y1=\"30\" x2=\"%d\" y2=\"30\" stroke=\"#1f3f9f\" "
            "stroke-width=\"2.5\" stroke-dasharray=\"8 4\"/>"
            "<text x=\"%d\" y=\"34\">true wait</text>\n"
            "<line x1=\"%d\" y1=\"30\" x2=\"%d\" y2=\"30\" stroke=\"%s\"/>"
            "<text x=\"%d\" y=\"34\">estimate (%s)</text>\n",
            W - MR - 300, W - MR - 270, W - MR - 264, W - MR - 170, W - MR - 140, colour,
            W - MR - 134, asa_policy_name(f->cfg.policy));
    fprintf(o, "</svg>\n");
    if (fclose(o) != 0)
        return tm_err_set(err, "%s: cannot write: %s", path, strerror(errno));
    return 0;
}
