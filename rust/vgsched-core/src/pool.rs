// SPDX-License-Identifier: GPL-2.0

//! Slot selection: choosing which contexts go into the hardware slots.
//!
//! Only runnable contexts at the highest (numerically lowest) priority level
//! that has any runnable context are candidates; lower levels wait, however
//! many slots are free. When the candidates do not fit into the `L` slots,
//! the `L` with the largest weight (lifetime ÷ runtime) win, so contexts that
//! have had the GPU least, relative to how long they have existed, go first.
//!
//! Weights are compared as exact fractions by cross-multiplying in `u128`:
//! the kernel forbids floating point, and multiplication and comparison of
//! `u128` are inline instructions on 64-bit targets (division is not, see
//! [`div_sat`]).

use core::cmp::Ordering;

/// Lowest priority: priorities are 4 bits (16 levels), 0 being the highest.
pub const LOWEST_PRIORITY: u8 = 15;

/// A context as stage 1 sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Context id; breaks the last ties so the choice is deterministic.
    pub id: u32,
    /// Priority level, 0 highest to [`LOWEST_PRIORITY`]; larger values are
    /// treated as [`LOWEST_PRIORITY`], as only 4 bits are meaningful.
    pub priority: u8,
    /// When the context was created, in ns on the scheduler's clock.
    pub created_ns: u64,
    /// Accumulated time the context actually ran on the GPU, in ns.
    pub runtime_ns: u64,
    /// Whether the context has work to run; others are never selected.
    pub runnable: bool,
    /// The last pass of its level in which it had its turn, when slot
    /// selection runs in turn ([`super::slots::SlotCounters`]); a smaller
    /// pass ranks first, before the weight is looked at. 0 where passes
    /// are not counted, so there only the weight ranks.
    pub served_pass: u64,
}

impl Candidate {
    /// The priority level, saturated to [`LOWEST_PRIORITY`].
    #[inline]
    pub fn level(&self) -> u8 {
        self.priority.min(LOWEST_PRIORITY)
    }

    /// The context's weight at time `now_ns`.
    #[inline]
    pub fn weight(&self, now_ns: u64) -> Weight {
        Weight::new(now_ns, self.created_ns, self.runtime_ns)
    }
}

/// A context's weight, lifetime ÷ runtime, kept as the exact fraction.
///
/// A context that never ran (runtime 0) has an infinite weight, larger
/// than every finite one; infinite weights are equal to each other, the
/// selection then prefers the older context. Equality is that of the
/// fractions (2/1 == 4/2), consistent with the ordering.
#[derive(Clone, Copy, Debug)]
pub struct Weight {
    lifetime_ns: u64,
    runtime_ns: u64,
}

impl Weight {
    /// The weight at `now_ns` of a context created at `created_ns` that ran
    /// for `runtime_ns`. A creation time in the future counts as lifetime 0
    /// rather than wrapping, so a clock glitch cannot make a huge weight.
    pub fn new(now_ns: u64, created_ns: u64, runtime_ns: u64) -> Self {
        Self {
            lifetime_ns: now_ns.saturating_sub(created_ns),
            runtime_ns,
        }
    }

    /// Time since the context was created, in ns.
    pub fn lifetime_ns(&self) -> u64 {
        self.lifetime_ns
    }

    /// Time the context ran on the GPU, in ns.
    pub fn runtime_ns(&self) -> u64 {
        self.runtime_ns
    }

    /// Whether the context never ran, making the weight infinite.
    pub fn is_infinite(&self) -> bool {
        self.runtime_ns == 0
    }

    /// The weight × 1000, rounded down and saturated to `u64::MAX`; an
    /// infinite weight gives `u64::MAX`. For display and for the slice
    /// formulas of [`super::slice`].
    pub fn milli(&self) -> u64 {
        if self.is_infinite() {
            return u64::MAX;
        }
        div_sat(
            u128::from(self.lifetime_ns) * 1000,
            u128::from(self.runtime_ns),
        )
    }
}

