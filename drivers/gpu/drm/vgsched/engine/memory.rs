// SPDX-License-Identifier: GPL-2.0

//! Tasks, jobs and device memory: the stages of pipelined context
//! switching on this device.
//!
//! A *task* is a context's turn on the device. *Phase 1* initialises the
//! context: a state area in device memory and a modeled init time
//! (`ctx_state_kib`, `ctx_init_us`); it stays initialised until it has no
//! work and holds no slot, when the task is cleaned up. A *sub-task* is one
//! job: its *phase 2* makes its bound objects resident and uploads them,
//! with its scratch area, then it executes (its waves), then it is cleaned
//! up (the objects it stored to written back, its device memory released)
//! before its fence signals. When each may start is the core crate's
//! pipeline ([`crate::vgsched_core::pipeline`]), in the mode and with the
//! thresholds of the run-time parameters (`params.rs`).
//!
//! Allocation and copies run in the engine's memory work item, on the
//! engine's memory queue (`WQ_MEM_RECLAIM`: a job's fence waits for its
//! phase 2 and clean-up, so they must progress under memory pressure),
//! never on the engine's own queue. The engine lock is taken only to pick
//! the next task and to hand its result back. A next task that is
//! bookkeeping alone (a phase 1 of a small state area in free chunks, a
//! phase 2 whose copies are resident and current) the engine's step does
//! itself ([`Engine::memory_at_once`]): no copy, no eviction, and the
//! residency lock only if it is free.
//!
//! A job's stages ([`Stage`]): queued, preparing (the work item has it),
//! uploading until its last copy ends in modeled time and then on the
//! device (it may place work), clean-up due once its grid is finished and
//! it stored to a device copy, cleaning up, cleaned up (its fence signals
//! when the write-back ends in modeled time). Every stage start and end is
//! recorded in the stage log (debugfs `stages`) and the job's times reach
//! `CTX_QUERY` when it signals.
//!
//! Priority and device memory compose ([`reclaim_victim`]): memory
//! held by a context that cannot run now (it holds no hardware slot, or it
//! is of a lower priority level than the job that needs the memory, and
//! nothing of it is on the device) is reclaimable: its stores are written
//! back and its hold released, and its job is prepared again when it runs.
//! Only the level in force is prepared ahead of its load, jobs are prepared
//! by priority level first and age second, and the pipeline's gates
//! ([`Engine::may_execute`]) never hold a strictly higher level back. So the memory a
//! job waits for is held only by jobs that are executing at its level or
//! above, which give it back as they end (a job's device time is its
//! grid's: the job timeout bounds a wave, not a job).
//!
//! Nothing else of a job waits for another job's length: the execution
//! gate holds a task back for the job timeout at most, and a job waiting
//! for memory ([`Blocked`]) holds back only what would take from its need;
//! a job of equal standing that fits in what is left once the executing
//! jobs give theirs back proceeds beside it ([`pipeline::room_beside`]),
//! and the waiter has the first claim on what comes back.

use kernel::{
    bindings,
    drm::gem::BaseObject,
    prelude::*,
    sync::{
        atomic::ordering,
        Arc,
        ArcBorrow, //
    },
    warn_on,
    workqueue::Work, //
};

use super::{
    dump::Ring,
    queue_at,
    queue_in,
    queue_index,
    sync::Signalling,
    ContextQueue,
    Engine,
    EngineState,
    Job, //
};
use crate::{
    context::{
        monotonic_ns,
        Context,
        PRIORITY_LEVELS, //
    },
    job::Bindings,
    params,
    vgsched_core::{
        device_memory::footprint,
        isa,
        pipeline::{
            self,
            AheadFirsts,
            Mode,
            PipelineParams,
            SubTask, //
        },
    },
    vram::{
        DeviceArea,
        DeviceMemory,
        Pinned,
        ScratchArea, //
    },
};

/// What the memory work item has to do ([`Engine::memory_want`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Want {
    /// Nothing.
    Nothing,
    /// A phase 1 or a phase 2 may start (the step may do it itself).
    Phase,
    /// A clean-up, a reclaim or a state area to give back (and maybe a
    /// phase too): the work item's.
    Other,
}

/// Stage records debugfs keeps.
pub(super) const STAGE_LOG_ENTRIES: usize = 512;

/// Where a job stands with device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    /// Waiting for phase 2.
    Queued,
    /// The memory work item is making its objects resident.
    Preparing,
    /// Its objects are resident; the last upload ends at this modeled
    /// time (ns).
    Uploading(u64),
    /// Its grid is finished: its stores wait to be written back.
    CleanUpDue,
    /// The memory work item is writing them back.
    CleaningUp,
    /// Written back; the copy ends at this modeled time (ns), when its
    /// fence may signal.
    CleanedUp(u64),
}

impl Stage {
    /// The job may place work at `now`: its objects are on the device.
    pub(super) fn on_device(self, now: u64) -> bool {
        matches!(self, Stage::Uploading(at) if at <= now)
    }

    /// The job holds device memory or the memory work item has it.
    fn busy(self) -> bool {
        self != Stage::Queued
    }
}

/// A context's phase 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PhaseOne {
    /// Not initialised.
    Idle,
    /// The memory work item allocates its state area.
    Allocating,
    /// Initialised; the init time ends at this modeled time (ns).
    Done(u64),
}

/// A stage of a task or a job, as the stage log shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StageEvent {
    Phase1Start,
    Phase1End,
    Phase2Start,
    Phase2End,
    FirstWave,
    LastWave,
    /// The engine step that collected the job, once the device reported
    /// its last wave's end (an interrupt on real hardware): at or after
    /// `LastWave`, later by as much as the virtual GPU's interpretation
    /// fell behind its modeled clock, plus the engine's wake-up.
    EndReported,
    CleanUpStart,
    CleanUpEnd,
    /// Its phase 2 found device memory full: it waits for memory to come
    /// back.
    MemoryWait,
    /// Its device memory is being reclaimed for a job that outranks it.
    Reclaim,
    /// Reclaimed: its stores are written back (at this time) and its hold
    /// released; it is queued for phase 2 again.
    Reclaimed,
    /// The task is cleaned up: its state area is released.
    TaskCleanUp,
}

impl StageEvent {
    /// Its name in debugfs.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Phase1Start => "phase1_start",
            Self::Phase1End => "phase1_end",
            Self::Phase2Start => "phase2_start",
            Self::Phase2End => "phase2_end",
            Self::FirstWave => "first_wave",
            Self::LastWave => "last_wave",
            Self::EndReported => "end_reported",
            Self::CleanUpStart => "cleanup_start",
            Self::CleanUpEnd => "cleanup_end",
            Self::MemoryWait => "memory_wait",
            Self::Reclaim => "reclaim",
            Self::Reclaimed => "reclaimed",
            Self::TaskCleanUp => "task_cleanup",
        }
    }
}

/// One entry of the stage log.
#[derive(Clone, Copy)]
pub(crate) struct StageRecord {
    /// When the stage starts or ends (modeled = monotonic nanoseconds; an
    /// end may lie ahead of the time it was recorded).
    pub(crate) time_ns: u64,
    pub(crate) client: u64,
    pub(crate) ctx: u32,
    /// The job's sequence number; 0 for a context's own stages.
    pub(crate) seqno: u64,
    pub(crate) event: StageEvent,
}

/// The stage log: a ring of [`STAGE_LOG_ENTRIES`].
pub(super) type StageLog = Ring<StageRecord, STAGE_LOG_ENTRIES>;

/// Records `event` of job `seqno` (0: the context) of `ctx` at `time_ns`.
pub(super) fn record(log: &mut StageLog, ctx: &Context, seqno: u64, event: StageEvent, t: u64) {
    log.record(StageRecord {
        time_ns: t,
        client: ctx.client,
        ctx: ctx.id,
        seqno,
        event,
    });
}

/// When a job passed its stages (0: not yet), for `CTX_QUERY`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct JobTimes {
    pub(crate) seqno: u64,
    pub(crate) phase2_start: u64,
    pub(crate) phase2_end: u64,
    pub(crate) first_wave: u64,
    pub(crate) last_wave: u64,
    pub(crate) cleanup_start: u64,
    pub(crate) cleanup_end: u64,
}

/// A job's handles on device memory, made when it is submitted (so its
/// preparation, which its fence waits for, allocates nothing) and held from
/// its phase 2 to its clean-up.
pub(super) struct Prepared {
    /// Its bound objects' copies, by binding slot (the first
    /// `bindings.len()` slots). An allocation of its own: the wave
    /// executor reads and writes device words through it while the engine
    /// holds the job (`&mut Job` covers the box, not what it points to),
    /// and the engine changes it (holds, releases, write-backs) only while
    /// no lease of the job's waves is out ([`crate::gpu::exec::Lease`]).
    pub(super) pins: KBox<Pins>,
    /// Its scratch area: a number of chunks, nothing per chunk.
    scratch: Option<ScratchArea>,
}

/// A job's handles on its bound objects' copies, by binding slot.
pub(super) type Pins = [Option<Pinned>; isa::MAX_BINDINGS];

/// The storage of a dropped job's [`Pins`], kept for the next job of its
/// context ([`super::job::JobRoom`]).
pub(super) type PinsRoom = KBox<core::mem::MaybeUninit<Pins>>;

impl Prepared {
    /// Unheld handles for a job binding `bindings` with `scratch` bytes of
    /// scratch area, in `room` if given (a dropped job's, [`Prepared::into_room`]).
    pub(super) fn new(
        memory: &Arc<DeviceMemory>,
        bindings: &Bindings,
        scratch: u64,
        room: Option<PinsRoom>,
    ) -> Result<Self> {
        let none = [const { None }; isa::MAX_BINDINGS];
        let mut pins = match room {
            Some(room) => KBox::write(room, none),
            None => KBox::new(none, GFP_KERNEL_ACCOUNT)?,
        };
        for (pin, map) in pins.iter_mut().zip(bindings.iter()) {
            *pin = Some(Pinned::new(memory, &map.owner().copy)?);
        }
        Ok(Self {
            pins,
            scratch: ScratchArea::new(memory, scratch)?,
        })
    }

    /// Lets every handle and then the scratch area go (as dropping it
    /// would), and gives back the storage of the handles, for another
    /// job's.
    pub(super) fn into_room(self) -> PinsRoom {
        let Self { pins, scratch } = self;
        let room = KBox::drop_contents(pins);
        drop(scratch);
        room
    }

