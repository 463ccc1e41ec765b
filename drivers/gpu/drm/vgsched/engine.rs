// SPDX-License-Identifier: GPL-2.0

//! The execution engine: runs jobs on the modeled device.
//!
//! A work-group is placed on one execution module; its waves run through
//! the interpreter over the job's buffer objects, so their effects on
//! memory are real, and each wave holds its unit's resources for its
//! modeled duration (its cycles at the modeled clock). Waves are
//! interpreted in chunks, each up to the next preemption point
//! ([`slots`]), so a wave can stop at an instruction boundary and be
//! saved when its context loses its hardware slot. An hrtimer fires at the
//! earliest event (a wave's end or point, a slice's end); the timer
//! callback only queues the engine's work item, which retires finished
//! waves, completes jobs (signalling their fences), decides who holds the
//! slots, advances or saves waves and places more work. Every state change
//! happens in that work item or in an ioctl, under [`Engine::state`].
//!
//! Which contexts may run is SEEDS A ([`slots`]): only the contexts in the
//! `hw_slots` hardware slots are dispatch channels.
//!
//! Work reaches the device through the dispatcher of SEEDS C
//! ([`dispatch`]): every context with work is a FIFO channel, all channel
//! heads are matched against all execution modules at once, and contiguous
//! register and shared-memory ranges are handed out by the bitmask resource
//! finder. Jobs of one context run one after the other, in submission
//! order; their work-groups run side by side.
//!
//! A wave that runs past the job timeout hangs its job: the job's fence
//! gets `-ETIME` when the timeout has passed in modeled time, its context
//! turns guilty and its queued jobs are cancelled; other contexts go on.

mod dispatch;
mod dump;
mod slots;

pub(crate) use dump::{ContextsDump, EngineDump, OccupancyDump, PlacementsDump, SliceFormulaFile};

use kernel::{
    bindings,
    ffi::c_void,
    impl_has_hr_timer, impl_has_work, new_mutex, new_work,
    prelude::*,
    sync::{Arc, ArcBorrow, Mutex},
    time::{
        hrtimer::{
            ArcHrTimerHandle, HrTimer, HrTimerCallback, HrTimerCallbackContext, HrTimerPointer,
            HrTimerRestart, RelativeMode,
        },
        Delta, Monotonic,
    },
    workqueue::{self, Work, WorkItem},
};

use crate::{
    context::{monotonic_ns, Context, MAX_JOBS_IN_FLIGHT},
    fence::{Fence, OutFenceFd, Waiter},
    job::JobSpec,
    vgsched_core::{
        context_switch::SchedParams,
        dispatch::{Candidate, DispatchParams, Rotation, SplitTrigger, WindowDebts, BANDS},
        exec::{Counters, CycleCosts},
        grid::Lane,
        module_choice::{ModuleScore, PowerWeights, PowerWindow},
        occupancy::{GroupNeeds, MapLayout, Occupancy, WaveSlot},
        pool,
        rng::Rng,
        slice::SliceFormula,
        slots::{SlotChange, SlotEntry},
        split::RotatingPointer,
        topology::Topology,
    },
};

use dump::PlacementLog;

/// The one-wave pieces of a split work-group still to place (SEEDS C3).
#[derive(Clone, Copy)]
struct SplitGroup {
    /// The work-group that was split.
    group: u32,
    /// Its next wave to place.
    next_wave: u32,
}

/// One queued or running job.
struct Job {
    /// Engine-wide number, increasing in submission order.
    id: u64,
    /// Sequence number in its context.
    seqno: u64,
    /// Signalled when the job finishes.
    fence: Fence,
    /// What to run.
    spec: JobSpec,
    /// Armed while the job waits for its in-fence.
    waiter: Option<Waiter>,
    /// Next whole work-group to place.
    next_group: u32,
    /// A work-group being placed wave by wave, after a split.
    split: Option<SplitGroup>,
    /// Work-groups (or pieces) placed and not yet retired.
    groups_running: u32,
    /// Work-groups (or pieces) stopped and waiting in the save area.
    groups_saved: u32,
    /// First error (negative errno), 0 while all is well; `-ETIME` means
    /// it hung, and only a hang sets that.
    error: i32,
}

