/* Unit tests for lib/yamljson.c and lib/jsonutil.c. */
#include <stdlib.h>
#include <time.h>

#include "harness.h"
#include "lib/jsonutil.h"
#include "lib/yamljson.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* `levels` flow sequences inside each other: "[[[...]]]". Caller frees. */
static char *nested_flow(int levels) {
    char *s = malloc(2 * (size_t)levels + 2);
    memset(s, '[', (size_t)levels);
    memset(s + levels, ']', (size_t)levels);
    s[2 * levels] = '\n';
    s[2 * levels + 1] = '\0';
    return s;
}

/* `levels` block mappings inside each other, one per line: "k:\n k:\n  k:...". */
static char *nested_block(int levels) {
    size_t cap = (size_t)levels * ((size_t)levels + 4) + 16, n = 0;
    char *s = malloc(cap);
    for (int i = 0; i < levels; i++) {
        memset(s + n, ' ', (size_t)i);
        n += (size_t)i;
        n += (size_t)snprintf(s + n, cap - n, "k:\n");
    }
    memset(s + n, ' ', (size_t)levels);
    n += (size_t)levels;
    snprintf(s + n, cap - n, "v\n");
    return s;
}

static json_t *parse(const char *s, tm_err *err) {
    return tm_yaml_parse(s, strlen(s), "test.yaml", err);
}

static void test_scalars_follow_core_schema(void) {
    tm_err err = {0};
    json_t *v = parse("a: 1\nb: 2.5\nc: true\nd: ~\ne: '7'\nf: hello\ng: -3\nh: 0x10\n", &err);
    CHECK(v != NULL);
    CHECK_INT(tm_json_int(v, "a", -1), 1);
    CHECK(json_is_real(json_object_get(v, "b")));
    CHECK_NEAR(tm_json_num(v, "b", 0), 2.5, 1e-12);
    CHECK(tm_json_bool(v, "c", false));
    CHECK(json_is_null(json_object_get(v, "d")));
    CHECK_STR(tm_json_str(v, "e", NULL), "7");
    CHECK_STR(tm_json_str(v, "f", NULL), "hello");
    CHECK_INT(tm_json_int(v, "g", 0), -3);
    CHECK_INT(tm_json_int(v, "h", 0), 16);
    json_decref(v);
}

static void test_nested_and_sequences(void) {
    tm_err err = {0};
    json_t *v = parse("nodes:\n  - name: n1\n    labels: {tier: fast}\n  - name: n2\n", &err);
    CHECK(v != NULL);
    json_t *nodes = json_object_get(v, "nodes");
    CHECK_INT(json_array_size(nodes), 2);
    CHECK_STR(tm_json_str(json_array_get(nodes, 0), "labels.tier", NULL), "fast");
    json_decref(v);
}

static void test_anchors_and_aliases(void) {
    tm_err err = {0};
    json_t *v = parse("base: &b {cpu: 4}\ncopy: *b\n", &err);
    CHECK(v != NULL);
    CHECK_INT(tm_json_int(v, "copy.cpu", 0), 4);
    json_decref(v);
}

static void test_multi_document(void) {
    tm_err err = {0};
    const char *s = "a: 1\n---\n---\nb: 2\n";
    json_t *v = tm_yaml_parse_all(s, strlen(s), "m.yaml", &err);
    CHECK(v != NULL);
    CHECK_INT(json_array_size(v), 2);
    json_decref(v);
}

static void test_syntax_error_names_line(void) {
    tm_err err = {0};
    json_t *v = parse("a: 1\nb: [1, 2\nc: 3\n", &err);
    CHECK(v == NULL);
    CHECKF(strstr(err.msg, "test.yaml:") != NULL, "message: %s", err.msg);
}

static void test_unknown_key_is_named(void) {
    tm_err err = {0};
    json_t *v = parse("count: 1\ncores: 2\nspeed: 3\n", &err);
    static const char *const allowed[] = {"count", "cores", NULL};
    CHECK(tm_json_check_keys(v, allowed, "cluster.yaml: nodes[0]", &err) == -1);
    CHECKF(strstr(err.msg, "'speed'") != NULL, "message: %s", err.msg);
    json_decref(v);
}

/* Issue 13 defect 8: 50,000 nested sequences (100 KB) overflowed the stack (SIGSEGV). Now an
 * error naming the limit and the line, at once. */
