/* labelvalue.h: names in Kubernetes label-value form, the key form every component compares
 * task names in (defined once: the labeler keys its TaskProfiles and sizing by it, the
 * scheduler its task table).
 *
 * Kubernetes label values are at most 63 characters of [A-Za-z0-9._-], starting and ending
 * alphanumeric. Nextflow fits names into that form before it labels a task pod (nf-k8s: cut to
 * 63 characters, every run of other characters becomes '_', non-alphanumerics trimmed from both
 * ends), so a DSL2 process "NFCORE_CHIPSEQ:CHIPSEQ:FASTQC" arrives as pod label
 * nextflow.io/processName=NFCORE_CHIPSEQ_CHIPSEQ_FASTQC while the labeler's TaskProfile keeps
 * the traced name. Pure: no allocation, no I/O. */
#ifndef TAREMA_LABELVALUE_H
#define TAREMA_LABELVALUE_H

#include <stddef.h>

#define TM_LABEL_VALUE_MAX 63

/* Writes the label-value form of in (NULL counts as "") to out (NUL-terminated) and returns its
 * length; idempotent: a name that already is a label value maps to itself. Non-ASCII bytes count
 * one each where Nextflow counts UTF-16 units: names that long and exotic may differ. */
size_t tm_label_value_sanitize(const char *in, char out[TM_LABEL_VALUE_MAX + 1]);

#endif
