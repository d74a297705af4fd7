/* scores.h: the DAM's four per-cluster scores, each in [0,1] (1 best), and their weighted mean
 * (Vitali et al., CISIS 2022, section 3.2). Pure arithmetic; docs/dam.md has the formulas. */
#ifndef TAREMA_DAM_SCORES_H
#define TAREMA_DAM_SCORES_H

#include <stddef.h>

#include "dam/data.h"

/* s1 = 1 / (1 + used/total): 1 for an idle cluster, 0.5 for a full one. */
double dam_score_load(double cores_used, double cores_total);
/* s2 = perf / perf_max (1 for the fastest cores among the candidates). */
double dam_score_perf(double perf_per_core, double perf_max);
/* s3 = t_run / (t_run + t_wait): 1 with no wait, 0.5 when the wait equals the run. */
double dam_score_wait(double run_s, double wait_s);
/* s4 = exp(-x), x the data distance (0 local, 1 same site, 2 elsewhere in the paper). */
double dam_score_data(double x);

/* The paper's distance of one dataset from a cluster when no transfer speed is known: 0 at the
 * cluster's own location, 1 elsewhere in its site (datacentre), 2 at another site. */
double dam_data_class(const dam_dataset *d, const char *cluster_location, const char *cluster_site);

/* x of s4 for a job reading `datasets` on a cluster: the size-weighted mean over the datasets of
 * each one's distance, which is its transfer time divided by the job's run time there when a
 * speed from its location to the cluster's is known (0 at the same location), else the class
 * above. 0 without datasets. Sizes all 0 weigh the datasets equally. */
double dam_data_x(const dam_dataset *const *datasets, size_t n, const dam_transfer *transfers,
                  size_t ntransfers, const char *cluster_location, const char *cluster_site,
                  double run_s);

/* Performance per core of a cluster from its node groups: the cores-weighted mean of the
 * groups' per-core figure (sysbench events/s of one thread). <= 0 when no group has one. */
double dam_perf_from_groups(const double *cores, const double *perf, size_t n);

/* sum w_i s_i / sum w_i; 0 when every weight is 0. */
double dam_weighted_mean(const double *scores, const double *weights, size_t n);

#endif
