// SPDX-License-Identifier: GPL-2.0

//! The execution engine: runs jobs on the modeled device.
//!
//! A work-group is placed on one execution module; its waves run through
//! the interpreter over the job's buffer objects, so their effects on
//! memory are real, and each wave holds its unit's resources for its
//! modeled duration (its cycles at the modeled clock). Waves are
//! interpreted in chunks, each up to the next preemption point
//! ([`waves`]), so a wave can stop at an instruction boundary and be
//! saved when its context loses its hardware slot.
//!
//! An hrtimer fires at the earliest event (a wave's end or point, a
//! slice's end); the timer callback only queues the engine's work item on
//! the engine's own ordered work queue. That work item is the engine's
//! fence-signalling critical section: it retires finished waves, completes
//! jobs (signalling their fences), takes the slot selection decision,
//! advances or saves waves and places more work. It never allocates and
//! never takes a reservation lock: everything a job needs on the device is
//! allocated when it is submitted, and finished jobs are dropped by a
//! separate clean-up work item. It never interprets: a wave's chunks are
//! interpreted by the wave executor ([`crate::gpu::exec`]), on its own
//! work queue and under its own lock, which hands each chunk back and
//! queues the engine's work item as a device raises an interrupt; nothing
//! a client does waits for the engine lock behind a long wave. The engine
//! is written against the device's command interface
//! ([`crate::gpu::Backend`]) and holds one of its two implementations
//! ([`Gpu`]): the virtual GPU, or the mock the KUnit suites run it over
//! ([`Engine::new_on`]).
//!
//! A job holds tiles ([`tiles`]) from its first placement to its end; its
//! work-groups go only to their modules.
//!
//! Which contexts may run is decided by slot selection ([`slots`]): only
//! the contexts in the `hw_slots` hardware slots are dispatch channels.
//! Work reaches the device through work-group dispatch ([`dispatch`]):
//! every resident context with work is a FIFO channel, all channel heads
//! are matched against all execution modules at once, and contiguous
//! register and shared-memory ranges are handed out by the bitmask resource
//! finder. Jobs of one context run one after the other, in submission
//! order; their work-groups run side by side.
//!
//! A wave that runs past the job timeout hangs its job: the job's fence
//! gets `-ETIME` when the timeout has passed in modeled time, its context
//! turns guilty and its queued jobs are cancelled; other contexts go on.

mod cancel;
mod dispatch;
mod dump;
mod inbox;
mod job;
mod memory;
mod queue;
mod save_area;
mod slots;
pub(crate) mod sync;
mod tiles;
mod waves;

use kernel::{
    alloc::kvec::PushError,
    bindings,
    impl_has_hr_timer,
    impl_has_work,
    new_mutex,
    new_spinlock_irq,
    new_work,
    prelude::*,
    sync::{
        atomic::{
            ordering,
            Atomic, //
        },
        Arc,
        ArcBorrow,
        Mutex,
        SpinLockIrq, //
    },
    time::{
        hrtimer::{
            ArcHrTimerHandle,
            HrTimer,
            HrTimerCallback,
            HrTimerCallbackContext,
            HrTimerPointer,
            HrTimerRestart,
            RelativeMode, //
        },
        Delta,
        Monotonic, //
    },
    warn_on,
    workqueue::{
        self,
        Work,
        WorkItem, //
    }, //
};

use crate::{
    context::{
        monotonic_ns,
        Context,
        Submissions,
        MAX_JOBS_IN_FLIGHT, //
    },
    fence::{
        Fence,
        OutFenceFd, //
    },
    gpu::{
        exec::{
            Executor,
            Rewind, //
        },
        mock::MockExecutor,
        Backend,
        Gpu, //
    },
    job::JobSpec,
    uapi,
    vgsched_core::{
        claim::{
            KeptOut,
            Waiting, //
        },
        context_switch::SchedParams,
        dispatch::{
            Candidate,
            DispatchParams,
            Rotation,
            SplitTrigger,
            WindowDebts, //
        },
        exec::{
            Counters,
            CycleCosts, //
        },
        index_set::IndexSet,
        module_choice::{
            ModuleScore,
            PowerWeights,
            PowerWindow, //
        },
        occupancy::{
            summary_len,
            CachedMatch,
            MapLayout,
            Occupancy, //
        },
        pipeline::PhaseOneParams,
        rng::Rng,
        split::RotatingPointer,
        tiles::{
            PowerModel,
            TileAccount,
            TileTopology, //
        },
        topology::Topology, //
    }, //
    vram::DeviceMemory,
};

use dump::PlacementLog;
pub(crate) use dump::StateRecord;
pub(crate) use inbox::Admission;
use inbox::Inbox;
pub(crate) use job::JobRoom;
use job::{
    active_in,
    Job,
    JobWaiter, //
};
pub(crate) use memory::JobTimes;
use memory::{
    PhaseOne,
    Prepared,
    Stage,
    StageEvent,
    StageLog, //
};
use queue::{
    queue_at,
    queue_in,
    queue_index,
    queue_of,
    ContextQueue, //
};
use save_area::WaveStore;
use slots::{
    SlotRoom,
    SlotSelection, //
};
use sync::{
    Held,
    HoldMeter,
    OwnedQueue,
    Signalling,
    SubmitMeter, //
};
pub(crate) use tiles::Quantity;
use waves::{
    RunningGroup,
    RunningWave,
    WavePhase, //
};

/// Contexts the device holds at once, over all files: `CTX_CREATE` is
/// refused with `ENOSPC` past it. It bounds the engine-wide state that
/// grows with the contexts (their records and the step's scratch space),
/// which is not charged to any one client.
pub(crate) const MAX_CONTEXTS: usize = 16384;

/// Most records of cancelled contexts that wait for the clean-up work item
/// ([`Engine::bury`]): past it, a cancellation drops its records itself.
/// It bounds what a client that creates and destroys contexts faster than
/// that work item runs can make the kernel hold (their charges went back
/// with the cancellation).
const MAX_BURIED: usize = 4096;

/// The records of cancelled contexts waiting for the clean-up work item:
/// one list per cancellation, at most [`MAX_BURIED`] records in all.
type Buried = KVec<KVVec<KBox<ContextQueue>>>;

/// Room of a context's `done` list: its signalled jobs and its unfinished
/// ones together never exceed it ([`Engine::make_room`] and the check at
/// submission), so signalling never waits for the clean-up work item.
const DONE_CAPACITY: usize = 2 * MAX_JOBS_IN_FLIGHT as usize;

/// Signalled jobs taken off a context's `done` list in one hold of the
/// engine lock, at most.
const DROP_BATCH: usize = 16;

/// Signalled jobs taken off a context's `done` list under the engine lock
/// ([`DoneBatch::take`]), dropped with this value after the lock is
/// released, oldest first (the order they signalled in): dropping them
/// takes reservation locks and frees memory. Nothing is allocated for it.
struct DoneBatch([Option<KBox<Job>>; DROP_BATCH]);

impl DoneBatch {
    /// An empty batch.
    fn new() -> Self {
        Self([const { None }; DROP_BATCH])
    }

    /// Takes the oldest of `q`'s signalled jobs, up to `most` (never more
    /// than [`DROP_BATCH`]), counting them out of its admission; returns
    /// how many.
    fn take(&mut self, q: &mut ContextQueue, most: usize) -> usize {
        let n = most.min(DROP_BATCH).min(q.done.len());
        // The oldest `n` to the back, where they are popped from (newest
        // of them first).
        q.done.rotate_left(n);
        for slot in self.0.iter_mut().take(n) {
            *slot = q.done.pop();
        }
        q.ctx.admission.dropped(n);
        n
    }
}

impl Drop for DoneBatch {
    fn drop(&mut self) {
        // Taken newest first. All of one context: the storage of the
        // oldest (dropped last) is kept for the context's next job, the
        // one room it has ([`Job::recycle`]).
        let mut jobs = self.0.iter_mut().rev().filter_map(Option::take).peekable();
        while let Some(job) = jobs.next() {
            match jobs.peek() {
                Some(_) => drop(job),
                None => Job::recycle(job),
            }
        }
    }
}

/// Per execution module dispatch state.
struct ModuleState {
    /// Where the split table's combination starts next (wave balancing).
    pointer: RotatingPointer,
    /// Weighted instructions issued recently (module choice).
    power: PowerWindow,
    /// Instructions executed per class since load.
    counters: Counters,
}

/// Totals for debugfs.
#[derive(Clone, Copy, Default)]
struct Totals {
    jobs_done: u64,
    jobs_faulted: u64,
    jobs_hung: u64,
    jobs_cancelled: u64,
    groups_dispatched: u64,
    groups_split: u64,
    /// Modules claimed by kept-out work-groups ([`KeptOut`]).
    claims: u64,
    waves_saved: u64,
    groups_restored: u64,
    waves_stopped_at_once: u64,
    /// How long waves stalled in all: chunks the device computed after
    /// their modeled ends ([`Engine::complete_chunk`]), ns.
    stalled_ns: u64,
}

/// The positions of the contexts that may have something to do
/// ([`EngineState::working`]), in storage of the context list's capacity.
type Working = IndexSet<KVVec<u32>>;

