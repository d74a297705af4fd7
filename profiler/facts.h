/* facts.h: parsers for a node's static facts: `lscpu` (model, CPUs, cores, caches, flags),
 * /proc/meminfo (total memory) and `lsblk -J` (storage devices).
 *
 * Pure functions over captured text; bench.c runs the tools. */
#ifndef TAREMA_PROFILER_FACTS_H
#define TAREMA_PROFILER_FACTS_H

#include <jansson.h>

#include "lib/error.h"

/* Physical bounds: a figure outside them is a broken or hostile tool output, refused with the
 * field and value named rather than stored (and multiplied: cores = sockets x cores/socket).
 * The largest single systems have a few thousand CPUs and some tens of TiB. */
#define PROF_MAX_CPUS      1000000LL   /* CPU(s), cores, sockets, threads per core */
#define PROF_MAX_MEMORY_KB (1LL << 40) /* MemTotal: 1 PiB */

/* lscpu's "Key: value" report as {"architecture", "model", "cpus", "threads_per_core",
 * "cores_per_socket", "sockets", "cores" (physical), "l1d", "l1i", "l2", "l3", "flags": [...]}.
 * Keys lscpu did not print (or printed as "-") are left out; "CPU(s):" is required. Every count
 * must be a whole number in 1..PROF_MAX_CPUS, and so must cores. New reference or NULL. */
json_t *prof_lscpu_parse(const char *text, tm_err *err);

/* MemTotal of /proc/meminfo, in bytes (1 kB .. PROF_MAX_MEMORY_KB). */
int prof_meminfo_total(const char *text, long long *bytes, tm_err *err);

/* `lsblk -J -d -o NAME,TYPE,ROTA,SIZE,MODEL` into [{"name","type","rotational","size",
 * "model"}] for disks. New reference or NULL. */
json_t *prof_lsblk_parse(const char *text, tm_err *err);

#endif
