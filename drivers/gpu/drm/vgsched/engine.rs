// SPDX-License-Identifier: GPL-2.0

//! The execution engine: runs jobs on the modeled device.
//!
//! A work-group is placed on one execution module; its waves run at once
//! through the interpreter, over the job's buffer objects, so their effects
//! on memory are real, and each wave then holds its unit's resources for
//! its modeled duration (its cycles at the modeled clock). An hrtimer fires
//! at the earliest end; the timer callback only queues the engine's work
//! item, which retires finished waves, completes jobs (signalling their
//! fences) and places more work. Every state change happens in that work
//! item or in an ioctl, under [`Engine::state`].
//!
//! Scheduling here is the simple in-order one: among the contexts whose
//! next job may start, the oldest job goes first, and the device waits when
//! its next work-group does not fit (head-of-line blocking). Jobs of one
//! context run one after the other, in submission order. SEEDS A (pool
//! selection, time slices) and C (dispatch) replace [`EngineState::dispatch`].
//!
//! A wave that runs past the job timeout hangs its job: the job's fence
//! gets `-ETIME` when the timeout has passed in modeled time, its context
//! turns guilty and its queued jobs are cancelled; other contexts go on.

use core::fmt;

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
    job::{BoMemory, JobSpec},
    vgsched_core::{
        exec::{Counters, CycleCosts},
        grid::{run_wave, WaveEnd, MAX_WAVES_PER_GROUP},
        isa::NUM_CLASSES,
        occupancy::{GroupNeeds, Occupancy, Placement, UnitUse},
        topology::Topology,
    },
};

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
    /// Next work-group to place.
    next_group: u32,
    /// Work-groups placed and not yet retired.
    groups_running: u32,
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
        self.groups_running == 0 && (self.error != 0 || self.next_group == self.spec.grid.groups)
    }

    /// The job could place a work-group if one fits.
    fn has_groups_to_place(&self) -> bool {
        self.error == 0 && self.next_group < self.spec.grid.groups
    }
}

/// The queued jobs of one context, oldest first.
struct ContextQueue {
    ctx: Arc<Context>,
    jobs: KVec<Job>,
}

/// A placed work-group.
struct RunningGroup {
    /// Its job.
    job_id: u64,
    /// Its context (for accounting).
    ctx: Arc<Context>,
    /// Where it runs and what it holds.
    placement: Placement,
    /// Its waves' modeled end times, `u64::MAX` once retired.
    wave_end_ns: [u64; MAX_WAVES_PER_GROUP as usize],
    /// Waves not yet retired.
    waves_left: u32,
}

/// Everything the engine changes, under one lock.
struct EngineState {
    /// No more work is accepted or run: the device is going away.
    shut_down: bool,
    /// Next job id.
    next_job_id: u64,
    /// Contexts with queued jobs.
    queues: KVec<ContextQueue>,
    /// Work-groups on the device.
    running: KVec<RunningGroup>,
    /// Per-unit usage, module-major.
    units: KVec<UnitUse>,
    /// Per-module shared-memory usage.
    shared: KVec<u32>,
    /// Instructions executed per module and class (SEEDS C10).
    counters: KVec<Counters>,
    /// The armed completion timer.
    timer: Option<ArcHrTimerHandle<Engine>>,
    /// Totals for debugfs.
    jobs_done: u64,
    jobs_faulted: u64,
    jobs_hung: u64,
    jobs_cancelled: u64,
}

