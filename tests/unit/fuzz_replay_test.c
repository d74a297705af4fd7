/* fuzz_replay_test.c: replays every seed corpus of tests/fuzz/corpus/<target>/ through the fuzz
 * harnesses of tests/fuzz/, without libFuzzer, so the corpora (and each crash reproducer added
 * to them once fixed) are regression tests run by `make test`, also under valgrind.
 *
 * Each harness is #included here with its entry point renamed (FUZZ_ENTRY), and a broken
 * harness invariant (FZ_FAIL) is counted as a failed check instead of aborting. A crash in the
 * code under test crashes this program, which tests/run.sh counts as a failure. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static int replay_broken; /* invariants broken by the input being replayed */
#define FZ_FAIL(what)                                                                              \
    (printf("    invariant broken at %s:%d: %s\n", __FILE__, __LINE__, what), replay_broken++)

#define FUZZ_ENTRY fuzz_watchstream
#include "fuzz/watchstream_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_kube_proto
#include "fuzz/kube_proto_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_yamljson
#include "fuzz/yamljson_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_kubeconfig
#include "fuzz/kubeconfig_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_quantity
#include "fuzz/quantity_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_selector
#include "fuzz/selector_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_trace
#include "fuzz/trace_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_units
#include "fuzz/units_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_weblog
#include "fuzz/weblog_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_sysbench
#include "fuzz/sysbench_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_fio
#include "fuzz/fio_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_nodeprofile
#include "fuzz/nodeprofile_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_podspec
#include "fuzz/podspec_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_extender
#include "fuzz/extender_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_sim_cluster
#include "fuzz/sim_cluster_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_sim_workload
#include "fuzz/sim_workload_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_sim_meas
#include "fuzz/sim_meas_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_facts
#include "fuzz/facts_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_schedconfig
#include "fuzz/schedconfig_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_groups
#include "fuzz/groups_fuzz.c"
#undef FUZZ_ENTRY
#define FUZZ_ENTRY fuzz_admission
#include "fuzz/admission_fuzz.c"
#undef FUZZ_ENTRY

typedef int (*replay_fn)(const uint8_t *data, size_t size);

static int replay_plain(const struct dirent *d) {
    return d->d_name[0] != '.';
}

/* Feeds every file of tests/fuzz/corpus/<name>/ to fn; checks the corpus is there and that no
 * input breaks an invariant. Returns the number of inputs replayed. */
static int replay_corpus(const char *name, replay_fn fn) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/%s", fz_repo_root(), name);
    struct dirent **list = NULL;
    int n = scandir(dir, &list, replay_plain, alphasort);
    CHECKF(n > 0, "seed corpus %s is missing or empty", dir);
    for (int i = 0; i < n; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, list[i]->d_name);
        FILE *f = fopen(path, "rb");
        CHECKF(f != NULL, "cannot open %s", path);
        uint8_t *buf = NULL;
        size_t len = 0;
        if (f) {
            fseek(f, 0, SEEK_END);
            long sz = ftell(f);
            fseek(f, 0, SEEK_SET);
            buf = malloc(sz > 0 ? (size_t)sz : 1);
            len = sz > 0 && buf ? fread(buf, 1, (size_t)sz, f) : 0;
            fclose(f);
        }
        if (buf) {
            /* Exactly len bytes, as libFuzzer hands them over, so a read past the end of the
             * input shows up under valgrind too. */
            replay_broken = 0;
            fn(buf, len);
            CHECKF(replay_broken == 0, "%s broke %d invariant(s)", path, replay_broken);
        }
        free(buf);
        free(list[i]);
    }
    free(list);
    return n;
}

#define REPLAY_TEST(name)                                                                          \
    static void test_replay_##name(void) {                                                         \
        int n = replay_corpus(#name, fuzz_##name);                                                 \
        printf("    %s: %d input(s)\n", #name, n);                                                 \
    }
REPLAY_TEST(watchstream)
REPLAY_TEST(kube_proto)
REPLAY_TEST(yamljson)
REPLAY_TEST(kubeconfig)
REPLAY_TEST(quantity)
REPLAY_TEST(selector)
REPLAY_TEST(trace)
REPLAY_TEST(units)
REPLAY_TEST(weblog)
REPLAY_TEST(sysbench)
REPLAY_TEST(fio)
REPLAY_TEST(nodeprofile)
REPLAY_TEST(podspec)
REPLAY_TEST(extender)
REPLAY_TEST(sim_cluster)
REPLAY_TEST(sim_workload)
REPLAY_TEST(sim_meas)
REPLAY_TEST(facts)
REPLAY_TEST(schedconfig)
REPLAY_TEST(groups)
REPLAY_TEST(admission)

int main(void) {
    RUN(test_replay_watchstream);
    RUN(test_replay_kube_proto);
    RUN(test_replay_yamljson);
    RUN(test_replay_kubeconfig);
    RUN(test_replay_quantity);
    RUN(test_replay_selector);
    RUN(test_replay_trace);
    RUN(test_replay_units);
    RUN(test_replay_weblog);
    RUN(test_replay_sysbench);
    RUN(test_replay_fio);
    RUN(test_replay_nodeprofile);
    RUN(test_replay_podspec);
    RUN(test_replay_extender);
    RUN(test_replay_sim_cluster);
    RUN(test_replay_sim_workload);
    RUN(test_replay_sim_meas);
    RUN(test_replay_facts);
    RUN(test_replay_schedconfig);
    RUN(test_replay_groups);
    RUN(test_replay_admission);
    return TEST_SUMMARY();
}
