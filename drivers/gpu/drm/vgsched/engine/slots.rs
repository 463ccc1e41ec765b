// SPDX-License-Identifier: GPL-2.0

//! Slot selection on the engine: who holds the hardware slots.
//!
//! The decision is the core crate's ([`crate::vgsched_core::slots`]),
//! taken on events over the few contexts it depends on
//! ([`crate::vgsched_core::ordered_slots`]); this file feeds it the
//! contexts and carries it out. A context that loses its slot with work
//! left is preempted: its waves stop at once or at their next preemption
//! point and are saved (the wave runner, [`super::waves`]); when it holds
//! a slot again, its saved groups are its first dispatch heads
//! ([`super::dispatch`]) and a restored wave starts executing once its
//! state is copied back in.

use kernel::{
    alloc::kvec::PushError,
    prelude::*,
    sync::{
        atomic::ordering,
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
    ContextQueue,
    Engine,
    EngineState, //
};
use crate::vgsched_core::{
    context_switch::transfer_cycles,
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
        SlotCounters,
        SlotMode,
        SlotPolicy, //
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
    /// Numbers loads into slots and counts each level's passes.
    counters: SlotCounters,
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
            served_pass: 0,
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
            counters: SlotCounters::new(),
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
    fn reset(&mut self, queues: &mut [KBox<ContextQueue>]) {
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
            working,
            slots,
            log,
            failed_at_once,
            collecting,
            groups,
            ..
        } = st;
        let SlotSelection {
            counters,
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
        // every working context when positions moved, a fence signalled,
        // or every `REFRESH_WALK_EVERY` refreshes (a bound, should an
        // event ever go unlisted). A context outside the working set is
        // settled: it has no job, and slot selection saw it so
        // ([`SlotEntry::settled`](crate::vgsched_core::slots::SlotEntry::settled)),
        // so looking at it would change nothing.
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
            // A failed in-fence finishes its job at once (collected in the
            // next pass): the job behind it is then the active one, and is
            // looked at too.
            let failed_before = *failed_at_once;
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
            if *failed_at_once != failed_before {
                super::list_collected(collecting, i);
            }
            ordered.check(queues, i, &mut store);
        };
        if walk {
            *refreshes_since_walk = 0;
            for i in working.iter() {
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
        let n = ordered.decide(queues, now, &policy, counters, &mut store, scratch);
        let side_by_side = policy.mode == SlotMode::SideBySide;
        // Every context holding a slot is a working one.
        let mut used = working
            .iter()
            .filter_map(|i| queues.get(i)?.slot)
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
}
