/* profiler_parse_test.c: the sysbench, fio, lscpu, meminfo and lsblk parsers on recorded real
 * outputs (tests/fixtures/profiler, see its README), other versions' formats and malformed
 * outputs whose errors must name the tool and the line; the NodeProfile contract. */
#include <stdlib.h>

#include "harness.h"
#include "lib/fileutil.h"
#include "profiler/facts.h"
#include "profiler/fio_parse.h"
#include "profiler/nodeprofile.h"
#include "profiler/sysbench_parse.h"

/* Reads a fixture; tests run from the repository root (tests/run.sh) or REPO_ROOT. */
static char *fixture(const char *name) {
    char path[1024];
    const char *root = getenv("REPO_ROOT");
    snprintf(path, sizeof path, "%s/tests/fixtures/profiler/%s", root ? root : ".", name);
    tm_err err;
    char *t = tm_read_file(path, NULL, &err);
    if (!t)
        printf("    cannot read fixture: %s\n", err.msg);
    return t;
}

static double cpu_of(const char *name, int *rc, tm_err *err) {
    char *t = fixture(name);
    double eps = -1;
    *rc = t ? prof_sysbench_parse_cpu(t, &eps, err) : -2;
    free(t);
    return eps;
}

static double mem_of(const char *name, int *rc, tm_err *err) {
    char *t = fixture(name);
    double v = -1;
    *rc = t ? prof_sysbench_parse_mem(t, &v, err) : -2;
    free(t);
    return v;
}

static void test_sysbench_cpu_versions(void) {
    int rc;
    tm_err err;
    CHECK_NEAR(cpu_of("sysbench-1.0.20-cpu-1t.txt", &rc, &err), 1541.18, 1e-9);
    CHECK_INT(rc, 0);
    double multi = cpu_of("sysbench-1.0.20-cpu-2t.txt", &rc, &err);
    CHECK_INT(rc, 0);
    CHECK(multi > 1000);
    CHECK_NEAR(cpu_of("sysbench-0.4.12-cpu.txt", &rc, &err), 3671 / 10.0004, 1e-6);
    CHECK_INT(rc, 0);
    CHECK_NEAR(cpu_of("sysbench-1.1.0-cpu.txt", &rc, &err), 467.9312, 1e-9);
    CHECK_INT(rc, 0);
}

static void test_sysbench_cpu_malformed(void) {
    int rc;
    tm_err err;
    cpu_of("sysbench-truncated-cpu.txt", &rc, &err);
    CHECK_INT(rc, -1);
    CHECK(strstr(err.msg, "sysbench cpu") && strstr(err.msg, "14 lines"));
    cpu_of("sysbench-badnumber-cpu.txt", &rc, &err);
    CHECK_INT(rc, -1);
    CHECKF(strstr(err.msg, "sysbench cpu: line 15:") && strstr(err.msg, "-nan"), "%s", err.msg);
    cpu_of("sysbench-fatal.txt", &rc, &err);
    CHECK_INT(rc, -1);
    CHECKF(strstr(err.msg, "line 3") && strstr(err.msg, "Cannot find benchmark"), "%s", err.msg);
    double eps;
    CHECK_INT(prof_sysbench_parse_cpu("", &eps, &err), -1);
    CHECK(strstr(err.msg, "0 lines") != NULL);
}

static void test_sysbench_mem(void) {
    int rc;
    tm_err err;
    CHECK_NEAR(mem_of("sysbench-1.0.20-mem.txt", &rc, &err), 22733.03, 1e-9);
    CHECK_INT(rc, 0);
    CHECK_NEAR(mem_of("sysbench-1.0.18-mem.txt", &rc, &err), 17612.58, 1e-9);
    CHECK_NEAR(mem_of("sysbench-0.4.12-mem.txt", &rc, &err), 13942.17, 1e-9);
    CHECK_INT(rc, 0);
    mem_of("sysbench-truncated-mem.txt", &rc, &err);
    CHECK_INT(rc, -1);
    CHECKF(strstr(err.msg, "sysbench memory") && strstr(err.msg, "16 lines"), "%s", err.msg);
    mem_of("sysbench-badnumber-mem.txt", &rc, &err);
    CHECK_INT(rc, -1);
    CHECKF(strstr(err.msg, "sysbench memory: line 20:"), "%s", err.msg);
    mem_of("sysbench-1.0.20-cpu-1t.txt", &rc, &err); /* a CPU report is not a memory report */
    CHECK_INT(rc, -1);
}

