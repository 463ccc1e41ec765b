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
        isa,
        occupancy::GroupNeeds,
        tiles::Reserved, //
    }, //
    vram::Pinned,
};

/// A kernel mapping of a buffer object, kept by the object while a file
/// holds a handle to it ([`VgObject::keep_mapped`]) and shared by the jobs
/// that bind it. The last reference unmaps, which takes the object's
/// reservation lock: never dropped with that lock held, nor on a
/// fence-signalling path (a job holds a reference until its clean-up).
pub(crate) type SharedMap = Arc<VMapOwned<VgObject>>;

/// The kernel mappings of a job's bound buffer objects, by binding slot.
/// They hold references, so the objects outlive the job; a copy counts
/// one more user of each mapping and allocates nothing.
#[derive(Clone, Default)]
pub(crate) struct Bindings {
    maps: [Option<SharedMap>; isa::MAX_BINDINGS],
    len: usize,
}

impl Bindings {
    /// Adds the mapping of the next binding slot; `EINVAL` past
    /// [`isa::MAX_BINDINGS`].
    pub(crate) fn push(&mut self, map: SharedMap) -> Result {
        let slot = self.maps.get_mut(self.len).ok_or(EINVAL)?;
        *slot = Some(map);
        self.len += 1;
        Ok(())
    }

    /// Binding slots in use.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The mappings, by binding slot.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &VMapOwned<VgObject>> {
        self.maps.iter().take(self.len).flatten().map(|m| &**m)
    }
}

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
    /// as a mask; narrowed by [`JobSpec::reserved`] when it is queued.
    pub(crate) allowed_tiles: u32,
    /// The tiles started environments reserved when it was submitted
    /// (`projects.rs`, [`crate::projects::Book::reservations`]).
    pub(crate) reserved: Reserved,
    /// Those tiles, charged to the project member whose file submitted
    /// it (`projects.rs`), until the job is dropped.
    pub(crate) charge: Option<Charge>,
    /// How many cycles each of its waves runs on a device that does not
    /// interpret (the mock, [`crate::gpu::mock`]): set only by in-kernel
    /// tests; 0 from the uAPI (the virtual GPU interprets the program).
    pub(crate) mock_cycles: u64,
}

/// [`Memory`] over the device copies of a job's bound buffer objects, by
/// binding slot.
pub(crate) struct BoMemory<'a>(pub(crate) &'a [Option<Pinned>]);

impl Memory for BoMemory<'_> {
    fn load(&mut self, slot: u8, index: u64) -> Option<u32> {
        self.0.get(slot as usize)?.as_ref()?.load(index)
    }

    fn store(&mut self, slot: u8, index: u64, value: u32) -> bool {
        self.0
            .get(slot as usize)
            .and_then(Option::as_ref)
            .is_some_and(|copy| copy.store(index, value))
    }
}
