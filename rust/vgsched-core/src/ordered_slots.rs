// SPDX-License-Identifier: GPL-2.0

//! Slot selection decided on events, at a cost that does not grow with the
//! number of contexts.
//!
//! [`super::slots::reschedule`] looks at every context at every decision,
//! but its outcome depends on few of them:
//!
//! - the residents (at most `L`, the number of hardware slots);
//! - the contexts whose runnable state changed since the last decision
//!   (the history rule adjusts their weight basis when they enter);
//! - the best `L` waiting contexts of the highest level that has any: no
//!   other waiting context can win a slot, and the highest runnable level
//!   is the higher of theirs and the residents'.
//!
//! [`OrderedSlots`] keeps the waiting contexts (runnable, not resident)
//! ranked in a kinetic tournament ([`super::kinetic`]), the residents in a
//! short list and the changed contexts in a pending list, and runs the
//! very same decision over just those contexts, in index order (so every
//! tie breaks as it would over all of them). The choices are identical to
//! [`reschedule`]'s; a host test replays random event traces through both.
//!
//! One decision costs `O((L + p) log n)` for `p` pending contexts and `n`
//! contexts, plus the tournament's certificate replays (see
//! [`super::kinetic`]); nothing in it visits every context.
//!
//! How a caller drives it, over the same entries it would give
//! [`reschedule`]:
//!
//! - [`OrderedSlots::touch`] when a context's `cand.runnable` may have
//!   changed, or when a waiting context's priority or weight basis changed
//!   (a resident's runtime is charged freely: residents are not ranked);
//! - [`OrderedSlots::due`]: whether a decision can change anything now (a
//!   context is pending, or a running resident's slice or turn is over);
//!   decisions are taken on these events only;
//! - [`OrderedSlots::decide`] takes the decision;
//! - [`OrderedSlots::reset`] after entries were removed or reordered, or
//!   the storage was replaced: the ranking is rebuilt from the entries as
//!   they are, in `O(n)`, and a decision is due. Entries appended at the
//!   end need nothing until they are touched.

use super::kinetic::{
    Kinetic,
    Node,
    MAX_K, //
};
use super::pool::Candidate;
use super::slots::{
    apply_history,
    reschedule,
    Scratch,
    SlotChange,
    SlotCounters,
    SlotEntry,
    SlotMode,
    SlotPolicy, //
};

/// One context taken into a decision: its index among the caller's entries
/// and a copy of its entry.
#[derive(Clone, Copy, Debug)]
pub struct Picked {
    index: usize,
    entry: SlotEntry,
}

impl Picked {
    /// An unused element of the caller's scratch.
    pub fn blank() -> Self {
        Self {
            index: 0,
            entry: SlotEntry::new(Candidate {
                id: 0,
                priority: 0,
                created_ns: 0,
                runtime_ns: 0,
                runnable: false,
                served_pass: 0,
            }),
        }
    }
}

impl AsRef<SlotEntry> for Picked {
    fn as_ref(&self) -> &SlotEntry {
        &self.entry
    }
}

impl AsMut<SlotEntry> for Picked {
    fn as_mut(&mut self) -> &mut SlotEntry {
        &mut self.entry
    }
}

/// The caller's storage, sized for `capacity` contexts.
pub struct Store<'a> {
    /// The tournament's leaves: a power of two, at least `capacity`.
    pub leaves: &'a mut [Option<Candidate>],
    /// Its nodes: twice as many as leaves.
    pub nodes: &'a mut [Node],
    /// The pending list: `capacity` long.
    pub pending: &'a mut [u32],
    /// The contexts of one decision: `capacity` long.
    pub work: &'a mut [Picked],
}