/// The execution engine of one device.
#[pin_data]
pub(crate) struct Engine {
    /// Shape and clock of the device.
    topology: Topology,
    /// Cycle cost per instruction class.
    costs: CycleCosts,
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
    pub(crate) fn new(topology: Topology) -> Result<Arc<Self>> {
        let n_units = topology.total_units() as usize;
        let n_modules = topology.modules as usize;
        let state = EngineState {
            shut_down: false,
            next_job_id: 1,
            queues: KVec::new(),
            // At most one work-group per wave slot can be on the device,
            // so placing never needs to allocate.
            running: KVec::with_capacity(n_units * topology.wave_slots as usize, GFP_KERNEL)?,
            units: KVec::from_elem(UnitUse::default(), n_units, GFP_KERNEL)?,
            shared: KVec::from_elem(0, n_modules, GFP_KERNEL)?,
            counters: KVec::from_elem(Counters::default(), n_modules, GFP_KERNEL)?,
            timer: None,
            jobs_done: 0,
            jobs_faulted: 0,
            jobs_hung: 0,
            jobs_cancelled: 0,
        };
        Arc::pin_init(
            try_pin_init!(Self {
                topology,
                costs: CycleCosts::DEFAULT,
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

    /// Queues a job on `ctx`. Returns its sequence number and, if asked,
    /// the reserved sync_file descriptor of its fence (to install once the
    /// ioctl cannot fail any more).
    ///
    /// `ECANCELED` if the context is guilty, `EBUSY` if it has
    /// [`MAX_JOBS_IN_FLIGHT`] unfinished jobs, `ENODEV` once shut down.
    pub(crate) fn submit(
        this: ArcBorrow<'_, Self>,
        ctx: &Arc<Context>,
        spec: JobSpec,
    ) -> Result<(u64, Option<OutFenceFd>)> {
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
                let jobs = KVec::with_capacity(MAX_JOBS_IN_FLIGHT as usize, GFP_KERNEL)?;
                st.queues.push(ContextQueue { ctx: ctx.clone(), jobs }, GFP_KERNEL)?;
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
            groups_running: 0,
            error: 0,
        };
        // Capacity for MAX_JOBS_IN_FLIGHT was reserved with the queue and
        // `in_flight()` is below that.
        st.queues[queue].jobs.push_within_capacity(job).map_err(|_| ENOMEM)?;
        st.next_job_id += 1;
        cs.last_seqno = seqno;
        cs.recent[(seqno % MAX_JOBS_IN_FLIGHT) as usize] = Some(fence);
        drop(cs);
        drop(st);
        Self::kick(this);
        Ok((seqno, out_fd))
    }

    /// Cancels every unfinished job of `ctx` at once: queued ones never
    /// run, running work-groups are taken off the device, and all their
    /// fences signal `-ECANCELED`. Used when a context is destroyed or its
    /// file is closed, so nothing of it outlives it.
    pub(crate) fn cancel_context(this: ArcBorrow<'_, Self>, ctx: &Arc<Context>) {
        let mut st = this.state.lock();
        ctx.state.lock().closed = true;
        let Some(i) = st.queues.iter().position(|q| Arc::ptr_eq(&q.ctx, ctx)) else {
            return;
        };
        let Ok(queue) = st.queues.remove(i) else {
            return;
        };
        let EngineState { running, units, shared, .. } = &mut *st;
        let mut occ = this.occupancy(units, shared);
        // Only a context's first job places work-groups (jobs of a context
        // run in order), so every running group of it has that job's needs.
        running.retain(|g| {
            if !Arc::ptr_eq(&g.ctx, ctx) {
                return true;
            }
            release_group(&mut occ, g, &queue.jobs[0].spec.needs);
            false
        });
        let mut cs = ctx.state.lock();
        for job in queue.jobs.iter() {
            job.fence.signal(ECANCELED.to_errno());
            cs.jobs_completed += 1;
        }
        st.jobs_cancelled += queue.jobs.len() as u64;
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
            st.running.clear();
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

    fn occupancy<'a>(&'a self, units: &'a mut [UnitUse], shared: &'a mut [u32]) -> Occupancy<'a> {
        // The arrays were sized from `self.topology` in `new`.
        Occupancy::new(&self.topology, units, shared).expect("usage arrays match the topology")
    }

    /// One engine step: retire what has ended, finish jobs, place more
    /// work, arm the timer for the next end.
    fn step(this: ArcBorrow<'_, Self>) {
        let mut finished = KVec::new();
        {
            let mut st = this.state.lock();
            if st.shut_down {
                return;
            }
            let now = monotonic_ns();
            this.retire(&mut st, now);
            // Finishing a job can free its context's next one, and placing
            // can finish a job at once (a failed in-fence): repeat until
            // nothing more finishes.
            let mut placed = false;
            loop {
                let before = finished.len();
                this.collect_finished(&mut st, &mut finished);
                if placed && finished.len() == before {
                    break;
                }
                Self::dispatch(this, &mut st, now);
                placed = true;
            }
            Self::arm_timer(this, &mut st, now);
        }
        // Jobs drop outside the lock: unmapping buffers may sleep.
        drop(finished);
    }

    /// Retires waves whose modeled end has passed.
    fn retire(&self, st: &mut EngineState, now: u64) {
        let EngineState { running, units, shared, queues, .. } = st;
        let mut occ = self.occupancy(units, shared);
        running.retain(|g| {
            let Some(job) = find_job(queues, g.job_id) else {
                return false;
            };
            let needs = job.spec.needs;
            for w in 0..needs.waves as usize {
                let end = g.wave_end_ns[w];
                if end != u64::MAX && end <= now {
                    occ.release_wave(g.placement.module, g.placement.units[w] as u32, &needs.wave);
                    g.wave_end_ns[w] = u64::MAX;
                    g.waves_left -= 1;
                }
            }
            if g.waves_left > 0 {
                return true;
            }
            occ.release_shared(g.placement.module, needs.shared);
            job.groups_running -= 1;
            false
        });
    }

    /// Moves finished jobs out of their queues, signalling their fences.
    fn collect_finished(&self, st: &mut EngineState, out: &mut KVec<Job>) {
        let mut qi = 0;
        while qi < st.queues.len() {
            let q = &mut st.queues[qi];
            if !q.jobs.first().is_some_and(Job::is_finished) {
                qi += 1;
                continue;
            }
            let Ok(job) = q.jobs.remove(0) else {
                break;
            };
            let ctx = q.ctx.clone();
            let mut cs = ctx.state.lock();
            cs.jobs_completed += 1;
            job.fence.signal(job.error);
            match job.error {
                0 => st.jobs_done += 1,
                _ if job.hung() => st.jobs_hung += 1,
                e if e == EFAULT.to_errno() => st.jobs_faulted += 1,
                _ => st.jobs_cancelled += 1,
            }
            if job.hung() {
                // Like drm_sched's timeout handling: the context is guilty
                // and what it queued behind the hung job never runs.
                cs.guilty = true;
                for later in q.jobs.iter_mut() {
                    if later.error == 0 {
                        later.error = ECANCELED.to_errno();
                    }
                }
            }
            drop(cs);
            if q.jobs.is_empty() {
                let _ = st.queues.remove(qi);
            }
            // Keeping the job costs no allocation failure path: if the push
            // fails the job simply drops here, under the lock.
            let _ = out.push(job, GFP_KERNEL);
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

    /// Places work-groups in submission order until one does not fit.
    fn dispatch(this: ArcBorrow<'_, Self>, st: &mut EngineState, now: u64) {
        loop {
            // The oldest first job among the contexts that can go.
            let mut best: Option<(usize, u64)> = None;
            for (qi, q) in st.queues.iter_mut().enumerate() {
                let Some(job) = q.jobs.first_mut() else { continue };
                if !job.has_groups_to_place() || !Self::ready(this, job) {
                    continue;
                }
                if best.is_none_or(|(_, id)| job.id < id) {
                    best = Some((qi, job.id));
                }
            }
            let Some((qi, _)) = best else { return };
            if !this.place_group(st, qi, now) {
                return;
            }
        }
    }

    /// Places the next work-group of queue `qi`'s first job, running its
    /// waves; `false` if it does not fit now.
    fn place_group(&self, st: &mut EngineState, qi: usize, now: u64) -> bool {
        let EngineState { queues, running, units, shared, counters, .. } = st;
        let q = &mut queues[qi];
        let job = &mut q.jobs[0];
        let needs = job.spec.needs;
        let mut occ = self.occupancy(units, shared);
        let Some(placement) = occ.find(&needs) else {
            return false;
        };
        occ.take(&placement, &needs);
        let group = job.next_group;
        job.next_group += 1;
        job.groups_running += 1;

        let limit = self.topology.timeout_cycles();
        let mut mem = BoMemory(&job.spec.bindings);
        let mut wave_end_ns = [u64::MAX; MAX_WAVES_PER_GROUP as usize];
        let mut last_end = now;
        for wave in 0..needs.waves {
            if job.error != 0 {
                // The job has failed: its other waves need not run; they
                // give their resources back at once.
                wave_end_ns[wave as usize] = now;
                continue;
            }
            let run = run_wave(&job.spec.program, &job.spec.grid, group, wave, &mut mem, &self.costs, limit);
            counters[placement.module as usize].add(&run.counters);
            let end = now.saturating_add(self.topology.cycles_to_ns(run.cycles));
            wave_end_ns[wave as usize] = end;
            last_end = last_end.max(end);
            match run.end {
                WaveEnd::Done => {}
                // Waves after a failed one are skipped above, so the
                // first failure is the only one.
                WaveEnd::Hung => job.error = ETIME.to_errno(),
                WaveEnd::Fault { .. } => job.error = EFAULT.to_errno(),
            }
        }
        q.ctx.state.lock().account(now, last_end);
        let entry = RunningGroup {
            job_id: job.id,
            ctx: q.ctx.clone(),
            placement,
            wave_end_ns,
            waves_left: needs.waves,
        };
        // Capacity for every wave slot was reserved in `new`.
        let _ = running.push_within_capacity(entry);
        true
    }

    /// Arms the timer for the earliest wave end still ahead.
    fn arm_timer(this: ArcBorrow<'_, Self>, st: &mut EngineState, now: u64) {
        let next = st
            .running
            .iter()
            .flat_map(|g| g.wave_end_ns.iter().copied())
            .min()
            .filter(|&end| end != u64::MAX);
        // Dropping the old handle cancels it before the timer is reused.
        st.timer = None;
        if let Some(end) = next {
            let delta = Delta::from_nanos(end.saturating_sub(now).min(i64::MAX as u64) as i64);
            st.timer = Some(Arc::from(this).start(delta));
        }
    }

    /// A human-readable dump of the device for debugfs.
    fn dump(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        let t = &self.topology;
        writeln!(
            f,
            "device: {} modules x {} units, clock {} kHz, job timeout {} ms",
            t.modules, t.units_per_module, t.clock_khz, t.job_timeout_ms
        )?;
        writeln!(
            f,
            "jobs: done {} faulted {} hung {} cancelled {}",
            st.jobs_done, st.jobs_faulted, st.jobs_hung, st.jobs_cancelled
        )?;
        writeln!(
            f,
            "per unit [waves vgpr sgpr] of {} {} {}; instructions per class: move alu load store matrix compare jump",
            t.wave_slots, t.vgpr_blocks, t.sgpr_blocks
        )?;
        for m in 0..t.modules {
            write!(f, "module {m}: shared {}/{} units", st.shared[m as usize], t.shared_mem_blocks)?;
            for u in 0..t.units_per_module {
                let used = st.units[(m * t.units_per_module + u) as usize];
                write!(f, " [{} {} {}]", used.waves, used.vgpr, used.sgpr)?;
            }
            write!(f, " instructions")?;
            let c = &st.counters[m as usize];
            for class in 0..NUM_CLASSES {
                write!(f, " {}", c.per_class[class])?;
            }
            writeln!(f)?;
        }
        for q in st.queues.iter() {
            writeln!(
                f,
                "context client {} id {} priority {}: {} jobs queued",
                q.ctx.client,
                q.ctx.id,
                q.ctx.priority,
                q.jobs.len()
            )?;
            for job in q.jobs.iter() {
                writeln!(
                    f,
                    "  job seqno {}: groups {}/{} placed, {} running, error {}{}{}",
                    job.seqno,
                    job.next_group,
                    job.spec.grid.groups,
                    job.groups_running,
                    job.error,
                    if job.spec.independent { ", independent" } else { "" },
                    if job.spec.in_fence.is_some() { ", waits for a fence" } else { "" }
                )?;
            }
        }
        writeln!(f, "work-groups on the device: {}", st.running.len())
    }
}

/// Gives back everything a work-group still holds.
fn release_group(occ: &mut Occupancy<'_>, g: &RunningGroup, needs: &GroupNeeds) {
    for w in 0..needs.waves as usize {
        if g.wave_end_ns[w] != u64::MAX {
            occ.release_wave(g.placement.module, g.placement.units[w] as u32, &needs.wave);
        }
    }
    occ.release_shared(g.placement.module, needs.shared);
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

/// The debugfs view of an engine: `/sys/kernel/debug/vgsched/state`.
pub(crate) struct EngineDump(pub(crate) Arc<Engine>);

impl fmt::Debug for EngineDump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.dump(f)
    }
}
