/* input.h: the `tarema-dam rank` input documents (JOB.yaml and CLUSTERS.yaml, docs/dam.md) as
 * a dam_input and dam_job. The live collector will fill the same CLUSTERS structure.
 *
 * Pure: the caller loads the documents (tm_yaml_load_file) and passes them in. Every field is
 * checked for its type and unknown keys are refused; err names the field ("clusters[1].cores.
 * used: expected a number"). The request keeps references to both documents: strings in the
 * dam_* structs point into them. */
#ifndef TAREMA_DAM_INPUT_H
#define TAREMA_DAM_INPUT_H

#include <jansson.h>

#include "dam/rank.h"
#include "lib/error.h"

typedef struct dam_request dam_request;

/* Builds a request from the job and clusters documents. now_s is used when the clusters
 * document has no "now". NULL with err on any malformed field. Free with dam_request_free. */
dam_request *dam_request_new(json_t *job_doc, json_t *clusters_doc, double now_s, tm_err *err);
void dam_request_free(dam_request *r);

const dam_input *dam_request_input(const dam_request *r);
const dam_job *dam_request_job(const dam_request *r);

/* Overrides the document's "now" (tarema-dam --now). */
void dam_request_set_now(dam_request *r, double now_s);

/* "2026-11-23T21:00:00Z" (UTC, optional fractional seconds) or a number of seconds since the
 * epoch (JSON number or numeric string). 0 or -1 with err naming `field`. */
int dam_parse_time(const json_t *v, const char *field, double *out, tm_err *err);
/* "90", "90s", "15m", "2h", "1d" or a JSON number of seconds, >= 0. */
int dam_parse_duration(const json_t *v, const char *field, double *out, tm_err *err);

#endif
