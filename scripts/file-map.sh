#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Every source file of the driver is in Documentation/design.rst's file map
# (its section "Layers"): each tracked .rs and .c file under
# drivers/gpu/drm/vgsched is named there as ``path`` (relative to the
# driver's directory); a header is covered by its .c file. Prints the files
# missing and fails if there is one.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dir=drivers/gpu/drm/vgsched
# The section "Layers": from its title to the next title.
map=$(awk '/^Layers$/ {on=1} /^Core crate$/ {on=0} on' "$TOP/Documentation/design.rst")
[ -n "$map" ] || die "design.rst has no section Layers"
missing=0
while IFS= read -r f; do
	rel=${f#"$dir"/}
	case "$rel" in
	*.h) rel=${rel%.h}.c ;;
	*_generated.rs) continue ;;
	esac
	if ! grep -qF "\`\`$rel\`\`" <<<"$map"; then
		echo "not in design.rst's file map: $dir/$rel"
		missing=1
	fi
done < <(git -C "$TOP" ls-files "$dir" | grep -E '\.(rs|c|h)$' | sed 's/\.h$/.c/' | sort -u)
[ $missing = 0 ] && echo "every driver source file is in design.rst's file map"
exit $missing
