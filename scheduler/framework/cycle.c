/* cycle.c: the scheduling cycle and the binding cycle, top to bottom, as kube-scheduler runs
 * them:
 *   PreEnqueue                   sched_framework_pre_enqueue (before the active queue)
 *   PreFilter -> Filter          pre_filter + fw_filter_nodes (scan.c)
 *   PreScore -> Score -> select  sched_framework_schedule
 *   PostFilter                   sched_framework_post_filter, when nothing fits
 *   Reserve                      sched_framework_reserve
 *   Permit                       sched_framework_permit (waiting pods: permit.c)
 *   PreBind -> Bind              sched_framework_bind, Unreserve on failure
 *   Unreserve                    sched_framework_unreserve
 * Pure: the only I/O is whatever the caller's Bind/PreBind hooks do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/backend/nominated.h"
#include "scheduler/framework/framework_internal.h"

sched_cycle fw_cycle_for(sched_framework *fw, sched_snapshot *s, const sched_pod *p,
                         int64_t now_ms) {
    fw_profile_for(fw, p);
    sched_cycle c = {.snap = s, .pod = p, .now_ms = now_ms, .fw = fw};
    sched_task_resolve(s, p, &c.task);
    return c;
}

/* ---- PreEnqueue ---- */

sched_status sched_framework_pre_enqueue(sched_framework *fw, const sched_snapshot *s,
                                         const sched_pod *p, int64_t now_ms, char *msg,
                                         size_t size) {
    if (size)
        msg[0] = '\0';
    for (size_t k = 0; k < fw->n_plugins; k++) {
        const sched_plugin *pl = &fw->plugins[k];
        if (!pl->pre_enqueue)
            continue;
        char why[256] = "";
        sched_status st = pl->pre_enqueue(pl->state, s, p, now_ms, why, sizeof why);
        if (st != SCHED_STATUS_OK) {
            if (size)
                snprintf(msg, size, "%s: %s", pl->name, why);
            return st == SCHED_STATUS_WAIT || st == SCHED_STATUS_GATED ? st
                                                                       : SCHED_STATUS_UNSCHEDULABLE;
        }
    }
    return SCHED_STATUS_OK;
}

/* ---- the scheduling cycle ---- */

/* PreFilter of every Filter plugin that has one, in order: which filters run through their
 * hooks this cycle (before or after NodeResourcesFit), and which reject every node. *first
 * (may be NULL): the extension point's outcome, the first rejection's (kube's
 * RunPreFilterPlugins answers with it), else OK. */
static int pre_filter(sched_framework *fw, sched_outcome *first, tm_err *err) {
    fw->n_hook_pre = fw->n_hook_post = 0;
    bool after_resources = false;
    bool timed = fw_timed(fw);
    int64_t t = timed ? fw_now(fw) : 0;
    if (first)
        *first = fw_outcome(SCHED_STATUS_OK);
    for (size_t f = 0; f < fw->n_filt; f++) {
        size_t k = fw->filt[f];
        const sched_plugin *pl = &fw->plugins[k];
        fw->reject_all[k] = false;
        if (pl->filter_id == SCHED_FILTER_RESOURCES)
            after_resources = true;
        if (fw_column_filter(pl))
            continue; /* node-local: checked inline by scan.c, from the columns or not */
        uint32_t d = 0;
        sched_status st = SCHED_STATUS_OK;
        if (pl->pre_filter) {
            st = pl->pre_filter(pl->state, &fw->cyc, &d, err);
            sched_outcome o = {.status = st};
            if (st == SCHED_STATUS_UNSCHEDULABLE)
                o.id = (sched_filter_id)fw->sid[k], o.detail = d;
            if (timed)
                fw_plugin_done(fw, k, SCHED_EP_PRE_FILTER, o, &t);
            if (first && first->status == SCHED_STATUS_OK && st != SCHED_STATUS_SKIP)
                *first = o;
        }
        if (st == SCHED_STATUS_ERROR)
            return tm_err_wrap(err, "pre-filter %s of pod %s/%s", pl->name, fw->cyc.pod->ns,
                               fw->cyc.pod->name);
        if (st == SCHED_STATUS_SKIP || (st == SCHED_STATUS_OK && !pl->filter))
            continue;
        if (st == SCHED_STATUS_UNSCHEDULABLE) {
            fw->reject_all[k] = true;
            fw->reject_detail[k] = d;
        }
        if (after_resources)
            fw->hook_post[fw->n_hook_post++] = (uint8_t)k;
        else
            fw->hook_pre[fw->n_hook_pre++] = (uint8_t)k;
    }
    return 0;
}

