#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The README's test command: sets up what is missing, runs the host tests of
# the core crate, builds kernel and module, boots the guest in test mode
# (kselftests, KUnit, kmemleak), and prints one summary line that sums all
# layers. The gates (Sphinx build of Documentation/ with warnings as errors,
# rustfmt with the kernel's settings, clippy on the core crate and on the
# module with the kernel's CLIPPY=1) count as one test each; their output is
# in $VGSCHED_OUT/logs/gate-NAME.log; the file-map gate checks that
# design.rst names every driver source file. Exits non-zero on any failure.
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
gates="$logs/gates.log"
: >"$gates"
gate() { # name command...: one result line in gates.log, the output in gate-NAME.log
	local name=$1 t0=$SECONDS rc=0
	shift
	"$@" >"$logs/gate-$name.log" 2>&1 || rc=$?
	printf '    [%s: %ds, %s]\n' "$name" $((SECONDS - t0)) "$( ((rc)) && echo FAILED || echo ok)"
	printf 'gate %s rc=%d log=%s\n' "$name" "$rc" "$logs/gate-$name.log" >>"$gates"
}

stage setup "$TOP/scripts/setup.sh"
step "gates: documentation, formatting, clippy"
gate docs "$TOP/scripts/docs.sh"
gate file-map "$TOP/scripts/file-map.sh"
gate rustfmt "$TOP/scripts/rustfmt.sh"
gate clippy-core "$TOP/scripts/clippy.sh" core
step "host tests (cargo test)"
host_tests() {
	cargo test --manifest-path "$TOP/rust/vgsched-core/Cargo.toml" -- --test-threads=2 \
		>"$logs/host-tests.log" 2>&1
}
timed host-tests host_tests || true
grep -E '^test result|FAILED|panicked' "$logs/host-tests.log"
stage kernel "$TOP/scripts/build-kernel.sh"
gate clippy-module "$TOP/scripts/clippy.sh" module
stage module "$TOP/scripts/build-module.sh"
stage initramfs "$TOP/scripts/build-initramfs.sh"
timed guest "$TOP/scripts/run-guest.sh" test || true

step "results"
python3 "$TOP/scripts/report.py" "$logs/host-tests.log" \
	"$logs/test-results.log" "$logs/test-console.log" "$gates"