/// Context `i` (of `queues`) may have changed in what makes it runnable:
/// `slots`' next runnable refresh and the next collection (`collecting`)
/// look at it ([`EngineState::list_for_refresh`], for a caller holding the
/// state's fields apart).
fn list_changed(
    slots: &mut SlotSelection,
    queues: &mut [KBox<ContextQueue>],
    collecting: &mut Working,
    i: usize,
) {
    slots.list(queues, i);
    list_collected(collecting, i);
}

/// A job of context `i` may have finished or become its first: the next
/// collection looks at it ([`EngineState::collecting`], for a caller
/// holding the state's fields apart).
fn list_collected(collecting: &mut Working, i: usize) {
    // Room for every position of the list ([`EngineState::adopt`]).
    warn_on!(!collecting.insert(i));
}

/// Positions of the context list the step audit looks at per step
/// ([`Engine::audit_working`]).
const AUDIT_PER_STEP: usize = 64;

/// Members of [`EngineState::working`] the step's sweep looks at per step
/// for settled contexts to let go ([`Engine::sweep_settled`]).
const SWEEP_PER_STEP: usize = 64;

/// Memory tasks a step does itself at most ([`Engine::memory_at_once`]),
/// say a phase 1 and a phase 2 of two contexts: each is bookkeeping and
/// at most the zeroing of one state area of 64 KiB.
const AT_ONCE_TASKS: usize = 4;

/// Scratch vectors whose capacity follows the number of contexts.
struct Scratch {
    heads: KVVec<dispatch::Head>,
    candidates: KVVec<Candidate>,
    candidate_heads: KVVec<usize>,
    slots: SlotRoom,
    working: Working,
    collecting: Working,
}

impl Scratch {
    /// Room for `contexts` contexts. Engine-wide state every client uses,
    /// so not charged to the one whose context made it grow (its cgroup
    /// would be billed, and kept alive, for everyone's).
    fn with_capacity(contexts: usize) -> Result<Self> {
        Ok(Self {
            heads: KVVec::with_capacity(contexts, GFP_KERNEL)?,
            candidates: KVVec::with_capacity(contexts, GFP_KERNEL)?,
            candidate_heads: KVVec::with_capacity(contexts, GFP_KERNEL)?,
            slots: SlotRoom::with_capacity(contexts)?,
            working: IndexSet::new(
                KVVec::from_elem(0, contexts, GFP_KERNEL)?,
                KVVec::from_elem(0, contexts, GFP_KERNEL)?,
            ),
            collecting: IndexSet::new(
                KVVec::from_elem(0, contexts, GFP_KERNEL)?,
                KVVec::from_elem(0, contexts, GFP_KERNEL)?,
            ),
        })
    }
}

/// The device's resources as the resource finder sees them: what
/// [`Engine::occupancy`] views, kept together.
struct ResourceMaps {
    /// The resource bitmaps ([`MapLayout`]).
    maps: KVVec<u64>,
    /// Occupied wave slots per unit.
    unit_waves: KVec<u32>,
    /// The largest free run of every map ([`Occupancy::with_summaries`]),
    /// kept equal to `maps` by every take and release.
    summaries: KVec<u16>,
    /// Takes and releases per module ([`Occupancy::with_generations`]).
    generations: KVec<u64>,
}

/// Everything the engine changes, under one lock.
///
/// # Invariants
///
/// - `queues` holds one entry per live context of the device, created with
///   the context and removed when it is destroyed;
/// - the scratch vectors (`heads`, `candidates`, `candidate_heads`,
///   `slot_cands`) have at least `queues.capacity()` room and
///   `slot_changes` twice that, so a step never allocates;
/// - `working` can hold every position below `queues.capacity()`; every
///   context not in it is settled ([`ContextQueue::settled`]), and its
///   members are in ascending order whenever the lock is taken;
/// - `collecting` can hold every position below `queues.capacity()`, and
///   holds every context whose first job is finished whenever the lock is
///   taken;
/// - `waves.capacity()` and `groups.len()` are the device's wave slots;
///   each running group holds at least one wave slot;
/// - every wave in `waves` belongs to the group at `groups[wave.slot]`, and
///   that group's job is its context's active job (the first not finished);
/// - the resource maps hold exactly the ranges of the groups and waves in
///   `groups` and `waves`.
struct EngineState {
    /// Next job id.
    next_job_id: u64,
    /// Every live context, with its jobs and scheduling state.
    queues: KVVec<KBox<ContextQueue>>,
    /// The positions in `queues` of the contexts that may have something
    /// to do: jobs (queued, running, finished and not collected, waiting
    /// for their write-back, signalled and not dropped), a phase 1 begun,
    /// a hardware slot, or state slot selection has not seen yet. A
    /// context enters when a job of it is taken from the inbox
    /// ([`Engine::take_inbox`]), the only way to any of these, and leaves
    /// when [`Engine::collect_finished`]'s walk finds it settled. The
    /// walks of the step and of the memory work item go over these only,
    /// in list order: an idle context costs them nothing.
    working: Working,
    /// Where the step's audit of `working` goes on
    /// ([`Engine::audit_working`]).
    audit_cursor: usize,
    /// Where the step's sweep of `working` goes on, a position in it
    /// ([`Engine::sweep_settled`]).
    sweep_cursor: usize,
    /// The positions of the contexts whose first job may be finished: the
    /// ones [`Engine::collect_finished`] looks at. A context enters where
    /// a job of it may have finished or became its first (taken from the
    /// inbox, failed, its last work-group off the device: every site that
    /// lists it for the runnable refresh), and leaves when that walk finds
    /// its first job unfinished, or no job: a context waiting for a
    /// finished job's write-back stays.
    collecting: Working,
    /// Work-groups on the device, by slot; at most one per wave slot.
    groups: KVVec<Option<RunningGroup>>,
    /// Waves on the device; capacity for every wave slot.
    waves: KVVec<RunningWave>,
    /// The device's resources as the resource finder sees them
    /// ([`Engine::occupancy`]).
    resources: ResourceMaps,
    /// Match verdicts remembered per hardware slot (a dispatch channel)
    /// and module, until the module changes ([`CachedMatch`]).
    match_memo: KVec<CachedMatch>,
    /// Per-module dispatch state.
    modules: KVec<ModuleState>,
    /// Free rewinds, one per wave slot not in use.
    rewinds: KVec<Rewind>,
    /// Scratch of a dispatch round, sized with `queues`.
    heads: KVVec<dispatch::Head>,
    /// Scratch: the heads that fit somewhere, for [`dispatch::pick`].
    candidates: KVVec<Candidate>,
    /// Scratch: index into `heads` of each candidate.
    candidate_heads: KVVec<usize>,
    /// Scratch: the modules a winner matches and their scores.
    scores: KVec<ModuleScore>,
    /// Random tie-break between channels.
    rng: Rng,
    /// Turns owed to bands whose rotation window passed unseen.
    debts: WindowDebts,
    /// Failed-round counter of work-group splitting.
    trigger: SplitTrigger,
    /// The channels whose heads are kept out, and the module claimed for
    /// the longest-waiting one.
    kept_out: KeptOut<KVec<Waiting>>,
    /// An unsplit independent head is waiting: arm the split timer.
    splittable_waiting: bool,
    /// The last placements, for debugfs.
    log: PlacementLog,
    /// Slot selection: the ordered decision, the runnable refresh and
    /// their scratch ([`slots`]).
    slots: SlotSelection,
    /// The armed completion timer.
    timer: Option<ArcHrTimerHandle<Engine>>,
    /// A chunk was handed to the executor: its work item is queued when
    /// the lock is released.
    gpu_due: bool,
    /// Signalled jobs wait in some context's `done` list.
    cleanup_due: bool,
    /// A job (or phase 1) did not fit in device memory: what cannot run
    /// now is reclaimed for it, and until some memory comes back only a
    /// strictly higher level is prepared, or what fits beside its need
    /// ([`memory::Blocked`]).
    memory_blocked: Option<memory::Blocked>,
    /// The last job (or phase 1: job 0) that waited for memory, as
    /// (context timeline, job id), until it is prepared: it goes first
    /// among equals when memory comes back.
    memory_claim: Option<(u64, u64)>,
    /// The last stage starts and ends, for debugfs.
    stages: StageLog,
    /// Jobs on the context list holding tiles (`Job::tiles` not 0): the
    /// dispatcher looks at every context for tiles to give back only
    /// while some of them are not the channels' ([`dispatch`]). Counted up
    /// where tiles are taken, down where a job gives them back or leaves
    /// the list; never below the true count (a decrement at 0 warns).
    tile_jobs: usize,
    /// No stage, phase 1 or tile wake-up of any context ends before this
    /// (modeled ns) but the ones that already ended: a lower bound, taken
    /// down as each is set and worked out again by a walk once it has
    /// passed ([`Engine::arm_timer`]), so arming the timer does not walk
    /// every context at every step.
    next_event_ns: u64,
    /// Jobs an in-fence failed during this step's pass, finished at once
    /// ([`Engine::in_fence_ready`]; their contexts are listed in
    /// `collecting`): the pass goes round once more to collect them.
    failed_at_once: usize,
    /// The last phase 2 did not fit: no context is initialised ahead of
    /// its load until one does.
    phase1_ahead_paused: bool,
    /// Device memory given back since load: a phase 1 or 2 that found no
    /// room waits only if none came back while it tried.
    releases: u64,
    /// The tiles: who holds them, their power states and energy (boxed:
    /// a few KiB, too much for the stack of [`Engine::new_on`]).
    tiles: KBox<TileAccount>,
    totals: Totals,
}

