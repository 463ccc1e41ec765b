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
set -euo pipefail
. "$(dirname "$0")/lib.sh"

t0=$SECONDS
logs="$VGSCHED_OUT/logs"
report="$logs/bench.txt"
json="$logs/bench.json"
mkdir -p "$logs"

"$TOP/scripts/setup.sh"
"$TOP/scripts/build-kernel.sh"
VGSCHED_BENCH=1 "$TOP/scripts/build-module.sh"
"$TOP/scripts/build-initramfs.sh"

step "host benchmark (cargo run --release)"
cargo build --release --quiet --manifest-path "$TOP/rust/vgsched-bench/Cargo.toml"
{
	echo "vgsched benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(rustc --version)"
	echo "commit $(git -C "$TOP" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo
	echo "=== host ==="
	echo
} > "$report"
cargo run --release --quiet --manifest-path "$TOP/rust/vgsched-bench/Cargo.toml" -- "$@" | tee -a "$report"

"$TOP/scripts/run-guest.sh" bench
results="$logs/bench-results.log"
step "what the guest printed"
accel=TCG
[ "${VGSCHED_KVM:-0}" = 1 ] && accel=KVM
printf '\n=== guest kernel (QEMU %s, -smp 2) ===\n\n' "$accel" >> "$report"
# The bench sections go to the report; a failed insmod, rmmod or read
# fails, and so does a refused VGSCHED_TESTS (the failing step's output
# says why).
awk '{sub(/\r$/, "")} /^@@begin bench/{on=1; next} /^@@end bench/{on=0; if ($NF != "rc=0") bad=1; next}
     on{print}
     /^@@begin cmd/{cmd=""; incmd=1; next}
     /^@@end cmd/ {incmd=0; if ($NF != "rc=0") {bad=1; printf "%s", cmd; print "  " $0}; next}
     incmd{cmd=cmd "  " $0 "\n"}
     END{exit bad}' "$results" | tee -a "$report" ||
	die "the guest benchmark failed (see $results and $logs/bench-console.log)"
# Host and guest each say so once.
[ "$(grep -c 'all finders agreed' "$report")" -ge 2 ] || die "the finders disagreed (see $report)"
step "machine-readable report"
python3 "$TOP/scripts/bench_json.py" "$report" "$json"
for key in engine.lock_hold_max_us.short engine.lock_hold_max_us.long; do
	grep -q "\"$key\"" "$json" || die "$key missing from $json"
done
step "reports written to $report and $json ($((SECONDS - t0)) s)"
