#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: sets up and builds what is missing (as make demo does), with
# the module's in-kernel benchmark built in (VGSCHED_BENCH=1), runs the host
# benchmark (rust/vgsched-bench, release build), boots the guest in bench
# mode (the engine-lock workloads of tools/vgsched-bench-guest, each on a
# freshly loaded module, then the debugfs *_bench files), and writes both
# reports to $VGSCHED_OUT/logs/bench.txt and every number, under stable
# dotted names, to $VGSCHED_OUT/logs/bench.json (scripts/bench_json.py).
# Numbers are printed, never judged: nothing here fails on a slow result.
# See Documentation/benchmarks.rst. Extra arguments go to the host
# benchmark (--quick divides its loop counts by ten).
#
# The guest bench runs twice: on the guest kernel of make check (lockdep,
# kmemleak, KFENCE, UBSAN...), then on the production kernel
# (kernel/prod.config, VGSCHED_PROD=1, built here and only here, once into
# the cache), whose keys carry the prefix "prod." in both reports
# (Documentation/benchmarks.rst, "The production kernel").
#
# VGSCHED_BENCH_CPU_PCT=N (5 to 100) runs the guest slowed on purpose,
# under a cgroup CPU quota of N % of one CPU per vCPU (scripts/cpu-quota.sh;
# root only); the report and bench.json say so (bench.cpu_pct, 100 when
# unset). The guest's timeout grows in proportion unless
# VGSCHED_GUEST_TIMEOUT is set.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

cpu_pct=${VGSCHED_BENCH_CPU_PCT:-}
if [ -n "$cpu_pct" ]; then
	case "$cpu_pct" in *[!0-9]* | 0*) die "VGSCHED_BENCH_CPU_PCT must be a whole number from 5 to 100, not '$cpu_pct'" ;; esac
	[ "$cpu_pct" -ge 5 ] && [ "$cpu_pct" -le 100 ] ||
		die "VGSCHED_BENCH_CPU_PCT must be from 5 to 100 (% of one CPU per vCPU), not $cpu_pct"
	[ "$(id -u)" = 0 ] || die "VGSCHED_BENCH_CPU_PCT needs root (a cgroup of its own): run as root or leave it unset"
	: "${VGSCHED_GUEST_TIMEOUT:=$((900 * 100 / cpu_pct))}"
	export VGSCHED_GUEST_TIMEOUT
fi

t0=$SECONDS
logs="$VGSCHED_OUT/logs"
report="$logs/bench.txt"
json="$logs/bench.json"
mkdir -p "$logs"

"$TOP/scripts/setup.sh"
"$TOP/scripts/build-kernel.sh"
VGSCHED_BENCH=1 "$TOP/scripts/build-module.sh"
"$TOP/scripts/build-initramfs.sh"
# The production kernel (several minutes the first time), and the modules
# against it, built from a copy of their sources (scripts/lib.sh).
VGSCHED_PROD=1 "$TOP/scripts/build-kernel.sh"
VGSCHED_PROD=1 VGSCHED_BENCH=1 "$TOP/scripts/build-module.sh"
VGSCHED_PROD=1 "$TOP/scripts/build-initramfs.sh"

step "host benchmark (cargo run --release)"
cargo build --release --quiet --manifest-path "$TOP/rust/vgsched-bench/Cargo.toml"
{
	echo "vgsched benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(rustc --version)"
	echo "commit $(git -C "$TOP" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	if [ -n "$cpu_pct" ]; then
		echo "guest under a CPU quota: $cpu_pct % of one CPU per vCPU (cgroup, 10 ms period)"
	else
		echo "guest without a CPU quota"
	fi
	echo "bench.cpu_pct = ${cpu_pct:-100}"
	echo
	echo "=== host ==="
	echo
} > "$report"
cargo run --release --quiet --manifest-path "$TOP/rust/vgsched-bench/Cargo.toml" -- "$@" | tee -a "$report"

accel=TCG
[ "${VGSCHED_KVM:-0}" = 1 ] && accel=KVM
# guest_bench PROD TITLE: boots the guest in bench mode (VGSCHED_PROD=PROD:
# 0 the guest kernel of make check, 1 the production kernel), under the
# CPU quota if one is asked for, and appends what it printed to the report
# under the heading TITLE; on the production kernel every key gets the
# prefix "prod.".
guest_bench() {
	local prod=$1 title=$2 variant=
	[ "$prod" = 1 ] && variant=prod-
	if [ -n "$cpu_pct" ]; then
		# -smp 2: two vCPUs' worth of N %.
		VGSCHED_PROD=$prod "$TOP/scripts/cpu-quota.sh" $((2 * cpu_pct)) "$TOP/scripts/run-guest.sh" bench
	else
		VGSCHED_PROD=$prod "$TOP/scripts/run-guest.sh" bench
	fi
	local results="$logs/${variant}bench-results.log"
	step "what the guest printed ($title)"
	printf '\n=== %s (QEMU %s, -smp 2) ===\n\n' "$title" "$accel" >> "$report"
	# The bench sections go to the report; a failed insmod, rmmod or read
	# fails, and so does a refused VGSCHED_TESTS (the failing step's output
	# says why).
	awk -v prefix="${variant:+prod.}" '{sub(/\r$/, "")} /^@@begin bench/{on=1; next} /^@@end bench/{on=0; if ($NF != "rc=0") bad=1; next}
	     on{if (prefix != "" && $0 ~ /^[a-z][a-z0-9_]*\.[a-z0-9_.]+ = /) $0 = prefix $0; print}
	     /^@@begin cmd/{cmd=""; incmd=1; next}
	     /^@@end cmd/ {incmd=0; if ($NF != "rc=0") {bad=1; printf "%s", cmd; print "  " $0}; next}
	     incmd{cmd=cmd "  " $0 "\n"}
	     END{exit bad}' "$results" | tee -a "$report" ||
		die "the guest benchmark failed (see $results and $logs/${variant}bench-console.log)"
}
guest_bench 0 "guest kernel"
guest_bench 1 "guest kernel, production build: keys prod.*"
# Host and guest each say so once.
[ "$(grep -c 'all finders agreed' "$report")" -ge 2 ] || die "the finders disagreed (see $report)"
step "machine-readable report"
python3 "$TOP/scripts/bench_json.py" "$report" "$json"
for key in bench.cpu_pct bench.host_ref_ns bench.guest_ref_ns prod.bench.guest_ref_ns \
	engine.lock_hold_max_us.short engine.lock_hold_max_us.long; do
	grep -q "\"$key\"" "$json" || die "$key missing from $json"
done
step "the goals, side by side"
python3 "$TOP/scripts/bench_goals.py" "$json" | tee -a "$report"
step "reports written to $report and $json ($((SECONDS - t0)) s)"
