/* profiler_bench_test.c: a real `bench --quick` on this machine (sysbench and fio must be
 * installed), and the errors when a tool is missing, fails, prints nonsense or hangs. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "profiler/bench.h"
#include "profiler/nodeprofile.h"
#include "profiler/proc.h"

static char tmpdir[64];

static void test_real_quick_bench(void) {
    prof_bench_opts o = {.node = "unit-node", .quick = true, .dir = tmpdir};
    tm_err err;
    json_t *p = prof_bench_run(&o, &err);
    CHECKF(p != NULL, "%s", err.msg);
    if (!p)
        return;
    prof_profile pr;
    CHECKF(prof_profile_from_json(p, "bench", &pr, &err) == 0, "%s", err.msg);
    CHECK_STR(pr.node, "unit-node");
    CHECK(pr.cores == sysconf(_SC_NPROCESSORS_ONLN));
    CHECK(pr.memory_bytes > (1LL << 26));
    /* No comparison of the two CPU figures: on a loaded machine the all-threads run can score
     * below the single-thread one. test_paper_parameters checks which report feeds which. */
    CHECK(pr.cpu_single_eps > 0 && pr.cpu_multi_eps > 0);
    CHECK_INT(json_integer_value(json_object_get(p, "cpu_threads")), pr.cores);
    CHECK(pr.seq_read_iops > 0 && pr.rand_write_iops > 0);
    CHECK(json_is_object(json_object_get(json_object_get(p, "static"), "cpu")));
    CHECK(json_is_boolean(json_object_get(p, "fio_direct")));
    CHECK(json_is_true(json_object_get(p, "quick")));
    printf("    quick bench: cpu %.0f/%.0f eps, mem %.0f MiB/s, seq %.0f/%.0f, rand %.0f/%.0f "
           "IOPS, %.2f s\n",
           pr.cpu_single_eps, pr.cpu_multi_eps, pr.mem_mibps, pr.seq_read_iops, pr.seq_write_iops,
           pr.rand_read_iops, pr.rand_write_iops,
           json_real_value(json_object_get(p, "duration_s")));
    prof_profile_clear(&pr);
    json_decref(p);
    /* fio's test file is removed afterwards. */
    char cmd[128];
    snprintf(cmd, sizeof cmd, "ls %s | grep -q tarema-fio", tmpdir);
    CHECK(system(cmd) != 0);
}

static void test_missing_tool(void) {
    prof_bench_opts o = {.quick = true, .dir = tmpdir, .sysbench = "tarema-no-such-sysbench"};
    tm_err err;
    CHECK(prof_bench_run(&o, &err) == NULL);
    CHECKF(strstr(err.msg, "tarema-no-such-sysbench: not found in PATH"), "%s", err.msg);
    o.sysbench = NULL;
    o.fio = "tarema-no-such-fio";
    o.quick = true;
    CHECK(prof_bench_run(&o, &err) == NULL);
    CHECKF(strstr(err.msg, "tarema-no-such-fio: not found"), "%s", err.msg);
}

static void test_failing_and_garbage_tool(void) {
    prof_bench_opts o = {.quick = true, .dir = tmpdir, .sysbench = "false"};
    tm_err err;
    CHECK(prof_bench_run(&o, &err) == NULL);
    CHECKF(strstr(err.msg, "sysbench cpu (1 thread): exited with status 1"), "%s", err.msg);
    o.sysbench = "echo"; /* exits 0 but prints its arguments, not a report */
    CHECK(prof_bench_run(&o, &err) == NULL);
    CHECKF(strstr(err.msg, "sysbench cpu: no 'events per second:'") && strstr(err.msg, "1 lines"),
           "%s", err.msg);
}

/* Absolute path of a recorded tool output (tests run from the repository root or REPO_ROOT). */
static void fixture_path(const char *name, char *out, size_t cap) {
    const char *root = getenv("REPO_ROOT");
    char *abs = realpath(root ? root : ".", NULL);
    snprintf(out, cap, "%s/tests/fixtures/profiler/%s", abs ? abs : ".", name);
    free(abs);
}

/* Writes an executable shell script `name` into tmpdir whose body is `body` (after #!/bin/sh);
 * the script's path goes to out. Returns 0, or -1 when it cannot be written. */