impl EngineState {
    /// Takes `grown`, scratch room for `contexts` contexts, and moves the
    /// contexts into a list of that capacity.
    fn adopt(&mut self, mut queues: KVVec<KBox<ContextQueue>>, mut grown: Scratch) {
        for q in self.queues.drain_all() {
            // `queues` was allocated with room for more than these.
            if let Err(PushError(q)) = queues.push_within_capacity(q) {
                warn_on!(true);
                drop(q);
            }
        }
        self.queues = queues;
        self.heads = grown.heads;
        self.candidates = grown.candidates;
        self.candidate_heads = grown.candidate_heads;
        self.slots.adopt(grown.slots, &mut self.queues);
        // The new storage is larger: every member fits.
        warn_on!(!grown.working.insert_all(&self.working));
        grown.working.sort();
        self.working = grown.working;
        warn_on!(!grown.collecting.insert_all(&self.collecting));
        grown.collecting.sort();
        self.collecting = grown.collecting;
    }

    /// Context `i` has something to do: the step's walks look at it
    /// until they find it settled.
    fn set_working(&mut self, i: usize) {
        // Room for every position of the list ([`Self::adopt`]).
        warn_on!(!self.working.insert(i));
    }

    /// Context `i` may have changed in what makes it runnable (a job
    /// queued, collected or failed off the signalling path): the next
    /// slot decision looks at it ([`slots`], the runnable refresh), and
    /// the next collection ([`Self::collecting`]).
    fn list_for_refresh(&mut self, i: usize) {
        list_changed(&mut self.slots, &mut self.queues, &mut self.collecting, i);
    }

    /// A job of context `i` may have finished or become its first: the
    /// next collection looks at it ([`Self::collecting`]).
    fn list_for_collection(&mut self, i: usize) {
        list_collected(&mut self.collecting, i);
    }

    /// The record of `ctx`, if it is live.
    fn queue_mut(&mut self, ctx: &Context) -> Option<&mut ContextQueue> {
        queue_in(&mut self.queues, ctx)
    }

    /// Signals `-ECANCELED` on every job of `q`, a record just taken out
    /// of the context list: none of them runs any more. Their tiles and
    /// the device memory they and the context hold go back at once (a
    /// spinlock and atomics only), whenever the record is dropped; a copy
    /// a job stored to is stale from then on. Returns whether device
    /// memory went back.
    fn cancel_jobs(&mut self, q: &mut ContextQueue) -> bool {
        let now = monotonic_ns();
        let mut released = false;
        for job in q.jobs.iter_mut() {
            tiles::give_back(&mut self.tiles, &mut self.tile_jobs, job, now);
            job.fence.signal(ECANCELED.to_errno());
            if let Some(device) = job.device.as_mut() {
                device.release();
                released = true;
            }
        }
        if let Some(area) = q.state_area.as_mut().filter(|a| a.is_placed()) {
            area.unplace();
            released = true;
        }
        self.totals.jobs_cancelled += q.jobs.len() as u64;
        released
    }

    /// The record of `ctx`, if it is live.
    fn queue(&self, ctx: &Context) -> Option<&ContextQueue> {
        self.queues
            .get(queue_index(&self.queues, ctx)?)
            .map(|q| &**q)
    }
}

/// The execution engine of one device.
#[pin_data]
pub(crate) struct Engine {
    /// Shape and clock of the device.
    topology: Topology,
    /// Policy settings of the dispatcher.
    params: DispatchParams,
    /// Settings of slot selection (the formula in use is
    /// [`SlotSelection::formula`]).
    sched: SchedParams,
    /// The priority rotation, in modeled nanoseconds.
    rotation: Rotation,
    /// Power weight per instruction class (module choice).
    power_weights: PowerWeights,
    /// The engine's own ordered queue, where its work item runs.
    wq: OwnedQueue,
    /// The queue of the memory work item (`WQ_MEM_RECLAIM`: fences wait
    /// for it). The clean-up work item, which fences never wait for and
    /// which allocates and takes reservation locks, runs on the system's
    /// unbound queue.
    memory_wq: OwnedQueue,
    /// A phase 1 ran and the engine was not kicked after it: the memory
    /// work item kicks it when its work runs out.
    memory_kick_owed: Atomic<bool>,
    /// Signals of fences the engine waits on (in-fences, dependencies),
    /// counted by their callbacks (the runnable refresh of
    /// [`SlotSelection`] compares them with the count it last saw).
    fence_epoch: Atomic<u64>,
    /// Cancellations waiting for the memory work item, which then takes
    /// one task per run ([`Engine::wait_for_memory_work`]).
    memory_waiters: Atomic<u32>,
    /// The context of the memory work item's upload or write-back in hand
    /// (its address, 0 for none; a phase 1 is not counted): set under the
    /// engine lock when the task is taken,
    /// cleared once it is over ([`Engine::memory_work_on`]). Only compared,
    /// never followed: an address reused after the context is freed can
    /// at most make a cancellation wait once for nothing.
    memory_task_ctx: Atomic<usize>,
    /// The memory work item has a task in hand, of any kind: set under the
    /// engine lock when the task is taken, cleared once it is over. While
    /// it is set the step does no memory task itself
    /// ([`Engine::memory_at_once`]): the work item's choices assume one
    /// task at a time (a context's next job is not prepared beside the one
    /// in hand, chunks it freed for its task stay for it), and no holder
    /// of the lock surveys the contexts for it ([`Engine::memory_busy`]).
    memory_in_hand: Atomic<bool>,
    /// A run of the memory work item is still to begin: set before each
    /// queueing, cleared as a run begins, before that run takes the engine
    /// lock (set, a run will still clear it and then choose; it may read
    /// clear while one is queued). While it is set the step does no memory
    /// task itself and no holder of the lock surveys the contexts for it
    /// ([`Engine::memory_busy`]): that run chooses after the hold.
    memory_pending: Atomic<bool>,
    /// The longest hold of `state`.
    hold: HoldMeter,
    /// Time spent in [`Engine::submit`].
    submits: SubmitMeter,
    /// The device memory and its allocator.
    memory: Arc<DeviceMemory>,
    /// What phase 1 costs a context.
    phase_one: PhaseOneParams,
    /// The tiles of the device and their power model, as the account in
    /// [`EngineState::tiles`] was made with (fixed for the device's life).
    tile_topology: TileTopology,
    /// See `tile_topology`.
    power_model: PowerModel,
    /// No more work is accepted or run: the device is going away. Set
    /// once, by [`Engine::shut_down`], before it takes the lock for the
    /// last time.
    closed: Atomic<bool>,
    /// Jobs submitted and not yet in their contexts' records: taken by
    /// every holder of the engine lock as it takes the lock
    /// ([`Engine::lock`]).
    inbox: Inbox,
    /// Jobs taken from the inbox whose context or engine was gone, their
    /// fences signalled `-ECANCELED`, for the clean-up work item to drop
    /// (whatever is left goes with the engine).
    orphans: Inbox,
    #[pin]
    state: Mutex<EngineState>,
    /// Set by [`Engine::shut_down`]: from then on nothing queues the work
    /// items. Checked and set under the lock (interrupts off: fence
    /// callbacks and the timer queue the step), so no item is queued after
    /// the flushes that follow.
    #[pin]
    stopped: SpinLockIrq<bool>,
    /// Records of cancelled contexts, their fences signalled, for the
    /// clean-up work item to drop ([`Engine::bury`]); `None` once shut
    /// down. Taken alone.
    #[pin]
    buried: Mutex<Option<Buried>>,
    /// The engine's step: the signalling path.
    #[pin]
    work: Work<Engine, 0>,
    /// Drops signalled jobs (buffer mappings, fences), off that path.
    #[pin]
    cleanup: Work<Engine, 1>,
    /// Prepares jobs and cleans them up in device memory, off that path.
    #[pin]
    memory_work: Work<Engine, 2>,
    #[pin]
    timer: HrTimer<Engine>,
    /// The device: the wave executor (the device's execution units, which
    /// interpret the chunks the step hands them), or the mock. Only its
    /// command interface is used ([`Backend`]).
    exec: Gpu,
    /// The device's work item, on the device's own queue.
    #[pin]
    gpu_work: Work<Engine, 3>,
}

impl_has_work! {
    impl HasWork<Self, 0> for Engine { self.work }
    impl HasWork<Self, 1> for Engine { self.cleanup }
    impl HasWork<Self, 2> for Engine { self.memory_work }
    impl HasWork<Self, 3> for Engine { self.gpu_work }
}

impl_has_hr_timer! {
    impl HasHrTimer<Self> for Engine {
        mode: RelativeMode<Monotonic>, field: self.timer
    }
}

