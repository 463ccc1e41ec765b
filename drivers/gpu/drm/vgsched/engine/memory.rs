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
//! system's unbound work queue, never on the engine's own queue: the
//! fence-signalling path must not wait for them. The engine lock is taken
//! only to pick the next task and to hand its result back.
//!
//! A job's stages ([`Stage`]): queued, preparing (the work item has it),
//! uploading until its last copy ends in modeled time and then on the
//! device (it may place work), clean-up due once its grid is finished and
//! it stored to a device copy, cleaning up, cleaned up (its fence signals
//! when the write-back ends in modeled time). Every stage start and end is
//! recorded in the stage log (debugfs `stages`) and the job's times reach
//! `CTX_QUERY` when it signals.
//!
//! A job holding device memory can always run: its in-fence has passed and
//! every job before it in its context holds memory too. Jobs are prepared
//! in submission order over all contexts; when the oldest does not fit,
//! nothing younger is prepared until memory comes back.

use kernel::{
    drm::gem::BaseObject,
    prelude::*,
    sync::{
        Arc,
        ArcBorrow, //
    },
    warn_on,
    workqueue, //
};

use super::{
    dump::Ring,
    queue_in,
    sync::Signalling,
    ContextQueue,
    Engine,
    EngineState,
    Job, //
};
use crate::{
    context::{
        monotonic_ns,
        Context, //
    },
    job::Bindings,
    params,
    vgsched_core::{
        device_memory::footprint,
        pipeline::{
            self,
            Mode,
            PipelineParams,
            SubTask, //
        },
    },
    vram::{
        DeviceArea,
        DeviceMemory,
        Pinned, //
    },
};

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
    CleanUpStart,
    CleanUpEnd,
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
            Self::CleanUpStart => "cleanup_start",
            Self::CleanUpEnd => "cleanup_end",
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

/// What a prepared job holds in device memory.
pub(super) struct Prepared {
    /// Its bound objects, by binding slot.
    pub(super) pins: KVec<Pinned>,
    /// Its scratch area.
    _scratch: Option<DeviceArea>,
}

/// A piece of work of the memory work item, taken under the engine lock.
/// `releases` is [`EngineState::releases`] when it was taken: if it did
/// not fit and nothing was released since, it waits for a release.
enum MemoryTask {
    PhaseOne {
        ctx: Arc<Context>,
        releases: u64,
    },
    Prepare {
        ctx: Arc<Context>,
        job: u64,
        seqno: u64,
        bindings: Bindings,
        scratch: u64,
        releases: u64,
    },
    CleanUp {
        ctx: Arc<Context>,
        job: u64,
        bindings: Bindings,
        prepared: Prepared,
    },
    /// A cleaned-up task's state area, to free outside the lock.
    Release(DeviceArea),
}

/// The in-fence of a job has signalled without error (or it has none).
fn in_fence_passed(job: &Job) -> bool {
    job.in_fence_done || job.spec.in_fence.as_ref().is_none_or(|f| f.status() == 1)
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

    /// Device memory of its job executing now (0 if none).
    pub(super) fn running_bytes(&self) -> u64 {
        self.active()
            .filter(|j| j.times.first_wave != 0)
            .map_or(0, |j| j.footprint)
    }

    /// Its task is over: initialised, no work and no slot (rule 6).
    fn task_over(&self) -> bool {
        matches!(self.phase1, PhaseOne::Done(_)) && self.jobs.is_empty() && self.slot.is_none()
    }
}

/// Something of a job or a context is in preparation, execution or
/// clean-up (sequential mode does one thing at a time).
fn device_busy(st: &EngineState) -> bool {
    st.queues
        .iter()
        .any(|q| q.phase1 == PhaseOne::Allocating || q.jobs.iter().any(|j| j.stage.busy()))
}

/// The next task: the waiting context (with work, holding no slot) that
/// slot selection ranks first, by priority level and then weight.
fn next_waiting(st: &EngineState, now: u64) -> Option<usize> {
    st.queues
        .iter()
        .enumerate()
        .filter(|(_, q)| q.slot.is_none() && q.has_work())
        .min_by_key(|(_, q)| (q.ctx.priority, u64::MAX - q.entry.weight(now).milli()))
        .map(|(i, _)| i)
}

/// What every candidate for phase 2 shares: the settings, whether the
/// device is busy (sequential), the next task and whether every current
/// task has reached its progress point (rule 3).
struct Gate {
    p: PipelineParams,
    busy: bool,
    next: Option<usize>,
    progress: bool,
}

impl Gate {
    fn new(st: &EngineState, now: u64) -> Self {
        let p = params::pipeline();
        let progress = st
            .queues
            .iter()
            .filter(|c| c.slot.is_some())
            .all(|c| pipeline::next_phase2_allowed(&p, c.sub_tasks()));
        Self {
            busy: p.mode == Mode::Sequential && device_busy(st),
            next: next_waiting(st, now),
            progress,
            p,
        }
    }

