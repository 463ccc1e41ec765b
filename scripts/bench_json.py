#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turns the text report of make bench (bench.txt) into bench.json.

bench.json is one flat JSON object: a stable dotted metric name -> a number.
Every table row of the host benchmark and of the guest becomes keys named
after the table, the row and the column; Documentation/benchmarks.rst lists
them all with their method. Cells printed as '-' (no value) are left out.
What the guest on the production kernel printed (the report's section
"=== guest kernel, production build") gives the same keys with the prefix
"prod." (bench.sh already prefixes its "key = value" lines).

usage: bench_json.py BENCH_TXT BENCH_JSON
"""
import json
import re
import sys


def ident(text):
    """A key component: lower case, runs of other characters as '_'."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def number(cell):
    """The number in a cell ('98%', '~6.4', '7.00e-4', '100027'), or None."""
    cell = cell.strip().lstrip("~").rstrip("%")
    if cell in ("", "-", "?"):
        return None
    try:
        value = float(cell)
    except ValueError:
        return None
    return int(value) if value.is_integer() and "." not in cell and "e" not in cell else value


def p_key(p):
    """'0.2500' -> 'p0_25' (trailing zeros dropped, so the key is stable)."""
    return "p" + ident(("%.4f" % float(p)).rstrip("0"))


# Row labels of the dispatcher table, by mechanism.
CHOICES = {"recent power": "recent_power", "free resources": "free_resources",
           "mixed": "mixed"}
FINDERS = {"exact": "exact", "grouped by 4": "grouped", "sampled": "sampled"}


