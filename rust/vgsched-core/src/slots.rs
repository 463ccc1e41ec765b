// SPDX-License-Identifier: GPL-2.0

//! Slot selection as one decision: which contexts hold the `L` hardware slots, and
//! which of them run, for how long.
//!
//! Contexts outside the slots wait with their state saved to memory. Two
//! modes decide how the residents (the contexts in the slots) share the
//! device ([`SlotMode`]):
//!
//! - **in turn**, slot selection then time slices in load order: stage 1
//!   ([`super::pool::select`]) loads up to `L` contexts of the highest runnable
//!   level, best weight first; the loaded contexts then get the device one
//!   after another, in the order they were loaded, each for its time slice;
//!   their state stays in the slots between turns, so a switch between them is
//!   cheap. Once every loaded context has had its turn (a round), stage 1
//!   selects again among the contexts of the level that have not had their
//!   turn in this *pass* (the remaining `a − L`, residents that had theirs
//!   left out even if slots stay free); once every one has, a new pass
//!   begins and all are candidates again ([`SlotCounters`]). A context that
//!   runs out of work in its turn has had it. A context of a higher level
//!   becoming runnable ends the round at once.
//! - **side by side**: every resident is a dispatch channel at the same
//!   time, and each slot is re-decided when its own slice ends (slices of
//!   different lengths would otherwise leave slots idle until the longest
//!   ends): a resident whose slice ended competes for its slot again with
//!   every waiting context of its level, and keeps it for a fresh slice
//!   when nobody waits.
//!
//! In both modes a resident with no more work leaves at once, and a context
//! of a higher level becoming runnable preempts every resident of a lower
//! level (strict priority).
//!
//! What a context's weight (lifetime ÷ runtime) may count is the
//! [`HistoryRule`]: the unbounded rule counts all time since creation and
//! gives a context that never ran an infinite weight; the bounded rule
//! counts lifetime only while the context is runnable and lets a new or
//! woken context enter no higher than the residents of its level, so
//! neither idle time nor a fresh start buys the device.

use super::pool::{
    div_sat,
    highest_runnable_level,
    select,
    Candidate,
    Weight,
    LOWEST_PRIORITY, //
};
use super::slice::{
    SliceFormula,
    SliceParams,
    SliceSet, //
};

/// How the residents share the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SlotMode {
    /// All residents run at once, each slot re-decided at its slice's end.
    #[default]
    SideBySide,
    /// Residents run one after another in load order; stage 1 selects
    /// again when the round is over.
    InTurn,
}

impl SlotMode {
    /// The mode of module parameter value `v` (0 side by side, 1 in turn).
    pub fn from_param(v: u32) -> Option<Self> {
        match v {
            0 => Some(Self::SideBySide),
            1 => Some(Self::InTurn),
            _ => None,
        }
    }

    /// The user-visible name.
    pub fn name(self) -> &'static str {
        match self {
            Self::SideBySide => "side_by_side",
            Self::InTurn => "in_turn",
        }
    }
}

/// What a context's weight counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum HistoryRule {
    /// The unbounded rule: lifetime is all time since creation, and a context
    /// that never ran has an infinite weight.
    #[default]
    Unbounded,
    /// Lifetime counts only while the context is runnable, and a context
    /// that becomes runnable (new or woken) enters with at most the weight
    /// of the weakest resident of its level, the way a fair CPU scheduler
    /// places a waking task near the least-run one.
    Bounded,
}

impl HistoryRule {
    /// The rule of module parameter value `v` (0 bounded, 1 unbounded).
    pub fn from_param(v: u32) -> Option<Self> {
        match v {
            0 => Some(Self::Bounded),
            1 => Some(Self::Unbounded),
            _ => None,
        }
    }

    /// The user-visible name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Bounded => "bounded",
            Self::Unbounded => "unbounded",
        }
    }
}

/// The settings of the decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotPolicy {
    /// Hardware slots `L`.
    pub slots: usize,
    /// Stage 2's slice formula.
    pub formula: SliceFormula,
    /// Stage 2's base slice and clamps.
    pub slice: SliceParams,
    /// How residents share the device.
    pub mode: SlotMode,
    /// What weights count.
    pub history: HistoryRule,
}

impl SlotPolicy {
    /// The policy for `slots` slots and base slice `t0_ns` with the
    /// project's clamps: no slice below `t0 / 4` (switching overhead) nor
    /// above `8 × t0` (how long the other contexts can be kept waiting).
    /// Side by side, with the unbounded history; see [`SlotPolicy::with_mode`]
    /// and [`SlotPolicy::with_history`].
    pub fn new(slots: usize, formula: SliceFormula, t0_ns: u64) -> Self {
        let slice = SliceParams {
            t0_ns,
            min_ns: t0_ns / 4,
            max_ns: t0_ns.saturating_mul(8),
        };
        Self {
            slots,
            formula,
            slice,
            mode: SlotMode::SideBySide,
            history: HistoryRule::Unbounded,
        }
    }

    /// The same policy in mode `mode`.
    pub fn with_mode(self, mode: SlotMode) -> Self {
        Self { mode, ..self }
    }

    /// The same policy with history rule `history`.
    pub fn with_history(self, history: HistoryRule) -> Self {
        Self { history, ..self }
    }
}

/// Priority levels.
const LEVELS: usize = LOWEST_PRIORITY as usize + 1;

/// What the decision keeps between calls besides the entries: the load
/// numbers and, in turn, each level's pass.
///
/// A *pass* of a level is the document's sequence of selections that lets
/// every runnable context of the level have its turn once: a context that
/// had its turn in the current pass (its [`Candidate::served_pass`] equals
/// the level's pass) is no candidate while another context of its level
/// has not had its turn; once every runnable one has, the next selection
/// begins a new pass and all of them are candidates again.
///
/// # Invariants
///
/// A runnable context's `served_pass` is its level's pass (it had its turn
/// in this pass) or one less (it did not): entering contexts are brought
/// within those two, and a level's pass grows only when every runnable
/// context of the level had its turn. Before a level's first round every
/// context stands at pass 0 as if served: that round begins pass 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlotCounters {
    /// The number the next load gets ([`SlotEntry::loaded_seq`]).
    pub next_seq: u64,
    /// Per level, the current pass (in turn only; 0 side by side): one a
    /// nanosecond would last 584 years.
    passes: [u64; LEVELS],
}

impl SlotCounters {
    /// Counters before any decision.
    pub const fn new() -> Self {
        Self {
            next_seq: 0,
            passes: [0; LEVELS],
        }
    }

    /// The current pass of `level`.
    pub fn pass(&self, level: u8) -> u64 {
        self.passes.get(usize::from(level)).copied().unwrap_or(0)
    }
}

