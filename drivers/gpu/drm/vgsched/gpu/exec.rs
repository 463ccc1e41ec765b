// SPDX-License-Identifier: GPL-2.0

//! The wave executor: the modeled device's execution units interpreting
//! waves, on a work queue of their own and under a lock of their own.
//!
//! The engine hands the executor one chunk of a wave at a time, from a
//! preemption point to the next, as a [`Lease`]: the wave's threads, what
//! taking the chunk back needs ([`Rewind`]), the job's program and device
//! memory, and the horizon in cycles. The executor's work item interprets
//! the leases round robin, a piece of at most [`PIECE`] instructions each,
//! so that a long chunk does not hold up a short one; a lease whose chunk
//! is complete (the wave reached its horizon, or ended) goes to the done
//! list, and the engine is kicked, as an interrupt would be raised. The
//! executor's lock is held only to move a lease between its lists, never
//! while interpreting; the engine's lock is never taken here.
//!
//! Two commands act on a lease that is out: a cut (the wave's context lost
//! its slot and preemption is at once: its horizon comes down to the
//! eviction, [`Backend::cut`]) and a recall (its context is being
//! cancelled: it comes back as it is, [`Backend::recall`]). Both act at
//! once on a lease that waits its turn; the one being interpreted stops
//! its piece at the next [`STOP_CHECK`] instructions and is acted on then,
//! so what waits for a preemption waits for an eighth of a piece, not a
//! whole one.
//!
//! The executor is the virtual GPU's implementation of the command
//! interface the scheduler is written against ([`Backend`]); the mock
//! ([`super::mock`]) is the other.

use kernel::{
    new_spinlock,
    prelude::*,
    sync::{
        atomic::{
            ordering,
            Atomic, //
        },
        SpinLock, //
    },
    warn_on, //
};

use super::Backend;
use crate::{
    context::monotonic_ns,
    engine::sync::{
        yield_if_wanted,
        OwnedQueue,
        Signalling, //
    },
    gem::Program,
    job::BoMemory,
    vgsched_core::{
        exec::{
            undo_stores,
            Counters,
            CycleCosts,
            Recording,
            Undo, //
        },
        grid::{
            advance_wave_bounded,
            Grid,
            Lane,
            WaveEnd,
            MAX_THREADS_PER_WAVE, //
        },
        ring::Ring as CoreRing,
    },
    vram::Pinned,
};

/// Instructions the executor interprets of one lease before it turns to
/// the next: about 30 µs on the host (6–7 ns an instruction), tens of
/// microseconds in the emulated guest. It bounds how long a cut or a
/// recall waits for the lease in hand, and how long one wave's chunk keeps
/// the others waiting.
pub(crate) const PIECE: u64 = 4096;

/// Instructions the executor interprets of a piece between two looks at
/// whether a cut or a recall waits for the lease in hand: it bounds that
/// wait to an eighth of a [`PIECE`]'s interpretation, at the cost of one
/// relaxed load per stretch.
pub(crate) const STOP_CHECK: u64 = PIECE / 8;

/// Undo-log entries of one wave's chunk: a chunk that overwrites more words
/// cannot be taken back, and its wave stops at its next point instead.
const REWIND_LOG: usize = 512;

/// What taking a wave's current chunk back needs: its threads as the chunk
/// began and every word the chunk overwrote. A pool of these, one per wave
/// slot, is allocated with the engine; a wave holds one while it is on the
/// device, and its lease carries it while the chunk is interpreted.
///
/// # Invariants
///
/// While `armed`, `lanes[..threads]` are the wave's threads at the start of
/// its current chunk, `log[..logged]` the words it overwrote since (unless
/// `full`), and `counters` the instructions it counted since into its
/// module's counters.
pub(crate) struct Rewind {
    lanes: KVVec<Lane>,
    log: KVVec<Undo>,
    logged: usize,
    full: bool,
    armed: bool,
    threads: usize,
    /// The chunk's preemption point and modeled start.
    point_ns: u64,
    from_ns: u64,
    /// The wave's cycles when the chunk began.
    before_cycles: u64,
    counters: Counters,
}

