/* extender_retry.c: the extender's retries (extender.h, "Retries"). kube-scheduler parks a pod
 * its extender left without a node until the next cluster event (it files the refusal under
 * its fake plugin "Extender", requeued by any event). tarema's informer can be milliseconds
 * behind kube-scheduler's: kube-scheduler sees a pod end, retries a waiting pod at once, and
 * tarema, still counting the ended pod, refuses the node kube-scheduler found free. The event
 * that would have retried the pod has passed, and in a quiet cluster the pod waits for
 * kube-scheduler's five-minute flush. So such a refusal is kept for a while, and each time
 * tarema's view changes the pod is evaluated again on the nodes it was refused: if one passes
 * now, the caller makes an event kube-scheduler retries the pod on. */
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "scheduler/cmd/extender_internal.h"

static void entry_free(ext_retry_entry *e) {
    free(e->uid);
    json_decref(e->pod);
    json_decref(e->names);
}

/* Drops uid's entry (lock held). */
static void drop_uid(sched_extender *x, const char *uid) {
    for (size_t i = 0; i < x->n_retry; i++)
        if (strcmp(x->retry[i].uid, uid) == 0) {
            entry_free(&x->retry[i]);
            memmove(&x->retry[i], &x->retry[i + 1], (x->n_retry - i - 1) * sizeof *x->retry);
            x->n_retry--;
            return;
        }
}

/* Appends e (lock held), dropping the oldest entry when the table is full; e is taken. */
static void append(sched_extender *x, ext_retry_entry e) {
    if (x->n_retry == SCHED_EXTENDER_RETRY_MAX) {
        entry_free(&x->retry[0]);
        memmove(&x->retry[0], &x->retry[1], (x->n_retry - 1) * sizeof *x->retry);
        x->n_retry--;
    }
    if (!x->retry && !(x->retry = calloc(SCHED_EXTENDER_RETRY_MAX, sizeof *x->retry))) {
        entry_free(&e); /* no memory: the pod just goes without a retry */
        return;
    }
    x->retry[x->n_retry++] = e;
}

void ext_retry_park(sched_extender *x, const json_t *pod, const json_t *failed, int64_t now_ms) {
    const char *uid = tm_json_str(pod, "metadata.uid", "");
    if (!uid[0])
        return; /* no identity to retry it by */
    ext_retry_entry e = {.uid = strdup(uid), .names = json_array(), .at_ms = now_ms};
    const char *node;
    const json_t *v;
    json_object_foreach((json_t *)failed, node, v) {
        (void)v;
        json_array_append_new(e.names, json_string(node));
    }
    e.pod = json_deep_copy(pod); /* the request's args are freed when its answer is written */
    if (!e.uid || !e.pod || json_array_size(e.names) != json_object_size(failed)) {
        entry_free(&e);
        return;
    }
    pthread_mutex_lock(&x->retry_mu);
    drop_uid(x, uid); /* the latest refusal is the one that counts */
    append(x, e);
    pthread_mutex_unlock(&x->retry_mu);
}

void ext_retry_forget(sched_extender *x, const json_t *pod) {
    const char *uid = tm_json_str(pod, "metadata.uid", "");
    pthread_mutex_lock(&x->retry_mu);
    if (uid[0] && x->n_retry)
        drop_uid(x, uid);
    if (uid[0] && x->retrying) { /* its entry may be out being evaluated: remember the uid */
        if (x->n_forgot == x->cap_forgot) {
            size_t cap = x->cap_forgot ? 2 * x->cap_forgot : 16;
            char **f = realloc(x->forgot, cap * sizeof *f);
            if (f) {
                x->forgot = f;
                x->cap_forgot = cap;
            }
        }
        char *u = x->n_forgot < x->cap_forgot ? strdup(uid) : NULL;
        if (u)
            x->forgot[x->n_forgot++] = u;
    }
    pthread_mutex_unlock(&x->retry_mu);
}