static int fake_tool(const char *name, const char *body, char *out, size_t cap) {
    snprintf(out, cap, "%s/%s", tmpdir, name);
    FILE *f = fopen(out, "w");
    if (!f)
        return -1;
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    return chmod(out, 0755);
}

/* A filesystem that refuses O_DIRECT: a stand-in fio fails like fio 3.x does on direct=1 and
 * prints the recorded report otherwise; the profile must say "fio_direct": false. */
static void test_fio_direct_fallback(void) {
    char fake[128], fixture[1024], script[2048];
    fixture_path("fio-3.33-quick.json", fixture, sizeof fixture);
    snprintf(script, sizeof script,
             "case \"$*\" in *--direct=1*) echo 'fio: pid=1, err=22/"
             "file:filesetup.c:805, func=open(f), error=Invalid argument' >&2; exit 1;; "
             "esac\nexec cat '%s'",
             fixture);
    CHECK(fake_tool("fake-fio", script, fake, sizeof fake) == 0);
    prof_bench_opts o = {.node = "tmpfs-node", .quick = true, .dir = tmpdir, .fio = fake};
    tm_err err;
    json_t *p = prof_bench_run(&o, &err);
    CHECKF(p != NULL, "%s", err.msg);
    CHECK(json_is_false(json_object_get(p, "fio_direct")));
    CHECK_NEAR(json_real_value(json_object_get(p, "seq_read_iops")), 4501.988072, 1e-6);
    json_decref(p);
    unlink(fake);
}

/* Stand-ins for sysbench and fio that log their arguments (one line per run) and print the
 * recorded reports (one thread: 1541.18 eps, more: 1606.58, memory 22733.03 MiB/s). */
static int fake_tools(char *sysbench, char *fio, size_t cap, char *log, size_t logcap) {
    char cpu1[1024], cpu2[1024], mem[1024], fioj[1024], body[8192];
    fixture_path("sysbench-1.0.20-cpu-1t.txt", cpu1, sizeof cpu1);
    fixture_path("sysbench-1.0.20-cpu-2t.txt", cpu2, sizeof cpu2);
    fixture_path("sysbench-1.0.20-mem.txt", mem, sizeof mem);
    fixture_path("fio-3.33-quick.json", fioj, sizeof fioj);
    snprintf(log, logcap, "%s/tools.log", tmpdir);
    unlink(log);
    snprintf(body, sizeof body,
             "echo \"sysbench $*\" >>'%s'\n"
             "case \"$1 $*\" in\n"
             "cpu*--threads=1\\ *) exec cat '%s';;\n"
             "cpu*) exec cat '%s';;\n"
             "memory*) exec cat '%s';;\n"
             "esac\nexit 1",
             log, cpu1, cpu2, mem);
    if (fake_tool("fake-sysbench", body, sysbench, cap) != 0)
        return -1;
    snprintf(body, sizeof body, "echo \"fio $*\" >>'%s'\nexec cat '%s'", log, fioj);
    return fake_tool("fake-fio", body, fio, cap);
}

/* The line of the log that starts with prefix, or "" (static buffer). */
static const char *log_line(const char *log, const char *prefix) {
    static char line[2048];
    FILE *f = fopen(log, "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, prefix, strlen(prefix)) == 0) {
            fclose(f);
            return line;
        }
    if (f)
        fclose(f);
    return "";
}