    /// Holds every binding (in slot order) and places the scratch area;
    /// all or nothing. Returns when the last upload ends. Allocates
    /// nothing.
    fn hold(&mut self, memory: &DeviceMemory, bindings: &Bindings, now: u64) -> Result<u64> {
        let mut ready = now;
        let own = self.own_pins();
        let held = self
            .pins
            .iter_mut()
            .flatten()
            .zip(bindings.iter())
            .zip(own)
            .try_for_each(|((pin, map), own)| {
                ready = ready.max(memory.take(pin, map, now, own)?);
                Ok(())
            })
            .and_then(|()| match self.scratch.as_mut() {
                Some(area) => {
                    area.place()?;
                    // Modeled as zeroed on the device: it moves like an
                    // upload.
                    ready = ready.max(memory.copy_time(area.bytes(), now));
                    Ok(())
                }
                None => Ok(()),
            });
        match held {
            Ok(()) => Ok(ready),
            Err(e) => {
                self.release();
                Err(e)
            }
        }
    }

    /// [`Prepared::hold`] in the engine's step, under the engine lock: only
    /// if the residency lock is free now, every binding's copy is resident
    /// and current (nothing to upload) and the scratch area fits in chunks
    /// free now (nothing evicted). Returns when the job may start; `None`,
    /// with nothing held, otherwise (the memory work item holds it then,
    /// or finds why it cannot). Bookkeeping only, at most
    /// [`isa::MAX_BINDINGS`] copies; allocates nothing.
    fn hold_at_once(&mut self, memory: &DeviceMemory, now: u64) -> Option<u64> {
        let mut ready = now;
        let own = self.own_pins();
        let held = {
            let mut t = memory.try_table()?;
            self.pins.iter_mut().flatten().zip(own).all(|(pin, own)| {
                match memory.take_locked(&mut t, pin, None, now, own) {
                    Ok(Some(at)) => {
                        ready = ready.max(at);
                        true
                    }
                    _ => false,
                }
            })
        };
        let placed = held && self.scratch.as_mut().is_none_or(ScratchArea::place_free);
        if !placed {
            self.release();
            return None;
        }
        if let Some(area) = self.scratch.as_ref() {
            // Modeled as zeroed on the device, as in [`Prepared::hold`].
            ready = ready.max(memory.copy_time(area.bytes(), now));
        }
        Some(ready)
    }

    /// Per binding slot, the earlier slots on the same copy (an object
    /// bound twice): pins of the job's own, not another job's.
    fn own_pins(&self) -> [u32; isa::MAX_BINDINGS] {
        let mut own = [0u32; isa::MAX_BINDINGS];
        for (i, o) in own.iter_mut().enumerate() {
            if let Some(Some(pin)) = self.pins.get(i) {
                *o = self
                    .pins
                    .iter()
                    .take(i)
                    .flatten()
                    .filter(|p| p.same_copy(pin))
                    .count() as u32;
            }
        }
        own
    }

    /// Lets everything go (a spinlock and atomics only).
    pub(super) fn release(&mut self) {
        self.pins.iter_mut().flatten().for_each(Pinned::release);
        if let Some(area) = self.scratch.as_mut() {
            area.unplace();
        }
    }
}

/// A piece of work of the memory work item, taken under the engine lock.
/// `releases` is [`EngineState::releases`] when it was taken: if it did
/// not fit and nothing was released since, it waits for a release.
///
/// A phase 1's batch is kept inline: the task lives on the work item's
/// stack, one at a time, and boxing it would allocate on the path a job's
/// fence waits for.
#[expect(clippy::large_enum_variant)]
enum MemoryTask {
    /// Contexts' state areas are placed, in order: each taken out of its
    /// record (`None`: it has none) and given back.
    PhaseOne { batch: PhaseOnes, releases: u64 },
    /// A job's handles are held: taken out of it and given back.
    Prepare {
        ctx: Arc<Context>,
        job: u64,
        seqno: u64,
        bindings: Bindings,
        prepared: Prepared,
        releases: u64,
    },
    CleanUp {
        ctx: Arc<Context>,
        job: u64,
        bindings: Bindings,
        prepared: Prepared,
    },
    /// A job that cannot run now gives its device memory back: its stores
    /// are written back, then its hold goes; it is prepared again later.
    Reclaim {
        ctx: Arc<Context>,
        job: u64,
        bindings: Bindings,
        prepared: Prepared,
    },
}

impl MemoryTask {
    /// The context whose objects it copies between their pages and their
    /// device copies (a phase 2's upload, a clean-up's or a reclaim's
    /// write-back), if any: a cancellation of that context must wait for
    /// it before the context's fences signal and the CPU may touch those
    /// pages (and `BO_CPU_PREP` may let an idle copy go). `None` for a
    /// phase 1, which only places state areas: a context cancelled
    /// meanwhile finds its area dropped on hand-back.
    fn objects_ctx(&self) -> Option<&Arc<Context>> {
        match self {
            Self::PhaseOne { .. } => None,
            Self::Prepare { ctx, .. } | Self::CleanUp { ctx, .. } | Self::Reclaim { ctx, .. } => {
                Some(ctx)
            }
        }
    }
}

/// How many contexts one memory task initialises ahead of their load at
/// most: the first ones by key of [`Survey::waiting_phase_one`], found in
/// one survey. It spares a walk of every working context per context
/// initialised; what the work item does next (a clean-up that fell due,
/// a loaded context's phase 1 or 2) waits for the batch's placements,
/// each its chunks, any eviction it needs and its zeroing, all within the
/// phase-1 threshold.
const PHASE_ONE_BATCH: usize = 16;

/// The first waiting contexts by key for a phase 1 ahead of their load
/// ([`Survey::waiting_phase_one`]).
type PhaseOneFirsts = AheadFirsts<Key, PHASE_ONE_BATCH>;

/// The contexts of one phase-1 task, in the order they were chosen, each
/// with its state area taken out of its record.
///
/// # Invariants
///
/// The entries of `at` in use come first: no used entry follows an unused
/// one.
struct PhaseOnes {
    /// The contexts and their areas, then unused entries.
    at: [Option<(Arc<Context>, Option<DeviceArea>)>; PHASE_ONE_BATCH],
}

impl PhaseOnes {
    /// No phase 1 yet.
    fn new() -> Self {
        Self {
            at: core::array::from_fn(|_| None),
        }
    }

    /// The phase 1 of `ctx` alone, with its `area`.
    fn one(ctx: Arc<Context>, area: Option<DeviceArea>) -> Self {
        let mut batch = Self::new();
        // An empty batch has room.
        let _unexpected = batch.push(ctx, area);
        batch
    }

    /// Adds the phase 1 of `ctx` with its `area` at the end, if there is
    /// room; gives them back if not.
    fn push(
        &mut self,
        ctx: Arc<Context>,
        area: Option<DeviceArea>,
    ) -> core::result::Result<(), (Arc<Context>, Option<DeviceArea>)> {
        match self.at.iter_mut().find(|e| e.is_none()) {
            Some(free) => {
                // INVARIANT: the first unused entry.
                *free = Some((ctx, area));
                Ok(())
            }
            None => Err((ctx, area)),
        }
    }

    /// Whether it is full.
    fn is_full(&self) -> bool {
        self.at.iter().all(Option::is_some)
    }

    /// Whether it has no phase 1.
    fn is_empty(&self) -> bool {
        self.at.iter().all(Option::is_none)
    }

    /// The contexts and their areas, in order.
    fn iter_mut(&mut self) -> impl Iterator<Item = &mut (Arc<Context>, Option<DeviceArea>)> {
        self.at.iter_mut().map_while(Option::as_mut)
    }

    /// Takes the contexts and their areas out, in order.
    fn drain(&mut self) -> impl Iterator<Item = (Arc<Context>, Option<DeviceArea>)> + '_ {
        // INVARIANT: every entry taken ends unused.
        self.at.iter_mut().map_while(Option::take)
    }
}

/// The job (or phase 1) that found device memory full, waiting for a
/// release: what may be reclaimed for it, and what may be prepared beside
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Blocked {
    /// Its context's fence timeline (the context's identity).
    timeline: u64,
    /// The job's id; 0 for a phase 1.
    job: u64,
    /// Its priority level.
    level: u32,
    /// Its context holds a hardware slot (it is a current task).
    loaded: bool,
    /// The device memory it needs: the job's footprint, or a state area.
    need: u64,
    /// Jobs and phase 1s of equal standing prepared beside it since it
    /// found memory full ([`pipeline::PASS_LIMIT`]).
    passes: u32,
}

/// The in-fence of a job has signalled without error and its dependencies
/// have signalled (or it has none).
fn in_fence_passed(job: &Job) -> bool {
    job.in_fence_done
        || (job.spec.in_fence.as_ref().is_none_or(|f| f.status() == 1)
            && job.spec.deps.as_ref().is_none_or(|d| d.status() != 0))
}

impl ContextQueue {
    /// Phase 1 is over at `now`: the context may run its jobs.
    pub(super) fn initialised(&self, now: u64) -> bool {
        matches!(self.phase1, PhaseOne::Done(end) if end <= now)
    }

    /// It has a job that may run (not failed, in-fence passed).
    fn has_work(&self) -> bool {
        self.jobs
            .first()
            .is_some_and(|j| j.progress.error() == 0 && in_fence_passed(j))
    }

    /// Its unfinished jobs as the progress point sees them.
    fn sub_tasks(&self) -> impl Iterator<Item = SubTask> + Clone + '_ {
        self.jobs
            .iter()
            .filter(|j| !j.is_finished())
            .map(|j| SubTask {
                bytes: j.footprint,
                started: j.times.first_wave != 0,
            })
    }

    /// Device memory of its job executing now (0 if none): its task holds
    /// a hardware slot and its active job has started. An evicted context
    /// does not execute, whatever it holds.
    pub(super) fn running_bytes(&self) -> u64 {
        if self.slot.is_none() {
            return 0;
        }
        self.active()
            .filter(|j| j.times.first_wave != 0)
            .map_or(0, |j| j.footprint)
    }

    /// Nothing of its active job is on the device: no wave runs or is
    /// being saved.
    fn off_device(&self) -> bool {
        self.active()
            .is_none_or(|j| j.progress.running() == 0 && self.store.all_saved_complete(j.id))
    }

    /// Its task is cleaned up, or its state area given back for a job that
    /// outranks it: it is initialised again before it runs. A spinlock
    /// only: fine under the engine lock.
    fn release_state(&mut self, stages: &mut StageLog, now: u64) {
        self.phase1 = PhaseOne::Idle;
        record(stages, &self.ctx, 0, StageEvent::TaskCleanUp, now);
        if let Some(area) = self.state_area.as_mut() {
            area.unplace();
        }
    }

    /// Its state area could be given back now: initialised, not being
    /// destroyed, nothing of it prepared or on the device.
    fn area_idle(&self) -> bool {
        !self.ctx.cancelling()
            && matches!(self.phase1, PhaseOne::Done(_))
            && !self.staged_jobs().any(|j| j.stage.busy())
            && self.off_device()
    }

    /// Its task is over (state-area release): initialised, no work and
    /// no slot.
    fn task_over(&self) -> bool {
        let initialised = matches!(self.phase1, PhaseOne::Done(_));
        pipeline::task_over(initialised, self.jobs.len(), self.slot.is_some())
    }
}

