// SPDX-License-Identifier: GPL-2.0

//! DRM client usage statistics (`/proc/PID/fdinfo/FD` of the render node,
//! `Documentation/gpu/drm-usage-stats.rst`).
//!
//! The Rust DRM abstractions of Linux 7.3 leave `show_fdinfo` unset in both
//! the driver and its file operations; `fdinfo.c` installs the two hooks on
//! the still unregistered device (its comment says how and why). The DRM
//! core then prints `drm-driver` and `drm-client-id`, and this file supplies
//! the driver's key: `drm-engine-gpu`, the modeled time the device spent on
//! the file's contexts, live and destroyed ones alike.

use kernel::{bindings, drm, error::to_result, prelude::*, sync::atomic::ordering};

use crate::{
    driver::VgDriver,
    file::{DrmFile, VgFile},
};

/// Opaque `struct drm_device` (the generated binding is not FFI-safe by lint).
#[repr(C)]
struct RawDrmDevice {
    _opaque: [u8; 0],
}

extern "C" {
    fn vgsched_fdinfo_install(
        dev: *mut RawDrmDevice,
        engine_ns: unsafe extern "C" fn(file: *mut bindings::drm_file) -> u64,
    ) -> c_int;
}

/// Gives `dev` its fdinfo hooks; call from module init, before the device
/// is registered (which taking an [`drm::UnregisteredDevice`] ensures).
pub(crate) fn install(dev: &drm::UnregisteredDevice<VgDriver>) -> Result {
    let dev: &drm::Device<VgDriver> = dev;
    // `drm::Device` is `#[repr(C)]` with its `struct drm_device` as the first
    // field (`dev: Opaque<bindings::drm_device>`, rust/kernel/drm/device.rs),
    // the layout its own `from_raw()` relies on, so the two addresses agree.
    let raw = core::ptr::from_ref(dev).cast_mut().cast::<RawDrmDevice>();
    // SAFETY: `raw` is the device's `struct drm_device` (see above), which lives
    // in an `Opaque`, so C may write it through a pointer from a shared
    // reference. The device is not registered and `UnregisteredDevice` is not
    // thread safe, so nothing else reads `dev->driver` meanwhile; the new
    // driver structure differs from the abstraction's only in the fdinfo hooks
    // and lives until the module goes away. `engine_ns` may be called for any
    // open file of this device, which is what it expects.
    to_result(unsafe { vgsched_fdinfo_install(raw, engine_ns) })
}

/// The DRM core's number of the open file behind `file`: `drm-client-id`
/// in fdinfo, unique among all DRM files since boot.
pub(crate) fn client_id(file: &DrmFile) -> u64 {
    // `drm::File` is `#[repr(transparent)]` over `Opaque<bindings::drm_file>`.
    let raw = core::ptr::from_ref(file).cast::<bindings::drm_file>();
    // SAFETY: `raw` points at the open `struct drm_file` of `file` (type
    // invariant of `drm::File`); `client_id` is set by `drm_file_alloc()`
    // before the file is reachable and never written again.
    unsafe { (*raw).client_id }
}

impl VgFile {
    /// Modeled GPU time of all the file's contexts, destroyed ones included.
    ///
    /// A context destroyed while this runs may be missed once (it has left
    /// the table but is not yet counted as retired); the usage-stats rules
    /// allow such a dip as long as the next read catches up, which it does.
    pub(crate) fn gpu_runtime_ns(&self) -> u64 {
        // The file's table, then the engine: the order the file's release
        // follows too.
        let table = self.contexts.lock();
        let live = self.engine.runtime_of(table.iter());
        live.saturating_add(self.retired_runtime_ns.load(ordering::Relaxed))
    }

    /// Keeps the runtime `ns` of a context just destroyed in the file's
    /// total.
    pub(crate) fn retire_runtime(&self, ns: u64) {
        self.retired_runtime_ns.fetch_add(ns, ordering::Relaxed);
    }
}

/// `engine_ns` callback of `fdinfo.c`: `drm-engine-gpu` of an open file.
///
/// # Safety
///
/// `file` must be an open `struct drm_file` of a vgsched device.
unsafe extern "C" fn engine_ns(file: *mut bindings::drm_file) -> u64 {
    // SAFETY: By the safety requirements `file` is open, so `VgFile::open`
    // made it and its private data stays valid until it is released, which
    // cannot happen while fdinfo is being read (the reader holds the file).
    let file = unsafe { DrmFile::from_raw(file) };
    file.inner().gpu_runtime_ns()
}