impl Job {
    /// The job ran past the timeout: its context turns guilty.
    fn hung(&self) -> bool {
        self.error == ETIME.to_errno()
    }

    /// The job needs nothing more from the device.
    fn is_finished(&self) -> bool {
        self.groups_running == 0
            && (self.error != 0
                || (self.next_group == self.spec.grid.groups && self.split.is_none() && self.groups_saved == 0))
    }

    /// The job could place a work-group (or a piece of one) if it fits.
    fn has_groups_to_place(&self) -> bool {
        self.error == 0 && (self.split.is_some() || self.next_group < self.spec.grid.groups)
    }
}

/// The queued jobs of one context, oldest first: a dispatch channel while
/// the context holds a hardware slot.
struct ContextQueue {
    ctx: Arc<Context>,
    jobs: KVec<Job>,
    /// SEEDS C1's "selected" mark of this channel, per priority band.
    selected: [bool; BANDS],
    /// The context as the slot decision sees it (SEEDS A).
    entry: SlotEntry,
    /// The slot it holds, while resident.
    slot: Option<u32>,
    /// Its save area: work-groups stopped at a preemption point, in the
    /// order they were placed; they run again before anything new.
    saved: KVec<slots::SavedGroup>,
}

impl AsRef<SlotEntry> for ContextQueue {
    fn as_ref(&self) -> &SlotEntry {
        &self.entry
    }
}

impl AsMut<SlotEntry> for ContextQueue {
    fn as_mut(&mut self) -> &mut SlotEntry {
        &mut self.entry
    }
}

/// A placed work-group (or one-wave piece of a split one).
struct RunningGroup {
    /// Its job.
    job_id: u64,
    /// Its index in the job's grid.
    group: u32,
    /// Its dispatch band (pieces of a split group: the lowest).
    band: u8,
    /// A one-wave piece of a split group.
    piece: bool,
    /// Waves of it saved to its context's save area.
    saved_waves: u32,
    /// Its context (for accounting and cancelling).
    ctx: Arc<Context>,
    /// What it holds: the job's needs, or one wave's for a piece.
    needs: GroupNeeds,
    /// Its execution module.
    module: u32,
    /// First shared-memory block it holds.
    shared_start: u32,
    /// Waves not yet retired.
    waves_left: u32,
}

/// What a wave on the device is doing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum WavePhase {
    /// Executing; interpreted up to `end_ns`, a preemption point.
    Running,
    /// Finished (or abandoned with its failed job) at `end_ns`.
    Ended,
    /// Stopped, its state being moved to the save area until `end_ns`.
    Saving,
}

/// A wave on the device.
struct RunningWave {
    /// Index of its work-group in [`EngineState::groups`].
    slot: usize,
    /// Its index in its work-group.
    wave: u32,
    /// Its unit and register ranges.
    place: WaveSlot,
    /// What it is doing.
    phase: WavePhase,
    /// Its next event: the point it is interpreted to while running, the
    /// moment it gives its resources back otherwise.
    end_ns: u64,
    /// When it started executing here (after its state was restored).
    exec_from_ns: u64,
    /// Its cycles when it started executing here (non-zero once resumed).
    base_cycles: u64,
    /// Its cycles so far.
    cycles: u64,
    /// Its threads, stopped at an instruction boundary.
    lanes: KVVec<Lane>,
    /// Its current chunk's share of its module's recent-power count (C10).
    power_token: u64,
}

/// Per execution module dispatch state.
struct ModuleState {
    /// Where the split table's combination starts next (SEEDS C8).
    pointer: RotatingPointer,
    /// Weighted instructions issued recently (SEEDS C10).
    power: PowerWindow,
    /// Instructions executed per class since load.
    counters: Counters,
}

/// Totals for debugfs.
#[derive(Default)]
struct Totals {
    jobs_done: u64,
    jobs_faulted: u64,
    jobs_hung: u64,
    jobs_cancelled: u64,
    groups_dispatched: u64,
    groups_split: u64,
    waves_saved: u64,
    groups_restored: u64,
}

