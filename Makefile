# SPDX-License-Identifier: GPL-2.0
#
# vgsched: one entry point for people. Kbuild itself reads ./Kbuild.
#
#   make demo     set up, build, boot the guest and run the demonstration
#   make check    run every test layer; ends with "N passed, N failed"
#   make bench    host and in-guest benchmarks, report in $VGSCHED_OUT/logs/bench.txt
#
# The cache of heavy artefacts (kernel source and build, toolchain pieces)
# lives in $VGSCHED_CACHE, default ~/.cache/vgsched.

SCRIPTS := $(CURDIR)/scripts
# clean sources scripts/lib.sh, which is bash.
SHELL := /bin/bash

.PHONY: all demo check bench setup kernel module initramfs host-test clean
all: demo

demo:
	@$(SCRIPTS)/demo.sh

check:
	@$(SCRIPTS)/check.sh

bench:
	@$(SCRIPTS)/bench.sh

setup:
	@$(SCRIPTS)/setup.sh

kernel: setup
	@$(SCRIPTS)/build-kernel.sh

module: kernel
	@$(SCRIPTS)/build-module.sh

initramfs: module
	@$(SCRIPTS)/build-initramfs.sh

host-test:
	cargo test --manifest-path rust/vgsched-core/Cargo.toml

clean:
	@. $(SCRIPTS)/lib.sh && kdir=$$(kernel_build_dir) && \
		[ ! -d "$$kdir" ] || $(MAKE) -s -C "$$kdir" M=$(CURDIR) clean; \
		rm -rf "$$(VGSCHED_PROD=1 module_tree)"
	rm -rf rust/vgsched-core/target rust/vgsched-bench/target