/// Something of context `q` or of its jobs is in preparation, execution
/// or clean-up (sequential mode does one thing at a time). A prepared job
/// of a context that lost its slot does not count: it does not run, and
/// its memory is reclaimed if the one that runs needs it.
fn keeps_device_busy(q: &ContextQueue) -> bool {
    q.phase1 == PhaseOne::Allocating
        || q.staged_jobs().any(|j| match j.stage {
            Stage::Queued => false,
            Stage::Uploading(_) => q.slot.is_some(),
            _ => true,
        })
}

/// The rank of context `q` among the waiting ones at `now`, the smallest
/// first: slot selection's order, by priority level and then weight. The
/// first of them is the next task ([`Survey::next`]); it may be of a lower
/// level than a current task: what it holds is reclaimed if a job of a
/// higher level needs the memory ([`reclaim_victim`]). `None` if `q` holds
/// a slot or has no work (`work`: `q.has_work()`, which the
/// caller has read).
fn waiting_rank(q: &ContextQueue, now: u64, work: bool) -> Option<(u32, u64)> {
    (q.slot.is_none() && work).then(|| (q.ctx.priority, u64::MAX - q.entry.weight(now).milli()))
}

/// What every candidate for phase 2 shares: the settings, whether the
/// device is busy (sequential), the next task and whether every current
/// task has reached its progress point, as the survey found them.
struct Gate<'a> {
    st: &'a EngineState,
    p: PipelineParams,
    busy: bool,
    /// The next task ([`Survey::next`]).
    next: Option<usize>,
    progress: bool,
    /// A job waiting for memory, if any ([`Blocked::admits`]).
    blocked: Option<Blocked>,
    /// What may be taken beside the waiter's need ([`Survey::room`]).
    room: Option<u64>,
    /// The job that claims released memory first (context timeline, job
    /// id), if any.
    claim: Option<(u64, u64)>,
}

impl<'a> Gate<'a> {
    /// The gate under the settings `p` (read once by the caller: they may
    /// change at run time), from `survey` of the same state at the same
    /// moment.
    fn of(st: &'a EngineState, p: PipelineParams, survey: &Survey) -> Self {
        Self {
            st,
            busy: survey.busy,
            next: survey.next,
            progress: survey.progress,
            blocked: st.memory_blocked,
            room: survey.room,
            claim: st.memory_claim,
            p,
        }
    }

    /// The next task ([`Survey::next`]).
    fn next(&self) -> Option<usize> {
        self.next
    }

    /// The job of context `index` whose phase 2 may start now, if any.
    fn preparable<'q>(&self, index: usize, q: &'q ContextQueue, now: u64) -> Option<&'q Job> {
        // Without a slot, only the next task may start its first
        // sub-task, and only in pipelined mode at the progress point: the
        // rest of the tests are not needed to turn the others down.
        if q.slot.is_none() && (self.p.mode == Mode::Sequential || !self.progress) {
            return None;
        }
        if q.ctx.cancelling() || !q.initialised(now) {
            return None;
        }
        // Nothing may be beside a waiter if nothing may be taken there.
        if self
            .blocked
            .is_some_and(|b| self.room.is_none() && !b.lets_prepare(q))
        {
            return None;
        }
        let job = q
            .jobs
            .iter()
            .filter(|j| !j.is_finished())
            .take(pipeline::prepare_ahead(self.p.mode))
            .find(|j| j.stage == Stage::Queued)?;
        if job.progress.error() != 0 || !in_fence_passed(job) {
            return None;
        }
        // Waiting for another job to let a copy go: not before a release.
        if job.copy_wait == Some(self.st.releases) {
            return None;
        }
        if self
            .blocked
            .is_some_and(|b| !b.admits(q, job.footprint, self.room))
        {
            return None;
        }
        let first = q.jobs.first().is_some_and(|f| f.id == job.id);
        let allowed = match self.p.mode {
            Mode::Sequential => q.slot.is_some() && first && !self.busy,
            // The current task: the next sub-task (prepare-ahead).
            Mode::Pipelined if q.slot.is_some() => true,
            // The next task's first sub-task, at the progress point of
            // every current task.
            Mode::Pipelined => first && self.progress && self.next() == Some(index),
        };
        allowed.then_some(job)
    }
}

/// What the phase-1 and phase-2 gates read of all contexts, found in one
/// walk (the busy test included, in sequential mode), and for the memory
/// work item's choice ([`Survey::of`] with `choice`) what that choice reads.
struct Survey {
    /// State areas held by initialised contexts (or contexts in phase 1).
    held: u64,
    /// A context without a slot is initialised and has no job left: its
    /// task is ending.
    ending: bool,
    /// Something of a job or a context is in preparation, execution or
    /// clean-up (looked at in sequential mode only).
    busy: bool,
    /// A clean-up is due, or a task that is over keeps its state area.
    cleanup: bool,
    /// The first context whose first job's clean-up is due (not being
    /// cancelled); only for the choice.
    cleanup_due: Option<usize>,
    /// The level in force: the highest (lowest number) with work; only
    /// for the choice.
    level_in_force: Option<u32>,
    /// Every current task (context holding a slot) has reached the
    /// progress point: the next task's phase 2 may start.
    progress: bool,
    /// While a job waits for memory: what may be taken beside its need
    /// ([`pipeline::room_beside`]; `None`: nothing more may be, or no job
    /// waits).
    room: Option<u64>,
    /// While a job waits for memory: what is left beside its need, however
    /// often it was passed (`None`: no job waits).
    beside: Option<u64>,
    /// A context's state area, what its phase 1 takes.
    state_bytes: u64,
    /// The next task: the waiting context (with work, holding no slot)
    /// that slot selection ranks first ([`waiting_rank`]).
    next: Option<usize>,
    /// Of the contexts without a slot with an idle phase 1 and work, not
    /// being cancelled, the ones whose phase 1 goes first, and their keys
    /// ([`Choices`]): while no job waits for memory, the first may start
    /// its phase 1 ahead of its load exactly when [`Self::ahead`] lets it,
    /// and the next ones after it while the areas held stay under the
    /// threshold ([`Engine::phase_one_ahead_task`]). (A waiter lets each
    /// through by its own need: the field does not say.)
    waiting_phase_one: PhaseOneFirsts,
}

/// A [`Survey`] being taken, one context at a time.
#[derive(Default)]
struct Tally {
    /// When ([`waiting_rank`]).
    now: u64,
    /// The next task so far and its rank.
    next: Option<(usize, (u32, u64))>,
    /// The job that claims released memory first ([`Gate::claim`]).
    claim: Option<(u64, u64)>,
    waiting_phase_one: PhaseOneFirsts,
    /// Device memory of the running jobs of loaded contexts, per level.
    running: RunningBytes,
    held: u64,
    ending: bool,
    cleanup: bool,
    cleanup_due: Option<usize>,
    lead: Option<u32>,
    /// Some current task is not at its progress point.
    short: bool,
    /// Something keeps the device busy (sequential mode only).
    busy: bool,
}

impl Tally {
    /// A survey of `st` at `now` begins.
    fn at(st: &EngineState, now: u64) -> Self {
        Self {
            now,
            claim: st.memory_claim,
            ..Self::default()
        }
    }

    /// Counts context `i` (`q`); with `choice`, for the choice's fields
    /// too.
    ///
    /// Most of the contexts counted are waiting ones (no slot, no phase
    /// 1, nothing prepared): each fact is read once, and a fact that
    /// cannot count for them (running bytes, the cancellation mark of a
    /// context with no clean-up) is not read for them at all.
    fn add(&mut self, i: usize, q: &ContextQueue, p: &PipelineParams, choice: bool) {
        // Only a context holding a slot has a job executing.
        if q.slot.is_some() {
            if let Some(level) = self.running.get_mut(q.ctx.priority as usize) {
                *level = level.saturating_add(q.running_bytes());
            }
        }
        let work = q.has_work();
        if let Some(rank) = waiting_rank(q, self.now, work) {
            // The first of equal ranks, as `min_by_key` keeps it.
            if self.next.is_none_or(|(_, r)| rank < r) {
                self.next = Some((i, rank));
            }
            if q.phase1 == PhaseOne::Idle && !q.ctx.cancelling() {
                self.waiting_phase_one.keep(i, phase_one_key(q, self.claim));
            }
        }
        if q.phase1 != PhaseOne::Idle {
            self.held += 1;
            self.ending |= q.slot.is_none() && q.active().is_none();
        }
        let due = q.jobs.first().is_some_and(|j| j.stage == Stage::CleanUpDue);
        if due || q.task_over() {
            let cancelling = q.ctx.cancelling();
            // The choice's rules: off the walk otherwise.
            if choice && due && !cancelling && self.cleanup_due.is_none() {
                self.cleanup_due = Some(i);
            }
            self.cleanup |= !cancelling;
        }
        if choice && work && self.lead.is_none_or(|l| q.ctx.priority < l) {
            self.lead = Some(q.ctx.priority);
        }
        if !self.short && q.slot.is_some() {
            self.short = !pipeline::next_phase2_allowed(p, q.sub_tasks());
        }
        // Only sequential mode looks at it.
        if p.mode == Mode::Sequential && !self.busy {
            self.busy = keeps_device_busy(q);
        }
    }

    /// The survey, every context counted, while `blocked` (if any) waits
    /// for device memory in `memory`.
    fn survey(
        self,
        p: &PipelineParams,
        state_bytes: u64,
        blocked: Option<Blocked>,
        memory: &DeviceMemory,
    ) -> Survey {
        let held = self.held.saturating_mul(state_bytes);
        // What the jobs executing at the waiter's level or above give
        // back as they end.
        let room_of = |b: Blocked, passes| {
            let releasing = self
                .running
                .iter()
                .take(b.level as usize + 1)
                .fold(0u64, |sum, &r| sum.saturating_add(r));
            pipeline::room_beside(memory.avail(), releasing, b.need, passes)
        };
        let beside = blocked.and_then(|b| room_of(b, 0));
        let room = blocked
            .filter(|b| b.passes < pipeline::PASS_LIMIT)
            .and(beside);
        Survey {
            room,
            beside,
            state_bytes,
            held,
            // At the threshold, a loaded context waits for a task that is
            // ending (no slot, every job finished, its clean-ups under
            // way) to give its area back, rather than pass the threshold.
            ending: self.ending && p.mode == Mode::Pipelined && held >= p.phase1_threshold,
            busy: self.busy,
            cleanup: self.cleanup,
            cleanup_due: self.cleanup_due,
            level_in_force: self.lead,
            progress: !self.short,
            next: self.next.map(|(i, _)| i),
            waiting_phase_one: self.waiting_phase_one,
        }
    }
}

impl Survey {
    /// What the gates read, of `st` over device memory `memory`, at `now`,
    /// in one walk of the working contexts; with `choice`, what the memory
    /// work item's choice reads too (`None` otherwise).
    fn of(
        st: &EngineState,
        p: &PipelineParams,
        memory: &DeviceMemory,
        state_bytes: u64,
        now: u64,
        choice: bool,
    ) -> Self {
        let mut tally = Tally::at(st, now);
        for (i, q) in st.working_queues() {
            tally.add(i, q, p, choice);
        }
        tally.survey(p, state_bytes, st.memory_blocked, memory)
    }

