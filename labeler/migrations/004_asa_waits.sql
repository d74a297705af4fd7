-- 004: learned queue waiting times (ASA, docs/asa.md). One row per job shape: namespace, node
-- group ('' when the pods ask for none), pods in the request (1, or a gang's members), cpu
-- (millicores) and memory (bytes) per pod. `state` is the shape's learner and record as
-- planner/waits.c writes it (version, the 53 alternatives, p, round losses, counters, hits,
-- over-predictions, observed waits); `estimate_s` repeats the estimate it gives so a person
-- can read the table with psql. A row the labeler cannot read is ignored with a warning and
-- replaced on the shape's next observation.
CREATE TABLE asa_waits (
    namespace    text NOT NULL,
    node_group   text NOT NULL DEFAULT '',
    pods         integer NOT NULL,
    cpu_milli    bigint NOT NULL,
    memory_bytes bigint NOT NULL,
    state        text NOT NULL,
    estimate_s   double precision NOT NULL,
    observations bigint NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, node_group, pods, cpu_milli, memory_bytes)
);

-- Which requests were already fed (a pod's uid, or a gang's namespace/name and bound time), so a
-- labeler that restarts and lists the cluster again counts no wait twice. Written in the same
-- transaction as the learner it updated; rows older than two days are pruned (the feed only
-- counts requests bound within the last day).
CREATE TABLE asa_observed (
    request_id  text PRIMARY KEY,
    observed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX asa_observed_at ON asa_observed (observed_at);
