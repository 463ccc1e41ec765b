// SPDX-License-Identifier: GPL-2.0

//! The mock device: a [`Backend`] that does not interpret.
//!
//! A lease "runs" from the moment it is submitted, one modeled clock cycle
//! per cycle of the device's clock, and is handed back when an hrtimer
//! fires at its end: when its chunk reaches its horizon, or when its wave
//! has run for the whole of its job's duration ([`JobSpec::mock_cycles`],
//! set only by in-kernel tests: it ends [`WaveEnd::Done`] there), or when
//! it reaches the cycle limit before either ([`WaveEnd::Hung`], as a wave
//! of the virtual GPU that runs past the job timeout). Nothing is read or
//! written in device memory and no instruction is counted. So jobs end
//! after a given time, and the KUnit suites (`kunit.rs`) run the scheduler
//! (the engine, unchanged) over it, as drm_sched's tests run it over its
//! mock scheduler. Its timing is the model's own, unless a test makes it
//! late ([`MockExecutor::set_late`]): then it computes every wave's end
//! that much after the end's modeled time and says so, as the virtual GPU
//! does when its interpreter falls behind the modeled clock.
//!
//! The timer only raises the interrupt: it queues the engine's device work
//! item, which runs [`MockExecutor::run`] on the mock's own queue; that
//! moves the leases whose time has come to the done list, calls
//! `handed_back` (queueing the engine's step) and arms the timer for the
//! next one. The mock holds a reference to its engine from
//! [`MockExecutor::connect`] to [`Backend::close`], which the engine's
//! shut-down gives: an engine over the mock that is never shut down is
//! leaked, as one over the virtual GPU would keep its work items.
//!
//! [`JobSpec::mock_cycles`]: crate::job::JobSpec::mock_cycles

use kernel::{
    bindings,
    impl_has_hr_timer,
    new_spinlock_irq,
    prelude::*,
    sync::{
        atomic::{
            ordering,
            Atomic, //
        },
        Arc,
        SpinLockIrq, //
    },
    time::{
        hrtimer::{
            HasHrTimer,
            HrTimer,
            HrTimerCallback,
            HrTimerCallbackContext,
            HrTimerRestart,
            RelativeMode, //
        },
        Delta,
        Monotonic, //
    },
    warn_on,
    workqueue::Queue, //
};

use super::{
    exec::{
        ExecStats,
        Lease,
        Recall,
        Ring, //
    },
    Backend,
};
use crate::{
    context::monotonic_ns,
    engine::{
        sync::{
            OwnedQueue,
            Signalling, //
        },
        Engine, //
    },
    vgsched_core::{
        exec::CycleCosts,
        grid::WaveEnd,
        topology::Topology, //
    },
};

/// A lease the mock has: when it started and where it ends.
struct Running {
    lease: Lease,
    /// When it was submitted (it runs from then on).
    started_ns: u64,
    /// The wave's cycles then.
    base: u64,
}

/// Where a lease's chunk ends: the wave's cycles then, and how the wave
/// ended, if it did.
fn plan(lease: &Lease) -> (u64, Option<WaveEnd>) {
    let duration = lease.duration.max(lease.cycles);
    if duration <= lease.until && duration <= lease.limit {
        (duration, Some(WaveEnd::Done))
    } else if lease.limit < lease.until {
        // It passes the limit before its horizon, or ends past it.
        (lease.limit.max(lease.cycles), Some(WaveEnd::Hung))
    } else {
        (lease.until.max(lease.cycles), None)
    }
}

impl Running {
    /// When its chunk is complete, on `CLOCK_MONOTONIC`: `late` after its
    /// modeled time if its wave ends in it.
    fn due_ns(&self, topology: &Topology, late: u64) -> u64 {
        let (target, end) = plan(&self.lease);
        let left = topology.cycles_to_ns(target.saturating_sub(self.base));
        let late = if end.is_some() { late } else { 0 };
        self.started_ns.saturating_add(left).saturating_add(late)
    }

    /// The wave's cycles at `now`.
    fn progress(&self, topology: &Topology, now: u64) -> u64 {
        self.base
            .saturating_add(topology.ns_to_cycles(now.saturating_sub(self.started_ns)))
    }

    /// Hands the lease back as it stands at `now`: complete (its end as
    /// planned) once its chunk's time has come, else as far as it got.
    fn into_lease(self, topology: &Topology, now: u64) -> Lease {
        let (target, end) = plan(&self.lease);
        let reached = self.progress(topology, now);
        let mut lease = self.lease;
        if reached >= target {
            lease.cycles = target;
            lease.end = end;
            lease.complete = true;
        } else {
            lease.cycles = reached;
            lease.end = None;
            lease.complete = false;
        }
        lease
    }
}

/// The mock's lists, under its lock.
///
/// # Invariants
///
/// `running` has one entry per wave slot, and `done` room for as many: a
/// submission or a hand-back always fits. `armed_ns` is `u64::MAX` or the
/// moment the timer was last armed for.
struct MockState {
    /// The leases running, in no order.
    running: KVec<Option<Running>>,
    /// Leases handed back, for the engine to take.
    done: Ring,
    /// The next lease id (never 0).
    next_id: u64,
    /// When the timer fires next.
    armed_ns: u64,
    /// The engine whose device work item the timer queues (the
    /// interrupt line), from [`MockExecutor::connect`] to close.
    irq: Option<Arc<Engine>>,
}

