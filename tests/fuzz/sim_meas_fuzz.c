/* sim_meas_fuzz.c: fuzzes the simulator's measurement readers (sim/model.h sim_meas_read):
 * the input as a lotaru CSV (machine from its column, and overridden, with and without a Label
 * filter) and as a Nextflow trace. The API takes a path, so the input goes to a temporary file.
 * Every row accepted must be usable by the runtime model: names set, a finite positive
 * runtime, finite non-negative usage. */
#include <math.h>

#include "fuzz/fuzz_util.h"
#include "sim/model.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

static void sim_meas_check(const char *path, const char *format, const char *machine,
                           const char *label) {
    sim_meas_table t = {0};
    tm_err err = {{0}, 0};
    long n = sim_meas_read(&t, path, format, machine, label, &err);
    if (n < 0) {
        FZ_CHECK(strstr(err.msg, path) != NULL);
    } else {
        FZ_CHECK((size_t)n == t.n);
        for (size_t i = 0; i < t.n; i++) {
            const sim_meas_row *r = &t.rows[i];
            FZ_CHECK(r->process[0] && memchr(r->process, 0, sizeof r->process));
            FZ_CHECK(r->machine[0] && memchr(r->machine, 0, sizeof r->machine));
            FZ_CHECK(!machine || strcmp(r->machine, machine) == 0);
            FZ_CHECK(!label || !r->label[0] || strcmp(r->label, label) == 0);
            FZ_CHECK(isfinite(r->order));
            if (!(isfinite(r->m.runtime_s) && r->m.runtime_s > 0)) {
                fprintf(stderr, "%s row %zu: runtime %g s\n", format, i, r->m.runtime_s);
                FZ_FAIL("a measurement row without a finite positive runtime was accepted");
            }
            /* usage may be unknown (NAN) but never infinite or negative */
            const double u[] = {r->m.cpu_pct, r->m.peak_rss, r->m.io_bytes};
            for (size_t k = 0; k < 3; k++)
                if (isinf(u[k]) || u[k] < 0) {
                    fprintf(stderr, "%s row %zu: usage[%zu] = %g\n", format, i, k, u[k]);
                    FZ_FAIL("a measurement row with infinite or negative usage was accepted");
                }
        }
    }
    sim_meas_table_free(&t);
}

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    char *path = fz_temp_file(P_tmpdir, ".csv", data, size);
    if (!path)
        return 0;
    sim_meas_check(path, "lotaru", NULL, NULL);
    sim_meas_check(path, "lotaru", "n1", "train-1");
    sim_meas_check(path, "trace", "n1", NULL);
    unlink(path);
    free(path);
    return 0;
}