/// What a chunk taken back had done: where it began and what it counted.
pub(crate) struct TakenBack {
    /// The chunk's preemption point and modeled start.
    pub(crate) point_ns: u64,
    pub(crate) from_ns: u64,
    /// The wave's cycles when the chunk began.
    pub(crate) before_cycles: u64,
    /// The instructions it had counted into its module's counters.
    pub(crate) counters: Counters,
}

impl Rewind {
    /// One rewind for a wave of up to [`MAX_THREADS_PER_WAVE`] threads.
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            lanes: KVVec::from_elem(Lane::default(), MAX_THREADS_PER_WAVE as usize, GFP_KERNEL)?,
            log: KVVec::from_elem(Undo::default(), REWIND_LOG, GFP_KERNEL)?,
            logged: 0,
            full: false,
            armed: false,
            threads: 0,
            point_ns: 0,
            from_ns: 0,
            before_cycles: 0,
            counters: Counters::default(),
        })
    }

    /// Records the start of a chunk from `point_ns` (the preemption point)
    /// and `from_ns` (its modeled start) of a wave whose threads are
    /// `lanes` and whose cycles are `cycles`.
    pub(crate) fn begin(&mut self, lanes: &[Lane], point_ns: u64, from_ns: u64, cycles: u64) {
        // Element by element: nothing here can panic on a length.
        let mut threads = 0;
        for (d, s) in self.lanes.iter_mut().zip(lanes) {
            *d = *s;
            threads += 1;
        }
        self.threads = threads;
        self.logged = 0;
        self.full = false;
        self.armed = true;
        self.point_ns = point_ns;
        self.from_ns = from_ns;
        self.before_cycles = cycles;
        self.counters = Counters::default();
    }

    /// Forgets the chunk: the wave left, or its chunk cannot be taken back.
    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }

    /// The current chunk, begun at or before `at_ns`, can be taken back.
    pub(crate) fn can_take_back(&self, at_ns: u64) -> bool {
        self.armed && !self.full && self.from_ns <= at_ns
    }

    /// Takes the current chunk back: undoes its stores in `mem` and puts
    /// the wave's threads (`lanes`) back as the chunk began; the rewind is
    /// disarmed. `None` (nothing changed) unless [`Rewind::can_take_back`]
    /// at `at_ns`.
    pub(crate) fn take_back(
        &mut self,
        at_ns: u64,
        lanes: &mut [Lane],
        mem: &mut BoMemory<'_>,
    ) -> Option<TakenBack> {
        if !self.can_take_back(at_ns) {
            return None;
        }
        undo_stores(mem, self.log.get(..self.logged).unwrap_or(&[]));
        for (d, s) in lanes.iter_mut().zip(self.lanes.iter().take(self.threads)) {
            *d = *s;
        }
        let taken = TakenBack {
            point_ns: self.point_ns,
            from_ns: self.from_ns,
            before_cycles: self.before_cycles,
            counters: core::mem::take(&mut self.counters),
        };
        self.logged = 0;
        self.full = false;
        self.disarm();
        Some(taken)
    }
}

/// A wave's chunk handed to the executor: everything its interpretation
/// reads and writes, and, once handed back, what it did.
///
/// # Invariants
///
/// Until the lease is handed back or the executor is drained
/// ([`Backend::drain`]), `pins` points to the bound copies of the wave's
/// job, an allocation of their own that stays alive, held and unchanged
/// but for device words (atomics): the engine takes only shared
/// references to it while a lease of the job is out, and does not finish,
/// cancel or drop a job one of whose waves has a lease out
/// ([`Backend::recall`] brings one back first).
pub(crate) struct Lease {
    /// Given by the device it was submitted to ([`Backend::submit`]).
    pub(super) id: u64,
    program: Program,
    grid: Grid,
    group: u32,
    wave: u32,
    pins: *const [Option<Pinned>],
    /// The wave's threads, stopped at an instruction boundary.
    lanes: KVVec<Lane>,
    /// What taking the chunk back needs, if the wave has one.
    rewind: Option<Rewind>,
    /// The horizon, in the wave's cycles.
    pub(super) until: u64,
    /// The cycle limit past which the wave hangs.
    pub(super) limit: u64,
    /// The wave's cycles so far.
    pub(super) cycles: u64,
    /// The wave's whole run, in cycles, for a device that does not
    /// interpret ([`super::mock`]); the virtual GPU ignores it.
    pub(super) duration: u64,
    /// The wave ended (`None`: it is still running).
    pub(super) end: Option<WaveEnd>,
    /// Nothing is left to interpret up to the horizon.
    pub(super) complete: bool,
    /// When the device handed the complete chunk back, monotonic ns: the
    /// virtual GPU stamps every complete lease, since its interpreter may
    /// run behind the modeled clock; 0 for a device whose timing is the
    /// model's own ([`super::mock`], unless made late).
    pub(super) done_ns: u64,
    /// Instructions interpreted under this lease, per class.
    counters: Counters,
}