/// Everything the engine changes, under one lock.
struct EngineState {
    /// No more work is accepted or run: the device is going away.
    shut_down: bool,
    /// Next job id.
    next_job_id: u64,
    /// Contexts with queued jobs: the dispatch channels.
    queues: KVec<ContextQueue>,
    /// Work-groups on the device, by slot; at most one per wave slot.
    groups: KVVec<Option<RunningGroup>>,
    /// Waves on the device; capacity for every wave slot.
    waves: KVVec<RunningWave>,
    /// The resource bitmaps ([`MapLayout`]).
    maps: KVVec<u64>,
    /// Occupied wave slots per unit.
    unit_waves: KVec<u32>,
    /// Per-module dispatch state.
    modules: KVec<ModuleState>,
    /// Scratch of a dispatch round, sized with `queues`.
    heads: KVec<dispatch::Head>,
    /// Scratch: the heads that fit somewhere, for [`dispatch::pick`].
    candidates: KVec<Candidate>,
    /// Scratch: index into `heads` of each candidate.
    candidate_heads: KVec<usize>,
    /// Scratch: the modules a winner matches and their scores.
    scores: KVec<ModuleScore>,
    /// Random tie-break between channels (SEEDS C1).
    rng: Rng,
    /// Turns owed to bands whose rotation window passed unseen (C2).
    debts: WindowDebts,
    /// Failed-round counter of SEEDS C3.
    trigger: SplitTrigger,
    /// An unsplit independent head is waiting: arm the split timer.
    splittable_waiting: bool,
    /// The last placements, for debugfs.
    log: PlacementLog,
    /// Stage 2's slice formula; debugfs can change it at run time.
    formula: SliceFormula,
    /// Every live context, for debugfs.
    contexts: KVec<Arc<Context>>,
    /// Numbers loads into slots (stage 2's FIFO order).
    next_load_seq: u64,
    /// Slots held, one bit each (at most 64 slots).
    slots_used: u64,
    /// Scratch of the slot decision, sized with `queues`.
    slot_cands: KVec<pool::Candidate>,
    /// Scratch: its winners (one per slot).
    slot_chosen: KVec<usize>,
    /// Scratch: its changes (at most two per channel).
    slot_changes: KVec<SlotChange>,
    /// The armed completion timer.
    timer: Option<ArcHrTimerHandle<Engine>>,
    totals: Totals,
}

/// The execution engine of one device.
#[pin_data]
pub(crate) struct Engine {
    /// Shape and clock of the device.
    topology: Topology,
    /// Policy settings of the dispatcher.
    params: DispatchParams,
    /// Settings of the slot decision (the formula in use is
    /// [`EngineState::formula`]).
    sched: SchedParams,
    /// The priority rotation (SEEDS C2), in modeled nanoseconds.
    rotation: Rotation,
    /// Cycle cost per instruction class.
    costs: CycleCosts,
    /// Power weight per instruction class (SEEDS C10).
    power_weights: PowerWeights,
    #[pin]
    state: Mutex<EngineState>,
    #[pin]
    work: Work<Engine>,
    #[pin]
    timer: HrTimer<Engine>,
}

impl_has_work! {
    impl HasWork<Self> for Engine { self.work }
}

impl_has_hr_timer! {
    impl HasHrTimer<Self> for Engine {
        mode: RelativeMode<Monotonic>, field: self.timer
    }
}

