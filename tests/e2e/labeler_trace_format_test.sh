#!/usr/bin/env bash
# labeler_trace_format_test.sh: the trace fixtures are what Nextflow writes. Checked against
# Nextflow's own formatting (nextflow.trace.TraceRecord: the field names of FIELDS; dates
# "yyyy-MM-dd HH:mm:ss.SSS"; memory as nextflow.util.MemoryUnit prints it, DecimalFormat "0.#"
# plus " B|KB|MB|GB|...", so "617 MB", never "617.0 MB", and "0" for zero; durations as
# nextflow.util.Duration prints them, "601ms", "13.7s", "15s", "1m 3s", "1d"; percentages
# "%.1f%%"; '-' where a value is missing; with trace.raw = true plain numbers: bytes,
# milliseconds, epoch milliseconds). The rows the fixtures break on purpose are listed below.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
check_trace() { # FILE human|raw ALLOWED_BAD_LINES
  python3 - "$@" <<'PY'
import re, sys
FIELDS = {"task_id": "str", "hash": "str", "native_id": "str", "process": "str", "module": "str",
          "container": "str", "tag": "str", "name": "str", "status": "str", "exit": "str",
          "submit": "date", "start": "date", "complete": "date", "duration": "time",
          "realtime": "time", "%cpu": "perc", "%mem": "perc", "rss": "mem", "vmem": "mem",
          "peak_rss": "mem", "peak_vmem": "mem", "rchar": "mem", "wchar": "mem", "syscr": "num",
          "syscw": "num", "read_bytes": "mem", "write_bytes": "mem", "attempt": "num",
          "workdir": "str", "script": "str", "scratch": "str", "queue": "str", "cpus": "num",
          "memory": "mem", "disk": "mem", "time": "time", "env": "str", "error_action": "str",
          "vol_ctxt": "num", "inv_ctxt": "num", "hostname": "str", "cpu_model": "str"}
HUMAN = {"date": r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}",
         "time": r"\d{1,3}ms|[1-5]?\d(\.[1-9])?s|\d+d( \d+h)?( \d+m)?( \d+s)?|\d+h( \d+m)?( \d+s)?|\d+m( \d+s)?",
         "perc": r"\d+\.\d%", "mem": r"0|\d+(\.[1-9])? (B|KB|MB|GB|TB|PB|EB)", "num": r"\d+", "str": r".*"}
RAW = {"date": r"\d{13}", "time": r"\d+", "perc": r"\d+(\.\d+)?", "mem": r"\d+", "num": r"\d+",
       "str": r".*"}
STATUS = {"NEW", "SUBMITTED", "RUNNING", "COMPLETED", "FAILED", "ABORTED", "CACHED"}
path, mode = sys.argv[1], sys.argv[2]
allowed = {int(x) for x in sys.argv[3].split(",") if x}
pat = HUMAN if mode == "human" else RAW
lines = open(path, encoding="utf-8").read().split("\n")
hdr = lines[0].split("\t")
bad = [f"line 1: not a Nextflow trace field: {h}" for h in hdr if h not in FIELDS]
for i, line in enumerate(lines[1:], 2):
    if not line or i in allowed:
        continue
    vals = line.split("\t")
    if len(vals) != len(hdr):
        bad.append(f"line {i}: {len(vals)} fields, header {len(hdr)}")
        continue
    for h, v in zip(hdr, vals):
        if h not in FIELDS or v == "-":
            continue
        if (h == "status" and v not in STATUS) or not re.fullmatch(pat[FIELDS[h]], v):
            bad.append(f"line {i}: {h} {v!r} is not how Nextflow writes it ({mode})")
print("\n".join(bad[:10]))
sys.exit(1 if bad else 0)
PY
}
# chipseq line 22 (5 fields) and 33 (peak_rss "12 XB"), eager line 18 (realtime "abc"): bad on
# purpose, for the labeler's bad-row reports.
check "chipseq_trace_human.txt: Nextflow's default (human) trace format" \
  check_trace tests/fixtures/labeler/chipseq_trace_human.txt human 22,33
check "eager_trace_raw.txt: Nextflow's trace.raw format" \
  check_trace tests/fixtures/labeler/eager_trace_raw.txt raw 18
check "sim/trace-mini.txt: Nextflow's default (human) trace format" \
  check_trace tests/fixtures/sim/trace-mini.txt human ""
# The checker is not vacuous: a value Nextflow never prints fails it.
sed '2s/\t617 MB\t/\t617.0 MB\t/' tests/fixtures/labeler/chipseq_trace_human.txt >"${TMPDIR:-/tmp}/tarema-trace-$$.txt"
if check_trace "${TMPDIR:-/tmp}/tarema-trace-$$.txt" human 22,33 >/dev/null; then
  fail "the checker rejects '15.0 GB'-style values Nextflow never writes" "accepted"
else
  pass "the checker rejects values Nextflow never writes"
fi
rm -f "${TMPDIR:-/tmp}/tarema-trace-$$.txt"
summary
