#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Builds vgsched.ko out of tree against the cached guest kernel, and the
# statically linked guest programs (kselftests and the demo).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kdir=$(kernel_build_dir)
[ -f "$kdir/.built" ] || die "guest kernel not built: run 'make kernel' first"

step "building vgsched.ko"
make -s -C "$kdir" M="$TOP" modules

step "building guest programs"
out="$VGSCHED_OUT/guest-bin"
mkdir -p "$out"
CFLAGS=(-static -O2 -g -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare -D_GNU_SOURCE -pthread
	-I"$KSRC/tools/testing/selftests"
	-I"$kdir/usr/include" -I"$kdir/usr/include/drm"
	-I"$TOP/include/uapi/drm" -I"$TOP/selftests/vgsched")
for src in "$TOP"/selftests/vgsched/*_test.c "$TOP"/tools/vgsched-demo/vgsched_demo.c; do
	bin="$out/$(basename "${src%.c}")"
	gcc "${CFLAGS[@]}" -o "$bin" "$src"
done
