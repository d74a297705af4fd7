#!/usr/bin/env python3
"""hack/asa-compare.py: issue 18, Big Job, per-stage (on-completion), ASA's pro-active
submission and the planner's reservations, on the kwok cluster under load (docs/asa.md, "On the
kwok cluster").

The same workflow runs through `tarema-planner run` and tarema-scheduler, once per mode (bigjob,
reserve, proactive, on-completion) and per seed. --shape chain (default): STEPS steps of 1 pod x
1 core x STEP_S s. --shape montage|blast|statistics: the paper's shapes (9, 2, 4 stages) as
`tarema-sim asa --scenario tables` builds them at 112 cores, scaled down to a peak of --peak
1-core pods (sequential stages a quarter of it) and about --length s of summed run time. Mode
bigjob runs one step, one gang of the peak's pods for the stages' summed run time, created at
submission and held to the end (the paper's Big Job). Meanwhile a stream of background pods (1
core, their run time declared as tarema.io/expected-duration so that the planner and the
reservations know when they end; Poisson arrivals at --rate per second, uniform durations in
--bg-min..--bg-max seconds; the same stream for every mode of a seed) loads the test's nodes.
tarema-labeler --waits learns the queue waits of every pod (background included) into
PostgreSQL, and the planner's proactive steps use what it learned (ASA learns from concurrent
workloads). Per run it reports the makespan (Workflow created -> last step ended), the steps'
queue waits (a step's last pod bound - the moment it could start: its predecessors' end, or
the Workflow's creation), the core-seconds held (every step pod's core from binding to its
step's end, plus a Reservation's cores from Active to its step's start), of which idle (bound
and not running, a Reservation before its step), and the background pods' mean wait, with
progress on stderr, a JSON summary, a Markdown table (stderr) and an SVG. It also compares
the two estimators of a pending pod's start against when the pod was bound (every pod of the
run, background included): tarema-scheduler's backfill (tarema.io/expected-start, on the pods
it held capacity for) and the ASA learner's (tarema.io/predicted-start, on every pending pod):
the median and p90 of the absolute error, per run and over all (issue 32).

Needs the cluster and PostgreSQL of hack/cluster.sh and hack/postgres.sh (their env evaluated:
kubectl in PATH, DATABASE_URL) and the built binaries (--bin, default ./bin). Own namespace and
nodes, removed at the end. Bounded: warm-up + at most --timeout s per run; a shape at the
defaults with --warmup 20 (2 seeds x 4 modes) takes about 15 minutes.

  python3 hack/asa-compare.py --shape montage --seeds 1,2 --warmup 20 --json out.json \
      --svg docs/img/asa-kwok-montage.svg

--table2: the paper's Table 2 (hit and miss ratios of ASA's estimates) on kwok. Per seed, for
--duration s, proactive workflows (chains of --steps x 1 pod x --step-s) are submitted back to
back, --concurrent at a time, while a closed-loop background keeps a set number of its pods
(the steps' shape: 1 core, --mem) waiting in the queue, changed in phases (--queue
"T:N,..."): a queue whose true wait steps up and down like the paper's Figure 5. Every step
after a workflow's first is one prediction: the estimate it was released with
(estimateSeconds) against the real wait of a request of its shape submitted when it joined the
queue (the mean created -> bound wait of the background pods created within --window s of its
releasedAt). hit: the estimate is the alternative closest to that wait (definition (3), as
`tarema-sim asa --scenario tables` counts it, sim/asa_tables.c); miss: the estimate is above it
(Table 2's miss, an over-prediction). The learner's estimate for the shape is sampled every 5 s
(`tarema-planner waits --json`), with its own record (hit and miss over every wait it scored).
--backoff-ms sets tarema-scheduler's backoff: with the default, a pod that arrives while the
older ones sit out their backoff takes the next freed core, and the waits are bimodal
(docs/asa.md, "Table 2 on kwok").

  python3 hack/asa-compare.py --table2 --seeds 1,2 --json t2.json --svg docs/img/asa-kwok-table2.svg
"""
import argparse
import datetime
import json
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

MODES = ["bigjob", "reserve", "proactive", "on-completion"]

# The paper's workflow shapes as the simulator's tables scenario builds them (sim/asa_tables.c)
# at its 112-core size (4 nodes of 28): a parallel stage runs amount / 112 + 30 s on the peak,
# a sequential one `amount` seconds on one node (a quarter of the peak). (parallel, amount).
SHAPES = {
    "montage": [(1, 8000), (1, 6000), (0, 40), (0, 30), (1, 10000), (0, 25), (0, 25), (0, 30),
                (0, 30)],
    "blast": [(1, 72000), (0, 60)],
    "statistics": [(0, 600), (1, 70000), (0, 500), (1, 45000)],
}
SIM_PEAK, SIM_NODE, SIM_PAR_OVERHEAD = 112, 28, 30.0