    /// [`Self::of`] with the choice's fields, in the same walk as the state-area release
    /// that comes first: a task that is over (not being cancelled) gives
    /// its state area back (a spinlock only) before it is counted, so the
    /// phase-1 threshold sees it gone.
    fn releasing(
        st: &mut EngineState,
        p: &PipelineParams,
        memory: &DeviceMemory,
        state_bytes: u64,
        now: u64,
    ) -> Self {
        let mut tally = Tally::at(st, now);
        let mut released = false;
        let EngineState {
            queues,
            working,
            stages,
            ..
        } = &mut *st;
        for i in working.iter() {
            let Some(q) = queue_at(queues, i) else {
                continue;
            };
            if !q.ctx.cancelling() && q.task_over() {
                q.release_state(stages, now);
                released = true;
            }
            tally.add(i, q, p, true);
        }
        if released {
            st.released();
        }
        tally.survey(p, state_bytes, st.memory_blocked, memory)
    }

    /// Whether a context without a slot may start phase 1 now.
    fn ahead(&self, st: &EngineState, p: &PipelineParams) -> bool {
        !st.phase1_ahead_paused && pipeline::may_start_phase1(p, self.held, false, self.busy)
    }

    /// Whether the phase 1 of context `q` may start now.
    fn phase_one(&self, st: &EngineState, p: &PipelineParams, q: &ContextQueue) -> bool {
        // The tests on the settings and the slot first: past the threshold
        // they turn every context without a slot down before anything of
        // it is looked at. None ahead of its load while a job waits for
        // memory.
        (q.slot.is_some() || !st.phase1_ahead_paused)
            && pipeline::may_start_phase1(p, self.held, q.slot.is_some() && !self.ending, self.busy)
            && q.phase1 == PhaseOne::Idle
            && q.has_work()
            && !q.ctx.cancelling()
            && st.memory_blocked.is_none_or(|b| {
                // Its task beside the waiter: its state area and first job.
                let job = q.jobs.first().map_or(0, |j| j.footprint);
                b.admits(q, self.state_bytes.saturating_add(job), self.room)
            })
    }
}

/// The memory work item's candidates at one moment: for phase 1 and for
/// phase 2, the first choice among the loaded contexts of the level in
/// force and the first choice among all, and the first clean-up due.
/// Found by the [`Survey`], a look at the residents and, unless that look
/// found a first choice (and a shortcut was allowed), either the survey's
/// two candidates of the contexts without a slot (while the residents'
/// list is exact and no job waits for memory) or one look at each
/// context. All under the engine lock: what the survey read (a fence's
/// status, a context's cancellation) may change before the choice is
/// taken, as it may after, and a change queues the work item again.
struct Choices {
    /// Phase 1 of a loaded context of the level in force.
    lead_phase_one: Option<usize>,
    /// Phase 2 of a loaded context of the level in force: (context, job).
    lead_phase_two: Option<(usize, u64)>,
    /// The first clean-up due.
    cleanup_due: Option<usize>,
    /// The first choices among all contexts; `None` if not looked for
    /// (the shortcut found a leading one).
    all: Option<AnyChoices>,
}

/// The memory work item's first choices among all contexts.
#[derive(Clone, Copy)]
struct AnyChoices {
    /// Phase 1 of any context.
    phase_one: Option<usize>,
    /// Phase 2 of any context: (context, job).
    phase_two: Option<(usize, u64)>,
    /// `phase_one` is the first of the survey's waiting contexts
    /// ([`Survey::waiting_phase_one`]) and no resident may start a phase
    /// 1: the next of those may follow it in the same task.
    phase_one_ahead: bool,
}

/// A candidate's rank: its level, whether its context holds no slot,
/// whether it is not the one that waited for memory (the claim on what is
/// released), its job's number (the smallest goes first).
type Key = (u32, bool, bool, u64);

/// The key of context `q`'s phase 1 while `claim` claims released memory:
/// the highest level first, a loaded context before others, the one that
/// waited for memory first, then the oldest work.
fn phase_one_key(q: &ContextQueue, claim: Option<(u64, u64)>) -> Key {
    let oldest = q.jobs.first().map_or(u64::MAX, |j| j.id);
    let claims = claim == Some((q.ctx.timeline, 0));
    (q.ctx.priority, q.slot.is_none(), !claims, oldest)
}

/// Keeps `(at, key)` in `best` if `key` is smaller than the one kept: the
/// first of equal keys stays, as `min_by_key` keeps it.
fn keep_min<A, K: Ord>(best: &mut Option<(A, K)>, at: A, key: K) {
    if best.as_ref().is_none_or(|(_, k)| key < *k) {
        *best = Some((at, key));
    }
}

/// The best phase 1 and phase 2 among the contexts looked at:
/// `(context, key)` and `((context, job), key)`.
#[derive(Default)]
struct Best {
    /// The context whose phase 1 goes first, and its key.
    phase_one: Option<(usize, Key)>,
    /// The job whose phase 2 goes first (context, job), and its key.
    phase_two: Option<((usize, u64), Key)>,
}

impl Best {
    /// Keeps context `i`'s candidates if they are better.
    fn keep(&mut self, i: usize, (one, two): Candidates) {
        if let Some(key) = one {
            keep_min(&mut self.phase_one, i, key);
        }
        if let Some((job, key)) = two {
            keep_min(&mut self.phase_two, (i, job), key);
        }
    }

    /// A phase 1 or a phase 2 was found.
    fn found(&self) -> bool {
        self.phase_one.is_some() || self.phase_two.is_some()
    }
}

/// One context's candidates: the key of its phase 1, and its job whose
/// phase 2 may start with its key.
type Candidates = (Option<Key>, Option<(u64, Key)>);

impl Choices {
    /// The candidates at `now` under the settings `p`, from `survey` (a
    /// [`Survey::of`] with `choice`, of the same state); with `shortcut`, only
    /// the leading ones if the residents have one.
    fn of(st: &EngineState, p: &PipelineParams, survey: &Survey, now: u64, shortcut: bool) -> Self {
        let gate = Gate::of(st, *p, survey);
        let leading = |i: usize| {
            st.queues
                .get(i)
                .is_some_and(|q| survey.level_in_force == Some(q.ctx.priority) && q.slot.is_some())
        };
        let candidates = |i: usize| -> Candidates {
            let Some(q) = st.queues.get(i) else {
                return (None, None);
            };
            let one = survey
                .phase_one(st, p, q)
                .then(|| phase_one_key(q, gate.claim));
            // Phase 2: the highest level, a current task's before the next
            // task's, the one that waited for memory first, then the
            // oldest.
            let two = gate.preparable(i, q, now).map(|job| {
                let claims = gate.claim == Some((q.ctx.timeline, job.id));
                (job.id, (q.ctx.priority, q.slot.is_none(), !claims, job.id))
            });
            (one, two)
        };
        let (mut lead, mut all) = (Best::default(), Best::default());
        // The loaded contexts of the level in force first, from the
        // residents' list (exact unless a reordering is due or it was
        // lost): when one of them has a task, that is the choice, and no
        // other context is looked at. Their order does not matter: no two
        // contexts have equal keys (job numbers are unique).
        let exact = st.slots.residents_exact();
        if shortcut && exact {
            for i in st.slots.residents().filter(|&i| leading(i)) {
                lead.keep(i, candidates(i));
            }
            if lead.found() {
                return Self::from(lead, None, survey.cleanup_due, false);
            }
        }
        if exact && st.memory_blocked.is_none() {
            // Without a waiter, a context without a slot is a candidate for
            // phase 1 only as the survey found it, the first of those that
            // may begin one ([`Survey::phase_one`]), and for phase 2 only
            // if it is the next task ([`Gate::preparable`]): the residents
            // (every context holding a slot) and those two are looked at.
            for i in st.slots.residents() {
                let found = candidates(i);
                if leading(i) {
                    lead.keep(i, found);
                }
                all.keep(i, found);
            }
            let residents_none = all.phase_one.is_none();
            let ahead = survey
                .waiting_phase_one
                .first()
                .filter(|_| survey.ahead(st, p));
            if let Some((i, key)) = ahead {
                all.keep(i, (Some(key), None));
            }
            if let Some(i) = gate.next() {
                all.keep(i, (None, candidates(i).1));
            }
            let batch = residents_none && ahead.is_some();
            return Self::from(lead, Some(all), survey.cleanup_due, batch);
        }
        for i in st.working.iter() {
            let found = candidates(i);
            if leading(i) {
                lead.keep(i, found);
            }
            all.keep(i, found);
        }
        Self::from(lead, Some(all), survey.cleanup_due, false)
    }

    /// The choices from the best of the leading contexts and of all (if
    /// looked for), `ahead` as [`AnyChoices::phase_one_ahead`].
    fn from(lead: Best, all: Option<Best>, cleanup_due: Option<usize>, ahead: bool) -> Self {
        Self {
            lead_phase_one: lead.phase_one.map(|(i, _)| i),
            lead_phase_two: lead.phase_two.map(|(at, _)| at),
            cleanup_due,
            all: all.map(|all| AnyChoices {
                phase_one: all.phase_one.map(|(i, _)| i),
                phase_two: all.phase_two.map(|(at, _)| at),
                phase_one_ahead: ahead,
            }),
        }
    }
}

/// Before the phase 1 of context `index` (pipelined): if it holds a slot
/// and the state areas held (`held` bytes, as the [`Survey`] counted them)
/// reach the phase-1 threshold, gives back the state areas of contexts
/// initialised ahead of their load (no slot, nothing prepared or on the
/// device, not of a higher level), in list order, until the areas held
/// are under the threshold or none is left to give. A loaded context is
/// initialised even so ([`pipeline::may_start_phase1`]): the threshold
/// bounds initialisation ahead of a load.
fn make_phase1_room(
    st: &mut EngineState,
    p: &PipelineParams,
    state_bytes: u64,
    index: usize,
    mut held: u64,
) {
    if p.mode != Mode::Pipelined {
        return;
    }
    let Some(level) = st
        .queues
        .get(index)
        .filter(|q| q.slot.is_some())
        .map(|q| q.ctx.priority)
    else {
        return;
    };
    let now = monotonic_ns();
    let mut released = false;
    let EngineState {
        queues,
        working,
        stages,
        ..
    } = &mut *st;
    for i in working.iter() {
        if held < p.phase1_threshold {
            break;
        }
        let Some(q) = queue_at(queues, i) else {
            continue;
        };
        if q.slot.is_none() && q.ctx.priority >= level && q.area_idle() {
            // Initialised (`area_idle`): counted in `held`.
            q.release_state(stages, now);
            held = held.saturating_sub(state_bytes);
            released = true;
        }
    }
    if released {
        st.released();
    }
}