// SAFETY: What `pins` points to outlives the lease and is only read through
// shared references, its device words being atomics (type invariant);
// `Pinned` is `Sync`. The rest is owned data.
unsafe impl Send for Lease {}

/// What a lease handed back says about its chunk.
pub(crate) struct Returned {
    /// The wave's threads, back for the wave.
    pub(crate) lanes: KVVec<Lane>,
    /// The wave's rewind, back for the wave.
    pub(crate) rewind: Option<Rewind>,
    /// The wave's cycles so far.
    pub(crate) cycles: u64,
    /// How the wave ended, if it did.
    pub(crate) end: Option<WaveEnd>,
    /// The chunk is complete; `false` only for a lease recalled first.
    pub(crate) complete: bool,
    /// When the device had computed it (0: on the model's own time).
    pub(crate) done_ns: u64,
    /// Instructions interpreted under the lease, per class.
    pub(crate) counters: Counters,
}

/// A lease's description of a chunk: which wave, and up to where.
pub(crate) struct ChunkOrder<'a> {
    /// The job's program and grid.
    pub(crate) program: &'a Program,
    pub(crate) grid: Grid,
    /// The wave's work-group (its index in the grid) and its index in it.
    pub(crate) group: u32,
    pub(crate) wave: u32,
    /// The job's bound copies, by binding slot.
    pub(crate) pins: &'a [Option<Pinned>],
    /// The wave's cycles as the chunk begins.
    pub(crate) cycles: u64,
    /// The horizon and the hang limit, in the wave's cycles.
    pub(crate) until: u64,
    pub(crate) limit: u64,
    /// The wave's whole run in cycles, for a device that does not
    /// interpret ([`crate::job::JobSpec::mock_cycles`]).
    pub(crate) duration: u64,
}

impl Lease {
    /// A lease for the chunk `order` describes, carrying the wave's
    /// threads and rewind.
    ///
    /// # Safety
    ///
    /// `order.pins` must be an allocation of its own that stays valid and
    /// held, with no mutable reference to it and no change to it but to
    /// device words, until the lease is handed back ([`Returned`]) or the
    /// executor is drained ([`Executor::drain`]).
    pub(crate) unsafe fn new(
        order: ChunkOrder<'_>,
        lanes: KVVec<Lane>,
        rewind: Option<Rewind>,
    ) -> Self {
        // INVARIANT: the caller guarantees what `pins` points to.
        Self {
            id: 0,
            program: order.program.clone(),
            grid: order.grid,
            group: order.group,
            wave: order.wave,
            pins: core::ptr::from_ref(order.pins),
            lanes,
            rewind,
            until: order.until,
            limit: order.limit,
            cycles: order.cycles,
            duration: order.duration,
            end: None,
            complete: false,
            done_ns: 0,
            counters: Counters::default(),
        }
    }