impl Engine {
    /// An idle engine for a device of shape `topology`.
    pub(crate) fn new(topology: Topology, params: DispatchParams, sched: SchedParams) -> Result<Arc<Self>> {
        let n_units = topology.total_units() as usize;
        let n_modules = topology.modules as usize;
        let wave_slots = n_units * topology.wave_slots as usize;
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
        let state = EngineState {
            shut_down: false,
            next_job_id: 1,
            queues: KVec::new(),
            groups,
            // Placing never allocates: every wave holds a wave slot.
            waves: KVVec::with_capacity(wave_slots, GFP_KERNEL)?,
            maps: KVVec::from_elem(0, MapLayout::new(&topology).total_words(&topology), GFP_KERNEL)?,
            unit_waves: KVec::from_elem(0, n_units, GFP_KERNEL)?,
            modules,
            heads: KVec::new(),
            candidates: KVec::new(),
            candidate_heads: KVec::new(),
            scores: KVec::with_capacity(n_modules, GFP_KERNEL)?,
            rng: Rng::new(monotonic_ns()),
            debts: WindowDebts::new(),
            trigger: SplitTrigger::new(topology.cycles_to_ns(params.split_after_rounds)),
            splittable_waiting: false,
            log: PlacementLog::new()?,
            formula: sched.policy.formula,
            contexts: KVec::new(),
            next_load_seq: 0,
            slots_used: 0,
            slot_cands: KVec::new(),
            slot_chosen: KVec::from_elem(0, sched.policy.slots, GFP_KERNEL)?,
            slot_changes: KVec::new(),
            timer: None,
            totals: Totals::default(),
        };
        Arc::pin_init(
            try_pin_init!(Self {
                topology,
                params,
                sched,
                rotation: Rotation::new(topology.cycles_to_ns(params.rotation_period_cycles)),
                costs: CycleCosts::DEFAULT,
                power_weights: PowerWeights::DEFAULT,
                state <- new_mutex!(state),
                work <- new_work!("vgsched::Engine::work"),
                timer <- HrTimer::new(),
            }),
            GFP_KERNEL,
        )
    }

    /// The cycle costs per instruction class.
    pub(crate) fn costs(&self) -> &CycleCosts {
        &self.costs
    }

    /// Queues the engine's work item (a no-op if it is already queued).
    fn kick(this: ArcBorrow<'_, Self>) {
        let _ = workqueue::system().enqueue(Arc::from(this));
    }

    /// Queues a job on `ctx`. Returns its sequence number, its completion
    /// fence and, if asked, the reserved sync_file descriptor of that fence
    /// (to install once the ioctl cannot fail any more).
    ///
    /// `E2BIG` if the resource finder in use can never place a work-group
    /// of the job, `ECANCELED` if the context is guilty, `EBUSY` if it has
    /// [`MAX_JOBS_IN_FLIGHT`] unfinished jobs, `ENODEV` once shut down.
    pub(crate) fn submit(
        this: ArcBorrow<'_, Self>,
        ctx: &Arc<Context>,
        spec: JobSpec,
    ) -> Result<(u64, Fence, Option<OutFenceFd>)> {
        // The finder rounds needs up (to whole groups, to powers of two):
        // what it can never place would wait forever.
        Occupancy::check_placeable(&this.topology, &spec.needs, spec.independent, this.params.finder)
            .map_err(|_| E2BIG)?;
        let mut st = this.state.lock();
        if st.shut_down {
            return Err(ENODEV);
        }
        let mut cs = ctx.state.lock();
        if cs.closed {
            return Err(ENOENT);
        }
        if cs.guilty {
            return Err(ECANCELED);
        }
        if cs.in_flight() >= MAX_JOBS_IN_FLIGHT {
            return Err(EBUSY);
        }
        // Everything fallible first; the state changes below cannot fail.
        let seqno = cs.last_seqno + 1;
        let fence = Fence::new(ctx.timeline, seqno)?;
        let out_fd = if spec.want_out_fence { Some(fence.reserve_sync_file()?) } else { None };
        let queue = match st.queues.iter().position(|q| Arc::ptr_eq(&q.ctx, ctx)) {
            Some(i) => i,
            None => {
                // A dispatch round and a slot decision need scratch room
                // for every channel.
                let channels = st.queues.len() + 1;
                st.heads.reserve(channels, GFP_KERNEL)?;
                st.candidates.reserve(channels, GFP_KERNEL)?;
                st.candidate_heads.reserve(channels, GFP_KERNEL)?;
                st.slot_cands.reserve(channels, GFP_KERNEL)?;
                st.slot_changes.reserve(2 * channels, GFP_KERNEL)?;
                let jobs = KVec::with_capacity(MAX_JOBS_IN_FLIGHT as usize, GFP_KERNEL)?;
                let entry = SlotEntry::new(pool::Candidate {
                    id: ctx.timeline as u32,
                    priority: ctx.priority as u8,
                    created_ns: ctx.created_ns,
                    runtime_ns: cs.runtime_ns,
                    runnable: false,
                });
                let queue = ContextQueue {
                    ctx: ctx.clone(),
                    jobs,
                    selected: [false; BANDS],
                    entry,
                    slot: None,
                    saved: KVec::new(),
                };
                st.queues.push(queue, GFP_KERNEL)?;
                st.queues.len() - 1
            }
        };
        let id = st.next_job_id;
        let job = Job {
            id,
            seqno,
            fence: fence.clone(),
            spec,
            waiter: None,
            next_group: 0,
            split: None,
            groups_running: 0,
            groups_saved: 0,
            error: 0,
        };
        // Capacity for MAX_JOBS_IN_FLIGHT was reserved with the queue and
        // `in_flight()` is below that.
        st.queues[queue].jobs.push_within_capacity(job).map_err(|_| ENOMEM)?;
        st.next_job_id += 1;
        cs.last_seqno = seqno;
        cs.recent[(seqno % MAX_JOBS_IN_FLIGHT) as usize] = Some(fence.clone());
        drop(cs);
        drop(st);
        Self::kick(this);
        Ok((seqno, fence, out_fd))
    }