impl Engine {
    /// Queues the memory work item (a no-op if it is already queued).
    pub(super) fn queue_memory(this: ArcBorrow<'_, Self>) {
        let stopped = this.stopped.lock();
        if !*stopped {
            // Before the work item is queued: the run that clears it is
            // the one this queues or, if it is already queued, the one
            // found, which clears it after this store (a `queue_work` that
            // finds its work pending is fully ordered, and a worker clears
            // the pending bit and issues a full barrier before it calls the
            // function: `kernel/workqueue.c`).
            this.memory_pending.store(true, ordering::Release);
            let _already_queued = this.memory_wq.queue().enqueue::<_, 2>(Arc::from(this));
        }
    }

    /// Whether the memory work item has a task in hand, or is queued and
    /// has not begun its run; under the engine lock. The in-hand flag is
    /// set under that lock when the work item takes a task and cleared
    /// after the task's hand-back, so it is never clear while one is in
    /// hand; and once it is cleared the work item takes the lock again and
    /// chooses its next task from what it finds there
    /// ([`Engine::memory_work`]). The pending flag is set before each
    /// queueing and cleared as a run begins, before that run takes the
    /// lock: a holder that sees it set holds the lock before the first
    /// choice of a run still to clear it (a run that took the lock before
    /// this hold cleared it first; a later set has a run of its own,
    /// [`Engine::queue_memory`]). It may read clear while a run is queued:
    /// that costs a survey only. So a holder of the lock that sees either
    /// set need not survey the contexts for the work item, nor queue it:
    /// every change made in this hold is seen by that next choice. That
    /// keeps a long run of memory tasks (a phase 1 ahead of the load for
    /// each of thousands of waiting contexts) from costing every step a
    /// walk of the working contexts as well.
    pub(super) fn memory_busy(&self) -> bool {
        self.memory_in_hand.load(ordering::Acquire) || self.memory_pending.load(ordering::Acquire)
    }

    /// Whether the memory work item has something to do at `now`; under
    /// the engine lock, on any path (it only looks).
    pub(super) fn memory_wanted(&self, st: &EngineState, now: u64) -> bool {
        self.memory_want(st, now) != Want::Nothing
    }

    /// What the memory work item has to do at `now`, as far as the step's
    /// own memory tasks need to know ([`Engine::memory_at_once`]): a
    /// clean-up or a reclaim is never the step's, so it does not look for
    /// a task of its own then.
    pub(super) fn memory_want(&self, st: &EngineState, now: u64) -> Want {
        let p = params::pipeline();
        let survey = Survey::of(st, &p, &self.memory, self.phase_one.state_bytes, now, false);
        if survey.cleanup {
            return Want::Other;
        }
        if let Some(blocked) = st.memory_blocked {
            if reclaim_victim(st, &blocked).is_some()
                || state_area_victim(st, &blocked, survey.beside).is_some()
            {
                return Want::Other;
            }
        }
        if Self::phase_wanted(st, p, &survey, now) {
            Want::Phase
        } else {
            Want::Nothing
        }
    }

    /// Whether a context may start a phase 1 or a job a phase 2 at `now`
    /// ([`Engine::memory_want`]'s `survey`).
    fn phase_wanted(st: &EngineState, p: PipelineParams, survey: &Survey, now: u64) -> bool {
        let gate = Gate::of(st, p, survey);
        let wanted = |i: usize| {
            st.queues.get(i).is_some_and(|q| {
                survey.phase_one(st, &p, q) || gate.preparable(i, q, now).is_some()
            })
        };
        // A context without a slot qualifies for phase 1 only ahead of
        // its load, and for phase 2 only at the progress point
        // (pipelined) and if it is the next task: the residents are looked
        // at (their list is exact unless a removal is pending), then what
        // the survey found of the others. The answer is the same whichever
        // qualifying context is found.
        let exact = st.slots.residents_exact();
        if exact && st.slots.residents().any(wanted) {
            return true;
        }
        let ahead = survey.ahead(st, &p);
        let others = ahead || (p.mode == Mode::Pipelined && gate.progress);
        if !exact || st.memory_blocked.is_some() {
            // Whether a waiting context fits beside the waiter is its
            // own: each is looked at.
            return (others || !exact) && st.working.iter().any(wanted);
        }
        // Without a waiter, a context without a slot may start its phase 1
        // exactly when `ahead` and its own state let it, and only the next
        // task may start a phase 2.
        (ahead && survey.waiting_phase_one.first().is_some())
            || (p.mode == Mode::Pipelined && gate.progress && gate.next().is_some_and(wanted))
    }

    /// Does, in the engine's step, the memory work item's next task if it
    /// is short: a phase 1 whose state area is small and fits in free
    /// chunks ([`DeviceArea::place_at_once`]), or a phase 2 whose copies
    /// are resident and current and whose scratch area fits in free chunks
    /// ([`Prepared::hold_at_once`]); the task then ends at `now`, the
    /// step's time, so the step's next passes can load, place and run
    /// what it let through. Bookkeeping only, under the engine lock: no
    /// copy, no eviction, and the residency lock only if it is free (it is
    /// held across uploads). Whatever cannot be done so is put back as it
    /// was and left to the work item. Nothing while the work item has a
    /// task in hand or is queued ([`Engine::memory_busy`]): its choices
    /// assume one task at a time, and a queued run does the task. Returns
    /// whether a task was done.
    pub(super) fn memory_at_once(&self, st: &mut EngineState, now: u64) -> bool {
        if self.memory_busy() {
            return false;
        }
        let Some(task) = self.next_task(st, now, true) else {
            return false;
        };
        match task {
            // One context (`next_task` takes no more at once).
            MemoryTask::PhaseOne {
                mut batch,
                releases,
            } => {
                let mut done = false;
                for (ctx, mut area) in batch.drain() {
                    if !done && area.as_mut().is_none_or(DeviceArea::place_at_once) {
                        // The lock was held since the task was taken: the
                        // context is there, and nothing comes back.
                        let unused = self.phase_one_done(st, &ctx, area, Ok(()), now, releases);
                        warn_on!(unused.is_some());
                        done = true;
                        continue;
                    }
                    // The lock was held since: nothing comes back.
                    warn_on!(Self::phase_one_untried(st, &ctx, area).is_some());
                }
                done
            }
            MemoryTask::Prepare {
                ctx,
                job,
                seqno,
                bindings,
                mut prepared,
                releases,
            } => {
                // The job's own references stay: dropping these clones
                // under the lock unmaps nothing.
                drop(bindings);
                if let Some(ready) = prepared.hold_at_once(&self.memory, now) {
                    let unused = Self::prepare_done(
                        st,
                        &ctx,
                        job,
                        seqno,
                        Ok(ready),
                        prepared,
                        now,
                        releases,
                    );
                    warn_on!(unused.is_some());
                    return true;
                }
                if let Some(j) =
                    queue_in(&mut st.queues, &ctx).and_then(|q| find_job_of(&mut q.jobs, job))
                {
                    j.spare = Some(prepared);
                    j.stage = Stage::Queued;
                }
                false
            }
            // `next_task` gives no other task at once.
            MemoryTask::CleanUp { .. } | MemoryTask::Reclaim { .. } => {
                warn_on!(true);
                false
            }
        }
    }

    /// The next piece of work, after the state areas of tasks that are
    /// over are released: the phase 1 or phase 2 of a loaded context of
    /// the level in force; else a clean-up if one is due (it gives memory
    /// back), a reclaim or a state area released if memory is blocked, a
    /// phase 1, else the job whose phase 2 may start, highest priority
    /// level first, a current task's first, then oldest first.
    ///
    /// `at_once` (the engine's step, [`Engine::memory_at_once`]): only a
    /// phase 1 or a phase 2 that comes first in that order, and `None`
    /// while a job waits for memory (what is prepared beside it counts
    /// against it, [`EngineState::count_pass`]) or when a clean-up would
    /// come first: what is left is the work item's.
    fn next_task(&self, st: &mut EngineState, now: u64, at_once: bool) -> Option<MemoryTask> {
        if at_once && st.memory_blocked.is_some() {
            return None;
        }
        let p = params::pipeline();
        let state_bytes = self.phase_one.state_bytes;
        // State areas of tasks that are over are released first, in the
        // survey's walk.
        let mut survey = Survey::releasing(st, &p, &self.memory, state_bytes, now);
        let releases = st.releases;
        // The job that waited for memory, once some came back, before the
        // others of its standing: nothing of theirs is initialised (or
        // prepared) again into what was given back for it.
        let leading = |level| survey.level_in_force == Some(level);
        if let Some((qi, id, _)) = claimant(st, &p, &survey, now).filter(|c| leading(c.2)) {
            return Self::prepare_task(st, qi, id, releases);
        }
        let mut choices = Choices::of(st, &p, &survey, now, true);
        // The loaded contexts of the level in force go before everything
        // else: a preempting job's phase 1 and phase 2 do not wait behind
        // lower levels' clean-ups.
        if let Some(i) = choices.lead_phase_one {
            return self.phase_one_task(st, &p, releases, i, survey.held);
        }
        // (A queued job always has its spare handles: this finds one.)
        let lead_two = choices.lead_phase_two;
        if let Some(task) = lead_two.and_then(|(qi, id)| Self::prepare_task(st, qi, id, releases)) {
            return Some(task);
        }
        if choices.all.is_none() {
            // A leading task was found and could not start (a queued job
            // always has its spare handles: not expected): the others.
            choices = Choices::of(st, &p, &survey, now, false);
        }
        if at_once && choices.cleanup_due.is_some() {
            return None;
        }
        if let Some(qi) = choices.cleanup_due {
            let EngineState { queues, stages, .. } = st;
            let q = queue_at(queues, qi)?;
            let job = q.jobs.first_mut()?;
            let prepared = job.device.take()?;
            job.stage = Stage::CleaningUp;
            job.times.cleanup_start = now;
            record(stages, &q.ctx, job.seqno, StageEvent::CleanUpStart, now);
            return Some(MemoryTask::CleanUp {
                ctx: q.ctx.clone(),
                job: job.id,
                bindings: job.spec.bindings.clone(),
                prepared,
            });
        }
        if let Some(blocked) = st.memory_blocked {
            // What cannot run now gives its memory back: a prepared job
            // first, then a state area of a context with nothing prepared
            // (initialised again once the blocked job fits).
            if let Some((qi, id)) = reclaim_victim(st, &blocked) {
                let EngineState { queues, stages, .. } = st;
                let q = queue_at(queues, qi)?;
                let job = find_job_of(&mut q.jobs, id)?;
                let prepared = job.device.take()?;
                job.stage = Stage::Preparing;
                record(stages, &q.ctx, job.seqno, StageEvent::Reclaim, now);
                return Some(MemoryTask::Reclaim {
                    ctx: q.ctx.clone(),
                    job: id,
                    bindings: job.spec.bindings.clone(),
                    prepared,
                });
            }
            if let Some(qi) = state_area_victim(st, &blocked, survey.beside) {
                let EngineState { queues, stages, .. } = st;
                queues.get_mut(qi)?.release_state(stages, now);
                // The blocked one is tried again (below), with the others
                // the release lets through.
                st.released();
                survey = Survey::of(st, &p, &self.memory, state_bytes, now, true);
                choices = Choices::of(st, &p, &survey, now, false);
            }
            // Otherwise only what stands above it, or fits beside its
            // need, may try (below).
        }
        let all = choices.all?;
        // The claimant before its equals here too (after a state area was
        // given back for it, say), unless a higher level is a candidate.
        let claim = claimant(st, &p, &survey, now);
        if let Some((qi, id, level)) = claim {
            let level_of =
                |i: Option<usize>| i.and_then(|i| st.queues.get(i)).map(|q| q.ctx.priority);
            let higher = [
                level_of(all.phase_one),
                level_of(all.phase_two.map(|(i, _)| i)),
            ]
            .into_iter()
            .flatten()
            .any(|l| l < level);
            if !higher {
                return Self::prepare_task(st, qi, id, releases);
            }
        }
        if all.phase_one_ahead && claim.is_none() && !at_once {
            return self.phase_one_ahead_task(st, &p, releases, &survey);
        }
        if let Some(i) = all.phase_one {
            return self.phase_one_task(st, &p, releases, i, survey.held);
        }
        let (qi, id) = all.phase_two?;
        Self::prepare_task(st, qi, id, releases)
    }

