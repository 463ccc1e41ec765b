// SPDX-License-Identifier: GPL-2.0

//! Slot selection on the engine: who holds the hardware slots, and
//! running, stopping, saving and resuming waves at preemption points.
//!
//! The decision is the core crate's ([`crate::vgsched_core::slots`]),
//! taken on events over the few contexts it depends on
//! ([`crate::vgsched_core::ordered_slots`]); this file feeds it the
//! contexts and carries it out. A running wave is interpreted one chunk at
//! a time, each ending at the next preemption point. When its context
//! loses its slot with work left, its chunk is taken back to the
//! instruction boundary where modeled time stands ([`Rewind`],
//! `preempt_at_once`) or, failing that, it stops at its point; there its
//! threads move to its job's save area, and its registers and the group's
//! shared memory are copied out at the modeled switch bandwidth (the wave
//! keeps its resources until that is done). When the context holds a slot
//! again, its saved groups are its first dispatch heads; a restored wave
//! starts executing once its state is copied back in. Runtime counts only
//! the chunks that executed.
//!
//! Interpreting a chunk may take several holds of the engine lock: each
//! hold interprets at most a fixed number of instructions over all waves,
//! and a chunk's modeled effects (runtime, recent power) are counted when
//! it is complete, so how it was cut changes nothing the model shows.

use kernel::{
    alloc::kvec::PushError,
    prelude::*,
    sync::{
        atomic::ordering,
        Arc,
        ArcBorrow, //
    },
    warn_on, //
};

use super::{
    active_in,
    dump::{
        LogRecord,
        SlotEvent, //
    },
    queue_at,
    Chunk,
    ContextQueue,
    Engine,
    EngineState,
    ModuleState,
    RunningWave,
    WavePhase, //
};
use crate::{
    job::BoMemory,
    vgsched_core::{
        context_switch::{
            shared_state_bytes,
            transfer_cycles,
            wave_state_bytes, //
        },
        exec::{
            undo_stores,
            Counters,
            Recording,
            Undo, //
        },
        grid::{
            advance_wave_bounded,
            Lane,
            WaveEnd,
            MAX_THREADS_PER_WAVE, //
        },
        kinetic::{
            Node,
            MAX_K, //
        },
        ordered_slots::{
            OrderedSlots,
            Picked,
            Store, //
        },
        pool,
        slice::SliceFormula,
        slots::{
            Scratch,
            SlotChange,
            SlotMode,
            SlotPolicy, //
        }, //
    }, //
};

/// Runnable refreshes between two that look at every context, whatever
/// happened ([`Engine::reschedule`]).
const REFRESH_WALK_EVERY: u32 = 64;

/// Slot selection's state in the engine: the ordered decision and what it
/// keeps between decisions, the runnable refresh's list of contexts to
/// look at, and the decision's scratch, sized with the context list
/// ([`SlotRoom`]). Indices are positions in the context list.
pub(super) struct SlotSelection {
    /// The slice formula in force.
    pub(super) formula: SliceFormula,
    /// Numbers loads into slots.
    next_load_seq: u64,
    /// What the ordered decision keeps between decisions: the residents
    /// and the contexts to look at.
    ordered: OrderedSlots,
    /// Its winners (one per slot).
    chosen: KVec<usize>,
    /// The rest of its scratch.
    room: SlotRoom,
    /// The runnable refresh walks every context once: positions moved,
    /// or the list overflowed.
    refresh_all: bool,
    /// [`Engine::fence_epoch`] as the last runnable refresh saw it: when
    /// it moved, an in-fence or dependency signalled, and the refresh
    /// walks every context.
    fence_epoch_seen: u64,
    /// Runnable refreshes since the last walk over every context.
    refreshes_since_walk: u32,
    /// Contexts were removed: the ordered decision must look at every
    /// context again ([`SlotSelection::reset`]) before its next use, which
    /// is in the engine's step ([`SlotSelection::reorder_if_due`]).
    reorder_due: bool,
}