/* kube-scheduler's DefaultNormalizeScore: raw (>= 0) scaled so the highest is
 * SCHED_MAX_NODE_SCORE (all of them that when reverse and every raw score is 0), reversed
 * (max - scaled) for fewer-is-better scores. */
static int64_t normalize_default(int64_t raw, int64_t max, bool reverse) {
    if (max <= 0)
        return reverse ? SCHED_MAX_NODE_SCORE : 0;
    int64_t v = SCHED_MAX_NODE_SCORE * raw / max;
    return reverse ? SCHED_MAX_NODE_SCORE - v : v;
}

/* The preference plugins' PreScore (pref_pre_score, kube's Skip when false): which of them
 * have something to say about the pod (fw->pref, fw->secondary), each call timed in a sampled
 * cycle. */
static void pref_pre_score(sched_framework *fw, bool timed) {
    fw->prefs = fw->secondary = false;
    int64_t t = 0;
    for (size_t j = 1; j < fw->n_plugins; j++) {
        const sched_plugin *pl = &fw->plugins[j];
        fw->pref[j] = pl->pref_score && pl->pref_weight > 0;
        if (fw->pref[j] && pl->pref_pre_score) {
            if (timed)
                t = fw_now(fw);
            fw->pref[j] = pl->pref_pre_score(pl->state, &fw->cyc);
            if (timed)
                fw_plugin_done(fw, j, SCHED_EP_PRE_SCORE,
                               fw_outcome(fw->pref[j] ? SCHED_STATUS_OK : SCHED_STATUS_SKIP), &t);
        }
        if (pl->pref_secondary)
            fw->secondary |= fw->pref[j];
    }
}

/* Weighted sum of normalised scores (kube-scheduler's Score + NormalizeScore + weights), into
 * fw->fscore, when some preference plugin's PreScore did not skip the pod and its scores tell
 * the feasible nodes apart; else fw->fscore
 * (the policy's raw scores) is left as it is. The policy's raw scores, of any sign and range,
 * are mapped min..max -> 0..100 (all 100 when equal). Parts kept per node for explain. */
static void combine_preferences(sched_framework *fw, sched_snapshot *s, size_t nf, bool timed) {
    int64_t t = timed ? fw_now(fw) : 0; /* sampled: each Score call timed */
    /* A preference that scores every feasible node alike says nothing about this pod here (a
     * PreferNoSchedule taint on a node it cannot use, a preferred term of a pod in another
     * namespace): it would add the same to every node, so the policy keeps deciding alone, as
     * it does when the cluster holds no such thing. Otherwise an unrelated object anywhere in
     * the cluster would switch this pod to the weighted sum. Raw scores kept in part. */
    int64_t *part = fw->part;
    size_t np = fw->n_plugins;
    for (size_t j = 1; j < np; j++) {
        const sched_plugin *pl = &fw->plugins[j];
        if (!fw->pref[j] || pl->pref_secondary)
            continue;
        bool varies = false;
        if (timed)
            t = fw_now(fw);
        for (size_t k = 0; k < nf; k++) {
            part[k * np + j] =
                pl->pref_score(pl->state, &fw->cyc, sched_snapshot_node(s, fw->feas[k]));
            if (timed)
                fw_plugin_done(fw, j, SCHED_EP_SCORE, fw_outcome(SCHED_STATUS_OK), &t);
            varies |= part[k * np + j] != part[j];
        }
        fw->pref[j] = varies;
        fw->prefs |= varies;
    }
    if (!fw->prefs)
        return; /* the policy decides; the secondary scores may break its ties (select) */
    int64_t mn = fw->fscore[0], mx = fw->fscore[0];
    for (size_t k = 1; k < nf; k++) {
        mn = fw->fscore[k] < mn ? fw->fscore[k] : mn;
        mx = fw->fscore[k] > mx ? fw->fscore[k] : mx;
    }
    for (size_t k = 0; k < nf; k++) {
        __int128 num = (__int128)(fw->fscore[k] - mn) * SCHED_MAX_NODE_SCORE;
        int64_t v = mx > mn ? (int64_t)(num / ((__int128)mx - mn)) : SCHED_MAX_NODE_SCORE;
        part[k * np] = fw->policy_weight * v;
    }
    for (size_t j = 1; j < np; j++) {
        const sched_plugin *pl = &fw->plugins[j];
        if (!fw->pref[j]) {
            for (size_t k = 0; k < nf; k++)
                part[k * np + j] = 0;
            continue;
        }
        int64_t pmax = 0, pmin = 0;
        if (timed)
            t = fw_now(fw);
        for (size_t k = 0; k < nf; k++) {
            int64_t raw = part[k * np + j]; /* scored above, unless secondary */
            if (pl->pref_secondary) {
                raw = pl->pref_score(pl->state, &fw->cyc, sched_snapshot_node(s, fw->feas[k]));
                if (timed)
                    fw_plugin_done(fw, j, SCHED_EP_SCORE, fw_outcome(SCHED_STATUS_OK), &t);
            }
            part[k * np + j] = raw;
            pmax = raw > pmax || !k ? raw : pmax;
            pmin = raw < pmin || !k ? raw : pmin;
        }
        for (size_t k = 0; k < nf; k++) {
            int64_t raw = part[k * np + j];
            int64_t v = pl->pref_raw       ? raw
                        : !pl->pref_minmax ? normalize_default(raw, pmax, pl->pref_reverse)
                        : pmax > pmin      ? SCHED_MAX_NODE_SCORE * (raw - pmin) / (pmax - pmin)
                                           : 0;
            part[k * np + j] = pl->pref_weight * v;
        }
    }
    for (size_t k = 0; k < nf; k++) {
        int64_t sum = 0;
        for (size_t j = 0; j < np; j++)
            sum += part[k * np + j];
        fw->fscore[k] = sum;
    }
}

