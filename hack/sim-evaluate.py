#!/usr/bin/env python3
"""hack/sim-evaluate.py: does `--policy adaptive` meet issue 16's target on your workflows?

Runs `tarema-sim --policy all --seeds N --json` on each cluster (default: the paper's 5;5;5 and
5;4;4;2) isolated and shared, and prints one row per setting, the columns of docs/simulation.md's
evaluation tables: adaptive's runtime decrease (geometric mean over workflows, mean +- sd over
seeds) against round robin, fair, fill nodes, pooled over those three, SJFN and tarema; its worst
single workflow against SJFN; its worst against any baseline; and the headroom, the most ANY
policy could gain pooled and against SJFN (the lower bound's decrease: every task at its fastest
node type's runtime; critical path, requested cores and memory, cpu work under contention, and
the order in which workflows sharing the cluster can finish; sim/bound.h). Then the target per
setting:

  * pooled >= the paper's margin for that cluster (17.9 % on 5;5;5, 21.5 % on 5;4;4;2),
  * vs SJFN >= 4.5 %,
  * no single workflow more than 2 % behind any baseline (its mean over seeds),

and what is missed, by how much. The figures are means over seeds; a setting's spread is printed
next to it, and a miss within one sd is marked "(within sd)". A pooled or SJFN target above the
headroom is marked "(unreachable: ...)": no policy can meet it on that workload and cluster.

    python3 hack/sim-evaluate.py --workload my-workflows.yaml            # 10 seeds, 4 settings
    python3 hack/sim-evaluate.py --workload W.yaml --modes shared --seeds 30 --save-json out/
    python3 hack/sim-evaluate.py --from-json out/*.json                  # re-tabulate saved runs
    python3 hack/sim-evaluate.py --from-json out/*.json --svg eval.svg   # and draw it

tarema-sim measures as the paper does: one run per workflow only builds history and is not
counted (`--history-runs N` changes that; 0 counts every run, as before the protocol).

Progress goes to stderr. Exit status: 0, or 1 with --check when a target is missed, 2 on bad
usage or when tarema-sim refused its input (its message is printed, naming the setting).
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINES = ["round-robin", "fair", "fill-nodes", "sjfn", "tarema"]
# The paper's clusters and its pooled margins (section V: 17.87 % on 5;5;5, 21.47 % on 5;4;4;2).
DEFAULT_CLUSTERS = [
    ("5;5;5", os.path.join(ROOT, "sim/scenarios/cluster-555.yaml"), 17.9),
    ("5;4;4;2", os.path.join(ROOT, "sim/scenarios/cluster-5442.yaml"), 21.5),
]
SJFN_TARGET = 4.5
WORST_TARGET = -2.0


def die(msg):
    print(f"sim-evaluate: {msg}", file=sys.stderr)
    sys.exit(2)


def stat(x, where):
    """A {mean, sd} object of tarema-sim's --seeds JSON."""
    if not isinstance(x, dict) or not isinstance(x.get("mean"), (int, float)):
        die(f"{where}: not a {{mean, sd}} figure (is this tarema-sim --policy all --seeds N --json?)")
    sd = x.get("sd", 0)
    return float(x["mean"]), float(sd if isinstance(sd, (int, float)) else 0)


def below(v, need):
    """v, which is below need, with digits enough to show it: -2.004 as -2.004 against -2, not as
    -2.0; a headroom of 21.46 as 21.46 against the target 21.5."""
    digits = 1
    while digits < 4 and float(f"{v:.{digits}f}") >= need:
        digits += 1
    return f"{v:.{digits}f}"