/// One context as the decision sees it; the caller keeps one per context
/// that has work or a slot, in any order.
///
/// `cand.created_ns` and `cand.runtime_ns` are the basis of the weight: the
/// creation time and the runtime under [`HistoryRule::Unbounded`]; under
/// [`HistoryRule::Bounded`] the decision moves them (idle time is taken out
/// of the lifetime, an entering context takes over a resident's basis), so
/// a caller that reports the context's real runtime keeps it elsewhere and
/// adds run time to both ([`SlotEntry::charge`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotEntry {
    /// Priority, weight basis and whether it has work to run.
    pub cand: Candidate,
    /// It holds a slot.
    pub resident: bool,
    /// It may run now: every resident side by side; in turn, the resident
    /// whose turn it is.
    pub turn: bool,
    /// Order in which residents were loaded (stage 2's FIFO order).
    pub loaded_seq: u64,
    /// When its slice (its turn, in turn) ends while it runs; afterwards,
    /// when it last stopped running (an eviction cuts the slice short).
    pub slice_end_ns: u64,
    /// In turn: the length of its turn in the current round.
    pub turn_ns: u64,
    /// In turn: it had its turn in the current round.
    pub had_turn: bool,
    /// `cand.runnable` as the last decision saw it.
    pub(super) was_runnable: bool,
    /// When it last stopped being runnable (its creation at first).
    idle_since_ns: u64,
    /// Scratch of [`reschedule`]: given a new slice in this decision.
    fresh: bool,
    /// [`super::ordered_slots`]: listed for the next decision to look at.
    pub(super) pending: bool,
}

/// Lets a plain array of entries be decided over, as well as the caller's
/// own structures that hold one.
impl AsRef<SlotEntry> for SlotEntry {
    fn as_ref(&self) -> &SlotEntry {
        self
    }
}

impl AsMut<SlotEntry> for SlotEntry {
    fn as_mut(&mut self) -> &mut SlotEntry {
        self
    }
}

impl SlotEntry {
    /// A context that does not hold a slot, idle since its creation.
    pub fn new(cand: Candidate) -> Self {
        Self {
            cand,
            resident: false,
            turn: false,
            loaded_seq: 0,
            slice_end_ns: 0,
            turn_ns: 0,
            had_turn: false,
            was_runnable: false,
            idle_since_ns: cand.created_ns,
            fresh: false,
            pending: false,
        }
    }

    /// Nothing of it is left for slot selection to see: it holds no
    /// slot, has no work, had none at the last decision and is not listed
    /// for the next ([`super::ordered_slots`]; so it is not ranked among
    /// the waiting either). Re-deriving its state from no work, or
    /// looking at it in a decision, changes nothing.
    pub fn settled(&self) -> bool {
        !self.resident && !self.cand.runnable && !self.was_runnable && !self.pending
    }

    /// Counts `ns` of run time into the weight basis.
    pub fn charge(&mut self, ns: u64) {
        self.cand.runtime_ns = self.cand.runtime_ns.saturating_add(ns);
    }

    /// Its weight at `now_ns`, as the decision ranks it.
    pub fn weight(&self, now_ns: u64) -> Weight {
        self.cand.weight(now_ns)
    }
}

/// What the caller must carry out after [`reschedule`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotChange {
    /// `index` was loaded into a slot. Side by side it runs at once for
    /// `slice_ns`; in turn `slice_ns` is the length of its turn, which
    /// begins with a [`SlotChange::Turn`].
    Load {
        /// Index of the entry.
        index: usize,
        /// Its slice.
        slice_ns: u64,
    },
    /// `index` keeps its slot for another slice of `slice_ns` (side by
    /// side only).
    Renew {
        /// Index of the entry.
        index: usize,
        /// Its slice.
        slice_ns: u64,
    },
    /// In turn: `index`, a resident, gets the device for `slice_ns`; the
    /// resident whose turn ended stops, its state staying in its slot.
    Turn {
        /// Index of the entry.
        index: usize,
        /// Its turn.
        slice_ns: u64,
    },
    /// In turn: stage 1 selects again (a new round begins); the changes
    /// after this one are its outcome.
    Round,
    /// `index` lost its slot. `preempted`: it still has work, which must
    /// stop and be saved; otherwise it simply had nothing left to run.
    Evict {
        /// Index of the entry.
        index: usize,
        /// It was stopped with work left.
        preempted: bool,
    },
}

/// Scratch room for [`reschedule`], each slice at least as long as the
/// entries (`chosen` at least [`SlotPolicy::slots`] long is enough).
pub struct Scratch<'a> {
    /// One candidate per entry.
    pub cands: &'a mut [Candidate],
    /// The winners of a selection.
    pub chosen: &'a mut [usize],
    /// The changes, written in order.
    pub changes: &'a mut [SlotChange],
}

/// Writes changes into the caller's room, counting them.
struct Changes<'a> {
    out: &'a mut [SlotChange],
    written: usize,
}

impl Changes<'_> {
    fn push(&mut self, c: SlotChange) {
        if let Some(slot) = self.out.get_mut(self.written) {
            *slot = c;
            self.written += 1;
        }
    }
}

/// Takes the decision at `now_ns` over `entries`, updating their residency,
/// turns, load order and slices, and writes what changed to
/// `scratch.changes`; returns how many. Evictions come first, so a caller
/// applying them in order frees slots before filling them; loads follow in
/// the order they were chosen (best first), then, in turn, the turn that
/// begins. In turn, a [`SlotChange::Round`] separates the residents that
/// left on their own from stage 1's evictions and loads. `counters` number
/// loads and count passes. O(n log L) comparisons, no allocation.
pub fn reschedule<T>(
    entries: &mut [T],
    now_ns: u64,
    policy: &SlotPolicy,
    counters: &mut SlotCounters,
    scratch: Scratch<'_>,
) -> usize
where
    T: AsRef<SlotEntry> + AsMut<SlotEntry>,
{
    let Scratch {
        cands,
        chosen,
        changes,
    } = scratch;
    let n = entries.len().min(cands.len());
    let entries = &mut entries[..n];
    let cands = &mut cands[..n];
    apply_history(entries, now_ns, policy.history, counters);
    for (c, e) in cands.iter_mut().zip(entries.iter()) {
        *c = e.as_ref().cand;
    }
    let mut out = Changes {
        out: changes,
        written: 0,
    };
    match policy.mode {
        SlotMode::SideBySide => side_by_side(
            entries,
            now_ns,
            policy,
            &mut counters.next_seq,
            cands,
            chosen,
            &mut out,
        ),
        SlotMode::InTurn => in_turn(entries, now_ns, policy, counters, cands, chosen, &mut out),
    }
    out.written
}

