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

# The guest kernel's build directory, keyed by everything it depends on.
kernel_build_dir() {
	local key
	key=$( { echo 7.3.4; cat "$TOP/kernel/vgsched.config"; rustc --version; } | sha256sum | cut -c1-16)
	echo "$VGSCHED_CACHE/kbuild-$key"
}