    /// Interprets the chunk on, within `budget` instructions.
    fn interpret(&mut self, costs: &CycleCosts, budget: &mut u64) {
        // SAFETY: Valid, and only shared, while the lease is out and the
        // executor not drained (type invariant): it is out while here.
        let pins = unsafe { &*self.pins };
        let mem = BoMemory(pins);
        let step = match self.rewind.as_mut().filter(|r| r.armed) {
            // The chunk's stores are recorded, so it can be taken back.
            Some(r) => {
                let Rewind {
                    log, logged, full, ..
                } = r;
                let mut rec = Recording {
                    inner: mem,
                    log,
                    len: logged,
                    full,
                };
                advance_wave_bounded(
                    &self.program,
                    &self.grid,
                    self.group,
                    self.wave,
                    &mut self.lanes,
                    &mut rec,
                    costs,
                    self.until,
                    self.limit,
                    budget,
                )
            }
            None => advance_wave_bounded(
                &self.program,
                &self.grid,
                self.group,
                self.wave,
                &mut self.lanes,
                &mut { mem },
                costs,
                self.until,
                self.limit,
                budget,
            ),
        };
        if let Some(r) = self.rewind.as_mut() {
            r.counters.add(&step.counters);
            // A failed wave stays failed.
            if matches!(step.end, Some(WaveEnd::Hung | WaveEnd::Fault { .. })) {
                r.disarm();
            }
        }
        self.counters.add(&step.counters);
        self.cycles = step.cycles;
        self.end = step.end;
        self.complete = step.end.is_some() || step.at_horizon;
    }

    /// Brings the horizon down to `until` cycles, unless the wave has been
    /// interpreted past it already (the engine then decides, when the
    /// lease is back, whether the chunk is taken back).
    fn cut(&mut self, until: u64) {
        if self.cycles <= until && until < self.until {
            self.until = until;
        }
    }

    /// What the engine takes back.
    pub(crate) fn into_returned(self) -> Returned {
        Returned {
            lanes: self.lanes,
            rewind: self.rewind,
            cycles: self.cycles,
            end: self.end,
            complete: self.complete,
            done_ns: self.done_ns,
            counters: self.counters,
        }
    }

    /// Its id ([`Backend::submit`]).
    pub(crate) fn id(&self) -> u64 {
        self.id
    }
}

/// A first-in, first-out queue of leases, of fixed capacity: the core
/// crate's [`CoreRing`] over preallocated slots.
pub(super) struct Ring {
    slots: KVec<Option<Lease>>,
    ring: CoreRing,
}

// Leases move by value between the executor's preallocated lists (nothing
// there may allocate); one that does not fit is handed back whole.
#[expect(clippy::result_large_err)]
impl Ring {
    pub(super) fn with_capacity(n: usize) -> Result<Self> {
        let mut slots = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            slots.push(None, GFP_KERNEL)?;
        }
        Ok(Self {
            slots,
            ring: CoreRing::new(),
        })
    }

    /// Leases queued.
    pub(super) fn len(&self) -> usize {
        self.ring.len()
    }

    /// Queues `lease` first; hands it back if there is no room.
    pub(super) fn push_front(&mut self, lease: Lease) -> Result<(), Lease> {
        self.ring.push_front(&mut self.slots, lease)
    }

    /// Queues `lease` last; hands it back if there is no room.
    pub(super) fn push(&mut self, lease: Lease) -> Result<(), Lease> {
        self.ring.push_back(&mut self.slots, lease)
    }

    /// Takes the first lease.
    pub(super) fn pop(&mut self) -> Option<Lease> {
        self.ring.pop_front(&mut self.slots)
    }

    /// Takes the first lease unless its device computed it after `before`
    /// ([`Backend::take_done`]); the ring is in the order of hand-back, so
    /// the ones behind it are later still.
    pub(super) fn pop_done_before(&mut self, before: u64) -> Option<Lease> {
        self.ring
            .pop_front_if(&mut self.slots, |l| l.done_ns <= before)
    }

    /// Takes the queued lease `id` out, keeping the others in order.
    fn remove(&mut self, id: u64) -> Option<Lease> {
        self.ring.remove(&mut self.slots, |l| l.id == id)
    }
}

/// The executor's lists, under its lock.
///
/// # Invariants
///
/// Every lease out is in exactly one of `pending`, `done` or the work
/// item's hands (its id then `in_hand`); the two rings have room for one
/// lease per wave slot, so a submission or a hand-back always fits.
struct ExecState {
    /// Leases waiting for (more) interpretation, in turn.
    pending: Ring,
    /// Leases handed back, for the engine to take.
    done: Ring,
    /// The lease the work item interprets (0: none).
    in_hand: u64,
    /// A cut of the lease in hand, to apply when its piece stops.
    cut: Option<u64>,
    /// A recall of the lease in hand, to apply when its piece stops.
    recall: bool,
    /// When the first cut or recall of the lease in hand was asked for
    /// (0: none): its piece stops early, and the wait is measured.
    stop_asked_ns: u64,
    /// The next lease id (never 0).
    next_id: u64,
}