def summarize(setting, doc, target_pooled):
    """One row: the figures and the target's verdict, from one --policy all --seeds JSON."""
    try:
        a = doc["decrease"]["adaptive"]
    except (KeyError, TypeError):
        die(f"{setting}: no decrease.adaptive in the JSON (run tarema-sim --policy all --seeds N --json)")

    def miss(what, got, sd, need):
        note = " (within sd)" if got + sd >= need else ""
        return f"{what} {below(got, need)} < {need:g}{note}"

    geomean, worst_sjfn, worst_any, workflow_misses = {}, None, None, []
    for b in BASELINES:
        if b not in a:
            die(f"{setting}: no decrease.adaptive.{b} in the JSON")
        geomean[b] = stat(a[b].get("geomean"), f"{setting}: decrease.adaptive.{b}.geomean")
        for name, v in sorted((a[b].get("workflows") or {}).items()):
            m, sd = stat(v, f"{setting}: decrease.adaptive.{b}.workflows.{name}")
            if b == "sjfn" and (worst_sjfn is None or m < worst_sjfn[1]):
                worst_sjfn = (name, m, sd)
            if worst_any is None or m < worst_any[2]:
                worst_any = (name, b, m, sd)
            if m < WORST_TARGET:
                workflow_misses.append(miss(f"{name} vs {b}", m, sd, WORST_TARGET))
    if worst_any is None:
        die(f"{setting}: the JSON has no per-workflow figures")
    pooled = stat(a.get("pooled_standard"), f"{setting}: decrease.adaptive.pooled_standard")
    # The headroom: the lower bound's decrease (tarema-sim, sim/bound.h), the most ANY policy could
    # gain against those baselines here; JSON written before it existed has none.
    # A headroom tarema-sim could not compute (null) shows as none, like older JSON's.
    room = doc.get("headroom")
    if isinstance(room, dict):
        means = [(room.get("pooled_standard") or {}).get("mean"),
                 ((room.get("sjfn") or {}).get("geomean") or {}).get("mean")]
        room = tuple(float(m) for m in means) if all(isinstance(m, (int, float)) for m in means) else None
    else:
        room = None
    unreachable = []

    def unless_reachable(text, need, k):
        if room is not None and room[k] < need:
            shown = below(room[k], need)
            unreachable.append(f"{'pooled' if k == 0 else 'vs sjfn'} {need:g} > headroom {shown}")
            return f"{text} (unreachable: no policy exceeds {shown})"
        return text

    misses = []  # in the order the table reads: pooled, SJFN, then single workflows
    if target_pooled is not None and pooled[0] < target_pooled:
        misses.append(unless_reachable(miss("pooled", *pooled, target_pooled), target_pooled, 0))
    if geomean["sjfn"][0] < SJFN_TARGET:
        misses.append(unless_reachable(miss("vs sjfn", *geomean["sjfn"], SJFN_TARGET), SJFN_TARGET, 1))
    return {"setting": setting, "geomean": geomean, "pooled": pooled, "worst_sjfn": worst_sjfn,
            "worst_any": worst_any, "room": room, "unreachable": unreachable,
            "target_pooled": target_pooled, "misses": misses + workflow_misses}


def fmt(ms):
    return f"{ms[0]:.1f} ± {ms[1]:.1f}"