/* Among the feasible nodes whose score ties with the best (mx), the one with the highest
 * weighted sum of the secondary scores (pref_secondary plugins that had something to say),
 * ties by name order; bi when it stays the best. Only when no preference was combined. */
static uint32_t break_ties(sched_framework *fw, sched_snapshot *s, size_t nf, int64_t mx,
                           uint32_t bi, const uint32_t *name_rank) {
    uint32_t best = bi;
    int64_t best_sec = -1;
    size_t tied = 0;
    for (size_t k = 0; k < nf && tied < 2; k++)
        tied += fw->fscore[k] == mx;
    if (tied < 2)
        return bi;
    for (size_t k = 0; k < nf; k++) {
        if (fw->fscore[k] != mx)
            continue;
        uint32_t i = fw->feas[k];
        const sched_node *n = sched_snapshot_node(s, i);
        int64_t sec = 0;
        for (size_t j = 1; j < fw->n_plugins; j++) {
            const sched_plugin *pl = &fw->plugins[j];
            if (pl->pref_secondary && fw->pref[j])
                sec += pl->pref_weight * pl->pref_score(pl->state, &fw->cyc, n);
        }
        if (sec > best_sec || (sec == best_sec && name_rank[i] < name_rank[best])) {
            best_sec = sec;
            best = i;
        }
    }
    return best;
}

/* PreFilter -> Filter -> PreScore -> Score -> select. PostFilter, when nothing fits, is the
 * caller's next step (sched_framework_post_filter): explain and the extender run this same
 * function and must not trigger it. */
