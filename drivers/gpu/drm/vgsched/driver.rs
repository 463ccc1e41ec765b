// SPDX-License-Identifier: GPL-2.0

//! The DRM driver: identity, features, per-device data and the ioctl table.

use kernel::{
    drm,
    faux,
    prelude::*,
    sync::Arc, //
};

use crate::{
    engine::Engine,
    fdinfo,
    file::{
        DrmFile,
        VgFile, //
    },
    gem::{
        self,
        VgObject, //
    },
    ioctl,
    projects::Book,
    vgsched_core::topology::Topology, //
};

/// Driver identity reported by `DRM_IOCTL_VERSION`.
const INFO: drm::DriverInfo = drm::DriverInfo {
    major: 1,
    minor: 0,
    patchlevel: 0,
    name: c"vgsched",
    desc: c"Scheduling virtual GPU",
};

/// The vgsched DRM driver.
pub(crate) struct VgDriver;

/// The DRM device of this driver.
pub(crate) type VgDevice<Ctx = drm::Normal> = drm::Device<VgDriver, Ctx>;

/// State of one virtual GPU, owned by its DRM device.
#[pin_data(PinnedDrop)]
pub(crate) struct DeviceData {
    /// The validated shape of the device; fixed for its lifetime.
    pub(crate) topology: Topology,
    /// Runs the jobs.
    pub(crate) engine: Arc<Engine>,
    /// The projects its files' owners belong to.
    pub(crate) book: Arc<Book>,
}

impl DeviceData {
    /// Initialiser for the data of a device of the given (validated) shape.
    pub(crate) fn new(
        topology: Topology,
        engine: Arc<Engine>,
        book: Arc<Book>,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            topology,
            engine,
            book
        })
    }
}

#[pinned_drop]
impl PinnedDrop for DeviceData {
    fn drop(self: Pin<&mut Self>) {
        // The engine's timer and work item hold references to it; stop
        // them before the device, and this module, go away.
        self.engine.shut_down();
    }
}

#[vtable]
impl drm::Driver for VgDriver {
    type Data = DeviceData;
    type RegistrationData<'a> = ();
    type File = VgFile;
    type Object = drm::gem::shmem::Object<VgObject>;
    type ParentDevice<Ctx: kernel::device::DeviceContext> = faux::Device<Ctx>;

    const INFO: drm::DriverInfo = INFO;
    const IOCTLS: &'static [drm::ioctl::DrmIoctlDescriptor] = ioctl::TABLE;
    const FEAT_RENDER: bool = true;

    /// The driver's keys of `/proc/PID/fdinfo/FD` (needs the guest kernel's
    /// `kernel/patches/0003`, see `fdinfo.rs`).
    fn show_fdinfo(file: &DrmFile, printer: &mut drm::print::Printer<'_>) {
        fdinfo::show(file, printer);
    }

    /// `DRM_IOCTL_MODE_CREATE_DUMB` on the primary node: a buffer object
    /// charged like `BO_CREATE`'s (needs `kernel/patches/0005`, see
    /// [`gem::create_dumb`]).
    fn dumb_create(
        dev: &VgDevice<drm::Registered>,
        file: &DrmFile,
        args: &mut drm::gem::DumbCreate<'_>,
    ) -> Result {
        gem::create_dumb(dev, file, args)
    }
}
