/* facts.h: parsers for a node's static facts: `lscpu` (model, CPUs, cores, caches, flags),
 * /proc/meminfo (total memory) and `lsblk -J` (storage devices).
 *
 * Pure functions over captured text; bench.c runs the tools. */
#ifndef TAREMA_PROFILER_FACTS_H
#define TAREMA_PROFILER_FACTS_H

#include <jansson.h>

#include "lib/error.h"

/* lscpu's "Key: value" report as {"architecture", "model", "cpus", "threads_per_core",
 * "cores_per_socket", "sockets", "cores" (physical), "l1d", "l1i", "l2", "l3", "flags": [...]}.
 * Keys lscpu did not print are left out; "CPU(s):" is required. New reference or NULL. */
json_t *prof_lscpu_parse(const char *text, tm_err *err);

/* MemTotal of /proc/meminfo, in bytes. */
int prof_meminfo_total(const char *text, long long *bytes, tm_err *err);

/* `lsblk -J -d -o NAME,TYPE,ROTA,SIZE,MODEL` into [{"name","type","rotational","size",
 * "model"}] for disks. New reference or NULL. */
json_t *prof_lsblk_parse(const char *text, tm_err *err);

#endif
