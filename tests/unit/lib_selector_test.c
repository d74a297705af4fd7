/* Unit tests for lib/selector.c: the string syntax, LabelSelector objects, node selector
 * terms (Gt/Lt), matching semantics (absent keys), printing, and errors. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/selector.h"

static json_t *labels(const char *json) {
    return json_loads(json, 0, NULL);
}

static bool matches(const char *sel, const char *lbl) {
    tm_err err = {0};
    tm_selector *s = tm_selector_parse(sel, &err);
    if (!s) {
        printf("    parse '%s': %s\n", sel, err.msg);
        return false;
    }
    json_t *l = labels(lbl);
    bool m = tm_selector_matches(s, l);
    json_decref(l);
    tm_selector_free(s);
    return m;
}

static void test_full_example(void) {
    tm_err err = {0};
    tm_selector *s = tm_selector_parse("a=b,c!=d,e in (x,y),f notin (z),g,!h", &err);
    CHECKF(s != NULL, "%s", err.msg);
    if (!s)
        return;
    CHECK_INT(s->n, 6);
    CHECK_INT(s->reqs[0].op, TM_SEL_EQ);
    CHECK_INT(s->reqs[1].op, TM_SEL_NEQ);
    CHECK_INT(s->reqs[2].op, TM_SEL_IN);
    CHECK_INT(s->reqs[2].nvalues, 2);
    CHECK_INT(s->reqs[3].op, TM_SEL_NOTIN);
    CHECK_INT(s->reqs[4].op, TM_SEL_EXISTS);
    CHECK_INT(s->reqs[5].op, TM_SEL_NOTEXISTS);
    json_t *ok = labels("{\"a\":\"b\",\"c\":\"q\",\"e\":\"y\",\"f\":\"w\",\"g\":\"\"}");
    CHECK(tm_selector_matches(s, ok));
    json_object_set_new(ok, "h", json_string("1"));
    CHECK(!tm_selector_matches(s, ok));
    json_decref(ok);
    char *str = tm_selector_string(s);
    CHECK_STR(str, "a=b,c!=d,e in (x,y),f notin (z),g,!h");
    free(str);
    tm_selector_free(s);
}

static void test_operators_and_absent_keys(void) {
    CHECK(matches("a=b", "{\"a\":\"b\"}"));
    CHECK(matches("a==b", "{\"a\":\"b\"}"));
    CHECK(!matches("a=b", "{}"));
    CHECK(!matches("a=b", "{\"a\":\"c\"}"));
    CHECK(matches("a!=b", "{}")); /* absent key satisfies != and notin */
    CHECK(matches("a notin (b)", "{}"));
    CHECK(!matches("a in (b)", "{}"));
    CHECK(!matches("a!=b", "{\"a\":\"b\"}"));
    CHECK(matches("a", "{\"a\":\"\"}"));
    CHECK(!matches("a", "{}"));
    CHECK(matches("!a", "{}"));
    CHECK(matches("a=", "{\"a\":\"\"}")); /* an empty value is a value */
    CHECK(matches("", "{\"x\":\"y\"}"));
    CHECK(matches("  a = b ,  c in ( x , y )  ", "{\"a\":\"b\",\"c\":\"y\"}"));
    CHECK(matches("tarema.io/cpu in (3,4)", "{\"tarema.io/cpu\":\"4\"}"));
    CHECK(matches("n>3", "{\"n\":\"4\"}"));
    CHECK(!matches("n>3", "{\"n\":\"3\"}"));
    CHECK(matches("n<3", "{\"n\":\"-1\"}"));
    CHECK(!matches("n<3", "{\"n\":\"abc\"}"));
    CHECK(!matches("n<3", "{}"));
    tm_selector *none = tm_selector_parse(NULL, NULL);
    CHECK(none && none->n == 0 && tm_selector_matches(none, NULL));
    tm_selector_free(none);
    tm_selector *s = tm_selector_parse("a!=b", NULL);
    CHECK(tm_selector_matches(s, NULL)); /* an object without labels */
    tm_selector_free(s);
}

static void check_error(const char *sel, const char *want) {
    tm_err err = {0};
    tm_selector *s = tm_selector_parse(sel, &err);
    CHECKF(s == NULL, "'%s' parsed", sel);
    CHECKF(strstr(err.msg, want) != NULL, "'%s': %s", sel, err.msg);
    tm_selector_free(s);
}

static void test_parse_errors(void) {
    check_error("a in (x,y", "missing ')'");
    check_error("a in x", "expected '('");
    check_error("a=b,", "expected a label key");
    check_error("a b", "expected an operator");
    check_error("a=b c=d", "expected ',' or the end");
    check_error("-bad=1", "invalid label key '-bad'");
    check_error("a=-x", "invalid value '-x'");
    check_error("n>x", "need an integer");
    check_error("a!b", "expected '!='");
    check_error("Upper.Case/x=1", "invalid label key");
    check_error("a==(b)", "unexpected '('");
    char longv[100];
    memset(longv, 'v', 64);
    strcpy(longv + 64, "");
    char sel[120];
    snprintf(sel, sizeof sel, "a=%s", longv);
    check_error(sel, "invalid value");
}