impl ExecState {
    /// Takes the next pending lease into the work item's hands.
    fn start(&mut self, stop_piece: &Atomic<bool>) -> Option<Lease> {
        let lease = self.pending.pop()?;
        self.in_hand = lease.id;
        self.cut = None;
        self.recall = false;
        self.stop_asked_ns = 0;
        // A stop asked for an earlier lease does not cut this one short.
        stop_piece.store(false, ordering::Relaxed);
        Some(lease)
    }

    /// A cut or a recall of the lease in hand was asked for at `now`: its
    /// piece stops at the work item's next look ([`Executor::stop_piece`]).
    fn ask_stop(&mut self, stop_piece: &Atomic<bool>, now: u64) {
        if self.stop_asked_ns == 0 {
            self.stop_asked_ns = now.max(1);
        }
        stop_piece.store(true, ordering::Relaxed);
    }

    /// The work item puts the lease in hand back: to `done` when it is
    /// complete or recalled, else at the end of the queue, its cut
    /// applied. Returns whether it went to `done`, and how long a cut or
    /// a recall waited for it, if one did.
    fn finish(&mut self, mut lease: Lease) -> (bool, Option<u64>) {
        self.in_hand = 0;
        let now = monotonic_ns();
        let stop_wait = match core::mem::take(&mut self.stop_asked_ns) {
            0 => None,
            asked => Some(now.saturating_sub(asked)),
        };
        let cut = self.cut.take();
        if let Some(cut) = cut {
            lease.cut(cut);
        }
        let back = lease.complete || core::mem::take(&mut self.recall);
        if lease.complete {
            // Computed now: its wave cannot have ended earlier.
            lease.done_ns = now;
        }
        let pushed = match (back, cut) {
            (true, _) => self.done.push(lease),
            // Cut: it goes on first (see [`Executor::cut`]).
            (false, Some(_)) => self.pending.push_front(lease),
            (false, None) => self.pending.push(lease),
        };
        // Room for every wave slot's lease (type invariant).
        warn_on!(pushed.is_err());
        (back, stop_wait)
    }
}

/// The wave executor of one device.
#[pin_data]
pub(crate) struct Executor {
    /// Its own ordered queue: one interpreter at a time.
    wq: OwnedQueue,
    /// Cycle cost per instruction class.
    costs: CycleCosts,
    /// No more interpretation: the device is going away.
    closed: Atomic<bool>,
    /// Instructions interpreted since load.
    instructions: Atomic<u64>,
    /// Pieces interpreted since load, their time in all and the longest.
    pieces: Atomic<u64>,
    /// Times the work item gave its CPU up between two pieces.
    yields: Atomic<u64>,
    busy_ns: Atomic<u64>,
    piece_max_ns: Atomic<u64>,
    /// A cut or a recall waits for the lease in hand: the work item stops
    /// its piece at its next look. Written under `state`'s lock only (set
    /// by [`Backend::cut`] and [`Backend::recall`] for the lease in hand,
    /// cleared by the work item as it takes a lease), read by the work
    /// item without it: a set it has not seen yet costs one stretch more.
    stop_piece: Atomic<bool>,
    /// Pieces a cut or a recall waited for, and the longest such wait,
    /// from the first ask to the end of the piece.
    stops: Atomic<u64>,
    stop_wait_max_ns: Atomic<u64>,
    #[pin]
    state: SpinLock<ExecState>,
}

/// What a device has done since load ([`Backend::stats`]).
#[derive(Clone, Copy, Default)]
pub(crate) struct ExecStats {
    /// Instructions interpreted.
    pub(crate) instructions: u64,
    /// Pieces interpreted (at most [`PIECE`] instructions of one lease).
    pub(crate) pieces: u64,
    /// Times the device gave its CPU up to another task between two
    /// pieces (the virtual GPU; 0 for the mock).
    pub(crate) yields: u64,
    /// Time spent interpreting, in all.
    pub(crate) busy_ns: u64,
    /// The longest piece.
    pub(crate) piece_max_ns: u64,
    /// Pieces a cut or a recall waited for (the virtual GPU; 0 for the
    /// mock, which acts on them at once).
    pub(crate) stops: u64,
    /// The longest of those waits.
    pub(crate) stop_wait_max_ns: u64,
}