int sched_framework_schedule(sched_framework *fw, sched_snapshot *s, const sched_pod *p,
                             int64_t now_ms, sched_decision *d, tm_err *err) {
    memset(d, 0, sizeof *d);
    d->node = -1;
    fw_profile_for(fw, p);
    fw->have_cycle = false;
    fw->prefs = fw->secondary = false;
    fw->n_feas = 0;
    sched_snapshot_refresh(s);
    size_t n = sched_snapshot_node_count(s);
    if (fw_ensure_cap(fw, n, err) != 0)
        return -1;
    fw->n_nodes = n;
    fw->cyc = (sched_cycle){.snap = s, .pod = p, .now_ms = now_ms, .fw = fw};
    sched_task_resolve(s, p, &fw->cyc.task);

    /* PreFilter, Filter; with an observer, each extension point's run timed (one branch each
     * without). First without the nominated pods, then, for the nodes that passed, with those p
     * must count (nominate.c). These are kube-scheduler's two passes (a node must pass both:
     * with them, and without them, since they may never land there, e.g. a nominated pod that
     * p's pod affinity or spread counted on); as both must pass, their order does not change
     * which nodes are feasible, and this one skips the second pass for every node the first
     * rejects. On a cluster of waiting preemptors most tries fit nowhere: lending every
     * nomination for each of them took two thirds of the CPU (bench/preemption_bench.sh,
     * docs/preemption.md). A failed node's status is the first pass's here; PostFilter makes it
     * the pass with the nominated pods, as kube's, when it needs it
     * (sched_framework_status_with_nominated). */
    const bool obs = fw->obs != NULL;
    int64_t t = obs ? fw_now(fw) : 0;
    sched_outcome pf;
    if (pre_filter(fw, &pf, err) != 0) {
        if (obs)
            fw_point_done(fw, SCHED_EP_PRE_FILTER, fw_outcome(SCHED_STATUS_ERROR), t);
        return -1;
    }
    if (obs)
        fw_point_done(fw, SCHED_EP_PRE_FILTER, pf, t);
    size_t nf = fw_filter_nodes(fw, s, p);
    if (nf && sched_nominated_count(sched_snapshot_nominated(s))) {
        /* node-local filters see a nominated pod on its own node only; the inter-pod ones (p's
         * own terms, or a nominated pod's anti-affinity or ports) see it everywhere */
        bool inter = fw->n_hook_pre || fw->n_hook_post || fw_nominated_inter(s, p);
        size_t lent = inter ? fw_nominated_lend(fw, s, p) : fw_nominated_lend_feasible(fw, s, p);
        if (lent) {
            int rc = pre_filter(fw, NULL, err);
            size_t keep = 0;
            for (size_t k = 0; !rc && k < nf; k++) {
                uint32_t i = fw->feas[k];
                sched_filter_id id = fw_filter_one(fw, s, i, &fw->detail[i]);
                fw->status[i] = (uint8_t)id;
                if (id == SCHED_FILTER_OK)
                    fw->feas[keep++] = i;
            }
            nf = keep;
            fw_nominated_take_back(fw);
            /* the PreFilter state as the snapshot is, for scoring */
            if (rc || (inter && pre_filter(fw, NULL, err) != 0))
                return -1;
        }
    }
    fw->n_feas = nf;

    /* PreScore. Timed, like Score, only when there is something to choose between: with one
     * feasible node or none kube-scheduler runs neither (the scores are still computed here,
     * for explain and the extender, but not reported). */
    const bool prio = obs && nf > 1, timed = prio && fw_timed(fw);
    t = prio ? fw_now(fw) : 0;
    for (size_t k = 0; k < fw->n_plugins; k++) {
        const sched_plugin *pl = &fw->plugins[k];
        if (!pl->pre_score)
            continue;
        int64_t tp = timed ? fw_now(fw) : 0;
        int rc = pl->pre_score(pl->state, &fw->cyc, err);
        if (timed)
            fw_plugin_done(fw, k, SCHED_EP_PRE_SCORE,
                           fw_outcome(rc ? SCHED_STATUS_ERROR : SCHED_STATUS_OK), &tp);
        if (rc != 0) {
            if (prio)
                fw_point_done(fw, SCHED_EP_PRE_SCORE, fw_outcome(SCHED_STATUS_ERROR), t);
            return tm_err_wrap(err, "%s %s", k ? "plugin" : "policy", pl->name);
        }
    }
    if (nf) /* the preference plugins' PreScore (their Score: combine_preferences) */
        pref_pre_score(fw, timed);
    if (prio)
        fw_point_done(fw, SCHED_EP_PRE_SCORE, fw_outcome(SCHED_STATUS_OK), t);
    fw->have_cycle = true;

    /* Score: the policy's (in one batch when it can: one call, one observation in a sampled
     * cycle, since it scores every feasible node from the columns at once; node by node
     * through score it reads labels and would cost the sampled cycle several times the batch),
     * plus any added Score plugin's, each call timed */
    t = prio ? fw_now(fw) : 0;
    int64_t tp = t;
    if (fw->plugins[0].score_batch) {
        fw->plugins[0].score_batch(fw->plugins[0].state, &fw->cyc, fw->feas, nf, fw->fscore);
        if (timed)
            fw_plugin_done(fw, 0, SCHED_EP_SCORE, fw_outcome(SCHED_STATUS_OK), &tp);
    } else {
        for (size_t k = 0; k < nf; k++) {
            fw->fscore[k] = fw->plugins[0].score(fw->plugins[0].state, &fw->cyc,
                                                 sched_snapshot_node(s, fw->feas[k]));
            if (timed)
                fw_plugin_done(fw, 0, SCHED_EP_SCORE, fw_outcome(SCHED_STATUS_OK), &tp);
        }
    }
    for (size_t j = 1; j < fw->n_plugins; j++) {
        const sched_plugin *pl = &fw->plugins[j];
        if (timed && pl->score)
            tp = fw_now(fw);
        for (size_t k = 0; pl->score && k < nf; k++) {
            fw->fscore[k] += pl->score(pl->state, &fw->cyc, sched_snapshot_node(s, fw->feas[k]));
            if (timed)
                fw_plugin_done(fw, j, SCHED_EP_SCORE, fw_outcome(SCHED_STATUS_OK), &tp);
        }
    }

    /* the preferences, when any plugin has something to say about the pod */
    if (nf)
        combine_preferences(fw, s, nf, timed);
    if (prio)
        fw_point_done(fw, SCHED_EP_SCORE, fw_outcome(SCHED_STATUS_OK), t);

    /* select */
    sched_node_cols cols;
    sched_snapshot_node_cols(s, &cols);
    const uint32_t *name_rank = cols.name_rank;
    /* the highest score wins, ties go to the first in name order (and, should ranks repeat
     * after a failed refresh, to the lowest index, so the order of fw->feas does not matter);
     * a score at or above the best so far is rare once the scan is under way */
    int best = -1;
    int64_t best_score = 0;
    if (nf) {
        int64_t mn = fw->fscore[0], mx = fw->fscore[0];
        uint32_t bi = fw->feas[0], br = name_rank[bi];
        fw->score[bi] = mx;
        for (size_t k = 1; k < nf; k++) {
            int64_t sc = fw->fscore[k];
            uint32_t i = fw->feas[k];
            fw->score[i] = sc;
            mn = sc < mn ? sc : mn;
            if (__builtin_expect(sc >= mx, 0)) {
                uint32_t r = name_rank[i];
                if (sc > mx || r < br || (r == br && i < bi)) {
                    mx = sc;
                    br = r;
                    bi = i;
                }
            }
        }
        fw->min_score = mn;
        fw->max_score = mx;
        if (fw->tie_break && fw->secondary && !fw->prefs)
            bi = break_ties(fw, s, nf, mx, bi, name_rank);
        best = (int)bi;
        best_score = mx;
    }
    d->n_feasible = nf;
    d->n_nodes = n;
    d->node = best;
    if (best >= 0) {
        d->node_name = sched_snapshot_node(s, (size_t)best)->name;
        d->score = best_score;
    }
    return 0;
}