/* Regression (fuzzing): values [""] printed as "a in ()", which did not parse back. Kubernetes
 * reads "in ()" as the set {""}: a label present with an empty value. */
static void test_in_empty_value_round_trips(void) {
    CHECK(matches("a in ()", "{\"a\":\"\"}"));
    CHECK(!matches("a in ()", "{\"a\":\"x\"}"));
    CHECK(!matches("a in ()", "{}"));
    CHECK(matches("a notin ()", "{\"a\":\"x\"}"));
    tm_err err = {0};
    json_t *ls = json_loads("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\","
                            "\"values\":[\"\"]}]}",
                            0, NULL);
    tm_selector *s = tm_selector_from_label_selector(ls, &err);
    CHECK(s != NULL);
    char *str = s ? tm_selector_string(s) : NULL;
    tm_selector *back = str ? tm_selector_parse(str, &err) : NULL;
    CHECKF(back != NULL, "'%s': %s", str ? str : "", err.msg);
    char *again = back ? tm_selector_string(back) : NULL;
    CHECK_STR(again, str);
    free(again);
    free(str);
    tm_selector_free(back);
    tm_selector_free(s);
    json_decref(ls);
}

static void test_label_selector_object(void) {
    tm_err err = {0};
    json_t *o = json_loads("{\"matchLabels\":{\"app\":\"web\"},\"matchExpressions\":["
                           "{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"a\",\"b\"]},"
                           "{\"key\":\"old\",\"operator\":\"DoesNotExist\"}]}",
                           0, NULL);
    tm_selector *s = tm_selector_from_label_selector(o, &err);
    CHECKF(s != NULL, "%s", err.msg);
    json_t *l = labels("{\"app\":\"web\",\"tier\":\"b\"}");
    CHECK(tm_selector_matches(s, l));
    json_object_set_new(l, "old", json_string("x"));
    CHECK(!tm_selector_matches(s, l));
    json_decref(l);
    tm_selector_free(s);
    json_decref(o);
    s = tm_selector_from_label_selector(NULL, &err); /* no selector: everything */
    CHECK(s && s->n == 0);
    tm_selector_free(s);
    o = json_loads("{\"matchExpressions\":[{\"key\":\"n\",\"operator\":\"Gt\",\"values\":"
                   "[\"1\"]}]}",
                   0, NULL);
    s = tm_selector_from_label_selector(o, &err); /* Gt is for node selectors only */
    CHECK(s == NULL);
    CHECKF(strstr(err.msg, "operator 'Gt'") != NULL, "%s", err.msg);
    json_decref(o);
    o = json_loads("{\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"In\"}]}", 0, NULL);
    s = tm_selector_from_label_selector(o, &err);
    CHECK(s == NULL);
    CHECKF(strstr(err.msg, "at least one value") != NULL, "%s", err.msg);
    json_decref(o);
}

static void test_node_selector_term(void) {
    tm_err err = {0};
    json_t *t = json_loads(
        "{\"matchExpressions\":[{\"key\":\"tarema.io/cpu\",\"operator\":\"Gt\",\"values\":"
        "[\"2\"]},{\"key\":\"kubernetes.io/hostname\",\"operator\":\"NotIn\",\"values\":"
        "[\"e2-1\"]},{\"key\":\"type\",\"operator\":\"Exists\"}]}",
        0, NULL);
    tm_selector *s = tm_selector_from_node_selector_term(t, &err);
    CHECKF(s != NULL, "%s", err.msg);
    json_t *n = labels("{\"tarema.io/cpu\":\"3\",\"kubernetes.io/hostname\":\"c2-1\","
                       "\"type\":\"kwok\"}");
    CHECK(tm_selector_matches(s, n));
    json_object_set_new(n, "tarema.io/cpu", json_string("2"));
    CHECK(!tm_selector_matches(s, n));
    json_decref(n);
    char *str = tm_selector_string(s);
    CHECK_STR(str, "tarema.io/cpu>2,kubernetes.io/hostname notin (e2-1),type");
    free(str);
    tm_selector_free(s);
    json_decref(t);
    t = json_loads("{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
                   "\"values\":[\"x\"]}]}",
                   0, NULL);
    CHECK(tm_selector_from_node_selector_term(t, &err) == NULL);
    CHECKF(strstr(err.msg, "matchFields") != NULL, "%s", err.msg);
    json_decref(t);
    t = json_loads("{\"matchExpressions\":[{\"key\":\"n\",\"operator\":\"Lt\",\"values\":"
                   "[\"1\",\"2\"]}]}",
                   0, NULL);
    CHECK(tm_selector_from_node_selector_term(t, &err) == NULL);
    CHECKF(strstr(err.msg, "exactly one value") != NULL, "%s", err.msg);
    json_decref(t);
}

int main(void) {
    RUN(test_full_example);
    RUN(test_operators_and_absent_keys);
    RUN(test_parse_errors);
    RUN(test_in_empty_value_round_trips);
    RUN(test_label_selector_object);
    RUN(test_node_selector_term);
    return TEST_SUMMARY();
}