/// A device whose leases run for a given time ([`mod@self`]).
#[pin_data(PinnedDrop)]
pub(crate) struct MockExecutor {
    /// The queue of its work item.
    wq: OwnedQueue,
    /// Its clock.
    topology: Topology,
    /// Reported only: nothing is interpreted.
    costs: CycleCosts,
    /// Closed: no more hand-backs, no more timers.
    closed: Atomic<bool>,
    /// Leases handed back since load, and their modeled run in all and the
    /// longest.
    leases: Atomic<u64>,
    busy_ns: Atomic<u64>,
    longest_ns: Atomic<u64>,
    /// How long after its modeled end a wave's end is computed
    /// ([`MockExecutor::set_late`]; 0: on the model's time).
    late_ns: Atomic<u64>,
    #[pin]
    state: SpinLockIrq<MockState>,
    #[pin]
    timer: HrTimer<MockExecutor>,
}

impl_has_hr_timer! {
    impl HasHrTimer<Self> for MockExecutor {
        mode: RelativeMode<Monotonic>, field: self.timer
    }
}

impl MockExecutor {
    /// An idle mock of `wave_slots` wave slots, on the clock of
    /// `topology`.
    pub(crate) fn new(
        wave_slots: usize,
        topology: Topology,
        costs: CycleCosts,
    ) -> Result<impl PinInit<Self, Error>> {
        let mut running = KVec::with_capacity(wave_slots, GFP_KERNEL)?;
        for _ in 0..wave_slots {
            running.push(None, GFP_KERNEL)?;
        }
        let state = MockState {
            running,
            done: Ring::with_capacity(wave_slots)?,
            next_id: 1,
            armed_ns: u64::MAX,
            irq: None,
        };
        Ok(try_pin_init!(Self {
            wq: OwnedQueue::gpu()?,
            topology,
            costs,
            closed: Atomic::new(false),
            leases: Atomic::new(0),
            busy_ns: Atomic::new(0),
            longest_ns: Atomic::new(0),
            late_ns: Atomic::new(0),
            state <- new_spinlock_irq!(state, "vgsched::MockExecutor::state"),
            timer <- HrTimer::new(),
        }))
    }

    /// Connects the interrupt line: from now on the timer queues the
    /// device work item of `engine`, until the mock is closed.
    pub(crate) fn connect(&self, engine: Arc<Engine>) {
        let old = {
            let mut st = self.state.lock();
            match self.closed.load(ordering::Acquire) {
                true => Some(engine),
                false => st.irq.replace(engine),
            }
        };
        // Outside the lock (not the last reference: the caller has one).
        drop(old);
    }

    /// From now on, computes the end of every wave `late_ns` after its
    /// modeled time and hands the lease back then, saying when
    /// ([`Lease`]'s `done_ns`): a device behind its clock, for the KUnit
    /// cases of how the engine takes such an end.
    pub(crate) fn set_late(&self, late_ns: u64) {
        self.late_ns.store(late_ns, ordering::Relaxed);
    }

    /// Leases it has, running or handed back and not yet taken.
    pub(crate) fn leases_out(&self) -> usize {
        let st = self.state.lock();
        st.running.iter().flatten().count() + st.done.len()
    }

    /// Arms the timer for `at` unless it fires earlier already; under the
    /// lock, never once closed.
    fn arm(&self, st: &mut MockState, at: u64, now: u64) {
        // A moment past is a timer that fired: [`Backend::run`] follows.
        let pending = st.armed_ns > now;
        if self.closed.load(ordering::Acquire) || (pending && at >= st.armed_ns) {
            return;
        }
        st.armed_ns = at;
        let delta = Delta::from_nanos(at.saturating_sub(now).min(i64::MAX as u64) as i64);
        // SAFETY: `self` is pinned and lives until the timer is cancelled:
        // by [`Backend::close`], after which nothing arms it (checked
        // above, under the lock close takes), or by the drop.
        unsafe { <Self as HasHrTimer<Self>>::start(self, delta) };
    }

    /// Cancels the timer, waiting for a callback in progress. Never under
    /// the lock (the callback takes it).
    fn cancel_timer(&self) {
        // SAFETY: `self` is a live, initialised timer owner.
        unsafe {
            bindings::hrtimer_cancel(<Self as HasHrTimer<Self>>::c_timer_ptr(self).cast_mut());
        }
    }
}

impl HrTimerCallback for MockExecutor {
    type Pointer<'a> = Pin<&'a Self>;

    fn run(this: Pin<&Self>, _ctx: HrTimerCallbackContext<'_, Self>) -> HrTimerRestart {
        let st = this.state.lock();
        if let Some(engine) = st.irq.as_ref() {
            // The interrupt: the device work item runs, and hands back
            // what is due.
            Engine::kick_gpu(engine.as_arc_borrow());
        }
        HrTimerRestart::NoRestart
    }
}