def print_table(rows):
    print("| setting | vs round-robin | vs fair | vs fill-nodes | pooled | vs sjfn | vs tarema "
          "| worst workflow vs sjfn | worst vs any | headroom: pooled / vs sjfn | target |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        g = r["geomean"]
        ws, wa = r["worst_sjfn"], r["worst_any"]
        room = "-" if r["room"] is None else f"{r['room'][0]:.1f} / {r['room'][1]:.1f}"
        verdict = "met" if not r["misses"] else "missed: " + "; ".join(r["misses"])
        print(f"| {r['setting']} | {fmt(g['round-robin'])} | {fmt(g['fair'])} | {fmt(g['fill-nodes'])} "
              f"| {fmt(r['pooled'])} | {fmt(g['sjfn'])} | {fmt(g['tarema'])} "
              f"| {ws[0]} {ws[1]:.1f} ± {ws[2]:.1f} | {wa[0]} {wa[2]:.1f} vs {wa[1]} | {room} | {verdict} |")
    met = sum(1 for r in rows if not r["misses"])
    print(f"\ntarget (pooled >= the paper's margin, vs sjfn >= {SJFN_TARGET:g} %, no workflow below "
          f"{WORST_TARGET:g} % against any baseline): met in {met} of {len(rows)} settings")
    bound = [f"{r['setting']} ({'; '.join(r['unreachable'])})" for r in rows if r["unreachable"]]
    if bound:
        print(f"unreachable by any policy in {len(bound)} of {len(rows)} settings (the lower bound "
              f"leaves less headroom than the target): {', '.join(bound)}")
    return met == len(rows)


def write_svg(rows, path):
    """The table as a picture: per setting, adaptive's pooled and SJFN decrease (bar, +- sd), the
    headroom behind it (the most any policy could gain) and the target (red tick)."""
    bars = []  # (setting, first row of it, label, (mean, sd), headroom or None, target or None)
    for r in rows:
        room = r["room"] or (None, None)
        bars.append((r["setting"], True, "pooled", r["pooled"], room[0], r["target_pooled"]))
        bars.append((r["setting"], False, "vs sjfn", r["geomean"]["sjfn"], room[1], SJFN_TARGET))
    vals = [0.0] + [b[3][0] + b[3][1] for b in bars] + [b[3][0] - b[3][1] for b in bars]
    vals += [b[4] for b in bars if b[4] is not None] + [b[5] for b in bars if b[5] is not None]
    lo, hi = min(vals) - 2, max(vals) + 2
    left, width, row_h, top = 230, 560, 22, 70
    x = lambda v: left + (v - lo) / (hi - lo) * width
    esc = lambda t: t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    h = top + row_h * len(bars) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 40}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="100%" height="100%" fill="white"/>',
           '<text x="10" y="20" font-size="14" font-weight="bold">adaptive: runtime decrease '
           '(%, geometric mean, mean \u00b1 sd over seeds)</text>',
           '<rect x="10" y="32" width="14" height="10" fill="#3b6fb6"/>'
           '<text x="28" y="41">adaptive</text>',
           '<rect x="100" y="32" width="14" height="10" fill="#dde3ea" stroke="#8899aa" '
           'stroke-dasharray="3,2"/><text x="118" y="41">headroom: the most any policy could gain '
           '(lower bound)</text>',
           '<line x1="480" y1="30" x2="480" y2="44" stroke="#c0392b" stroke-width="3"/>'
           '<text x="486" y="41">target</text>']
    for v in range(int(lo // 10 * 10), int(hi) + 1, 10):
        if lo <= v <= hi:
            out.append(f'<line x1="{x(v):.1f}" y1="{top - 6}" x2="{x(v):.1f}" y2="{h - 30}" '
                       f'stroke="{"#555" if v == 0 else "#eee"}"/>'
                       f'<text x="{x(v):.1f}" y="{h - 14}" text-anchor="middle">{v}</text>')
    for i, (setting, first, label, (m, sd), room, target) in enumerate(bars):
        y = top + i * row_h
        if first:
            out.append(f'<text x="10" y="{y + 14}" font-weight="bold">{esc(setting)}</text>')
        out.append(f'<text x="{left - 8}" y="{y + 14}" text-anchor="end">{label}</text>')
        if room is not None:
            x0, x1 = sorted((x(0), x(room)))
            out.append(f'<rect x="{x0:.1f}" y="{y + 2}" width="{x1 - x0:.1f}" height="{row_h - 6}" '
                       f'fill="#dde3ea" stroke="#8899aa" stroke-dasharray="3,2">'
                       f'<title>headroom {room:.1f} %</title></rect>')
        x0, x1 = sorted((x(0), x(m)))
        out.append(f'<rect x="{x0:.1f}" y="{y + 5}" width="{x1 - x0:.1f}" height="{row_h - 12}" '
                   f'fill="#3b6fb6"><title>{esc(setting)} {label}: {m:.1f} \u00b1 {sd:.1f} %'
                   f'</title></rect>')
        out.append(f'<line x1="{x(m - sd):.1f}" y1="{y + row_h / 2 - 1}" x2="{x(m + sd):.1f}" '
                   f'y2="{y + row_h / 2 - 1}" stroke="black"/>')
        if target is not None:
            out.append(f'<line x1="{x(target):.1f}" y1="{y + 1}" x2="{x(target):.1f}" '
                       f'y2="{y + row_h - 3}" stroke="#c0392b" stroke-width="3">'
                       f'<title>target {target:g} %</title></line>')
    out.append("</svg>")
    try:
        with open(path, "w") as fh:
            fh.write("\n".join(out) + "\n")
    except OSError as e:
        die(f"--svg {path}: {e.strerror}")


def run_sim(sim, cluster, workload, seeds, isolate, history_runs, setting):
    cmd = [sim, "--cluster", cluster, "--workload", workload, "--policy", "all",
           "--seeds", str(seeds), "--json"] + (["--isolate"] if isolate else [])
    if history_runs is not None:
        cmd += ["--history-runs", str(history_runs)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        die(f"{setting}: cannot run {sim}: {e.strerror} (build it with make)")
    if p.returncode != 0:
        die(f"{setting}: tarema-sim exited {p.returncode}: {p.stderr.strip()}")
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError as e:
        die(f"{setting}: tarema-sim printed no JSON ({e})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", help="workload YAML (docs/simulation.md 'Input')")
    ap.add_argument("--seeds", type=int, default=10, help="seeds 1..N per setting (default 10)")
    ap.add_argument("--modes", default="isolated,shared",
                    help="comma-separated: isolated (--isolate), shared (default both)")
    ap.add_argument("--cluster", action="append", metavar="NAME=FILE[:POOLED]",
                    help="instead of the paper's two clusters; POOLED is the pooled target "
                         "(none when omitted). Repeatable")
    ap.add_argument("--history-runs", type=int, metavar="N",
                    help="runs per workflow that only build history before the measured ones "
                         "(default: tarema-sim's, 1 as in the paper; 0 counts every run)")
    ap.add_argument("--sim", default=os.path.join(ROOT, "bin/tarema-sim"), help="tarema-sim binary")
    ap.add_argument("--save-json", metavar="DIR", help="keep each setting's JSON in DIR")
    ap.add_argument("--from-json", nargs="+", metavar="FILE",
                    help="tabulate JSON saved by --save-json instead of running")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--svg", metavar="FILE",
                    help="also draw the table: adaptive, the headroom and the target per setting")
    args = ap.parse_args()

    rows = []
    if args.from_json:
        for f in args.from_json:
            try:
                with open(f) as fh:
                    saved = json.load(fh)
            except OSError as e:
                die(f"{f}: {e.strerror}")
            except json.JSONDecodeError as e:
                die(f"{f}: not JSON ({e})")
            if not isinstance(saved, dict) or "setting" not in saved or "sim" not in saved:
                die(f"{f}: not a file written by --save-json (needs setting and sim)")
            rows.append(summarize(saved["setting"], saved["sim"], saved.get("target_pooled")))
        ok = print_table(rows)
        if args.svg:
            write_svg(rows, args.svg)
        return 1 if args.check and not ok else 0

    if not args.workload:
        die("--workload FILE is required (or --from-json)")
    if not os.path.isfile(args.workload):
        die(f"{args.workload}: no such workload file")
    if args.seeds < 1:
        die(f"--seeds must be at least 1, not {args.seeds}")
    if args.history_runs is not None and not 0 <= args.history_runs <= 100:
        die(f"--history-runs must be from 0 to 100, not {args.history_runs}")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in modes:
        if m not in ("isolated", "shared"):
            die(f"--modes: unknown mode {m!r} (isolated, shared)")
    clusters = DEFAULT_CLUSTERS
    if args.cluster:
        clusters = []
        for c in args.cluster:
            name, sep, rest = c.partition("=")
            if not sep or not name or not rest:
                die(f"--cluster {c!r}: expected NAME=FILE[:POOLED]")
            path, target = rest, None
            head, colon, tail = rest.rpartition(":")
            if colon and head:
                try:  # a path may hold a colon: only a number after the last one is POOLED
                    path, target = head, float(tail)
                except ValueError:
                    pass
            if not os.path.isfile(path):
                die(f"--cluster {c!r}: no such cluster file {path}")
            clusters.append((name, path, target))
    if args.save_json:
        os.makedirs(args.save_json, exist_ok=True)

    settings = [(c, m) for c in clusters for m in modes]
    for i, ((name, path, target), mode) in enumerate(settings, 1):
        setting = f"{name}, {mode}"
        print(f"[{i}/{len(settings)}] {setting}: {args.seeds} seeds, every policy ...",
              file=sys.stderr, end="", flush=True)
        t0 = time.monotonic()
        doc = run_sim(args.sim, path, args.workload, args.seeds, mode == "isolated",
                      args.history_runs, setting)
        print(f" {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)
        if args.save_json:
            out = os.path.join(args.save_json, f"{name.replace(';', '')}-{mode}.json")
            with open(out, "w") as fh:
                json.dump({"setting": setting, "target_pooled": target, "workload": args.workload,
                           "sim": doc}, fh)
        rows.append(summarize(setting, doc, target))
    ok = print_table(rows)
    if args.svg:
        write_svg(rows, args.svg)
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
