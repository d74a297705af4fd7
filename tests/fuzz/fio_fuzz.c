/* fio_fuzz.c: fuzzes the fio JSON report parser (profiler/fio_parse.h), including the warning
 * lines fio prints before the document. Accepted figures must be usable (finite, not
 * negative, at most PROF_MAX_IOPS) and names NUL-terminated. */
#include <math.h>

#include "fuzz/fuzz_util.h"
#include "profiler/fio_parse.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    char *s = fz_cstr(data, size);
    if (!s)
        return 0;
    tm_err err = {{0}, 0};
    prof_fio_result res;
    memset(&res, 0xA5, sizeof res);
    if (prof_fio_parse(s, &res, &err) == 0) {
        FZ_CHECK(memchr(res.version, 0, sizeof res.version) != NULL);
        FZ_CHECK(res.njobs >= 0 && res.njobs <= PROF_FIO_MAX_JOBS);
        for (int i = 0; i < res.njobs; i++) {
            const prof_fio_job *j = &res.jobs[i];
            FZ_CHECK(memchr(j->name, 0, sizeof j->name) != NULL);
            if (!(isfinite(j->read_iops) && j->read_iops >= 0 && j->read_iops <= PROF_MAX_IOPS &&
                  isfinite(j->write_iops) && j->write_iops >= 0 &&
                  j->write_iops <= PROF_MAX_IOPS)) {
                fprintf(stderr, "job '%s': read %g write %g IOPS\n", j->name, j->read_iops,
                        j->write_iops);
                FZ_FAIL("prof_fio_parse accepted IOPS outside 0..PROF_MAX_IOPS");
            }
            FZ_CHECK(prof_fio_job_find(&res, j->name) != NULL);
        }
    } else {
        FZ_CHECK(strstr(err.msg, "fio") != NULL);
    }
    free(s);
    return 0;
}
