-- 001: the task-run store. One row per Nextflow task execution (attempt), identified by
-- (workflow, run_name, task_key, attempt) so re-ingesting a trace or replaying a weblog event
-- never duplicates a run. task_key is the task hash, or "id:<task_id>" when the source has no
-- hash column.
CREATE TABLE task_runs (
    id            bigserial PRIMARY KEY,
    workflow      text    NOT NULL,
    run_name      text    NOT NULL,
    task_key      text    NOT NULL,
    attempt       integer NOT NULL,
    process       text    NOT NULL,
    task_name     text,
    hash          text,
    task_id       bigint,
    status        text,
    exit_code     integer,
    node          text,
    cpus          integer,
    memory_bytes  bigint,
    cpu_pct       double precision,
    peak_rss      bigint,
    rchar         bigint,
    wchar         bigint,
    read_bytes    bigint,
    write_bytes   bigint,
    realtime_ms   bigint,
    submit_time   timestamptz,
    start_time    timestamptz,
    complete_time timestamptz,
    source        text        NOT NULL,
    ingested_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT task_runs_identity UNIQUE (workflow, run_name, task_key, attempt)
);
-- Labelling reads one workflow at a time; refreshing asks what changed since a time.
CREATE INDEX task_runs_workflow_process ON task_runs (workflow, process);
CREATE INDEX task_runs_ingested_at ON task_runs (ingested_at);
