-- 002: pipeline runs announced by weblog `started` events. process_completed events carry only
-- runId and runName, so the workflow key of their tasks is looked up here.
CREATE TABLE weblog_runs (
    run_id     text PRIMARY KEY,
    run_name   text NOT NULL,
    workflow   text NOT NULL,
    started_at timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now()
);
