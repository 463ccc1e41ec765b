// SPDX-License-Identifier: GPL-2.0

//! DRM client usage statistics (`/proc/PID/fdinfo/FD` of the render node,
//! `Documentation/gpu/drm-usage-stats.rst`).
//!
//! The Rust DRM abstraction of Linux 7.3 has no fdinfo hook; the guest
//! kernel carries a patch that adds one (`kernel/patches/0003`: an optional
//! `drm::Driver::show_fdinfo` that the device's vtable installs, and
//! `drm_show_fdinfo()` in the GEM file operations). The DRM core prints
//! `drm-driver` and `drm-client-id` itself; [`show`] adds the standard GEM
//! memory keys (system memory), the device-memory region `vram` (every
//! object of the file, `drm-total-vram`, and those with a copy in device
//! memory now, `drm-resident-vram`), and the driver's one engine,
//! `drm-engine-gpu`: the modeled time the device spent on the file's
//! contexts, live and destroyed ones alike
//! ([`crate::file::VgFile::gpu_runtime_ns`]).

use kernel::{
    bindings,
    drm::{
        self,
        driver::AllocImpl,
        gem::{
            BaseObject,
            IntoGEMObject, //
        }, //
    },
    ffi::c_void,
    prelude::*,
};

use crate::{
    file::DrmFile,
    gem::Bo, //
};

/// Opaque `struct drm_file` (the generated binding is not FFI-safe by
/// lint).
#[repr(C)]
struct RawFile {
    _opaque: [u8; 0],
}

extern "C" {
    fn vgsched_file_for_each_object(
        file: *mut RawFile,
        cb: unsafe extern "C" fn(data: *mut c_void, obj: *mut bindings::drm_gem_object),
        data: *mut c_void,
    );
}

/// Bytes of a file's objects: all, and those resident in device memory.
#[derive(Default)]
struct DeviceRegion {
    total: u64,
    resident: u64,
}

/// Counts one object of the file into the [`DeviceRegion`] at `data`.
///
/// # Safety
///
/// `data` points at a `DeviceRegion` no one else uses during the call, and
/// `obj` is a live GEM object (its file's table lock is held).
unsafe extern "C" fn count_object(data: *mut c_void, obj: *mut bindings::drm_gem_object) {
    // SAFETY: `obj` is live, per the function's safety requirement.
    if !core::ptr::eq(unsafe { (*obj).funcs }, <Bo as AllocImpl>::OBJECT_FUNCS) {
        // An imported dma-buf: never on this device.
        return;
    }
    // SAFETY: An object carrying the functions of `Bo` is a `Bo`, and it is
    // live for the call.
    let bo = unsafe { Bo::from_raw(obj) };
    // A dumb buffer: never on this device either.
    if bo.is_dumb() {
        return;
    }
    // SAFETY: Per the function's safety requirement.
    let region = unsafe { &mut *data.cast::<DeviceRegion>() };
    let size = bo.size() as u64;
    region.total = region.total.saturating_add(size);
    if bo.copy.is_placed() {
        region.resident = region.resident.saturating_add(size);
    }
}

/// Prints the driver's keys of the usage statistics of `file`.
pub(crate) fn show(file: &DrmFile, printer: &mut drm::print::Printer<'_>) {
    printer.memory_stats(file);
    let mut region = DeviceRegion::default();
    // `drm::File` is `#[repr(transparent)]` over its `struct drm_file`, the
    // pointer its `from_raw()` takes (its `as_raw()` is not public in 7.3).
    let raw = core::ptr::from_ref(file).cast_mut().cast::<RawFile>();
    // SAFETY: `raw` is the live DRM file of `file`; `count_object` gets
    // `region`, which lives across the call, and runs only during it.
    unsafe {
        vgsched_file_for_each_object(raw, count_object, core::ptr::from_mut(&mut region).cast())
    };
    printer.print(fmt!("drm-total-vram:\t{} KiB\n", region.total / 1024));
    printer.print(fmt!("drm-resident-vram:\t{} KiB\n", region.resident / 1024));
    // One engine: the whole virtual GPU, as the contexts' runtime counts it.
    printer.print(fmt!(
        "drm-engine-gpu:\t{} ns\n",
        file.inner().gpu_runtime_ns()
    ));
}