/// What the ordered decision keeps between decisions.
///
/// # Invariants
///
/// Between calls, for the entries it was last given: the leaves of the
/// tournament hold exactly the waiting contexts (runnable and not resident)
/// that are not pending, with their current candidates; `residents` lists
/// exactly the resident entries; the first `pending` elements of the
/// pending list are exactly the entries whose `pending` flag is set.
#[derive(Clone, Copy, Debug)]
pub struct OrderedSlots {
    /// The tournament's time: the latest decision's.
    now: u64,
    /// Indices of the residents.
    residents: [u32; MAX_K],
    /// How many there are.
    resident_count: usize,
    /// Length of the pending list.
    pending: usize,
    /// The pending list overflowed: the next decision resets first.
    lost: bool,
    /// Reset since the last decision: one is due (a removed resident's
    /// slot, for one, may be filled).
    fresh: bool,
}

impl Default for OrderedSlots {
    fn default() -> Self {
        Self::new()
    }
}

impl OrderedSlots {
    /// State for no entries yet; [`Self::reset`] before the first decision
    /// if there are some.
    pub const fn new() -> Self {
        Self {
            now: 0,
            residents: [0; MAX_K],
            resident_count: 0,
            pending: 0,
            lost: false,
            fresh: false,
        }
    }

    /// Forgets what it kept and takes the entries as they are now: for a
    /// removal, a reordering or new storage, where positions moved. The
    /// residents are listed again, the entries the last decision has not
    /// seen yet (listed, or whose runnable state changed since) are
    /// pending, and the other waiting entries are ranked as they are, the
    /// tournament rebuilt in one bottom-up pass: `O(n)`, and the next
    /// decision looks only at what is new (the history rule changes
    /// nothing of an entry whose runnable state did not change).
    pub fn reset<T: AsMut<SlotEntry>>(&mut self, entries: &mut [T], store: &mut Store<'_>) {
        let Store {
            leaves,
            nodes,
            pending,
            ..
        } = store;
        self.resident_count = 0;
        self.pending = 0;
        self.lost = false;
        self.fresh = true;
        let Some(mut k) = Kinetic::new(leaves, nodes, self.now) else {
            // Storage that does not fit: the next decision resets again.
            self.lost = true;
            return;
        };
        for (i, e) in entries.iter_mut().enumerate() {
            let e = e.as_mut();
            if e.resident && !self.add_resident(i) {
                self.lost = true;
            }
            let unseen = e.pending || e.cand.runnable != e.was_runnable;
            e.pending = false;
            if unseen {
                self.list(e, i, pending);
            } else if e.cand.runnable && !e.resident {
                k.place(i, e.cand);
            }
        }
        k.rebuild();
    }

    /// Adds `i` to the residents; `false` past [`MAX_K`].
    fn add_resident(&mut self, i: usize) -> bool {
        match self.residents.get_mut(self.resident_count) {
            Some(r) => {
                *r = i as u32;
                self.resident_count += 1;
                true
            }
            None => false,
        }
    }

    /// Lists entry `i` (`e`) as pending unless it is already.
    fn list(&mut self, e: &mut SlotEntry, i: usize, pending: &mut [u32]) {
        if e.pending {
            return;
        }
        match pending.get_mut(self.pending) {
            Some(p) => {
                *p = i as u32;
                self.pending += 1;
                e.pending = true;
            }
            None => self.lost = true,
        }
    }

    /// Entry `index` may have changed: its runnable state, or, while it
    /// waits, its priority or weight basis. The next decision looks at it.
    pub fn touch<T: AsMut<SlotEntry>>(
        &mut self,
        entries: &mut [T],
        index: usize,
        pending: &mut [u32],
    ) {
        if let Some(e) = entries.get_mut(index) {
            self.list(e.as_mut(), index, pending);
        }
    }