/* Whether every space-separated word of want is an argument in line. */
static int has_args(const char *line, const char *want) {
    char w[512], padded[2100];
    snprintf(w, sizeof w, "%s", want);
    snprintf(padded, sizeof padded, " %.*s ", (int)strcspn(line, "\n"), line);
    for (char *save = NULL, *t = strtok_r(w, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        char needle[128];
        snprintf(needle, sizeof needle, " %s ", t);
        if (!strstr(padded, needle))
            return 0;
    }
    return 1;
}

/* The full profile runs the tools with the paper's parameters (V-A-a) and maps each report to
 * its contract key; --quick only shrinks sizes and durations. */
static void test_paper_parameters(void) {
    char sysbench[128], fio[128], log[128];
    CHECK(fake_tools(sysbench, fio, sizeof sysbench, log, sizeof log) == 0);
    prof_bench_opts o = {
        .node = "paper", .dir = tmpdir, .threads = 4, .sysbench = sysbench, .fio = fio};
    tm_err err;
    json_t *p = prof_bench_run(&o, &err);
    CHECKF(p != NULL, "%s", err.msg);
    const char *l = log_line(log, "sysbench cpu --cpu-max-prime=20000 --threads=1 ");
    CHECKF(has_args(l, "--time=10 run"), "%s", l);
    l = log_line(log, "sysbench cpu --cpu-max-prime=20000 --threads=4 ");
    CHECKF(has_args(l, "--time=10 run"), "%s", l);
    l = log_line(log, "sysbench memory");
    CHECKF(has_args(l, "--memory-block-size=1M --memory-total-size=100G --threads=1 run"), "%s", l);
    l = log_line(log, "fio");
    CHECKF(has_args(l, "--output-format=json --size=4g --ioengine=libaio --iodepth=64 --direct=1 "
                       "--time_based --runtime=10 --name=seq --rw=rw --bs=128k --name=rand "
                       "--stonewall --rw=randrw --bs=4k"),
           "%s", l);
    /* Each figure comes from its own report. */
    CHECK_NEAR(json_number_value(json_object_get(p, "cpu_single_eps")), 1541.18, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(p, "cpu_multi_eps")), 1606.58, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(p, "mem_mibps")), 22733.03, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(p, "seq_read_iops")), 4501.988072, 1e-6);
    CHECK_NEAR(json_number_value(json_object_get(p, "rand_write_iops")), 26684.315684, 1e-6);
    /* The contract's keys with their JSON types. */
    CHECK(json_is_string(json_object_get(p, "node")));
    CHECK(json_is_integer(json_object_get(p, "cores")));
    CHECK(json_is_integer(json_object_get(p, "memory_bytes")));
    CHECK(json_is_object(json_object_get(p, "static")));
    CHECK(json_is_false(json_object_get(p, "quick")));
    json_decref(p);
    unlink(log);
    o.quick = true;
    o.node = ""; /* NODE_NAME set but empty: the host name, never an empty node name */
    p = prof_bench_run(&o, &err);
    CHECKF(p != NULL, "%s", err.msg);
    char host[256] = "";
    gethostname(host, sizeof host);
    CHECK_STR(json_string_value(json_object_get(p, "node")), host);
    json_decref(p);
    l = log_line(log, "sysbench cpu --cpu-max-prime=20000 --threads=1 ");
    CHECKF(has_args(l, "--time=1 run"), "%s", l);
    l = log_line(log, "sysbench memory");
    CHECKF(has_args(l, "--memory-block-size=1M --memory-total-size=1G --threads=1"), "%s", l);
    l = log_line(log, "fio");
    CHECKF(has_args(l, "--size=64m --runtime=1 --direct=1 --iodepth=64"), "%s", l);
    unlink(log);
    unlink(sysbench);
    unlink(fio);
}

static void test_proc_timeout_and_capture(void) {
    prof_proc_result r;
    tm_err err;
    const char *sleep_argv[] = {"sleep", "10", NULL};
    CHECK_INT(prof_proc_run(sleep_argv, 1, &r, &err), 0);
    CHECK(r.timed_out);
    prof_proc_result_free(&r);
    const char *sh_argv[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
    CHECK_INT(prof_proc_run(sh_argv, 5, &r, &err), 0);
    CHECK_STR(r.out, "out\n");
    CHECK_STR(r.errout, "err\n");
    CHECK_INT(r.exit_status, 3);
    CHECK(!r.timed_out);
    prof_proc_result_free(&r);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tarema-bench-test-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        printf("cannot create a temporary directory\n0 passed, 1 failed\n");
        return 1;
    }
    RUN(test_proc_timeout_and_capture);
    RUN(test_missing_tool);
    RUN(test_failing_and_garbage_tool);
    RUN(test_fio_direct_fallback);
    RUN(test_paper_parameters);
    RUN(test_real_quick_bench);
    rmdir(tmpdir);
    return TEST_SUMMARY();
}
