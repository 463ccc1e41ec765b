#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds Documentation/ to HTML with Sphinx, warnings as errors, as the
# kernel builds its own documentation: a broken page, an unresolved
# reference or a page outside the index fails. Output in
# $VGSCHED_OUT/docs/html.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

command -v sphinx-build >/dev/null || die "sphinx-build missing: run scripts/setup.sh (python3-sphinx)"
out="$VGSCHED_OUT/docs"
rm -rf "$out"
sphinx-build -W --keep-going -q -b html -d "$out/doctrees" "$TOP/Documentation" "$out/html"