    /// Looks at entry `index` for a change the caller did not report: its
    /// runnable state differs from what the last decision saw, or it waits
    /// and its candidate (priority, weight basis) differs from the ranked
    /// one. Lists it if so. For callers that re-derive every context's
    /// state rather than report each change.
    pub fn check<T: AsMut<SlotEntry>>(
        &mut self,
        entries: &mut [T],
        index: usize,
        store: &mut Store<'_>,
    ) {
        let Some(e) = entries.get_mut(index) else {
            return;
        };
        let e = e.as_mut();
        let ranked = store.leaves.get(index).copied().flatten();
        let waiting = e.cand.runnable && !e.resident;
        if e.cand.runnable != e.was_runnable || (!e.resident && waiting.then_some(e.cand) != ranked)
        {
            self.list(e, index, store.pending);
        }
    }

    /// Whether a decision at `now_ns` can change anything: an entry is
    /// pending, it was reset since the last one, or a running resident's
    /// slice (its turn, in turn) is over.
    pub fn due<T: AsRef<SlotEntry>>(&self, entries: &[T], now_ns: u64) -> bool {
        self.pending > 0
            || self.lost
            || self.fresh
            || self
                .next_slice_end(entries)
                .is_some_and(|end| end <= now_ns)
    }

    /// The earliest end of a running resident's slice, as
    /// [`super::slots::next_slice_end`] finds it, from the residents only.
    pub fn next_slice_end<T: AsRef<SlotEntry>>(&self, entries: &[T]) -> Option<u64> {
        self.residents()
            .filter_map(|i| entries.get(i))
            .map(AsRef::as_ref)
            .filter(|e| e.resident && e.turn)
            .map(|e| e.slice_end_ns)
            .min()
    }

    /// What it keeps is incomplete (a list overflowed, or storage did not
    /// fit): the next decision resets first, and until then
    /// [`Self::residents`] may miss some.
    pub fn lost(&self) -> bool {
        self.lost
    }

    /// Indices of the residents.
    pub fn residents(&self) -> impl Iterator<Item = usize> + '_ {
        self.residents
            .iter()
            .take(self.resident_count)
            .map(|&i| i as usize)
    }

    /// Takes the decision at `now_ns` as [`reschedule`] would over all
    /// `entries`, writing the same changes to `scratch.changes` (indices
    /// into `entries`); returns how many.
    pub fn decide<T>(
        &mut self,
        entries: &mut [T],
        now_ns: u64,
        policy: &SlotPolicy,
        counters: &mut SlotCounters,
        store: &mut Store<'_>,
        scratch: Scratch<'_>,
    ) -> usize
    where
        T: AsRef<SlotEntry> + AsMut<SlotEntry>,
    {
        if self.lost {
            self.reset(entries, store);
        }
        self.fresh = false;
        let now_ns = now_ns.max(self.now);
        self.now = now_ns;
        let Some(mut k) = Kinetic::attach(store.leaves, store.nodes, now_ns) else {
            return 0;
        };
        if self.pending > 0 {
            let pending = &*store.pending;
            let work = self.take_pending(entries, pending, store.work);
            apply_history(work, now_ns, policy.history, counters);
            settle_pending(entries, &mut k, now_ns, work);
        }
        // The decision over the residents and the best waiting contexts:
        // as many as it can load.
        // Their indices, sorted (small numbers, not the entries, move):
        // residents and the best waiting ones never overlap.
        let mut order = [0usize; 2 * MAX_K];
        let need = self.can_load(entries, &mut k, now_ns, policy);
        let b = k.best_k(now_ns, need, &mut order[..MAX_K]);
        let mut m = b;
        for i in self.residents() {
            if let Some(o) = order.get_mut(m) {
                *o = i;
                m += 1;
            }
        }
        let order = &mut order[..m];
        order.sort_unstable();
        let mut m = 0;
        for &i in order.iter() {
            let (Some(e), Some(p)) = (entries.get(i), store.work.get_mut(m)) else {
                continue;
            };
            *p = Picked {
                index: i,
                entry: *e.as_ref(),
            };
            m += 1;
        }
        let work = &mut store.work[..m];
        let Scratch {
            cands,
            chosen,
            changes,
        } = scratch;
        let scratch = Scratch {
            cands,
            chosen,
            changes: &mut *changes,
        };
        let written = reschedule(work, now_ns, policy, counters, scratch);
        self.resident_count = 0;
        for p in work.iter() {
            if let Some(e) = entries.get_mut(p.index) {
                *e.as_mut() = p.entry;
            }
            let waiting = p.entry.cand.runnable && !p.entry.resident;
            set_if_changed(&mut k, p.index, waiting.then_some(p.entry.cand), now_ns);
            if p.entry.resident && !self.add_resident(p.index) {
                // At most `L` <= MAX_K residents.
                self.lost = true;
            }
        }
        for c in changes.iter_mut().take(written) {
            remap(c, work);
        }
        written
    }
}

