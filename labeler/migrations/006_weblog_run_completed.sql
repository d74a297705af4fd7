-- 006: when a weblog run ended successfully (Nextflow's `completed` event with
-- metadata.workflow.success not false), NULL while it runs or when it failed. Only complete
-- runs feed each process's tail to the run's end (TaskProfile status.tailSeconds, issue 16): a
-- run still going has no end yet. Trace runs need no such mark: a trace file is ingested when
-- its run is over and holds the whole run.
ALTER TABLE weblog_runs ADD COLUMN completed_at timestamptz;