/// Follows runnable transitions under `rule`: a context that stops being
/// runnable starts an idle period; one that becomes runnable (first work,
/// or woken) has, under [`HistoryRule::Bounded`], its idle time taken out
/// of its lifetime and enters with at most the weight of the weakest
/// runnable resident of its level; under either rule it enters its level's
/// pass as not served yet, unless it was served in this pass already
/// ([`SlotCounters`]).
pub(super) fn apply_history<T>(
    entries: &mut [T],
    now_ns: u64,
    rule: HistoryRule,
    counters: &SlotCounters,
) where
    T: AsRef<SlotEntry> + AsMut<SlotEntry>,
{
    let entering = entries
        .iter()
        .map(AsRef::as_ref)
        .any(|e| e.cand.runnable && !e.was_runnable);
    // Per level, the basis of the weakest runnable resident.
    let mut weakest: [Option<Candidate>; LEVELS] = [None; LEVELS];
    if entering && rule == HistoryRule::Bounded {
        for e in entries.iter().map(AsRef::as_ref) {
            if !(e.resident && e.cand.runnable) {
                continue;
            }
            let Some(w) = weakest.get_mut(usize::from(e.cand.level())) else {
                continue;
            };
            if w.is_none_or(|b| e.cand.weight(now_ns) < b.weight(now_ns)) {
                *w = Some(e.cand);
            }
        }
    }
    for e in entries.iter_mut() {
        let e = e.as_mut();
        if e.cand.runnable && !e.was_runnable {
            // Within its level's pass as it is now, whatever level it
            // was served at before.
            let pass = counters.pass(e.cand.level());
            e.cand.served_pass = e.cand.served_pass.clamp(pass.saturating_sub(1), pass);
        }
        match (e.was_runnable, e.cand.runnable) {
            (true, false) => e.idle_since_ns = now_ns,
            (false, true) if rule == HistoryRule::Bounded => {
                let idle = now_ns.saturating_sub(e.idle_since_ns);
                e.cand.created_ns = e.cand.created_ns.saturating_add(idle).min(now_ns);
                let reference = weakest.get(usize::from(e.cand.level())).copied().flatten();
                if let Some(r) = reference {
                    enter_on_scale_of(&mut e.cand, &r, now_ns);
                }
            }
            _ => {}
        }
        e.was_runnable = e.cand.runnable;
    }
}

/// Places an entering context `c` on the scale of resident `r`: its weight
/// becomes the smaller of its own and `r`'s, with `r`'s runtime as basis.
///
/// Keeping only the smaller weight is not enough: weights of contexts with
/// short and long histories move at different speeds (lifetime and runtime
/// both grow while a context runs, so a short history's ratio reacts to
/// every slice and a long one's barely moves), and a context that ran one
/// second would hold the device for seconds against one that ran an hour.
/// On a common runtime basis both move alike and take turns.
fn enter_on_scale_of(c: &mut Candidate, r: &Candidate, now_ns: u64) {
    let own = c.weight(now_ns);
    let reference = r.weight(now_ns);
    let lifetime = if own >= reference || r.runtime_ns == 0 {
        reference.lifetime_ns()
    } else {
        // own < reference, so own is finite: lifetime × R_r ÷ runtime,
        // below R_r × reference <= the reference's lifetime.
        div_sat(
            u128::from(own.lifetime_ns()) * u128::from(r.runtime_ns),
            u128::from(own.runtime_ns()),
        )
    };
    c.created_ns = now_ns.saturating_sub(lifetime);
    c.runtime_ns = r.runtime_ns;
}

/// Takes entry `index` (`e`) out of its slot at `now_ns`, cutting its slice
/// short, and reports it.
fn evict(e: &mut SlotEntry, index: usize, now_ns: u64, preempted: bool, out: &mut Changes<'_>) {
    e.resident = false;
    e.turn = false;
    e.slice_end_ns = e.slice_end_ns.min(now_ns);
    out.push(SlotChange::Evict { index, preempted });
}

/// Side by side: see the module documentation.
fn side_by_side<T>(
    entries: &mut [T],
    now_ns: u64,
    policy: &SlotPolicy,
    next_seq: &mut u64,
    cands: &mut [Candidate],
    chosen: &mut [usize],
    out: &mut Changes<'_>,
) where
    T: AsRef<SlotEntry> + AsMut<SlotEntry>,
{
    let top = highest_runnable_level(cands);
    // Residents off the top level leave at once; residents whose slice
    // goes on keep their slot; everyone else at the top level contends.
    let mut fixed = 0;
    for (i, (c, e)) in cands.iter_mut().zip(entries.iter_mut()).enumerate() {
        let e = e.as_mut();
        e.fresh = false;
        let at_top = e.cand.runnable && Some(e.cand.level()) == top;
        if e.resident && !at_top {
            evict(e, i, now_ns, e.cand.runnable, out);
        }
        let keeps = e.resident && e.slice_end_ns > now_ns;
        fixed += usize::from(keeps);
        c.runnable = at_top && !keeps;
    }
    let k = select(cands, now_ns, policy.slots.saturating_sub(fixed), chosen);
    let chosen = &chosen[..k];
    for &j in chosen {
        if let Some(e) = entries.get_mut(j) {
            e.as_mut().fresh = true;
        }
    }
    // Residents whose slice ended and that did not win their slot back.
    for (i, e) in entries.iter_mut().enumerate() {
        let e = e.as_mut();
        if e.resident && !e.fresh && e.slice_end_ns <= now_ns {
            evict(e, i, now_ns, true, out);
        }
    }
    let loaded = entries
        .iter()
        .map(AsRef::as_ref)
        .filter(|e| e.resident || e.fresh);
    let set = SliceSet::new(
        policy.formula,
        policy.slice,
        loaded.map(|e| e.cand.weight(now_ns)),
    );
    for &j in chosen {
        let Some(e) = entries.get_mut(j) else {
            continue;
        };
        let e = e.as_mut();
        let slice_ns = set.slice_of(&e.cand.weight(now_ns));
        e.slice_end_ns = now_ns.saturating_add(slice_ns);
        if e.resident {
            out.push(SlotChange::Renew { index: j, slice_ns });
        } else {
            e.resident = true;
            e.loaded_seq = *next_seq;
            *next_seq += 1;
            out.push(SlotChange::Load { index: j, slice_ns });
        }
    }
    for e in entries.iter_mut() {
        let e = e.as_mut();
        e.turn = e.resident;
    }
}

