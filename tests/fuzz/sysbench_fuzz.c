/* sysbench_fuzz.c: fuzzes the sysbench report parsers (profiler/sysbench_parse.h): the output
 * of a tool run on the node, whatever build of it is installed. A figure the parser accepts
 * must be usable: finite, positive and within the physical bounds of sysbench_parse.h. */
#include <math.h>

#include "fuzz/fuzz_util.h"
#include "profiler/sysbench_parse.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    char *s = fz_cstr(data, size);
    if (!s)
        return 0;
    tm_err err = {{0}, 0};
    double v = 0;
    if (prof_sysbench_parse_cpu(s, &v, &err) == 0) {
        if (!(isfinite(v) && v > 0 && v <= PROF_MAX_CPU_EPS)) {
            fprintf(stderr, "cpu events/s accepted: %g\n", v);
            FZ_FAIL("prof_sysbench_parse_cpu accepted a figure outside (0, PROF_MAX_CPU_EPS]");
        }
    } else {
        FZ_CHECK(strstr(err.msg, "sysbench") != NULL);
    }
    if (prof_sysbench_parse_mem(s, &v, &err) == 0) {
        if (!(isfinite(v) && v > 0 && v <= PROF_MAX_MEM_MIBPS)) {
            fprintf(stderr, "memory MiB/s accepted: %g\n", v);
            FZ_FAIL("prof_sysbench_parse_mem accepted a figure outside (0, PROF_MAX_MEM_MIBPS]");
        }
    } else {
        FZ_CHECK(strstr(err.msg, "sysbench") != NULL);
    }
    free(s);
    return 0;
}
