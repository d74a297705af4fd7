/* sysbench_parse.h: parsers for the text reports of `sysbench cpu run` and
 * `sysbench memory run` (sysbench 0.4.x, 1.0.x and 1.1 report formats).
 *
 * Pure functions over the captured text. Errors name the tool and, where one is at fault, the
 * line ("sysbench cpu: line 14: 'events per second:' has no number: ..."), so an operator can
 * see which sysbench build printed something unexpected. */
#ifndef TAREMA_PROFILER_SYSBENCH_PARSE_H
#define TAREMA_PROFILER_SYSBENCH_PARSE_H

#include "lib/error.h"

/* Physical bounds: above them a report is broken or forged, and refused with the figure named.
 * A CPU event is one prime search (microseconds per core); 10^12 events/s would take 10^6
 * cores at 10^6 events/s each. 10^9 MiB/s is a PiB per second. */
#define PROF_MAX_CPU_EPS   1e12
#define PROF_MAX_MEM_MIBPS 1e9

/* Events per second of a CPU run: the "events per second:" line (1.0) or "events/s (eps):"
 * (1.1), else total number of events / total time (0.4.x prints no rate); in (0, PROF_MAX_CPU_EPS].
 */
int prof_sysbench_parse_cpu(const char *text, double *eps, tm_err *err);

/* MiB per second of a memory run: "N MiB transferred (R MiB/sec)" (1.0+) or the 0.4.x
 * "N MB transferred (R MB/sec)" (whose MB are MiB); in (0, PROF_MAX_MEM_MIBPS]. */
int prof_sysbench_parse_mem(const char *text, double *mibps, tm_err *err);

#endif
