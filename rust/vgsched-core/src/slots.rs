// SPDX-License-Identifier: GPL-2.0

//! Slot selection as one decision: which contexts hold the `L` hardware slots, and
//! for how long.
//!
//! Resident contexts are the dispatcher's channels and run side by side;
//! contexts outside the slots wait with their state saved. Each resident
//! holds its slot for one slice (stage 2, [`super::slice`]). The decision
//! is taken again whenever something may change the answer:
//!
//! - a resident's slice ends: it competes for its slot again with every
//!   waiting context of the level (stage 1, [`super::pool::select`]); it
//!   just ran, so its weight fell and a context that waited wins. When no
//!   context waits it keeps the slot for a fresh slice, without a switch;
//! - a resident has no more work: it leaves at once and its slot is filled;
//! - a context of a higher level becomes runnable: every resident of a
//!   lower level is preempted (strict priority) and the level takes over.
//!
//! The document re-selects once every resident has had its slice (a
//! round). Slices of different lengths would then leave slots idle until
//! the longest ends, so each slot is re-decided when its own slice ends;
//! with equal slices, or one slot, the two are the same.

use super::pool::{
    highest_runnable_level,
    select,
    Candidate, //
};
use super::slice::{
    SliceFormula,
    SliceParams,
    SliceSet, //
};

/// The settings of the decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotPolicy {
    /// Hardware slots `L`.
    pub slots: usize,
    /// Stage 2's slice formula.
    pub formula: SliceFormula,
    /// Stage 2's base slice and clamps.
    pub slice: SliceParams,
}

impl SlotPolicy {
    /// The policy for `slots` slots and base slice `t0_ns` with the
    /// project's clamps: no slice below `t0 / 4` (switching overhead) nor
    /// above `8 × t0` (how long the other contexts can be kept waiting).
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
        }
    }
}

/// One context as the decision sees it; the caller keeps one per context
/// that has work or a slot, in any order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotEntry {
    /// Priority, age, runtime and whether it has work to run.
    pub cand: Candidate,
    /// It holds a slot.
    pub resident: bool,
    /// Order in which residents were loaded (stage 2's FIFO order).
    pub loaded_seq: u64,
    /// When its slice ends, if resident.
    pub slice_end_ns: u64,
    /// Scratch of [`reschedule`]: given a new slice in this decision.
    fresh: bool,
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
    /// A context that does not hold a slot.
    pub fn new(cand: Candidate) -> Self {
        Self {
            cand,
            resident: false,
            loaded_seq: 0,
            slice_end_ns: 0,
            fresh: false,
        }
    }
}

/// What the caller must carry out after [`reschedule`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotChange {
    /// `index` was loaded into a slot for a slice of `slice_ns`.
    Load {
        /// Index of the entry.
        index: usize,
        /// Its slice.
        slice_ns: u64,
    },
    /// `index` keeps its slot for another slice of `slice_ns`.
    Renew {
        /// Index of the entry.
        index: usize,
        /// Its slice.
        slice_ns: u64,
    },
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

/// Takes the decision at `now_ns` over `entries`, updating their `resident`,
/// `loaded_seq` and `slice_end_ns`, and writes what changed to
/// `scratch.changes`; returns how many. Evictions come first, so a caller
/// applying them in order frees slots before filling them; loads follow in
/// the order they were chosen (best first). `next_seq` numbers loads.
/// O(n log L) comparisons, no allocation.
pub fn reschedule<T>(
    entries: &mut [T],
    now_ns: u64,
    policy: &SlotPolicy,
    next_seq: &mut u64,
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
    let mut written = 0;
    let mut push = |c: SlotChange| {
        if let Some(slot) = changes.get_mut(written) {
            *slot = c;
            written += 1;
        }
    };
    for (c, e) in cands.iter_mut().zip(entries.iter()) {
        *c = e.as_ref().cand;
    }
    let top = highest_runnable_level(&cands[..n]);
    // Residents off the top level leave at once; residents whose slice
    // goes on keep their slot; everyone else at the top level contends.
    let mut fixed = 0;
    for (i, (c, e)) in cands.iter_mut().zip(entries.iter_mut()).enumerate() {
        let e = e.as_mut();
        e.fresh = false;
        let at_top = e.cand.runnable && Some(e.cand.level()) == top;
        if e.resident && !at_top {
            e.resident = false;
            push(SlotChange::Evict {
                index: i,
                preempted: e.cand.runnable,
            });
        }
        let keeps = e.resident && e.slice_end_ns > now_ns;
        fixed += usize::from(keeps);
        c.runnable = at_top && !keeps;
    }
    let k = select(
        &cands[..n],
        now_ns,
        policy.slots.saturating_sub(fixed),
        chosen,
    );
    for &j in &chosen[..k] {
        entries[j].as_mut().fresh = true;
    }
    // Residents whose slice ended and that did not win their slot back.
    for (i, e) in entries.iter_mut().enumerate() {
        let e = e.as_mut();
        if e.resident && !e.fresh && e.slice_end_ns <= now_ns {
            e.resident = false;
            push(SlotChange::Evict {
                index: i,
                preempted: true,
            });
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
    for &j in &chosen[..k] {
        let e = entries[j].as_mut();
        let slice_ns = set.slice_of(&e.cand.weight(now_ns));
        e.slice_end_ns = now_ns.saturating_add(slice_ns);
        if e.resident {
            push(SlotChange::Renew { index: j, slice_ns });
        } else {
            e.resident = true;
            e.loaded_seq = *next_seq;
            *next_seq += 1;
            push(SlotChange::Load { index: j, slice_ns });
        }
    }
    written
}

/// The earliest end of a resident's slice: when [`reschedule`] must run
/// next if nothing else happens.
pub fn next_slice_end<T: AsRef<SlotEntry>>(entries: &[T]) -> Option<u64> {
    entries
        .iter()
        .map(AsRef::as_ref)
        .filter(|e| e.resident)
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
        })
    }

    /// The decision's state between calls, as a caller keeps it.
    struct Sched {
        policy: SlotPolicy,
        seq: u64,
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
            };
            Self {
                policy: SlotPolicy::new(slots, formula, 10 * MS),
                seq: 0,
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
        // 11 contexts: 5 at priority 3, 6 at priority 5; L = 8.
        let mut e = [ctx(0, 0, 0, 0); 11];
        for (i, x) in e.iter_mut().enumerate() {
            *x = ctx(i as u32, if i < 5 { 3 } else { 5 }, 0, MIN);
        }
        let mut s = Sched::new(8, SliceFormula::Proportional);
        let changes = s.run(&mut e, 60 * MIN);
        assert_eq!(changes.len(), 5);
        assert!(changes
            .iter()
            .all(|c| matches!(c, SlotChange::Load { index, .. } if *index < 5)));
        assert_eq!(residents(&e), 0b11111);
        // 7 contexts: 2 at level 2, 4 at level 4, 1 at level 10.
        let levels = [4, 10, 2, 4, 4, 2, 4];
        let mut e = [ctx(0, 0, 0, 0); 7];
        for (i, x) in e.iter_mut().enumerate() {
            *x = ctx(i as u32, levels[i], 0, MIN);
        }
        s.run(&mut e, 60 * MIN);
        assert_eq!(residents(&e), (1 << 2) | (1 << 5));
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
        assert_eq!(s.seq, seq);
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

    /// The design document's draining rule through the decision itself: seven contexts of level 1,
    /// each with one slice of work, and three of level 2, on four slots.
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
}
