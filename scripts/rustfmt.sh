#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# rustfmt with the kernel's settings (.rustfmt.toml, a copy of the Linux
# tree's) over the module (drivers/gpu/drm/vgsched) and the core and bench
# crates. The module is built by kbuild, not cargo, so rustfmt runs on the
# files directly, as the kernel's `make rustfmtcheck` does: on the crate
# roots (rustfmt follows `mod` declarations, the module's #[path] into the
# core crate included) and on any .rs file no root reaches. The bindgen
# output is generated, not ours, and is left out.
#
#   scripts/rustfmt.sh           check: prints every difference and one
#                                summary line, exits 1 if there is any
#   scripts/rustfmt.sh --write   formats every file in place
set -uo pipefail
. "$(dirname "$0")/lib.sh"

mode=(--check)
[ "${1:-}" = --write ] && mode=()
cd "$TOP" || exit 1
fmt=(rustfmt --color never --edition 2021 --config-path "$TOP/.rustfmt.toml")
roots=(drivers/gpu/drm/vgsched/vgsched_main.rs rust/vgsched-core/src/lib.rs rust/vgsched-bench/src/main.rs)
all() {
	find drivers/gpu/drm/vgsched rust/vgsched-core/src rust/vgsched-bench/src -name '*.rs' \
		! -name vgsched_uapi_generated.rs -exec realpath {} + | sort -u
}
# Files the roots reach, as rustfmt itself reports them.
reached=$("${fmt[@]}" --check -v "${roots[@]}" 2>/dev/null | sed -n 's/^Formatting //p' |
	xargs -r realpath | sort -u)
mapfile -t extra < <(comm -23 <(all) <(printf '%s\n' "$reached"))
out=$("${fmt[@]}" "${mode[@]}" "${roots[@]}" "${extra[@]}" 2>&1)
rc=$?
[ -z "$out" ] || printf '%s\n' "$out"
if ((${#mode[@]})); then
	files=$(printf '%s\n' "$out" | sed -n 's/^Diff in \(.*\):[0-9]*:$/\1/p' | xargs -r realpath | sort -u)
	hunks=$(printf '%s\n' "$out" | sed -n 's/^Diff in \(.*\):[0-9]*:$/\1/p' | wc -l)
	nfiles=$(printf '%s' "$files" | grep -c . || true)
	[ "$nfiles" -eq 0 ] || printf '  differs: %s\n' ${files//$TOP\//}
	echo "rustfmt: $(all | wc -l) files checked, $nfiles differ ($hunks differences)"
	[ "$nfiles" -eq 0 ] || echo "format them with: scripts/rustfmt.sh --write"
fi
exit $rc