    /// The job of context `index` whose phase 2 may start now, if any.
    fn preparable<'a>(&self, index: usize, q: &'a ContextQueue, now: u64) -> Option<&'a Job> {
        if q.cancelling || !q.initialised(now) {
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
        let first = q.jobs.first().is_some_and(|f| f.id == job.id);
        let allowed = match self.p.mode {
            Mode::Sequential => q.slot.is_some() && first && !self.busy,
            // The current task: the next sub-task (rule 5).
            Mode::Pipelined if q.slot.is_some() => true,
            // The next task's first sub-task, at the progress point of
            // every current task (rule 3).
            Mode::Pipelined => first && self.next == Some(index) && self.progress,
        };
        allowed.then_some(job)
    }
}

/// The context whose phase 1 may start now, oldest work first.
fn phase_one_due(st: &EngineState, p: &PipelineParams, state_bytes: u64) -> Option<usize> {
    let held = st
        .queues
        .iter()
        .filter(|q| q.phase1 != PhaseOne::Idle)
        .count() as u64;
    let held = held.saturating_mul(state_bytes);
    let busy = device_busy(st);
    st.queues
        .iter()
        .enumerate()
        .filter(|(_, q)| q.phase1 == PhaseOne::Idle && q.has_work() && !q.cancelling)
        // None ahead of its load while a job waits for memory.
        .filter(|(_, q)| q.slot.is_some() || !st.phase1_ahead_paused)
        .filter(|(_, q)| pipeline::may_start_phase1(p, held, q.slot.is_some(), busy))
        .min_by_key(|(_, q)| q.jobs.first().map_or(u64::MAX, |j| j.id))
        .map(|(i, _)| i)
}

impl Engine {
    /// Queues the memory work item (a no-op if it is already queued).
    pub(super) fn queue_memory(this: ArcBorrow<'_, Self>) {
        let _already_queued = workqueue::system_unbound().enqueue::<_, 2>(Arc::from(this));
    }

    /// Whether the memory work item has something to do at `now`; under
    /// the engine lock, on any path (it only looks).
    pub(super) fn memory_wanted(&self, st: &EngineState, now: u64) -> bool {
        let cleanup = st.queues.iter().any(|q| {
            !q.cancelling
                && (q.jobs.first().is_some_and(|j| j.stage == Stage::CleanUpDue) || q.task_over())
        });
        if cleanup {
            return true;
        }
        if st.memory_blocked {
            return false;
        }
        let p = params::pipeline();
        if phase_one_due(st, &p, self.phase_one.state_bytes).is_some() {
            return true;
        }
        let gate = Gate::new(st, now);
        st.queues
            .iter()
            .enumerate()
            .any(|(i, q)| gate.preparable(i, q, now).is_some())
    }

