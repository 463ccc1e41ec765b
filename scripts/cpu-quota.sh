#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
#   scripts/cpu-quota.sh PCT CMD [ARG...]
#
# Runs CMD under a CPU quota of PCT percent of one CPU (above 100 for more
# than one; make bench passes 2 x VGSCHED_BENCH_CPU_PCT for the guest's
# two vCPUs) in a period of 10 ms, so a throttled process never stands
# still for more than 10 ms at a time. It makes a cgroup of its own,
# vgsched-bench.PID, with cgroup v2's cpu.max where /sys/fs/cgroup is the
# unified hierarchy and otherwise v1's cpu.cfs_period_us and
# cpu.cfs_quota_us under /sys/fs/cgroup/cpu, moves only the subshell that
# becomes CMD into it (CMD's children follow), and on the way out (CMD's
# end, or INT, TERM or HUP, passed on to CMD first) moves anything left in
# it back to the cgroup the script started in, removes it, and gives the
# root its cpu controller setting back if it had to enable it. (A SIGKILL
# of the script leaves the cgroup behind: rmdir it by hand.) It fails, before
# running anything, where it cannot: not root, no cpu controller, a quota
# under the kernel's least (1 ms a period). Exits with CMD's status.
# Documentation/benchmarks.rst, "A slow host on purpose".
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -ge 2 ] || die "usage: cpu-quota.sh PCT CMD [ARG...]"
pct=$1
shift
case "$pct" in '' | *[!0-9]*) die "cpu-quota.sh: PCT must be a whole number, not '$pct'" ;; esac
period=10000
quota=$((pct * period / 100))
[ "$quota" -ge 1000 ] || die "a quota of $pct % of one CPU is $quota us in a 10 ms period, under the kernel's least (1000 us): ask for 10 % or more"
[ "$(id -u)" = 0 ] || die "a CPU quota needs a cgroup of its own, which only root can make: run as root, or leave VGSCHED_BENCH_CPU_PCT unset"

name="vgsched-bench.$$"
enabled=0
if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then
	root=/sys/fs/cgroup
	grep -qw cpu "$root/cgroup.controllers" ||
		die "cgroup v2 at $root has no cpu controller (cgroup.controllers: $(cat "$root/cgroup.controllers"))"
	if ! grep -qw cpu "$root/cgroup.subtree_control"; then
		# Children that existed before may use it once it is on; it is
		# turned off again at the end only if no cgroup came or went.
		before=$(find "$root" -mindepth 1 -maxdepth 1 -type d | sort)
		echo +cpu > "$root/cgroup.subtree_control" 2>/dev/null ||
			die "cannot enable the cpu controller for the children of $root (cgroup.subtree_control)"
		enabled=1
	fi
	kind="cgroup v2, cpu.max \"$quota $period\""
elif [ -e /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
	root=/sys/fs/cgroup/cpu
	kind="cgroup v1, cpu.cfs_period_us $period, cpu.cfs_quota_us $quota"
else
	die "no cpu controller: neither cgroup v2 (cpu.max) at /sys/fs/cgroup nor cgroup v1 (cpu.cfs_quota_us) at /sys/fs/cgroup/cpu"
fi
dir="$root/$name"
# The cgroup this script runs in, in that hierarchy: where leftovers go back.
if [ "$root" = /sys/fs/cgroup ]; then
	home=$(sed -n 's/^0:://p' /proc/self/cgroup)
else
	home=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ { print $3 }' /proc/self/cgroup)
fi
home="$root${home%/}"
[ -e "$home/cgroup.procs" ] || home=$root
child=

cleanup() {
	if [ -d "$dir" ]; then
		# What is still in it (CMD killed mid-run) goes back.
		while read -r pid; do
			echo "$pid" > "$home/cgroup.procs" 2>/dev/null || true
		done < "$dir/cgroup.procs"
		rmdir "$dir" 2>/dev/null || echo "warning: could not remove $dir" >&2
	fi
	if [ "$enabled" = 1 ] &&
		[ "$(find "$root" -mindepth 1 -maxdepth 1 -type d | sort)" = "$before" ]; then
		echo -cpu > "$root/cgroup.subtree_control" 2>/dev/null ||
			echo "warning: could not turn the cpu controller of $root's children off again" >&2
	fi
}
# stop SIG STATUS: passes SIG on to CMD, waits for it, exits with STATUS.
stop() {
	if [ -n "$child" ]; then
		kill -"$1" "$child" 2>/dev/null || true
		wait "$child" 2>/dev/null || true
	fi
	exit "$2"
}
trap cleanup EXIT
trap 'stop INT 130' INT
trap 'stop TERM 143' TERM
trap 'stop HUP 129' HUP

mkdir "$dir" || die "cannot make the cgroup $dir"
if [ "$kind" != "${kind#cgroup v2}" ]; then
	echo "$quota $period" > "$dir/cpu.max" || die "cannot write $dir/cpu.max"
else
	# The period first: a quota is checked against the period in force.
	echo "$period" > "$dir/cpu.cfs_period_us" && echo "$quota" > "$dir/cpu.cfs_quota_us" ||
		die "cannot set the quota in $dir"
fi
step "CPU quota: $pct % of one CPU ($kind) in $dir"
rc=0
# In the background and waited for, so that a signal to the script is
# handled at once (bash runs a trap only after its foreground child ends).
(
	# (set -e does not hold left of ||: nothing may run unthrottled.)
	echo "$BASHPID" > "$dir/cgroup.procs" || die "cannot move into $dir"
	exec "$@"
) <&0 &
child=$!
wait "$child" || rc=$?
child=
exit $rc
