/* Unit tests for lib/yamljson.c and lib/jsonutil.c. */
#include "harness.h"
#include "lib/jsonutil.h"
#include "lib/yamljson.h"

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

int main(void) {
    RUN(test_scalars_follow_core_schema);
    RUN(test_nested_and_sequences);
    RUN(test_anchors_and_aliases);
    RUN(test_multi_document);
    RUN(test_syntax_error_names_line);
    RUN(test_unknown_key_is_named);
    return TEST_SUMMARY();
}
