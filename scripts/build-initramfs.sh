#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Packs the guest's initramfs: busybox, the init script, vgsched.ko and the
# guest programs. Cheap, so it is rebuilt every run. The kernel's own
# gen_init_cpio writes it, so device nodes need no root privileges. With
# VGSCHED_PROD=1 it packs the production kernel's modules (make bench's
# second guest) into prod-initramfs.cpio.gz.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kdir=$(kernel_build_dir)
tree=$(module_tree)
bin="$VGSCHED_OUT/guest-bin"
spec="$VGSCHED_OUT/$(kernel_variant)initramfs.spec"
{
	printf '%s\n' \
		'dir /dev 755 0 0' 'nod /dev/console 600 0 0 c 5 1' \
		'dir /bin 755 0 0' 'dir /proc 755 0 0' 'dir /sys 755 0 0' \
		'dir /tmp 1777 0 0' 'dir /lib 755 0 0' 'dir /tests 755 0 0' \
		'slink /bin/sh busybox 777 0 0'
	echo "file /bin/busybox /bin/busybox 755 0 0"
	echo "file /init $TOP/scripts/guest/init 755 0 0"
	echo "file /lib/vgsched.ko $tree/drivers/gpu/drm/vgsched/vgsched.ko 644 0 0"
	# drm_sched and its KUnit suites, built with the guest kernel.
	echo "file /lib/gpu-sched.ko $kdir/drivers/gpu/drm/scheduler/gpu-sched.ko 644 0 0"
	echo "file /lib/drm-sched-tests.ko $kdir/drivers/gpu/drm/scheduler/tests/drm-sched-tests.ko 644 0 0"
	echo "file /bin/vgsched-demo $bin/vgsched_demo 755 0 0"
	echo "file /bin/vgsched-bench-guest $bin/vgsched_bench_guest 755 0 0"
	echo "file /bin/vgsched-peer-bench $bin/vgsched_peer_bench 755 0 0"
	echo "file /lib/vgsched_peer.ko $tree/tools/drm-sched-peer/vgsched_peer.ko 644 0 0"
	for t in "$bin"/*_test; do
		echo "file /tests/$(basename "$t") $t 755 0 0"
	done
} > "$spec"
"$kdir/usr/gen_init_cpio" "$spec" | gzip -1 > "$VGSCHED_OUT/$(kernel_variant)initramfs.cpio.gz"