    /// The next piece of work: a clean-up if one is due (it gives memory
    /// back), a phase 1, else the oldest job whose phase 2 may start.
    fn next_task(&self, st: &mut EngineState, now: u64) -> Option<MemoryTask> {
        let p = params::pipeline();
        let releases = st.releases;
        let EngineState { queues, stages, .. } = st;
        for q in queues.iter_mut().filter(|q| !q.cancelling) {
            if let Some(job) = q.jobs.first_mut().filter(|j| j.stage == Stage::CleanUpDue) {
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
            if q.task_over() {
                // Rule 6: the task is cleaned up.
                q.phase1 = PhaseOne::Idle;
                record(stages, &q.ctx, 0, StageEvent::TaskCleanUp, now);
                if let Some(area) = q.state_area.take() {
                    return Some(MemoryTask::Release(area));
                }
            }
        }
        if st.memory_blocked {
            // The oldest job does not fit: contexts initialised ahead of
            // their load, with nothing prepared yet, give their state
            // areas back first (they are initialised again once it fits).
            let EngineState { queues, stages, .. } = st;
            let ahead = queues.iter_mut().find(|q| {
                q.slot.is_none()
                    && q.state_area.is_some()
                    && matches!(q.phase1, PhaseOne::Done(_))
                    && !q.jobs.iter().any(|j| j.stage.busy())
            })?;
            ahead.phase1 = PhaseOne::Idle;
            record(stages, &ahead.ctx, 0, StageEvent::TaskCleanUp, now);
            return ahead.state_area.take().map(MemoryTask::Release);
        }
        if let Some(i) = phase_one_due(st, &p, self.phase_one.state_bytes) {
            let q = st.queues.get_mut(i)?;
            q.phase1 = PhaseOne::Allocating;
            return Some(MemoryTask::PhaseOne {
                ctx: q.ctx.clone(),
                releases,
            });
        }
        // The oldest preparable job over all contexts: (context, job).
        let gate = Gate::new(st, now);
        let oldest = st
            .queues
            .iter()
            .enumerate()
            .filter_map(|(qi, q)| Some((qi, gate.preparable(qi, q, now)?.id)))
            .min_by_key(|&(_, id)| id);
        let (qi, id) = oldest?;
        let q = st.queues.get_mut(qi)?;
        let ctx = q.ctx.clone();
        let job = find_job_of(&mut q.jobs, id)?;
        job.stage = Stage::Preparing;
        Some(MemoryTask::Prepare {
            ctx,
            job: job.id,
            seqno: job.seqno,
            bindings: job.spec.bindings.clone(),
            scratch: job.spec.scratch,
            releases,
        })
    }

    /// The memory work item: runs its work until none is left.
    pub(super) fn memory_work(this: ArcBorrow<'_, Self>) {
        loop {
            let task = {
                let mut st = this.lock();
                if st.shut_down {
                    return;
                }
                this.next_task(&mut st, monotonic_ns())
            };
            let Some(task) = task else {
                return;
            };
            match task {
                MemoryTask::PhaseOne { ctx, releases } => Self::phase_one(this, &ctx, releases),
                MemoryTask::Prepare {
                    ctx,
                    job,
                    seqno,
                    bindings,
                    scratch,
                    releases,
                } => Self::prepare(this, &ctx, job, seqno, &bindings, scratch, releases),
                MemoryTask::CleanUp {
                    ctx,
                    job,
                    bindings,
                    prepared,
                } => Self::clean_up_job(this, &ctx, job, &bindings, prepared),
                MemoryTask::Release(area) => {
                    drop(area);
                    this.lock().released();
                }
            }
            Self::kick(this);
        }
    }

    /// Phase 1 of `ctx`: its state area, then its init time.
    fn phase_one(this: ArcBorrow<'_, Self>, ctx: &Arc<Context>, releases: u64) {
        let start = monotonic_ns();
        let area = DeviceArea::new(&this.memory, this.phase_one.state_bytes);
        let mut unused = None;
        {
            let mut st = this.lock();
            let full = matches!(area, Err(e) if e == ENOSPC);
            st.wait_for_release(full, releases);
            let EngineState { queues, stages, .. } = &mut *st;
            match queue_in(queues, ctx) {
                Some(q) => match area {
                    Ok(area) => {
                        let end = start.saturating_add(this.phase_one.init_ns);
                        // An area is released before phase 1 can start
                        // again: there is none to replace.
                        unused = core::mem::replace(&mut q.state_area, area);
                        warn_on!(unused.is_some());
                        q.phase1 = PhaseOne::Done(end);
                        q.phase1_times = (start, end);
                        record(stages, ctx, 0, StageEvent::Phase1Start, start);
                        record(stages, ctx, 0, StageEvent::Phase1End, end);
                    }
                    // Tried again when memory comes back.
                    Err(_) => q.phase1 = PhaseOne::Idle,
                },
                None => unused = area.ok().flatten(),
            }
        }
        drop(unused);
    }

    /// Phase 2 of a job: its objects made resident and its scratch area
    /// allocated. On `ENOSPC` the job waits, queued, and nothing younger
    /// is prepared until memory is given back.
    fn prepare(
        this: ArcBorrow<'_, Self>,
        ctx: &Arc<Context>,
        id: u64,
        seqno: u64,
        bindings: &Bindings,
        scratch: u64,
        releases: u64,
    ) {
        let start = monotonic_ns();
        let taken = Self::take_all(&this.memory, bindings, scratch, start);
        let mut unused = None;
        {
            let mut st = this.lock();
            let full = matches!(taken, Err(e) if e == ENOSPC);
            st.wait_for_release(full, releases);
            st.phase1_ahead_paused = full;
            let EngineState { queues, stages, .. } = &mut *st;
            match queue_in(queues, ctx).and_then(|q| find_job_of(&mut q.jobs, id)) {
                Some(job) => match taken {
                    Ok((prepared, ready)) => {
                        job.device = Some(prepared);
                        job.stage = Stage::Uploading(ready);
                        job.times.phase2_start = start;
                        job.times.phase2_end = ready;
                        record(stages, ctx, seqno, StageEvent::Phase2Start, start);
                        record(stages, ctx, seqno, StageEvent::Phase2End, ready);
                    }
                    Err(_) if full => job.stage = Stage::Queued,
                    Err(e) => {
                        // Out of kernel memory: it fails, as a submission
                        // that could not be allocated would.
                        job.stage = Stage::Queued;
                        job.progress.fail(e.to_errno());
                    }
                },
                // Cancelled meanwhile: its hold goes, outside the lock.
                None => unused = taken.ok(),
            }
        }
        drop(unused);
    }

    /// Takes every binding of a job (in slot order) and its scratch area;
    /// all or nothing. Returns them and when the last upload ends.
    fn take_all(
        memory: &Arc<DeviceMemory>,
        bindings: &Bindings,
        scratch: u64,
        now: u64,
    ) -> Result<(Prepared, u64)> {
        let mut pins = KVec::with_capacity(bindings.len(), GFP_KERNEL)?;
        let mut ready = now;
        for map in bindings.iter() {
            let (pin, at) = DeviceMemory::take(memory, map, now)?;
            pins.push(pin, GFP_KERNEL)?;
            ready = ready.max(at);
        }
        let scratch = match scratch {
            0 => None,
            bytes => {
                let area = DeviceArea::new(memory, bytes)?;
                // Zeroed on the device: it moves like an upload.
                ready = ready.max(memory.copy_time(bytes, now));
                area
            }
        };
        Ok((
            Prepared {
                pins,
                _scratch: scratch,
            },
            ready,
        ))
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
        let _signalling = Signalling::begin();
        let now = monotonic_ns();
        let mut done = now;
        let mut error = 0;
        for (pin, map) in prepared.pins.iter_mut().zip(bindings.iter()) {
            if pin.stored() {
                match this.memory.write_back(pin, map, now) {
                    Ok(at) => done = done.max(at),
                    Err(e) => error = e.to_errno(),
                }
            }
        }
        let mut unused = None;
        {
            let mut st = this.lock();
            let EngineState { queues, stages, .. } = &mut *st;
            match queue_in(queues, ctx).and_then(|q| find_job_of(&mut q.jobs, id)) {
                Some(job) => {
                    if error != 0 {
                        job.progress.fail(error);
                    }
                    job.device = Some(prepared);
                    job.stage = Stage::CleanedUp(done);
                    job.times.cleanup_end = done;
                    record(stages, ctx, job.seqno, StageEvent::CleanUpEnd, done);
                }
                None => unused = Some(prepared),
            }
        }
        drop(_signalling);
        drop(unused);
    }

    /// Memory came back outside the memory work item (a job dropped, an
    /// object forgotten): prepare again what waited for it.
    pub(crate) fn memory_released(this: ArcBorrow<'_, Self>) {
        let wanted = {
            let mut st = this.lock();
            st.released();
            this.memory_wanted(&st, monotonic_ns())
        };
        if wanted {
            Self::queue_memory(this);
        }
    }

    /// Device memory a job needs at once: its distinct objects and its
    /// scratch area; `E2BIG` if it can never have it beside the state
    /// areas of the contexts in every hardware slot.
    pub(super) fn footprint(&self, bindings: &Bindings, scratch: u64) -> Result<u64> {
        let distinct = bindings.iter().enumerate().filter_map(|(i, map)| {
            let id = map.owner().id;
            let first = !bindings.iter().take(i).any(|m| m.owner().id == id);
            first.then(|| map.owner().size() as u64)
        });
        let slots = u64::from(self.topology.hw_slots);
        let states = self.phase_one.state_bytes.saturating_mul(slots);
        let room = self.memory.size().saturating_sub(states);
        match footprint(Iterator::chain(distinct, core::iter::once(scratch))) {
            Some(bytes) if bytes <= room => Ok(bytes),
            _ => Err(E2BIG),
        }
    }

    /// Rule 4 for `q`: its first job of the task, prepared, may start
    /// executing now, while the contexts' running jobs hold `all_running`
    /// bytes. Sequential mode runs one job at a time already.
    pub(super) fn may_execute(q: &ContextQueue, all_running: u64, p: &PipelineParams) -> bool {
        if p.mode == Mode::Sequential || q.task_started {
            return true;
        }
        let Some(job) = q.active() else {
            return true;
        };
        let others = all_running.saturating_sub(q.running_bytes());
        pipeline::next_may_execute(p, others, job.footprint)
    }
}

impl EngineState {
    /// Device memory came back: whatever waited for it is tried again.
    fn released(&mut self) {
        self.releases = self.releases.wrapping_add(1);
        self.memory_blocked = false;
    }

    /// A phase 1 or phase 2 taken when [`EngineState::releases`] was
    /// `releases` found the memory `full`: it waits for a release, unless
    /// one came meanwhile (then it is simply tried again).
    fn wait_for_release(&mut self, full: bool, releases: u64) {
        if full && self.releases == releases {
            self.memory_blocked = true;
        }
    }
}

/// The job numbered `id` in one context's list.
fn find_job_of(jobs: &mut KVec<Job>, id: u64) -> Option<&mut Job> {
    jobs.iter_mut().find(|j| j.id == id)
}
