#!/usr/bin/env python3
"""Per-spec comparison of two ginkgo JUnit reports of Kubernetes' e2e.test: kube-scheduler's and
tarema's (hack/e2e-scheduling.sh). Prints a markdown table (spec, kube-scheduler, tarema, note),
then one summary line per scheduler and the specs kube-scheduler passes and tarema does not.

  report.py --kube FILE --tarema FILE [--expected FILE] [--markdown OUT] [--tsv OUT]
            [--fail-unexpected]

Specs are named version-independently (hack/e2e/specs.py: without ginkgo's "[It] ", its label
list and the [Serial] tag, whose place in the text differs between Kubernetes releases).
--expected: spec texts (one a line; '#' starts a comment, text after ' # ' is the reason)
expected to fail under tarema for now; such a spec is marked, never hidden.
--tsv: one line per spec: text<TAB>kube result<TAB>tarema result<TAB>expected(0/1).
Exit status 0; 1 with --fail-unexpected when a spec kube-scheduler passes fails under tarema
and is not in --expected; 2 when a report cannot be read.
"""
import argparse
import re
import sys
import xml.etree.ElementTree as ET

from specs import canonical as spec_text  # hack/e2e/specs.py: one name at every version


def load(path):
    """{spec text: (result, message, seconds)}: passed, failed, skipped (a runtime Skip, with
    its reason), or timedout/interrupted. Specs the focus filtered out and suite nodes are left
    out."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print("error: cannot read JUnit report %s: %s" % (path, e), file=sys.stderr)
        sys.exit(2)
    out = {}
    for tc in root.iter("testcase"):
        name = tc.get("name", "")
        if not name.startswith("[It] "):
            continue  # BeforeSuite, ReportAfterSuite, ...
        status = tc.get("status", "")
        msg = ""
        sk = tc.find("skipped")
        if sk is not None:
            msg = sk.get("message", "")
            if status == "skipped" and msg.strip() in ("", "skipped"):
                continue  # not selected by --ginkgo.focus/--ginkgo.skip
            msg = re.sub(r"^skipped\s*-?\s*", "", msg)
        fl = tc.find("failure")
        if fl is None:
            fl = tc.find("error")
        if fl is not None:
            msg = (fl.get("message") or fl.text or "").strip()
        try:
            secs = float(tc.get("time", "0"))
        except ValueError:
            secs = 0.0
        out[spec_text(name)] = (status or "unknown", msg, secs)
    return out


def load_expected(path):
    exp = {}
    if not path:
        return exp
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            text, _, why = line.partition(" # ")
            exp[spec_text(text)] = why.strip()  # a list written with [Serial] still matches
    return exp


def short(msg, n=110):
    msg = re.sub(r"\s+", " ", msg).strip().replace("|", "\\|")
    return msg if len(msg) <= n else msg[: n - 3] + "..."


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kube", required=True)
    ap.add_argument("--tarema", required=True)
    ap.add_argument("--expected")
    ap.add_argument("--markdown")
    ap.add_argument("--tsv")
    ap.add_argument("--fail-unexpected", action="store_true")
    a = ap.parse_args()
    kube, tarema = load(a.kube), load(a.tarema)
    expected = load_expected(a.expected)
    specs = sorted(set(kube) | set(tarema))
    rows = []
    lines = ["| spec | kube-scheduler | tarema | note |", "| --- | --- | --- | --- |"]
    for s in specs:
        k, km, ks = kube.get(s, ("not run", "", 0.0))
        t, tm, ts = tarema.get(s, ("not run", "", 0.0))
        note = ""
        if s in expected and t != "passed":
            note = "expected to fail until %s" % (expected[s] or "a later issue")
        elif k != "passed" and km:
            note = "kube-scheduler: " + short(km)
        elif t != "passed" and tm:
            note = "tarema: " + short(tm)
        tcell = "**%s**" % t if k == "passed" and t != "passed" else t
        lines.append("| %s | %s (%.0f s) | %s (%.0f s) | %s |" % (s.replace("|", "\\|"), k, ks, tcell, ts, note))
        rows.append((s, k, t, 1 if s in expected else 0))

    def count(res):
        c = {}
        for r, _, _ in res.values():
            c[r] = c.get(r, 0) + 1
        return ", ".join("%d %s" % (v, k) for k, v in sorted(c.items()))

    lines.append("")
    lines.append("kube-scheduler: %s" % count(kube))
    lines.append("tarema: %s" % count(tarema))
    regress = [r for r in rows if r[1] == "passed" and r[2] != "passed"]
    lines.append("")
    lines.append("kube-scheduler passes, tarema does not: %d" % len(regress))
    for s, _, t, e in regress:
        lines.append("- %s (%s%s)" % (s, t, ", expected until %s" % expected[s] if e else ""))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text)
    if a.tsv:
        with open(a.tsv, "w") as f:
            for r in rows:
                f.write("%s\t%s\t%s\t%d\n" % r)
    if a.fail_unexpected and any(not e for _, _, _, e in regress):
        sys.exit(1)


if __name__ == "__main__":
    main()
