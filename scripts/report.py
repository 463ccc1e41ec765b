#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Sums the results of every test layer into one report.

Reads the host `cargo test` output, the framed guest results (kselftest
TAP, KUnit KTAP, kmemleak) and the guest console log; prints each failure
plainly and ends with `N passed, N failed`. Exits 1 on any failure.

The guest's end markers may carry each section's wall time
(`@@end KIND NAME t=SECONDS rc=N`, written by scripts/guest/init; older
logs have none): the report lists the programs' times, slowest first.

An optional fourth argument names the gates' result file (one line per
gate, `gate NAME rc=N log=PATH`, written by check.sh): each gate counts as
one test, failed when its exit status is not 0, with the end of its log.
"""
import re
import sys

# Kernel log lines that fail a run whatever the tests said.
BAD_LOG = [
    (re.compile(r"WARNING:"), "kernel warning"),
    (re.compile(r"\bBUG[: ]"), "kernel BUG"),
    (re.compile(r"Oops"), "kernel oops"),
    (re.compile(r"Kernel panic"), "kernel panic"),
    (re.compile(r"possible (circular|recursive) locking|inconsistent lock state|"
                r"suspicious RCU usage|bad unlock balance|lock held when returning|"
                r"held lock freed|DEBUG_LOCKS_WARN_ON"), "lockdep report"),
    (re.compile(r"KASAN|KFENCE"), "memory-safety report"),
    (re.compile(r"kmemleak: \d+ new suspected memory leaks"), "kmemleak report"),
    (re.compile(r"rcu.*(stall|detected stalls)"), "RCU stall"),
    (re.compile(r"blocked for more than \d+ seconds"), "hung task"),
    (re.compile(r"Call Trace:"), "stack trace"),
]
RESULT = re.compile(r"^(\s*)(not ok|ok) (\d+) (.*?)(?:\s+#\s*(.*))?$")


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = []

    def ok(self, name):
        self.passed += 1

    def fail(self, name, why=""):
        self.failed.append(f"{name}{': ' + why if why else ''}")

    def add(self, name, good, why=""):
        self.ok(name) if good else self.fail(name, why)


def host_tests(path, tally):
    seen = 0
    for line in open(path, errors="replace"):
        m = re.match(r"^test (\S+) \.\.\. (ok|FAILED|ignored)", line)
        if m:
            seen += 1
            if m.group(2) != "ignored":
                tally.add(f"host {m.group(1)}", m.group(2) == "ok")
    if seen == 0:
        tally.fail("host cargo test", "no test results (did it build?)")


END = re.compile(r"^@@end (\S+) (\S+)(?: t=([0-9.]+))? rc=(\d+)$")


def sections(path, times=None):
    """Yields (kind, name, lines, rc) for each framed section; rc None if cut off.

    Appends (kind, name, seconds) to `times` for each end marker with a time.
    """
    cur = None
    for line in open(path, errors="replace"):
        line = line.rstrip("\r\n")
        m = re.match(r"^@@begin (\S+) (\S+)$", line)
        if m:
            if cur:
                yield cur[0], cur[1], cur[2], None
            cur = (m.group(1), m.group(2), [])
            continue
        m = END.match(line)
        if m and cur:
            if m.group(3) is not None and times is not None:
                times.append((cur[0], cur[1], float(m.group(3))))
            yield cur[0], cur[1], cur[2], int(m.group(4))
            cur = None
            continue
        if cur:
            cur[2].append(line)
    if cur:
        yield cur[0], cur[1], cur[2], None


def tap(kind, name, lines, rc, tally, case_depth):
    """Counts TAP/KTAP results at one nesting depth (indent // 4)."""
    plan, count, bad = None, 0, 0
    for line in lines:
        p = re.match(r"^(\s*)1\.\.(\d+)$", line)
        if p and len(p.group(1)) // 4 == case_depth and plan is None:
            plan = int(p.group(2))
        m = RESULT.match(line)
        if not m or len(m.group(1)) // 4 != case_depth:
            continue
        count += 1
        directive = (m.group(5) or "").upper()
        if directive.startswith("SKIP"):
            continue
        good = m.group(2) == "ok"
        bad += not good
        tally.add(f"{kind} {name}.{m.group(4)}", good)
    if plan is not None and count < plan:
        tally.fail(f"{kind} {name}", f"only {count} of {plan} planned results")
    if count == 0:
        tally.fail(f"{kind} {name}", "no results")
    if rc is None:
        tally.fail(f"{kind} {name}", "cut off (guest died or timed out)")
    elif rc != 0 and bad == 0 and kind == "kselftest":
        tally.fail(f"{kind} {name}", f"exit status {rc}")


def guest(results, console, tally, times):
    kinds = set()
    for kind, name, lines, rc in sections(results, times):
        kinds.add(kind)
        if kind == "kselftest":
            tap(kind, name, lines, rc, tally, case_depth=0)
        elif kind == "kunit":
            tap(kind, name, lines, rc, tally, case_depth=1)
        elif kind == "kmemleak":
            leaks = [l for l in lines if "unreferenced object" in l]
            tally.add("guest kmemleak scan", not leaks and rc == 0,
                      f"{len(leaks)} suspected leaks:\n    " + "\n    ".join(lines[:40]))
        elif kind == "cmd":
            tally.add(f"guest {name}", rc == 0, "\n    ".join(lines) or f"rc={rc}")
    for kind in ("kselftest", "kunit", "kmemleak"):
        if kind not in kinds:
            tally.fail(f"guest {kind}", "no results in the guest output")
    done = any(l.startswith("@@done") for l in open(results, errors="replace"))
    tally.add("guest ran to completion", done, "no @@done marker")

    found = []
    for line in open(console, errors="replace"):
        for pat, what in BAD_LOG:
            if pat.search(line):
                found.append(f"{what}: {line.strip()}")
                break
    tally.add("guest kernel log clean", not found, "\n    " + "\n    ".join(found[:30]))


GATE = re.compile(r"^gate (\S+) rc=(\d+) log=(.*)$")


def gates(path, tally):
    seen = 0
    for line in open(path, errors="replace"):
        m = GATE.match(line.strip())
        if not m:
            continue
        seen += 1
        name, rc, log = m.group(1), int(m.group(2)), m.group(3)
        why = ""
        if rc:
            try:
                tail = [l.rstrip() for l in open(log, errors="replace")][-15:]
            except OSError:
                tail = [f"(no log at {log})"]
            why = f"exit status {rc}, log {log}:\n    " + "\n    ".join(tail)
        tally.add(f"gate {name}", rc == 0, why)
    if seen == 0:
        tally.fail("gates", f"no gate results in {path}")


def print_times(times):
    """The guest programs' wall times, slowest first (sections under 0.5 s
    other than kselftests left out), and their sum."""
    if not times:
        return
    print("guest wall time per program:")
    for kind, name, secs in sorted(times, key=lambda t: -t[2]):
        if kind == "kselftest" or secs >= 0.5:
            print(f"  {secs:7.1f} s  {kind} {name}")
    total = sum(t[2] for t in times)
    tests = sum(t[2] for t in times if t[0] == "kselftest")
    print(f"  {total:7.1f} s  in all ({tests:.1f} s of kselftests)")


def main():
    if len(sys.argv) not in (4, 5):
        print("usage: report.py HOST_LOG RESULTS CONSOLE [GATES]", file=sys.stderr)
        return 2
    host_out, results, console = sys.argv[1:4]
    tally = Tally()
    times = []
    host_tests(host_out, tally)
    guest(results, console, tally, times)
    if len(sys.argv) == 5:
        gates(sys.argv[4], tally)
    print_times(times)
    for f in tally.failed:
        print(f"FAIL {f}")
    print(f"{tally.passed} passed, {len(tally.failed)} failed")
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