/// Where a recalled lease is.
#[derive(PartialEq, Eq)]
pub(crate) enum Recall {
    /// In the done list: the engine takes it from there.
    Back,
    /// In the work item's hands: it comes back when its piece stops; wait
    /// for the work item, then take it.
    InHand,
}

impl Executor {
    /// An idle executor for a device of `wave_slots` wave slots.
    pub(crate) fn new(wave_slots: usize, costs: CycleCosts) -> Result<impl PinInit<Self, Error>> {
        let state = ExecState {
            pending: Ring::with_capacity(wave_slots)?,
            done: Ring::with_capacity(wave_slots)?,
            in_hand: 0,
            cut: None,
            recall: false,
            stop_asked_ns: 0,
            next_id: 1,
        };
        Ok(try_pin_init!(Self {
            wq: OwnedQueue::gpu()?,
            costs,
            closed: Atomic::new(false),
            instructions: Atomic::new(0),
            pieces: Atomic::new(0),
            yields: Atomic::new(0),
            busy_ns: Atomic::new(0),
            piece_max_ns: Atomic::new(0),
            stop_piece: Atomic::new(false),
            stops: Atomic::new(0),
            stop_wait_max_ns: Atomic::new(0),
            state <- new_spinlock!(state, "vgsched::Executor::state"),
        }))
    }
}

/// The virtual GPU's side of the command interface: see [`Backend`] for
/// who gives each command, and from where.
impl Backend for Executor {
    /// The executor's work queue, where its work item runs.
    fn queue(&self) -> &kernel::workqueue::Queue {
        self.wq.queue()
    }

    /// Hands `lease` to the executor; returns its id. The caller queues
    /// the work item. Fails (handing the lease back) only if the executor
    /// has no room, which one lease per wave slot cannot make happen.
    fn submit(&self, mut lease: Lease) -> Result<u64, Lease> {
        let mut st = self.state.lock();
        lease.id = st.next_id;
        st.next_id = st.next_id.wrapping_add(1).max(1);
        let id = lease.id;
        st.pending.push(lease).map(|()| id)
    }

    /// Brings the horizon of lease `id` down to `until` cycles (a cut at
    /// once): at once if it waits its turn, when its piece stops (at the
    /// work item's next look, [`STOP_CHECK`]) if it is in hand; nothing if
    /// it is already back. A cut lease waiting its turn goes first: its
    /// wave is what the preempting context waits for.
    fn cut(&self, id: u64, until: u64) {
        let mut st = self.state.lock();
        if st.in_hand == id {
            st.cut = Some(st.cut.map_or(until, |c| c.min(until)));
            st.ask_stop(&self.stop_piece, monotonic_ns());
        } else if let Some(mut lease) = st.pending.remove(id) {
            lease.cut(until);
            // It was in the ring: there is room for it again.
            warn_on!(st.pending.push_front(lease).is_err());
        }
    }

    /// Brings lease `id` back as it is, interpreted or not.
    fn recall(&self, id: u64) -> Recall {
        let mut st = self.state.lock();
        if st.in_hand == id {
            st.recall = true;
            st.ask_stop(&self.stop_piece, monotonic_ns());
            return Recall::InHand;
        }
        if let Some(lease) = st.pending.remove(id) {
            // Room for every lease (type invariant of `ExecState`).
            warn_on!(st.done.push(lease).is_err());
        }
        Recall::Back
    }

    /// Takes the next lease handed back, if any, and not computed after
    /// `before`.
    fn take_done(&self, before: u64) -> Option<Lease> {
        self.state.lock().done.pop_done_before(before)
    }

    /// The cycle cost per instruction class.
    fn costs(&self) -> &CycleCosts {
        &self.costs
    }

    /// Forgets the longest piece and the longest stop wait: from now on
    /// [`ExecStats::piece_max_ns`] and [`ExecStats::stop_wait_max_ns`] are
    /// the longest since this call (with the engine's lock-hold
    /// measurement, a debugfs write).
    fn reset_maxima(&self) {
        self.piece_max_ns.store(0, ordering::Relaxed);
        self.stop_wait_max_ns.store(0, ordering::Relaxed);
    }

