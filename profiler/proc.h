/* proc.h: runs a benchmark tool as a child process (fork/exec, argv array, never a shell
 * string) with a time limit, capturing its standard output and standard error. */
#ifndef TAREMA_PROFILER_PROC_H
#define TAREMA_PROFILER_PROC_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/error.h"

typedef struct prof_proc_result {
    char *out;       /* standard output, NUL-terminated; caller frees via prof_proc_result_free */
    char *errout;    /* standard error, NUL-terminated */
    int exit_status; /* exit code, or -1 when killed by a signal */
    int signal;      /* the signal that ended it, or 0 */
    bool timed_out;  /* killed because it ran past the limit */
} prof_proc_result;

/* Runs argv[0] (searched in PATH) with the given arguments. Returns 0 when the program ran
 * (whatever its exit status: the caller judges it), -1 with err when it could not be started
 * ("sysbench: not found in PATH; install the sysbench package"). timeout_s <= 0 means no
 * limit. On timeout the child's whole process group is killed. The child runs with LC_ALL=C. */
int prof_proc_run(const char *const argv[], int timeout_s, prof_proc_result *res, tm_err *err);
void prof_proc_result_free(prof_proc_result *res);

#endif