    /// Starts the phase 2 of job `id` of context `qi` (a [`Choices`]
    /// candidate).
    fn prepare_task(st: &mut EngineState, qi: usize, id: u64, releases: u64) -> Option<MemoryTask> {
        st.count_pass(qi);
        let q = queue_at(&mut st.queues, qi)?;
        let ctx = q.ctx.clone();
        let job = find_job_of(&mut q.jobs, id)?;
        let prepared = job.spare.take()?;
        job.stage = Stage::Preparing;
        Some(MemoryTask::Prepare {
            ctx,
            job: job.id,
            seqno: job.seqno,
            bindings: job.spec.bindings.clone(),
            prepared,
            releases,
        })
    }

    /// Starts the phase 1 of context `i` (a [`Choices`] candidate), with
    /// `held` bytes of state areas held (the [`Survey`]'s count).
    fn phase_one_task(
        &self,
        st: &mut EngineState,
        p: &PipelineParams,
        releases: u64,
        i: usize,
        held: u64,
    ) -> Option<MemoryTask> {
        make_phase1_room(st, p, self.phase_one.state_bytes, i, held);
        st.count_pass(i);
        let q = queue_at(&mut st.queues, i)?;
        q.phase1 = PhaseOne::Allocating;
        Some(MemoryTask::PhaseOne {
            batch: PhaseOnes::one(q.ctx.clone(), q.state_area.take()),
            releases,
        })
    }

    /// Starts the phase 1 ahead of their load of the first of `survey`'s
    /// waiting contexts ([`AnyChoices::phase_one_ahead`]: no job waits for
    /// memory, nothing claims it, no resident may start a phase 1) and of
    /// the next ones in key order while the areas held with theirs stay
    /// under the threshold ([`Survey::ahead`] with each counted; in
    /// sequential mode no context begins one ahead of its load). These are
    /// what as many choices in a row would take at this moment: starting a
    /// phase 1 ahead of a load changes nothing those choices read but the
    /// areas held, and a phase 1 of any context goes before every phase 2
    /// but a loaded context's of the level in force, which was looked for
    /// first. No pass is counted: no job waits.
    fn phase_one_ahead_task(
        &self,
        st: &mut EngineState,
        p: &PipelineParams,
        releases: u64,
        survey: &Survey,
    ) -> Option<MemoryTask> {
        let state_bytes = self.phase_one.state_bytes;
        let mut batch = PhaseOnes::new();
        let mut held = survey.held;
        for &(i, _) in survey.waiting_phase_one.as_slice() {
            // The first was let through by `ahead`. As many places as
            // kept contexts: never full.
            let more = pipeline::may_start_phase1(p, held, false, survey.busy);
            if (!batch.is_empty() && !more) || batch.is_full() {
                break;
            }
            let Some(q) = queue_at(&mut st.queues, i) else {
                continue;
            };
            if batch.push(q.ctx.clone(), q.state_area.take()).is_ok() {
                q.phase1 = PhaseOne::Allocating;
                held = held.saturating_add(state_bytes);
            }
        }
        (!batch.is_empty()).then_some(MemoryTask::PhaseOne { batch, releases })
    }

    /// The memory work item: runs its work until none is left, or, while
    /// a cancellation waits for it ([`Engine::wait_for_memory_work`]),
    /// one task per run, queueing itself again: that wait covers the task
    /// in hand and at most one more, never the whole backlog.
    pub(super) fn memory_work(this: ArcBorrow<'_, Self>) {
        // Before the lock ([`Engine::memory_busy`]): a holder that still
        // sees it set holds the lock before this run's first choice.
        this.memory_pending.store(false, ordering::Release);
        // A phase 1 is usually followed at once by its context's phase 2:
        // the engine is kicked after that, or when the work runs out.
        loop {
            let task = {
                let mut st = this.lock();
                if this.closed() {
                    return;
                }
                let task = this.next_task(&mut st, monotonic_ns(), false);
                // Under the lock: a cancellation sees it (or, after it, the
                // cancelled context is not picked). A phase 1 is not
                // waited for.
                let on = task
                    .as_ref()
                    .and_then(MemoryTask::objects_ctx)
                    .map_or(0, |ctx| Arc::as_ptr(ctx) as usize);
                this.memory_task_ctx.store(on, ordering::Relaxed);
                this.memory_in_hand.store(task.is_some(), ordering::Relaxed);
                task
            };
            let Some(task) = task else {
                if this.memory_kick_owed.xchg(false, ordering::Relaxed) {
                    Self::kick(this);
                }
                return;
            };
            let phase_one = matches!(task, MemoryTask::PhaseOne { .. });
            match task {
                MemoryTask::PhaseOne { batch, releases } => Self::phase_one(this, batch, releases),
                MemoryTask::Prepare {
                    ctx,
                    job,
                    seqno,
                    bindings,
                    prepared,
                    releases,
                } => Self::prepare(this, &ctx, job, seqno, &bindings, prepared, releases),
                MemoryTask::CleanUp {
                    ctx,
                    job,
                    bindings,
                    prepared,
                } => Self::clean_up_job(this, &ctx, job, &bindings, prepared),
                MemoryTask::Reclaim {
                    ctx,
                    job,
                    bindings,
                    prepared,
                } => Self::reclaim(this, &ctx, job, &bindings, prepared),
            }
            // Over, with all it did: a cancellation that reads this may
            // signal that context's fences, and the step may do memory
            // tasks itself.
            this.memory_task_ctx.store(0, ordering::Release);
            this.memory_in_hand.store(false, ordering::Release);
            if phase_one {
                this.memory_kick_owed.store(true, ordering::Relaxed);
            } else {
                this.memory_kick_owed.store(false, ordering::Relaxed);
                Self::kick(this);
            }
            if this.memory_waiters.load(ordering::Relaxed) != 0 {
                // The rest in a run of its own (a no-op once shut down).
                Self::queue_memory(this);
                return;
            }
        }
    }

    /// The context (its address) whose upload or write-back the memory
    /// work item has in hand, if any. Under the engine lock, a
    /// cancellation that finds none of its contexts here need not wait
    /// for that work item: it takes no cancelled context's task after the
    /// mark ([`Context::start_cancelling`]), and a phase 1 of one in hand
    /// only places a state area (dropped on hand-back).
    pub(super) fn memory_work_on(&self) -> Option<usize> {
        match self.memory_task_ctx.load(ordering::Acquire) {
            0 => None,
            ctx => Some(ctx),
        }
    }

    /// Waits until the memory work item has finished the task in hand
    /// (and at most one more): it takes one task per run meanwhile.
    pub(super) fn wait_for_memory_work(&self) {
        self.memory_waiters.add(1u32, ordering::Relaxed);
        // SAFETY: `self.memory_work` is a live, initialised work item.
        unsafe { bindings::flush_work(Work::raw_get(&self.memory_work)) };
        self.memory_waiters.fetch_sub(1u32, ordering::Relaxed);
    }

    /// Phase 1 of the contexts of `batch`, in order: each one's state area
    /// placed, then its init time; after one that could not be placed, the
    /// rest are idle again, untried, as is one whose context is being
    /// cancelled. Allocates nothing: a job's fence waits for it.
    fn phase_one(this: ArcBorrow<'_, Self>, mut batch: PhaseOnes, releases: u64) {
        let signalling = Signalling::begin();
        // Placed in order, until one fails: the rest are not tried, nor
        // is a context being cancelled (its area would only be dropped).
        let mut tried: [Option<(u64, Result)>; PHASE_ONE_BATCH] = [None; PHASE_ONE_BATCH];
        for ((ctx, area), outcome) in batch.iter_mut().zip(tried.iter_mut()) {
            if ctx.cancelling() {
                continue;
            }
            let start = monotonic_ns();
            let placed = area.as_mut().map_or(Ok(()), DeviceArea::place);
            *outcome = Some((start, placed));
            if placed.is_err() {
                break;
            }
        }
        // The references and the areas of contexts gone meanwhile, dropped
        // once the lock is released: one place for each of the batch.
        let mut unused = PhaseOnes::new();
        let mut st = this.lock();
        let mut released = false;
        for ((ctx, area), outcome) in batch.drain().zip(tried) {
            let mut gone = match outcome {
                Some((start, placed)) => {
                    this.phase_one_done(&mut st, &ctx, area, placed, start, releases)
                }
                None => Self::phase_one_untried(&mut st, &ctx, area),
            };
            // What a context gone meanwhile had placed comes back now (a
            // spinlock): a phase 1 of the same batch that found memory full
            // is tried again.
            if let Some(area) = gone.as_mut() {
                released |= area.is_placed();
                area.unplace();
            }
            // One place for each of the batch: never full.
            let _unexpected = unused.push(ctx, gone);
        }
        if released {
            st.released();
        }
        drop(st);
        drop(signalling);
        drop(unused);
    }

    /// Under the engine lock, a phase 1 of `ctx` taken and not tried (one
    /// before it in its task failed, its context is being cancelled, or it
    /// could not be done at once): it
    /// is idle again with its `area`. Returns the area of a context gone
    /// meanwhile, to drop once the lock is released.
    fn phase_one_untried(
        st: &mut EngineState,
        ctx: &Arc<Context>,
        area: Option<DeviceArea>,
    ) -> Option<DeviceArea> {
        let Some(q) = queue_in(&mut st.queues, ctx) else {
            return area;
        };
        q.state_area = area;
        q.phase1 = PhaseOne::Idle;
        None
    }

