/* selector_fuzz.c: fuzzes label selectors (lib/selector.h). Text input is the string syntax
 * of the labelSelector parameter: a parsed selector must print to a string that parses to the
 * same selector. JSON input (starting with '{') is a LabelSelector object and a node selector
 * term. Every selector is matched against a fixed label set. */
#include "fuzz/fuzz_util.h"
#include "lib/selector.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

static void selector_exercise(const tm_selector *sel) {
    json_t *labels = json_pack("{s:s,s:s,s:s,s:s}", "app", "web", "tarema.io/cpu", "3", "tier", "",
                               "example.com/zone", "-12");
    tm_selector_matches(sel, labels);
    tm_selector_matches(sel, NULL);
    json_decref(labels);
    tm_err err = {{0}, 0};
    char *str = tm_selector_string(sel);
    FZ_CHECK(str != NULL);
    if (!str)
        return;
    /* The string form is what goes to the API server: it must parse back to the same selector
     * (when it uses only operators the string syntax has). */
    tm_selector *again = tm_selector_parse(str, &err);
    if (!again) {
        fprintf(stderr, "selector printed as '%s' does not parse: %s\n", str, err.msg);
        FZ_FAIL("tm_selector_string output does not parse");
    } else {
        char *str2 = tm_selector_string(again);
        if (!str2 || strcmp(str, str2) != 0) {
            fprintf(stderr, "'%s' reparsed prints as '%s'\n", str, str2 ? str2 : "(null)");
            FZ_FAIL("selector string round trip is not stable");
        }
        free(str2);
        tm_selector_free(again);
    }
    free(str);
}

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    tm_err err = {{0}, 0};
    if (size > 0 && data[0] == '{') {
        json_t *j = fz_json(data, size);
        if (!j)
            return 0;
        tm_selector *sel = tm_selector_from_label_selector(j, &err);
        if (sel)
            selector_exercise(sel);
        else
            FZ_CHECK(err.msg[0] != '\0');
        tm_selector_free(sel);
        sel = tm_selector_from_node_selector_term(j, &err);
        if (sel)
            selector_exercise(sel);
        else
            FZ_CHECK(err.msg[0] != '\0');
        tm_selector_free(sel);
        json_decref(j);
        return 0;
    }
    char *s = fz_cstr(data, size);
    if (!s)
        return 0;
    tm_selector *sel = tm_selector_parse(s, &err);
    if (sel)
        selector_exercise(sel);
    else
        FZ_CHECK(err.msg[0] != '\0');
    tm_selector_free(sel);
    free(s);
    return 0;
}