/// In turn: see the module documentation.
fn in_turn<T>(
    entries: &mut [T],
    now_ns: u64,
    policy: &SlotPolicy,
    counters: &mut SlotCounters,
    cands: &mut [Candidate],
    chosen: &mut [usize],
    out: &mut Changes<'_>,
) where
    T: AsRef<SlotEntry> + AsMut<SlotEntry>,
{
    let top = highest_runnable_level(cands);
    // Residents with nothing to run, or below the top level, leave at once;
    // the latter end the round (a higher level took over). One that ran
    // out of work in its turn finished running: it was served. One whose
    // turn a higher level cut short was not: it is still to be served in
    // its level's pass when the level comes back.
    let mut higher = false;
    for (i, (c, e)) in cands.iter_mut().zip(entries.iter_mut()).enumerate() {
        let e = e.as_mut();
        let at_top = e.cand.runnable && Some(e.cand.level()) == top;
        if e.resident && !at_top {
            higher |= e.cand.runnable;
            if e.turn && !e.cand.runnable {
                e.cand.served_pass = counters.pass(e.cand.level());
                c.served_pass = e.cand.served_pass;
            }
            e.had_turn = false;
            evict(e, i, now_ns, e.cand.runnable, out);
        }
    }
    // The turn in progress goes on until its slice ends; one that ended
    // served its context in this pass.
    let mut running = false;
    for (c, e) in cands.iter_mut().zip(entries.iter_mut()) {
        let e = e.as_mut();
        if e.resident && e.turn {
            if e.slice_end_ns > now_ns {
                running = true;
            } else {
                e.turn = false;
                e.had_turn = true;
                e.cand.served_pass = counters.pass(e.cand.level());
                c.served_pass = e.cand.served_pass;
            }
        }
    }
    if running {
        return;
    }
    if !higher && start_next_turn(entries, now_ns, out) {
        return;
    }
    // The round is over, or none began: stage 1 over the runnable
    // contexts of the top level that were not served in this pass,
    // residents included; if every one was, a new pass begins and all are
    // candidates.
    let Some(top) = top else {
        return;
    };
    out.push(SlotChange::Round);
    for e in entries.iter_mut() {
        e.as_mut().fresh = false;
    }
    let pass = counters.pass(top);
    let unserved = |c: &Candidate| c.runnable && c.level() == top && c.served_pass < pass;
    if !cands.iter().any(unserved) {
        if let Some(p) = counters.passes.get_mut(usize::from(top)) {
            *p = p.saturating_add(1);
        }
    }
    let pass = counters.pass(top);
    for c in cands.iter_mut().filter(|c| c.level() == top) {
        c.runnable &= c.served_pass < pass;
    }
    let k = select(cands, now_ns, policy.slots, chosen);
    let chosen = &chosen[..k];
    for &j in chosen {
        if let Some(e) = entries.get_mut(j) {
            e.as_mut().fresh = true;
        }
    }
    for (i, e) in entries.iter_mut().enumerate() {
        let e = e.as_mut();
        if e.resident && !e.fresh {
            evict(e, i, now_ns, true, out);
        }
    }
    let set = SliceSet::new(
        policy.formula,
        policy.slice,
        chosen
            .iter()
            .filter_map(|&j| entries.get(j))
            .map(|e| e.as_ref().cand.weight(now_ns)),
    );
    for &j in chosen {
        let Some(e) = entries.get_mut(j) else {
            continue;
        };
        let e = e.as_mut();
        e.turn_ns = set.slice_of(&e.cand.weight(now_ns));
        e.had_turn = false;
        if !e.resident {
            e.resident = true;
            e.loaded_seq = counters.next_seq;
            counters.next_seq += 1;
            out.push(SlotChange::Load {
                index: j,
                slice_ns: e.turn_ns,
            });
        }
    }
    start_next_turn(entries, now_ns, out);
}

/// Gives the device to the first loaded resident that has not had its
/// turn in this round; `false` if every one has (the round is over).
fn start_next_turn<T>(entries: &mut [T], now_ns: u64, out: &mut Changes<'_>) -> bool
where
    T: AsRef<SlotEntry> + AsMut<SlotEntry>,
{
    let next = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            let e = e.as_ref();
            e.resident && !e.had_turn
        })
        .min_by_key(|(_, e)| e.as_ref().loaded_seq)
        .map(|(i, _)| i);
    let Some(e) = next.and_then(|i| entries.get_mut(i)) else {
        return false;
    };
    let e = e.as_mut();
    e.turn = true;
    e.slice_end_ns = now_ns.saturating_add(e.turn_ns);
    out.push(SlotChange::Turn {
        index: next.unwrap_or_default(),
        slice_ns: e.turn_ns,
    });
    true
}