static void test_deep_nesting_is_an_error_not_a_crash(void) {
    char *s = nested_flow(50000);
    CHECK_INT(strlen(s), 100001);
    tm_err err = {0};
    double t0 = now_s();
    json_t *v = tm_yaml_parse(s, strlen(s), "deep.yaml", &err);
    double took = now_s() - t0;
    CHECK(v == NULL);
    CHECK_STR(err.msg, "deep.yaml: YAML nesting deeper than 256 levels at line 1");
    CHECKF(took < 1.0, "took %.3f s", took);
    printf("    50,000 levels (100 KB): refused in %.4f s\n", took);
    tm_err_clear(&err);
    CHECK(tm_yaml_parse_all(s, strlen(s), "deep.yaml", &err) == NULL);
    CHECK(strstr(err.msg, "deeper than 256 levels") != NULL);
    json_decref(v);
    free(s);
}

/* The limit is exactly 256: 256 levels parse, 257 do not; block style names the line of the
 * collection that goes one level too deep. */
static void test_nesting_limit_is_256(void) {
    tm_err err = {0};
    char *s = nested_flow(256);
    json_t *v = tm_yaml_parse(s, strlen(s), "ok.yaml", &err);
    CHECKF(v != NULL, "%s", err.msg);
    json_decref(v);
    free(s);
    s = nested_flow(257);
    v = tm_yaml_parse(s, strlen(s), "deep.yaml", &err);
    CHECK(v == NULL);
    CHECK_STR(err.msg, "deep.yaml: YAML nesting deeper than 256 levels at line 1");
    free(s);

    s = nested_block(256); /* 256 mappings, the innermost holding a scalar */
    v = tm_yaml_parse(s, strlen(s), "ok.yaml", &err);
    CHECKF(v != NULL, "%s", err.msg);
    json_decref(v);
    free(s);
    s = nested_block(257); /* mapping 257 starts on line 257 (the 256th "k:" holds it) */
    v = tm_yaml_parse(s, strlen(s), "deep.yaml", &err);
    CHECK(v == NULL);
    CHECK_STR(err.msg, "deep.yaml: YAML nesting deeper than 256 levels at line 257");
    free(s);
}

/* An alias copies its anchor's whole tree: a 200-level anchor used 100 levels down would be
 * 300 levels deep, so it counts against the same limit. */
static void test_alias_cannot_exceed_the_nesting_limit(void) {
    char *inner = nested_flow(200);
    inner[strlen(inner) - 1] = '\0';
    size_t cap = strlen(inner) + 1024;
    char *s = malloc(cap);
    int n = snprintf(s, cap, "a: &deep %s\nb: ", inner);
    for (int i = 0; i < 100; i++)
        s[n++] = '[';
    n += snprintf(s + n, cap - (size_t)n, "*deep");
    for (int i = 0; i < 100; i++)
        s[n++] = ']';
    s[n++] = '\n';
    s[n] = '\0';
    tm_err err = {0};
    json_t *v = tm_yaml_parse(s, (size_t)n, "alias.yaml", &err);
    CHECK(v == NULL);
    CHECK_STR(err.msg, "alias.yaml: YAML nesting deeper than 256 levels at line 2 (alias *deep)");
    json_decref(v);
    free(s);
    free(inner);
}

/* Issue 13 defect 8: a "billion laughs" file (9 anchors of 9 copies each) took 11.7 s and 4.2
 * GB, then failed with an empty message. Now refused at the first alias over the limit. */
static void test_alias_bomb_is_refused_quickly(void) {
    char path[4096];
    const char *root = getenv("REPO_ROOT");
    snprintf(path, sizeof path, "%s/tests/fixtures/yaml/alias-bomb.yaml", root ? root : ".");
    tm_err err = {0};
    double t0 = now_s();
    json_t *v = tm_yaml_load_file(path, &err);
    double took = now_s() - t0;
    CHECK(v == NULL);
    CHECKF(strstr(err.msg, "alias-bomb.yaml:6: document contains excessive aliasing") != NULL,
           "message: %s", err.msg);
    CHECKF(strstr(err.msg, "99 %") != NULL, "message names the limit: %s", err.msg);
    CHECKF(took < 1.0, "took %.3f s", took);
    printf("    alias bomb: refused in %.4f s: %s\n", took, err.msg);
    json_decref(v);
}

/* Ordinary reuse stays allowed: one anchor copied 300 times (about 2,400 nodes, 87 % copies,
 * below the 99 % limit), and a small file that is almost all copies (under 1,000 nodes). */
