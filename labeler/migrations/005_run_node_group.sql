-- 005: the node group of the node each run ran on (issue 16): the tarema.io/group label (or
-- "L<cpu>-<mem>-<io>") of `node` when the run was stored, NULL when the node or its group was
-- unknown then. The labeler publishes each process's runtime per group from it (TaskProfile
-- status.runtimeByGroup), which the adaptive policy reads. Runs stored before stay NULL.
ALTER TABLE task_runs ADD COLUMN node_group text;