/// The earliest end of a running resident's slice: when [`reschedule`]
/// must run next if nothing else happens.
pub fn next_slice_end<T: AsRef<SlotEntry>>(entries: &[T]) -> Option<u64> {
    entries
        .iter()
        .map(AsRef::as_ref)
        .filter(|e| e.resident && e.turn)
        .map(|e| e.slice_end_ns)
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const MIN: u64 = 60_000 * MS;

    fn ctx(id: u32, priority: u8, created_ns: u64, runtime_ns: u64) -> SlotEntry {
        SlotEntry::new(Candidate {
            id,
            priority,
            created_ns,
            runtime_ns,
            runnable: true,
            served_pass: 0,
        })
    }

    /// The decision's state between calls, as a caller keeps it.
    struct Sched {
        policy: SlotPolicy,
        seq: SlotCounters,
        cands: [Candidate; 64],
        chosen: [usize; 64],
        changes: [SlotChange; 128],
    }

    impl Sched {
        fn new(slots: usize, formula: SliceFormula) -> Self {
            let blank = Candidate {
                id: 0,
                priority: 0,
                created_ns: 0,
                runtime_ns: 0,
                runnable: false,
                served_pass: 0,
            };
            Self {
                policy: SlotPolicy::new(slots, formula, 10 * MS),
                seq: SlotCounters::new(),
                cands: [blank; 64],
                chosen: [0; 64],
                changes: [SlotChange::Evict {
                    index: 0,
                    preempted: false,
                }; 128],
            }
        }

        fn run(&mut self, entries: &mut [SlotEntry], now: u64) -> &[SlotChange] {
            let scratch = Scratch {
                cands: &mut self.cands,
                chosen: &mut self.chosen,
                changes: &mut self.changes,
            };
            let n = reschedule(entries, now, &self.policy, &mut self.seq, scratch);
            &self.changes[..n]
        }
    }

    fn residents(entries: &[SlotEntry]) -> u64 {
        entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.resident)
            .map(|(i, _)| 1 << i)
            .sum()
    }

    #[test]
    fn document_examples_load_only_the_highest_level() {
        // 11 contexts: 5 at value 2, 6 at value 4; L = 8.
        let mut e = [ctx(0, 0, 0, 0); 11];
        for (i, x) in e.iter_mut().enumerate() {
            *x = ctx(i as u32, if i < 5 { 2 } else { 4 }, 0, MIN);
        }
        let mut s = Sched::new(8, SliceFormula::Proportional);
        let changes = s.run(&mut e, 60 * MIN);
        assert_eq!(changes.len(), 5);
        assert!(changes
            .iter()
            .all(|c| matches!(c, SlotChange::Load { index, .. } if *index < 5)));
        assert_eq!(residents(&e), 0b11111);
        // 7 contexts: 2 at value 1, 4 at value 3, 1 at value 9.
        let levels = [3, 9, 1, 3, 3, 1, 3];
        let mut e = [ctx(0, 0, 0, 0); 7];
        for (i, x) in e.iter_mut().enumerate() {
            *x = ctx(i as u32, levels[i], 0, MIN);
        }
        s.run(&mut e, 60 * MIN);
        assert_eq!(residents(&e), (1 << 2) | (1 << 5));
        // 3 contexts, all at value 5 (the sixth priority), none at a lower
        // level: all three are candidates, and all three fit.
        let mut e = [ctx(0, 0, 0, 0); 3];
        for (i, x) in e.iter_mut().enumerate() {
            *x = ctx(i as u32, 5, 0, MIN);
        }
        s.run(&mut e, 60 * MIN);
        assert_eq!(residents(&e), 0b111);
    }

    #[test]
    fn more_candidates_than_slots_take_the_largest_weights() {
        // Created 9:00, now 10:00; ran 3, 10, 2, 6 and 1 minutes.
        let (nine, ten) = (9 * 60 * MIN, 10 * 60 * MIN);
        let ran = [3, 10, 2, 6, 1];
        let mut e = [ctx(0, 0, 0, 0); 5];
        for (i, x) in e.iter_mut().enumerate() {
            *x = ctx(i as u32, 7, nine, ran[i] * MIN);
        }
        let mut s = Sched::new(2, SliceFormula::Proportional);
        let changes = s.run(&mut e, ten);
        // Weights 20, 6, 30, 10, 60: the 60 and the 30 win, best first.
        assert!(matches!(
            changes,
            [
                SlotChange::Load { index: 4, .. },
                SlotChange::Load { index: 2, .. }
            ]
        ));
    }

    /// Checks that the loads of `changes`, in the order they are listed,
    /// got the load numbers `*seq`, `*seq + 1`, ... and moves `*seq` on.
    fn check_load_order(changes: &[SlotChange], e: &[SlotEntry], seq: &mut u64) -> usize {
        let mut loads = 0;
        for c in changes {
            if let SlotChange::Load { index, .. } = *c {
                assert!(e[index].resident);
                assert_eq!(e[index].loaded_seq, *seq, "load {loads} of {changes:?}");
                *seq += 1;
                loads += 1;
            }
        }
        loads
    }

    /// Stage 2's FIFO order: every load is numbered in the order the loads
    /// happen, within one decision (best first, which is not the order of
    /// the entries) and across decisions, whoever is loaded.
    #[test]
    fn loads_are_numbered_in_the_order_they_happen() {
        // Created at 0, now 60 ms; ran 3, 10, 2, 6, 1 and 4 ms.
        let ran = [3, 10, 2, 6, 1, 4];
        let mut e = [ctx(0, 0, 0, 0); 6];
        for (i, x) in e.iter_mut().enumerate() {
            *x = ctx(i as u32, 7, 0, ran[i] * MS);
        }
        let mut s = Sched::new(3, SliceFormula::Proportional);
        let mut seq = 0;
        let mut now = 60 * MS;
        let changes = s.run(&mut e, now);
        // Weights 20, 6, 30, 10, 60, 15: loaded 4, 2, 0 in that order.
        let order: [usize; 3] = core::array::from_fn(|i| match changes[i] {
            SlotChange::Load { index, .. } => index,
            other => panic!("{other:?}"),
        });
        assert_eq!(order, [4, 2, 0]);
        assert_eq!(check_load_order(changes, &e, &mut seq), 3);
        // Slice after slice, residents run and others take their slots.
        let mut loads = 3;
        for _ in 0..40 {
            let next = next_slice_end(&e).unwrap();
            for x in e.iter_mut().filter(|x| x.resident) {
                x.cand.runtime_ns += next - now;
            }
            now = next;
            let changes = s.run(&mut e, now);
            let changes: [SlotChange; 8] = core::array::from_fn(|i| {
                changes.get(i).copied().unwrap_or(SlotChange::Evict {
                    index: 0,
                    preempted: false,
                })
            });
            loads += check_load_order(&changes, &e, &mut seq);
        }
        assert!(loads > 30, "only {loads} loads");
        assert_eq!(s.seq.next_seq, seq);
    }

    #[test]
    fn a_slice_is_renewed_without_a_switch_when_nobody_waits() {
        let mut e = [ctx(0, 4, 0, 0), ctx(1, 4, 0, 0)];
        let mut s = Sched::new(2, SliceFormula::Proportional);
        assert_eq!(s.run(&mut e, 0).len(), 2);
        let end = e[0].slice_end_ns;
        assert_eq!(end, 10 * MS, "equal weights: t0 each");
        assert_eq!(
            s.run(&mut e, end - 1),
            &[],
            "nothing ended, nothing changes"
        );
        e[0].cand.runtime_ns = end;
        e[1].cand.runtime_ns = end;
        let changes = s.run(&mut e, end);
        assert!(
            changes
                .iter()
                .all(|c| matches!(c, SlotChange::Renew { .. })),
            "{changes:?}"
        );
        assert_eq!(changes.len(), 2);
        assert_eq!(residents(&e), 0b11);
    }

    #[test]
    fn a_higher_level_preempts_at_once_and_lower_levels_wait_until_it_is_idle() {
        let mut e = [ctx(0, 5, 0, 0), ctx(1, 5, 0, 0), ctx(2, 0, 0, 0)];
        e[2].cand.runnable = false;
        let mut s = Sched::new(4, SliceFormula::Proportional);
        s.run(&mut e, 0);
        assert_eq!(residents(&e), 0b011);
        // The priority-0 context gets work mid-slice.
        e[2].cand.runnable = true;
        let changes = s.run(&mut e, MS);
        assert_eq!(
            changes,
            &[
                SlotChange::Evict {
                    index: 0,
                    preempted: true
                },
                SlotChange::Evict {
                    index: 1,
                    preempted: true
                },
                SlotChange::Load {
                    index: 2,
                    slice_ns: 10 * MS
                },
            ]
        );
        // Free slots stay free rather than running a lower level.
        assert_eq!(s.run(&mut e, 30 * MS).len(), 1, "only its own renewal");
        assert_eq!(residents(&e), 0b100);
        // Idle: it leaves and the level below comes back.
        e[2].cand.runnable = false;
        let changes = s.run(&mut e, 31 * MS);
        assert_eq!(
            changes[0],
            SlotChange::Evict {
                index: 2,
                preempted: false
            }
        );
        assert_eq!(residents(&e), 0b011);
    }

    /// Level draining through the decision itself: seven contexts of
    /// level 1, each with one slice of work, and three of level 2, on four
    /// slots.
    /// Level 1 takes its turns first (four, then the other three with the
    /// fourth slot left free), and level 2 runs only once level 1 is done.
    #[test]
    fn drains_a_level_then_moves_to_the_next() {
        let t0 = 10 * MS;
        let mut e = [ctx(0, 0, 0, 0); 10];
        for (i, x) in e.iter_mut().enumerate() {
            *x = ctx(i as u32, if i < 7 { 1 } else { 2 }, i as u64, 0);
        }
        let mut s = Sched::new(4, SliceFormula::Proportional);
        let mut now = 100;
        let mut rounds = [0u64; 4];
        for round in rounds.iter_mut() {
            for c in s.run(&mut e, now) {
                if let SlotChange::Load { index, slice_ns } = *c {
                    assert_eq!(slice_ns, t0, "all never ran: equal weights");
                    *round |= 1 << index;
                }
            }
            let level_1_waits = e[..7].iter().any(|x| x.cand.runnable);
            assert!(
                !(level_1_waits && e[7..].iter().any(|x| x.resident)),
                "level 2 ran before level 1 was done"
            );
            let Some(next) = next_slice_end(&e) else {
                break;
            };
            // Residents run until their slice ends, which finishes their work.
            for x in e.iter_mut().filter(|x| x.resident) {
                x.cand.runtime_ns += next - now;
                x.cand.runnable = x.cand.runtime_ns < t0;
            }
            now = next;
        }
        assert_eq!(rounds, [0b1111, 0b111_0000, 0b11_1000_0000, 0]);
        assert!(e.iter().all(|x| !x.cand.runnable && !x.resident));
    }

    #[test]
    fn an_idle_resident_frees_its_slot_for_a_waiting_context() {
        let mut e = [ctx(0, 8, 0, 0), ctx(1, 8, 1, 0)];
        let mut s = Sched::new(1, SliceFormula::Proportional);
        s.run(&mut e, 0);
        assert_eq!(residents(&e), 0b01, "older first among equal weights");
        e[0].cand.runnable = false;
        let changes = s.run(&mut e, MS);
        assert_eq!(
            changes[0],
            SlotChange::Evict {
                index: 0,
                preempted: false
            }
        );
        assert!(matches!(changes[1], SlotChange::Load { index: 1, .. }));
    }

    /// Runs `n` always-busy contexts of one level through `slices` slice
    /// ends with `slots` slots, crediting each resident the time it held
    /// its slot. Returns the runtimes.
    fn simulate(n: usize, slots: usize, formula: SliceFormula, slices: usize) -> [u64; 16] {
        let mut e = [ctx(0, 6, 0, 0); 16];
        for (i, x) in e.iter_mut().enumerate() {
            *x = ctx(i as u32, 6, 0, 0);
        }
        let mut s = Sched::new(slots, formula);
        let mut now = 1;
        for _ in 0..slices {
            s.run(&mut e[..n], now);
            let next = next_slice_end(&e[..n]).unwrap();
            for x in e[..n].iter_mut().filter(|x| x.resident) {
                x.cand.runtime_ns += next - now;
            }
            now = next;
        }
        core::array::from_fn(|i| e[i].cand.runtime_ns)
    }

    #[test]
    fn every_context_progresses_and_shares_are_equal_under_proportional() {
        for (n, slots) in [(2, 1), (5, 2), (9, 4), (16, 3)] {
            let run = simulate(n, slots, SliceFormula::Proportional, 60 * n);
            let total: u64 = run[..n].iter().sum();
            for (i, &r) in run[..n].iter().enumerate() {
                let share = r as f64 * n as f64 / total as f64;
                assert!(
                    (0.9..=1.1).contains(&share),
                    "n {n} slots {slots} ctx {i}: {share}"
                );
            }
        }
    }

    /// Both slice formulas on one loaded set of unequal weights, against
    /// the formulas as written: `t0 × n × wc ÷ wz` (proportional) and
    /// `t0 × wz ÷ wc` (literal). The larger weight gets four times the
    /// smaller's slice under the first, a quarter of it under the second.
    #[test]
    fn each_formula_gives_the_slices_it_says() {
        let t0 = 10 * MS;
        // Created at 0, now 100 ms; ran 10 and 40 ms: weights 10 and 2.5.
        let now = 100 * MS;
        let (w0, w1) = (10_000u64, 2_500u64); // × 1000
        let wz = w0 + w1;
        for (formula, want) in [
            (
                SliceFormula::Proportional,
                [t0 * 2 * w0 / wz, t0 * 2 * w1 / wz],
            ),
            (SliceFormula::Literal, [t0 * wz / w0, t0 * wz / w1]),
        ] {
            let mut e = [ctx(0, 3, 0, 10 * MS), ctx(1, 3, 0, 40 * MS)];
            let mut s = Sched::new(2, formula);
            let changes = s.run(&mut e, now);
            let got: [u64; 2] = core::array::from_fn(|i| match changes[i] {
                SlotChange::Load { index, slice_ns } => {
                    assert_eq!(index, i);
                    assert_eq!(e[i].slice_end_ns, now + slice_ns);
                    slice_ns
                }
                other => panic!("{other:?}"),
            });
            assert_eq!(got, want, "{formula:?}");
        }
        assert_eq!([t0 * 2 * w0 / wz, t0 * 2 * w1 / wz], [16 * MS, 4 * MS]);
        assert_eq!([t0 * wz / w0, t0 * wz / w1], [12_500_000, 50 * MS]);
    }

    /// Under the literal formula a context that ran little gets a short
    /// slice, yet is chosen first: every context still runs, and none
    /// waits more than a bounded number of slice ends for its next turn.
    /// (A stage 1 that kept the residents, or chose the smallest weights,
    /// would starve some.)
    #[test]
    fn literal_still_lets_every_context_run() {
        let (n, slots) = (6, 2);
        let mut e = [ctx(0, 6, 0, 0); 6];
        for (i, x) in e.iter_mut().enumerate() {
            *x = ctx(i as u32, 6, 0, 0);
        }
        let mut s = Sched::new(slots, SliceFormula::Literal);
        let mut now = 1;
        let mut last_load = [0usize; 6];
        let mut longest_wait = 0;
        let mut turns = [0u32; 6];
        for decision in 1..=300 {
            let changes = s.run(&mut e[..n], now);
            for c in changes {
                if let SlotChange::Load { index, .. } = *c {
                    longest_wait = longest_wait.max(decision - last_load[index]);
                    last_load[index] = decision;
                    turns[index] += 1;
                }
            }
            let next = next_slice_end(&e[..n]).unwrap();
            for x in e[..n].iter_mut().filter(|x| x.resident) {
                x.cand.runtime_ns += next - now;
            }
            now = next;
        }
        // Six contexts, two slots: a turn every 3 slice ends on average
        // (100 each in 300); none waits more than twice that.
        assert!(
            longest_wait <= 6,
            "a context waited {longest_wait} slice ends: {turns:?}"
        );
        assert!(turns.iter().all(|&t| t >= 80), "turns {turns:?}");
    }

    // ---- in turn: residents in load order, a time slice each ----

    /// A scheduler in turn (or side by side) with history rule `h`.
    fn sched_with(slots: usize, formula: SliceFormula, mode: SlotMode, h: HistoryRule) -> Sched {
        let mut s = Sched::new(slots, formula);
        s.policy = s.policy.with_mode(mode).with_history(h);
        s
    }

    #[test]
    fn in_turn_document_examples_load_only_the_highest_level() {
        let mut e = [ctx(0, 0, 0, 0); 11];
        for (i, x) in e.iter_mut().enumerate() {
            *x = ctx(i as u32, if i < 5 { 2 } else { 4 }, 0, MIN);
        }
        let mut s = sched_with(
            8,
            SliceFormula::Proportional,
            SlotMode::InTurn,
            HistoryRule::Unbounded,
        );
        let changes = s.run(&mut e, 60 * MIN);
        // A round: five loads, then the first of them gets the device.
        assert_eq!(changes.len(), 7);
        assert_eq!(changes[0], SlotChange::Round);
        assert!(changes[1..6]
            .iter()
            .all(|c| matches!(c, SlotChange::Load { index, .. } if *index < 5)));
        assert!(matches!(changes[6], SlotChange::Turn { index: 0, .. }));
        assert_eq!(residents(&e), 0b11111);
        assert_eq!(e.iter().filter(|x| x.turn).count(), 1);
        let levels = [3, 9, 1, 3, 3, 1, 3];
        let mut e = [ctx(0, 0, 0, 0); 7];
        for (i, x) in e.iter_mut().enumerate() {
            *x = ctx(i as u32, levels[i], 0, MIN);
        }
        let mut s = sched_with(
            8,
            SliceFormula::Proportional,
            SlotMode::InTurn,
            HistoryRule::Unbounded,
        );
        s.run(&mut e, 60 * MIN);
        assert_eq!(residents(&e), (1 << 2) | (1 << 5));
        assert!(e[2].turn && !e[5].turn);
        // 3 contexts, all at value 5: all three loaded, the first's turn.
        let mut e = [ctx(0, 0, 0, 0); 3];
        for (i, x) in e.iter_mut().enumerate() {
            *x = ctx(i as u32, 5, 0, MIN);
        }
        s.run(&mut e, 60 * MIN);
        assert_eq!(residents(&e), 0b111);
        assert_eq!(e.iter().filter(|x| x.turn).count(), 1);
        assert!(e[0].turn);
    }

    /// Ten loaded contexts whose weights sum to 30: the one of weight 5
    /// runs `t0 × 30 ÷ 5 = 6 × t0` under the literal formula and
    /// `t0 × 10 × 5 ÷ 30` under the proportional one, in its own turn.
    #[test]
    fn in_turn_the_thirty_over_five_slice() {
        // Now 60 min; ran 12, 12, 12, 12, 30, 30, 30, 30, 60, 60 min:
        // weights 5, 5, 5, 5, 2, 2, 2, 2, 1, 1.
        let ran = [12, 12, 12, 12, 30, 30, 30, 30, 60, 60];
        for (formula, want) in [
            (SliceFormula::Literal, 6 * 10 * MS),
            (SliceFormula::Proportional, 10 * MS * 10 * 5 / 30),
        ] {
            let mut e = [ctx(0, 0, 0, 0); 10];
            for (i, x) in e.iter_mut().enumerate() {
                *x = ctx(i as u32, 4, 0, ran[i] * MIN);
            }
            let mut s = sched_with(10, formula, SlotMode::InTurn, HistoryRule::Unbounded);
            let changes = s.run(&mut e, 60 * MIN);
            assert_eq!(residents(&e), 0x3ff);
            // The first loaded (best weight, oldest, lowest id) runs first.
            let Some(&SlotChange::Turn { index, slice_ns }) = changes.last() else {
                panic!("{changes:?}");
            };
            assert_eq!(index, 0);
            assert!(
                slice_ns.abs_diff(want) <= 1,
                "{formula:?}: {slice_ns} vs {want}"
            );
            assert_eq!(e[0].slice_end_ns, 60 * MIN + slice_ns);
        }
    }

    /// The loaded contexts run one after another in load order, one at a
    /// time; stage 1 selects again only when every one has had its turn,
    /// and the contexts left over then get the next round.
    #[test]
    fn in_turn_runs_residents_in_load_order_and_selects_again_per_round() {
        let mut e = [ctx(0, 0, 0, 0); 5];
        for (i, x) in e.iter_mut().enumerate() {
            *x = ctx(i as u32, 6, 0, 0);
        }
        let mut s = sched_with(
            3,
            SliceFormula::Proportional,
            SlotMode::InTurn,
            HistoryRule::Unbounded,
        );
        let mut now = MS;
        let mut rounds = 0;
        let mut ran_in_round = [false; 5];
        let mut ever = [false; 5];
        for _ in 0..60 {
            let residents_before: [bool; 5] = core::array::from_fn(|i| e[i].resident);
            let changes = s.run(&mut e, now);
            if changes.contains(&SlotChange::Round) {
                // A round boundary: every resident of the last round ran.
                for i in 0..5 {
                    assert_eq!(residents_before[i], ran_in_round[i], "round {rounds}: {i}");
                }
                rounds += 1;
                ran_in_round = [false; 5];
            }
            let Some(i) = e.iter().position(|x| x.turn) else {
                panic!("nobody runs");
            };
            // Turn order: no resident loaded earlier is still waiting for
            // its turn in this round.
            for x in e.iter().filter(|x| x.resident && !x.had_turn && !x.turn) {
                assert!(x.loaded_seq > e[i].loaded_seq, "{e:?}");
            }
            assert!(!ran_in_round[i], "context {i} ran twice in one round");
            ran_in_round[i] = true;
            ever[i] = true;
            let next = next_slice_end(&e).unwrap();
            e[i].charge(next - now);
            now = next;
        }
        assert!(ever.iter().all(|&r| r), "everyone runs: {ever:?}");
        assert!(rounds >= 10, "{rounds} rounds");
        // Shares stay close: unbounded weights balance GPU time.
        let times: [u64; 5] = core::array::from_fn(|i| e[i].cand.runtime_ns);
        let (lo, hi) = (times.iter().min().unwrap(), times.iter().max().unwrap());
        assert!(hi - lo <= 3 * 10 * MS, "{times:?}");
    }

    /// Runs the decision at `now` and returns the entries it loaded, as a
    /// bit mask; ends the turn that runs first (charging it), so the next
    /// call takes the next decision.
    fn loads_then_turns(s: &mut Sched, e: &mut [SlotEntry], now: &mut u64) -> u64 {
        let mut loaded = 0;
        for c in s.run(e, *now) {
            if let SlotChange::Load { index, .. } = c {
                loaded |= 1 << index;
            }
        }
        let next = next_slice_end(e).unwrap();
        for x in e.iter_mut().filter(|x| x.turn) {
            x.charge(next - *now);
        }
        *now = next;
        loaded
    }

    /// The document's eleven contexts with four slots: five at value 2,
    /// six at value 4. The first selection loads four of the five; once
    /// they had their turns, only the fifth is a candidate (the remaining
    /// `a − L`), although it leaves three slots free and the four still
    /// have work; after its turn the pass is over and all five compete
    /// again. The level below never runs meanwhile.
    #[test]
    fn in_turn_the_remaining_contexts_of_a_pass_are_the_only_candidates() {
        for history in [HistoryRule::Unbounded, HistoryRule::Bounded] {
            let mut e = [ctx(0, 0, 0, 0); 11];
            for (i, x) in e.iter_mut().enumerate() {
                *x = ctx(i as u32, [4, 2][i % 2], i as u64 * MS, 0);
            }
            let mut s = sched_with(4, SliceFormula::Literal, SlotMode::InTurn, history);
            let mut now = 20 * MS;
            let mut selections = [0u64; 3];
            let mut k = 0;
            while k < 3 {
                let before = residents(&e);
                let loaded = loads_then_turns(&mut s, &mut e, &mut now);
                if loaded != 0 || residents(&e) != before {
                    selections[k] = residents(&e);
                    k += 1;
                }
                assert_eq!(residents(&e) & 0b101_0101_0101, 0, "{history:?}");
            }
            assert_eq!(selections[0], 0b00_1010_1010, "{history:?}");
            assert_eq!(selections[1], 0b10_0000_0000, "{history:?}");
            // A new pass: four of the five again, the best weights (the
            // fifth ran least, so it is among them).
            assert_eq!(selections[2].count_ones(), 4, "{history:?}");
            assert_ne!(selections[2] & (1 << 9), 0, "{history:?}");
        }
    }

    /// A context that ran out of work in its turn finished running: if it
    /// has work again before the pass is over, it waits for the contexts
    /// of its level that have not had their turn.
    #[test]
    fn in_turn_a_context_that_finished_waits_for_the_rest_of_its_pass() {
        let mut e = [ctx(0, 0, 0, 0); 3];
        for (i, x) in e.iter_mut().enumerate() {
            *x = ctx(i as u32, 3, i as u64 * MS, 0);
        }
        let mut s = sched_with(
            2,
            SliceFormula::Proportional,
            SlotMode::InTurn,
            HistoryRule::Unbounded,
        );
        s.run(&mut e, 10 * MS);
        assert_eq!(residents(&e), 0b011);
        assert!(e[0].turn);
        // Context 0 finishes its job in its turn and at once has another.
        e[0].cand.runnable = false;
        s.run(&mut e, 11 * MS);
        assert!(e[1].turn);
        e[0].cand.runnable = true;
        s.run(&mut e, 12 * MS);
        assert!(!e[0].resident, "{:?}", e[0]);
        // Context 1's turn ends: the round is over, and only context 2
        // was not served in this pass.
        let end = e[1].slice_end_ns;
        s.run(&mut e, end);
        assert_eq!(residents(&e), 0b100);
        // After its turn, a new pass: all three compete again.
        let end = e[2].slice_end_ns;
        s.run(&mut e, end);
        assert_eq!(residents(&e).count_ones(), 2);
        assert_eq!(s.seq.pass(3), 2);
    }

    /// A context of a higher level ends the round at once and runs; the
    /// level below comes back when it is idle.
    #[test]
    fn in_turn_a_higher_level_ends_the_round_at_once() {
        let mut e = [ctx(0, 0, 0, 0); 4];
        for (i, x) in e.iter_mut().enumerate() {
            *x = ctx(i as u32, 8, 0, 0);
        }
        e[3].cand.priority = 1;
        e[3].cand.runnable = false;
        let mut s = sched_with(
            2,
            SliceFormula::Proportional,
            SlotMode::InTurn,
            HistoryRule::Unbounded,
        );
        s.run(&mut e, MS);
        assert_eq!(residents(&e), 0b011);
        assert!(e[0].turn);
        e[3].cand.runnable = true;
        let changes = s.run(&mut e, 2 * MS).to_vec();
        assert!(changes.contains(&SlotChange::Evict {
            index: 0,
            preempted: true
        }));
        assert!(changes.contains(&SlotChange::Evict {
            index: 1,
            preempted: true
        }));
        assert!(e[3].resident && e[3].turn);
        // Context 0's turn was cut, not finished: it is still to be
        // served in its level's pass.
        assert!(e[0].cand.served_pass < s.seq.pass(8), "{:?}", e[0]);
        e[3].cand.runnable = false;
        s.run(&mut e, 3 * MS);
        assert!(!e[3].resident);
        assert_eq!(e.iter().filter(|x| x.turn).count(), 1);
        assert!(e
            .iter()
            .take(3)
            .all(|x| x.cand.served_pass < s.seq.pass(8) || x.turn));
    }

    // ---- bounded history ----

    /// One slot; an old context A that ran 30 ms waits while another client
    /// creates a fresh context every slice. Returns how many slices passed
    /// before A ran, or `None` if it never did within `slices`.
    fn fresh_context_every_slice(mode: SlotMode, h: HistoryRule, slices: usize) -> Option<usize> {
        let mut e = [ctx(0, 0, 0, 0); 64];
        for (i, x) in e.iter_mut().enumerate() {
            *x = ctx(i as u32, 5, 0, 0);
            x.cand.runnable = false;
        }
        let mut s = sched_with(1, SliceFormula::Proportional, mode, h);
        // A: created at 0, ran 30 ms over its first 100 ms.
        e[0] = ctx(0, 5, 0, 30 * MS);
        let mut now = 100 * MS;
        let mut n = 1;
        for slice in 0..slices {
            // The other client's newest context, created now with work.
            if n < e.len() {
                e[n] = ctx(n as u32, 5, now, 0);
                e[n].idle_since_ns = now;
                n += 1;
            }
            s.run(&mut e[..n], now);
            if e[0].turn {
                return Some(slice);
            }
            let next = next_slice_end(&e[..n]).unwrap();
            for x in e[..n].iter_mut().filter(|x| x.resident && x.turn) {
                x.charge(next - now);
            }
            now = next;
        }
        None
    }

    #[test]
    fn bounded_history_a_fresh_context_every_slice_does_not_starve_an_old_one() {
        for mode in [SlotMode::SideBySide, SlotMode::InTurn] {
            // The unbounded rule: a context that never ran always wins.
            assert_eq!(
                fresh_context_every_slice(mode, HistoryRule::Unbounded, 60),
                None,
                "{mode:?}"
            );
            let got = fresh_context_every_slice(mode, HistoryRule::Bounded, 60);
            assert!(got.is_some_and(|k| k <= 8), "{mode:?}: {got:?}");
        }
    }

    /// One slot. I ran 1 s long ago and slept for an hour; B has run
    /// ever since. Returns the longest run of consecutive slices I holds
    /// the device after waking, over `slices` slices.
    fn woken_after_an_hour(mode: SlotMode, h: HistoryRule, slices: usize) -> usize {
        const SEC: u64 = 1000 * MS;
        let mut e = [ctx(0, 5, 0, SEC), ctx(1, 5, 2 * SEC, 0)];
        e[0].cand.runnable = false;
        let mut s = sched_with(1, SliceFormula::Proportional, mode, h);
        // I was runnable for its first 2 s, then idle.
        let mut now = 2 * SEC;
        s.run(&mut e, 0);
        e[0].cand.runnable = true;
        s.run(&mut e, SEC);
        e[0].cand.runnable = false;
        // B alone for an hour.
        let hour = now + 60 * MIN;
        while now < hour {
            s.run(&mut e, now);
            let next = next_slice_end(&e).unwrap().min(hour);
            for x in e.iter_mut().filter(|x| x.resident && x.turn) {
                x.charge(next - now);
            }
            now = next;
        }
        e[0].cand.runnable = true;
        let (mut longest, mut streak) = (0, 0);
        for _ in 0..slices {
            s.run(&mut e, now);
            if e[0].turn {
                streak += 1;
                longest = longest.max(streak);
            } else {
                streak = 0;
            }
            let next = next_slice_end(&e).unwrap();
            for x in e.iter_mut().filter(|x| x.resident && x.turn) {
                x.charge(next - now);
            }
            now = next;
        }
        longest
    }

    #[test]
    fn bounded_history_a_long_idle_context_shares_on_waking() {
        // The unbounded rule: side by side, an hour of lifetime locks B
        // out; in turn, each pass gives B its turn all the same, so I never
        // runs more than twice in a row (last in one pass, first in the
        // next).
        let side = woken_after_an_hour(SlotMode::SideBySide, HistoryRule::Unbounded, 200);
        assert!(side >= 100, "{side}");
        let in_turn = woken_after_an_hour(SlotMode::InTurn, HistoryRule::Unbounded, 200);
        assert!(in_turn <= 2, "{in_turn}");
        for mode in [SlotMode::SideBySide, SlotMode::InTurn] {
            let longest = woken_after_an_hour(mode, HistoryRule::Bounded, 200);
            assert!(longest <= 3, "{mode:?}: {longest} slices in a row");
        }
    }
}
