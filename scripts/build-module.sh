#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Builds vgsched.ko out of tree against the cached guest kernel, and the
# statically linked guest programs (kselftests, the demo and the guest part
# of make bench). VGSCHED_BENCH=1 builds the module with its in-kernel
# benchmark (debugfs finder_bench), as make bench does; without it (make
# check, make demo) the module has none. With VGSCHED_PROD=1 the modules
# are built against the production kernel (make bench), from a copy of
# their sources under $VGSCHED_OUT/prod-module (module_tree in lib.sh), so
# the checkout's own module, built against the guest kernel of make check,
# is left as it is.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kdir=$(kernel_build_dir)
[ -f "$kdir/.built" ] || die "guest kernel not built: run 'make kernel' first"

tree=$(module_tree)
if [ "$tree" != "$TOP" ]; then
	# The sources only (.gitignore keeps the objects of the checkout out,
	# and those of the copy in place: later builds are incremental).
	mkdir -p "$tree/rust/vgsched-core" "$tree/tools"
	rsync -a --delete --exclude-from="$TOP/.gitignore" \
		"$TOP/Kbuild" "$TOP/drivers" "$TOP/include" "$tree/" || die "copying the module's sources failed"
	rsync -a --delete --exclude-from="$TOP/.gitignore" \
		"$TOP/rust/vgsched-core/src" "$tree/rust/vgsched-core/" || die "copying the core crate failed"
	rsync -a --delete --exclude-from="$TOP/.gitignore" \
		"$TOP/tools/drm-sched-peer" "$tree/tools/" || die "copying the drm_sched peer failed"
fi
bench=${VGSCHED_BENCH:-0}
step "building vgsched.ko (and the bench-only vgsched_peer.ko)$([ "$bench" = 1 ] && echo ' (with the in-kernel benchmark)')$([ "$VGSCHED_PROD" = 1 ] && echo " against the production kernel, in $tree")"
make -s -C "$kdir" M="$tree" VGSCHED_BENCH="$bench" modules
# The bench-only drm_sched peer, against gpu-sched.ko's exported symbols.
make -s -C "$kdir" M="$tree/tools/drm-sched-peer" modules

step "building guest programs"
out="$VGSCHED_OUT/guest-bin"
mkdir -p "$out"
CFLAGS=(-static -O2 -g -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare -D_GNU_SOURCE -pthread
	-I"$KSRC/tools/testing/selftests"
	-I"$kdir/usr/include" -I"$kdir/usr/include/drm"
	-I"$TOP/include/uapi/drm" -I"$TOP/selftests/vgsched")
for src in "$TOP"/selftests/vgsched/*_test.c "$TOP"/tools/vgsched-demo/vgsched_demo.c \
	"$TOP"/tools/vgsched-bench-guest/vgsched_bench_guest.c \
	"$TOP"/tools/vgsched-bench-guest/vgsched_peer_bench.c; do
	bin="$out/$(basename "${src%.c}")"
	gcc "${CFLAGS[@]}" -o "$bin" "$src"
done