/* A failed node's status as kube-scheduler records it: from the pass with the pods nominated to
 * it when that pass rejects (its first), else from the pass without. The cycle filtered with them
 * only the nodes that passed without (sched_framework_schedule), so a failed node's status may
 * name a later filter than kube's would (a node full with a nomination says "Insufficient cpu",
 * and without it a Reservation's hold may reject it), and PostFilter reads whether eviction can
 * resolve a node's rejection from it: made here, when PostFilter needs it. Lends only the pods
 * nominated to that node, as kube's addNominatedPods does for the node it filters. */
/* Filters failed node i again (the nominated pods lent); a rejection replaces its status. */
static void refilter_failed(sched_framework *fw, size_t i) {
    uint32_t d = 0;
    sched_filter_id id = fw_filter_one(fw, fw->cyc.snap, i, &d);
    if (id != SCHED_FILTER_OK) {
        fw->status[i] = (uint8_t)id;
        fw->detail[i] = d;
    }
}

int sched_framework_status_with_nominated(sched_framework *fw, size_t node, tm_err *err) {
    if (!fw->have_cycle || fw->whatif || node >= fw->n_nodes)
        return 0;
    sched_snapshot *s = fw->cyc.snap;
    const sched_pod *p = fw->cyc.pod;
    if (!sched_nominated_count(sched_snapshot_nominated(s)) ||
        !fw_nominated_lend_failed(fw, s, p, node))
        return 0;
    int rc = pre_filter(fw, NULL, err);
    if (!rc)
        refilter_failed(fw, node);
    fw_nominated_take_back(fw);
    if (rc || pre_filter(fw, NULL, err) != 0) /* the PreFilter state as the snapshot is */
        return -1;
    return 0;
}

void sched_framework_whatif_nominated_status(sched_framework *fw) {
    if (!fw->whatif)
        return;
    for (size_t k = 0; k < fw->n_lent; k++) {
        int i = sched_snapshot_node_index(fw->cyc.snap, fw->lent[k]->node);
        if (i >= 0 && (size_t)i < fw->n_nodes && fw->status[i] != SCHED_FILTER_OK)
            refilter_failed(fw, (size_t)i);
    }
}

/* ---- what-if filtering (PostFilter) ---- */

int sched_framework_whatif_begin(sched_framework *fw, sched_snapshot *s, const sched_pod *p,
                                 int64_t now_ms, tm_err *err) {
    if (fw->whatif)
        return tm_err_set(err, "what-if filtering already under way");
    if (fw_ensure_cap(fw, sched_snapshot_node_count(s), err) != 0)
        return -1;
    fw->saved_cyc = fw->cyc;
    fw->saved_profile = fw->cur_profile;
    fw->cyc = fw_cycle_for(fw, s, p, now_ms);
    fw->whatif = true;
    fw_nominated_lend(fw, s, p);
    if (pre_filter(fw, NULL, err) != 0) {
        sched_framework_whatif_end(fw);
        return -1;
    }
    return 0;
}

