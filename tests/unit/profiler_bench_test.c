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
    CHECK(pr.cpu_multi_eps >= pr.cpu_single_eps * 0.5); /* all threads never far below one */
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

/* A filesystem that refuses O_DIRECT: a stand-in fio fails like fio 3.x does on direct=1 and
 * prints the recorded report otherwise; the profile must say "fio_direct": false. */
static void test_fio_direct_fallback(void) {
    char fake[128], fixture[1024], script[2048];
    snprintf(fake, sizeof fake, "%s/fake-fio", tmpdir);
    const char *root = getenv("REPO_ROOT");
    char *abs = realpath(root ? root : ".", NULL);
    snprintf(fixture, sizeof fixture, "%s/tests/fixtures/profiler/fio-3.33-quick.json",
             abs ? abs : ".");
    free(abs);
    snprintf(script, sizeof script,
             "#!/bin/sh\ncase \"$*\" in *--direct=1*) echo 'fio: pid=1, err=22/"
             "file:filesetup.c:805, func=open(f), error=Invalid argument' >&2; exit 1;; "
             "esac\nexec cat '%s'\n",
             fixture);
    FILE *f = fopen(fake, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(script, f);
    fclose(f);
    chmod(fake, 0755);
    prof_bench_opts o = {.node = "tmpfs-node", .quick = true, .dir = tmpdir, .fio = fake};
    tm_err err;
    json_t *p = prof_bench_run(&o, &err);
    CHECKF(p != NULL, "%s", err.msg);
    CHECK(json_is_false(json_object_get(p, "fio_direct")));
    CHECK_NEAR(json_real_value(json_object_get(p, "seq_read_iops")), 4501.988072, 1e-6);
    json_decref(p);
    unlink(fake);
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
    RUN(test_real_quick_bench);
    rmdir(tmpdir);
    return TEST_SUMMARY();
}
