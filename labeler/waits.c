/* waits.c: the per-shape wait record (see waits.h). */
#include "labeler/waits.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A wait longer than a year is a broken clock, not a queue. */
#define WAITS_MAX_S (366.0 * 86400)

void waits_record_init(waits_record *r, const asa_key *k) {
    memset(r, 0, sizeof *r);
    r->key = *k;
    asa_learner_init(&r->l);
}

double waits_estimate(const waits_record *r) {
    if (r->st.observations <= 0)
        return ASA_DEFAULT_ESTIMATE_S;
    return asa_alternative(asa_mode(&r->l));
}

double waits_quantile(const asa_learner *l, double q) {
    double acc = 0;
    for (int i = 0; i < ASA_M; i++) {
        acc += l->p[i];
        if (acc >= q - 1e-12)
            return asa_alternative(i);
    }
    return asa_alternative(ASA_M - 1);
}

int waits_observe(waits_record *r, const asa_config *c, double wait_s, asa_rng *rng, tm_err *err) {
    if (!(wait_s >= 0) || !(wait_s <= WAITS_MAX_S))
        return tm_err_set(err, "waits: observed wait %g s is not in 0..%g s", wait_s, WAITS_MAX_S);
    asa_learner next = r->l;
    if (asa_observe(&next, c, -1, wait_s, rng, err) < 0)
        return -1;
    waits_stats *s = &r->st;
    if (s->observations > 0) {
        double e = waits_estimate(r);
        s->scored++;
        s->hits += asa_mode(&r->l) == asa_closest(wait_s);
        if (e > wait_s) {
            s->overs++;
            s->over_s += e - wait_s;
        } else {
            s->under_s += wait_s - e;
        }
        s->last_estimate_s = e;
    }
    s->wait_min_s = s->observations ? fmin(s->wait_min_s, wait_s) : wait_s;
    s->wait_max_s = s->observations ? fmax(s->wait_max_s, wait_s) : wait_s;
    s->wait_sum_s += wait_s;
    s->last_wait_s = wait_s;
    s->observations++;
    r->l = next;
    return 0;
}

double waits_hit_ratio(const waits_record *r) {
    return r->st.scored > 0 ? (double)r->st.hits / (double)r->st.scored : 0;
}

double waits_miss_ratio(const waits_record *r) {
    return r->st.scored > 0 ? (double)r->st.overs / (double)r->st.scored : 0;
}

double waits_overhead_core_h(const waits_record *r) {
    return r->st.over_s * r->key.pods * ((double)r->key.cpu_milli / 1000.0) / 3600.0;
}

static json_t *reals(const double *v, int n) {
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++)
        json_array_append_new(a, json_real(v[i]));
    return a;
}

char *waits_state_to_json(const waits_record *r) {
    double alts[ASA_M];
    for (int i = 0; i < ASA_M; i++)
        alts[i] = asa_alternative(i);
    const waits_stats *s = &r->st;
    json_t *doc = json_pack("{s:i, s:o, s:I, s:I, s:I, s:o, s:o,"
                            " s:{s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f}}",
                            "version", WAITS_STATE_VERSION, "alternatives_s", reals(alts, ASA_M),
                            "round", (json_int_t)r->l.round, "cases", (json_int_t)r->l.cases,
                            "samples", (json_int_t)r->l.samples, "p", reals(r->l.p, ASA_M),
                            "round_loss", reals(r->l.round_loss, ASA_M), "stats", "observations",
                            (json_int_t)s->observations, "scored", (json_int_t)s->scored, "hits",
                            (json_int_t)s->hits, "overs", (json_int_t)s->overs, "over_s", s->over_s,
                            "under_s", s->under_s, "wait_min_s", s->wait_min_s, "wait_max_s",
                            s->wait_max_s, "wait_sum_s", s->wait_sum_s, "last_wait_s",
                            s->last_wait_s, "last_estimate_s", s->last_estimate_s);
    char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(doc);
    return text;
}

static int get_reals(const json_t *a, double *out) {
    if (!json_is_array(a) || json_array_size(a) != ASA_M)
        return -1;
    for (int i = 0; i < ASA_M; i++) {
        const json_t *v = json_array_get(a, (size_t)i);
        if (!json_is_number(v) || !isfinite(out[i] = json_number_value(v)))
            return -1;
    }
    return 0;
}