int sched_framework_whatif_prefilter(sched_framework *fw, tm_err *err) {
    if (!fw->whatif)
        return tm_err_set(err, "what-if PreFilter outside sched_framework_whatif_begin/_end");
    return pre_filter(fw, NULL, err);
}

bool sched_framework_whatif_node_local(const sched_framework *fw) {
    if (fw->n_hook_pre || fw->n_hook_post)
        return false;
    return true;
}

sched_filter_id sched_framework_whatif_filter(sched_framework *fw, size_t node, uint32_t *detail) {
    uint32_t d = 0;
    sched_filter_id id = node < sched_snapshot_node_count(fw->cyc.snap)
                             ? fw_filter_one(fw, fw->cyc.snap, node, &d)
                             : SCHED_FILTER_COUNT;
    if (detail)
        *detail = d;
    return id;
}

void sched_framework_whatif_end(sched_framework *fw) {
    if (!fw->whatif)
        return;
    fw_nominated_take_back(fw);
    fw->cyc = fw->saved_cyc;
    if (fw->n_profiles) /* the failed cycle's outcomes are read with its own weights */
        fw_switch_profile(fw, fw->saved_profile);
    fw->whatif = false;
}

/* ---- PostFilter ---- */

static sched_status post_filter_run(sched_framework *fw, int *nominated, tm_err *err) {
    bool timed = fw_timed(fw);
    int64_t t = 0;
    for (size_t k = 0; k < fw->n_plugins; k++) {
        const sched_plugin *pl = &fw->plugins[k];
        if (!pl->post_filter)
            continue;
        int node = -1;
        if (timed)
            t = fw_now(fw);
        sched_status st = pl->post_filter(pl->state, &fw->cyc, &node, err);
        if (timed)
            fw_plugin_done(fw, k, SCHED_EP_POST_FILTER, fw_outcome(st), &t);
        if (st == SCHED_STATUS_ERROR) {
            tm_err_wrap(err, "post-filter %s", pl->name);
            return st;
        }
        if (st == SCHED_STATUS_OK) {
            *nominated = node;
            return st;
        }
    }
    return SCHED_STATUS_UNSCHEDULABLE;
}

sched_status sched_framework_post_filter(sched_framework *fw, int *nominated, tm_err *err) {
    *nominated = -1;
    if (!fw->have_cycle)
        return tm_err_set(err, "post-filter without a scheduling cycle"), SCHED_STATUS_ERROR;
    int64_t t = fw->obs ? fw_now(fw) : 0;
    sched_status st = post_filter_run(fw, nominated, err);
    if (fw->obs)
        fw_point_done(fw, SCHED_EP_POST_FILTER, fw_outcome(st), t);
    return st;
}

/* ---- Reserve ---- */

static int reserve_run(sched_framework *fw, sched_snapshot *s, const sched_pod *p, int node,
                       tm_err *err) {
    const sched_node *n = sched_snapshot_node(s, (size_t)node);
    if (!n)
        return tm_err_set(err, "reserve %s/%s: no node with index %d", p->ns, p->name, node);
    if (sched_pod_record(s, p, n->name, err) != 0)
        return tm_err_wrap(err, "reserve %s/%s on %s", p->ns, p->name, n->name);
    fw_profile_for(fw, p);
    sched_cycle c = {.snap = s, .pod = p, .now_ms = fw->cyc.now_ms, .fw = fw};
    bool resolved = false, timed = fw_timed(fw);
    int64_t t = 0;
    for (size_t k = 0; k < fw->n_plugins; k++) {
        const sched_plugin *pl = &fw->plugins[k];
        if (!pl->reserved)
            continue;
        if (!resolved)
            sched_task_resolve(s, p, &c.task);
        resolved = true;
        if (timed)
            t = fw_now(fw);
        pl->reserved(pl->state, &c, n);
        if (timed) /* a Reserve hook cannot fail */
            fw_plugin_done(fw, k, SCHED_EP_RESERVE, fw_outcome(SCHED_STATUS_OK), &t);
    }
    return 0;
}

int sched_framework_reserve(sched_framework *fw, sched_snapshot *s, const sched_pod *p, int node,
                            tm_err *err) {
    int64_t t = fw->obs ? fw_now(fw) : 0;
    int rc = reserve_run(fw, s, p, node, err);
    if (fw->obs)
        fw_point_done(fw, SCHED_EP_RESERVE, fw_outcome(rc ? SCHED_STATUS_ERROR : SCHED_STATUS_OK),
                      t);
    return rc;
}

