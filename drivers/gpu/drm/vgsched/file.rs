// SPDX-License-Identifier: GPL-2.0

//! Per-open-file state of the render node.

use kernel::{
    drm,
    new_mutex,
    prelude::*,
    sync::{
        atomic::{
            ordering,
            Atomic, //
        },
        Arc,
        Mutex, //
    }, //
    task::Kuid,
};

use crate::{
    auth::Grants,
    context::ContextTable,
    driver::VgDriver,
    engine::Engine,
    projects::{
        Opener,
        Started, //
    }, //
};

/// One client of the device: what a process gets by opening the render node.
/// Everything it owns is released when the file is closed.
#[pin_data(PinnedDrop)]
pub(crate) struct VgFile {
    /// The engine its jobs run on.
    pub(crate) engine: Arc<Engine>,
    /// The effective uid of its opener, in the initial user namespace (a
    /// user namespace's root is not root here): what it creates is charged
    /// to the project member of that uid (`projects.rs`).
    pub(crate) uid: u32,
    /// The uid the default bound of a uid in no project counts its
    /// opener's holdings against: the owner of the opener's outermost user
    /// namespace, or `uid` in the initial one ([`Opener`]).
    pub(crate) owner: u32,
    /// The access codes it presented (`auth.rs`).
    #[pin]
    pub(crate) auth: Mutex<Grants>,
    /// The file's contexts.
    #[pin]
    pub(crate) contexts: Mutex<ContextTable>,
    /// Runtime of the file's destroyed contexts, for fdinfo (`fdinfo.rs`).
    pub(crate) retired_runtime_ns: Atomic<u64>,
    /// Its start of its member's environment (`START`), given back when
    /// the file goes.
    #[pin]
    pub(crate) started: Mutex<Option<Started>>,
}

#[pinned_drop]
impl PinnedDrop for VgFile {
    fn drop(self: Pin<&mut Self>) {
        // Closing the file (or the process dying) cancels all its work at
        // once, so no job outlives its file or holds its buffers.
        let contexts = self.contexts.lock().take_slots();
        // The file goes with them: their runtime need not be kept.
        let _runtime =
            Engine::cancel_contexts(self.engine.as_arc_borrow(), contexts.iter().flatten());
    }
}

/// The DRM file type of this driver, as ioctl handlers receive it. Its
/// `client_id()` (from the guest kernel's `kernel/patches/0002`) is the DRM
/// core's number of the client, fdinfo's `drm-client-id`, which contexts
/// keep and `CTX_QUERY` and debugfs show.
pub(crate) type DrmFile = drm::File<VgFile>;

impl VgFile {
    /// Its opener, as charges see it.
    pub(crate) fn opener(&self) -> Opener {
        Opener {
            uid: self.uid,
            owner: self.owner,
        }
    }

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

impl drm::file::DriverFile for VgFile {
    type Driver = VgDriver;

    fn open(dev: &drm::Device<VgDriver>) -> Result<Pin<KBox<Self>>> {
        // Both from the opener's credentials, now.
        let opener = Opener::current(Kuid::current_euid().into_raw().val);
        KBox::try_pin_init(
            try_pin_init!(Self {
                engine: dev.engine.clone(),
                uid: opener.uid,
                owner: opener.owner,
                auth <- new_mutex!(Grants::new()),
                contexts <- new_mutex!(ContextTable::new()),
                retired_runtime_ns: Atomic::new(0),
                started <- new_mutex!(None),
            }),
            GFP_KERNEL_ACCOUNT,
        )
    }
}
