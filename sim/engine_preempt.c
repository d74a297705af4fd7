/* engine_preempt.c: the simulator's --preemption (sim_opts.preemption), through the live
 * scheduler's own choices: DefaultPreemption (plugins/preemption/) for a single task that fits
 * nowhere, sched_gang_preempt (plugins/gang/gang_preempt.h) for a gang that does not fit whole.
 * This file only carries the choice out in the simulated cluster: the victims leave at once
 * (no grace period), their work is lost, and they are queued again.
 *
 * A running gang is evicted whole, never one member of it: the gang's preemption names every
 * placed member of a victim gang (one unit), and so does DefaultPreemption for a single task,
 * with its units set to the simulator's gangs (eng_preempt_setup), as the live scheduler sets
 * them: a gang with a member of the preemptor's priority or more is no victim, and a victim
 * gang's members all count in the node's choice. The first member evicted stops the whole
 * gang here (a gang is queued and placed whole); the others listed are gone already. Finished
 * members stay finished and count toward minMember when the gang is placed again, as succeeded
 * pods do live. */
#include "sim/engine_internal.h"

#include <stdlib.h>

#include "scheduler/plugins/gang/gang_preempt.h"
#include "scheduler/plugins/preemption/preemption.h"

/* gang_preempt.h's unit_of over the simulator's gang registry (ctx): the gang of a placed
 * task's pod, as the live scheduler's sched_gang_live_unit_of answers it over its registry. */
static const char *unit_of(void *ctx, const char *uid) {
    sched_gang *g = sched_gang_registry_of(ctx, uid);
    return g && !g->basic ? g->key : NULL;
}

int eng_preempt_setup(sim *s) {
    if (!s->o->preemption || !s->gangreg)
        return 0;
    return sched_preemption_set_units(s->fw, unit_of, s->gangreg, s->err);
}

/* Gang gi evicted whole: every running member stops, then each is queued again; the gang
 * re-enters the queue as one entry once the last one is (eng_enqueue counts them). 0, or -1. */
static int evict_gang(sim *s, int gi) {
    gang_st *g = &s->gangs[gi];
    long *stopped = malloc((size_t)g->size * sizeof *stopped);
    if (!stopped)
        return tm_err_set(s->err, "out of memory");
    int k = 0, rc = 0;
    for (int i = 0; rc == 0 && i < g->size; i++) {
        const task *m = &s->tasks[g->first + i];
        if (m->pod && m->node >= 0) {
            rc = eng_stop_task(s, g->first + i);
            stopped[k++] = g->first + i;
        }
    }
    g->ready = g->size - k; /* the finished ones; the stopped ones count again as they queue */
    for (int j = 0; rc == 0 && j < k; j++)
        rc = eng_enqueue(s, stopped[j]);
    free(stopped);
    if (rc < 0)
        return -1;
    s->evictions += k;
    s->gang_evictions++;
    return 0;
}

/* One victim (a pod uid the plugins chose) leaves: its task, or its whole gang. A member of a
 * gang already evicted with it is skipped. 0, or -1 with err. */
static int evict_victim(sim *s, const char *uid) {
    /* sim_pod_new names a task's pod t<index> */
    long vi = uid && uid[0] == 't' ? strtol(uid + 1, NULL, 10) : -1;
    if (vi < 0 || vi >= s->ntasks)
        return tm_err_set(s->err, "preemption chose unknown pod %s", uid ? uid : "(none)");
    const task *t = &s->tasks[vi];
    if (t->gang >= 0)
        return t->node < 0 ? 0 : evict_gang(s, t->gang);
    if (eng_evict_task(s, vi) < 0)
        return -1;
    s->evictions++;
    return 0;
}

int eng_preempt_task(sim *s, long ti, int64_t now_ms, sched_decision *d) {
    int nominated;
    sched_status st = sched_framework_post_filter(s->fw, &nominated, s->err);
    if (st == SCHED_STATUS_ERROR)
        return tm_err_wrap(s->err, "preemption for task %s", eng_task_name(s, ti));
    if (st != SCHED_STATUS_OK)
        return 0;
    const sched_preemption_result *r = sched_preemption_last(s->fw);
    for (size_t i = 0; i < r->n_victims; i++)
        if (evict_victim(s, r->victims[i].uid) < 0)
            return -1;
    s->preemptions++;
    s->attempts++;
    if (sched_framework_schedule(s->fw, s->snap, s->tasks[ti].pod, now_ms, d, s->err) < 0)
        return tm_err_wrap(s->err, "policy %s on task %s", s->o->policy, eng_task_name(s, ti));
    return 0;
}

int eng_preempt_gang(sim *s, long ti, sched_pod **pods, size_t n, int64_t now_ms) {
    gang_st *g = &s->gangs[s->tasks[ti].gang];
    /* where the dry run would nominate each member: the simulator places the gang again at
     * once instead, on the same snapshot, so it lands where room was made */
    int *nodes = calloc(n ? n : 1, sizeof *nodes);
    if (!nodes)
        return tm_err_set(s->err, "out of memory");
    sched_gang_preemption r = {.nodes = nodes};
    tm_err e = {0};
    int rc = 0;
    if (sched_gang_preempt(s->fw, s->snap, g->g, pods, n, now_ms, unit_of, s->gangreg, &r, &e) <
        0) {
        rc = tm_err_set(s->err, "gang preemption for the gang of task %s: %s", eng_task_name(s, ti),
                        e.msg);
    } else if (r.ok && r.n_victims > 0) { /* none: nothing is evicted, the gang waits whole */
        /* the victims are copies: they stay valid while their pods leave the snapshot */
        for (size_t i = 0; rc == 0 && i < r.n_victims; i++)
            rc = evict_victim(s, r.victims[i].uid);
        if (rc == 0) {
            s->gang_preemptions++;
            rc = 1;
        }
    }
    sched_gang_preemption_clear(&r);
    free(nodes);
    return rc;
}