/* ---- Permit ---- */

static sched_status permit_run(sched_framework *fw, sched_snapshot *s, const sched_pod *p, int node,
                               int64_t now_ms, int64_t *deadline_ms, char *msg, size_t size,
                               tm_err *err) {
    if (size)
        msg[0] = '\0';
    const sched_node *n = sched_snapshot_node(s, (size_t)node);
    if (!n) {
        tm_err_set(err, "permit %s/%s: no node with index %d", p->ns, p->name, node);
        return SCHED_STATUS_ERROR;
    }
    if (fw_find_waiting(fw, p->uid)) {
        tm_err_set(err, "permit %s/%s: the pod is already waiting", p->ns, p->name);
        return SCHED_STATUS_ERROR;
    }
    sched_cycle c = fw_cycle_for(fw, s, p, now_ms);
    uint64_t pending = 0;
    int64_t deadline = INT64_MAX;
    bool timed = fw_timed(fw);
    int64_t t = 0;
    for (size_t k = 0; k < fw->n_plugins; k++) {
        const sched_plugin *pl = &fw->plugins[k];
        if (!pl->permit)
            continue;
        int64_t timeout = 0;
        char why[256] = "";
        if (timed)
            t = fw_now(fw);
        sched_status st = pl->permit(pl->state, &c, n, &timeout, why, sizeof why);
        if (timed)
            fw_plugin_done(fw, k, SCHED_EP_PERMIT, fw_outcome(st), &t);
        if (st == SCHED_STATUS_WAIT) {
            pending |= 1ull << k;
            int64_t d = now_ms + (timeout > 0 ? timeout : 0);
            deadline = d < deadline ? d : deadline;
        } else if (st != SCHED_STATUS_OK) { /* a reject (or a failing hook) ends it */
            if (size)
                snprintf(msg, size, "rejected by %s: %s", pl->name, why);
            sched_framework_unreserve(fw, s, p, node, now_ms);
            return SCHED_STATUS_UNSCHEDULABLE;
        }
    }
    if (!pending)
        return SCHED_STATUS_OK;
    if (fw_hold(fw, s, p, node, deadline, pending, err) != 0)
        return SCHED_STATUS_ERROR;
    if (deadline_ms)
        *deadline_ms = deadline;
    return SCHED_STATUS_WAIT;
}

sched_status sched_framework_permit(sched_framework *fw, sched_snapshot *s, const sched_pod *p,
                                    int node, int64_t now_ms, int64_t *deadline_ms, char *msg,
                                    size_t size, tm_err *err) {
    /* the point's time leaves out the Unreserve a reject runs (timed as its own point) only
     * approximately: kube-scheduler unreserves after RunPermitPlugins returns */
    int64_t t = fw->obs ? fw_now(fw) : 0;
    sched_status st = permit_run(fw, s, p, node, now_ms, deadline_ms, msg, size, err);
    if (fw->obs)
        fw_point_done(fw, SCHED_EP_PERMIT, fw_outcome(st), t);
    return st;
}

/* ---- Unreserve ---- */

void sched_framework_unreserve(sched_framework *fw, sched_snapshot *s, const sched_pod *p, int node,
                               int64_t now_ms) {
    const sched_node *n = sched_snapshot_node(s, (size_t)node);
    sched_cycle c = fw_cycle_for(fw, s, p, now_ms);
    bool timed = fw_timed(fw);
    int64_t t0 = fw->obs ? fw_now(fw) : 0, t = t0;
    for (size_t k = fw->n_plugins; k-- > 0;) {
        if (!fw->plugins[k].unreserve || !n)
            continue;
        if (timed)
            t = fw_now(fw);
        fw->plugins[k].unreserve(fw->plugins[k].state, &c, n);
        if (timed)
            fw_plugin_done(fw, k, SCHED_EP_UNRESERVE, fw_outcome(SCHED_STATUS_OK), &t);
    }
    if (fw->obs)
        fw_point_done(fw, SCHED_EP_UNRESERVE, fw_outcome(SCHED_STATUS_OK), t0);
    if (fw->forget)
        fw->forget(fw->forget_arg, s, p->uid);
    else
        sched_snapshot_remove_pod(s, p->uid); /* -1 when absent: nothing was recorded */
}

void sched_framework_set_forget(sched_framework *fw,
                                void (*fn)(void *arg, sched_snapshot *s, const char *uid),
                                void *arg) {
    fw->forget = fn;
    fw->forget_arg = arg;
}