/// Slot selection's scratch whose size follows the number of contexts:
/// allocated before the engine lock is taken (`Engine::register_context`)
/// and put in by [`SlotSelection::adopt`].
pub(super) struct SlotRoom {
    /// The decision's candidates.
    cands: KVVec<pool::Candidate>,
    /// Its changes (at most two per context, a round and a turn).
    changes: KVVec<SlotChange>,
    /// The ordered decision's storage.
    ordered: OrderedRoom,
    /// Contexts whose runnable state may have changed other than through
    /// the device (a job queued, collected or failed), each listed once
    /// (`ContextQueue::refresh_listed`); the runnable refresh looks at
    /// these, the residents and the contexts with work on the device.
    refresh: KVVec<usize>,
}

/// The ordered decision's storage, lent to it as a [`Store`].
struct OrderedRoom {
    /// Its tournament's leaves: the waiting contexts, ranked.
    leaves: KVVec<Option<pool::Candidate>>,
    /// Its tournament's matches.
    nodes: KVVec<Node>,
    /// Its pending list.
    pending: KVVec<u32>,
    /// The contexts of one decision.
    work: KVVec<Picked>,
}

impl OrderedRoom {
    /// The storage, as the ordered decision takes it.
    fn store(&mut self) -> Store<'_> {
        Store {
            leaves: &mut self.leaves,
            nodes: &mut self.nodes,
            pending: &mut self.pending,
            work: &mut self.work,
        }
    }
}

impl SlotRoom {
    /// Room for `contexts` contexts (engine-wide, `GFP_KERNEL`).
    pub(super) fn with_capacity(contexts: usize) -> Result<Self> {
        let blank = pool::Candidate {
            id: 0,
            priority: 0,
            created_ns: 0,
            runtime_ns: 0,
            runnable: false,
        };
        // The ordered decision's tournament: a power of two of leaves.
        let leaves = contexts.max(1).checked_next_power_of_two().ok_or(ENOMEM)?;
        Ok(Self {
            cands: KVVec::from_elem(blank, contexts, GFP_KERNEL)?,
            // Every resident leaves and every slot fills at most once, plus
            // a round and a turn.
            changes: KVVec::from_elem(
                SlotChange::Round,
                contexts.saturating_mul(2).saturating_add(2),
                GFP_KERNEL,
            )?,
            ordered: OrderedRoom {
                leaves: KVVec::from_elem(None, leaves, GFP_KERNEL)?,
                nodes: KVVec::from_elem(Node::EMPTY, leaves.saturating_mul(2), GFP_KERNEL)?,
                pending: KVVec::from_elem(0, contexts, GFP_KERNEL)?,
                work: KVVec::from_elem(Picked::blank(), contexts, GFP_KERNEL)?,
            },
            refresh: KVVec::with_capacity(contexts, GFP_KERNEL)?,
        })
    }
}

impl SlotSelection {
    /// Slot selection with `formula` for `slots` hardware slots, over no
    /// context yet, in `room`.
    pub(super) fn new(formula: SliceFormula, slots: usize, room: SlotRoom) -> Result<Self> {
        Ok(Self {
            formula,
            next_load_seq: 0,
            ordered: OrderedSlots::new(),
            chosen: KVec::from_elem(0, slots, GFP_KERNEL)?,
            room,
            refresh_all: false,
            fence_epoch_seen: 0,
            refreshes_since_walk: 0,
            reorder_due: false,
        })
    }

    /// Takes `room`, for a context list that grew, and looks at every
    /// context again.
    pub(super) fn adopt(&mut self, room: SlotRoom, queues: &mut [KBox<ContextQueue>]) {
        self.room = room;
        self.reset(queues);
    }

    /// The ordered decision's view of the contexts after they were
    /// removed, reordered or moved to new storage: every context is
    /// looked at once more.
    pub(super) fn reset(&mut self, queues: &mut [KBox<ContextQueue>]) {
        let mut store = self.room.ordered.store();
        self.ordered.reset(queues, &mut store);
        self.reorder_due = false;
        // Positions moved: the list of contexts to look at is redone by a
        // walk over all of them.
        self.room.refresh.clear();
        queues.iter_mut().for_each(|q| q.refresh_listed = false);
        self.refresh_all = true;
    }

    /// Contexts were removed from the list (positions moved): the next
    /// step looks at every context again before it decides.
    pub(super) fn contexts_removed(&mut self) {
        self.reorder_due = true;
    }

