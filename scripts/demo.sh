#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The README's main command: set up, build, boot the guest, load the module,
# run the demonstration program, unload, and show what it printed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

t0=$SECONDS
"$TOP/scripts/setup.sh"
"$TOP/scripts/build-kernel.sh"
"$TOP/scripts/build-module.sh"
"$TOP/scripts/build-initramfs.sh"
"$TOP/scripts/run-guest.sh" demo
results="$VGSCHED_OUT/logs/demo-results.log"
step "what the guest printed"
awk '{sub(/\r$/, "")} /^@@begin demo/{on=1; next} /^@@end demo/{on=0; rc=$NF} on{print "  " $0}
     /^@@end cmd/ && $NF != "rc=0" {bad=1; print "  " $0}
     END{exit (rc != "rc=0" || bad)}' "$results" ||
	die "the demonstration failed (see $results and $VGSCHED_OUT/logs/demo-console.log)"
grep -E 'vgsched: ' "$VGSCHED_OUT/logs/demo-console.log" | sed 's/^/  kernel: /'
step "done in $((SECONDS - t0)) s"
