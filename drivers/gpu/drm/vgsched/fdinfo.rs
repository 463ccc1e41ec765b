// SPDX-License-Identifier: GPL-2.0

//! DRM client usage statistics (`/proc/PID/fdinfo/FD` of the render node,
//! `Documentation/gpu/drm-usage-stats.rst`).
//!
//! The Rust DRM abstraction of Linux 7.3 has no fdinfo hook; the guest
//! kernel carries a patch that adds one (`kernel/patches/0003`: an optional
//! `drm::Driver::show_fdinfo` that the device's vtable installs, and
//! `drm_show_fdinfo()` in the GEM file operations). The DRM core prints
//! `drm-driver` and `drm-client-id` itself; [`show`] adds the standard GEM
//! memory keys and the driver's one engine, `drm-engine-gpu`: the modeled
//! time the device spent on the file's contexts, live and destroyed ones
//! alike ([`crate::file::VgFile::gpu_runtime_ns`]).

use kernel::{
    drm,
    prelude::*, //
};

use crate::file::DrmFile;

/// Prints the driver's keys of the usage statistics of `file`.
pub(crate) fn show(file: &DrmFile, printer: &mut drm::print::Printer<'_>) {
    printer.memory_stats(file);
    // One engine: the whole virtual GPU, as the contexts' runtime counts it.
    printer.print(fmt!(
        "drm-engine-gpu:\t{} ns\n",
        file.inner().gpu_runtime_ns()
    ));
}