/* Whether uid was forgotten while the entries were out (lock held). */
static bool forgotten(const sched_extender *x, const char *uid) {
    for (size_t i = 0; i < x->n_forgot; i++)
        if (strcmp(x->forgot[i], uid) == 0)
            return true;
    return false;
}

static void clear_forgot(sched_extender *x) {
    for (size_t i = 0; i < x->n_forgot; i++)
        free(x->forgot[i]);
    x->n_forgot = 0;
}

void ext_retry_free(sched_extender *x) {
    for (size_t i = 0; i < x->n_retry; i++)
        entry_free(&x->retry[i]);
    free(x->retry);
    x->retry = NULL;
    x->n_retry = 0;
    clear_forgot(x);
    free(x->forgot);
    x->forgot = NULL;
    x->cap_forgot = 0;
}

size_t sched_extender_retry_pending(sched_extender *x) {
    pthread_mutex_lock(&x->retry_mu);
    size_t n = x->n_retry;
    pthread_mutex_unlock(&x->retry_mu);
    return n;
}

/* The first node of e's that passes the filters now, NULL when none does (or on an error: the
 * refusal stands as kube-scheduler has it). */
static const char *passes_now(sched_extender *x, const ext_retry_entry *e, json_t **res) {
    json_t *args = json_pack("{s:O, s:O}", "Pod", e->pod, "NodeNames", e->names);
    tm_err err = {0};
    *res = args ? ext_filter(x, args, false, &err) : NULL;
    json_decref(args);
    return json_string_value(json_array_get(json_object_get(*res, "NodeNames"), 0));
}

size_t sched_extender_retry(sched_extender *x, int64_t now_ms, sched_extender_retry_fn retry,
                            void *ud) {
    pthread_mutex_lock(&x->retry_mu);
    ext_retry_entry *mine = x->retry;
    size_t n = x->n_retry;
    x->retry = NULL;
    x->n_retry = 0;
    x->retrying = true;
    pthread_mutex_unlock(&x->retry_mu);
    /* evaluated without the table's lock: /filter parks and forgets pods meanwhile */
    size_t asked = 0, kept = 0;
    for (size_t i = 0; i < n; i++) {
        ext_retry_entry *e = &mine[i];
        if (now_ms - e->at_ms > SCHED_EXTENDER_RETRY_WINDOW_MS) {
            entry_free(e); /* kube-scheduler has seen whatever tarema's view lagged behind */
            continue;
        }
        json_t *res = NULL;
        /* the newest SCHED_EXTENDER_RETRY_BATCH: the likeliest to have met a view behind
         * kube-scheduler's */
        const char *node = n - i <= SCHED_EXTENDER_RETRY_BATCH ? passes_now(x, e, &res) : NULL;
        if (node) {
            retry(ud, tm_json_str(e->pod, "metadata.namespace", ""),
                  tm_json_str(e->pod, "metadata.name", ""), e->uid, node);
            asked++;
            entry_free(e);
        } else {
            mine[kept++] = *e;
        }
        json_decref(res);
    }
    pthread_mutex_lock(&x->retry_mu);
    ext_retry_entry *parked = x->retry; /* refused while the others were evaluated: newer */
    size_t np = x->n_retry;
    x->retry = NULL;
    x->n_retry = 0;
    for (size_t i = 0; i < kept; i++) {
        bool newer = forgotten(x, mine[i].uid); /* a node passed it meanwhile */
        for (size_t j = 0; j < np && !newer; j++)
            newer = strcmp(parked[j].uid, mine[i].uid) == 0;
        if (newer)
            entry_free(&mine[i]);
        else
            append(x, mine[i]);
    }
    for (size_t j = 0; j < np; j++)
        append(x, parked[j]);
    clear_forgot(x);
    x->retrying = false;
    pthread_mutex_unlock(&x->retry_mu);
    free(mine);
    free(parked);
    return asked;
}
