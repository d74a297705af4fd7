#!/usr/bin/env python3
"""Spec names of Kubernetes' e2e.test that mean the same spec at every supported version.

ginkgo names a spec by its text plus a label list ("[It] [sig-scheduling] SchedulerPredicates
[Serial] validates ... [Conformance] [sig-scheduling, Serial, Conformance]"), and where the text
carries the [Serial] tag moved between releases: 1.35 prints it after the describe
("SchedulerPredicates [Serial] validates ..."), 1.37 at the end of the text ("... [Conformance]
[Serial]"). The spec, its code and its Serial label are the same. The canonical name drops
ginkgo's "[It] ", the trailing label list and the [Serial] tag wherever it stands (Serial stays
in the label list, so nothing is lost), so a spec list and a comparison of two JUnit reports
read the same at every version.

  specs.py canonical          JUnit/ginkgo names on stdin -> canonical names, one a line
  specs.py focus FILE         a spec list (canonical names, '#' comments) -> one --ginkgo.focus
                              regular expression matching each listed spec at any version
  specs.py pattern TEXT       one canonical name -> its regular expression (RE2 and POSIX ERE)
"""
import re
import sys

# ginkgo's label list at the end of a JUnit name: " [sig-scheduling, Serial, Conformance]"
TRAILING_LABELS = re.compile(r"\s*\[[^\[\]]*,[^\[\]]*\]\s*$")
# The tags whose place in the text differs between supported versions. Only [Serial] does for
# the specs compared today (checked with e2e.test --ginkgo.dry-run at 1.35.4 and 1.37.2).
MOVED_TAGS = ("Serial",)
MOVED = re.compile(r"\s*\[(?:%s)\]" % "|".join(re.escape(t) for t in MOVED_TAGS))
# Characters special in both Go's RE2 (ginkgo's --focus) and POSIX ERE.
SPECIAL = re.compile(r"([][\\.*^$()+?{}|])")


def canonical(name):
    """The spec's version-independent name (see the module's doc)."""
    name = name.strip()
    if name.startswith("[It] "):
        name = name[5:]
    name = TRAILING_LABELS.sub("", name)
    name = MOVED.sub("", name)
    return re.sub(r"\s+", " ", name).strip()


def pattern(text):
    """A regular expression matching the spec of canonical name TEXT as any supported version
    prints it: its words in order, a moved tag allowed after any of them. Not anchored, like
    ginkgo's --focus."""
    words = canonical(text).split(" ")
    tags = [SPECIAL.sub(r"\\\1", t) for t in MOVED_TAGS]
    tag = r"( \[%s\])?" % (tags[0] if len(tags) == 1 else "(%s)" % "|".join(tags))
    return (tag + " ").join(SPECIAL.sub(r"\\\1", w) for w in words)


def read_list(path):
    """The canonical names in a spec list file (blank lines and '#' comments left out)."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                out.append(canonical(line))
    return out


def main(argv):
    if len(argv) == 2 and argv[1] == "canonical":
        for line in sys.stdin:
            if line.strip():
                print(canonical(line))
        return 0
    if len(argv) == 3 and argv[1] == "focus":
        try:
            texts = read_list(argv[2])
        except OSError as e:
            print("error: cannot read spec list %s: %s" % (argv[2], e), file=sys.stderr)
            return 2
        if not texts:
            print("error: spec list %s names no spec" % argv[2], file=sys.stderr)
            return 2
        print("(%s)" % "|".join(pattern(t) for t in texts))
        return 0
    if len(argv) == 3 and argv[1] == "pattern":
        print(pattern(argv[2]))
        return 0
    print(__doc__.split("\n\n", 2)[2], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