/// The answer to `DRM_IOCTL_VGSCHED_CTX_QUERY`, from the engine's side.
pub(crate) struct ContextStats {
    pub(crate) runtime_ns: u64,
    pub(crate) weight_milli: u64,
    pub(crate) completed: u64,
    pub(crate) in_flight: u64,
    pub(crate) guilty: bool,
    pub(crate) slot: Option<u32>,
    pub(crate) slices: u64,
    pub(crate) preemptions: u64,
    pub(crate) switch_ns: u64,
    /// When its last phase 1 started and ended.
    pub(crate) phase1: (u64, u64),
    /// The stage times of its last signalled job.
    pub(crate) last_job: JobTimes,
}

impl Engine {
    /// An idle engine of shape `topology`, over the virtual GPU, or over
    /// the mock device if `mock` (the KUnit suites, and `backend=1` for
    /// benchmarks of the scheduler alone: its leases run for their jobs'
    /// [`JobSpec::mock_cycles`], none from `SUBMIT`, and interpret
    /// nothing).
    pub(crate) fn new_on(
        topology: Topology,
        params: DispatchParams,
        sched: SchedParams,
        memory: Arc<DeviceMemory>,
        phase_one: PhaseOneParams,
        tiles: KBox<TileAccount>,
        mock: bool,
    ) -> Result<Arc<Self>> {
        let n_units = topology.total_units() as usize;
        let n_modules = topology.modules as usize;
        let wave_slots = n_units * topology.wave_slots as usize;
        let mut rewinds = KVec::with_capacity(wave_slots, GFP_KERNEL)?;
        for _ in 0..wave_slots {
            rewinds.push(Rewind::new()?, GFP_KERNEL)?;
        }
        let mut groups = KVVec::with_capacity(wave_slots, GFP_KERNEL)?;
        for _ in 0..wave_slots {
            groups.push(None, GFP_KERNEL)?;
        }
        let mut modules = KVec::with_capacity(n_modules, GFP_KERNEL)?;
        for _ in 0..n_modules {
            modules.push(
                ModuleState {
                    pointer: RotatingPointer::new(topology.units_per_module),
                    power: PowerWindow::new(params.power_window_cycles),
                    counters: Counters::default(),
                },
                GFP_KERNEL,
            )?;
        }
        let scratch = Scratch::with_capacity(0)?;
        let (tile_topology, power_model) = (*tiles.topology(), *tiles.model());
        let gpu = match mock {
            false => Gpu::Virtual(KBox::pin_init(
                Executor::new(wave_slots, CycleCosts::DEFAULT)?,
                GFP_KERNEL,
            )?),
            true => Gpu::Mock(KBox::pin_init(
                MockExecutor::new(wave_slots, topology, CycleCosts::DEFAULT)?,
                GFP_KERNEL,
            )?),
        };
        let state = EngineState {
            next_job_id: 1,
            queues: KVVec::new(),
            working: scratch.working,
            audit_cursor: 0,
            sweep_cursor: 0,
            collecting: scratch.collecting,
            groups,
            // Placing never allocates: every wave holds a wave slot.
            waves: KVVec::with_capacity(wave_slots, GFP_KERNEL)?,
            rewinds,
            resources: ResourceMaps {
                maps: KVVec::from_elem(
                    0,
                    MapLayout::new(&topology).total_words(&topology),
                    GFP_KERNEL,
                )?,
                summaries: KVec::from_elem(0, summary_len(&topology), GFP_KERNEL)?,
                generations: KVec::from_elem(0, n_modules, GFP_KERNEL)?,
                unit_waves: KVec::from_elem(0, n_units, GFP_KERNEL)?,
            },
            match_memo: KVec::from_elem(
                CachedMatch::EMPTY,
                sched.policy.slots.saturating_mul(n_modules),
                GFP_KERNEL,
            )?,
            modules,
            heads: scratch.heads,
            candidates: scratch.candidates,
            candidate_heads: scratch.candidate_heads,
            scores: KVec::with_capacity(n_modules, GFP_KERNEL)?,
            rng: Rng::new(monotonic_ns()),
            debts: WindowDebts::new(),
            trigger: SplitTrigger::new(topology.cycles_to_ns(params.split_after_rounds)),
            // One waiting channel per hardware slot: the channels are the
            // residents.
            kept_out: KeptOut::new(KVec::from_elem(
                Waiting::default(),
                topology.hw_slots as usize,
                GFP_KERNEL,
            )?),
            splittable_waiting: false,
            log: PlacementLog::new()?,
            slots: SlotSelection::new(sched.policy.formula, sched.policy.slots, scratch.slots)?,
            next_event_ns: 0,
            tile_jobs: 0,
            timer: None,
            gpu_due: false,
            cleanup_due: false,
            memory_blocked: None,
            memory_claim: None,
            stages: StageLog::new()?,
            failed_at_once: 0,
            phase1_ahead_paused: false,
            releases: 0,
            tiles,
            totals: Totals::default(),
        };
        // The resource maps must match the topology, once and for all;
        // their summaries start from the (idle) maps.
        let mut st = state;
        let r = &mut st.resources;
        Occupancy::new(&topology, &mut r.maps, &mut r.unit_waves)
            .ok_or(EINVAL)?
            .with_summaries(&mut r.summaries)
            .summarize();
        let engine = Arc::pin_init(
            try_pin_init!(Self {
                topology,
                params,
                sched,
                memory,
                phase_one,
                tile_topology,
                power_model,
                rotation: Rotation::new(topology.cycles_to_ns(params.rotation_period_cycles)),
                power_weights: PowerWeights::DEFAULT,
                wq: OwnedQueue::engine()?,
                memory_wq: OwnedQueue::memory()?,
                memory_kick_owed: Atomic::new(false),
                fence_epoch: Atomic::new(0),
                memory_waiters: Atomic::new(0),
                memory_task_ctx: Atomic::new(0),
                memory_in_hand: Atomic::new(false),
                memory_pending: Atomic::new(false),
                closed: Atomic::new(false),
                inbox: Inbox::new(),
                orphans: Inbox::new(),
                hold: HoldMeter::new(),
                submits: SubmitMeter::new(),
                state <- new_mutex!(st),
                stopped <- new_spinlock_irq!(false),
                buried <- new_mutex!(Some(KVec::new())),
                work <- new_work!("vgsched::Engine::work"),
                cleanup <- new_work!("vgsched::Engine::cleanup"),
                memory_work <- new_work!("vgsched::Engine::memory_work"),
                timer <- HrTimer::new(),
                exec: gpu,
                gpu_work <- new_work!("vgsched::Engine::gpu_work"),
            }),
            GFP_KERNEL,
        )?;
        // The mock's interrupt line, until the engine shuts down.
        if let Some(mock) = engine.exec.mock() {
            mock.connect(engine.clone());
        }
        Ok(engine)
    }