static void test_fio_versions(void) {
    prof_fio_result r;
    tm_err err;
    char *t = fixture("fio-3.33-quick.json");
    CHECK_INT(prof_fio_parse(t, &r, &err), 0);
    free(t);
    CHECK_STR(r.version, "fio-3.33");
    CHECK_INT(r.njobs, 2);
    const prof_fio_job *seq = prof_fio_job_find(&r, "seq"), *rnd = prof_fio_job_find(&r, "rand");
    CHECK(seq && rnd);
    if (!seq || !rnd)
        return;
    CHECK_NEAR(seq->read_iops, 4501.988072, 1e-6);
    CHECK_NEAR(rnd->write_iops, 26684.315684, 1e-6);
    prof_fio_result r2;
    t = fixture("fio-2.2-noiops.json");
    CHECK_INT(prof_fio_parse(t, &r2, &err), 0);
    free(t);
    /* total_ios / runtime agrees with fio's own figure to within rounding of the runtime. */
    CHECK_NEAR(r2.jobs[0].read_iops / seq->read_iops, 1.0, 0.01);
    CHECK_NEAR(r2.jobs[1].write_iops / rnd->write_iops, 1.0, 0.01);
    t = fixture("fio-3.28-warnings.json");
    CHECK_INT(prof_fio_parse(t, &r2, &err), 0);
    free(t);
    CHECK_STR(r2.version, "fio-3.28");
    CHECK_NEAR(r2.jobs[0].read_iops, seq->read_iops, 1e-9);
}

static void test_fio_malformed(void) {
    prof_fio_result r;
    tm_err err;
    char *t = fixture("fio-truncated.json");
    CHECK_INT(prof_fio_parse(t, &r, &err), -1);
    free(t);
    CHECKF(strstr(err.msg, "fio: line 6") && strstr(err.msg, "invalid JSON"), "%s", err.msg);
    t = fixture("fio-job-error.json");
    CHECK_INT(prof_fio_parse(t, &r, &err), -1);
    free(t);
    CHECKF(strstr(err.msg, "job 'seq'") && strstr(err.msg, "error 22"), "%s", err.msg);
    t = fixture("fio-nojobs.json");
    CHECK_INT(prof_fio_parse(t, &r, &err), -1);
    free(t);
    CHECK(strstr(err.msg, "'jobs'") != NULL);
    t = fixture("fio-missing-write.json");
    CHECK_INT(prof_fio_parse(t, &r, &err), -1);
    free(t);
    CHECKF(strstr(err.msg, "job 'rand' has no 'write'"), "%s", err.msg);
    CHECK_INT(prof_fio_parse("fio: engine libaio not loadable\n", &r, &err), -1);
    CHECK(strstr(err.msg, "no JSON document") != NULL);
    CHECK_INT(prof_fio_parse("{\n \"jobs\": [\n  {\"jobname\": \"seq\",\n x", &r, &err), -1);
    CHECKF(strstr(err.msg, "fio: line 4"), "%s", err.msg);
}

static void test_facts(void) {
    tm_err err;
    char *t = fixture("lscpu-debian12-x86.txt");
    json_t *c = t ? prof_lscpu_parse(t, &err) : NULL;
    free(t);
    CHECK(c != NULL);
    if (!c)
        return;
    CHECK_STR(json_string_value(json_object_get(c, "model")), "AMD EPYC");
    CHECK_INT(json_integer_value(json_object_get(c, "cpus")), 2);
    CHECK_INT(json_integer_value(json_object_get(c, "cores")), 2);
    CHECK_STR(json_string_value(json_object_get(c, "l3")), "32 MiB (1 instance)");
    json_t *flags = json_object_get(c, "flags");
    int avx2 = 0;
    size_t i;
    json_t *f;
    json_array_foreach(flags, i, f) {
        avx2 |= strcmp(json_string_value(f), "avx2") == 0;
    }
    CHECK(avx2);
    json_decref(c);
    CHECK(prof_lscpu_parse("Architecture: x86_64\n", &err) == NULL);
    CHECK(strstr(err.msg, "lscpu") && strstr(err.msg, "CPU(s)"));
    CHECK(prof_lscpu_parse("CPU(s):  many\n", &err) == NULL);
    CHECKF(strstr(err.msg, "lscpu: line 1"), "%s", err.msg);
    long long b;
    CHECK_INT(prof_meminfo_total("MemTotal:       24684092 kB\nMemFree: 1 kB\n", &b, &err), 0);
    CHECK_INT(b, 24684092LL * 1024);
    CHECK_INT(prof_meminfo_total("MemFree: 1 kB\n", &b, &err), -1);
    json_t *d = prof_lsblk_parse("{\"blockdevices\": [{\"name\": \"vda\", \"type\": \"disk\", "
                                 "\"rota\": \"1\", \"size\": \"256G\", \"model\": null},"
                                 "{\"name\": \"sr0\", \"type\": \"rom\", \"rota\": true}]}",
                                 &err);
    CHECK_INT(json_array_size(d), 1);
    CHECK(json_is_true(json_object_get(json_array_get(d, 0), "rotational")));
    json_decref(d);
    CHECK(prof_lsblk_parse("{\"x\": 1}", &err) == NULL);
}

