/* report.h: a ranking as JSON (tarema-dam rank --json, later the REST API's answer) and as the
 * text table people read. Pure: builds values and strings, prints nothing itself. */
#ifndef TAREMA_DAM_REPORT_H
#define TAREMA_DAM_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "dam/rank.h"

/* {"job", "now", "weights", "chosen", "ranking": [...], "excluded": [...]}; docs/dam.md. New
 * reference. */
json_t *dam_ranking_json(const dam_input *in, const dam_job *job, const dam_ranking *rk);

/* The table: one row per ranked cluster with every score, then the excluded with reasons. */
void dam_ranking_print(FILE *f, const dam_input *in, const dam_job *job, const dam_ranking *rk);

#endif
