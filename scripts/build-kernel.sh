#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds the guest kernel once into the cache. The build directory is keyed
# by the kernel source version, the config fragment's content and the rustc
# version, so it is rebuilt only when one of them changes.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -f "$KSRC/.unpacked" ] || die "kernel source missing: run 'make setup' first"
kdir=$(kernel_build_dir)
if [ -f "$kdir/.built" ]; then
	step "guest kernel up to date: $kdir"
	exit 0
fi
src=$(kernel_src_dir)
if ! [ -f "$src/.patched" ]; then
	step "applying kernel/patches/ to a copy of the source: $src"
	rm -rf "$src"
	cp -al "$KSRC" "$src"
	for p in "$TOP"/kernel/patches/*.patch; do
		[ -e "$p" ] || continue
		echo "    $(basename "$p")"
		patch -d "$src" -p1 -s --no-backup-if-mismatch -F0 <"$p" ||
			die "kernel patch $(basename "$p") does not apply to 7.3.4"
	done
	touch "$src/.patched"
fi
step "building guest kernel into $kdir (takes several minutes once)"
rm -rf "$kdir" && mkdir -p "$kdir"
jobs=$(nproc)
make -s -C "$src" O="$kdir" LLVM= tinyconfig
kernel_config >"$kdir/vgsched.fragment"
"$src/scripts/kconfig/merge_config.sh" -m -O "$kdir" "$kdir/.config" "$kdir/vgsched.fragment" >/dev/null
make -s -C "$src" O="$kdir" olddefconfig
make -s -C "$src" O="$kdir" rustavailable
# Every line of the fragment must have survived olddefconfig; a silently
# dropped option would give a guest that lacks what the tests assume.
missing=0
while IFS= read -r line; do
	case "$line" in CONFIG_*=*) ;; *) continue ;; esac
	opt=${line%%=*} val=${line#*=}
	if [ "$val" = n ]; then
		grep -q "^$opt=" "$kdir/.config" && { echo "config: $opt should be off" >&2; missing=1; }
	else
		grep -qx "$line" "$kdir/.config" || { echo "config: $line did not stick" >&2; missing=1; }
	fi
done <"$kdir/vgsched.fragment"
[ $missing = 0 ] || die "the kernel config fragment does not apply cleanly (see above)"
make -s -C "$src" O="$kdir" -j"$jobs" bzImage modules
make -s -C "$src" O="$kdir" headers_install
touch "$kdir/.built"
step "guest kernel built: $kdir/arch/x86/boot/bzImage"