class Report:
    def __init__(self):
        self.out = {}
        self.section = None
        self.side = "host"
        self.p = None
        self.prefix = ""

    def put(self, key, value):
        if value is not None:
            if not key.startswith(self.prefix):
                key = self.prefix + key
            self.out[key] = value

    def row(self, prefix, names, cells):
        for name, cell in zip(names, cells):
            if name:
                self.put(prefix + "." + name, number(cell))

    def line(self, line):
        s = line.strip()
        if s.startswith("=== guest"):
            self.side = "guest"
            self.prefix = "prod." if s.startswith("=== guest kernel, production build") else ""
        m = re.match(r"^((?:prod\.)?(?:bench|engine|gpu|sched|peer|pipeline|power)\.[a-z0-9_.]+) = (-?[0-9.]+)$", s)
        if m:
            self.put(m.group(1), number(m.group(2)))
            return
        if s.startswith("Finder timing, host"):
            self.section, self.side = "finder", "host"
        elif s.startswith("Finder timing, guest"):
            self.section, self.side = "finder", "guest"
        elif s.startswith("Approximate finders vs exact"):
            self.section = "miss"
        elif s.startswith("Document check"):
            self.section = None
        elif s.startswith("Four units per module"):
            self.section = "grouped_chain"
        elif s.startswith("One unit's map"):
            self.section = "grouped_single"
        elif s.startswith("16 modules of one map, 16 independent maps"):
            self.section = "grouped_all16"
        elif s.startswith("Dispatch round with per-module summaries"):
            self.section = "summaries"
        elif s.startswith("Dispatch decisions per second"):
            self.section = "dispatch"
        elif s.startswith("Context scheduler") and "fairness" in s:
            self.section = "fairness"
        elif s.startswith("Priority-0 submission"):
            self.section = "priority0"
        elif s.startswith("Cost of one scheduling decision"):
            self.section = "decision"
        elif s.startswith("Placing on a busy module, packed vs exact"):
            self.section = "packed"
        elif s.startswith("Time-multiplexed finder at the default sizes"):
            self.section = "periods"
        elif s.startswith("Ordered slot decisions"):
            self.section = "ordered"
        elif s.startswith("(host benchmark took"):
            m = re.search(r"took ([0-9.]+) s", s)
            if m:
                self.put("host.bench_seconds", number(m.group(1)))
            self.section = None
        else:
            self.table_line(s)

    def table_line(self, s):
        sec = self.section
        if sec == "finder":
            m = re.match(r"^(\d+) (\S+)\s+(first\(\d+\)|largest)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)$", s)
            if m:
                bits, occ, query = m.group(1), ident(m.group(2)), ident(m.group(3))
                self.row("finder.%s.%s.%s.%s" % (self.side, bits, occ, query),
                         ["found", "exact_ns", "naive_ns", "kernel_ns", "naive_over_exact", "kernel_over_exact"],
                         m.groups()[3:])
                # The headline figures of the slot-selection issue: host,
                # random maps with half the blocks used.
                short = {("128", "largest"): "largest128_ns", ("4096", "largest"): "largest4096_ns",
                         ("4096", "first_32"): "first32_4096_ns", ("128", "first_1"): "first1_128_ns"}
                name = short.get((bits, query))
                if self.side == "host" and occ == "random50" and name:
                    self.put("finder.%s.exact" % name, number(m.group(5)))
                    self.put("finder.%s.naive" % name, number(m.group(6)))
        elif sec == "miss":
            m = re.match(r"^128-block maps, each block used with p = ([0-9.]+)", s)
            if m:
                self.p = p_key(m.group(1))
                return
            m = re.match(r"^(\d+)\s+(\S+) \|\s+(\S+)\s+(\S+) \|\s+(\S+)\s+(\S+)$", s)
            if m and self.p:
                self.row("miss.%s.need%s" % (self.p, m.group(1)),
                         ["exact_p_fits", "grouped_p_miss_given_fits", "grouped_p_none",
                          "sampled_p_miss_given_fits", "sampled_p_none"], m.groups()[1:])
        elif sec == "grouped_single":
            m = re.match(r"^([0-9.]+)\s+(\S+)\s+(\S+)\s+\S+ \|\s+(\S+)\s+(\S+)\s+\S+ \|\s+(\S+)$", s)
            if m:
                self.row("grouped_check.single.%s" % p_key(m.group(1)),
                         ["p_none", "p_none_analytic", "p_miss_given_fits", "p_miss_given_fits_analytic",
                          "p_fits"], m.groups()[1:])
        elif sec == "grouped_chain":
            m = re.match(r"^([0-9.]+)\s+(\S+)\s+(\S+)\s+(\S+) \|\s+(?:yes|no)\s+(\d+)\s+(\d+)\s+(\S+)\s+\[.*\]\s+(\S+)\s+\S+$", s)
            if m:
                self.row("grouped_check.chain.%s" % p_key(m.group(1)),
                         ["unit_p_none_analytic", "module_p_fail", "module_p_fail_analytic", "all16_trials",
                          "all16_events", "all16_p_all", "all16_analytic"], m.groups()[1:])
        elif sec == "grouped_all16":
            m = re.match(r"^([0-9.]+)\s+(\d+)\s+(\d+)\s+(\S+)\s+\[.*\]\s+(\S+)\s+(\S+)\s+\S+\s+(\d+)$", s)
            if m:
                self.row("grouped_check.all16.%s" % p_key(m.group(1)),
                         ["trials", "events", "p_all", "single_pow16", "analytic_pow16", "lost"],
                         m.groups()[1:])
        elif sec == "dispatch":
            m = re.match(r"^(.+?) / (.+?)\s+(\d+)\s+([0-9.]+)\s+(\d+) \((\d+)%\)\s+([0-9.]+)$", s)
            if m and m.group(1).lower() in CHOICES and m.group(2).lower() in FINDERS:
                self.row("dispatch.%s.%s" % (CHOICES[m.group(1).lower()], FINDERS[m.group(2).lower()]),
                         ["rounds_per_s", "us_per_round", "dispatched", "dispatched_percent",
                          "matches_per_round"], m.groups()[2:])
        elif sec == "fairness":
            m = re.match(r"^(\d+) \| (\S+) (\S+)/(\S+)\s+(\d+)\s+(\S+) \| (\S+) (\S+)/(\S+)\s+(\d+)\s+(\S+) \| (\S+)\s+(\S+)/(\S+)$", s)
            if m:
                self.row("slots.fairness.n%s" % m.group(1),
                         ["proportional.jain", "proportional.share_min", "proportional.share_max",
                          "proportional.loads_per_s", "proportional.weight_max_over_min",
                          "literal.jain", "literal.share_min", "literal.share_max",
                          "literal.loads_per_s", "literal.weight_max_over_min",
                          "fifo.jain", "fifo.share_min", "fifo.share_max"], m.groups()[1:])
        elif sec == "priority0":
            m = re.match(r"^(\d+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\d+) \|\s+(\d+)/(\d+)\s+(\d+)/(\d+)$", s)
            if m:
                self.row("slots.priority0.n%s" % m.group(1),
                         ["calls", "evicted", "decision_ns", "decision_p99_ns",
                          "point1000us_mean_us", "point1000us_max_us", "point100us_mean_us",
                          "point100us_max_us"], m.groups()[1:])
        elif sec == "decision":
            m = re.match(r"^(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\S+)$", s)
            if m:
                self.row("slots.decision.n%s" % m.group(1),
                         ["decisions", "ends_per_decision", "median_ns", "mean_ns", "ns_per_context"],
                         m.groups()[1:])
            m = re.match(r"^linear in n: ([0-9.]+) ns per added context", s)
            if m:
                self.put("slots.decision.ns_per_added_context", number(m.group(1)))
            m = re.match(r"^pool::div_sat .*: ([0-9.]+) ns per call", s)
            if m:
                self.put("slots.decision.div_sat_ns", number(m.group(1)))
        elif sec == "summaries":
            m = re.match(r"^(rescan|summaries|memo)\s+([0-9.]+)\s+(yes|NO)$", s)
            if m:
                self.put("dispatch.round_us.%s" % m.group(1), number(m.group(2)))
                self.put("dispatch.round_same_choices", int(m.group(3) == "yes"))
        elif sec == "packed":
            m = re.match(r"^(packed|exact)\s+([0-9.]+)\s+(yes|NO)$", s)
            if m:
                self.put("finder.packed_place_ns.%s" % m.group(1), number(m.group(2)))
                self.put("finder.packed_same_answers", int(m.group(3) == "yes"))
        elif sec == "periods":
            # The time-multiplexed finder's passes at the default sizes,
            # per number of units a work-group uses, and packed against
            # exact on the placement path at those sizes.
            m = re.match(r"^(\d+)\s+(\d+)\s+(\d+)$", s)
            if m:
                self.put("finder.packed_searches.units%s" % m.group(1), int(m.group(2)))
                self.put("finder.packed_passes.units%s" % m.group(1), int(m.group(3)))
            m = re.match(r"^(packed|exact)\s+([0-9.]+)\s+(yes|NO)$", s)
            if m:
                self.put("finder.packed_place_ns_default.%s" % m.group(1), number(m.group(2)))
                self.put("finder.packed_same_answers_default", int(m.group(3) == "yes"))
        elif sec == "ordered":
            # The ordered decision (sched.decision_ns, mean) and the full
            # reschedule() it replaces (sched.decision_ns_linear, mean), same
            # trace; the medians as ….median.
            m = re.match(r"^(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(yes|NO)$", s)
            if m:
                n = m.group(1)
                self.put("sched.decision_ns.n%s" % n, number(m.group(4)))
                self.put("sched.decision_ns.median.n%s" % n, number(m.group(3)))
                self.put("sched.decision_ns_linear.n%s" % n, number(m.group(6)))
                self.put("sched.decision_ns_linear.median.n%s" % n, number(m.group(5)))
                self.put("sched.decision_same_choices.n%s" % n, int(m.group(7) == "yes"))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    report = Report()
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            report.line(line.rstrip("\n"))
    # drm_sched under its default policy (FIFO) is "drm_sched" (its
    # medians, "NAME.median", too).
    for key, value in list(report.out.items()):
        if not key.startswith(("peer.", "prod.peer.")):
            continue
        if key.endswith(".drm_sched_fifo"):
            report.out[key[: -len("_fifo")]] = value
        elif key.endswith(".drm_sched_fifo.median"):
            report.out[key[: -len("_fifo.median")] + ".median"] = value
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(report.out, f, indent=1, sort_keys=True)
        f.write("\n")
    print("%d metrics" % len(report.out))


if __name__ == "__main__":
    main()
