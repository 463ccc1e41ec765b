// SPDX-License-Identifier: GPL-2.0

//! Buffer objects: shmem-backed GEM objects that user space can mmap.

use kernel::{
    drm::{
        self,
        gem,
        gem::shmem, //
    },
    prelude::*,
    sync::{
        aref::ARef,
        atomic::Atomic,
        Arc, //
    }, //
};

use crate::{
    driver::VgDriver,
    projects::Charge,
    uapi,
    vgsched_core::projects::Resource,
    vram::DeviceMemory, //
};

/// Largest buffer object, in bytes.
pub(crate) const MAX_BO_SIZE: u64 = uapi::DRM_VGSCHED_MAX_BO_SIZE as u64;

/// Driver data of one buffer object.
#[pin_data(PinnedDrop)]
pub(crate) struct VgObject {
    /// Its number on the device, the key of its device copy.
    pub(crate) id: u64,
    /// Its bytes, charged to the project member that created it
    /// (`projects.rs`) until it is freed.
    _charge: Option<Charge>,
    /// The device memory that may hold a copy of it.
    memory: Arc<DeviceMemory>,
    /// It has a copy in device memory; kept by the residency table, read
    /// without a lock (fdinfo).
    pub(crate) resident: Arc<Atomic<bool>>,
}

#[pinned_drop]
impl PinnedDrop for VgObject {
    fn drop(self: Pin<&mut Self>) {
        // No job holds the object any more (jobs hold references): its
        // device copy, if any, is idle and goes with it.
        self.memory.forget(self.id);
    }
}

/// A buffer object of this driver.
pub(crate) type Bo = shmem::Object<VgObject>;

impl gem::DriverObject for VgObject {
    type Driver = VgDriver;
    type Args = Option<Charge>;

    fn new(
        dev: &drm::Device<VgDriver>,
        _size: usize,
        charge: Option<Charge>,
    ) -> impl PinInit<Self, Error> {
        let memory = dev.engine.device_memory().clone();
        let resident = Arc::new(Atomic::new(false), GFP_KERNEL);
        try_pin_init!(VgObject {
            id: memory.new_object_id(),
            _charge: charge,
            memory,
            resident: resident?,
        })
    }
}

/// Creates a zero-filled buffer object of at least `size` bytes, rounded
/// up to whole pages, for a file opened by `uid`: `EINVAL` for zero,
/// `E2BIG` above [`MAX_BO_SIZE`], `EDQUOT` past the bytes its project
/// member may hold, `ENOSPC` (or, with `wait`, a wait) when the device's
/// pool is held by other members.
pub(crate) fn create(
    dev: &drm::Device<VgDriver>,
    size: u64,
    uid: u32,
    wait: bool,
) -> Result<ARef<Bo>> {
    if size == 0 {
        return Err(EINVAL);
    }
    if size > MAX_BO_SIZE {
        return Err(E2BIG);
    }
    let size = (size as usize).next_multiple_of(kernel::page::PAGE_SIZE);
    let charge = dev.book.charge(uid, Resource::BoBytes, size as u64, wait)?;
    Bo::new(dev, size, shmem::ObjectConfig::default(), charge)
}