/* Issue 13 defect 10: figures no machine can have were taken as they came: lscpu's
 * 9223372036854775807 cores per socket times 2 sockets overflowed a long long (UBSan:
 * "signed integer overflow" in facts.c; `make test-sanitize` runs this test with UBSan set to
 * abort), 10^20 CPUs clamped to 9223372036854775807, 10^23 sysbench events/s stored. Each is
 * now an error naming the field, the value and the bound. */
static void test_absurd_figures_are_refused(void) {
    tm_err err;
    static const struct {
        const char *file, *want;
    } lscpu[] = {
        {"lscpu-absurd-overflow.txt",
         "lscpu: line 12: 'Core(s) per socket' is 9223372036854775807, outside 1..1000000"},
        {"lscpu-absurd-cpus.txt", "lscpu: line 5: 'CPU(s)' is 99999999999999999999, outside "
                                  "1..1000000"},
        {"lscpu-absurd-cores.txt", "lscpu: 'Core(s) per socket' 1000000 x 'Socket(s)' 64 = "
                                   "64000000 cores, outside 1..1000000"},
    };
    for (size_t i = 0; i < sizeof lscpu / sizeof lscpu[0]; i++) {
        char *t = fixture(lscpu[i].file);
        err.msg[0] = '\0';
        json_t *c = t ? prof_lscpu_parse(t, &err) : NULL;
        CHECKF(c == NULL, "%s accepted: cores %lld", lscpu[i].file,
               (long long)json_integer_value(json_object_get(c, "cores")));
        CHECK_STR(err.msg, lscpu[i].want);
        json_decref(c);
        free(t);
    }
    /* the largest plausible figures still pass, "-" means unknown, trailing junk does not */
    json_t *c =
        prof_lscpu_parse("CPU(s): 1000000\nCore(s) per socket: 1000\nSocket(s): 1000\n", &err);
    CHECKF(c != NULL, "%s", err.msg);
    CHECK_INT(json_integer_value(json_object_get(c, "cores")), 1000000);
    json_decref(c);
    c = prof_lscpu_parse("CPU(s): 8\nCore(s) per socket: 4\nSocket(s): -\n", &err);
    CHECKF(c != NULL && !json_object_get(c, "sockets") && !json_object_get(c, "cores"), "%s",
           err.msg);
    json_decref(c);
    CHECK(prof_lscpu_parse("CPU(s): 8x\n", &err) == NULL);
    CHECKF(strstr(err.msg, "'CPU(s)' is not a positive integer"), "%s", err.msg);

    long long b = -1;
    char *t = fixture("meminfo-absurd.txt");
    CHECK_INT(t ? prof_meminfo_total(t, &b, &err) : 0, -1);
    free(t);
    CHECK_STR(err.msg, "/proc/meminfo: 'MemTotal:' is 99999999999999999 kB, outside "
                       "1..1099511627776 kB");
    CHECK_INT(prof_meminfo_total("MemTotal: 99999999999999999999999 kB\n", &b, &err), -1);
    CHECKF(strstr(err.msg, "outside 1..1099511627776 kB"), "%s", err.msg);
    CHECK_INT(prof_meminfo_total("MemTotal: 1099511627776 kB\n", &b, &err), 0);
    CHECK_INT(b, 1LL << 50);

    int rc;
    cpu_of("sysbench-absurd-cpu.txt", &rc, &err);
    CHECK_INT(rc, -1);
    CHECK_STR(err.msg, "sysbench cpu: line 15: 'events per second:' is 1e+23, above the "
                       "plausible 1e+12");
    cpu_of("sysbench-absurd-cpu-0.4.txt", &rc, &err); /* the rate computed from the totals */
    CHECK_INT(rc, -1);
    CHECKF(strstr(err.msg, "3.671e+18 events in 10.0004 s") && strstr(err.msg, "plausible 1e+12"),
           "%s", err.msg);
    mem_of("sysbench-absurd-mem.txt", &rc, &err);
    CHECK_INT(rc, -1);
    CHECK_STR(err.msg, "sysbench memory: line 20: transfer rate 2.5e+12 MiB/sec is above the "
                       "plausible 1e+09");

    prof_fio_result r;
    t = fixture("fio-absurd-iops.json");
    CHECK_INT(t ? prof_fio_parse(t, &r, &err) : 0, -1);
    free(t);
    CHECK_STR(err.msg, "fio: job 'seq' section 'write': 4.6e+15 IOPS is above the plausible 1e+09");
}