impl Ord for Weight {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.is_infinite(), other.is_infinite()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            // l1/r1 vs l2/r2 with r1, r2 > 0: each product is below 2^128.
            (false, false) => (u128::from(self.lifetime_ns) * u128::from(other.runtime_ns))
                .cmp(&(u128::from(other.lifetime_ns) * u128::from(self.runtime_ns))),
        }
    }
}

impl PartialOrd for Weight {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Weight {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Weight {}

/// `num ÷ den` rounded down, saturated to `u64::MAX`; `u64::MAX` when `den`
/// is 0 (the limit of a positive numerator over a vanishing denominator).
///
/// Restoring long division with constant shifts only: a `u128` `/` would
/// call `__udivti3`, which the kernel's `compiler_builtins` turns into a
/// panic. At most 128 rounds, so cheap next to a context switch.
pub fn div_sat(num: u128, den: u128) -> u64 {
    if den == 0 {
        return u64::MAX;
    }
    // Most weights and slices fit in 64 bits, where the division is one
    // instruction.
    if let (Ok(n), Ok(d)) = (u64::try_from(num), u64::try_from(den)) {
        return n / d;
    }
    // The quotient needs more than 64 bits exactly when num >= den * 2^64.
    if den <= u128::from(u64::MAX) && (num >> 64) >= den {
        return u64::MAX;
    }
    let (mut n, mut rem, mut quot) = (num, 0u128, 0u128);
    for _ in 0..128 {
        let carry = rem >> 127;
        rem = (rem << 1) | (n >> 127);
        n <<= 1;
        quot <<= 1;
        // A bit shifted out of `rem` means it exceeded `den` (< 2^128).
        if carry != 0 || rem >= den {
            rem = rem.wrapping_sub(den);
            quot |= 1;
        }
    }
    quot as u64
}

/// The highest (numerically lowest) priority level holding a runnable
/// context, or `None` when nothing is runnable. O(n).
pub fn highest_runnable_level(cands: &[Candidate]) -> Option<u8> {
    cands
        .iter()
        .filter(|c| c.runnable)
        .map(Candidate::level)
        .min()
}

/// Whether `cands[a]` ranks ahead of `cands[b]`: an earlier served pass,
/// then larger weight, then older (earlier `created_ns`), then lower id,
/// then lower index, so the order is total and the selection deterministic
/// even with duplicate ids.
fn ahead(cands: &[Candidate], now_ns: u64, a: usize, b: usize) -> bool {
    let (ca, cb) = (&cands[a], &cands[b]);
    cb.served_pass
        .cmp(&ca.served_pass)
        .then_with(|| ca.weight(now_ns).cmp(&cb.weight(now_ns)))
        .then_with(|| cb.created_ns.cmp(&ca.created_ns))
        .then_with(|| cb.id.cmp(&ca.id))
        .then_with(|| b.cmp(&a))
        == Ordering::Greater
}

/// Restores the heap property below `root` in `heap`, a binary heap whose
/// root is the candidate ranked last (the first one to be evicted).
fn sift_down(cands: &[Candidate], now_ns: u64, heap: &mut [usize], mut root: usize) {
    loop {
        let (l, r) = (2 * root + 1, 2 * root + 2);
        let mut last = root;
        if l < heap.len() && ahead(cands, now_ns, heap[last], heap[l]) {
            last = l;
        }
        if r < heap.len() && ahead(cands, now_ns, heap[last], heap[r]) {
            last = r;
        }
        if last == root {
            return;
        }
        heap.swap(root, last);
        root = last;
    }
}

/// Stage 1: chooses the contexts to load into `slots` hardware slots.
///
/// Candidates are the runnable contexts at [`highest_runnable_level`]. If
/// they fit (at most `slots`), all are chosen; otherwise the `slots`
/// ranking first: earliest [`Candidate::served_pass`], then largest
/// [`Weight`] at `now_ns`, then oldest, then lowest id. Writes their indices into `cands` to `out`, best first, and returns
/// how many; the capacity is `min(slots, out.len())`.
///
/// Cost: one O(n) pass for the level, then one pass keeping the best `k`
/// in a binary heap inside `out` (root = worst kept, so a candidate that
/// does not make the cut costs one comparison), then an in-place heap sort
/// of the `k` winners: O(n log k) comparisons at worst, no allocation.
/// With `k` ≤ 64 slots that is at most ~6 comparisons per context.
pub fn select(cands: &[Candidate], now_ns: u64, slots: usize, out: &mut [usize]) -> usize {
    let cap = slots.min(out.len());
    let Some(level) = highest_runnable_level(cands) else {
        return 0;
    };
    if cap == 0 {
        return 0;
    }
    let mut len = 0;
    // Pass and weight of the worst kept (the heap root) once the heap is
    // full.
    let mut worst = (0, Weight::new(0, 0, 0));
    for (i, c) in cands.iter().enumerate() {
        if !c.runnable || c.level() != level {
            continue;
        }
        if len < cap {
            // Sift up: move the newcomer toward the root while it ranks
            // behind its parent.
            let mut pos = len;
            out[pos] = i;
            len += 1;
            while pos > 0 {
                let parent = (pos - 1) / 2;
                if !ahead(cands, now_ns, out[parent], out[pos]) {
                    break;
                }
                out.swap(parent, pos);
                pos = parent;
            }
            if len == cap {
                worst = (cands[out[0]].served_pass, cands[out[0]].weight(now_ns));
            }
        } else {
            // Most losers of a large pool are rejected on weight alone,
            // against the cached root weight.
            let rank = worst
                .0
                .cmp(&c.served_pass)
                .then_with(|| c.weight(now_ns).cmp(&worst.1));
            let ahead_of_worst = match rank {
                Ordering::Less => false,
                Ordering::Greater => true,
                Ordering::Equal => ahead(cands, now_ns, i, out[0]),
            };
            if ahead_of_worst {
                out[0] = i;
                sift_down(cands, now_ns, &mut out[..len], 0);
                worst = (cands[out[0]].served_pass, cands[out[0]].weight(now_ns));
            }
        }
    }
    // Heap sort: moving the worst kept to the back each time leaves the
    // winners best first.
    for end in (1..len).rev() {
        out.swap(0, end);
        sift_down(cands, now_ns, &mut out[..end], 0);
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u64 = 60 * 1_000_000_000;

    fn cand(id: u32, priority: u8, created_ns: u64, runtime_ns: u64) -> Candidate {
        Candidate {
            id,
            priority,
            created_ns,
            runtime_ns,
            runnable: true,
            served_pass: 0,
        }
    }

    use super::super::rng::Rng;

    /// Indices chosen, as a sorted fixed array prefix, for set comparison.
    fn sorted(sel: &[usize]) -> [usize; 64] {
        let mut a = [usize::MAX; 64];
        a[..sel.len()].copy_from_slice(sel);
        a[..sel.len()].sort_unstable();
        a
    }

    #[test]
    fn eleven_contexts_the_third_priority_wins() {
        // Slot selection's worked example in 4-bit values: 5 at the third
        // priority (value 2), 6 at the fifth (value 4), L large.
        let mut c = [cand(0, 0, 0, 0); 11];
        for (i, x) in c.iter_mut().enumerate() {
            let level = if i % 2 == 0 && i < 10 { 2 } else { 4 };
            *x = cand(i as u32, level, i as u64 * MIN, (i as u64 + 1) * MIN);
        }
        let mut out = [0; 64];
        let n = select(&c, 60 * MIN, 64, &mut out);
        assert_eq!(n, 5);
        assert_eq!(sorted(&out[..n])[..5], [0, 2, 4, 6, 8]);
        assert_eq!(highest_runnable_level(&c), Some(2));
    }

    #[test]
    fn seven_contexts_the_second_priority_wins() {
        // Slot selection's worked example: 2 at the second priority (value
        // 1), 4 at the fourth (3), 1 at the tenth (9).
        let levels = [3, 9, 1, 3, 3, 1, 3];
        let mut c = [cand(0, 0, 0, 0); 7];
        for (i, x) in c.iter_mut().enumerate() {
            *x = cand(i as u32, levels[i], 0, MIN);
        }
        let mut out = [0; 8];
        let n = select(&c, 60 * MIN, 8, &mut out);
        assert_eq!(&out[..n], &[2, 5]);
        assert_eq!(highest_runnable_level(&c), Some(1));
    }

    #[test]
    fn three_contexts_at_the_sixth_priority_are_all_candidates() {
        // Slot selection's worked example: 3 contexts, all at the sixth
        // priority (value 5), beside two at lower levels; L = 4 >= a = 3.
        let levels = [5, 7, 5, 15, 5];
        let mut c = [cand(0, 0, 0, 0); 5];
        for (i, x) in c.iter_mut().enumerate() {
            *x = cand(i as u32, levels[i], i as u64 * MIN, (i as u64 + 1) * MIN);
        }
        let mut out = [0; 4];
        let n = select(&c, 60 * MIN, 4, &mut out);
        assert_eq!(highest_runnable_level(&c), Some(5));
        assert_eq!(n, 3);
        assert_eq!(sorted(&out[..n])[..3], [0, 2, 4]);
        // As the document has it: the three alone, no other level.
        let alone = [0, 2, 4].map(|i| c[i]);
        let n = select(&alone, 60 * MIN, 4, &mut out);
        assert_eq!(highest_runnable_level(&alone), Some(5));
        assert_eq!(n, 3);
        assert_eq!(sorted(&out[..n])[..3], [0, 1, 2]);
    }

    #[test]
    fn weights_of_the_example() {
        // Created 9:00, now 10:00: ran 3 min -> 20, ran 10 min -> 6.
        let (nine, ten) = (9 * 60 * MIN, 10 * 60 * MIN);
        let a = Weight::new(ten, nine, 3 * MIN);
        let b = Weight::new(ten, nine, 10 * MIN);
        assert_eq!(a.milli(), 20_000);
        assert_eq!(b.milli(), 6_000);
        assert!(a > b);
        let c = [cand(1, 0, nine, 10 * MIN), cand(2, 0, nine, 3 * MIN)];
        let mut out = [0; 1];
        assert_eq!(select(&c, ten, 1, &mut out), 1);
        assert_eq!(out[0], 1, "the context that ran less is favoured");
    }

    #[test]
    fn weight_is_an_exact_fraction() {
        assert_eq!(Weight::new(2, 0, 1), Weight::new(4, 0, 2));
        // M/(M-1) < (M-1)/(M-2): a difference far below f64 resolution.
        assert!(
            Weight::new(u64::MAX, 0, u64::MAX - 1) < Weight::new(u64::MAX - 1, 0, u64::MAX - 2)
        );
        assert!(Weight::new(u64::MAX, 0, u64::MAX) < Weight::new(u64::MAX, 0, u64::MAX - 1));
        assert_eq!(Weight::new(u64::MAX, 0, 1).milli(), u64::MAX);
        assert_eq!(
            Weight::new(0, 5, 1).lifetime_ns(),
            0,
            "future creation saturates"
        );
        assert_eq!(Weight::new(0, 5, 1).milli(), 0);
    }

    #[test]
    fn never_ran_is_largest_and_ties_go_to_the_older() {
        let inf_young = Weight::new(100, 90, 0);
        let inf_old = Weight::new(100, 0, 0);
        let big = Weight::new(u64::MAX, 0, 1);
        assert!(inf_young > big && inf_old > big);
        assert_eq!(inf_young, inf_old);
        assert_eq!(inf_young.milli(), u64::MAX);
        let c = [
            cand(7, 1, 0, 1),     // finite, very large weight
            cand(8, 1, 50, 0),    // never ran, younger
            cand(9, 1, 10, 0),    // never ran, older
            cand(3, 1, 50, 0),    // never ran, same age as 8, lower id
            cand(4, 1, 10, 1000), // finite, smaller
        ];
        let mut out = [0; 5];
        assert_eq!(select(&c, 100, 5, &mut out), 5);
        assert_eq!(out, [2, 3, 1, 0, 4]);
        assert_eq!(select(&c, 100, 2, &mut out), 2);
        assert_eq!(&out[..2], &[2, 3]);
    }

    #[test]
    fn equal_finite_weights_go_to_the_older_then_lower_id() {
        // All weight 2: lifetime twice the runtime.
        let c = [cand(5, 0, 40, 30), cand(2, 0, 40, 30), cand(1, 0, 0, 50)];
        let mut out = [0; 3];
        assert_eq!(select(&c, 100, 3, &mut out), 3);
        assert_eq!(out, [2, 1, 0]);
    }

    #[test]
    fn non_runnable_never_selected() {
        let mut c = [
            cand(0, 2, 0, 0),
            cand(1, 2, 0, 5),
            cand(2, 6, 0, 5),
            cand(3, 6, 0, 0),
        ];
        c[0].runnable = false;
        let mut out = [0; 4];
        assert_eq!(select(&c, 100, 4, &mut out), 1);
        assert_eq!(out[0], 1);
        // A level with nothing runnable does not hold the next level back.
        c[1].runnable = false;
        c[3].runnable = false;
        assert_eq!(highest_runnable_level(&c), Some(6));
        assert_eq!(select(&c, 100, 4, &mut out), 1);
        assert_eq!(out[0], 2);
        c[2].runnable = false;
        assert_eq!(highest_runnable_level(&c), None);
        assert_eq!(select(&c, 100, 4, &mut out), 0);
    }

    #[test]
    fn capacity_is_slots_and_buffer_bounded() {
        let c = [cand(0, 0, 0, 1), cand(1, 0, 0, 2), cand(2, 0, 0, 3)];
        let mut out = [9; 3];
        assert_eq!(select(&c, 100, 0, &mut out), 0);
        assert_eq!(select(&c, 100, 2, &mut out), 2);
        assert_eq!(&out[..2], &[0, 1]);
        assert_eq!(select(&c, 100, 8, &mut out[..1]), 1);
        assert_eq!(out[0], 0);
        assert_eq!(select(&[], 100, 8, &mut out), 0);
    }

    #[test]
    fn priorities_above_fifteen_count_as_fifteen() {
        let c = [cand(0, 200, 0, 1), cand(1, 15, 0, 2)];
        assert_eq!(highest_runnable_level(&c), Some(15));
        let mut out = [0; 2];
        assert_eq!(select(&c, 100, 2, &mut out), 2);
    }

    /// Level draining: when a level has more contexts than slots, its other
    /// contexts compete next, before any lower level, even one whose contexts
    /// never ran (infinite weights, larger than every other); only once the
    /// level has no runnable context does the next one compete.
    /// (Turns themselves are taken by `slots::reschedule`, whose test
    /// `drains_a_level_then_moves_to_the_next` runs them.)
    #[test]
    fn a_level_is_drained_before_the_next_competes() {
        let now = 1_000;
        // Level 1: contexts 0-3 had their turn (weight 2), 4-6 ran less
        // (weights 1000, 500 and 333). Level 2: 7-9 never ran.
        let mut c = [cand(0, 0, 0, 0); 10];
        for (i, x) in c.iter_mut().enumerate() {
            *x = match i {
                0..=3 => cand(i as u32, 1, 0, 500),
                4..=6 => cand(i as u32, 1, 0, i as u64 - 3),
                _ => cand(i as u32, 2, 0, 0),
            };
        }
        let mut out = [0; 4];
        // The rest of level 1 first, best first, then the best of those
        // that ran (equal weights: the lowest id).
        assert_eq!(select(&c, now, 4, &mut out), 4);
        assert_eq!(out, [4, 5, 6, 0]);
        // Level 1 idle but for one context: it alone is chosen, slots left
        // free rather than given to level 2.
        c[..7].iter_mut().for_each(|x| x.runnable = false);
        c[2].runnable = true;
        assert_eq!(select(&c, now, 4, &mut out), 1);
        assert_eq!(out[0], 2);
        // Level 1 idle: level 2 competes.
        c[2].runnable = false;
        assert_eq!(select(&c, now, 4, &mut out), 3);
        assert_eq!(out[..3], [7, 8, 9]);
    }

    /// Reference: sort every candidate by the documented key, take a prefix.
    fn reference(c: &[Candidate], now: u64, slots: usize, out: &mut [usize]) -> usize {
        let Some(level) = highest_runnable_level(c) else {
            return 0;
        };
        let mut idx = [0usize; 4096];
        let mut n = 0;
        for (i, x) in c.iter().enumerate() {
            if x.runnable && x.level() == level {
                idx[n] = i;
                n += 1;
            }
        }
        // Key: served pass ascending, infinite first, then lifetime/runtime
        // descending by cross-multiplication, then created, id, index
        // ascending.
        idx[..n].sort_unstable_by(|&a, &b| {
            let (x, y) = (&c[a], &c[b]);
            let (lx, ly) = (
                now.saturating_sub(x.created_ns),
                now.saturating_sub(y.created_ns),
            );
            let by_weight = match (x.runtime_ns, y.runtime_ns) {
                (0, 0) => Ordering::Equal,
                (0, _) => Ordering::Less,
                (_, 0) => Ordering::Greater,
                (rx, ry) => (ly as u128 * rx as u128).cmp(&(lx as u128 * ry as u128)),
            };
            x.served_pass
                .cmp(&y.served_pass)
                .then(by_weight)
                .then(x.created_ns.cmp(&y.created_ns))
                .then(x.id.cmp(&y.id))
                .then(a.cmp(&b))
        });
        let k = n.min(slots);
        out[..k].copy_from_slice(&idx[..k]);
        k
    }

    #[test]
    fn matches_sorting_reference_on_random_pools() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut c = [cand(0, 0, 0, 0); 4096];
        for case in 0..2000 {
            let n = if case % 100 == 0 {
                4096
            } else {
                rng.below(300) as usize
            };
            let levels = 1 + rng.below(4) as u8;
            let now = 1_000_000 + rng.below(1_000_000) as u64;
            for x in c[..n].iter_mut() {
                // Few distinct values so that weight, age and id ties occur.
                let created = rng.below(8) as u64 * 100_000;
                let runtime = match rng.below(4) {
                    0 => 0,
                    1 => rng.below(4) as u64 * 50_000,
                    _ => rng.below(1_000_000) as u64,
                };
                *x = Candidate {
                    id: rng.below(64),
                    priority: rng.below(levels as u32) as u8 * 3,
                    created_ns: created,
                    runtime_ns: runtime,
                    runnable: rng.below(5) != 0,
                    // Half the cases rank by weight alone.
                    served_pass: (case % 2) as u64 * u64::from(rng.below(3)),
                };
            }
            let slots = 1 + rng.below(64) as usize;
            let (mut got, mut want) = ([0; 64], [0; 64]);
            let g = select(&c[..n], now, slots, &mut got);
            let w = reference(&c[..n], now, slots, &mut want);
            assert_eq!(&got[..g], &want[..w], "case {case}: n {n} slots {slots}");
            // Strict priority: nothing below the highest runnable level.
            let top = highest_runnable_level(&c[..n]);
            assert!(got[..g]
                .iter()
                .all(|&i| c[i].runnable && Some(c[i].level()) == top));
        }
    }

    #[test]
    fn div_sat_matches_native_division() {
        let mut rng = Rng(42);
        let wide = |r: &mut Rng| {
            let bits = r.below(129);
            let v = ((r.next_u32() as u128) << 96)
                | ((r.next_u32() as u128) << 64)
                | ((r.next_u32() as u128) << 32)
                | r.next_u32() as u128;
            if bits == 128 {
                v
            } else {
                v & ((1u128 << bits) - 1)
            }
        };
        for _ in 0..20_000 {
            let (num, den) = (wide(&mut rng), wide(&mut rng));
            let want = num
                .checked_div(den)
                .map_or(u64::MAX, |q| q.min(u64::MAX as u128) as u64);
            assert_eq!(div_sat(num, den), want, "{num} / {den}");
        }
        assert_eq!(div_sat(u128::MAX, u128::MAX), 1);
        assert_eq!(div_sat(u128::MAX, 1), u64::MAX);
        assert_eq!(div_sat(u64::MAX as u128, 1), u64::MAX);
        assert_eq!(div_sat(0, 0), u64::MAX);
    }
}