def stages(a):
    """[(pods, seconds)] of the workflow: the shape scaled down, the peak to --peak pods of 1
    core (a sequential stage to peak / 4, at least 1) and the run time to about --length s
    (each stage at least 3 s: the planner ticks every second). chain: --steps x 1 pod x
    --step-s."""
    if a.shape == "chain":
        return [(1, a.step_s)] * a.steps
    sim = [(d[1] / SIM_PEAK + SIM_PAR_OVERHEAD) if d[0] else d[1] for d in SHAPES[a.shape]]
    k = a.length / sum(sim)
    seq = max(1, a.peak * SIM_NODE // SIM_PEAK)
    return [(a.peak if d[0] else seq, max(3, round(t * k))) for d, t in zip(SHAPES[a.shape], sim)]


def units_bytes(q):
    """A memory quantity (512Mi, 1Gi, 1000000) in bytes."""
    for suf, mul in (("Ki", 1 << 10), ("Mi", 1 << 20), ("Gi", 1 << 30), ("k", 1000), ("M", 10**6),
                     ("G", 10**9)):
        if q.endswith(suf):
            return int(float(q[:-len(suf)]) * mul)
    return int(q)


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def kubectl(*args, inp=None, check=True):
    r = subprocess.run(["kubectl", *args], input=inp, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def ts(v):
    """RFC 3339 (seconds) -> epoch seconds, None when absent."""
    if not v:
        return None
    return datetime.datetime.strptime(v[:19], "%Y-%m-%dT%H:%M:%S").replace(
        tzinfo=datetime.timezone.utc).timestamp()


class Cluster:
    """The test's namespace, nodes, CRDs and the long-running processes."""

    def __init__(self, a):
        self.a = a
        self.id = f"{os.getpid()}"
        self.ns = f"asa-cmp-{self.id}"
        self.sched = f"asa-cmp-{self.id}"
        self.sel = f"asa-cmp={self.id}"
        self.work = tempfile.mkdtemp(prefix="asa-cmp-")
        self.procs = []

    def start(self, name, argv):
        f = open(os.path.join(self.work, f"{name}.log"), "a")
        p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT)
        self.procs.append(p)
        return p

    def stop(self, p):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        if p in self.procs:
            self.procs.remove(p)

    def up(self):
        a = self.a
        for f in ["tarema.io_workflows.yaml", "scheduling.x-k8s.io_podgroups.yaml",
                  "tarema.io_reservations.yaml"]:
            kubectl("apply", "-f", os.path.join(a.repo, "charts/tarema/crds", f))
        kubectl("wait", "--for", "condition=established", "--timeout=30s",
                "crd/workflows.tarema.io", "crd/podgroups.scheduling.x-k8s.io",
                "crd/reservations.tarema.io")
        kubectl("create", "namespace", self.ns)
        nodes = os.path.join(self.work, "nodes.yaml")
        with open(nodes, "w") as f:
            f.write(f"nodes:\n  - {{prefix: ac{self.id}, count: {a.nodes}, cpu: {a.cpu}, "
                    f"memory: 64Gi, pods: 110, labels: {{asa-cmp: \"{self.id}\"}}}}\n")
        subprocess.run(["bash", os.path.join(a.repo, "hack/cluster.sh"), "nodes", nodes],
                       check=True, capture_output=True)
        # the learned waits' schema (tarema-planner waits applies the migrations)
        subprocess.run([os.path.join(a.bin, "tarema-planner"), "waits", "--db",
                        os.environ["DATABASE_URL"]], capture_output=True)
        cfg = os.path.join(self.work, "sched.yaml")
        with open(cfg, "w") as f:  # short backoffs: the queue order decides who goes next
            f.write(f"podInitialBackoffMs: {a.backoff_ms[0]}\npodMaxBackoffMs: {a.backoff_ms[1]}\n")
            if a.reserve_depth:  # docs/backfill.md: 1 (EASY) when not given
                f.write(f"backfill:\n  reserveDepth: \"{a.reserve_depth}\"\n")
        self.start("scheduler", [os.path.join(a.bin, "tarema-scheduler"), "--config", cfg,
                                 "--scheduler-name", self.sched, "--namespaces", self.ns,
                                 "--port", "0", "--log-level", "info"])
        self.start("labeler", [os.path.join(a.bin, "tarema-labeler"), "serve", "--bind",
                               "127.0.0.1", "--port", "0", "--spool",
                               os.path.join(self.work, "spool"), "--no-publish", "--waits"])
        time.sleep(3)

    def planner(self, mode):
        a = self.a
        return self.start(f"planner-{mode}", [
            os.path.join(a.bin, "tarema-planner"), "run", "--namespace", self.ns, "--slot", "1s",
            "--tick", "1s", "--time-limit", "2s", "--scheduler-name", self.sched,
            "--node-selector", self.sel, "--lease-namespace", self.ns, "--identity",
            f"asa-cmp-{mode}-{time.time_ns()}", "--require-admission",
            "true" if mode == "reserve" else "false", "--db", os.environ["DATABASE_URL"],
            *shlex.split(a.planner_args)])

    def down(self):
        for p in list(self.procs):
            self.stop(p)
        kubectl("delete", "namespace", self.ns, "--wait=false", check=False)
        out = kubectl("get", "nodes", "-o", "name", check=False)
        names = [n for n in out.split() if n.startswith(f"node/ac{self.id}-")]
        if names:
            kubectl("delete", *names, "--wait=false", check=False)
        subprocess.run(["psql", os.environ.get("DATABASE_URL", ""), "-qAtc",
                        f"DELETE FROM asa_waits WHERE namespace = '{self.ns}'"],
                       capture_output=True)
        if not self.a.keep:
            shutil.rmtree(self.work, ignore_errors=True)


def background(c, seed, total_s, stop, created):
    """Creates the background pods of this seed (the same stream for every mode)."""
    a = c.a
    rng = random.Random(seed)
    t0 = time.time()
    t, i = 0.0, 0
    while not stop.is_set():
        t += rng.expovariate(a.rate)
        dur = rng.uniform(a.bg_min, a.bg_max)
        if t > total_s:
            break
        while time.time() - t0 < t:
            if stop.wait(min(0.2, t - (time.time() - t0))):
                return
        i += 1
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": f"bg-{seed}-{i}", "namespace": c.ns,
                            "labels": {"asa-cmp/background": "1"},
                            "annotations": {"tarema.io/duration": f"{dur:.0f}s",
                                            "tarema.io/expected-duration": f"{dur:.0f}s"}},
               "spec": {"schedulerName": c.sched, "nodeSelector": {"asa-cmp": c.id},
                        "containers": [{"name": "c", "image": "bg:1", "resources": {
                            "requests": {"cpu": "1", "memory": a.mem}}}]}}
        kubectl("create", "-f", "-", inp=json.dumps(pod), check=False)
        created.append(time.time())


def describe(cfg):
    """The workflow in words, from a config dict (vars of the arguments, or a JSON's)."""
    if cfg.get("shape", "chain") == "chain":
        return f"{cfg['steps']}-step chain"
    return f"{cfg['shape']} (peak {cfg['peak']} cores, ~{cfg['length']} s)"


def plan(a, mode):
    """The workflow's steps for a mode: Big Job is one step (one gang) of the peak's pods for
    the stages' summed run time, requested at submission and held to the end; the others run
    the stages as steps."""
    st = stages(a)
    if mode == "bigjob":
        return [(max(p for p, _ in st), sum(d for _, d in st))]
    return st