static const char *good =
    "{\"node\": \"n1\", \"cores\": 8, \"memory_bytes\": 34359738368, \"cpu_single_eps\": 380,"
    " \"cpu_multi_eps\": 3000, \"mem_mibps\": 14000, \"seq_read_iops\": 481, "
    "\"seq_write_iops\": 483, \"rand_read_iops\": 102, \"rand_write_iops\": 107.5, "
    "\"static\": {\"cpu\": {\"model\": \"x\"}}, \"extra\": true}";

static void test_nodeprofile(void) {
    tm_err err;
    json_t *j = json_loads(good, 0, NULL);
    prof_profile p;
    CHECK_INT(prof_profile_from_json(j, "a.json", &p, &err), 0);
    CHECK_STR(p.node, "n1");
    CHECK_NEAR(p.rand_write_iops, 107.5, 1e-12);
    json_t *out = prof_profile_to_json(&p);
    CHECK(json_is_true(json_object_get(out, "extra")));
    CHECK_INT(json_integer_value(json_object_get(out, "cores")), 8);
    json_decref(out);
    prof_profile_clear(&p);
    json_object_set_new(j, "mem_mibps", json_string("fast"));
    CHECK_INT(prof_profile_from_json(j, "a.json", &p, &err), -1);
    CHECK_STR(err.msg, "a.json: node 'n1': 'mem_mibps' must be a positive number");
    json_object_del(j, "mem_mibps");
    CHECK_INT(prof_profile_from_json(j, "a.json", &p, &err), -1);
    CHECK_STR(err.msg, "a.json: node 'n1': missing key 'mem_mibps'");
    json_object_set_new(j, "mem_mibps", json_real(14000));
    /* Absurd sizes are refused: a group's total_cores sums them and must not overflow. */
    json_object_set_new(j, "cores", json_integer(1LL << 62));
    CHECK_INT(prof_profile_from_json(j, "a.json", &p, &err), -1);
    CHECKF(strstr(err.msg, "'cores' must be an integer in 1.."), "%s", err.msg);
    json_object_set_new(j, "cores", json_integer(0));
    CHECK_INT(prof_profile_from_json(j, "a.json", &p, &err), -1);
    json_object_set_new(j, "cores", json_integer(8));
    json_object_set_new(j, "memory_bytes", json_real(3.4e10));
    CHECK_INT(prof_profile_from_json(j, "a.json", &p, &err), -1);
    CHECKF(strstr(err.msg, "'memory_bytes' must be an integer"), "%s", err.msg);
    json_decref(j);
    prof_profile_set set = {0};
    json_t *arr = json_pack("[o,o]", json_loads(good, 0, NULL), json_loads(good, 0, NULL));
    CHECK_INT(prof_profiles_add_json(&set, arr, "all.json", &err), -1);
    CHECKF(strstr(err.msg, "all.json[1]") && strstr(err.msg, "appears twice"), "%s", err.msg);
    CHECK_INT(set.n, 1);
    json_decref(arr);
    prof_profile_set_free(&set);
    json_t *num = json_integer(3);
    CHECK_INT(prof_profiles_add_json(&set, num, "x.json", &err), -1);
    json_decref(num);
}

int main(void) {
    RUN(test_sysbench_cpu_versions);
    RUN(test_sysbench_cpu_malformed);
    RUN(test_sysbench_mem);
    RUN(test_fio_versions);
    RUN(test_fio_malformed);
    RUN(test_facts);
    RUN(test_absurd_figures_are_refused);
    RUN(test_nodeprofile);
    return TEST_SUMMARY();
}