/// Sets leaf `index` of `k` to `cand` unless it holds that already (a
/// replay of its path saved).
fn set_if_changed(k: &mut Kinetic<'_>, index: usize, cand: Option<Candidate>, now_ns: u64) {
    if k.leaf(index) != cand {
        k.set(index, cand, now_ns);
    }
}

/// Writes the pending contexts the history rule went over back to
/// `entries`, clearing their flags, and ranks the ones that wait.
fn settle_pending<T: AsMut<SlotEntry>>(
    entries: &mut [T],
    k: &mut Kinetic<'_>,
    now_ns: u64,
    work: &[Picked],
) {
    for p in work {
        let mut entry = p.entry;
        entry.pending = false;
        if let Some(e) = entries.get_mut(p.index) {
            *e.as_mut() = entry;
        }
        if !entry.resident {
            let waiting = entry.cand.runnable;
            set_if_changed(k, p.index, waiting.then_some(entry.cand), now_ns);
        }
    }
}

impl OrderedSlots {
    /// Takes the pending contexts, and the residents whose weight is their
    /// reference, into `work`, sorted by index, for the history rule's
    /// entering and leaving; returns the part of `work` they fill. A
    /// pending resident is taken once: its flag is cleared only afterwards,
    /// by [`settle_pending`].
    fn take_pending<'w, T: AsRef<SlotEntry>>(
        &mut self,
        entries: &[T],
        pending: &[u32],
        work: &'w mut [Picked],
    ) -> &'w mut [Picked] {
        let mut m = 0;
        let listed = pending
            .iter()
            .take(self.pending)
            .map(|&i| (i as usize, true));
        let resident = self.residents.iter().take(self.resident_count);
        for (i, from_list) in listed.chain(resident.map(|&i| (i as usize, false))) {
            let Some(e) = entries.get(i) else {
                continue;
            };
            let e = e.as_ref();
            let (Some(p), false) = (work.get_mut(m), !from_list && e.pending) else {
                continue;
            };
            *p = Picked {
                index: i,
                entry: *e,
            };
            m += 1;
        }
        self.pending = 0;
        let work = &mut work[..m];
        work.sort_unstable_by_key(|p| p.index);
        work
    }

    /// How many waiting contexts the decision at `now_ns` may load, at
    /// least one (the best waiting context tells the highest runnable
    /// level): side by side, the slots not kept by a resident whose slice
    /// goes on; in turn, every slot if stage 1 may run (no turn goes on,
    /// and a higher level took over or every resident had its turn),
    /// otherwise none.
    fn can_load<T: AsRef<SlotEntry>>(
        &self,
        entries: &[T],
        k: &mut Kinetic<'_>,
        now_ns: u64,
        policy: &SlotPolicy,
    ) -> usize {
        let waiting = k.best(now_ns).and_then(|i| k.leaf(i)).map(|c| c.level());
        let residents = || {
            self.residents()
                .filter_map(|i| entries.get(i))
                .map(AsRef::as_ref)
        };
        let resident_top = residents()
            .filter(|e| e.cand.runnable)
            .map(|e| e.cand.level())
            .min();
        let top = match (waiting, resident_top) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let at_top = |e: &SlotEntry| e.cand.runnable && Some(e.cand.level()) == top;
        let need = match policy.mode {
            SlotMode::SideBySide => {
                let fixed = residents()
                    .filter(|e| at_top(e) && e.slice_end_ns > now_ns)
                    .count();
                policy.slots.saturating_sub(fixed)
            }
            SlotMode::InTurn => {
                let higher = residents().any(|e| e.cand.runnable && !at_top(e));
                let running = residents().any(|e| at_top(e) && e.turn && e.slice_end_ns > now_ns);
                let next = residents().any(|e| at_top(e) && !e.turn && !e.had_turn);
                match running || (!higher && next) {
                    true => 0,
                    false => policy.slots,
                }
            }
        };
        need.max(1)
    }
}

