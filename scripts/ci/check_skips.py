#!/usr/bin/env python3
"""Fails a leg whose tests skipped something it does not expect, or no longer
skip something it does (then the list is stale: drop the line).

  scripts/ci/check_skips.py LEG LOG...      LOG: a CTest log (Testing/Temporary/LastTest.log)
                                            or any test output (a pytest -rs run)
  scripts/ci/check_skips.py LEG LOG... --list   print the skips found, as list lines

A skip is any of the forms our suites print, each named by its CTest entry
(the section of LastTest.log it is in; "-" outside CTest):
  [  SKIPPED ] name            cmocka; also the C tests' own per-case lines and the Julia suite's
  SKIPPED [n] file:line: why   pytest -rs (the line number is dropped)
  name (class) ... skipped 'why'   unittest
  SKIP: why / abuse: skipped why   the distributed and abuse drivers
  docs: WHERE: skipped for lack of FEATURE   the documents' runner
The expected skips of leg LEG are tests/skips/LEG.txt: one fnmatch pattern per
line, matched against "ENTRY: SKIP" ("python.pytest: tests/test_compile.py:
needs torch >= 2.4"), then "  # why it is expected here". A line starting
with "?" may or may not match (a skip that depends on the machine).
CTORCH_SKIPS_REPORT_ONLY=1 reports without failing (to write a new leg's list).
Standard library only (runs before and without the test dependencies).
"""
import fnmatch
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECTION = re.compile(r"^\d+/\d+ Testing: (\S+)")
FORMS = [
    (re.compile(r"^\[ {1,2}SKIPPED \] (?!(?:\S+: )?\d+ test\(s\), listed below)(.+?)\s*$"), "{0}"),
    (re.compile(r"^SKIPPED \[\d+\] ([^:]+):\d+: (.*?)\s*$"), "{0}: {1}"),
    (re.compile(r"^(\S+) \((\S+)\) \.\.\. skipped '(.*)'\s*$"), "{1}: {2}"),
    (re.compile(r"^SKIP: (.+?)\s*$"), "{0}"),
    (re.compile(r"^abuse: skipped (.+?)\s*$"), "{0}"),
    (re.compile(r"^docs: (\S+?): skipped for lack of (.+?)\s*$"), "{0}: no {1}"),
    (re.compile(r"^docs: (\S+?): no runnable blocks: nothing to run\s*$"), "{0}: no runnable blocks"),
]


def skips_in(path):
    """The set of "ENTRY: SKIP" strings a log holds."""
    found, entry = set(), "-"
    with open(path, errors="replace") as f:
        for line in f:
            m = SECTION.match(line)
            if m:
                entry = m.group(1)
                continue
            for rx, fmt in FORMS:
                m = rx.match(line)
                if m:
                    found.add("%s: %s" % (entry, fmt.format(*m.groups())))
                    break
    return found


def expected(leg):
    """[(pattern, optional, line)] of tests/skips/LEG.txt."""
    path = os.path.join(ROOT, "tests", "skips", leg + ".txt")
    out = []
    if not os.path.exists(path):
        return out, path
    with open(path) as f:
        for line in f:
            pat = line.split("  #", 1)[0].strip()
            if not pat or pat.startswith("#"):
                continue
            opt = pat.startswith("?")
            out.append((pat.lstrip("?").strip(), opt, line.rstrip()))
    return out, path


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    if len(args) < 2:
        print(__doc__)
        return 2
    leg, logs = args[0], args[1:]
    found = set()
    for log in logs:
        if not os.path.exists(log):
            print("check_skips: %s: no such log" % log)
            return 1
        found |= skips_in(log)
    if "--list" in argv:
        for s in sorted(found):
            print(s)
        return 0
    pats, path = expected(leg)
    unexpected = sorted(s for s in found if not any(fnmatch.fnmatchcase(s, p) for p, _o, _l in pats))
    stale = [l for p, o, l in pats if not o and not any(fnmatch.fnmatchcase(s, p) for s in found)]
    print("check_skips: leg %s: %d skips, %d expected by %s" % (
        leg, len(found), len(found) - len(unexpected), os.path.relpath(path, ROOT)))
    for s in unexpected:
        print("  UNEXPECTED skip: " + s)
    for l in stale:
        print("  STALE (nothing skipped it): " + l)
    if unexpected or stale:
        print("check_skips: a feature this leg should have went missing, or the list is out of "
              "date: fix the cause, or edit %s (with the reason)" % os.path.relpath(path, ROOT))
        if os.environ.get("CTORCH_SKIPS_REPORT_ONLY") == "1":
            print("check_skips: CTORCH_SKIPS_REPORT_ONLY=1: reported, not failed (for writing a "
                  "new leg's list)")
            return 0
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