    /// At the start of an engine step: [`Self::reset`] if contexts were
    /// removed since the last.
    pub(super) fn reorder_if_due(&mut self, queues: &mut [KBox<ContextQueue>]) {
        if self.reorder_due {
            self.reset(queues);
        }
    }

    /// Lists context `i` for the next runnable refresh, once; past the
    /// list's room (never: it has room for every context), every context
    /// is looked at.
    pub(super) fn list(&mut self, queues: &mut [KBox<ContextQueue>], i: usize) {
        let Some(q) = queues.get_mut(i) else {
            return;
        };
        if q.refresh_listed {
            return;
        }
        match self.room.refresh.push_within_capacity(i) {
            Ok(()) => q.refresh_listed = true,
            Err(PushError(_)) => self.refresh_all = true,
        }
    }

    /// Positions of the residents (all of them unless [`Self::lost`]).
    pub(super) fn residents(&self) -> impl Iterator<Item = usize> + '_ {
        self.ordered.residents()
    }

    /// What the ordered decision keeps is incomplete: the next decision
    /// resets first, and until then [`Self::residents`] may miss some.
    pub(super) fn lost(&self) -> bool {
        self.ordered.lost()
    }

    /// [`Self::residents`] names exactly the contexts holding a slot, at
    /// their positions: no reordering is due and nothing was lost.
    pub(super) fn residents_exact(&self) -> bool {
        !self.reorder_due && !self.lost()
    }

    /// The earliest end of a running resident's slice.
    pub(super) fn next_slice_end(&self, queues: &[KBox<ContextQueue>]) -> Option<u64> {
        self.ordered.next_slice_end(queues)
    }

    /// Change `i` of the last decision.
    fn change(&self, i: usize) -> Option<&SlotChange> {
        self.room.changes.get(i)
    }
}

/// Undo-log entries of one wave's chunk: a chunk that overwrites more words
/// cannot be taken back, and its wave stops at its next point instead.
const REWIND_LOG: usize = 512;

