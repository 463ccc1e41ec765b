# SPDX-License-Identifier: GPL-2.0
# Shared settings of the vgsched scripts: where the cache lives, where the
# kernel source and build go, and the toolchain environment.
: "${VGSCHED_CACHE:=$HOME/.cache/vgsched}"
export VGSCHED_CACHE
# Per-checkout outputs (guest programs, initramfs, logs); a second checkout
# can set its own and still share the cached kernel build.
: "${VGSCHED_OUT:=$VGSCHED_CACHE}"
export VGSCHED_OUT
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KSRC="$VGSCHED_CACHE/linux-7.3"
export PATH="$HOME/.cargo/bin:$PATH"
export LIBCLANG_PATH=/usr/lib/llvm-19/lib
export RUST_LIB_SRC="$VGSCHED_CACHE/rust-src/usr/lib/rustlib/src/rust/library"

step() { printf '\033[1m==> %s\033[0m\n' "$*"; }
die() { printf 'error: %s\n' "$@" >&2; exit 1; }

# The guest kernel's config fragment: vgsched.config, plus profile.config
# (the function-graph tracer) when VGSCHED_PROFILE=1.
: "${VGSCHED_PROFILE:=0}"
kernel_config() {
	cat "$TOP/kernel/vgsched.config"
	if [ "$VGSCHED_PROFILE" = 1 ]; then
		cat "$TOP/kernel/profile.config"
	fi
}

# The guest kernel's cache key: everything its build depends on (source
# version, config fragment, the patches of kernel/patches/, rustc).
kernel_key() {
	{
		echo 7.3.4
		kernel_config
		cat "$TOP"/kernel/patches/*.patch 2>/dev/null || true
		rustc --version
	} | sha256sum | cut -c1-16
}

# The guest kernel's build directory.
kernel_build_dir() {
	echo "$VGSCHED_CACHE/kbuild-$(kernel_key)"
}

# The kernel source the build uses: the unpacked 7.3.4 tree with the patches
# of kernel/patches/ applied, as a hard-linked copy (patch(1) replaces the
# files it changes, so the shared tree stays pristine).
kernel_src_dir() {
	echo "$VGSCHED_CACHE/ksrc-$(kernel_key)"
}
