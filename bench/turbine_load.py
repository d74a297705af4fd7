#!/usr/bin/env python3
"""turbine_load.py: WARP's background load (section 5.1) as kwok pods, for bench/turbine_kwok.sh.

The generator of sim/turbine.c (docs/planner.md, "The turbine example in the simulator"), in
compressed time: exponential inter-arrival at rate 1.30e-3/s, 1-4 nodes per job, walltime from
the two-component Gaussian mixture (means 12 and 60 minutes, sd 6 and 12, weights 0.55/0.45,
redrawn below 1 minute, capped at 60, rounded up to 5 minutes). One simulated minute lasts
--scale seconds. Every job is created once per pool (the same job, the same instant), one pod of
30 cores per node it asks for (a whole 36-core node, as the SLURM jobs of WARP's partition), run
by kwok for its walltime (tarema.io/duration) and declaring it (tarema.io/expected-duration), as
a batch job's requested walltime, so the planner's occupancy and the scheduler's backfill know
its end. Runs until --until simulated minutes or SIGTERM; prints one line per job.
"""
import argparse, json, math, random, signal, subprocess, sys, time

RATE = 1.30e-3  # arrivals per real second (WARP)


def jobs(seed):
    """(arrival minute, nodes, walltime minutes) forever, in arrival order."""
    rng = random.Random(seed)
    t = 0.0
    while True:
        t += rng.expovariate(RATE) / 60.0
        nodes = rng.randint(1, 4)
        while True:
            m = rng.gauss(12, 6) if rng.random() < 0.55 else rng.gauss(60, 12)
            if m >= 1:
                break
        m = min(m, 60)
        yield t, nodes, int(math.ceil(m / 5) * 5)


def pod(name, ns, pool_sel, sched, secs, job):
    k, v = pool_sel.split("=", 1)
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns,
                     "labels": {"tarema.io/turbine-load": "1", "turbine-job": job},
                     "annotations": {"tarema.io/duration": "%ds" % secs,
                                     "tarema.io/expected-duration": "%ds" % secs}},
        "spec": {"schedulerName": sched, "nodeSelector": {k: v}, "restartPolicy": "Never",
                 "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "job", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": {"cpu": "30", "memory": "8Gi"},
                                               "limits": {"cpu": "30", "memory": "8Gi"}}}]}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--scale", type=float, default=2.0, help="seconds per simulated minute")
    ap.add_argument("--until", type=float, default=240, help="simulated minutes")
    ap.add_argument("--pool", action="append", required=True,
                    help="NAMESPACE:SCHEDULER:k=v (nodes of the pool), once per pool")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    pools = [p.split(":", 2) for p in a.pool]
    t0 = time.monotonic()
    for i, (at, nodes, wall) in enumerate(jobs(a.seed)):
        if at > a.until:
            break
        delay = t0 + at * a.scale - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        secs = max(1, int(round(wall * a.scale)))
        items = [pod("bg%d-%d-%d" % (a.seed, i, k), ns, sel, sched, secs, "bg%d-%d" % (a.seed, i))
                 for ns, sched, sel in pools for k in range(nodes)]
        r = subprocess.run(["kubectl", "create", "-f", "-"], input=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": items}), text=True,
            capture_output=True)
        print("load: +%.1f min job %d: %d nodes, walltime %d min%s" % (
            at, i, nodes, wall, "" if r.returncode == 0 else " NOT CREATED: " + r.stderr.strip()),
            flush=True)


if __name__ == "__main__":
    main()
