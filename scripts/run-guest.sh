#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boots the guest kernel with the initramfs in MODE (demo, test, bench, or
# profile with VGSCHED_PROFILE=1) under
# QEMU. TCG by default; VGSCHED_KVM=1 asks for KVM (it hangs on some nested
# hosts); VGSCHED_APPEND adds to the kernel command line. The kernel console goes to $VGSCHED_OUT/logs/MODE-console.log,
# framed program output to $VGSCHED_OUT/logs/MODE-results.log. With
# VGSCHED_PROD=1 it boots the production kernel (make bench's second guest;
# logs prod-MODE-*.log), which refuses test mode: make check's guest is
# the debug kernel, whose checks the tests rely on.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mode=${1:?usage: run-guest.sh demo|test|bench|profile}
[ "$mode" != test ] || [ "$VGSCHED_PROD" != 1 ] ||
	die "the production kernel (VGSCHED_PROD=1) has no lockdep, kmemleak, KFENCE or UBSAN: test mode runs on the guest kernel of make check"
kdir=$(kernel_build_dir)
logs="$VGSCHED_OUT/logs"
mkdir -p "$logs"
variant=$(kernel_variant)
console="$logs/$variant$mode-console.log" results="$logs/$variant$mode-results.log"
rm -f "$console" "$results"

accel=(-accel tcg -cpu max)
[ "${VGSCHED_KVM:-0}" = 1 ] && accel=(-accel kvm -cpu host)
timeout_s=${VGSCHED_GUEST_TIMEOUT:-900}

step "booting guest ($mode, ${accel[1]}${variant:+, production kernel}), console log: $console"
rc=0
timeout --foreground -k 10 "$timeout_s" qemu-system-x86_64 "${accel[@]}" -smp 2 -m 1024 \
	-kernel "$kdir/arch/x86/boot/bzImage" -initrd "$VGSCHED_OUT/${variant}initramfs.cpio.gz" \
	-append "console=ttyS0 panic=-1 vgsched_run=$mode${VGSCHED_TESTS:+ vgsched_tests=$VGSCHED_TESTS}${VGSCHED_APPEND:+ $VGSCHED_APPEND}" \
	-display none -monitor none -no-reboot \
	-serial "file:$console" -serial "file:$results" || rc=$?
if [ $rc = 124 ]; then
	echo "guest timed out after ${timeout_s}s (see $console)" >&2
	exit 1
fi
[ $rc = 0 ] || die "qemu exited with $rc"
grep -q '^@@done' "$results" 2>/dev/null || die "guest did not finish (see $console)"
