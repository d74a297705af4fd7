/* submitted.h: what a request submitted, for plain pods (submit.h) and for a planner Workflow
 * (submit_workflow.h) alike: the label that marks its objects and where its pods stand. Below
 * both, so that neither includes the other. */
#ifndef TAREMA_DAM_SUBMITTED_H
#define TAREMA_DAM_SUBMITTED_H

#define DAM_REQUEST_LABEL "tarema.io/dam-request"

typedef enum {
    DAM_PODS_RUNNING,   /* some not finished yet */
    DAM_PODS_SUCCEEDED, /* every pod Succeeded */
    DAM_PODS_FAILED,    /* one Failed, or pods disappeared */
} dam_pods_state;

#endif
