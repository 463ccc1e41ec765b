// SPDX-License-Identifier: GPL-2.0

//! A job as the engine holds it, from its submission to its clean-up,
//! and the waiter that wakes the engine when one of its fences signals.

use core::mem::MaybeUninit;

use kernel::{
    ffi::c_void,
    prelude::*,
    sync::{
        atomic::ordering,
        Arc,
        ArcBorrow, //
    }, //
};

use crate::{
    context::Context,
    fence::{
        Fence,
        Waiter, //
    },
    job::JobSpec,
    vgsched_core::{
        progress::JobProgress,
        topology::Topology, //
    },
    vram::Pinned, //
};

use super::{
    inbox::Link,
    memory::{
        JobTimes,
        PinsRoom,
        Prepared,
        Stage, //
    },
    Engine, //
};

/// A waiter on a job's in-fence that queues the engine's work item when the
/// fence signals. It holds a reference to the engine, so the callback can
/// never see the engine go away; the waiter is disarmed (and a callback in
/// progress finished) before that reference is dropped.
pub(super) struct JobWaiter {
    /// Declared first: dropped (disarmed) before `engine`.
    _waiter: Waiter,
    _engine: Arc<Engine>,
}

impl JobWaiter {
    /// Arms a waiter on `fence` for `engine`.
    pub(super) fn new(engine: ArcBorrow<'_, Engine>, fence: &Fence) -> Result<Self> {
        let engine: Arc<Engine> = engine.into();
        let data = core::ptr::from_ref::<Engine>(&engine)
            .cast_mut()
            .cast::<c_void>();
        // SAFETY: `fence_signalled` only queues the engine's work item, which
        // is safe from any context; `data` points at the engine, which the
        // returned value keeps alive for as long as the waiter is armed.
        let waiter = unsafe { fence.add_waiter(fence_signalled, data) }?;
        Ok(Self {
            _waiter: waiter,
            _engine: engine,
        })
    }
}

/// The storage of a context's last dropped job, kept for its next one: the
/// job's record and its device-memory handles ([`Prepared`]), the two
/// allocations of a submission that do not outlive the job, so a context
/// that submits one job after another allocates neither again. Kept in
/// the context's [`crate::context::Submissions`], whose lock the
/// submission holds; one of each per context at most, charged to the
/// memory cgroup of the submission that first allocated it, and freed
/// with the context.
#[derive(Default)]
pub(crate) struct JobRoom {
    record: Option<KBox<MaybeUninit<Job>>>,
    pins: Option<PinsRoom>,
}

impl JobRoom {
    /// What is kept, taken for a submission.
    pub(super) fn take(&mut self) -> (Option<KBox<MaybeUninit<Job>>>, Option<PinsRoom>) {
        (self.record.take(), self.pins.take())
    }

    /// Keeps `record` and `pins` where room is free; what finds none is
    /// freed with the caller's value (a context has one of each at most).
    fn keep(
        &mut self,
        record: KBox<MaybeUninit<Job>>,
        pins: Option<PinsRoom>,
    ) -> (Option<KBox<MaybeUninit<Job>>>, Option<PinsRoom>) {
        let record = match self.record {
            None => self.record.replace(record),
            Some(_) => Some(record),
        };
        let pins = match (&self.pins, pins) {
            (None, Some(p)) => self.pins.replace(p),
            (_, p) => p,
        };
        (record, pins)
    }
}

/// One queued or running job.
pub(super) struct Job {
    /// Engine-wide number, increasing in submission order.
    pub(super) id: u64,
    /// Sequence number in its context.
    pub(super) seqno: u64,
    /// Its context.
    pub(super) ctx: Arc<Context>,
    /// The job pushed before it, while it waits in the engine's inbox
    /// ([`super::inbox`]).
    pub(super) link: Link,
    /// Signalled when the job finishes.
    pub(super) fence: Fence,
    /// Its hold on the device copies of its bound objects, by binding
    /// slot, and its scratch area, from its phase 2 to its clean-up; the
    /// interpreter works on these copies.
    /// Declared before `spec`: dropped (let go) before the objects' last
    /// references, so a freed object finds its copy idle.
    pub(super) device: Option<Prepared>,
    /// The same handles while not held (made at submission; the memory
    /// work item takes them out while it prepares or reclaims the job).
    pub(super) spare: Option<Prepared>,
    /// What to run.
    pub(super) spec: JobSpec,
    /// Armed on the in-fence and on the dependencies at submission;
    /// dropped with the job.
    _waiters: [Option<JobWaiter>; 2],
    /// The in-fence (if any) has signalled without error and the
    /// dependencies (if any) have signalled.
    pub(super) in_fence_done: bool,
    /// How far its grid has got: units (work-groups or pieces of split
    /// ones) placed, running and saved, and its first error (`-ETIME`
    /// means it hung, and only a hang sets that).
    pub(super) progress: JobProgress,
    /// Where it stands with device memory ([`memory`]).
    pub(super) stage: Stage,
    /// Its phase 2 found a copy it binds held by another job with pages
    /// the CPU wrote since (`EBUSY`, [`crate::vram::DeviceMemory::take`])
    /// when [`super::EngineState::releases`] was this: it is tried again
    /// once a job let device memory go, and holds nothing else back.
    pub(super) copy_wait: Option<u64>,
    /// Device memory it needs at once: its distinct objects and scratch.
    pub(super) footprint: u64,
    /// When it passed its stages.
    pub(super) times: JobTimes,
    /// The latest end of its waves that ended, modeled ns.
    pub(super) last_wave_end_ns: u64,
    /// The tiles it holds, one bit per tile (0 before its first
    /// placement); held until it ends.
    pub(super) tiles: u32,
    /// When its tiles are awake (a sleeping tile wakes first), modeled ns.
    pub(super) tiles_start_ns: u64,
}

