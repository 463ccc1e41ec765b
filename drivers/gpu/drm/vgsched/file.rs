// SPDX-License-Identifier: GPL-2.0

//! Per-open-file state of the render node.

use kernel::{drm, new_mutex, prelude::*, sync::Mutex};

use crate::{context::ContextTable, driver::VgDriver};

/// One client of the device: what a process gets by opening the render node.
/// Everything it owns is released when the file is closed.
#[pin_data]
pub(crate) struct VgFile {
    /// The file's contexts.
    #[pin]
    pub(crate) contexts: Mutex<ContextTable>,
}

/// The DRM file type of this driver, as ioctl handlers receive it.
pub(crate) type DrmFile = drm::File<VgFile>;

impl drm::file::DriverFile for VgFile {
    type Driver = VgDriver;

    fn open(_dev: &drm::Device<VgDriver>) -> Result<Pin<KBox<Self>>> {
        KBox::try_pin_init(
            try_pin_init!(Self {
                contexts <- new_mutex!(ContextTable::new()),
            }),
            GFP_KERNEL,
        )
    }
}
