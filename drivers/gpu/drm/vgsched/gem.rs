// SPDX-License-Identifier: GPL-2.0

//! Buffer objects: shmem-backed GEM objects that user space can mmap.

use kernel::{drm, drm::gem, prelude::*};

use crate::driver::VgDriver;

/// Driver data of one buffer object.
#[pin_data]
pub(crate) struct VgObject {}

impl gem::DriverObject for VgObject {
    type Driver = VgDriver;
    type Args = ();

    fn new(_dev: &drm::Device<VgDriver>, _size: usize, _args: ()) -> impl PinInit<Self, Error> {
        try_pin_init!(VgObject {})
    }
}