impl Job {
    /// A job for `spec`, boxed (a context's lists hold pointers, so an idle
    /// context costs little), in `room` if given (a dropped job's record,
    /// [`Job::recycle`]), else charged to the submitter's memory cgroup.
    pub(super) fn new(
        ctx: &Arc<Context>,
        seqno: u64,
        fence: Fence,
        spec: JobSpec,
        waiters: [Option<JobWaiter>; 2],
        room: Option<KBox<MaybeUninit<Self>>>,
    ) -> Result<KBox<Self>> {
        let progress = JobProgress::for_grid(&spec.grid);
        let job = Self {
            id: 0,
            seqno,
            ctx: ctx.clone(),
            link: Link::NONE,
            fence,
            spec,
            _waiters: waiters,
            in_fence_done: false,
            progress,
            stage: Stage::Queued,
            copy_wait: None,
            device: None,
            spare: None,
            footprint: 0,
            times: JobTimes {
                seqno,
                ..JobTimes::default()
            },
            last_wave_end_ns: 0,
            tiles: 0,
            tiles_start_ns: 0,
        };
        Ok(match room {
            Some(room) => KBox::write(room, job),
            None => KBox::new(job, GFP_KERNEL_ACCOUNT)?,
        })
    }

    /// Drops a signalled job and keeps its record and the storage of its
    /// device-memory handles in its context's [`JobRoom`] for the next
    /// submission. Its handles go first (held or not), then its fields in
    /// their order, the context's reference last: still before `spec`, so
    /// a freed object finds its copy idle, as a plain drop has it. Only
    /// tries the context's submissions lock, where a job is dropped with
    /// no lock held (a [`super::DoneBatch`]): a submission holds that lock
    /// across its allocations, and the device's clean-up does not wait for
    /// one; the storage is freed if the lock is taken.
    pub(super) fn recycle(mut job: KBox<Self>) {
        let pins = job
            .device
            .take()
            .or_else(|| job.spare.take())
            .map(Prepared::into_room);
        let ctx = job.ctx.clone();
        let record = KBox::drop_contents(job);
        // Freed after the lock, if there was no room.
        let unused = ctx
            .submissions
            .try_lock()
            .map(|mut sub| sub.room.keep(record, pins));
        drop(unused);
    }

    /// Waves it can have on the device at once: one per wave slot of a
    /// device of shape `topology`, never more than its grid has.
    pub(super) fn live_waves(spec: &JobSpec, topology: &Topology) -> Result<usize> {
        let grid = &spec.grid;
        let all_waves = u64::from(grid.groups).saturating_mul(u64::from(grid.waves_per_group));
        let wave_slots =
            u64::from(topology.total_units()).saturating_mul(u64::from(topology.wave_slots));
        usize::try_from(all_waves.min(wave_slots)).map_err(|_| E2BIG)
    }

    /// The job ran past the timeout: its context turns guilty.
    pub(super) fn hung(&self) -> bool {
        self.progress.error() == ETIME.to_errno()
    }

    /// The job needs nothing more from the device.
    pub(super) fn is_finished(&self) -> bool {
        self.progress.is_finished()
    }

    /// The job could place a work-group (or a piece of one) if it fits.
    pub(super) fn has_groups_to_place(&self) -> bool {
        self.progress.has_groups_to_place()
    }

    /// The job has stored to a device copy that is not written back yet.
    pub(super) fn stored(&self) -> bool {
        self.device
            .as_ref()
            .is_some_and(|d| d.pins.iter().flatten().any(Pinned::stored))
    }
}

/// The active job among a context's `jobs` ([`ContextQueue::active`]), to
/// change while other fields of the context are in use.
pub(super) fn active_in(jobs: &mut KVec<KBox<Job>>) -> Option<&mut Job> {
    jobs.iter_mut().find(|j| !j.is_finished()).map(|j| &mut **j)
}

/// Called by a fence waiter when an in-fence signals.
///
/// # Safety
///
/// `data` is the `Engine` inside an `Arc` that the waiter keeps alive
/// ([`JobWaiter`]).
unsafe extern "C" fn fence_signalled(data: *mut c_void) {
    // SAFETY: By the function's safety requirement the engine is alive and
    // a reference to it is held for the duration of this call.
    let engine = unsafe { ArcBorrow::from_raw(data.cast::<Engine>()) };
    // Counted before the kick: the step that reads the count sees the
    // fence signalled, and looks at every context's readiness again.
    engine.fence_epoch.fetch_add(1, ordering::Release);
    Engine::kick(engine);
}
