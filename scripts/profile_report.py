#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# Summarises the guest's profile mode (scripts/run-guest.sh profile, a kernel
# built with VGSCHED_PROFILE=1): function-graph traces of the SUBMIT ioctl,
# through drm_sched (the peer module's ioctl) and through vgsched
# (drm_ioctl), framed "@@begin profile NAME" ... "@@end profile NAME" in the
# results log.
#
#   profile_report.py RESULTS
#
# For each, over the submissions the ring kept whole: the mean time of one,
# the C functions its handler calls (Rust functions have no mcount entries,
# so a Rust handler's own time is what its C calls leave), and how many
# lock acquisitions and allocations one makes anywhere below it. Times are
# the tracer's, under TCG and with the tracer's own cost: for comparing the
# two paths and their parts, not as absolute figures.
import re
import sys
from collections import defaultdict

LINE = re.compile(r"^\s*(\d+)\)\s+(?:[-+!#*@$]\s+)?(?:([\d.]+) us\s+)?\|\s?(.*)$")
LOCKS = re.compile(r"^(mutex_lock|_raw_spin_lock|_raw_read_lock|_raw_write_lock|down_read|down_write"
                   r"|ww_mutex_lock|__ww_mutex_lock|rt_mutex_lock|__mutex_lock)")
ALLOCS = re.compile(r"^(__kmalloc|kmalloc_node|kmalloc_trace|kmem_cache_alloc|krealloc|__kvmalloc|kvmalloc|vmalloc)")

# The ioctl function traced, and a function only a submission calls below
# it (the other ioctls of a run are left out).
DRIVERS = {
    "drm_sched": ("peer_ioctl", "drm_sched_job_init", "peer_ioctl"),
    "drm_sched_resv": ("peer_ioctl", "drm_sched_job_init", "peer_ioctl"),
    "vgsched": ("drm_ioctl", "vgsched_resv_lock", "drm_ioctl_kernel"),
}


def fname(text):
    """A function's name in a trace line, without "()" and its module."""
    return re.sub(r"\s*\[[^\]]+\]$", "", text.strip().rstrip("{;").strip().replace("()", "")).strip()


class Call:
    def __init__(self, name):
        self.name = name
        self.us = 0.0
        self.children = []

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


def calls(lines, root):
    """The complete calls of `root` in a function-graph trace, per CPU."""
    stacks = defaultdict(list)
    for line in lines:
        m = LINE.match(line)
        if not m:
            continue
        cpu, us, body = m.group(1), m.group(2), m.group(3).strip()
        stack = stacks[cpu]
        if body.endswith("{"):
            name = fname(body)
            call = Call(name)
            if stack:
                stack[-1].children.append(call)
            elif name != root:
                continue
            stack.append(call)
        elif body.startswith("}"):
            if not stack:
                continue
            call = stack.pop()
            call.us = float(us or 0)
            if not stack:
                yield call
        elif body.endswith(";") and stack:
            call = Call(fname(body))
            call.us = float(us or 0)
            stack[-1].children.append(call)


def outermost(call, pattern):
    """Calls below `call` whose name matches `pattern`, not counting those
    inside another (mutex_lock_nested calls __mutex_lock)."""
    if pattern.match(call.name):
        return 1
    return sum(outermost(c, pattern) for c in call.children)


def summary(name, lines):
    root, marker, handler = DRIVERS[name]
    subs = [c for c in calls(lines, root) if any(d.name == marker for d in c.walk())]
    out = []
    if not subs:
        return ["%s: no whole submission in the trace" % name]
    n = len(subs)
    total = sum(c.us for c in subs) / n
    per = defaultdict(lambda: [0, 0.0])
    inner = defaultdict(lambda: defaultdict(float))
    locks = allocs = 0
    for c in subs:
        for h in (d for d in c.walk() if d.name == handler):
            for ch in h.children:
                per[ch.name][0] += 1
                per[ch.name][1] += ch.us
                for g in ch.children:
                    inner[ch.name][g.name] += g.us
        locks += outermost(c, LOCKS)
        allocs += outermost(c, ALLOCS)
    out.append("%s: %d submissions, %.1f us each (traced); per submission: %.1f lock "
               "acquisitions, %.1f allocations" % (name, n, total, locks / n, allocs / n))
    out.append("  %-40s %8s %10s" % ("C calls of %s" % handler, "calls", "us"))
    inside = 0.0
    for fn, (k, us) in sorted(per.items(), key=lambda kv: -kv[1][1]):
        inside += us / n
        out.append("  %-40s %8.2f %10.1f" % (fn, k / n, us / n))
        # What the larger calls spend their time in.
        if us / n >= total / 20:
            for g, gus in sorted(inner[fn].items(), key=lambda kv: -kv[1])[:4]:
                out.append("    %-38s %8s %10.1f" % (g, "", gus / n))
    out.append("  %-40s %8s %10.1f" % ("(the rest of %s)" % root, "", total - inside))
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: profile_report.py RESULTS")
    sections, cur = {}, None
    with open(sys.argv[1], errors="replace") as f:
        for line in f:
            if line.startswith("@@begin profile "):
                cur = line.split()[2]
                sections[cur] = []
            elif line.startswith("@@end"):
                cur = None
            elif cur:
                sections[cur].append(line)
    for name in DRIVERS:
        print("\n".join(summary(name, sections.get(name, []))))
        print()


if __name__ == "__main__":
    main()