/// What taking a running wave's current chunk back needs: its threads as
/// the chunk began and every word the chunk overwrote. A pool of these,
/// one per wave slot, is allocated with the engine; a wave holds one while
/// it is on the device.
///
/// # Invariants
///
/// While `armed`, `lanes[..threads]` are the wave's threads at the start of
/// its current chunk, `log[..logged]` the words it overwrote since (unless
/// `full`), and `counters` the instructions it counted since into its
/// module's counters.
pub(super) struct Rewind {
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

impl Rewind {
    /// One rewind for a wave of up to [`MAX_THREADS_PER_WAVE`] threads.
    pub(super) fn new() -> Result<Self> {
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

    /// Records the start of a chunk of a wave whose threads are `lanes`.
    fn begin(&mut self, lanes: &[Lane], chunk: &Chunk) {
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
        self.point_ns = chunk.point_ns;
        self.from_ns = chunk.from_ns;
        self.before_cycles = chunk.before_cycles;
        self.counters = Counters::default();
    }

    /// Forgets the chunk: the wave left, or its chunk cannot be taken back.
    pub(super) fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Engine {
    /// Takes the slot selection decision at `now`, if an event calls for
    /// one, and carries it out; returns how many changes it made.
    ///
    /// Every context's runnable state is re-derived from its jobs (a few
    /// loads each); the contexts whose state or waiting rank changed are
    /// listed for the ordered decision, which runs only when one is listed
    /// or a running resident's slice is over, and looks at the residents,
    /// the listed contexts and the best waiting ones only.
    pub(super) fn reschedule(this: ArcBorrow<'_, Self>, st: &mut EngineState, now: u64) -> usize {
        let policy = SlotPolicy {
            formula: st.slots.formula,
            ..this.sched.policy
        };
        let EngineState {
            queues,
            slots,
            log,
            failed_at_once,
            groups,
            ..
        } = st;
        let SlotSelection {
            next_load_seq,
            ordered,
            chosen,
            room,
            refresh_all,
            fence_epoch_seen,
            refreshes_since_walk,
            ..
        } = slots;
        let SlotRoom {
            cands,
            changes,
            ordered: ordered_room,
            refresh,
        } = room;
        let mut store = ordered_room.store();
        // The runnable refresh: a context's runnable state changes with
        // its jobs' progress on the device (the residents', and those of
        // the contexts with work-groups there, evicted ones saving), with
        // its jobs queued, collected or failed elsewhere (listed in
        // `refresh`), and with its in-fence (any signal of a fence the
        // engine waits on moves `fence_epoch`). Only those are looked at;
        // every context when positions moved, a fence signalled, or every
        // `REFRESH_WALK_EVERY` refreshes (a bound, should an event ever
        // go unlisted).
        let epoch = this.fence_epoch.load(ordering::Acquire);
        *refreshes_since_walk += 1;
        let walk = core::mem::take(refresh_all)
            || core::mem::replace(fence_epoch_seen, epoch) != epoch
            || *refreshes_since_walk >= REFRESH_WALK_EVERY;
        // The residents, before the closure below borrows `ordered`.
        let mut residents = [usize::MAX; MAX_K];
        for (r, i) in residents.iter_mut().zip(ordered.residents()) {
            *r = i;
        }
        let mut refresh_one = |queues: &mut KVVec<KBox<ContextQueue>>, i: usize| {
            let Some(q) = queue_at(queues, i) else {
                return;
            };
            // A failed in-fence finishes its job at once: the job behind it
            // is then the active one, and is looked at too.
            loop {
                let failed = *failed_at_once;
                q.entry.cand.runnable = match active_in(&mut q.jobs) {
                    None => false,
                    Some(job) => {
                        job.progress.error() == 0
                            && (job.progress.running() > 0
                                || job.progress.saved() > 0
                                || (job.has_groups_to_place()
                                    && Self::in_fence_ready(job, failed_at_once)))
                    }
                };
                if *failed_at_once == failed {
                    break;
                }
            }
            ordered.check(queues, i, &mut store);
        };
        if walk {
            *refreshes_since_walk = 0;
            for i in 0..queues.len() {
                refresh_one(queues, i);
            }
        } else {
            for &i in residents.iter().take_while(|&&i| i != usize::MAX) {
                refresh_one(queues, i);
            }
            for g in groups.iter().flatten() {
                refresh_one(queues, g.queue);
            }
            for &i in refresh.iter() {
                refresh_one(queues, i);
            }
        }
        for &i in refresh.iter() {
            if let Some(q) = queues.get_mut(i) {
                q.refresh_listed = false;
            }
        }
        refresh.clear();
        if !ordered.due(queues, now) {
            return 0;
        }
        let self_topology = &this.topology;
        let scratch = Scratch {
            cands,
            chosen,
            changes: &mut *changes,
        };
        let n = ordered.decide(queues, now, &policy, next_load_seq, &mut store, scratch);
        let side_by_side = policy.mode == SlotMode::SideBySide;
        let mut used = queues
            .iter()
            .filter_map(|q| q.slot)
            .fold(0u64, |m, s| m | 1u64.checked_shl(s).unwrap_or(0));
        for change in changes.iter().take(n) {
            match *change {
                SlotChange::Evict { index, preempted } => {
                    let Some(q) = queue_at(queues, index) else {
                        continue;
                    };
                    if let Some(slot) = q.slot {
                        used &= !1u64.checked_shl(slot).unwrap_or(0);
                    }
                    log.record(LogRecord::slot(now, q, SlotEvent::Evict { preempted }));
                    q.leave_slot();
                    q.preemptions += u64::from(preempted);
                    // State kept in the slot goes to memory now.
                    let (job, threads) = q
                        .active()
                        .map_or((0, 0), |j| (j.id, j.spec.grid.threads_per_wave));
                    let mut bytes = 0u64;
                    for sg in q.store.saved_of_mut(job) {
                        if sg.in_slot {
                            sg.in_slot = false;
                            bytes = bytes.saturating_add(sg.state_bytes(threads));
                        }
                    }
                    let out_ns = self_topology.cycles_to_ns(transfer_cycles(bytes));
                    q.switch_ns = q.switch_ns.saturating_add(out_ns);
                }
                SlotChange::Load { index, slice_ns } => {
                    let Some(q) = queue_at(queues, index) else {
                        continue;
                    };
                    // At most `hw_slots` <= 64 contexts are resident.
                    let slot = (!used).trailing_zeros();
                    if slot < 64 {
                        used |= 1u64 << slot;
                        q.slot = Some(slot);
                    } else {
                        warn_on!(true);
                    }
                    // Side by side a load starts a slice; in turn a turn does.
                    q.slices += u64::from(side_by_side);
                    log.record(LogRecord::slot(now, q, SlotEvent::Load { slice_ns }));
                }
                SlotChange::Renew { index, .. } => {
                    if let Some(q) = queues.get_mut(index) {
                        q.slices += 1;
                    }
                }
                SlotChange::Turn { index, slice_ns } => {
                    if let Some(q) = queues.get_mut(index) {
                        q.slices += 1;
                        log.record(LogRecord::slot(now, q, SlotEvent::Turn { slice_ns }));
                    }
                }
                SlotChange::Round => log.record(LogRecord::round(now)),
            }
        }
        // Contexts that lost their slot with work left stop at once.
        for i in (0..n).filter(|_| this.sched.preempt_at_once) {
            if let Some(&SlotChange::Evict {
                index,
                preempted: true,
            }) = st.slots.change(i)
            {
                this.stop_at_once(st, index, now);
            }
        }
        n
    }

    /// Stops the running waves of the context at `index` (which just lost
    /// its slot) at the instruction boundary where they are at `now`,
    /// instead of at their next preemption point: each chunk interpreted
    /// ahead is taken back (its stores undone, its threads, cycles and
    /// counts restored, its share of recent power withdrawn) and set to be
    /// interpreted again only up to `now`, where the wave is then saved.
    /// The context's runtime counted past `now` for them is taken back. A
    /// wave whose chunk cannot be taken back (its undo log overflowed, or no
    /// rewind was free when it was placed) stops at its point as before.
    fn stop_at_once(&self, st: &mut EngineState, index: usize, now: u64) {
        let EngineState {
            waves,
            groups,
            queues,
            modules,
            totals,
            ..
        } = st;
        let Some(q) = queue_at(queues, index) else {
            return;
        };
        let Some(job) = active_in(&mut q.jobs) else {
            return;
        };
        if job.progress.error() != 0 {
            // Its waves are being dropped anyway.
            return;
        }
        let mut mem = BoMemory(job.device.as_ref().map_or(&[], |d| &d.pins[..]));
        let now_cycle = self.topology.ns_to_cycles(now);
        // The latest end of a wave of it that runs on past `now`.
        let mut runs_until = now;
        for w in waves.iter_mut() {
            let Some(g) = groups.get(w.slot).and_then(Option::as_ref) else {
                continue;
            };
            if !Arc::ptr_eq(&g.ctx, &q.ctx) || g.job_id != job.id || w.end_ns <= now {
                continue;
            }
            let ahead = match w.phase {
                WavePhase::Running => w.exec_from_ns <= now,
                // Finished, but only later in modeled time.
                WavePhase::Ended => true,
                WavePhase::Saving => false,
            };
            if !ahead {
                continue;
            }
            let Some(r) = w
                .rewind
                .as_mut()
                .filter(|r| r.armed && !r.full && r.from_ns <= now)
            else {
                runs_until = runs_until.max(w.end_ns);
                continue;
            };
            let Some(ms) = modules.get_mut(g.module as usize) else {
                continue;
            };
            undo_stores(&mut mem, r.log.get(..r.logged).unwrap_or(&[]));
            for (d, s) in w.lanes.iter_mut().zip(r.lanes.iter().take(r.threads)) {
                *d = *s;
            }
            w.cycles = r.before_cycles;
            ms.counters.sub(&r.counters);
            // Its rate counted from the chunk's start is taken out again;
            // the run up to `now` counts its own.
            let from_cycle = self.topology.ns_to_cycles(r.from_ns);
            ms.power.stop(from_cycle, now_cycle, w.power_token);
            w.power_token = 0;
            w.phase = WavePhase::Running;
            w.chunk = Some(Chunk {
                point_ns: r.point_ns,
                from_ns: r.from_ns,
                to_ns: now,
                before_cycles: r.before_cycles,
                counters: Counters::default(),
            });
            w.end_ns = now;
            r.counters = Counters::default();
            r.logged = 0;
            r.full = false;
            r.disarm();
            totals.waves_stopped_at_once += 1;
        }
        // Runtime counted ahead past what still runs is taken back.
        if q.busy_until_ns > runs_until {
            let over = q.busy_until_ns - runs_until;
            q.runtime_ns = q.runtime_ns.saturating_sub(over);
            q.entry.cand.runtime_ns = q.entry.cand.runtime_ns.saturating_sub(over);
            q.busy_until_ns = runs_until;
        }
    }

    /// Handles the running waves that reached their preemption point: a
    /// wave whose job failed is dropped, a wave whose context lost its slot
    /// is saved, the others are interpreted on to the next point, within
    /// the hold's instruction budget. Returns how many waves changed.
    pub(super) fn advance_waves(&self, st: &mut EngineState, now: u64) -> usize {
        let EngineState {
            waves,
            groups,
            queues,
            modules,
            totals,
            budget,
            ..
        } = st;
        let next_point = self.sched.next_point(now);
        let now_cycle = self.topology.ns_to_cycles(now);
        let mut changed = 0;
        for w in waves
            .iter_mut()
            .filter(|w| w.phase == WavePhase::Running && w.end_ns <= now)
        {
            if *budget == 0 {
                break;
            }
            let found = groups
                .get_mut(w.slot)
                .and_then(Option::as_mut)
                .and_then(|g| {
                    let q = super::queue_of(queues, g)?;
                    q.active()
                        .is_some_and(|j| j.id == g.job_id)
                        .then_some((g, q))
                });
            let Some((g, q)) = found else {
                // Cannot happen (a wave's job is its context's active job
                // until it retires); never leave a wave due in the past.
                warn_on!(true);
                w.phase = WavePhase::Ended;
                w.end_ns = now;
                changed += 1;
                continue;
            };
            let Some(ms) = modules.get_mut(g.module as usize) else {
                continue;
            };
            if w.chunk.is_none() {
                // At a preemption point, where the last chunk stops issuing.
                let point = w.end_ns;
                let point_cycle = self.topology.ns_to_cycles(point);
                let Some(job) = active_in(&mut q.jobs) else {
                    continue;
                };
                if job.progress.error() != 0 {
                    ms.power.stop(point_cycle, now_cycle, w.power_token);
                    w.power_token = 0;
                    w.phase = WavePhase::Ended;
                    w.end_ns = now;
                    changed += 1;
                    continue;
                }
                // A wave runs on while its context held the device at the
                // point (the engine may step late: what counts is modeled
                // time); after its slice or turn ended it is saved, in the
                // slot if its context still holds one.
                let in_slot = q.entry.resident;
                if point >= q.entry.slice_end_ns
                    && q.store.save_wave(w, g, &mut job.progress, in_slot)
                {
                    ms.power.stop(point_cycle, now_cycle, w.power_token);
                    w.power_token = 0;
                    let mut bytes = wave_state_bytes(&g.needs, job.spec.grid.threads_per_wave);
                    if g.saved_waves == 0 {
                        bytes = bytes.saturating_add(shared_state_bytes(&g.needs));
                    }
                    g.saved_waves += 1;
                    let save_ns = match in_slot {
                        true => self.sched.slot_switch_ns,
                        false => self.topology.cycles_to_ns(transfer_cycles(bytes)),
                    };
                    q.switch_ns = q.switch_ns.saturating_add(save_ns);
                    w.phase = WavePhase::Saving;
                    w.end_ns = point.saturating_add(save_ns);
                    totals.waves_saved += 1;
                    changed += 1;
                    continue;
                }
                // Resident (or its save area is full): run on to the next
                // point. Until the new chunk is interpreted, the last one's
                // rate stands in for it in the module's recent power, which
                // module choice reads meanwhile; it is stopped at the point
                // when the new one's rate is known.
                // A wave whose context was evicted after this point (the
                // engine stepped late) runs on only to the eviction when
                // preempting at once, not to the next point. (One whose
                // save area was full runs on to the next point.)
                let mut to_ns = next_point.max(point);
                if self.sched.preempt_at_once && !in_slot && q.entry.slice_end_ns > point {
                    to_ns = to_ns.min(q.entry.slice_end_ns);
                }
                let chunk = Chunk {
                    point_ns: point,
                    from_ns: point.max(w.exec_from_ns),
                    to_ns,
                    before_cycles: w.cycles,
                    counters: Counters::default(),
                };
                if let Some(r) = w.rewind.as_mut() {
                    r.begin(&w.lanes, &chunk);
                }
                w.chunk = Some(chunk);
            }
            if self.run_chunk(w, g.group, q, ms, budget, now_cycle) {
                changed += 1;
            }
        }
        changed
    }

    /// Interprets wave `w` of work-group `group` (of the active job of `q`)
    /// through its chunk, within `budget` instructions. When the chunk is
    /// complete (the wave reached its next point, or ended), its time is
    /// counted to the context and `true` is returned; otherwise the wave
    /// stays due and the next hold of the lock goes on from where this one
    /// stopped.
    pub(super) fn run_chunk(
        &self,
        w: &mut RunningWave,
        group: u32,
        q: &mut ContextQueue,
        ms: &mut ModuleState,
        budget: &mut u64,
        now_cycle: u64,
    ) -> bool {
        let Some(mut chunk) = w.chunk else {
            return false;
        };
        let Some(job) = active_in(&mut q.jobs) else {
            return false;
        };
        let horizon = chunk.to_ns.saturating_sub(w.exec_from_ns);
        let until = w
            .base_cycles
            .saturating_add(self.topology.ns_to_cycles(horizon));
        let limit = self.topology.timeout_cycles();
        let spec = &job.spec;
        let mem = BoMemory(job.device.as_ref().map_or(&[], |d| &d.pins[..]));
        let step = match w.rewind.as_mut().filter(|r| r.armed) {
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
                    &spec.program,
                    &spec.grid,
                    group,
                    w.wave,
                    &mut w.lanes,
                    &mut rec,
                    &self.costs,
                    until,
                    limit,
                    budget,
                )
            }
            None => advance_wave_bounded(
                &spec.program,
                &spec.grid,
                group,
                w.wave,
                &mut w.lanes,
                &mut { mem },
                &self.costs,
                until,
                limit,
                budget,
            ),
        };
        if let Some(r) = w.rewind.as_mut() {
            r.counters.add(&step.counters);
            // A failed wave stays failed.
            if matches!(step.end, Some(WaveEnd::Hung | WaveEnd::Fault { .. })) {
                r.disarm();
            }
        }
        ms.counters.add(&step.counters);
        chunk.counters.add(&step.counters);
        w.cycles = step.cycles;
        if step.end.is_none() && !step.at_horizon {
            w.chunk = Some(chunk);
            return false;
        }
        w.chunk = None;
        let end = match step.end {
            None => chunk.to_ns,
            Some(_) => w.exec_from_ns.saturating_add(
                self.topology
                    .cycles_to_ns(step.cycles.saturating_sub(w.base_cycles)),
            ),
        };
        // The last chunk stopped issuing at the point; this one's rate
        // replaces its stand-in from its start on.
        ms.power.stop(
            self.topology.ns_to_cycles(chunk.point_ns),
            now_cycle,
            w.power_token,
        );
        let weighted = self.power_weights.weigh(&chunk.counters);
        let spent = step.cycles.saturating_sub(chunk.before_cycles);
        w.power_token = ms
            .power
            .start(self.topology.ns_to_cycles(chunk.from_ns), weighted, spent);
        // Waves after a failed one are dropped, so the first failure is the
        // only one.
        let error = match step.end {
            Some(WaveEnd::Hung) => ETIME.to_errno(),
            Some(WaveEnd::Fault { .. }) => EFAULT.to_errno(),
            Some(WaveEnd::Done) | None => 0,
        };
        if error != 0 {
            job.progress.fail(error);
        }
        if step.end.is_some() {
            w.phase = WavePhase::Ended;
        }
        q.account(chunk.from_ns, end);
        w.end_ns = end;
        true
    }
}
