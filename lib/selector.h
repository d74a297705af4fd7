/* selector.h: Kubernetes label selectors: parsed from the string syntax of the API's
 * labelSelector parameter (`a=b,c!=d,e in (x,y),f notin (z),g,!h`, also `==`, `k>5`, `k<5`),
 * or built from a LabelSelector object (matchLabels + matchExpressions) or from a node
 * selector term's matchExpressions (In, NotIn, Exists, DoesNotExist, Gt, Lt) for node
 * affinity, and matched against an object's labels. Semantics follow
 * k8s.io/apimachinery/pkg/labels: `!=` and `notin` also match when the key is absent; Gt/Lt
 * need the label to be an integer. Keys and values are validated like the API server does.
 * Pure: no I/O, no global state. */
#ifndef TAREMA_SELECTOR_H
#define TAREMA_SELECTOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

typedef enum {
    TM_SEL_EQ,
    TM_SEL_NEQ,
    TM_SEL_IN,
    TM_SEL_NOTIN,
    TM_SEL_EXISTS,
    TM_SEL_NOTEXISTS,
    TM_SEL_GT,
    TM_SEL_LT,
} tm_sel_op;

typedef struct tm_sel_req {
    char *key;
    tm_sel_op op;
    char **values; /* EQ/NEQ/GT/LT: one; IN/NOTIN: one or more; EXISTS/NOTEXISTS: none */
    size_t nvalues;
} tm_sel_req;

/* All requirements must hold (AND). No requirements: matches everything. */
typedef struct tm_selector {
    tm_sel_req *reqs;
    size_t n;
} tm_selector;

/* Parses the string syntax. NULL or "" gives the empty selector. Caller frees with
 * tm_selector_free. NULL with err quoting the selector and saying what is wrong. */
tm_selector *tm_selector_parse(const char *s, tm_err *err);

/* From a metav1.LabelSelector object: {"matchLabels":{...},"matchExpressions":[{"key",
 * "operator":"In|NotIn|Exists|DoesNotExist","values":[...]}]}. NULL/json null: empty. */
tm_selector *tm_selector_from_label_selector(const json_t *ls, tm_err *err);

/* From a node selector term ({"matchExpressions":[...]}, operators also Gt and Lt). A term
 * with matchFields is refused: those match fields, not labels. */
tm_selector *tm_selector_from_node_selector_term(const json_t *term, tm_err *err);

/* Whether a labels object (may be NULL: no labels) satisfies every requirement. */
bool tm_selector_matches(const tm_selector *s, const json_t *labels);
/* The same over labels kept in another form: get(labels, key) returns the value of key, NULL
 * when absent. */
bool tm_selector_matches_get(const tm_selector *s,
                             const char *(*get)(const void *labels, const char *key),
                             const void *labels);

/* The string form (requirements in order, values sorted as given); caller frees. */
char *tm_selector_string(const tm_selector *s);

void tm_selector_free(tm_selector *s);

#endif