    /// What the executor has done since load.
    fn stats(&self) -> ExecStats {
        ExecStats {
            instructions: self.instructions.load(ordering::Relaxed),
            pieces: self.pieces.load(ordering::Relaxed),
            yields: self.yields.load(ordering::Relaxed),
            busy_ns: self.busy_ns.load(ordering::Relaxed),
            piece_max_ns: self.piece_max_ns.load(ordering::Relaxed),
            stops: self.stops.load(ordering::Relaxed),
            stop_wait_max_ns: self.stop_wait_max_ns.load(ordering::Relaxed),
        }
    }

    /// No more interpretation, from the next piece on: the device is going
    /// away. The caller then waits for the work item, then drains the
    /// executor ([`Backend::drain`]).
    fn close(&self) {
        self.closed.store(true, ordering::Release);
    }

    /// Drops every lease still queued or handed back, once the executor is
    /// closed and its work item has stopped: after this no lease points to
    /// a job any more, and the jobs may go. Called by the engine's
    /// shut-down without any lock held; the leases are dropped one at a
    /// time outside the executor's lock.
    fn drain(&self) {
        loop {
            let lease = {
                let mut st = self.state.lock();
                st.pending.pop().or_else(|| st.done.pop())
            };
            match lease {
                Some(lease) => drop(lease),
                None => break,
            }
        }
    }

    /// The work item: one round of the pending leases, a piece each;
    /// `handed_back` is called after each lease that goes to the done list
    /// (the engine's interrupt), with the executor's lock released.
    /// Returns whether leases are still pending (the caller queues the
    /// work item again: other work on the queue gets its turn in between).
    /// Between two pieces, holding no lock, it gives its CPU up if another
    /// task is wanted there ([`yield_if_wanted`]): a preemptible kernel
    /// with lazy preemption would let it run on to the next tick, and the
    /// engine's step, the memory work item or a submitting client would
    /// wait for the device's interpretation. The fence-signalling path: it
    /// allocates nothing, and takes no lock but the executor's and what
    /// `handed_back` takes (the engine's `stopped` spinlock, to queue the
    /// step).
    fn run(&self, mut handed_back: impl FnMut()) -> bool {
        let _signalling = Signalling::begin();
        let round = self.state.lock().pending.len();
        for _ in 0..round {
            if self.closed.load(ordering::Acquire) {
                return false;
            }
            let Some(mut lease) = self.state.lock().start(&self.stop_piece) else {
                break;
            };
            let mut budget = PIECE;
            let start = monotonic_ns();
            // In stretches, looking between them for a cut or a recall of
            // this lease, which ends the piece early.
            while budget > 0 && !lease.complete {
                let mut stretch = budget.min(STOP_CHECK);
                let before = stretch;
                lease.interpret(&self.costs, &mut stretch);
                budget -= before - stretch;
                if stretch > 0 || self.stop_piece.load(ordering::Relaxed) {
                    break;
                }
            }
            let took = monotonic_ns().saturating_sub(start);
            self.instructions
                .fetch_add(PIECE - budget, ordering::Relaxed);
            self.pieces.fetch_add(1, ordering::Relaxed);
            self.busy_ns.fetch_add(took, ordering::Relaxed);
            // Only the work item writes it: no lost update.
            if took > self.piece_max_ns.load(ordering::Relaxed) {
                self.piece_max_ns.store(took, ordering::Relaxed);
            }
            let (back, stop_wait) = self.state.lock().finish(lease);
            if let Some(waited) = stop_wait {
                self.stops.fetch_add(1, ordering::Relaxed);
                // Only the work item writes it (but for a reset to 0): no
                // lost update.
                if waited > self.stop_wait_max_ns.load(ordering::Relaxed) {
                    self.stop_wait_max_ns.store(waited, ordering::Relaxed);
                }
            }
            if back {
                handed_back();
            }
            // A closed device stops at once, without giving way first.
            if !self.closed.load(ordering::Acquire) && yield_if_wanted() {
                self.yields.fetch_add(1, ordering::Relaxed);
            }
        }
        !self.closed.load(ordering::Acquire) && self.state.lock().pending.len() > 0
    }
}
