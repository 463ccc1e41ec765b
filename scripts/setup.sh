#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Installs what vgsched needs and nothing more. Idempotent: every step checks
# first. The system's apt sources are never touched; the two trixie-backports
# packages are fetched through a private apt configuration under the cache
# and unpacked there with dpkg -x.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KERNEL_SRC_PKG=linux-source-7.3
KERNEL_SRC_VER=7.3.4-1~bpo13+1
BINDGEN_MIN=0.71.1

# --- bookworm packages -------------------------------------------------------
BOOKWORM_PKGS=(build-essential patch bc bison flex cpio xz-utils rsync kmod
	libelf-dev libssl-dev libclang1-19 libclang-19-dev
	qemu-system-x86 busybox-static libc6-dev python3 python3-sphinx)

missing=()
for p in "${BOOKWORM_PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if ((${#missing[@]})); then
	step "apt-get install ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- rustfmt and clippy (the gates of make check) -----------------------------
# Part of the toolchain's default profile; added through rustup if a
# minimal toolchain lacks them.
for tool in rustfmt:rustfmt cargo-clippy:clippy; do
	bin=${tool%%:*} component=${tool##*:}
	command -v "$bin" >/dev/null 2>&1 && continue
	command -v rustup >/dev/null 2>&1 || die "$bin missing and no rustup to add the $component component"
	step "rustup component add $component"
	rustup component add "$component"
done

# --- bindgen -----------------------------------------------------------------
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }
have_bindgen=$(command -v bindgen || true)
[ -n "$have_bindgen" ] || have_bindgen="$HOME/.cargo/bin/bindgen"
if ! [ -x "$have_bindgen" ] ||
	! version_ge "$("$have_bindgen" --version | awk '{print $2}')" "$BINDGEN_MIN"; then
	step "cargo install --locked bindgen-cli (>= $BINDGEN_MIN)"
	cargo install --locked bindgen-cli
fi

# --- trixie-backports: kernel source and the matching rust-src ---------------
rustc_ver=$(rustc --version | awk '{print $2}')
APT_DIR="$VGSCHED_CACHE/apt"
mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/debs"
# The Debian mirror is the one the machine's own apt sources name for its
# release's main archive (one-line .list or deb822 .sources entries, as
# apt itself reads them), never a host written here.
debian_mirror() {
	local codename
	[ "$(. /etc/os-release && echo "$ID")" = debian ] || return 1
	codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
	# What apt resolved (after any apt-get update): " 500 URI SUITE/main ...".
	apt-cache policy 2>/dev/null |
		awk -v s="$codename/main" '$3 == s && $2 ~ /^https?:\/\// { print $2; exit }' | grep . && return
	# Else the source files themselves: the first URI of an entry whose suites
	# include the release.
	{
		cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			awk -v c="$codename" '$1 == "deb" { for (i = 2; i < NF; i++) if ($i ~ /^https?:/ && $(i + 1) == c) { print $i; exit } }'
		for f in /etc/apt/sources.list.d/*.sources; do
			[ -f "$f" ] || continue
			awk -v c="$codename" 'BEGIN { RS = ""; FS = "\n" }
				{ uri = ""; ok = 0; off = 0
				  for (i = 1; i <= NF; i++) {
					if ($i ~ /^URIs:/) { split($i, u, " "); uri = u[2] }
					if ($i ~ /^Suites:/) { n = split($i, w, " "); for (j = 2; j <= n; j++) if (w[j] == c) ok = 1 }
					if ($i ~ /^Enabled: *no/) off = 1
				  }
				  if (ok && !off && uri != "") { print uri; exit } }' "$f"
		done
	} | head -n 1 | grep .
}
mirror=$(debian_mirror) || die "not Debian, or no Debian mirror for this release in the machine's apt sources (/etc/apt/sources.list*)"
cat > "$APT_DIR/sources.list" <<SRC
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${mirror%/} trixie-backports main
SRC
APT_OPTS=(-o Dir::Etc::SourceList="$APT_DIR/sources.list"
	-o Dir::Etc::SourceParts=/dev/null
	-o Dir::State::Lists="$APT_DIR/lists"
	-o Dir::Cache::Archives="$APT_DIR/debs"
	-o APT::Sandbox::User=root)

fetch_and_unpack() { # package version destination
	local pkg=$1 ver=$2 dest=$3
	[ -f "$dest/.unpacked" ] && return 0
	if ! ls "$APT_DIR/debs/${pkg}_"*.deb >/dev/null 2>&1; then
		[ -f "$APT_DIR/.updated" ] || { apt-get "${APT_OPTS[@]}" update -qq && touch "$APT_DIR/.updated"; }
		if ! (cd "$APT_DIR/debs" && apt-get "${APT_OPTS[@]}" download "$pkg=$ver"); then
			# The list may be stale: refresh once and try again.
			apt-get "${APT_OPTS[@]}" update -qq
			(cd "$APT_DIR/debs" && apt-get "${APT_OPTS[@]}" download "$pkg=$ver") || die \
				"cannot download $pkg=$ver from trixie-backports." \
				"Available: $(apt-cache "${APT_OPTS[@]}" madison "$pkg" | awk '{print $3}' | tr '\n' ' ')"
		fi
	fi
	rm -rf "$dest" && mkdir -p "$dest"
	dpkg -x "$APT_DIR/debs/${pkg}_"*.deb "$dest"
	touch "$dest/.unpacked"
}

step "rust-src matching rustc $rustc_ver"
RUST_SRC_VER="${rustc_ver}+dfsg1-2~bpo13+1"
if ! [ -f "$VGSCHED_CACHE/rust-src/.unpacked" ]; then
	# Pick the newest trixie-backports build of exactly this upstream version.
	[ -f "$APT_DIR/.updated" ] || { apt-get "${APT_OPTS[@]}" update -qq && touch "$APT_DIR/.updated"; }
	cand=$(apt-cache "${APT_OPTS[@]}" madison rust-src | awk '{print $3}' |
		grep -E "^${rustc_ver//./\\.}\+" | sort -V | tail -n1 || true)
	[ -n "$cand" ] || die "no rust-src for rustc $rustc_ver in trixie-backports." \
		"Install a rustc whose version has a rust-src there:" \
		"$(apt-cache "${APT_OPTS[@]}" madison rust-src | awk '{print $3}' | tr '\n' ' ')"
	RUST_SRC_VER=$cand
fi
fetch_and_unpack rust-src "$RUST_SRC_VER" "$VGSCHED_CACHE/rust-src"

step "kernel source $KERNEL_SRC_PKG $KERNEL_SRC_VER"
fetch_and_unpack "$KERNEL_SRC_PKG" "$KERNEL_SRC_VER" "$VGSCHED_CACHE/linux-pkg"
if ! [ -f "$KSRC/.unpacked" ]; then
	rm -rf "$KSRC" && mkdir -p "$KSRC"
	tar -xJf "$VGSCHED_CACHE"/linux-pkg/usr/src/linux-source-7.3.tar.xz -C "$KSRC" --strip-components=1
	touch "$KSRC/.unpacked"
fi
step "setup complete (cache: $VGSCHED_CACHE)"
