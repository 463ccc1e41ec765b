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

# The guest kernel's config fragment: vgsched.config; with VGSCHED_PROD=1
# (make bench's production kernel, the debugging off) prod.config after it,
# taking the place of vgsched.config's lines for the options it sets and
# for their sub-options (names that extend one of them by "_", as
# CONFIG_DEBUG_KMEMLEAK_MEM_POOL_SIZE extends CONFIG_DEBUG_KMEMLEAK), so
# the fragment never sets one option twice and each of its lines can be
# checked (build-kernel.sh); profile.config (the function-graph tracer)
# last when VGSCHED_PROFILE=1.
: "${VGSCHED_PROFILE:=0}"
: "${VGSCHED_PROD:=0}"
kernel_config() {
	if [ "$VGSCHED_PROD" = 1 ]; then
		awk 'NR == FNR {
			if (match($0, /^CONFIG_[A-Za-z0-9_]+=/))
				set[substr($0, 1, RLENGTH - 1)] = 1
			next
		}
		match($0, /^CONFIG_[A-Za-z0-9_]+=/) {
			opt = substr($0, 1, RLENGTH - 1)
			for (o in set)
				if (opt == o || index(opt, o "_") == 1)
					next
		}
		{ print }' "$TOP/kernel/prod.config" "$TOP/kernel/vgsched.config"
		cat "$TOP/kernel/prod.config"
	else
		cat "$TOP/kernel/vgsched.config"
	fi
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

# Where the modules (vgsched.ko, vgsched_peer.ko) of the kernel in use are
# built: the checkout itself for the guest kernel of make check and make
# demo; for the production kernel (VGSCHED_PROD=1) a copy of their sources
# under $VGSCHED_OUT/prod-module (build-module.sh), since an external
# module's objects land next to its sources (and vgsched's bindgen output
# must sit next to uapi.rs): building the checkout against a second kernel
# would overwrite the first kernel's module.
module_tree() {
	if [ "$VGSCHED_PROD" = 1 ]; then
		echo "$VGSCHED_OUT/prod-module"
	else
		echo "$TOP"
	fi
}

# What starts the names of the outputs that depend on the kernel (the
# initramfs, the guest's logs): "prod-" for the production kernel, nothing
# otherwise.
kernel_variant() {
	if [ "$VGSCHED_PROD" = 1 ]; then
		echo prod-
	fi
}
