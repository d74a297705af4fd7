/* image_locality.c: kube-scheduler's ImageLocality score (imagelocality/image_locality.go): a
 * node scores by the images of the pod's init and regular containers it already holds, each
 * image's size scaled by the share of the cluster's nodes holding it (so an image on one node
 * of many counts little: no "node heating"), the sum clamped to 23 MiB .. 1000 MiB per
 * container and scaled to 0..100. No normalisation, weight 1. The images come from the nodes'
 * status.images (sched_node_image_size) and the snapshot's count of nodes per image name.
 * PreScore skips the pod when no node holds any of its images (every node would score 0): one
 * hash lookup per container, nothing at all in a cluster whose nodes report no images.
 * A secondary score, like NodeResourcesBalancedAllocation (see there). */
#include "scheduler/plugins/filters.h"

#define MIB                     (1024LL * 1024)
#define IMAGE_MIN_THRESHOLD     (23 * MIB)
#define IMAGE_MAX_PER_CONTAINER (1000 * MIB)

static bool image_pre_score(void *state, const sched_cycle *c) {
    const sched_pod *p = c->pod;
    if (!p->n_images || !sched_snapshot_image_names(c->snap))
        return false;
    for (size_t i = 0; i < p->n_images; i++)
        if (*p->images[i] && sched_snapshot_image_nodes(c->snap, p->images[i]))
            return true;
    return false;
}

int64_t sched_image_locality_score(const sched_snapshot *s, const sched_pod *p,
                                   const sched_node *n) {
    size_t total = sched_snapshot_node_count(s);
    if (!total || !p->n_images)
        return 0;
    int64_t sum = 0;
    for (size_t i = 0; i < p->n_images; i++) {
        int64_t size = *p->images[i] ? sched_node_image_size(n, p->images[i]) : -1;
        if (size < 0)
            continue;
        double spread = (double)sched_snapshot_image_nodes(s, p->images[i]) / (double)total;
        sum += (int64_t)((double)size * spread);
    }
    int64_t max = IMAGE_MAX_PER_CONTAINER * (int64_t)p->n_images;
    sum = sum < IMAGE_MIN_THRESHOLD ? IMAGE_MIN_THRESHOLD : sum > max ? max : sum;
    return SCHED_MAX_NODE_SCORE * (sum - IMAGE_MIN_THRESHOLD) / (max - IMAGE_MIN_THRESHOLD);
}

static int64_t image_score(void *state, const sched_cycle *c, const sched_node *n) {
    return sched_image_locality_score(c->snap, c->pod, n);
}

int sched_score_image_locality(sched_plugin *out, bool with_state) {
    *out = (sched_plugin){.name = "ImageLocality",
                          .pref_pre_score = image_pre_score,
                          .pref_score = image_score,
                          .pref_raw = true,
                          .pref_secondary = true,
                          .pref_weight = 1};
    return 0;
}