static int get_int(const json_t *o, const char *name, long long *out) {
    const json_t *v = json_object_get(o, name);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    *out = json_integer_value(v);
    return 0;
}

static int get_num(const json_t *o, const char *name, double *out) {
    const json_t *v = json_object_get(o, name);
    if (!json_is_number(v) || !isfinite(*out = json_number_value(v)) || *out < 0 ||
        *out > WAITS_MAX_S * 1e6)
        return -1;
    return 0;
}

/* Everything but the learner: counts non-negative and consistent, times finite and >= 0. */
static int read_stats(const json_t *o, waits_stats *s, tm_err *err) {
    if (!json_is_object(o) || get_int(o, "observations", &s->observations) < 0 ||
        get_int(o, "scored", &s->scored) < 0 || get_int(o, "hits", &s->hits) < 0 ||
        get_int(o, "overs", &s->overs) < 0 || get_num(o, "over_s", &s->over_s) < 0 ||
        get_num(o, "under_s", &s->under_s) < 0 || get_num(o, "wait_min_s", &s->wait_min_s) < 0 ||
        get_num(o, "wait_max_s", &s->wait_max_s) < 0 ||
        get_num(o, "wait_sum_s", &s->wait_sum_s) < 0 ||
        get_num(o, "last_wait_s", &s->last_wait_s) < 0 ||
        get_num(o, "last_estimate_s", &s->last_estimate_s) < 0)
        return tm_err_set(err, "stats: a count is missing or negative, or a time is missing, "
                               "negative or not finite");
    if (s->scored > s->observations || s->hits > s->scored || s->overs > s->scored)
        return tm_err_set(err, "stats: %lld hits and %lld overs of %lld scored of %lld observed",
                          s->hits, s->overs, s->scored, s->observations);
    if (s->wait_min_s > s->wait_max_s || s->wait_max_s > WAITS_MAX_S)
        return tm_err_set(err, "stats: waits from %g to %g s", s->wait_min_s, s->wait_max_s);
    return 0;
}

int waits_state_from_json(const char *text, waits_record *r, tm_err *err) {
    asa_key k = r->key;
    waits_record_init(r, &k);
    json_error_t jerr;
    json_t *doc = text ? json_loads(text, 0, &jerr) : NULL;
    if (!doc)
        return tm_err_set(err, "not JSON (%s)", text ? jerr.text : "no text");
    waits_record tmp;
    waits_record_init(&tmp, &k);
    double alts[ASA_M] = {0};
    long long version = 0;
    int rc = 0;
    if (get_int(doc, "version", &version) < 0 || version != WAITS_STATE_VERSION)
        rc = tm_err_set(err, "version is not %d", WAITS_STATE_VERSION);
    else if (get_reals(json_object_get(doc, "alternatives_s"), alts) < 0)
        rc = tm_err_set(err, "no alternatives_s of %d numbers", ASA_M);
    for (int i = 0; rc == 0 && i < ASA_M; i++)
        if (alts[i] != asa_alternative(i))
            rc = tm_err_set(err, "its alternatives are not this build's %d", ASA_M);
    if (rc == 0 &&
        (get_int(doc, "round", &tmp.l.round) < 0 || get_int(doc, "cases", &tmp.l.cases) < 0 ||
         get_int(doc, "samples", &tmp.l.samples) < 0))
        rc = tm_err_set(err, "no non-negative integer round, cases or samples");
    if (rc == 0 && (get_reals(json_object_get(doc, "p"), tmp.l.p) < 0 ||
                    get_reals(json_object_get(doc, "round_loss"), tmp.l.round_loss) < 0))
        rc = tm_err_set(err, "p or round_loss is not %d finite numbers", ASA_M);
    if (rc == 0)
        rc = asa_learner_check(&tmp.l, err);
    if (rc == 0)
        rc = read_stats(json_object_get(doc, "stats"), &tmp.st, err);
    if (rc == 0 && tmp.st.observations != tmp.l.cases)
        rc = tm_err_set(err, "stats count %lld observations, the learner %lld cases",
                        tmp.st.observations, tmp.l.cases);
    json_decref(doc);
    if (rc == 0)
        *r = tmp;
    return rc < 0 ? -1 : 0;
}
