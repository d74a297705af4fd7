/* facts_fuzz.c: fuzzes the parsers of a node's static facts (profiler/facts.h): lscpu's
 * report, /proc/meminfo and `lsblk -J`, the output of tools run on the node. Accepted figures
 * must be within the documented physical bounds (issue 13: absurd lscpu counts overflowed
 * cores = sockets x cores per socket). */
#include "fuzz/fuzz_util.h"
#include "profiler/facts.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

/* A count lscpu gave, or none at all. */
static void facts_check_count(const json_t *cpu, const char *key) {
    const json_t *v = json_object_get(cpu, key);
    if (!v)
        return;
    FZ_CHECK(json_is_integer(v));
    if (json_integer_value(v) < 1 || json_integer_value(v) > PROF_MAX_CPUS) {
        fprintf(stderr, "%s = %lld\n", key, (long long)json_integer_value(v));
        FZ_FAIL("lscpu count outside 1..PROF_MAX_CPUS accepted");
    }
}

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    char *s = fz_cstr(data, size);
    if (!s)
        return 0;
    tm_err err = {{0}, 0};
    json_t *cpu = prof_lscpu_parse(s, &err);
    if (!cpu) {
        FZ_CHECK(strncmp(err.msg, "lscpu", 5) == 0);
    } else {
        static const char *const keys[] = {"cpus", "threads_per_core", "cores_per_socket",
                                           "sockets", "cores"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            facts_check_count(cpu, keys[i]);
        FZ_CHECK(json_object_get(cpu, "cpus") != NULL);
        json_t *flags = json_object_get(cpu, "flags");
        FZ_CHECK(!flags || json_is_array(flags));
        char *out = json_dumps(cpu, 0);
        FZ_CHECK(out != NULL);
        free(out);
        json_decref(cpu);
    }
    memset(&err, 0, sizeof err);
    long long bytes = -1;
    if (prof_meminfo_total(s, &bytes, &err) == 0)
        FZ_CHECK(bytes >= 1024 && bytes <= PROF_MAX_MEMORY_KB * 1024);
    else
        FZ_CHECK(strncmp(err.msg, "/proc/meminfo", 13) == 0);
    memset(&err, 0, sizeof err);
    json_t *disks = prof_lsblk_parse(s, &err);
    if (!disks) {
        FZ_CHECK(strncmp(err.msg, "lsblk", 5) == 0);
    } else {
        FZ_CHECK(json_is_array(disks));
        size_t i;
        json_t *d;
        json_array_foreach(disks, i, d) FZ_CHECK(json_is_boolean(json_object_get(d, "rotational")));
        json_decref(disks);
    }
    free(s);
    return 0;
}
