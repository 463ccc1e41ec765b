#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# clippy over the Rust code; exits 1 on any finding.
#
#   scripts/clippy.sh core     cargo clippy on the core crate (tests included),
#                              findings denied (-D warnings)
#   scripts/clippy.sh module   the module built by kbuild with the kernel's
#                              CLIPPY=1, which runs clippy-driver in place of
#                              rustc with the kernel's lint set (the top-level
#                              Makefile's rust_common_flags). The kernel turns
#                              warnings into errors only with CONFIG_WERROR or
#                              W=e, which the guest kernel does not set, so a
#                              finding surfaces as a `warning:` diagnostic in
#                              the build output; any diagnostic fails here,
#                              as does any other warning of the build
#                              (compiler, objtool, modpost): the module's
#                              build is to stay warning-free.
#
# The module is built from a copy of the sources under
# $VGSCHED_OUT/clippy-module (an external module's objects land next to its
# sources, and the bindgen output must sit next to uapi.rs), so the real
# build is not disturbed; the crate object is removed first so that clippy
# runs every time.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

case "${1:-}" in
core)
	cargo clippy --manifest-path "$TOP/rust/vgsched-core/Cargo.toml" --all-targets -- -D warnings
	;;
module)
	kdir=$(kernel_build_dir)
	[ -f "$kdir/.built" ] || die "guest kernel not built: run 'make kernel' first"
	copy="$VGSCHED_OUT/clippy-module"
	mkdir -p "$copy/rust/vgsched-core"
	rsync -a --delete --exclude-from="$TOP/.gitignore" \
		"$TOP/Kbuild" "$TOP/drivers" "$TOP/include" "$copy/" || die "copying the sources failed"
	rsync -a --delete --exclude-from="$TOP/.gitignore" \
		"$TOP/rust/vgsched-core/src" "$copy/rust/vgsched-core/" || die "copying the core crate failed"
	rm -f "$copy/drivers/gpu/drm/vgsched/vgsched_main.o"
	log=$(make -C "$kdir" M="$copy" CLIPPY=1 modules 2>&1)
	rc=$?
	printf '%s\n' "$log"
	# Rust diagnostics start a line with their level; the closing
	# "N warnings emitted" lines are not findings of their own.
	findings=$(printf '%s\n' "$log" | grep -E '^(warning|error)(\[[A-Za-z0-9_]+\])?: ' |
		grep -Ev '^warning: [0-9]+ warnings? emitted' || true)
	n=$(printf '%s' "$findings" | grep -c . || true)
	other=$(printf '%s\n' "$log" | grep -E ': (warning|WARNING): |^WARNING: ' | grep -Ev '^(warning|error)' || true)
	m=$(printf '%s' "$other" | grep -c . || true)
	echo "clippy (module, CLIPPY=1): $n clippy/rustc findings, $m other build warnings, build exit status $rc"
	[ "$n" -eq 0 ] && [ "$m" -eq 0 ] && [ "$rc" -eq 0 ]
	;;
*)
	die "usage: $0 core|module"
	;;
esac
