#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The README's test command: sets up what is missing, runs the host tests of
# the core crate, builds kernel and module, boots the guest in test mode
# (kselftests, KUnit, kmemleak), and prints one summary line that sums all
# layers. Exits non-zero on any failure.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

logs="$VGSCHED_OUT/logs"
mkdir -p "$logs"
timed() { # label command...
	local label=$1 t0=$SECONDS rc=0
	shift
	"$@" || rc=$?
	printf '    [%s: %ds]\n' "$label" $((SECONDS - t0))
	return $rc
}
stage() { local name=$1; shift; timed "$name" "$@" || die "stage '$name' failed"; }

stage setup "$TOP/scripts/setup.sh"
step "host tests (cargo test)"
host_tests() {
	cargo test --manifest-path "$TOP/rust/vgsched-core/Cargo.toml" -- --test-threads=2 \
		>"$logs/host-tests.log" 2>&1
}
timed host-tests host_tests || true
grep -E '^test result|FAILED|panicked' "$logs/host-tests.log"
stage kernel "$TOP/scripts/build-kernel.sh"
stage module "$TOP/scripts/build-module.sh"
stage initramfs "$TOP/scripts/build-initramfs.sh"
timed guest "$TOP/scripts/run-guest.sh" test || true

step "results"
python3 "$TOP/scripts/report.py" "$logs/host-tests.log" \
	"$logs/test-results.log" "$logs/test-console.log"