def workflow_yaml(a, mode, name):
    steps = []
    for k, (pods, dur) in enumerate(plan(a, mode)):
        s = {"name": f"s{k}", "mode": "on-completion" if mode == "bigjob" else mode,
             "pods": pods, "requests": {"cpu": 1, "memory": a.mem},
             "duration": f"{dur}s", "image": f"s{k}:1",
             "annotations": {"tarema.io/duration": f"{dur}s"}}
        if k:
            s["after"] = [f"s{k - 1}"]
        steps.append(s)
    return json.dumps({"apiVersion": "tarema.io/v1alpha1", "kind": "Workflow",
                       "metadata": {"name": name}, "spec": {"steps": steps}})


def one_run(c, seed, mode):
    """One mode under one seed's stream: the workflow after the warm-up; its figures."""
    a = c.a
    name = f"wf-{seed}-{mode}"
    nsteps = len(plan(a, mode))
    pl = c.planner(mode)
    stop = threading.Event()
    created = []
    bg = threading.Thread(target=background, args=(c, seed, a.warmup + a.timeout, stop, created),
                          daemon=True)
    bg.start()
    log(f"seed {seed} {mode}: warm-up {a.warmup} s of background load")
    time.sleep(a.warmup)
    kubectl("apply", "-n", c.ns, "-f", "-", inp=workflow_yaml(a, mode, name))
    t_start = time.time()
    resv_active = {}  # reservation name -> first seen Active (epoch s)
    wf = None
    while time.time() - t_start < a.timeout:
        time.sleep(1)
        try:
            wf = json.loads(kubectl("get", "workflow", "-n", c.ns, name, "-o", "json"))
            rs = json.loads(kubectl("get", "reservations.tarema.io", "-n", c.ns, "-o", "json"))
        except (RuntimeError, json.JSONDecodeError):
            continue
        for r in rs.get("items", []):
            if r.get("status", {}).get("phase") == "Active":
                resv_active.setdefault(r["metadata"]["name"], time.time())
        ph = wf.get("status", {}).get("phase")
        done = sum(1 for s in wf.get("status", {}).get("steps", []) if s.get("state") ==
                   "Succeeded")
        if int(time.time() - t_start) % 10 == 0:
            log(f"seed {seed} {mode}: {int(time.time() - t_start)} s, phase {ph}, "
                f"{done}/{nsteps} steps done, {len(created)} background pods created")
        if ph in ("Succeeded", "Failed"):
            break
    stop.set()
    bg.join()
    c.stop(pl)
    pods = json.loads(kubectl("get", "pods", "-n", c.ns, "-o", "json"))["items"]
    res = figures(a, wf, pods, resv_active, mode, seed)
    log(f"seed {seed} {mode}: makespan {res['makespan_s']} s, step waits {res['step_waits_s']}, "
        f"held {res['held_core_s']} core-s (idle {res['idle_core_h'] * 3600:.0f}), estimate {res['estimates_s']}, "
        f"background mean wait {res['bg_mean_wait_s']} s")
    for key in ("backfill", "asa"):
        q = abs_quantiles(res["start_error_s"][key])
        if q:
            log(f"seed {seed} {mode}: start estimate error ({key}): {q['n']} pods, |error| "
                f"median {q['median_s']} s, p90 {q['p90_s']} s")
    clean_slate(c)
    return res


def clean_slate(c):
    """Deletes the run's workflows, reservations and pods and waits (up to 60 s) for the pods
    to go, before the next run. The learned waits stay: ASA keeps learning."""
    kubectl("delete", "workflow", "-n", c.ns, "--all", "--wait=false", check=False)
    kubectl("delete", "reservations.tarema.io", "-n", c.ns, "--all", "--wait=false", check=False)
    kubectl("delete", "pods", "-n", c.ns, "--all", "--grace-period=0", "--force", check=False)
    for _ in range(60):
        if not kubectl("get", "pods", "-n", c.ns, "-o", "name", check=False).strip():
            break
        time.sleep(1)


def bound_at(p):
    for cnd in p.get("status", {}).get("conditions", []) or []:
        if cnd.get("type") == "PodScheduled" and cnd.get("status") == "True":
            return ts(cnd.get("lastTransitionTime"))
    return None


def figures(a, wf, pods, resv_active, mode, seed):
    st = wf.get("status", {}) if wf else {}
    created = ts(wf["metadata"]["creationTimestamp"]) if wf else None
    steps = {s["name"]: s for s in st.get("steps", [])}
    shape = plan(a, mode)
    n = len(shape)
    by_step = {}
    for p in pods:
        lab = p["metadata"].get("labels", {})
        if lab.get("asa-cmp/background"):
            continue
        for k in range(n):
            if p["metadata"]["name"].startswith(f"{wf['metadata']['name']}-s{k}-"):
                by_step.setdefault(f"s{k}", []).append(p)
    waits, idle_s, held_s, ends = [], 0.0, 0.0, []
    for k in range(n):
        s = steps.get(f"s{k}", {})
        ready = created if k == 0 else ts(steps.get(f"s{k - 1}", {}).get("actualEnd"))
        ps = by_step.get(f"s{k}", [])
        b = [bound_at(p) for p in ps]
        if ready is not None and ps and all(x is not None for x in b):
            waits.append(max(0.0, max(b) - ready))
        end = ts(s.get("actualEnd"))
        for p, x in zip(ps, b):
            started = ts(p.get("status", {}).get("startTime"))
            if x is not None and started is not None:
                idle_s += max(0.0, started - x)  # bound, not running: 1 core each
            if x is not None and end is not None:
                held_s += max(0.0, end - x)  # its core allocated from binding to the step's end
        start = ts(s.get("actualStart"))
        if end is not None:
            ends.append(end)
        for rname, at in resv_active.items():  # a Reservation held the cores before the step ran
            if rname.endswith(f"-s{k}") and start is not None:
                idle_s += max(0.0, start - at) * shape[k][0]
                held_s += max(0.0, start - at) * shape[k][0]
    bgw = []
    for p in pods:
        if p["metadata"].get("labels", {}).get("asa-cmp/background"):
            c0, b0 = ts(p["metadata"]["creationTimestamp"]), bound_at(p)
            if c0 is not None and b0 is not None:
                bgw.append(b0 - c0)
    # the two estimators of a pending pod's start, against when it was bound (issue 32):
    # tarema-scheduler's backfill plan (tarema.io/expected-start, last written; only the pods
    # it held capacity for) and the labeler's ASA learner (tarema.io/predicted-start, every
    # pending pod); signed errors in s, bound - estimate (positive: later than estimated)
    err = {"backfill": [], "asa": []}
    for p in pods:
        b0 = bound_at(p)
        ann = p["metadata"].get("annotations") or {}
        for key, k in (("backfill", "tarema.io/expected-start"), ("asa", "tarema.io/predicted-start")):
            e0 = ts(ann.get(k)) if ann.get(k) else None
            if b0 is not None and e0 is not None:
                err[key].append(round(b0 - e0, 1))
    ok = st.get("phase") == "Succeeded" and len(ends) == n
    return {"seed": seed, "mode": mode, "shape": a.shape, "peak": a.peak,
            "start_error_s": err,
            "phase": st.get("phase"),
            "makespan_s": round(max(ends) - created, 1) if ok and created else None,
            "step_waits_s": [round(w, 1) for w in waits],
            "sum_wait_s": round(sum(waits), 1) if len(waits) == n else None,
            "idle_core_h": idle_s / 3600.0,
            "held_core_h": round(held_s / 3600.0, 5),
            "held_core_s": round(held_s),
            "estimates_s": [steps.get(f"s{k}", {}).get("estimateSeconds") for k in range(n)],
            "estimate_sources": [steps.get(f"s{k}", {}).get("estimateSource") for k in range(n)],
            "bg_mean_wait_s": round(sum(bgw) / len(bgw), 1) if bgw else None,
            "bg_pods": len(bgw)}


