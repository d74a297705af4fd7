/* modes.c: the step modes' pure decisions (modes.h). */
#include "planner/modes.h"

#include <math.h>
#include <string.h>

int pl_mode_parse(const char *s, pl_mode *out) {
    if (!s || !*s)
        *out = PL_MODE_AUTO;
    else if (!strcmp(s, "reserve"))
        *out = PL_MODE_RESERVE;
    else if (!strcmp(s, "proactive"))
        *out = PL_MODE_PROACTIVE;
    else if (!strcmp(s, "on-completion"))
        *out = PL_MODE_ON_COMPLETION;
    else
        return -1;
    return 0;
}

const char *pl_mode_name(pl_mode m) {
    switch (m) {
    case PL_MODE_RESERVE:
        return "reserve";
    case PL_MODE_PROACTIVE:
        return "proactive";
    case PL_MODE_ON_COMPLETION:
        return "on-completion";
    default:
        return "auto";
    }
}

pl_mode pl_mode_choose(pl_mode requested, double predicted_load, double threshold) {
    if (requested != PL_MODE_AUTO)
        return requested;
    if (threshold <= 0)
        return PL_MODE_RESERVE;
    /* !(load < threshold): a NaN load is not known to fit */
    return predicted_load < threshold ? PL_MODE_RESERVE : PL_MODE_PROACTIVE;
}

int64_t pl_proactive_ungate_at(int64_t submitted, const int64_t *pred_end, int npred,
                               double estimate_s) {
    if (!isfinite(estimate_s) || estimate_s < 0)
        estimate_s = 0;
    int64_t t = submitted;
    for (int i = 0; i < npred; i++) {
        int64_t u = pred_end[i] - (int64_t)llround(estimate_s);
        if (u > t)
            t = u;
    }
    return t;
}

int64_t pl_proactive_lead_at(int64_t at, int64_t submitted, const int64_t *pred_end, int npred,
                             int64_t lead_s, pl_release_rule *rule) {
    if (lead_s <= 0)
        return at;
    int64_t l = pl_proactive_ungate_at(submitted, pred_end, npred, (double)lead_s);
    if (l >= at)
        return at;
    if (rule)
        *rule = PL_RELEASE_LEAD;
    return l;
}

int64_t pl_proactive_release_at(int64_t asa_at, int64_t submitted, const int64_t *pred_start,
                                int npred, pl_release_rule *rule) {
    int64_t at = asa_at;
    int64_t started = submitted;
    if (rule)
        *rule = PL_RELEASE_ASA;
    for (int i = 0; i < npred; i++) {
        if (!pred_start || pred_start[i] < 0)
            return at; /* one has not started: its end is a guess of a guess */
        if (pred_start[i] > started)
            started = pred_start[i];
    }
    if (npred > 0 && started < at) {
        if (rule)
            *rule = PL_RELEASE_ON_START;
        return started;
    }
    return at;
}

int pl_order_satisfied(const int *pred_succeeded, int npred) {
    for (int i = 0; i < npred; i++)
        if (!pred_succeeded[i])
            return 0;
    return 1;
}

double pl_mode_estimate(const waits_record *recs, size_t n, const asa_key *k, int *learned) {
    if (learned)
        *learned = 0;
    for (size_t i = 0; recs && i < n; i++) {
        const asa_key *r = &recs[i].key;
        if (strcmp(r->ns, k->ns) || strcmp(r->group, k->group) || r->pods != k->pods ||
            r->cpu_milli != k->cpu_milli || r->mem_bytes != k->mem_bytes)
            continue;
        double e = waits_estimate(&recs[i]);
        if (!isfinite(e) || e < 0)
            break; /* absurd: the default */
        if (learned)
            *learned = recs[i].st.observations > 0;
        return e;
    }
    return ASA_DEFAULT_ESTIMATE_S;
}