    /// Takes the engine lock; how long it is held is measured, and where
    /// the longest hold was taken is kept. The jobs submitted since the
    /// last holder go into their contexts' records first
    /// ([`Engine::take_inbox`]): every holder sees every job submitted
    /// before it took the lock.
    #[track_caller]
    fn lock(&self) -> Held<'_, EngineState> {
        let at = core::panic::Location::caller();
        let mut st = Held::new(self.state.lock(), &self.hold, at);
        if !self.inbox.is_empty() {
            self.take_inbox(&mut st);
        }
        st
    }

    /// Moves the jobs of the inbox into their contexts' records, in the
    /// order they were submitted, numbering them: what a submission did
    /// under the engine lock before. A job whose context has no record
    /// any more (destroyed meanwhile) or whose engine is closed is
    /// cancelled (`-ECANCELED`) and left for the clean-up work item; a
    /// job of a context that turned guilty meanwhile fails as the jobs
    /// queued behind a hung one do. Allocates nothing and drops nothing.
    fn take_inbox(&self, st: &mut EngineState) {
        let closed = self.closed();
        for mut job in self.inbox.take() {
            let found = if closed {
                None
            } else {
                queue_index(&st.queues, &job.ctx)
            };
            let Some((i, q)) = found.and_then(|i| Some((i, st.queues.get_mut(i)?))) else {
                // Its context's count no longer matters: it is gone, or
                // the engine is.
                job.fence.signal(ECANCELED.to_errno());
                self.orphans.push(job);
                continue;
            };
            job.id = st.next_job_id;
            st.next_job_id += 1;
            if q.ctx.admission.guilty() {
                job.progress.fail(ECANCELED.to_errno());
            }
            // Room for MAX_JOBS_IN_FLIGHT jobs was reserved with the
            // context, and each submission checked its context's count.
            if let Err(PushError(job)) = q.jobs.push_within_capacity(job) {
                warn_on!(true);
                q.ctx.admission.withdrawn();
                job.fence.signal(ECANCELED.to_errno());
                self.orphans.push(job);
                continue;
            }
            st.set_working(i);
            st.list_for_refresh(i);
        }
        // Walks go in list order.
        st.working.sort();
    }

    /// The step's audit of [`EngineState::working`] and
    /// [`EngineState::collecting`]: looks at the next [`AUDIT_PER_STEP`]
    /// positions of the context list (all of them in turn, a bounded share
    /// per step) and warns about a context outside the first that is not
    /// settled, or outside the second with a finished first job, which only
    /// a missed insertion can make: its jobs would never be collected. Such
    /// a context is put in.
    fn audit_working(st: &mut EngineState) {
        let n = st.queues.len();
        let mut missed = false;
        for _ in 0..AUDIT_PER_STEP.min(n) {
            let i = st.audit_cursor.checked_rem(n).unwrap_or(0);
            st.audit_cursor = i + 1;
            let Some(q) = st.queues.get(i) else {
                continue;
            };
            let finished = q.jobs.first().is_some_and(|j| j.is_finished());
            if !st.working.contains(i) && !q.settled() {
                missed = true;
                st.set_working(i);
            }
            if finished && !st.collecting.contains(i) {
                missed = true;
                st.list_for_collection(i);
            }
        }
        if missed {
            warn_on!(true);
            st.working.sort();
        }
    }

    /// Lets the settled contexts among the next [`SWEEP_PER_STEP`] members
    /// of [`EngineState::working`] go (all of them in turn, a bounded share
    /// per step): a context stays in the set, settled, for about its size
    /// over [`SWEEP_PER_STEP`] steps (members inserted or removed meanwhile
    /// move the round's end), and the walks over it never look at a
    /// settled context for its settling. A position without a record
    /// (cannot happen) goes too.
    fn sweep_settled(st: &mut EngineState) {
        let EngineState {
            queues,
            working,
            sweep_cursor,
            ..
        } = st;
        *sweep_cursor = working.retain_some(*sweep_cursor, SWEEP_PER_STEP, |i| {
            // Settled: nothing brings it back but a job from the inbox.
            queues.get(i).is_some_and(|q| !q.settled())
        });
    }

    /// The engine is closed: no new work ([`Engine::shut_down`]).
    fn closed(&self) -> bool {
        self.closed.load(ordering::Acquire)
    }

    /// Where the longest engine-lock hold was taken (file and line).
    pub(crate) fn lock_hold_max_at(&self) -> Option<&'static core::panic::Location<'static>> {
        self.hold.max_at()
    }

    /// Starts the measurement of the longest engine-lock hold again (a
    /// debugfs write): from now on [`Engine::lock_hold_max_ns`] is the
    /// longest hold since this call, and the executor's longest piece
    /// and longest stop wait the longest since then too.
    pub(crate) fn reset_lock_hold_max(&self) {
        // Under the lock, as every writer of the meter. (Taking it also
        // moves the inbox's jobs in, as any holder does; the step queued at
        // their submission sees them.)
        let st = self.lock();
        self.hold.reset_max();
        drop(st);
        self.exec.reset_maxima();
    }

    /// The longest time the engine lock has been held since load (or since
    /// [`Engine::reset_lock_hold_max`]).
    pub(crate) fn lock_hold_max_ns(&self) -> u64 {
        self.hold.max_ns()
    }

    /// The mean engine-lock hold since load, in nanoseconds (0 before the
    /// first).
    pub(crate) fn lock_hold_mean_ns(&self) -> u64 {
        let (holds, total, _) = self.hold.holds();
        total.checked_div(holds).unwrap_or(0)
    }

    /// Engine-lock holds since load, and how many of them lasted over a
    /// millisecond.
    pub(crate) fn lock_holds(&self) -> (u64, u64) {
        let (holds, _, slow) = self.hold.holds();
        (holds, slow)
    }

    /// The device memory.
    pub(crate) fn device_memory(&self) -> &Arc<DeviceMemory> {
        &self.memory
    }

    /// The cycle costs per instruction class.
    pub(crate) fn costs(&self) -> &CycleCosts {
        self.exec.costs()
    }

    /// The device the engine drives (the KUnit suites look at the mock).
    pub(crate) fn gpu(&self) -> &Gpu {
        &self.exec
    }

    /// Queues the engine's work item (a no-op if it is already queued, or
    /// once shut down).
    fn kick(this: ArcBorrow<'_, Self>) {
        let stopped = this.stopped.lock();
        if !*stopped {
            // Already queued: the queued run will see whatever changed.
            let _already_queued = this.wq.queue().enqueue::<_, 0>(Arc::from(this));
        }
    }

    /// Queues the device's work item (a no-op if it is already queued, or
    /// once shut down): the mock's interrupt does too.
    pub(crate) fn kick_gpu(this: ArcBorrow<'_, Self>) {
        let stopped = this.stopped.lock();
        if !*stopped {
            // Already queued: the queued run finds the new lease too.
            let _already_queued = this.exec.queue().enqueue::<_, 3>(Arc::from(this));
        }
    }

    /// Waits until the executor's work item has run its current round and,
    /// if it queued itself again, the queued one (at most one piece per
    /// lease out, each of [`crate::gpu::exec::PIECE`] instructions): a lease
    /// it had in hand when recalled is then back.
    fn wait_for_gpu(&self) {
        // SAFETY: `self.gpu_work` is a live, initialised work item.
        unsafe { bindings::flush_work(Work::raw_get(&self.gpu_work)) };
    }

    /// Queues the clean-up work item (a no-op if it is already queued, or
    /// once shut down).
    fn queue_cleanup(this: ArcBorrow<'_, Self>) {
        let stopped = this.stopped.lock();
        if !*stopped {
            // Already queued: it will find the new jobs too.
            let _already_queued = workqueue::system_unbound().enqueue::<_, 1>(Arc::from(this));
        }
    }

    /// Makes a new context known to the engine. Allocates, so it never runs
    /// under the engine lock: room is made first, then the record goes in.
    pub(crate) fn register_context(&self, ctx: &Arc<Context>) -> Result {
        // Boxed: removing a record from the list moves pointers, not
        // records.
        let queue = KBox::new(
            ContextQueue::new(ctx, &self.memory, self.phase_one.state_bytes)?,
            GFP_KERNEL_ACCOUNT,
        )?;
        let mut queue = Some(queue);
        loop {
            let want = {
                let mut st = self.lock();
                if self.closed() {
                    return Err(ENODEV);
                }
                if st.queues.len() >= MAX_CONTEXTS {
                    return Err(ENOSPC);
                }
                if st.queues.len() < st.queues.capacity() {
                    if let Some(q) = queue.take() {
                        q.place_at(st.queues.len());
                        // Room checked just above.
                        if let Err(PushError(q)) = st.queues.push_within_capacity(q) {
                            queue = Some(q);
                            continue;
                        }
                    }
                    return Ok(());
                }
                st.queues.capacity().saturating_mul(2).max(8)
            };
            // Engine-wide, like the scratch: not charged to one client.
            let list = KVVec::with_capacity(want, GFP_KERNEL)?;
            let scratch = Scratch::with_capacity(want)?;
            let mut st = self.lock();
            if st.queues.capacity() < want {
                st.adopt(list, scratch);
            }
            // Otherwise another caller grew it meanwhile; the spare room
            // is freed here (freeing is fine under the lock).
        }
    }

    /// Queues a job on `ctx`. Returns its sequence number, its completion
    /// fence, if asked, the reserved sync_file descriptor of that fence
    /// (to install once the ioctl cannot fail any more), and whether the
    /// caller must call [`Engine::make_room`] once it holds no reservation
    /// lock.
    ///
    /// `E2BIG` if the resource finder in use can never place a work-group
    /// of the job, `ENOENT` if the context is gone, `ECANCELED` if it is
    /// guilty, `EBUSY` if it has [`MAX_JOBS_IN_FLIGHT`] unfinished jobs,
    /// `EAGAIN` if its done list must be drained first (the caller runs
    /// [`Engine::make_room`] with no reservation lock held and tries
    /// again; never seen by user space), `ENODEV` once shut down.
    ///
    /// The engine lock is not taken (but the first time a job of the
    /// context needs more room in its wave store): the checks read the
    /// context's [`Admission`], and the job goes to the engine's inbox
    /// ([`inbox`]), from which the next holder of the lock queues it. A
    /// context destroyed, or turned guilty, between the checks and that
    /// moment gets the job cancelled (`-ECANCELED` on its fence) rather
    /// than refused.
    pub(crate) fn submit(
        this: ArcBorrow<'_, Self>,
        ctx: &Arc<Context>,
        spec: JobSpec,
    ) -> Result<(u64, Fence, Option<OutFenceFd>, bool)> {
        let start = monotonic_ns();
        let queued = Self::queue_job(this, ctx, spec);
        if queued.is_ok() {
            this.submits.add(monotonic_ns().saturating_sub(start));
        }
        queued
    }

    /// Mean time of an [`Engine::submit`] that queued its job, in
    /// nanoseconds, and how many did.
    pub(crate) fn submit_mean_ns(&self) -> (u64, u64) {
        let (calls, total) = self.submits.totals();
        (total.checked_div(calls).unwrap_or(0), calls)
    }

    /// [`Engine::submit`] itself.
    fn queue_job(
        this: ArcBorrow<'_, Self>,
        ctx: &Arc<Context>,
        mut spec: JobSpec,
    ) -> Result<(u64, Fence, Option<OutFenceFd>, bool)> {
        // The finder rounds needs up (to whole groups, to powers of two):
        // what it can never place would wait forever.
        Occupancy::check_placeable(
            &this.topology,
            &spec.needs,
            spec.independent,
            this.params.finder,
        )
        .map_err(|_| E2BIG)?;
        // Its objects and scratch must fit in device memory together, and
        // its tiles in one node.
        let footprint = this.footprint(&spec.bindings, spec.scratch)?;
        if !this.tile_topology.fits(spec.tiles) {
            return Err(E2BIG);
        }
        // It could fit, but not on the tiles its file may use.
        if !this
            .tile_topology
            .fits_within(spec.tiles, spec.allowed_tiles)
        {
            return Err(EACCES);
        }
        // A started environment's tiles are its own: a job of one runs
        // there if it fits, a job of another never does; one that fits
        // only with another's reserved tiles would wait for that
        // environment's end, and is refused (`design.rst`, *Liveness*).
        spec.allowed_tiles = this
            .tile_topology
            .job_tiles(spec.tiles, spec.allowed_tiles, spec.reserved)
            .ok_or(ENOSPC)?;
        // Held across the whole submission: this context's jobs are
        // numbered, and pushed to the inbox, in the order they are queued.
        let mut sub = ctx.submissions.lock();
        if this.closed() {
            return Err(ENODEV);
        }
        if ctx.cancelling() {
            return Err(ENOENT);
        }
        if ctx.admission.guilty() {
            return Err(ECANCELED);
        }
        // Only this submission adds to them: they can only go down until
        // its job is pushed.
        let counts = ctx.admission.counts();
        if u64::from(counts.unsignalled()) >= MAX_JOBS_IN_FLIGHT {
            return Err(EBUSY);
        }
        // Signalled jobs the clean-up work item has not dropped yet fill
        // the done list: only when another submission on the context is
        // between its queueing and its [`Engine::make_room`]. The caller
        // drains it ([`Engine::make_room`]) and tries again.
        if counts.held as usize >= DONE_CAPACITY {
            return Err(EAGAIN);
        }
        let crowded = u64::from(counts.signalled) >= MAX_JOBS_IN_FLIGHT;
        let seqno = sub.last_seqno.checked_add(1).ok_or(EOVERFLOW)?;
        let fence = Fence::new(ctx.timeline, seqno)?;
        let out_fd = if spec.want_out_fence {
            Some(fence.reserve_sync_file()?)
        } else {
            None
        };
        let mut waiters = [None, None];
        for (waiter, fence) in waiters.iter_mut().zip([&spec.in_fence, &spec.deps]) {
            if let Some(fence) = fence {
                *waiter = Some(JobWaiter::new(this, fence)?);
            }
        }
        let live = Job::live_waves(&spec, &this.topology)?;
        // A dropped job's storage, if the context kept one.
        let (record, pins) = sub.room.take();
        let prepared = Prepared::new(&this.memory, &spec.bindings, spec.scratch, pins)?;
        let mut job = Job::new(ctx, seqno, fence.clone(), spec, waiters, record)?;
        job.footprint = footprint;
        job.spare = Some(prepared);
        // Room in the context's wave store for every wave the job can have
        // at once: the first time a job of the context needs more.
        if sub.store_room < live {
            this.grow_store(ctx, &mut sub, live)?;
        }
        // Nothing below can fail: the job is accepted.
        ctx.admission.accepted();
        this.inbox.push(job);
        let closed = this.closed();
        if closed {
            // Closed since the check above: the last holder of the lock
            // may have missed the job. Taking the lock takes it, and
            // cancels it (the inbox and `closed` are fully ordered); the
            // caller drops it with [`Engine::make_room`], once it holds no
            // reservation lock.
            drop(this.lock());
        }
        sub.last_seqno = seqno;
        sub.recent[(seqno % MAX_JOBS_IN_FLIGHT) as usize] = Some(fence.clone());
        drop(sub);
        Self::kick(this);
        Ok((seqno, fence, out_fd, crowded || closed))
    }

    /// Gives `ctx`'s wave store room for `live` waves: allocated here,
    /// put in under the engine lock. Only a submission of the context
    /// grows it, holding the context's submissions lock (`sub`), where
    /// the new room is noted.
    fn grow_store(&self, ctx: &Context, sub: &mut Submissions, live: usize) -> Result {
        let growth = WaveStore::growth(sub.store_room, live, GFP_KERNEL_ACCOUNT)?;
        let replaced = {
            let mut st = self.lock();
            let q = st.queue_mut(ctx).ok_or(ENOENT)?;
            let replaced = q.store.grow(growth);
            sub.store_room = q.store.room();
            replaced
        };
        // Dropped outside the lock.
        drop(replaced);
        Ok(())
    }

    /// After a submission on `ctx` that found [`MAX_JOBS_IN_FLIGHT`] or
    /// more of its signalled jobs waiting for the clean-up work item
    /// ([`Engine::submit`] says so), or that was refused with `EAGAIN`
    /// because they fill the done list, once the submission holds no
    /// reservation lock (dropping them takes it): drops `ctx`'s signalled
    /// jobs here, in batches, then lets the clean-up work item have the
    /// rest of the device's. A job is queued only while a context's
    /// unfinished and signalled jobs number less than `DONE_CAPACITY`,
    /// and finishing only moves a job from one list to the other:
    /// signalling always finds room in `done`. This drain keeps the next
    /// submission from finding it full; it depends on no other context
    /// (a pass of the clean-up work item over all of them would), and
    /// ends: it takes what `ctx`'s list held at its first look, at most
    /// `DONE_CAPACITY` jobs.
    pub(crate) fn make_room(this: ArcBorrow<'_, Self>, ctx: &Context) {
        // What the list held at the first look: jobs signalled since are
        // left for the clean-up work item.
        let mut left = None;
        let mut dropped = 0;
        loop {
            let mut batch = DoneBatch::new();
            let taken = match this.lock().queue_mut(ctx) {
                Some(q) => {
                    let left = left.get_or_insert(q.done.len());
                    let taken = batch.take(q, *left);
                    *left -= taken;
                    taken
                }
                None => 0,
            };
            // After the lock.
            drop(batch);
            dropped += taken;
            if taken == 0 || left == Some(0) {
                break;
            }
        }
        if dropped > 0 {
            // Dropped jobs gave their device memory back.
            Self::memory_released(this);
        }
        Self::queue_cleanup(this);
        // Once shut down, the clean-up work item runs no more: the jobs a
        // late submission had cancelled go here.
        if this.closed() {
            drop(this.orphans.take());
        }
    }

    /// Drops the signalled jobs now (`BO_CPU_PREP`: they let their device
    /// copies go, so an object the CPU is about to write can leave device
    /// memory). Process context, no reservation lock held.
    pub(crate) fn drop_signalled(this: ArcBorrow<'_, Self>) {
        Self::clean_up(this);
    }

    /// What the engine knows of `ctx`, for `CTX_QUERY`; `ENOENT` if it is
    /// not live.
    pub(crate) fn context_stats(&self, ctx: &Context) -> Result<ContextStats> {
        let st = self.lock();
        let q = st.queue(ctx).ok_or(ENOENT)?;
        let now = monotonic_ns();
        Ok(ContextStats {
            runtime_ns: q.runtime_ns(),
            weight_milli: q.entry.weight(now).milli(),
            completed: q.completed,
            in_flight: q.jobs.len() as u64,
            guilty: q.ctx.admission.guilty(),
            slot: q.slot,
            slices: q.slices,
            preemptions: q.preemptions,
            switch_ns: q.switch_ns,
            phase1: q.phase1_times,
            last_job: q.last_job,
        })
    }

    /// The summed runtime of `contexts` (for fdinfo); contexts no longer
    /// live count 0.
    pub(crate) fn runtime_of<'a>(&self, contexts: impl Iterator<Item = &'a Arc<Context>>) -> u64 {
        let st = self.lock();
        contexts
            .filter_map(|c| st.queue(c))
            .fold(0u64, |sum, q| sum.saturating_add(q.runtime_ns()))
    }

    /// Stops the engine for good: cancels the timer, waits for the work
    /// items and drops all remaining jobs. Called when the device goes.
    pub(crate) fn shut_down(&self) {
        // Before the lock, fully ordered (as the inbox's push): a
        // submission that pushes its job after the inbox is looked at
        // below sees it, and takes the lock itself ([`Engine::submit`]).
        self.closed.xchg(true, ordering::Full);
        // The executor interprets no more, from its next piece on.
        self.exec.close();
        let (timer, queues) = {
            let _signalling = Signalling::begin();
            let mut st = self.lock();
            st.waves.clear();
            st.groups.iter_mut().for_each(|g| *g = None);
            let queues = core::mem::take(&mut st.queues);
            for queue in queues.iter() {
                for job in queue.jobs.iter() {
                    job.fence.signal(ECANCELED.to_errno());
                }
            }
            (st.timer.take(), queues)
        };
        // The jobs go only once the executor has stopped (a lease it had
        // in hand may still read their memory until then) and no lease
        // points to them any more.
        self.wait_for_gpu();
        self.exec.drain();
        drop(queues);
        // Cancels the timer and waits for a callback in progress.
        drop(timer);
        // Nothing queues a work item from here on (a fence callback or a
        // work item still running finds the engine stopped): once flushed,
        // none runs again, and none holds the last reference to the engine
        // on its own queue.
        *self.stopped.lock() = true;
        // SAFETY: `self.work`, `self.cleanup`, `self.memory_work` and
        // `self.gpu_work` are live, initialised work items.
        unsafe {
            bindings::flush_work(Work::raw_get(&self.work));
            bindings::flush_work(Work::raw_get(&self.cleanup));
            bindings::flush_work(Work::raw_get(&self.memory_work));
            bindings::flush_work(Work::raw_get(&self.gpu_work));
        }
        // What the clean-up work item did not drop; from here on,
        // cancelled records are dropped where they are removed.
        let buried = self.buried.lock().take();
        drop(buried);
        drop(self.orphans.take());
    }

    /// A view of the resource maps; `None` (and a warning) only if they do
    /// not match the topology, which [`Engine::new_on`] checked.
    fn occupancy<'a>(&'a self, r: &'a mut ResourceMaps) -> Option<Occupancy<'a>> {
        match Occupancy::new(&self.topology, &mut r.maps, &mut r.unit_waves) {
            Some(occ) => Some(
                occ.with_finder(self.params.finder)
                    .with_summaries(&mut r.summaries)
                    .with_generations(&mut r.generations),
            ),
            None => {
                warn_on!(true);
                None
            }
        }
    }

    /// The step's passes, until one changes nothing (at most 64): retire
    /// what has ended, finish jobs, decide who holds the slots, advance or
    /// save running waves, place more work.
    fn passes(this: ArcBorrow<'_, Self>, st: &mut EngineState, now: u64) {
        for _ in 0..64 {
            let mut changed = this.retire(st, now);
            changed += this.collect_finished(st, now);
            changed += Self::reschedule(this, st, now);
            changed += this.advance_waves(st, now);
            changed += Self::dispatch(this, st, now);
            // Checking an in-fence can fail a job at once: its context
            // was listed for the collection, in the next pass.
            changed += core::mem::take(&mut st.failed_at_once);
            if changed == 0 {
                break;
            }
        }
    }

    /// One engine step: retire what has ended, finish jobs, decide who
    /// holds the slots, advance or save running waves, place more work,
    /// arm the timer for the next event. The fence-signalling critical
    /// section of the driver: no allocation, no reservation lock, no
    /// interpretation (chunks go to the executor).
    fn step(this: ArcBorrow<'_, Self>) {
        let (gpu, cleanup, memory) = {
            let _signalling = Signalling::begin();
            let mut st = this.lock();
            if this.closed() {
                return;
            }
            let now = monotonic_ns();
            Self::audit_working(&mut st);
            Self::sweep_settled(&mut st);
            {
                let EngineState { slots, queues, .. } = &mut *st;
                slots.reorder_if_due(queues);
            }
            // Each of these can enable another (a finished job frees its
            // context's next one or its slot, a new slot holder places
            // work, placing can finish a job at once when its in-fence
            // failed): repeat until a pass changes nothing. Every pass
            // that changes something retires, finishes, moves a slot or
            // places work, so this ends; the bound is only a safety net.
            Self::passes(this, &mut st, now);
            // The memory work item's next tasks, when it has some and they
            // are short (a phase 1, a phase 2 with nothing to copy), are
            // done here, and what they let through runs in this step: a
            // job that needs only bookkeeping goes from the inbox to the
            // device without two hand-overs to that work item and back.
            // While that work item has a task in hand, or is queued, it
            // looks for its next one after this hold anyway: nothing to
            // ask, nor to queue.
            let memory = !this.memory_busy() && {
                let mut want = this.memory_want(&st, now);
                for _ in 0..AT_ONCE_TASKS {
                    if want != memory::Want::Phase || !this.memory_at_once(&mut st, now) {
                        break;
                    }
                    Self::passes(this, &mut st, now);
                    want = this.memory_want(&st, now);
                }
                want != memory::Want::Nothing
            };
            Self::arm_timer(this, &mut st, now);
            let gpu = core::mem::take(&mut st.gpu_due);
            (gpu, core::mem::take(&mut st.cleanup_due), memory)
        };
        // Jobs cancelled as they left the inbox (by this step or another
        // holder of the lock since the last clean-up) are dropped there.
        if cleanup || !this.orphans.is_empty() {
            Self::queue_cleanup(this);
        }
        if memory {
            Self::queue_memory(this);
        }
        if gpu {
            Self::kick_gpu(this);
        }
    }

    /// Drops the signalled jobs of every context, outside the engine lock
    /// and outside the signalling path: their buffer mappings take
    /// reservation locks, and their fences and waiters may free memory.
    fn clean_up(this: ArcBorrow<'_, Self>) {
        // Records of cancelled contexts first: what they hold of device
        // memory counts for the release below.
        let buried = match &mut *this.buried.lock() {
            Some(buried) => core::mem::take(buried),
            None => KVec::new(),
        };
        drop(buried);
        // Jobs cancelled as they left the inbox.
        drop(this.orphans.take());
        // One pass over the context list, resumed where the last hold left it.
        // When the list got shorter meanwhile (records behind a removed one
        // moved down, perhaps past the cursor) the pass starts over, at most
        // `RESTARTS` times (a client that destroys contexts in a loop cannot
        // keep it going); after that it goes on from where it is. A record it
        // misses waits for the next pass: every completion, and every
        // submission that finds its context's list filling
        // ([`Engine::make_room`], which drops that context's jobs itself),
        // queues one. The jobs leave the lists in batches ([`DoneBatch`]):
        // nothing is allocated for them, so the clean-up always makes room. A
        // context gives up what its list held when the pass reached it (its
        // oldest first; jobs signalled after that wait for the next pass), so a
        // context that keeps completing jobs cannot hold the pass: one hold per
        // context, and one more per `DROP_BATCH` jobs.
        const RESTARTS: u32 = 3;
        let mut from = 0;
        let mut len = None;
        let mut restarts = 0;
        // Jobs still to take from the context at `from`, once reached.
        let mut left = None;
        loop {
            let mut batch = DoneBatch::new();
            {
                let mut st = this.lock();
                if len.is_some_and(|len| st.queues.len() < len) {
                    if restarts < RESTARTS {
                        from = 0;
                        restarts += 1;
                    }
                    left = None;
                }
                len = Some(st.queues.len());
                // Only a working context has signalled jobs
                // ([`ContextQueue::settled`]): the set's members from
                // `from` on, in list order.
                let EngineState {
                    queues, working, ..
                } = &mut *st;
                let Some(i) = working
                    .iter_from(from)
                    .find(|&i| queues.get(i).is_some_and(|q| !q.done.is_empty()))
                else {
                    break;
                };
                let Some(q) = queue_at(queues, i) else {
                    break;
                };
                let here = match left {
                    Some(n) if i == from => n,
                    _ => q.done.len(),
                };
                let taken = batch.take(q, here);
                let rest = here.saturating_sub(taken);
                if rest == 0 || q.done.is_empty() {
                    from = i + 1;
                    left = None;
                } else {
                    from = i;
                    left = Some(rest);
                }
            }
            // After the lock.
            drop(batch);
        }
        // Dropped jobs gave their device memory back.
        Self::memory_released(this);
        // Room for more submissions; the engine may have more to do.
        Self::kick(this);
    }

    /// Moves finished jobs of every context to its `done` list, signalling
    /// their fences; returns how many. Walks the contexts whose first job
    /// may be finished only, in list order ([`EngineState::collecting`]),
    /// and lets those whose first job is not go: every other context's
    /// first job is unfinished.
    ///
    /// A finished job that holds device memory is cleaned up first: its
    /// objects are written back by the memory work item, and its fence
    /// signals when that copy has ended in modeled time. Until then it and
    /// the jobs behind it wait.
    ///
    /// A context's finished jobs are all signalled in one pass, so a WAIT
    /// that saw the first (a hang, say) also sees the jobs the hang
    /// cancelled. The `done` list always has room (see
    /// [`ContextQueue`]'s invariants): signalling never waits for the
    /// clean-up work item.
    fn collect_finished(&self, st: &mut EngineState, now: u64) -> usize {
        st.collecting.sort();
        let EngineState {
            queues,
            collecting,
            totals,
            cleanup_due,
            stages,
            tiles,
            tile_jobs,
            slots,
            ..
        } = st;
        let mut collected = 0;
        let mut released = false;
        collecting.retain(|i| {
            let Some(q) = queue_at(queues, i) else {
                // Past the list: cannot happen (removals shift the set).
                return false;
            };
            let before = collected;
            while let Some(first) = q.jobs.first_mut().filter(|j| j.is_finished()) {
                if first.times.first_wave != 0 && first.times.last_wave == 0 {
                    // Its last wave's end, not when the engine saw it.
                    let end = match first.last_wave_end_ns {
                        0 => now,
                        end => end.min(now),
                    };
                    first.times.last_wave = end;
                    memory::record(stages, &q.ctx, first.seqno, StageEvent::LastWave, end);
                    memory::record(stages, &q.ctx, first.seqno, StageEvent::EndReported, now);
                }
                if first.device.is_some() && first.times.cleanup_start == 0 {
                    // Nothing to write back: cleaned up as it signals.
                    if !first.stored() {
                        first.times.cleanup_start = now;
                        first.times.cleanup_end = now;
                        let seqno = first.seqno;
                        memory::record(stages, &q.ctx, seqno, StageEvent::CleanUpStart, now);
                        memory::record(stages, &q.ctx, seqno, StageEvent::CleanUpEnd, now);
                    }
                }
                match first.stage {
                    // Stored to device copies: they are written back first.
                    Stage::Uploading(_) if first.stored() => {
                        first.stage = Stage::CleanUpDue;
                        break;
                    }
                    Stage::CleanUpDue | Stage::CleaningUp => break,
                    // The memory work item has its hold and a reference to
                    // its objects: it hands them back first, so the last
                    // reference (whose unmap takes a reservation lock) is
                    // never dropped there.
                    Stage::Preparing => break,
                    Stage::CleanedUp(at) if at > now => break,
                    // Never prepared, stored nothing (its hold goes with
                    // it, dropped by the clean-up work item), or cleaned up.
                    Stage::Queued | Stage::Uploading(_) | Stage::CleanedUp(_) => {}
                }
                if q.done.len() >= q.done.capacity() {
                    // Cannot happen: submission keeps room for every job.
                    warn_on!(true);
                    *cleanup_due = true;
                    break;
                }
                let Ok(mut job) = q.jobs.remove(0) else {
                    break;
                };
                // What it left in the save area never runs.
                q.store.collected(job.id);
                // Its device memory goes back now (written back if it was
                // stored to), not when the clean-up work item drops it: a
                // job waiting for memory never waits for that work item,
                // which allocates and takes reservation locks.
                if let Some(device) = job.device.as_mut() {
                    device.release();
                    released = true;
                }
                q.completed += 1;
                q.last_job = job.times;
                // Its tiles go idle as it ends.
                tiles::give_back(tiles, tile_jobs, &mut job, now);
                let error = job.progress.error();
                if job.hung() {
                    // Like drm_sched's timeout handling: the context is
                    // guilty and what it queued behind the hung job never
                    // runs.
                    q.ctx.admission.set_guilty();
                    for later in q.jobs.iter_mut() {
                        later.progress.fail(ECANCELED.to_errno());
                    }
                }
                // Counted before the fence signals: a submission its waiter
                // makes at once sees one unfinished job fewer (and the
                // context guilty).
                q.ctx.admission.signalled();
                job.fence.signal(error);
                match error {
                    0 => totals.jobs_done += 1,
                    _ if job.hung() => totals.jobs_hung += 1,
                    e if e == EFAULT.to_errno() => totals.jobs_faulted += 1,
                    _ => totals.jobs_cancelled += 1,
                }
                // Room checked above.
                if let Err(PushError(job)) = q.done.push_within_capacity(job) {
                    warn_on!(true);
                    q.ctx.admission.dropped(1);
                    drop(job);
                }
                *cleanup_due = true;
                collected += 1;
            }
            // Its next job is its active one now; or a finished first job
            // waits for its write-back, and the job behind it is active.
            let waiting = queues
                .get(i)
                .and_then(|q| q.jobs.first())
                .is_some_and(|j| j.is_finished());
            if collected != before || waiting {
                slots.list(queues, i);
            }
            // A first job that is not finished: a site that may finish it
            // lists its context again.
            waiting
        });
        if released {
            st.released();
        }
        collected
    }

    /// Whether a context's first job may place work now: its objects are
    /// on the device, and its in-fence (if any) has signalled. A failed in-fence fails the job with
    /// `-ECANCELED`. The waiter armed at submission queues the engine when
    /// the fence signals.
    fn ready(job: &mut Job, now: u64, failed_at_once: &mut usize) -> bool {
        Self::in_fence_ready(job, failed_at_once) && job.stage.on_device(now)
    }

    /// Whether a job's in-fence and dependencies (if any) have signalled;
    /// a failed in-fence fails the job with `-ECANCELED` (counted in
    /// `failed_at_once`), a failed dependency does not (it only orders the
    /// job after it).
    fn in_fence_ready(job: &mut Job, failed_at_once: &mut usize) -> bool {
        if !job.in_fence_done {
            if let Some(in_fence) = &job.spec.in_fence {
                match in_fence.status() {
                    0 => return false,
                    1 => {}
                    _ => {
                        job.progress.fail(ECANCELED.to_errno());
                        // Nothing of it ran: it is finished, and the step
                        // goes round once more to collect it.
                        *failed_at_once += 1;
                        return false;
                    }
                }
            }
            if job.spec.deps.as_ref().is_some_and(|d| d.status() == 0) {
                return false;
            }
            // The fences and their waiters are dropped with the job, by
            // the clean-up work item: not on this path.
            job.in_fence_done = true;
        }
        true
    }

    /// Arms the timer for the next event: the earliest wave end, or the
    /// moment blocked independent work-groups are due to be split.
    fn arm_timer(this: ArcBorrow<'_, Self>, st: &mut EngineState, now: u64) {
        // A wave whose lease is out is the executor's until it comes back,
        // and the executor queues the step then; a recalled one waits for
        // its cancellation.
        let waves = st
            .waves
            .iter()
            .filter(|w| w.waits_for_step())
            .map(|w| w.end_ns)
            .min();
        let slices = st.slots.next_slice_end(&st.queues);
        // A first job's upload or write-back ending, a phase 1, its
        // active job's tiles waking, or the execution gate's hold ending:
        // found by a walk only once the last one found has passed (each
        // newly set one takes the bound down).
        if st.next_event_ns <= now {
            let hold = this.gate_hold_ns();
            // A settled context has none of these: the working ones only.
            let EngineState {
                queues, working, ..
            } = &*st;
            let next = working
                .iter()
                .filter_map(|i| queues.get(i))
                .flat_map(|q| {
                    let jobs = q.staged_jobs().filter_map(|j| match j.stage {
                        Stage::Uploading(at) | Stage::CleanedUp(at) => Some(at),
                        _ => None,
                    });
                    let init = match q.phase1 {
                        PhaseOne::Done(at) => Some(at),
                        _ => None,
                    };
                    let woken = q.active().map(|j| j.tiles_start_ns);
                    let gate =
                        (q.gate_held_since != 0).then(|| q.gate_held_since.saturating_add(hold));
                    Iterator::chain(Iterator::chain(Iterator::chain(jobs, init), woken), gate)
                })
                .filter(|&at| at > now)
                .min()
                .unwrap_or(u64::MAX);
            st.next_event_ns = next;
        }
        let copies = (st.next_event_ns != u64::MAX).then_some(st.next_event_ns);
        let slices = match (slices, copies) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut next = match (waves, slices) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if st.splittable_waiting {
            if let Some(at) = st.trigger.fire_time().filter(|&at| at > now) {
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        // Dropping the old handle cancels it before the timer is reused.
        st.timer = None;
        if let Some(end) = next {
            let delta = Delta::from_nanos(end.saturating_sub(now).min(i64::MAX as u64) as i64);
            st.timer = Some(Arc::from(this).start(delta));
        }
    }
}

impl WorkItem<0> for Engine {
    type Pointer = Arc<Engine>;

    fn run(this: Arc<Engine>) {
        Engine::step(this.as_arc_borrow());
    }
}

impl WorkItem<1> for Engine {
    type Pointer = Arc<Engine>;

    fn run(this: Arc<Engine>) {
        Engine::clean_up(this.as_arc_borrow());
    }
}

impl WorkItem<2> for Engine {
    type Pointer = Arc<Engine>;

    fn run(this: Arc<Engine>) {
        Engine::memory_work(this.as_arc_borrow());
    }
}

impl WorkItem<3> for Engine {
    type Pointer = Arc<Engine>;

    fn run(this: Arc<Engine>) {
        let engine = this.as_arc_borrow();
        // Each lease handed back is an interrupt: the step runs.
        if this.exec.run(|| Engine::kick(engine)) {
            // Leases are left: the next round runs after what else the
            // queue has.
            Engine::kick_gpu(engine);
        }
    }
}

impl HrTimerCallback for Engine {
    type Pointer<'a> = Arc<Self>;

    fn run(this: ArcBorrow<'_, Self>, _ctx: HrTimerCallbackContext<'_, Self>) -> HrTimerRestart {
        Engine::kick(this);
        HrTimerRestart::NoRestart
    }
}

/// The context states of the uAPI, for `CTX_QUERY`.
impl ContextStats {
    /// `DRM_VGSCHED_CTX_STATE_*`.
    pub(crate) fn state(&self) -> u32 {
        if self.guilty {
            uapi::DRM_VGSCHED_CTX_STATE_GUILTY
        } else if self.in_flight > 0 {
            uapi::DRM_VGSCHED_CTX_STATE_ACTIVE
        } else {
            uapi::DRM_VGSCHED_CTX_STATE_IDLE
        }
    }
}