    /// Under the engine lock, the end of `ctx`'s phase 1 started at `start`
    /// (`placed`: how placing its `area` went). Returns the area of a
    /// context gone meanwhile, to drop once the lock is released.
    fn phase_one_done(
        &self,
        st: &mut EngineState,
        ctx: &Arc<Context>,
        mut area: Option<DeviceArea>,
        placed: Result,
        start: u64,
        releases: u64,
    ) -> Option<DeviceArea> {
        let full = matches!(placed, Err(e) if e == ENOSPC);
        let loaded = st.queue(ctx).is_some_and(|q| q.slot.is_some());
        let need = self.phase_one.state_bytes;
        st.wait_for_release(full, releases, Blocked::of(ctx, 0, loaded, need));
        if placed.is_ok() {
            st.claimed(ctx, 0);
        }
        let EngineState {
            queues,
            stages,
            next_event_ns,
            ..
        } = st;
        // Gone meanwhile: the area goes once the lock is released.
        if let Some(q) = queue_in(queues, ctx) {
            q.state_area = area.take();
            if placed.is_ok() {
                let end = start.saturating_add(self.phase_one.init_ns);
                *next_event_ns = (*next_event_ns).min(end);
                q.phase1 = PhaseOne::Done(end);
                q.phase1_times = (start, end);
                record(stages, ctx, 0, StageEvent::Phase1Start, start);
                record(stages, ctx, 0, StageEvent::Phase1End, end);
            } else {
                // Tried again when memory comes back.
                q.phase1 = PhaseOne::Idle;
            }
        }
        area
    }

    /// Phase 2 of a job: its objects made resident and its scratch area
    /// placed, through the handles made at its submission. On `EBUSY` (a
    /// copy it binds is held by another job and is stale or has pages the
    /// CPU wrote since) it waits, queued, for the next release of device
    /// memory ([`Job::copy_wait`]). On `ENOSPC` the job waits, queued: what
    /// cannot run now is reclaimed for it, and until memory is given back
    /// only what stands above it, or fits beside its need, is prepared
    /// ([`Blocked::admits`]). Allocates nothing: its fence waits for it.
    fn prepare(
        this: ArcBorrow<'_, Self>,
        ctx: &Arc<Context>,
        id: u64,
        seqno: u64,
        bindings: &Bindings,
        mut prepared: Prepared,
        releases: u64,
    ) {
        let _signalling = Signalling::begin();
        let start = monotonic_ns();
        let held = prepared.hold(&this.memory, bindings, start);
        let unused = {
            let mut st = this.lock();
            Self::prepare_done(&mut st, ctx, id, seqno, held, prepared, start, releases)
        };
        drop(unused);
    }

    /// Under the engine lock, the end of the phase 2 of job `id` (`seqno`)
    /// of `ctx` started at `start` (`held`: how holding its `prepared`
    /// handles went). Returns the handles of a job cancelled meanwhile, to
    /// let go once the lock is released.
    #[expect(clippy::too_many_arguments)]
    fn prepare_done(
        st: &mut EngineState,
        ctx: &Arc<Context>,
        id: u64,
        seqno: u64,
        held: Result<u64>,
        prepared: Prepared,
        start: u64,
        releases: u64,
    ) -> Option<Prepared> {
        // `EBUSY`: a copy it binds is held by another job with pages the
        // CPU wrote since; it waits for a release of its own, as no memory
        // it could reclaim would help, and holds nothing else back.
        let full = matches!(held, Err(e) if e == ENOSPC);
        let copy_wait = match held {
            Err(e) if e == EBUSY => Some(releases).filter(|&r| r == st.releases),
            _ => None,
        };
        let (loaded, need) = st.queue(ctx).map_or((false, 0), |q| {
            let need = q
                .jobs
                .iter()
                .find(|j| j.id == id)
                .map_or(0, |j| j.footprint);
            (q.slot.is_some(), need)
        });
        let waits = st.wait_for_release(full, releases, Blocked::of(ctx, id, loaded, need));
        if held.is_ok() {
            st.claimed(ctx, id);
        }
        st.phase1_ahead_paused = full;
        let EngineState {
            queues,
            stages,
            next_event_ns,
            ..
        } = &mut *st;
        let mut failed = false;
        let mut unused = None;
        match queue_in(queues, ctx).and_then(|q| find_job_of(&mut q.jobs, id)) {
            Some(job) => match held {
                Ok(ready) => {
                    job.device = Some(prepared);
                    job.copy_wait = None;
                    *next_event_ns = (*next_event_ns).min(ready);
                    job.stage = Stage::Uploading(ready);
                    job.times.phase2_start = start;
                    job.times.phase2_end = ready;
                    record(stages, ctx, seqno, StageEvent::Phase2Start, start);
                    record(stages, ctx, seqno, StageEvent::Phase2End, ready);
                }
                Err(e) => {
                    job.spare = Some(prepared);
                    job.stage = Stage::Queued;
                    job.copy_wait = copy_wait;
                    if waits {
                        record(stages, ctx, seqno, StageEvent::MemoryWait, start);
                    }
                    if !full && e != EBUSY {
                        // A page table that does not match its object: it
                        // fails, as a submission that could not be mapped
                        // would.
                        job.progress.fail(e.to_errno());
                        failed = true;
                    }
                }
            },
            // Cancelled meanwhile: its hold goes, outside the lock.
            None => unused = Some(prepared),
        }
        if let Some(i) = queue_index(&st.queues, ctx).filter(|_| failed) {
            st.list_for_refresh(i);
        }
        unused
    }

    /// Writes back the objects a finished job stored to and lets its fence
    /// signal when the copy ends in modeled time. On the way to that fence:
    /// no allocation and no lock but the engine's and the copy engine's
    /// spinlock; the job's device memory goes with the job, after its
    /// fence.
    fn clean_up_job(
        this: ArcBorrow<'_, Self>,
        ctx: &Arc<Context>,
        id: u64,
        bindings: &Bindings,
        mut prepared: Prepared,
    ) {
        let signalling = Signalling::begin();
        let now = monotonic_ns();
        let (done, error) = this.write_back_all(&mut prepared, bindings, now);
        let unused = this.hand_back(ctx, id, error, prepared, |job, prepared, stages| {
            job.device = Some(prepared);
            job.stage = Stage::CleanedUp(done);
            job.times.cleanup_end = done;
            record(stages, ctx, job.seqno, StageEvent::CleanUpEnd, done);
        });
        // A hold of a job gone meanwhile is let go outside the section.
        drop(signalling);
        drop(unused);
    }

    /// Reclaims the device memory of a job that cannot run now: writes
    /// back what it stored (so its partial results are in system memory,
    /// which no one else reads before its fence), releases its hold, and
    /// leaves it queued, to be prepared again when it may run.
    fn reclaim(
        this: ArcBorrow<'_, Self>,
        ctx: &Arc<Context>,
        id: u64,
        bindings: &Bindings,
        mut prepared: Prepared,
    ) {
        let signalling = Signalling::begin();
        let now = monotonic_ns();
        let (done, error) = this.write_back_all(&mut prepared, bindings, now);
        let bytes = prepared
            .pins
            .iter()
            .flatten()
            .map(Pinned::bytes)
            .sum::<u64>();
        this.memory.count_reclaim(bytes, done.saturating_sub(now));
        prepared.release();
        let unused = this.hand_back(ctx, id, error, prepared, |job, prepared, stages| {
            job.spare = Some(prepared);
            job.stage = Stage::Queued;
            job.times.phase2_start = 0;
            job.times.phase2_end = 0;
            record(stages, ctx, job.seqno, StageEvent::Reclaimed, done);
        });
        // The blocked job is tried again.
        this.lock().released();
        drop(signalling);
        drop(unused);
    }

    /// Under the engine lock, fails job `id` of `ctx` with `error` (if not
    /// 0) and gives it `prepared` back through `f`; returns `prepared` if
    /// the job is gone (cancelled meanwhile), to drop once the lock is
    /// released.
    fn hand_back(
        &self,
        ctx: &Arc<Context>,
        id: u64,
        error: i32,
        prepared: Prepared,
        f: impl FnOnce(&mut Job, Prepared, &mut StageLog),
    ) -> Option<Prepared> {
        let mut st = self.lock();
        let EngineState {
            queues,
            stages,
            next_event_ns,
            ..
        } = &mut *st;
        let left = match queue_in(queues, ctx).and_then(|q| find_job_of(&mut q.jobs, id)) {
            Some(job) => {
                if error != 0 {
                    job.progress.fail(error);
                }
                f(job, prepared, stages);
                // A stage that ends later: the timer's next event.
                if let Stage::Uploading(at) | Stage::CleanedUp(at) = job.stage {
                    *next_event_ns = (*next_event_ns).min(at);
                }
                None
            }
            None => Some(prepared),
        };
        if let Some(i) = queue_index(&st.queues, ctx).filter(|_| error != 0) {
            st.list_for_refresh(i);
        }
        left
    }

    /// Writes back every pinned object of `prepared` the job stored to;
    /// returns when the last copy ends in modeled time and the first error
    /// (0 if none).
    fn write_back_all(&self, prepared: &mut Prepared, bindings: &Bindings, now: u64) -> (u64, i32) {
        let mut done = now;
        let mut error = 0;
        for (pin, map) in prepared.pins.iter_mut().flatten().zip(bindings.iter()) {
            if pin.stored() {
                match self.memory.write_back(pin, map, now) {
                    Ok(at) => done = done.max(at),
                    Err(e) => error = e.to_errno(),
                }
            }
        }
        (done, error)
    }

    /// Memory came back outside the memory work item (a job dropped, an
    /// object forgotten): prepare again what waited for it.
    pub(crate) fn memory_released(this: ArcBorrow<'_, Self>) {
        let wanted = {
            let mut st = this.lock();
            st.released();
            !this.memory_busy() && this.memory_wanted(&st, monotonic_ns())
        };
        if wanted {
            Self::queue_memory(this);
        }
    }

    /// Device memory a job needs at once: its distinct objects and its
    /// scratch area; `E2BIG` if it can never have it beside its own
    /// context's state area. Every other context's state area and every
    /// other job's hold can be given back for it ([`reclaim_victim`],
    /// [`state_area_victim`]), so that is the only limit.
    pub(super) fn footprint(&self, bindings: &Bindings, scratch: u64) -> Result<u64> {
        let distinct = bindings.iter().enumerate().filter_map(|(i, map)| {
            let id = map.owner().id;
            let first = !bindings.iter().take(i).any(|m| m.owner().id == id);
            first.then(|| map.owner().size() as u64)
        });
        let room = self
            .memory
            .size()
            .saturating_sub(self.phase_one.state_bytes);
        match footprint(Iterator::chain(distinct, core::iter::once(scratch))) {
            Some(bytes) if bytes <= room => Ok(bytes),
            _ => Err(E2BIG),
        }
    }

