/* report.c: a ranking as JSON and as a table (see report.h). */
#include "dam/report.h"

static json_t *time_json(double t) {
    char buf[32];
    return dam_format_time(t, buf, sizeof buf) == 0 ? json_string(buf) : json_real(t);
}

static json_t *scores_json(const dam_result *r) {
    json_t *s = json_object();
    for (int k = 0; k < DAM_NSCORES; k++)
        json_object_set_new(s, dam_score_name(k), json_real(r->score[k]));
    return s;
}

static json_t *result_json(const dam_input *in, const dam_result *r, size_t rank) {
    const dam_cluster *c = &in->clusters[r->cluster];
    json_t *o = json_object();
    json_object_set_new(o, "cluster", json_string(c->name));
    if (r->excluded == DAM_OK) {
        json_object_set_new(o, "rank", json_integer((json_int_t)rank));
        json_object_set_new(o, "mean", json_real(r->mean));
    } else {
        json_object_set_new(o, "kind", json_string(dam_exclusion_name(r->excluded)));
        json_object_set_new(o, "reason", json_string(r->reason));
    }
    if (r->excluded == DAM_OK || r->excluded == DAM_MAINTENANCE || r->excluded == DAM_ZERO_SCORE) {
        json_object_set_new(o, "scores", scores_json(r));
        json_object_set_new(o, "run_s", json_real(r->run_s));
        json_object_set_new(o, "wait_s", json_real(c->wait_s));
        json_object_set_new(o, "wait_source", json_string(dam_wait_source_name(c->wait_source)));
        json_object_set_new(o, "data_x", json_real(r->data_x));
        json_object_set_new(o, "expected_end", time_json(r->expected_end_s));
        json_object_set_new(o, "windows_merged", json_integer((json_int_t)r->windows_merged));
    }
    return o;
}

json_t *dam_ranking_json(const dam_input *in, const dam_job *job, const dam_ranking *rk) {
    json_t *o = json_object(), *w = json_object(), *ranked = json_array(), *excluded = json_array();
    for (int k = 0; k < DAM_NSCORES; k++)
        json_object_set_new(w, dam_score_name(k), json_real(in->weights.w[k]));
    for (size_t i = 0; i < rk->n; i++) {
        const dam_result *r = &rk->r[i];
        json_array_append_new(r->excluded == DAM_OK ? ranked : excluded, result_json(in, r, i + 1));
    }
    json_object_set_new(o, "job", json_string(job->name));
    json_object_set_new(o, "now", time_json(in->now_s));
    json_object_set_new(o, "weights", w);
    json_object_set_new(o, "chosen",
                        rk->chosen >= 0 ? json_string(in->clusters[rk->chosen].name) : json_null());
    json_object_set_new(o, "ranking", ranked);
    json_object_set_new(o, "excluded", excluded);
    return o;
}

void dam_ranking_print(FILE *f, const dam_input *in, const dam_job *job, const dam_ranking *rk) {
    fprintf(f, "job %s: weights load %g, perf %g, wait %g, data %g\n", job->name,
            in->weights.w[DAM_S_LOAD], in->weights.w[DAM_S_PERF], in->weights.w[DAM_S_WAIT],
            in->weights.w[DAM_S_DATA]);
    fprintf(f, "%-4s %-20s %7s %6s %6s %6s %6s %10s %10s %-11s %6s\n", "rank", "cluster", "mean",
            "load", "perf", "wait", "data", "run_s", "wait_s", "wait_from", "data_x");
    for (size_t i = 0; i < rk->nranked; i++) {
        const dam_result *r = &rk->r[i];
        const dam_cluster *c = &in->clusters[r->cluster];
        fprintf(f, "%-4zu %-20s %7.4f %6.3f %6.3f %6.3f %6.3f %10.0f %10.0f %-11s %6.3f\n", i + 1,
                c->name, r->mean, r->score[DAM_S_LOAD], r->score[DAM_S_PERF], r->score[DAM_S_WAIT],
                r->score[DAM_S_DATA], r->run_s, c->wait_s, dam_wait_source_name(c->wait_source),
                r->data_x);
    }
    if (rk->chosen >= 0)
        fprintf(f, "chosen: %s\n", in->clusters[rk->chosen].name);
    else
        fprintf(f, "chosen: none (no cluster qualifies)\n");
    for (size_t i = rk->nranked; i < rk->n; i++) {
        const dam_result *r = &rk->r[i];
        fprintf(f, "excluded %s: %s\n", in->clusters[r->cluster].name, r->reason);
    }
    for (size_t i = 0; i < rk->n; i++)
        if (rk->r[i].windows_merged)
            fprintf(f, "note %s: %zu overlapping maintenance window(s) merged\n",
                    in->clusters[rk->r[i].cluster].name, rk->r[i].windows_merged);
}
