/* nodeprofile.h: the NodeProfile JSON contract between `bench` (one node's measurements) and
 * `group`, `apply`, `run` and the simulator.
 *
 *   {"node": str, "cores": int, "memory_bytes": int, "cpu_single_eps": num,
 *    "cpu_multi_eps": num, "mem_mibps": num, "seq_read_iops": num, "seq_write_iops": num,
 *    "rand_read_iops": num, "rand_write_iops": num, "static": {...}, ...more keys allowed}
 *
 * Reading validates every required key (type, finite, positive) and names the file, the node
 * and the key that is wrong. No I/O except prof_profiles_load_files. */
#ifndef TAREMA_PROFILER_NODEPROFILE_H
#define TAREMA_PROFILER_NODEPROFILE_H

#include <jansson.h>
#include <stddef.h>

#include "lib/error.h"

#define PROF_NODE_NAME_MAX 254 /* a DNS subdomain (Kubernetes node name) is at most 253 */

typedef struct prof_profile {
    char node[PROF_NODE_NAME_MAX];
    long long cores;                        /* logical CPUs */
    long long memory_bytes;                 /* total memory */
    double cpu_single_eps;                  /* sysbench cpu events/s, one thread */
    double cpu_multi_eps;                   /* sysbench cpu events/s, all threads */
    double mem_mibps;                       /* sysbench memory MiB/s, one thread */
    double seq_read_iops, seq_write_iops;   /* fio, 128k blocks */
    double rand_read_iops, rand_write_iops; /* fio, 4k blocks */
    json_t *doc; /* the whole document as read or built (static facts, extra keys); owned */
} prof_profile;

/* Fills p from a NodeProfile object; `what` names it in errors ("a.json", "profiles.json[3]").
 * p->doc takes a new reference to j. Returns 0, or -1 with err. */
int prof_profile_from_json(const json_t *j, const char *what, prof_profile *p, tm_err *err);

/* The contract's keys from p's fields, merged over p->doc's other keys. New reference. */
json_t *prof_profile_to_json(const prof_profile *p);

/* Only the measured figures and size (no static facts): what the Node annotation carries.
 * New reference. */
json_t *prof_profile_figures(const prof_profile *p);

void prof_profile_clear(prof_profile *p); /* drops doc */

typedef struct prof_profile_set {
    prof_profile *items;
    size_t n;
} prof_profile_set;

/* Appends the profiles in doc (one NodeProfile object or an array of them) to set. A node name
 * already in the set is an error naming both places. */
int prof_profiles_add_json(prof_profile_set *set, const json_t *doc, const char *what, tm_err *err);

/* Reads each path (a NodeProfile or an array; "-" is standard input) into set. */
int prof_profiles_load_files(prof_profile_set *set, const char *const *paths, size_t npaths,
                             tm_err *err);

void prof_profile_set_free(prof_profile_set *set); /* frees the items, leaves set empty */

#endif