/// Rewrites the index of change `c`, a position in `work`, as the index of
/// the entry there.
fn remap(c: &mut SlotChange, work: &[Picked]) {
    let index = match c {
        SlotChange::Load { index, .. }
        | SlotChange::Renew { index, .. }
        | SlotChange::Turn { index, .. }
        | SlotChange::Evict { index, .. } => index,
        SlotChange::Round => return,
    };
    if let Some(p) = work.get(*index) {
        *index = p.index;
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::{
        boxed::Box,
        vec::Vec, //
    };

    use super::super::rng::Rng;
    use super::super::slice::SliceFormula;
    use super::super::slots::{
        HistoryRule,
        SlotMode, //
    };
    use super::*;

    const MS: u64 = 1_000_000;

    /// Storage for up to 256 contexts.
    struct Room {
        leaves: [Option<Candidate>; 256],
        nodes: [Node; 512],
        pending: [u32; 256],
        work: [Picked; 256],
        cands: [Candidate; 256],
        chosen: [usize; 64],
        changes: [SlotChange; 520],
    }

    impl Room {
        fn new() -> Box<Self> {
            let blank = Picked::blank();
            Box::new(Self {
                leaves: [None; 256],
                nodes: [Node::EMPTY; 512],
                pending: [0; 256],
                work: [blank; 256],
                cands: [blank.entry.cand; 256],
                chosen: [0; 64],
                changes: [SlotChange::Round; 520],
            })
        }
    }

    impl Room {
        /// The ordered decision's storage for `n` contexts, and the
        /// decision's scratch.
        fn split(&mut self, n: usize) -> (Store<'_>, Scratch<'_>) {
            let cap = n.next_power_of_two();
            let store = Store {
                leaves: &mut self.leaves[..cap],
                nodes: &mut self.nodes[..2 * cap],
                pending: &mut self.pending[..n],
                work: &mut self.work[..n],
            };
            let scratch = Scratch {
                cands: &mut self.cands[..],
                chosen: &mut self.chosen[..],
                changes: &mut self.changes[..],
            };
            (store, scratch)
        }
    }

    /// Replays a random trace of events (work arriving and running out,
    /// residents running, time passing, contexts going away) through the
    /// ordered decision, taken on events only, and through `reschedule`,
    /// taken at every step over all contexts: both must make the same
    /// changes, and `reschedule` none when the ordered one is not due.
    fn replay(seed: u64, n: usize, slots: usize, mode: SlotMode, history: HistoryRule) {
        let mut rng = Rng::new(seed);
        let mut room = Room::new();
        let mut old_room = Room::new();
        let policy = SlotPolicy::new(slots, SliceFormula::Proportional, 4 * MS)
            .with_mode(mode)
            .with_history(history);
        let mut now = 1_000 * MS;
        let mut entries: Vec<SlotEntry> = (0..n)
            .map(|i| {
                SlotEntry::new(Candidate {
                    id: i as u32,
                    priority: 4 + rng.below(3) as u8,
                    created_ns: now - rng.below_u64(900 * MS),
                    runtime_ns: 0,
                    runnable: false,
                    served_pass: 0,
                })
            })
            .collect();
        let mut old = entries.clone();
        let mut ordered = OrderedSlots::new();
        let (mut seq_new, mut seq_old) = (SlotCounters::new(), SlotCounters::new());
        let mut len = n;
        let sweep = seed.is_multiple_of(2);
        {
            let (mut st, _) = room.split(n);
            ordered.reset(&mut entries[..len], &mut st);
        }
        for step in 0..3000 {
            match rng.below(10) {
                // Work arrives or runs out.
                0..=3 => {
                    let i = rng.below_u64(len as u64) as usize;
                    let r = rng.below(3) != 0;
                    entries[i].cand.runnable = r;
                    old[i].cand.runnable = r;
                    if !sweep {
                        ordered.touch(&mut entries[..len], i, &mut room.pending[..n]);
                    }
                }
                // A waiting context is charged (a wave that ran on after its
                // eviction finished its chunk).
                4 if rng.below(2) == 0 => {
                    let i = rng.below_u64(len as u64) as usize;
                    if !entries[i].resident {
                        let ns = rng.below_u64(MS);
                        entries[i].charge(ns);
                        old[i].charge(ns);
                        if !sweep {
                            ordered.touch(&mut entries[..len], i, &mut room.pending[..n]);
                        }
                    }
                }
                // A context goes away (rarely): the order is rebuilt.
                4 if len > 2 && rng.below(20) == 0 => {
                    let i = rng.below_u64(len as u64) as usize;
                    entries.remove(i);
                    old.remove(i);
                    len -= 1;
                    let (mut st, _) = room.split(n);
                    ordered.reset(&mut entries[..len], &mut st);
                }
                // Time passes; the running residents run.
                _ => {
                    let dt = 1 + rng.below_u64(3 * MS);
                    for (e, o) in entries.iter_mut().zip(old.iter_mut()).take(len) {
                        if e.resident && e.turn && e.cand.runnable {
                            e.charge(dt);
                            o.charge(dt);
                        }
                    }
                    now += dt;
                }
            }
            if sweep {
                // The caller re-derives every context's state instead.
                let (mut st, _) = room.split(n);
                for i in 0..len {
                    ordered.check(&mut entries[..len], i, &mut st);
                }
            }
            let due = ordered.due(&entries[..len], now);
            let got = if due {
                let (mut st, scratch) = room.split(n);
                ordered.decide(
                    &mut entries[..len],
                    now,
                    &policy,
                    &mut seq_new,
                    &mut st,
                    scratch,
                )
            } else {
                0
            };
            let scratch = Scratch {
                cands: &mut old_room.cands[..],
                chosen: &mut old_room.chosen[..],
                changes: &mut old_room.changes[..],
            };
            let want = reschedule(&mut old[..len], now, &policy, &mut seq_old, scratch);
            assert_eq!(
                room.changes[..got],
                old_room.changes[..want],
                "seed {seed} step {step} due {due}"
            );
            for (a, b) in entries.iter().zip(old.iter()).take(len) {
                assert_eq!((a.cand, a.resident, a.turn), (b.cand, b.resident, b.turn));
                assert_eq!(a.slice_end_ns, b.slice_end_ns, "seed {seed} step {step}");
            }
            assert_eq!(
                ordered.next_slice_end(&entries[..len]),
                super::super::slots::next_slice_end(&old[..len])
            );
        }
    }

    #[test]
    fn identical_changes_to_the_full_decision_on_random_traces() {
        for seed in 1..=24u64 {
            let n = [2, 5, 17, 64, 200, 256][seed as usize % 6];
            let slots = [1, 2, 3, 8][(seed / 6) as usize % 4];
            for mode in [SlotMode::SideBySide, SlotMode::InTurn] {
                for history in [HistoryRule::Bounded, HistoryRule::Unbounded] {
                    replay(seed, n, slots, mode, history);
                }
            }
        }
    }
}
