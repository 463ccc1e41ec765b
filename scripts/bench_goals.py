#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Prints the benchmark's goals as ratios side by side, from bench.json.

Usage: bench_goals.py BENCH_JSON

Each line: the goal, the figures it compares, their ratio and whether the
goal is met (Documentation/benchmarks.rst, *Goals*). A key missing from the
run (a workload left out with VGSCHED_TESTS) is reported as such. Never
fails: goals are figures, not tests.
"""
import json
import sys

# (name, numerator key, denominator key or None, comparison, limit)
GOALS = [
    ("scheduler lock, short", "engine.lock_hold_max_us.short", None, "<=", 1000),
    ("scheduler lock, long", "engine.lock_hold_max_us.long", None, "<=", 1000),
    ("scheduler lock, queued0", "engine.lock_hold_max_us.queued0", None, "<=", 1000),
    ("scheduler lock, queued6144", "engine.lock_hold_max_us.queued6144", None, "<=", 1000),
    ("switch gap pipelined / sequential", "pipeline.switch_gap_us.pipelined",
     "pipeline.switch_gap_us.sequential", "<=", 0.05),
    ("high-priority wait vgsched / drm_sched", "peer.hiprio_wait_ms.vgsched",
     "peer.hiprio_wait_ms.drm_sched", "<=", 0.3),
    ("energy saving, %", "power.energy_saving_pct", None, ">=", 20),
    ("makespan power / spread", "power.makespan_ms.power", "power.makespan_ms.spread", "<=", 1.05),
    ("closing 64 files of 64 contexts, ms", "engine.close_files_ms.64x64", None, "<", 1000),
    ("trivial job queued6144 / queued0", "engine.trivial_job_us.queued6144",
     "engine.trivial_job_us.queued0", "<=", 1.5),
    ("trivial job idle4096 / queued0", "engine.trivial_job_us.idle4096",
     "engine.trivial_job_us.queued0", "<=", 1.5),
    ("submit CPU vgsched_mock / drm_sched_resv (prod)", "prod.peer.submit_cpu_us.vgsched_mock",
     "prod.peer.submit_cpu_us.drm_sched_resv", "<=", 1.2),
    ("submit to start vgsched_mock / drm_sched_resv (prod)",
     "prod.peer.submit_overhead_us.vgsched_mock",
     "prod.peer.submit_overhead_us.drm_sched_resv", "<=", 1.0),
    ("submit CPU vgsched_mock / drm_sched_resv (debug)", "peer.submit_cpu_us.vgsched_mock",
     "peer.submit_cpu_us.drm_sched_resv", "<=", 1.5),
    ("submit to start vgsched_mock / drm_sched_resv (debug)",
     "peer.submit_overhead_us.vgsched_mock", "peer.submit_overhead_us.drm_sched_resv", "<=", 1.5),
    # The same four on the medians over the calls (the goals name the
    # means; a few calls stalled by the host move a mean, not a median).
    ("  submit CPU, medians (prod)", "prod.peer.submit_cpu_us.vgsched_mock.median",
     "prod.peer.submit_cpu_us.drm_sched_resv.median", "<=", 1.2),
    ("  submit to start, medians (prod)", "prod.peer.submit_overhead_us.vgsched_mock.median",
     "prod.peer.submit_overhead_us.drm_sched_resv.median", "<=", 1.0),
    ("  submit CPU, medians (debug)", "peer.submit_cpu_us.vgsched_mock.median",
     "peer.submit_cpu_us.drm_sched_resv.median", "<=", 1.5),
    ("  submit to start, medians (debug)", "peer.submit_overhead_us.vgsched_mock.median",
     "peer.submit_overhead_us.drm_sched_resv.median", "<=", 1.5),
]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as f:
        data = json.load(f)
    if "bench.cpu_pct" in data:
        print("under a CPU quota of %s %% per vCPU" % data["bench.cpu_pct"])
    for name, num, den, op, limit in GOALS:
        if num not in data or (den and den not in data):
            print("%-56s  (not in this run)" % name)
            continue
        value = data[num] / data[den] if den else data[num]
        if den and data[den] == 0:
            print("%-56s  (%s is 0)" % (name, den))
            continue
        met = {"<=": value <= limit, "<": value < limit, ">=": value >= limit}[op]
        figures = "%g / %g" % (data[num], data[den]) if den else "%g" % data[num]
        print("%-56s  %8.3f %-2s %-6g %-8s  (%s)" % (name, value, op, limit,
                                                  "met" if met else "NOT MET", figures))


if __name__ == "__main__":
    main()