def abs_quantiles(errs):
    """Median and p90 of the absolute errors (nearest rank), with their number; None if none."""
    v = sorted(abs(e) for e in errs)
    if not v:
        return None
    rank = lambda q: v[min(len(v) - 1, max(0, int(-(-q * len(v) // 1)) - 1))]
    return {"n": len(v), "median_s": rank(0.5), "p90_s": rank(0.9)}


def summarize(runs):
    out = {"start_error": {key: abs_quantiles([e for r in runs for e in
                                               r.get("start_error_s", {}).get(key, [])])
                           for key in ("backfill", "asa")}}
    for m in MODES:
        rs = [r for r in runs if r["mode"] == m and r["makespan_s"] is not None]
        unfinished = sum(1 for r in runs if r["mode"] == m and r["makespan_s"] is None)
        if not rs:
            out[m] = {"runs": 0, "unfinished": unfinished}
            continue
        mk = [r["makespan_s"] for r in rs]
        sw = [r["sum_wait_s"] for r in rs if r["sum_wait_s"] is not None]
        # after the first step: where the modes differ (the first step of proactive and
        # on-completion is released at submission alike; ASA's Table 2 counts these too)
        lw = [sum(r["step_waits_s"][1:]) for r in rs if r["sum_wait_s"] is not None]
        out[m] = {"runs": len(rs), "unfinished": unfinished, "makespan_mean_s": round(sum(mk) / len(mk), 1),
                  "makespan_min_s": min(mk), "makespan_max_s": max(mk),
                  "sum_wait_mean_s": round(sum(sw) / len(sw), 1) if sw else None,
                  "sum_wait_min_s": min(sw) if sw else None,
                  "sum_wait_max_s": max(sw) if sw else None,
                  "later_wait_mean_s": round(sum(lw) / len(lw), 1) if lw else None,
                  "later_wait_min_s": min(lw) if lw else None,
                  "later_wait_max_s": max(lw) if lw else None,
                  "idle_core_h_mean": round(sum(r["idle_core_h"] for r in rs) / len(rs), 4),
                  "held_core_h_mean": round(sum(r.get("held_core_h", 0) for r in rs) / len(rs),
                                            4),
                  "held_core_s_mean": round(sum(r.get("held_core_s", 0) for r in rs) / len(rs)),
                  "bg_mean_wait_s": round(sum(r["bg_mean_wait_s"] or 0 for r in rs) / len(rs),
                                          1)}
    return out


def table(summary, what):
    """The summary as Markdown rows, makespan and core-seconds also relative to Big Job's."""
    big = summary.get("bigjob", {})
    rows = []
    for m in MODES:
        s = summary.get(m, {})
        if not s.get("runs"):
            if s.get("unfinished"):
                rows.append(f"| {what} | {m} | 0 of {s['unfinished']} | | | | | |")
            continue
        rel = ""
        if big.get("runs") and m != "bigjob":
            rel = (f"{100 * (s['makespan_mean_s'] / big['makespan_mean_s'] - 1):+.0f} % / "
                   f"{100 * (s['held_core_s_mean'] / max(1, big['held_core_s_mean']) - 1):+.0f} %")
        rows.append(f"| {what} | {m} | {s['runs']} of {s['runs'] + s['unfinished']} | "
                    f"{s['makespan_mean_s']} "
                    f"({s['makespan_min_s']}-{s['makespan_max_s']}) | {s['sum_wait_mean_s']} "
                    f"({s['sum_wait_min_s']}-{s['sum_wait_max_s']}) | {s['held_core_s_mean']} | "
                    f"{rel} | {s['bg_mean_wait_s']} |")
    return "\n".join(rows)


def svg(summary, runs, path, title):
    """Two panels of bars (makespan, the steps' summed queue wait) per mode, seeds as dots."""
    W, H, pad = 960, 320, 50
    colors = {"bigjob": "#8172b2", "reserve": "#4c72b0", "proactive": "#55a868",
              "on-completion": "#c44e52"}
    modes = [m for m in MODES if summary.get(m, {}).get("runs")]
    panels = [("makespan_s", "makespan_mean_s", "makespan (s)"),
              ("sum_wait_s", "sum_wait_mean_s", "every step's queue wait, summed (s)"),
              ("held_core_s", "held_core_s_mean", "core-seconds held (allocated)")]
    for r in runs:
        if r.get("sum_wait_s") is not None:
            r.setdefault("later_wait_s", round(sum(r["step_waits_s"][1:]), 1))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="14">{title}</text>']
    pw = (W - (len(panels) + 1) * pad) / len(panels)
    for i, (rk, sk, label) in enumerate(panels):
        x0 = pad + i * (pw + pad)
        vals = [r[rk] for r in runs if r.get(rk) is not None] + [1]
        vmax = -(-max(vals) * 1.1 // 20) * 20  # rounded up to 20: ticks at multiples of 5
        ph = H - 2 * pad - 20
        y0 = H - pad
        out.append(f'<line x1="{x0}" y1="{y0}" x2="{x0 + pw}" y2="{y0}" stroke="black"/>')
        out.append(f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y0 - ph}" stroke="black"/>')
        out.append(f'<text x="{x0 + pw / 2}" y="{pad - 8}" text-anchor="middle">{label}</text>')
        for t in range(5):
            v = vmax * t / 4
            y = y0 - ph * t / 4
            out.append(f'<text x="{x0 - 4}" y="{y + 4}" text-anchor="end">{v:.0f}</text>')
        bw = pw / max(1, len(modes))
        for j, m in enumerate(modes):
            s = summary.get(m, {})
            bx = x0 + j * bw + bw * 0.2
            v = s.get(sk)
            if v is not None:
                h = ph * v / vmax
                out.append(f'<rect x="{bx:.1f}" y="{y0 - h:.1f}" width="{bw * 0.6:.1f}" '
                           f'height="{h:.1f}" fill="{colors[m]}" opacity="0.8"/>')
                out.append(f'<text x="{bx + bw * 0.3:.1f}" y="{y0 - h - 4:.1f}" '
                           f'text-anchor="middle">{v:.0f}</text>')
            for r in runs:
                if r["mode"] == m and r.get(rk) is not None:
                    y = y0 - ph * r[rk] / vmax
                    out.append(f'<circle cx="{bx + bw * 0.3:.1f}" cy="{y:.1f}" r="3" '
                               f'fill="black"/>')
            out.append(f'<text x="{bx + bw * 0.3:.1f}" y="{y0 + 16}" '
                       f'text-anchor="middle">{m}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


# ---- --table2: hit and miss ratios of the proactive steps' estimates (the paper's Table 2) ----

# The learner's 53 alternatives (labeler/asa.c ASA_ALTERNATIVES) and its closest-alternative rule
# (asa_closest: smallest distance, ties to the smaller one).
ALTERNATIVES = ([10 + 5 * i for i in range(17)] + [100 + 50 * i for i in range(17)] +
                [1000 * i for i in range(1, 10)] + [10000 * i for i in range(1, 10)] + [100000])


def closest(w):
    if w >= ALTERNATIVES[-1]:
        return ALTERNATIVES[-1]
    best = ALTERNATIVES[0]
    for a in ALTERNATIVES[1:]:
        if abs(a - w) < abs(best - w):
            best = a
    return best


def queue_target(schedule, t):
    """The number of background pods to keep waiting at t s: the last phase begun."""
    n = 0
    for at, q in schedule:
        if t >= at:
            n = q
    return n


def bg_closed(c, seed, schedule, total_s, stop):
    """Keeps queue_target(t) background pods unbound: when some bind, creates as many (1 core,
    --bg-min..--bg-max s, the same shape as the workflow's steps)."""
    a = c.a
    rng = random.Random(seed)
    t0, i = time.time(), 0
    while not stop.is_set() and time.time() - t0 < total_s:
        want = queue_target(schedule, time.time() - t0)
        got = subprocess.run(["kubectl", "get", "pods", "-n", c.ns, "-l", "asa-cmp/background=1",
                              "--field-selector", "spec.nodeName=", "-o", "name"],
                             capture_output=True, text=True)
        if got.returncode != 0:  # not known: create none
            stop.wait(1)
            continue
        items = []
        for _ in range(want - len(got.stdout.split())):
            i += 1
            dur = rng.uniform(a.bg_min, a.bg_max)
            items.append({"apiVersion": "v1", "kind": "Pod",
                          "metadata": {"name": f"bg-{seed}-{i}", "namespace": c.ns,
                                       "labels": {"asa-cmp/background": "1"},
                                       "annotations": {"tarema.io/duration": f"{dur:.0f}s",
                                                       "tarema.io/expected-duration":
                                                       f"{dur:.0f}s"}},
                          "spec": {"schedulerName": c.sched, "nodeSelector": {"asa-cmp": c.id},
                                   "containers": [{"name": "c", "image": "bg:1", "resources": {
                                       "requests": {"cpu": "1", "memory": a.mem}}}]}})
        if items:
            kubectl("create", "-f", "-", inp=json.dumps({"apiVersion": "v1", "kind": "List",
                                                         "items": items}), check=False)
        stop.wait(1)


def shape_of(a):
    return (1, 1000, a.mem_bytes)


def learner_poll(c, stop, timeline, t0):
    """Every 5 s: the learner's estimate and record for the steps' shape."""
    a = c.a
    while not stop.wait(5):
        r = subprocess.run([os.path.join(a.bin, "tarema-planner"), "waits", "--json",
                            "--namespace", c.ns, "--db", os.environ["DATABASE_URL"]],
                           capture_output=True, text=True)
        try:
            shapes = json.loads(r.stdout).get("shapes", [])
        except json.JSONDecodeError:
            continue
        for sh in shapes:
            if (sh["pods"], sh["cpu_milli"], sh["memory_bytes"]) == shape_of(a) and \
                    not sh["node_group"]:
                timeline.append({"t": round(time.time() - t0, 1), "estimate_s": sh["estimate_s"],
                                 "observations": sh["observations"], "scored": sh["scored"],
                                 "hit_ratio": sh["hit_ratio"], "miss_ratio": sh["miss_ratio"]})


def t2_workflow(a, name):
    steps = []
    for k in range(a.steps):
        s = {"name": f"s{k}", "mode": "proactive", "pods": 1,
             "requests": {"cpu": 1, "memory": a.mem}, "duration": f"{a.step_s}s",
             "image": f"s{k}:1", "annotations": {"tarema.io/duration": f"{a.step_s}s"}}
        if k:
            s["after"] = [f"s{k - 1}"]
        steps.append(s)
    return json.dumps({"apiVersion": "tarema.io/v1alpha1", "kind": "Workflow",
                       "metadata": {"name": name}, "spec": {"steps": steps}})


def t2_run(c, seed):
    """One seed: the background's phases for --duration s, workflows back to back; returns the
    predictions, the learner's timeline and the background's waits."""
    a = c.a
    schedule = [(float(x.split(":")[0]), int(x.split(":")[1])) for x in a.queue.split(",")]
    pl = c.planner(f"t2-{seed}")
    stop, pstop = threading.Event(), threading.Event()
    t0 = time.time()
    timeline = []
    bg = threading.Thread(target=bg_closed, args=(c, seed, schedule, a.duration, stop),
                          daemon=True)
    poll = threading.Thread(target=learner_poll, args=(c, pstop, timeline, t0), daemon=True)
    bg.start()
    poll.start()
    log(f"seed {seed}: {a.duration} s, background queue {schedule} (t s: pods kept waiting), "
        f"warm-up {a.warmup} s")
    time.sleep(a.warmup)
    k, names, last_log = 0, [], 0
    while True:
        el = time.time() - t0
        try:
            wfs = json.loads(kubectl("get", "workflows", "-n", c.ns, "-o", "json"))["items"]
        except (RuntimeError, json.JSONDecodeError):
            wfs = []
        running = [w for w in wfs if w.get("status", {}).get("phase") not in ("Succeeded",
                                                                               "Failed")]
        if el < a.duration and len(running) < a.concurrent:
            k += 1
            name = f"t2-{seed}-{k}"
            kubectl("apply", "-n", c.ns, "-f", "-", inp=t2_workflow(a, name))
            names.append(name)
        if el >= a.duration and (not running or el >= a.duration + a.timeout):
            break
        if el - last_log >= 30:
            last_log = el
            est = timeline[-1]["estimate_s"] if timeline else None
            log(f"seed {seed}: {el:.0f} s, {len(names)} workflows submitted, {len(running)} "
                f"running, queue target {queue_target(schedule, el)}, learned estimate {est}")
        time.sleep(2)
    stop.set()
    pstop.set()
    bg.join()
    poll.join()
    c.stop(pl)
    wfs = json.loads(kubectl("get", "workflows", "-n", c.ns, "-o", "json"))["items"]
    pods = json.loads(kubectl("get", "pods", "-n", c.ns, "-o", "json"))["items"]
    res = t2_figures(a, seed, t0, wfs, pods, timeline)
    clean_slate(c)
    return res


def t2_figures(a, seed, t0, wfs, pods, timeline):
    bg = []  # (created, wait) of the background pods, relative to t0
    for p in pods:
        if p["metadata"].get("labels", {}).get("asa-cmp/background"):
            c0, b0 = ts(p["metadata"]["creationTimestamp"]), bound_at(p)
            if c0 is not None and b0 is not None:
                bg.append((c0 - t0, b0 - c0))
    by_name = {p["metadata"]["name"]: p for p in pods}
    preds = []
    for w in wfs:
        name = w["metadata"]["name"]
        st = {s["name"]: s for s in w.get("status", {}).get("steps", [])}
        for k in range(1, a.steps):
            s, prev = st.get(f"s{k}", {}), st.get(f"s{k - 1}", {})
            pod = next((p for n, p in by_name.items() if n.startswith(f"{name}-s{k}-")), None)
            tu, tr = ts(s.get("releasedAt")), ts(s.get("orderReleasedAt"))
            pend, tb = ts(prev.get("actualEnd")), bound_at(pod) if pod else None
            est = s.get("estimateSeconds")
            if None in (tu, tb, pend, est):
                continue  # not run to its binding within the bounds
            near = [wt for c0, wt in bg if abs(c0 - (tu - t0)) <= a.window]
            real = sum(near) / len(near) if near else None
            learned = [x["estimate_s"] for x in timeline if x["t"] <= tu - t0]
            preds.append({
                "workflow": name, "step": f"s{k}", "joined_s": round(tu - t0, 1),
                "estimate_s": est, "estimate_source": s.get("estimateSource"),
                "learner_estimate_at_join_s": learned[-1] if learned else None,
                "real_wait_s": round(real, 1) if real is not None else None,
                "real_wait_n": len(near),
                "own_wait_s": round(tb - tu, 1),  # joined -> bound
                "perceived_wait_s": round(max(0.0, tb - pend), 1),  # predecessor's end -> bound
                "bound_at_release": tr is not None and tb - tr <= 2,
                "hit": real is not None and est == closest(real),
                "miss": real is not None and est > real})
    scored = [p for p in preds if p["real_wait_s"] is not None]
    n = len(scored)
    ests = sorted({p["estimate_s"] for p in preds})
    return {"seed": seed, "workflows": len(wfs),
            "finished": sum(1 for w in wfs if w.get("status", {}).get("phase") == "Succeeded"),
            "predictions": preds, "timeline": timeline,
            "background": [[round(c0, 1), round(wt, 1)] for c0, wt in sorted(bg)],
            "scored": n, "estimates_used_s": ests,
            "hit_ratio": round(sum(p["hit"] for p in scored) / n, 3) if n else None,
            "miss_ratio": round(sum(p["miss"] for p in scored) / n, 3) if n else None,
            "real_wait_mean_s": round(sum(p["real_wait_s"] for p in scored) / n, 1) if n else None,
            "estimate_mean_s": round(sum(p["estimate_s"] for p in scored) / n, 1) if n else None,
            "perceived_wait_mean_s": round(sum(p["perceived_wait_s"] for p in preds) /
                                           len(preds), 1) if preds else None,
            "learner": timeline[-1] if timeline else None}


def t2_table(runs):
    rows = ["| seed | workflows (finished) | predictions scored | estimates used (s) | real WT "
            "mean (s) | ASA WT mean (s) | PWT mean (s) | hit (closest) | miss (over) | paper's "
            "hit (1 - miss) | learner: waits seen, hit, miss |", "|" + "---|" * 11]
    for r in runs:
        ln = r["learner"] or {}
        pct = (lambda v: f"{100 * v:.0f} %" if v is not None else "-")
        rows.append(f"| {r['seed']} | {r['workflows']} ({r['finished']}) | {r['scored']} | "
                    f"{', '.join(str(e) for e in r['estimates_used_s'])} | "
                    f"{r['real_wait_mean_s']} | {r['estimate_mean_s']} | "
                    f"{r['perceived_wait_mean_s']} | {pct(r['hit_ratio'])} | "
                    f"{pct(r['miss_ratio'])} | "
                    f"{pct(1 - r['miss_ratio'] if r['miss_ratio'] is not None else None)} | "
                    f"{ln.get('observations')}, "
                    f"{pct(ln.get('hit_ratio'))}, {pct(ln.get('miss_ratio'))} |")
    return "\n".join(rows)


def t2_svg(runs, path, title):
    """Per seed a panel: the background's waits (grey dots, by creation time), the learner's
    estimate (line), each prediction's estimate (green: hit, red: miss, black: neither) at its
    joining time, and its real wait (open circle)."""
    W, ph, pad = 960, 220, 50
    H = pad + len(runs) * (ph + pad) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="12">', f'<rect width="{W}" height="{H}" '
           f'fill="white"/>', f'<text x="{W / 2}" y="18" text-anchor="middle" '
           f'font-size="14">{title}</text>']
    for j, r in enumerate(runs):
        x0, y0 = pad, pad + j * (ph + pad) + ph
        tmax = max([b[0] for b in r["background"]] + [x["t"] for x in r["timeline"]] + [60])
        vals = [b[1] for b in r["background"]] + [p["estimate_s"] for p in r["predictions"]]
        vmax = -(-max(vals + [10]) * 1.1 // 20) * 20
        X = (lambda t: x0 + (W - 2 * pad) * t / tmax)
        Y = (lambda v: y0 - ph * min(v, vmax) / vmax)
        out.append(f'<line x1="{x0}" y1="{y0}" x2="{W - pad}" y2="{y0}" stroke="black"/>')
        out.append(f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y0 - ph}" stroke="black"/>')
        out.append(f'<text x="{x0 + 4}" y="{y0 - ph - 6}">seed {r["seed"]}: hit '
                   f'{r["hit_ratio"]}, miss {r["miss_ratio"]} over {r["scored"]} predictions; '
                   f'wait (s) against time (s)</text>')
        for t in range(5):
            out.append(f'<text x="{x0 - 4}" y="{Y(vmax * t / 4) + 4:.1f}" text-anchor="end">'
                       f'{vmax * t / 4:.0f}</text>')
            out.append(f'<text x="{X(tmax * t / 4):.1f}" y="{y0 + 14}" text-anchor="middle">'
                       f'{tmax * t / 4:.0f}</text>')
        for c0, wt in r["background"]:
            out.append(f'<circle cx="{X(c0):.1f}" cy="{Y(wt):.1f}" r="1.8" fill="#aaaaaa"/>')
        if r["timeline"]:
            pts = " ".join(f'{X(x["t"]):.1f},{Y(x["estimate_s"]):.1f}' for x in r["timeline"])
            out.append(f'<polyline points="{pts}" fill="none" stroke="#4c72b0" '
                       f'stroke-width="2"/>')
        for p in r["predictions"]:
            col = "#55a868" if p["hit"] else "#c44e52" if p["miss"] else "black"
            out.append(f'<rect x="{X(p["joined_s"]) - 3:.1f}" y="{Y(p["estimate_s"]) - 3:.1f}" '
                       f'width="6" height="6" fill="{col}"/>')
            if p["real_wait_s"] is not None:
                out.append(f'<circle cx="{X(p["joined_s"]):.1f}" cy="{Y(p["real_wait_s"]):.1f}" '
                           f'r="4" fill="none" stroke="{col}"/>')
    out.append(f'<text x="{pad}" y="{H - 6}">grey: background waits; blue line: learned '
               f'estimate; squares: estimate a step was released with; circles: the real wait '
               f'when it joined (green hit, red miss)</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def t2_main(a):
    if a.from_json:  # the runs of earlier invocations, described by the first one's config
        runs = []
        for i, f in enumerate(a.from_json.split(",")):
            d = json.load(open(f))
            runs += d["runs"]
            if i == 0:
                for k in ("steps", "step_s", "queue", "backoff_ms"):
                    setattr(a, k, d["config"].get(k, getattr(a, k)))
    else:
        c = Cluster(a)
        runs = []

        def on_term(signum, frame):
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, on_term)
        try:
            c.up()
            log(f"table2: namespace {c.ns}, {a.nodes} nodes x {a.cpu} cores, {a.steps}-step "
                f"chains of 1 pod x {a.step_s} s, {a.concurrent} at a time; logs {c.work}")
            for seed in [int(x) for x in a.seeds.split(",")]:
                runs.append(t2_run(c, seed))
                r = runs[-1]
                log(f"seed {seed}: {r['scored']} predictions, hit {r['hit_ratio']}, miss "
                    f"{r['miss_ratio']}, estimates used {r['estimates_used_s']}")
        finally:
            c.down()
    n = sum(r["scored"] for r in runs)
    allp = [p for r in runs for p in r["predictions"] if p["real_wait_s"] is not None]
    summary = {"predictions": n,
               "hit_ratio": round(sum(p["hit"] for p in allp) / n, 3) if n else None,
               "miss_ratio": round(sum(p["miss"] for p in allp) / n, 3) if n else None}
    if a.json:
        with open(a.json, "w") as f:
            cfg = {k: v for k, v in vars(a).items() if k not in ("repo", "bin", "from_json")}
            json.dump({"config": cfg, "runs": runs, "summary": summary}, f, indent=1)
    if a.svg:
        t2_svg(runs, a.svg, f"ASA on kwok: {a.steps}-step proactive chains, background queue "
               f"{a.queue} (t s: pods waiting), scheduler backoff {a.backoff_ms[0]}-"
               f"{a.backoff_ms[1]} ms")
    print(json.dumps(summary, indent=1))
    print(t2_table(runs), file=sys.stderr)


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", default=here)
    ap.add_argument("--bin", default=os.path.join(here, "bin"))
    ap.add_argument("--seeds", default="1,2", help="comma-separated (default 1,2)")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--cpu", type=int, default=4, help="cores per node")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--step-s", type=int, default=20)
    ap.add_argument("--shape", default="chain", choices=["chain"] + list(SHAPES),
                    help="the workflow: a chain of --steps x 1 pod x --step-s (default), or "
                    "shaped like the paper's Montage (9 stages), BLAST (2), Statistics (4)")
    ap.add_argument("--peak", type=int, default=4, help="a shape's peak width in 1-core pods "
                    "(its sequential stages a quarter of it; default 4)")
    ap.add_argument("--length", type=int, default=60, help="a shape's summed stage run time "
                    "in seconds (default 60)")
    ap.add_argument("--rate", type=float, default=0.45, help="background pods per second")
    ap.add_argument("--bg-min", type=float, default=10)
    ap.add_argument("--bg-max", type=float, default=30)
    ap.add_argument("--mem", default="512Mi")
    ap.add_argument("--planner-args", default="", help="more `tarema-planner run` flags, e.g. "
                    "'--release-on-start false' (ASA's release point alone)")
    ap.add_argument("--reserve-depth", default="", help="tarema-scheduler's backfill."
                    "reserveDepth (0, N or all; default the scheduler's, 1)")
    ap.add_argument("--warmup", type=int, default=60)
    ap.add_argument("--timeout", type=int, default=240, help="per run, seconds")
    ap.add_argument("--json", help="write the runs and the summary here")
    ap.add_argument("--svg", help="write the figure here")
    ap.add_argument("--keep", action="store_true", help="keep the logs' directory")
    ap.add_argument("--from-json", help="no run: summarize (and plot) the runs of these "
                    "comma-separated --json files of earlier invocations")
    ap.add_argument("--table2", action="store_true", help="the paper's Table 2 on kwok: "
                    "hit and miss ratios of the proactive steps' estimates (see above)")
    ap.add_argument("--duration", type=int, default=480, help="--table2: seconds of "
                    "workflows per seed (default 480)")
    ap.add_argument("--queue", default="0:3,150:14,330:6", help="--table2: background pods "
                    "kept waiting from T s on, T:N,... (default 0:3,150:14,330:6)")
    ap.add_argument("--concurrent", type=int, default=2, help="--table2: workflows at a time")
    ap.add_argument("--window", type=float, default=5, help="--table2: the real wait of a "
                    "step is that of background pods created within this many s of its joining")
    ap.add_argument("--backoff-ms", default="200,1000", help="tarema-scheduler's initial and "
                    "maximum backoff of a pod that did not fit, ms (default 200,1000). A pod in "
                    "backoff is passed over by one that arrives meanwhile: shorter is nearer "
                    "first come, first served")
    a = ap.parse_args()
    a.mem_bytes = units_bytes(a.mem)
    a.backoff_ms = [int(x) for x in a.backoff_ms.split(",")]
    if a.table2:
        return t2_main(a)
    if a.from_json:
        runs, cfg = [], None
        for f in a.from_json.split(","):
            d = json.load(open(f))
            runs += d["runs"]
            cfg = d["config"]
        summary = summarize(runs)
        seeds = ",".join(str(s) for s in sorted({r["seed"] for r in runs}))
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"config": cfg, "runs": runs, "summary": summary}, f, indent=1)
        if a.svg:
            load = cfg["rate"] * (cfg["bg_min"] + cfg["bg_max"]) / 2 / (cfg["nodes"] * cfg["cpu"])
            svg(summary, runs, a.svg, f"{describe(cfg)} under background load "
                f"{load:.2f}, seeds {seeds}")
        print(json.dumps(summary, indent=1))
        print(table(summary, describe(cfg)), file=sys.stderr)
        print(start_error_rows(summary, describe(cfg)), file=sys.stderr)
        return
    if not shutil.which("kubectl") or not os.environ.get("DATABASE_URL"):
        sys.exit("asa-compare: kubectl in PATH and DATABASE_URL needed: eval "
                 "\"$(hack/cluster.sh env)\"; eval \"$(hack/postgres.sh env)\"")
    modes = a.modes.split(",")
    seeds = [int(s) for s in a.seeds.split(",")]
    c = Cluster(a)
    runs = []

    def on_term(signum, frame):
        raise KeyboardInterrupt  # so that the cluster's objects and processes go

    signal.signal(signal.SIGTERM, on_term)
    try:
        c.up()
        log(f"namespace {c.ns}, {a.nodes} nodes x {a.cpu} cores, background {a.rate}/s of "
            f"{a.bg_min:.0f}-{a.bg_max:.0f} s (load {a.rate * (a.bg_min + a.bg_max) / 2 / (a.nodes * a.cpu):.2f}), "
            f"workflow {describe(vars(a))}: {stages(a)} (pods, s), logs {c.work}")
        for i, seed in enumerate(seeds):
            order = modes[i % len(modes):] + modes[:i % len(modes)]  # no mode always first
            for m in order:
                runs.append(one_run(c, seed, m))
    finally:
        c.down()
    summary = summarize(runs)
    doc = {"config": {k: v for k, v in vars(a).items() if k not in ("repo", "bin")},
           "runs": runs, "summary": summary}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
    if a.svg:
        svg(summary, runs, a.svg, f"{describe(vars(a))} under background load "
            f"{a.rate * (a.bg_min + a.bg_max) / 2 / (a.nodes * a.cpu):.2f}, seeds {a.seeds}")
    print(json.dumps(summary, indent=1))
    print(table(summary, describe(vars(a))), file=sys.stderr)
    print(start_error_rows(summary, describe(vars(a))), file=sys.stderr)


def start_error_rows(summary, what):
    """The two start estimators' errors as Markdown rows (every mode's pods together)."""
    rows = []
    for key, name in (("backfill", "tarema-scheduler's expected start (backfill)"),
                      ("asa", "ASA learner's predicted start (labeler)")):
        q = summary.get("start_error", {}).get(key)
        rows.append(f"| {what} | {name} | {q['n']} | {q['median_s']} | {q['p90_s']} |" if q else
                    f"| {what} | {name} | 0 | | |")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