    /// Makes a new context known to the scheduler's debugfs view.
    pub(crate) fn register_context(&self, ctx: &Arc<Context>) -> Result {
        self.state.lock().contexts.push(ctx.clone(), GFP_KERNEL)?;
        Ok(())
    }

    /// Cancels every unfinished job of `ctx` at once: queued ones never
    /// run, running work-groups are taken off the device, and all their
    /// fences signal `-ECANCELED`. Used when a context is destroyed or its
    /// file is closed, so nothing of it outlives it.
    pub(crate) fn cancel_context(this: ArcBorrow<'_, Self>, ctx: &Arc<Context>) {
        let mut st = this.state.lock();
        ctx.state.lock().closed = true;
        st.contexts.retain(|c| !Arc::ptr_eq(c, ctx));
        let Some(i) = st.queues.iter().position(|q| Arc::ptr_eq(&q.ctx, ctx)) else {
            return;
        };
        let Ok(queue) = st.queues.remove(i) else {
            return;
        };
        let now = monotonic_ns();
        let EngineState { groups, waves, maps, unit_waves, modules, .. } = &mut *st;
        let mut occ = this.occupancy(maps, unit_waves);
        let now_cycle = this.topology.ns_to_cycles(now);
        let of_ctx = |g: &Option<RunningGroup>| g.as_ref().is_some_and(|g| Arc::ptr_eq(&g.ctx, ctx));
        waves.retain(|w| {
            let Some(g) = groups[w.slot].as_ref() else {
                return true;
            };
            if !Arc::ptr_eq(&g.ctx, ctx) {
                return true;
            }
            occ.release_wave(g.module, &w.place, &g.needs.wave);
            // Cut short now: it issued nothing after this.
            modules[g.module as usize].power.stop(now_cycle, now_cycle, w.power_token);
            false
        });
        for slot in groups.iter_mut().filter(|g| of_ctx(g)) {
            if let Some(g) = slot.take() {
                occ.release_shared(g.module, g.shared_start, g.needs.shared);
            }
        }
        if let Some(slot) = queue.slot {
            st.slots_used &= !(1u64 << slot);
        }
        let mut cs = ctx.state.lock();
        cs.slot = None;
        for job in queue.jobs.iter() {
            job.fence.signal(ECANCELED.to_errno());
            cs.jobs_completed += 1;
        }
        st.totals.jobs_cancelled += queue.jobs.len() as u64;
        drop(cs);
        drop(st);
        // Buffer mappings and waiters go here, outside the locks.
        drop(queue);
        Self::kick(this);
    }

    /// Stops the engine for good: cancels the timer, waits for the work
    /// item and drops all remaining jobs. Called when the device goes.
    pub(crate) fn shut_down(&self) {
        let (timer, queues) = {
            let mut st = self.state.lock();
            st.shut_down = true;
            st.waves.clear();
            st.groups.iter_mut().for_each(|g| *g = None);
            (st.timer.take(), core::mem::take(&mut st.queues))
        };
        for queue in queues.iter() {
            for job in queue.jobs.iter() {
                job.fence.signal(ECANCELED.to_errno());
            }
        }
        drop(queues);
        // Cancels the timer and waits for a callback in progress.
        drop(timer);
        // SAFETY: `self.work` is a live, initialised work item.
        unsafe { bindings::flush_work(Work::raw_get(&self.work)) };
    }