#[pinned_drop]
impl PinnedDrop for MockExecutor {
    fn drop(self: Pin<&mut Self>) {
        self.cancel_timer();
    }
}

/// The mock's side of the command interface ([`Backend`]): the same
/// callers and contexts as the virtual GPU's, and the same events.
impl Backend for MockExecutor {
    fn submit(&self, mut lease: Lease) -> Result<u64, Lease> {
        let now = monotonic_ns();
        let mut st = self.state.lock();
        let id = st.next_id;
        let Some(slot) = st.running.iter_mut().find(|r| r.is_none()) else {
            return Err(lease);
        };
        lease.id = id;
        let running = Running {
            base: lease.cycles,
            started_ns: now,
            lease,
        };
        let due = running.due_ns(&self.topology, self.late_ns.load(ordering::Relaxed));
        *slot = Some(running);
        st.next_id = id.wrapping_add(1).max(1);
        self.arm(&mut st, due, now);
        Ok(id)
    }

    fn cut(&self, id: u64, until: u64) {
        let now = monotonic_ns();
        let mut st = self.state.lock();
        let Some(r) = st.running.iter_mut().flatten().find(|r| r.lease.id == id) else {
            return;
        };
        if r.progress(&self.topology, now) <= until && until < r.lease.until {
            r.lease.until = until;
            let due = r.due_ns(&self.topology, self.late_ns.load(ordering::Relaxed));
            self.arm(&mut st, due, now);
        }
    }

    fn recall(&self, id: u64) -> Recall {
        let now = monotonic_ns();
        let mut st = self.state.lock();
        let taken = st
            .running
            .iter_mut()
            .find(|r| r.as_ref().is_some_and(|r| r.lease.id == id))
            .and_then(Option::take);
        if let Some(r) = taken {
            let lease = r.into_lease(&self.topology, now);
            // Room for every lease (type invariant of `MockState`).
            warn_on!(st.done.push(lease).is_err());
        }
        Recall::Back
    }

    fn take_done(&self, before: u64) -> Option<Lease> {
        self.state.lock().done.pop_done_before(before)
    }

    fn close(&self) {
        let irq = {
            let mut st = self.state.lock();
            self.closed.store(true, ordering::Release);
            st.irq.take()
        };
        // Nothing arms the timer from here on.
        self.cancel_timer();
        // Not the last reference: the engine shutting down holds one.
        drop(irq);
    }

    fn run(&self, mut handed_back: impl FnMut()) -> bool {
        let _signalling = Signalling::begin();
        if self.closed.load(ordering::Acquire) {
            return false;
        }
        let now = monotonic_ns();
        let late = self.late_ns.load(ordering::Relaxed);
        let mut back = 0;
        {
            let mut st = self.state.lock();
            let MockState { running, done, .. } = &mut *st;
            let mut next = u64::MAX;
            for slot in running.iter_mut() {
                let due = match slot.as_ref() {
                    Some(r) => r.due_ns(&self.topology, late),
                    None => continue,
                };
                if due > now {
                    next = next.min(due);
                    continue;
                }
                let Some(r) = slot.take() else {
                    continue;
                };
                let ran = now.saturating_sub(r.started_ns);
                let mut lease = r.into_lease(&self.topology, now);
                if late != 0 && lease.end.is_some() {
                    // Its end computed only now.
                    lease.done_ns = now;
                }
                // Room for every lease (type invariant).
                warn_on!(done.push(lease).is_err());
                self.leases.fetch_add(1, ordering::Relaxed);
                self.busy_ns.fetch_add(ran, ordering::Relaxed);
                // Only the work item writes it: no lost update.
                if ran > self.longest_ns.load(ordering::Relaxed) {
                    self.longest_ns.store(ran, ordering::Relaxed);
                }
                back += 1;
            }
            // The timer fired (or will, for something handed back now):
            // armed again for the next lease due.
            st.armed_ns = u64::MAX;
            if next != u64::MAX {
                self.arm(&mut st, next, now);
            }
        }
        for _ in 0..back {
            handed_back();
        }
        false
    }

    fn queue(&self) -> &Queue {
        self.wq.queue()
    }

    fn costs(&self) -> &CycleCosts {
        &self.costs
    }

    fn stats(&self) -> ExecStats {
        ExecStats {
            instructions: 0,
            pieces: self.leases.load(ordering::Relaxed),
            yields: 0,
            busy_ns: self.busy_ns.load(ordering::Relaxed),
            piece_max_ns: self.longest_ns.load(ordering::Relaxed),
            // A cut or a recall acts at once here.
            stops: 0,
            stop_wait_max_ns: 0,
        }
    }

    fn reset_maxima(&self) {
        self.longest_ns.store(0, ordering::Relaxed);
    }

    fn drain(&self) {
        loop {
            let lease = {
                let mut st = self.state.lock();
                let running = st.running.iter_mut().find_map(Option::take);
                running.map(|r| r.lease).or_else(|| st.done.pop())
            };
            match lease {
                Some(lease) => drop(lease),
                None => break,
            }
        }
    }
}
