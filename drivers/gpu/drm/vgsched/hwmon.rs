// SPDX-License-Identifier: GPL-2.0

//! The tiles' energy account through hwmon (`hwmon.c` registers the device:
//! Linux 7.3 has no Rust hwmon binding). Channel 0 is the device, then
//! each node (its standby and its tiles), then each tile; each has
//! `energy<i>_input` in microjoules and `power<i>_input` in microwatts,
//! labelled `device`, `node<n>` and `tile<n>`.

use kernel::{
    error::from_err_ptr,
    ffi::{
        c_int,
        c_long,
        c_uint,
        c_void, //
    },
    prelude::*,
    sync::Arc, //
};

use crate::engine::{
    Engine,
    Quantity, //
};

/// `struct vgsched_hwmon` of `hwmon.c`, opaque here.
#[repr(C)]
struct RawHwmon {
    _opaque: [u8; 0],
}

/// `enum vgsched_hwmon_quantity` of `hwmon.h`.
const ENERGY_UJ: c_int = 0;
const POWER_UW: c_int = 1;

extern "C" {
    fn vgsched_hwmon_register(
        parent: *mut c_void,
        nodes: c_uint,
        tiles: c_uint,
        read: unsafe extern "C" fn(*mut c_void, c_int, c_int, *mut c_long) -> c_int,
        data: *mut c_void,
    ) -> *mut RawHwmon;
    fn vgsched_hwmon_unregister(hwmon: *mut RawHwmon);
}

/// The hwmon device of one engine.
///
/// # Invariants
///
/// `raw` is null (a kernel without hwmon) or was returned by
/// `vgsched_hwmon_register()` with `_engine` as its data, and is
/// unregistered only by [`Drop`], before `_engine` is dropped.
pub(crate) struct Hwmon {
    raw: *mut RawHwmon,
    _engine: Arc<Engine>,
}

// SAFETY: `raw` is only handed back to `hwmon.c`, whose functions may be
// called from any thread; `Engine` is `Send` and `Sync`.
unsafe impl Send for Hwmon {}
// SAFETY: `Hwmon` has no methods taking `&self`.
unsafe impl Sync for Hwmon {}

impl Hwmon {
    /// Registers the hwmon device of `engine` under `parent`.
    pub(crate) fn new(parent: &kernel::device::Device, engine: &Arc<Engine>) -> Result<Self> {
        let t = engine.tile_topology();
        let engine = engine.clone();
        let data = core::ptr::from_ref::<Engine>(&engine)
            .cast_mut()
            .cast::<c_void>();
        // `Device::as_raw()` is private to the kernel crate in 7.3; `Device`
        // is a `#[repr(transparent)]` wrapper of `struct device`, so a
        // pointer to it is one to the `struct device` `hwmon.c` takes.
        let parent = core::ptr::from_ref(parent).cast_mut().cast::<c_void>();
        // SAFETY: `parent` is a live device for the call; `data` points at
        // the engine, which `Self` keeps alive until the device is
        // unregistered, and `read` expects exactly such a pointer.
        let raw = from_err_ptr(unsafe {
            vgsched_hwmon_register(parent, t.nodes, t.tiles(), read, data)
        })?;
        // INVARIANT: `raw` is null or was just registered with `engine` as
        // its data.
        Ok(Self {
            raw,
            _engine: engine,
        })
    }
}

impl Drop for Hwmon {
    fn drop(&mut self) {
        // SAFETY: By the type invariants `raw` is null (a no-op) or
        // registered; this waits for reads in progress, after which `read`
        // never sees the engine.
        unsafe { vgsched_hwmon_unregister(self.raw) };
    }
}

/// Answers one hwmon read.
///
/// # Safety
///
/// `data` is the engine of a registered [`Hwmon`]; `out` is valid for a
/// write.
unsafe extern "C" fn read(
    data: *mut c_void,
    quantity: c_int,
    channel: c_int,
    out: *mut c_long,
) -> c_int {
    // SAFETY: By the safety requirements, `data` is a live engine.
    let engine = unsafe { &*data.cast::<Engine>() };
    let what = match quantity {
        ENERGY_UJ => Quantity::EnergyUj,
        POWER_UW => Quantity::PowerUw,
        _ => return EOPNOTSUPP.to_errno(),
    };
    let Ok(channel) = u32::try_from(channel) else {
        return EINVAL.to_errno();
    };
    match engine.tile_reading(what, channel) {
        Some(v) => {
            // SAFETY: By the safety requirements.
            unsafe { *out = c_long::try_from(v).unwrap_or(c_long::MAX) };
            0
        }
        None => EINVAL.to_errno(),
    }
}
