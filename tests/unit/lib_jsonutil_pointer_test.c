/* lib_jsonutil_pointer_test.c: tm_json_pointer, the JSON Pointer token of an annotation or label
 * key in a JSON Patch path (RFC 6901). A key with a "/" written as is would address a child of
 * a key that does not exist, and the API server refuses the whole patch. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/jsonutil.h"

static void check(const char *prefix, const char *key, const char *want) {
    char *got = tm_json_pointer(prefix, key);
    CHECKF(got && strcmp(got, want) == 0, "(%s, %s): got %s, want %s", prefix, key,
           got ? got : "NULL", want);
    free(got);
}

static void test_escapes(void) {
    check("/metadata/annotations/", "tarema.io/asa-release-at",
          "/metadata/annotations/tarema.io~1asa-release-at");
    check("/metadata/labels/", "plain", "/metadata/labels/plain");
    /* "~" first as "~0", so that "~1" in a key is not read back as "/" */
    check("/a/", "x~1/y", "/a/x~01~1y");
    check("/a/", "~~//", "/a/~0~0~1~1");
    check("", "", "");
    check("/a/", "", "/a/");
}

int main(void) {
    RUN(test_escapes);
    return TEST_SUMMARY();
}
