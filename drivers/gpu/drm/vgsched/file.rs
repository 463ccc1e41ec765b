// SPDX-License-Identifier: GPL-2.0

//! Per-open-file state of the render node.

use kernel::{drm, prelude::*};

use crate::driver::VgDriver;

/// One client of the device: what a process gets by opening the render node.
pub(crate) struct VgFile;

/// The DRM file type of this driver, as ioctl handlers receive it.
pub(crate) type DrmFile = drm::File<VgFile>;

impl drm::file::DriverFile for VgFile {
    type Driver = VgDriver;

    fn open(_dev: &drm::Device<VgDriver>) -> Result<Pin<KBox<Self>>> {
        Ok(KBox::new(Self, GFP_KERNEL)?.into())
    }
}
