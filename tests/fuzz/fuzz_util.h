/* fuzz_util.h: what every fuzz harness in tests/fuzz/ shares.
 *
 * A harness is compiled two ways: by hack/fuzz.sh with clang and libFuzzer, where its entry
 * point is LLVMFuzzerTestOneInput, and by tests/unit/fuzz_replay_test.c (gcc, `make test`),
 * which #includes every harness with FUZZ_ENTRY renamed per target and replays the seed
 * corpora, so a crash found once stays a regression test. So a harness defines its entry as
 * FUZZ_ENTRY, prefixes its static helpers with its target name (all harnesses share one
 * translation unit in the replay test) and reports a broken invariant with FZ_CHECK, which
 * aborts under libFuzzer (a crash it saves) and is counted by the replay test. */
#ifndef TAREMA_FUZZ_UTIL_H
#define TAREMA_FUZZ_UTIL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FUZZ_ENTRY
#define FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

/* Under libFuzzer a broken invariant must crash so the input is saved; the replay test defines
 * FZ_FAIL to count it instead. */
#ifndef FZ_FAIL
#define FZ_FAIL(what)                                                                              \
    (fprintf(stderr, "fuzz invariant broken at %s:%d: %s\n", __FILE__, __LINE__, what), abort())
#endif
#define FZ_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond))                                                                               \
            FZ_FAIL(#cond);                                                                        \
    } while (0)

/* The input as a NUL-terminated string (parsers of C strings stop at an embedded NUL, which
 * is what they would do with real input too). Caller frees; NULL only when out of memory. */
static inline char *fz_cstr(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s)
        return NULL;
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* The input as JSON the way the servers read request bodies (any value at top level). New
 * reference or NULL when it is not JSON. */
static inline json_t *fz_json(const uint8_t *data, size_t size) {
    return json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
}

/* A deterministic pseudo-random stream derived from the input, for choices (chunk sizes) that
 * must change when the input mutates and be reproducible from the input alone. */
typedef struct fz_rng {
    uint64_t s;
} fz_rng;

static inline fz_rng fz_rng_from(const uint8_t *data, size_t size) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ULL;
    fz_rng r = {h | 1};
    return r;
}

static inline uint32_t fz_rng_next(fz_rng *r) {
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return (uint32_t)(r->s >> 32);
}

/* Writes the input to a fresh temporary file for APIs that take a path; returns the path
 * (caller unlinks and frees) or NULL. dir names the directory (created by the caller). */
static inline char *fz_temp_file(const char *dir, const char *suffix, const uint8_t *data,
                                 size_t size) {
    size_t n = strlen(dir) + strlen(suffix) + 16;
    char *path = malloc(n);
    if (!path)
        return NULL;
    snprintf(path, n, "%s/fzXXXXXX%s", dir, suffix);
    int fd = mkstemps(path, (int)strlen(suffix));
    if (fd < 0) {
        free(path);
        return NULL;
    }
    FILE *f = fdopen(fd, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size)) {
        if (f)
            fclose(f);
        unlink(path);
        free(path);
        return NULL;
    }
    fclose(f);
    return path;
}

/* The repository root: $REPO_ROOT (tests/run.sh and hack/fuzz.sh set it), else ".". */
static inline const char *fz_repo_root(void) {
    const char *r = getenv("REPO_ROOT");
    return r && *r ? r : ".";
}

#endif