    /// How long the execution gate may hold a task back: the job timeout.
    pub(super) fn gate_hold_ns(&self) -> u64 {
        u64::from(self.topology.job_timeout_ms).saturating_mul(1_000_000)
    }

    /// The pipeline's gate before a task's first job executes, for `q` at
    /// `now`: its first job of the task, prepared, may start executing now,
    /// while the running jobs of the loaded contexts of each priority level
    /// hold `running[level]` bytes. Only the running jobs of its own level
    /// and higher ones count: the gate orders tasks of equal standing and
    /// never holds a strictly higher level back, which preempts as slot
    /// selection says. Sequential mode runs one job at a time already.
    ///
    /// A closed gate holds the job back, once it is on the device, for
    /// `hold_ns` at most ([`pipeline::execution_gate_opens`]); the end of
    /// the hold is an event of the timer (`next_event_ns`).
    pub(super) fn may_execute(
        q: &mut ContextQueue,
        running: &RunningBytes,
        p: &PipelineParams,
        (now, hold_ns): (u64, u64),
        next_event_ns: &mut u64,
    ) -> bool {
        let Some(job) = q
            .active()
            .filter(|_| p.mode == Mode::Pipelined && !q.task_started)
        else {
            q.gate_held_since = 0;
            return true;
        };
        let up_to = running
            .iter()
            .take(q.ctx.priority as usize + 1)
            .fold(0u64, |sum, &b| sum.saturating_add(b));
        let others = up_to.saturating_sub(q.running_bytes());
        let (bytes, on_device) = (job.footprint, job.stage.on_device(now));
        if pipeline::next_may_execute(p, others, bytes) {
            q.gate_held_since = 0;
            return true;
        }
        // The hold counts from when the gate is all that keeps it back.
        if !on_device && q.gate_held_since == 0 {
            return false;
        }
        if q.gate_held_since == 0 {
            q.gate_held_since = now;
        }
        let held = now.saturating_sub(q.gate_held_since);
        let open = pipeline::execution_gate_opens(p, others, bytes, held, hold_ns);
        if !open {
            *next_event_ns = (*next_event_ns).min(q.gate_held_since.saturating_add(hold_ns));
        }
        open && on_device
    }
}

/// Device memory of the running jobs of loaded contexts, per priority
/// level.
pub(super) type RunningBytes = [u64; PRIORITY_LEVELS as usize];

/// [`RunningBytes`] of `queues` (only those with a slot count).
pub(super) fn running_bytes<'a>(queues: impl Iterator<Item = &'a ContextQueue>) -> RunningBytes {
    let mut running = [0u64; PRIORITY_LEVELS as usize];
    for q in queues {
        if let Some(level) = running.get_mut(q.ctx.priority as usize) {
            *level = level.saturating_add(q.running_bytes());
        }
    }
    running
}

impl EngineState {
    /// The working contexts ([`EngineState::working`]) with their
    /// positions, in list order: every context with anything for the
    /// memory work item or the pipeline's gates to look at (a settled one
    /// has no job, no phase 1 and no slot).
    pub(super) fn working_queues(&self) -> impl Iterator<Item = (usize, &ContextQueue)> + '_ {
        self.working
            .iter()
            .filter_map(|i| Some((i, &**self.queues.get(i)?)))
    }

    /// Device memory came back: whatever waited for it is tried again.
    pub(super) fn released(&mut self) {
        self.releases = self.releases.wrapping_add(1);
        self.memory_blocked = None;
    }

    /// A phase 1 or phase 2 taken when [`EngineState::releases`] was
    /// `releases` found the memory `full`: it waits for a release, unless
    /// one came meanwhile (then it is simply tried again). One prepared
    /// beside a waiter that does not stand above it leaves the waiter
    /// waiting (its try was counted as a pass): it is tried again once
    /// memory comes back, or beside the waiter while passes are left.
    /// Returns whether it waits.
    fn wait_for_release(&mut self, full: bool, releases: u64, blocked: Blocked) -> bool {
        if !full || self.releases != releases {
            return false;
        }
        match self.memory_blocked {
            Some(waiter)
                if waiter.timeline != blocked.timeline && !blocked.stands_above(&waiter) => {}
            _ => {
                self.memory_blocked = Some(blocked);
                self.memory_claim = Some((blocked.timeline, blocked.job));
            }
        }
        true
    }

    /// Job `job` (0: the phase 1) of `ctx` got its memory: if it held the
    /// claim on what is released, the claim goes.
    fn claimed(&mut self, ctx: &Context, job: u64) {
        if self.memory_claim == Some((ctx.timeline, job)) {
            self.memory_claim = None;
        }
    }

    /// Something of context `qi` is about to be prepared: if that is
    /// beside a job waiting for memory (the waiter does not let it go
    /// first on standing), it counts as a pass.
    fn count_pass(&mut self, qi: usize) {
        let EngineState {
            memory_blocked,
            queues,
            ..
        } = self;
        if let (Some(b), Some(q)) = (memory_blocked.as_mut(), queues.get(qi)) {
            if !b.lets_prepare(q) {
                b.passes = b.passes.saturating_add(1);
            }
        }
    }
}

impl Blocked {
    /// Job `job` (0: the phase 1) of `ctx` found device memory full
    /// needing `need` bytes; `loaded`: it holds a slot.
    fn of(ctx: &Context, job: u64, loaded: bool, need: u64) -> Self {
        Self {
            timeline: ctx.timeline,
            job,
            level: ctx.priority,
            loaded,
            need,
            passes: 0,
        }
    }

    /// It stands above `other`: what it would be prepared beside
    /// ([`Blocked::lets_prepare`]) with the standing of `other`.
    fn stands_above(&self, other: &Blocked) -> bool {
        self.level < other.level || (self.level == other.level && self.loaded && !other.loaded)
    }

    /// Something of `q` needing `bytes` may be prepared while the blocked
    /// job waits: it [`Blocked::lets_prepare`] it, or `q` is another
    /// context of equal standing (its level, a slot if the blocked one
    /// has one, none if not) and `bytes` fit in the `room` left beside
    /// the blocked job's need ([`pipeline::room_beside`]; `None`: none).
    /// What is of a lower standing stays unprepared: it would be
    /// reclaimed for the blocked job ([`Blocked::outranks`]).
    fn admits(&self, q: &ContextQueue, bytes: u64, room: Option<u64>) -> bool {
        self.lets_prepare(q) || self.fits_beside(q, bytes, room)
    }

    /// `q` is another context of equal standing, and `bytes` fit in `room`.
    fn fits_beside(&self, q: &ContextQueue, bytes: u64, room: Option<u64>) -> bool {
        q.ctx.timeline != self.timeline
            && q.ctx.priority == self.level
            && q.slot.is_some() == self.loaded
            && room.is_some_and(|r| bytes <= r)
    }

    /// `q` may be prepared (or initialised) while the blocked job waits: it
    /// is of a strictly higher level (it may reclaim what the blocked one
    /// may not), or of the same level and loaded while the blocked one is
    /// not (a current task goes before the next one).
    fn lets_prepare(&self, q: &ContextQueue) -> bool {
        q.ctx.priority < self.level
            || (q.ctx.priority == self.level && q.slot.is_some() && !self.loaded)
    }

    /// `q` cannot run while the blocked job waits: it is of a lower level,
    /// or of the same level without a slot while the blocked job's context
    /// holds one. A higher level is never reclaimed for a lower one.
    fn outranks(&self, q: &ContextQueue) -> bool {
        q.ctx.timeline != self.timeline
            && !q.ctx.cancelling()
            && (q.ctx.priority > self.level
                || (q.ctx.priority == self.level && q.slot.is_none() && self.loaded))
    }
}

/// A prepared job whose memory may be reclaimed for `blocked`: (context,
/// job). Its context cannot run now ([`Blocked::outranks`]), and the job
/// has nothing on the device (it is not the active job, or its context's
/// active job is off the device). A context's youngest prepared job goes
/// first, so the one that runs next keeps its memory longest.
fn reclaim_victim(st: &EngineState, blocked: &Blocked) -> Option<(usize, u64)> {
    st.working_queues()
        .filter(|(_, q)| blocked.outranks(q))
        .find_map(|(qi, q)| {
            let active = q.active().map(|j| j.id);
            q.jobs
                .iter()
                .rev()
                .filter(|j| matches!(j.stage, Stage::Uploading(_)) && !j.is_finished())
                .find(|j| Some(j.id) != active || q.off_device())
                .map(|j| (qi, j.id))
        })
}

/// A context whose state area may be released for `blocked`: initialised,
/// nothing of it prepared or on the device, and it cannot run now or, if
/// it holds a slot at the blocked job's level, it cannot run either until
/// memory comes back. Not one of equal standing whose first job fits in
/// what is left `beside` the blocked job's need ([`Survey::beside`]), which
/// passes it ([`Blocked::admits`]): the
/// blocked job's need is met once the jobs executing now end, with that
/// area and that job in place (and it would be initialised again at once).
fn state_area_victim(st: &EngineState, blocked: &Blocked, beside: Option<u64>) -> Option<usize> {
    // A placed state area means a phase 1 begun: a working context.
    st.working_queues()
        .find(|(_, q)| {
            let passes = q
                .jobs
                .first()
                .is_some_and(|j| blocked.fits_beside(q, j.footprint, beside));
            !passes
                && q.ctx.timeline != blocked.timeline
                && q.state_area.as_ref().is_some_and(DeviceArea::is_placed)
                && q.area_idle()
                && (q.slot.is_none()
                    || q.ctx.priority > blocked.level
                    || (q.ctx.priority == blocked.level && blocked.loaded))
        })
        .map(|(i, _)| i)
}

/// The job that claims released memory ([`EngineState::memory_claim`]) as
/// (context, job, level), if its phase 2 may start now and its context
/// holds a slot: it goes before the phase 1s and phase 2s of its equals
/// (the caller checks that nothing of a higher level is a candidate), so
/// that nothing of theirs is initialised or prepared again into what was
/// given back for it. While it waits it is not preparable: it is found
/// only after memory came back. A claimant without a slot keeps the usual
/// order (a loaded context's work goes first).
fn claimant(
    st: &EngineState,
    p: &PipelineParams,
    survey: &Survey,
    now: u64,
) -> Option<(usize, u64, u32)> {
    let (timeline, id) = st.memory_claim.filter(|&(_, job)| job != 0)?;
    let (qi, q) = st
        .working_queues()
        .find(|(_, q)| q.ctx.timeline == timeline && q.slot.is_some())?;
    let gate = Gate::of(st, *p, survey);
    gate.preparable(qi, q, now)
        .filter(|job| job.id == id)
        .map(|job| (qi, job.id, q.ctx.priority))
}

/// The job numbered `id` in one context's list.
fn find_job_of(jobs: &mut KVec<KBox<Job>>, id: u64) -> Option<&mut Job> {
    jobs.iter_mut().find(|j| j.id == id).map(|j| &mut **j)
}