    /// A view of the resource maps.
    fn occupancy<'a>(&'a self, maps: &'a mut [u64], unit_waves: &'a mut [u32]) -> Occupancy<'a> {
        // The arrays were sized from `self.topology` in `new`.
        Occupancy::new(&self.topology, maps, unit_waves)
            .expect("resource maps match the topology")
            .with_finder(self.params.finder)
    }

    /// One engine step: retire what has ended, finish jobs, decide who
    /// holds the slots, advance or save running waves, place more work,
    /// arm the timer for the next event.
    fn step(this: ArcBorrow<'_, Self>) {
        let mut finished = KVec::new();
        {
            let mut st = this.state.lock();
            if st.shut_down {
                return;
            }
            let now = monotonic_ns();
            // Each of these can enable another (a finished job frees its
            // context's next one or its slot, a new slot holder places
            // work, placing can finish a job at once when its in-fence
            // failed): repeat until a pass changes nothing. Every pass
            // that changes something retires, finishes, moves a slot or
            // places work, so this ends; the bound is only a safety net.
            for _ in 0..64 {
                let mut changed = this.retire(&mut st, now);
                let before = finished.len();
                this.collect_finished(&mut st, &mut finished);
                changed += finished.len() - before;
                changed += Self::reschedule(this, &mut st, now);
                changed += this.advance_waves(&mut st, now);
                changed += Self::dispatch(this, &mut st, now);
                // Checking an in-fence can fail a job at once: collect it.
                changed += st.queues.iter().filter(|q| q.jobs.first().is_some_and(Job::is_finished)).count();
                if changed == 0 {
                    break;
                }
            }
            Self::arm_timer(this, &mut st, now);
        }
        // Jobs drop outside the lock: unmapping buffers may sleep.
        drop(finished);
    }

    /// Retires waves that ended or finished saving by `now`, giving back
    /// their ranges, and work-groups whose last wave has. Returns how many.
    fn retire(&self, st: &mut EngineState, now: u64) -> usize {
        let EngineState { groups, waves, maps, unit_waves, modules, queues, .. } = st;
        let mut occ = self.occupancy(maps, unit_waves);
        let now_cycle = self.topology.ns_to_cycles(now);
        let before = waves.len();
        waves.retain(|w| {
            // Running waves at their point are [`Engine::advance_waves`]'s.
            if w.end_ns > now || w.phase == WavePhase::Running {
                return true;
            }
            let Some(g) = groups[w.slot].as_mut() else {
                return false;
            };
            occ.release_wave(g.module, &w.place, &g.needs.wave);
            if w.phase == WavePhase::Ended {
                modules[g.module as usize].power.stop(self.topology.ns_to_cycles(w.end_ns), now_cycle, w.power_token);
            }
            g.waves_left -= 1;
            if g.waves_left == 0 {
                occ.release_shared(g.module, g.shared_start, g.needs.shared);
                if let Some(job) = find_job(queues, g.job_id) {
                    job.groups_running -= 1;
                }
                if g.saved_waves > 0 {
                    // Its last wave left the device: it may be restored.
                    let q = queues.iter_mut().find(|q| Arc::ptr_eq(&q.ctx, &g.ctx));
                    let same = |s: &&mut slots::SavedGroup| {
                        s.job_id == g.job_id && s.group == g.group && s.piece == g.piece && !s.complete
                    };
                    if let Some(s) = q.and_then(|q| q.saved.iter_mut().find(same)) {
                        s.complete = true;
                    }
                }
                groups[w.slot] = None;
            }
            false
        });
        before - waves.len()
    }

    /// Moves finished jobs out of their queues, signalling their fences.
    ///
    /// A context's finished jobs are all signalled under one hold of its
    /// lock, so a WAIT that saw the first (a hang, say) also sees the jobs
    /// the hang cancelled.
    fn collect_finished(&self, st: &mut EngineState, out: &mut KVec<Job>) {
        let mut qi = 0;
        while qi < st.queues.len() {
            let q = &mut st.queues[qi];
            if !q.jobs.first().is_some_and(Job::is_finished) {
                qi += 1;
                continue;
            }
            let ctx = q.ctx.clone();
            let mut cs = ctx.state.lock();
            while q.jobs.first().is_some_and(Job::is_finished) {
                let Ok(job) = q.jobs.remove(0) else {
                    break;
                };
                // A failed job's stopped work-groups never run again.
                q.saved.retain(|g| g.job_id != job.id);
                cs.jobs_completed += 1;
                job.fence.signal(job.error);
                let t = &mut st.totals;
                match job.error {
                    0 => t.jobs_done += 1,
                    _ if job.hung() => t.jobs_hung += 1,
                    e if e == EFAULT.to_errno() => t.jobs_faulted += 1,
                    _ => t.jobs_cancelled += 1,
                }
                if job.hung() {
                    // Like drm_sched's timeout handling: the context is
                    // guilty and what it queued behind the hung job never
                    // runs.
                    cs.guilty = true;
                    for later in q.jobs.iter_mut() {
                        if later.error == 0 {
                            later.error = ECANCELED.to_errno();
                        }
                    }
                }
                // Keeping the job costs no allocation failure path: if the
                // push fails the job simply drops here, under the lock.
                let _ = out.push(job, GFP_KERNEL);
            }
            if q.jobs.is_empty() {
                // No more work: it leaves its slot (SEEDS A).
                if let Some(slot) = q.slot.take() {
                    st.slots_used &= !(1u64 << slot);
                    cs.slot = None;
                }
                drop(cs);
                let _ = st.queues.remove(qi);
            } else {
                drop(cs);
                qi += 1;
            }
        }
    }

    /// Whether a context's first job may place work now. Arms a waiter on
    /// its in-fence if that has not signalled.
    fn ready(this: ArcBorrow<'_, Self>, job: &mut Job) -> bool {
        let Some(in_fence) = &job.spec.in_fence else {
            return true;
        };
        if job.waiter.is_none() {
            // SAFETY: `fence_signalled` only queues the engine's work item,
            // which is safe from any context; `data` is the engine, which
            // outlives the waiter since jobs are dropped before the engine.
            match unsafe { in_fence.add_waiter(fence_signalled, core::ptr::from_ref::<Engine>(&this).cast_mut().cast()) } {
                Ok(w) => job.waiter = Some(w),
                // Without a waiter the next step of another event retries.
                Err(_) => return false,
            }
        }
        match in_fence.status() {
            0 => false,
            1 => {
                job.waiter = None;
                job.spec.in_fence = None;
                true
            }
            _ => {
                job.error = ECANCELED.to_errno();
                false
            }
        }
    }

    /// Arms the timer for the next event: the earliest wave end, or the
    /// moment blocked independent work-groups are due to be split.
    fn arm_timer(this: ArcBorrow<'_, Self>, st: &mut EngineState, now: u64) {
        let waves = st.waves.iter().map(|w| w.end_ns).min();
        let slices = crate::vgsched_core::slots::next_slice_end(&st.queues);
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

fn find_job(queues: &mut KVec<ContextQueue>, id: u64) -> Option<&mut Job> {
    queues.iter_mut().flat_map(|q| q.jobs.iter_mut()).find(|j| j.id == id)
}

/// Called by a fence waiter when an in-fence signals.
///
/// # Safety
///
/// `data` is the `Engine` inside an `Arc`, alive while the waiter exists.
unsafe extern "C" fn fence_signalled(data: *mut c_void) {
    // SAFETY: By the function's safety requirement.
    let engine = unsafe { ArcBorrow::from_raw(data.cast::<Engine>()) };
    Engine::kick(engine);
}

impl WorkItem for Engine {
    type Pointer = Arc<Engine>;

    fn run(this: Arc<Engine>) {
        Engine::step(this.as_arc_borrow());
    }
}

impl HrTimerCallback for Engine {
    type Pointer<'a> = Arc<Self>;

    fn run(this: ArcBorrow<'_, Self>, _ctx: HrTimerCallbackContext<'_, Self>) -> HrTimerRestart {
        Engine::kick(this);
        HrTimerRestart::NoRestart
    }
}