static void test_ordinary_aliasing_is_allowed(void) {
    char *s = malloc(64 * 1024);
    int n = sprintf(s, "base: &b {cpu: 4, mem: 8, disk: fast}\nnodes:\n");
    for (int i = 0; i < 300; i++)
        n += sprintf(s + n, "  - {name: n%d, spec: *b}\n", i);
    tm_err err = {0};
    json_t *v = tm_yaml_parse(s, (size_t)n, "nodes.yaml", &err);
    CHECKF(v != NULL, "%s", err.msg);
    CHECK_INT(json_array_size(json_object_get(v, "nodes")), 300);
    CHECK_INT(tm_json_int(json_array_get(json_object_get(v, "nodes"), 299), "spec.cpu", 0), 4);
    json_decref(v);
    n = sprintf(s, "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9]\nb: [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n");
    v = tm_yaml_parse(s, (size_t)n, "small.yaml", &err);
    CHECKF(v != NULL, "%s", err.msg);
    json_decref(v);
    free(s);
}

/* Every way to fail fills the message (the alias bomb used to fail with an empty one). */
static void test_every_error_has_a_message(void) {
    static const char *const bad[] = {
        "a: *nowhere\n",   /* unknown alias */
        "? [1, 2]\n: v\n", /* non-scalar key */
        "a: [1, 2\n",      /* syntax error */
        "a: &x [*x]\n",    /* alias inside its own anchor */
        "\"\\ud800\"\n",   /* invalid escape */
        "--- a\n--- [\n",  /* error in a later document */
        "a: b: c\n",       /* mapping in a plain scalar */
        "\t- x\n",         /* tab indentation */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tm_err err = {0};
        json_t *v = tm_yaml_parse_all(bad[i], strlen(bad[i]), "bad.yaml", &err);
        CHECKF(v == NULL, "input %zu parsed", i);
        CHECKF(strncmp(err.msg, "bad.yaml:", 9) == 0, "input %zu: message '%s'", i, err.msg);
        json_decref(v);
    }
}

/* Plain scalars resolve by the YAML 1.2 core schema only: strtoll/strtod's extra syntax (hex
 * floats, a second 0x, blanks after the prefix) stays a string. */
static void test_numbers_follow_the_core_schema_exactly(void) {
    tm_err err = {0};
    json_t *v = parse("a: 0x1p3\nb: 0x0x10\nc: '0x10'\nd: 0o17\ne: 1.\nf: .5e1\ng: 1e999\n"
                      "h: 99999999999999999999\ni: 0x\nj: +7\nk: 1_000\nl: 0o8\n",
                      &err);
    CHECKF(v != NULL, "%s", err.msg);
    CHECK_STR(tm_json_str(v, "a", NULL), "0x1p3");
    CHECK_STR(tm_json_str(v, "b", NULL), "0x0x10");
    CHECK_STR(tm_json_str(v, "c", NULL), "0x10");
    CHECK_INT(tm_json_int(v, "d", 0), 15);
    CHECK(json_is_real(json_object_get(v, "e")));
    CHECK_NEAR(tm_json_num(v, "f", 0), 5.0, 1e-12);
    CHECK_STR(tm_json_str(v, "g", NULL), "1e999");
    CHECK(json_is_real(json_object_get(v, "h")));
    CHECK_STR(tm_json_str(v, "i", NULL), "0x");
    CHECK_INT(tm_json_int(v, "j", 0), 7);
    CHECK_STR(tm_json_str(v, "k", NULL), "1_000");
    CHECK_STR(tm_json_str(v, "l", NULL), "0o8");
    json_decref(v);
}

int main(void) {
    RUN(test_scalars_follow_core_schema);
    RUN(test_nested_and_sequences);
    RUN(test_anchors_and_aliases);
    RUN(test_multi_document);
    RUN(test_syntax_error_names_line);
    RUN(test_unknown_key_is_named);
    RUN(test_deep_nesting_is_an_error_not_a_crash);
    RUN(test_nesting_limit_is_256);
    RUN(test_alias_cannot_exceed_the_nesting_limit);
    RUN(test_alias_bomb_is_refused_quickly);
    RUN(test_ordinary_aliasing_is_allowed);
    RUN(test_every_error_has_a_message);
    RUN(test_numbers_follow_the_core_schema_exactly);
    return TEST_SUMMARY();
}
