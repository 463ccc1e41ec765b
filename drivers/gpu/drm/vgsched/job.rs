// SPDX-License-Identifier: GPL-2.0

//! Jobs as the engine runs them: what a checked submission carries
//! ([`JobSpec`], built by `submit.rs`) and the view of its buffer objects
//! the interpreter reads and writes ([`BoMemory`]): their device copies.

use kernel::{
    drm::gem::shmem::VMapOwned,
    prelude::*,
    sync::Arc, //
};

use crate::{
    fence::Fence,
    gem::{
        Program,
        VgObject, //
    },
    projects::Charge,
    vgsched_core::{
        exec::Memory,
        grid::Grid,
        occupancy::GroupNeeds, //
    }, //
    vram::Pinned,
};

/// Kernel mappings of a job's bound buffer objects, by binding slot; they
/// hold references, so the objects outlive the job. Shared so that the
/// submission can keep them mapped until it has released the objects'
/// reservation locks (an unmap takes that lock).
pub(crate) type Bindings = Arc<KVec<VMapOwned<VgObject>>>;

/// A checked job, ready to queue.
pub(crate) struct JobSpec {
    /// The validated program.
    pub(crate) program: Program,
    /// The bound buffer objects, mapped.
    pub(crate) bindings: Bindings,
    /// The grid.
    pub(crate) grid: Grid,
    /// What each work-group needs.
    pub(crate) needs: GroupNeeds,
    /// Work-groups do not depend on each other (work-group dispatch may
    /// split them into one-wave pieces).
    pub(crate) independent: bool,
    /// Priority band of the work-groups in the dispatcher.
    pub(crate) band: u8,
    /// The caller's explicit in-fence: the job starts once it has
    /// signalled, and is cancelled (`-ECANCELED`) if it failed.
    pub(crate) in_fence: Option<Fence>,
    /// Its implicit dependencies: the fences of the bound objects'
    /// reservations (but its own context's), merged. The job starts once
    /// they have signalled, whatever their errors: a reader's fault does
    /// not cancel the next writer.
    pub(crate) deps: Option<Fence>,
    /// Return a sync_file of the job's completion.
    pub(crate) want_out_fence: bool,
    /// Its scratch area in device memory, bytes.
    pub(crate) scratch: u64,
    /// Tiles it needs, all on one node (at least 1).
    pub(crate) tiles: u32,
    /// The tiles it may be placed on (those its file is authorized for),
    /// as a mask.
    pub(crate) allowed_tiles: u32,
    /// Those tiles, charged to the project member whose file submitted
    /// it (`projects.rs`), until the job is dropped.
    pub(crate) charge: Option<Charge>,
}

/// [`Memory`] over the device copies of a job's bound buffer objects, by
/// binding slot.
pub(crate) struct BoMemory<'a>(pub(crate) &'a [Pinned]);

impl Memory for BoMemory<'_> {
    fn load(&mut self, slot: u8, index: u64) -> Option<u32> {
        self.0.get(slot as usize)?.load(index)
    }

    fn store(&mut self, slot: u8, index: u64, value: u32) -> bool {
        self.0
            .get(slot as usize)
            .is_some_and(|copy| copy.store(index, value))
    }
}