/* ---- binding cycle ---- */

int sched_framework_bind(sched_framework *fw, sched_snapshot *s, const sched_pod *p, int node,
                         int64_t now_ms, tm_err *err) {
    const sched_node *n = sched_snapshot_node(s, (size_t)node);
    if (!n)
        return tm_err_set(err, "bind %s/%s: no node with index %d", p->ns, p->name, node);
    tm_err_clear(err); /* a hook may fail without a message */
    sched_cycle c = fw_cycle_for(fw, s, p, now_ms);
    const char *failed = NULL, *point = NULL;
    const bool obs = fw->obs != NULL, timed = fw_timed(fw);
    int64_t t0 = obs ? fw_now(fw) : 0, t = t0;
    for (size_t k = 0; !failed && k < fw->n_plugins; k++) {
        const sched_plugin *pl = &fw->plugins[k];
        if (!pl->pre_bind)
            continue;
        if (timed)
            t = fw_now(fw);
        sched_status st = pl->pre_bind(pl->state, &c, n, err);
        if (timed)
            fw_plugin_done(fw, k, SCHED_EP_PRE_BIND, fw_outcome(st), &t);
        if (st != SCHED_STATUS_OK)
            failed = pl->name, point = "pre-bind";
    }
    if (obs)
        fw_point_done(fw, SCHED_EP_PRE_BIND,
                      fw_outcome(failed ? SCHED_STATUS_ERROR : SCHED_STATUS_OK), t0);
    /* Bind's outcome: the first answer other than SKIP; SKIP when every plugin skipped */
    sched_status bound = SCHED_STATUS_SKIP;
    t0 = t = obs && !failed ? fw_now(fw) : 0;
    for (size_t k = 0; !failed && k < fw->n_plugins; k++) {
        const sched_plugin *pl = &fw->plugins[k];
        if (!pl->bind)
            continue;
        if (timed)
            t = fw_now(fw);
        sched_status st = pl->bind(pl->state, &c, n, err);
        if (timed)
            fw_plugin_done(fw, k, SCHED_EP_BIND, fw_outcome(st), &t);
        if (st == SCHED_STATUS_SKIP)
            continue;
        bound = st;
        if (st == SCHED_STATUS_OK)
            break;
        failed = pl->name, point = "bind";
    }
    if (obs && (!failed || bound != SCHED_STATUS_SKIP))
        fw_point_done(fw, SCHED_EP_BIND,
                      fw_outcome(bound == SCHED_STATUS_OK || bound == SCHED_STATUS_SKIP
                                     ? bound
                                     : SCHED_STATUS_ERROR),
                      t0);
    if (!failed)
        return 0;
    /* the hook's err first, then ours around it; unreserve only after (it may not fail) */
    tm_err_wrap(err, "%s %s of %s/%s on %s", point, failed, p->ns, p->name, n->name);
    sched_framework_unreserve(fw, s, p, node, now_ms);
    return -1;
}

/* WaitOnPermit: the outcome of a pod Permit held (permit.c keeps the waiting pods); a rejected
 * or timed-out pod is unreserved here, in the binding cycle, so permit.c needs nothing of it. */
sched_status sched_framework_waiting_resolve(sched_framework *fw, const char *uid, int64_t now_ms,
                                             char *msg, size_t size) {
    if (size)
        msg[0] = '\0';
    fw_waiting *w = fw_find_waiting(fw, uid);
    if (!w) {
        if (size)
            snprintf(msg, size, "pod %s is not waiting", uid ? uid : "(null)");
        return SCHED_STATUS_UNSCHEDULABLE;
    }
    if (!w->rejected && !w->pending) {
        fw_drop_waiting(fw, w);
        return SCHED_STATUS_OK;
    }
    if (!w->rejected && now_ms < w->deadline_ms)
        return SCHED_STATUS_WAIT;
    if (!w->rejected) {
        size_t k = 0;
        while (k < fw->n_plugins && !(w->pending & (1ull << k)))
            k++;
        snprintf(w->msg, sizeof w->msg, "timed out waiting for %s after %lld ms",
                 k < fw->n_plugins ? fw->plugins[k].name : "permit",
                 (long long)(now_ms - w->deadline_ms));
    }
    if (size)
        snprintf(msg, size, "%s", w->msg);
    fw_waiting held = *w;
    fw_drop_waiting(fw, w); /* before unreserve: a hook may look at the waiting pods */
    sched_framework_unreserve(fw, held.snap, held.pod, held.node, now_ms);
    return SCHED_STATUS_UNSCHEDULABLE;
}
