// SPDX-License-Identifier: GPL-2.0

//! Slot selection's ranking kept in order as events change it: a kinetic
//! tournament over the waiting contexts.
//!
//! [`super::pool::select`] looks at every context at every decision. Here
//! the ranking is kept in a tournament tree (a binary tree over a fixed
//! array of leaves, one per context; each inner node holds the better of
//! its children's winners) and only what an event changes is recomputed:
//! inserting, removing or re-keying a context (it became runnable, went
//! idle, was loaded or evicted, ran for a slice, changed priority) replays
//! the `log n` matches on its path to the root.
//!
//! What makes this possible although weights change with time: a waiting
//! context's weight `(t − created) ÷ runtime` is a line in `t` (its runtime
//! is fixed while it waits), so two waiting contexts swap order at most
//! once. Every match records its *certificate*: the first time at which
//! its loser would win. [`Kinetic::advance`] replays exactly the matches
//! whose certificate has failed by `now` (each node also keeps the earliest
//! failure in its subtree, so a search touches only failed paths), which
//! keeps every winner exact at `now`. Between two events of one context at
//! most `n − 1` certificate failures can involve it, and the usual bound of
//! kinetic tournaments applies: `O(n log n)` failures over any span in which
//! no context is re-keyed, each costing `O(log n)`.
//!
//! The order is exactly [`super::pool::select`]'s: highest level first
//! (0 is highest), then larger weight (a context that never ran is
//! infinite), then older, then lower id, then lower index. Comparisons are
//! exact (`u128` products). A certificate time is never late: when its
//! computation would overflow or lose precision it comes out early, which
//! only costs a replay.
//!
//! How a caller drives it: one leaf per context index, `capacity` at least
//! the number of contexts. [`Kinetic::set`] with `Some(candidate)` when a
//! context waits for a slot with work (runnable, not resident) or when a
//! waiting context's runtime, creation basis or priority changed; `None`
//! when it is loaded, goes idle or is destroyed. [`Kinetic::best`] and
//! [`Kinetic::best_k`] answer the decision at `now`, which must not go
//! backwards.

use super::pool::Candidate;

/// No leaf: an empty subtree's winner.
const NONE: u32 = u32::MAX;

/// One node of the tree: the winner of its subtree and its certificates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    /// Leaf index of the subtree's winner, or [`NONE`].
    winner: u32,
    /// When this node's match will change its outcome (`u64::MAX`: never).
    fail_at: u64,
    /// The earliest `fail_at` in this subtree.
    min_fail: u64,
    /// The winner's candidate (meaningless without a winner): a match reads
    /// its two children only, not the leaves they point to.
    key: Candidate,
}

impl Node {
    /// An empty node.
    pub const EMPTY: Self = Self {
        winner: NONE,
        fail_at: u64::MAX,
        min_fail: u64::MAX,
        key: Candidate {
            id: 0,
            priority: 0,
            created_ns: 0,
            runtime_ns: 0,
            runnable: false,
            served_pass: 0,
        },
    };
}

/// The kinetic tournament over caller-provided storage.
///
/// # Invariants
///
/// `nodes.len() == 2 * leaves.len()` and `leaves.len()` is a power of two;
/// node `i >= leaves.len()` stands for leaf `i - leaves.len()`; every inner
/// node's winner is the better of its children's winners at any time
/// before its `fail_at`, and `min_fail` is the minimum of its own and its
/// children's.
pub struct Kinetic<'a> {
    leaves: &'a mut [Option<Candidate>],
    nodes: &'a mut [Node],
    now: u64,
}

/// One match at `now`: whether leaf `a` ranks ahead of leaf `b`, as
/// `pool::select` ranks candidates (higher level, earlier served pass,
/// larger weight, older, lower id, lower index), and the first time after
/// `now` at which the outcome changes (`u64::MAX`: never). Only two finite
/// weights of one level and pass can swap: a weight `(t − created) ÷
/// runtime` is a line in `t`. The weights' cross products serve both
/// answers.
fn play(ca: &Candidate, a: u32, cb: &Candidate, b: u32, now: u64) -> (bool, u64) {
    let (rank_a, rank_b) = ((ca.level(), ca.served_pass), (cb.level(), cb.served_pass));
    if rank_a != rank_b {
        // Levels and passes do not change with time.
        return (rank_a < rank_b, u64::MAX);
    }
    // Older, lower id, lower index first: fixed tie-breaks.
    let a_first = (ca.created_ns, ca.id, a) < (cb.created_ns, cb.id, b);
    let (ra, rb) = (ca.runtime_ns, cb.runtime_ns);
    match (ra, rb) {
        // Infinite weights rank above every finite one, equal among
        // themselves: none of it changes with time.
        (0, 0) => return (a_first, u64::MAX),
        (0, _) => return (true, u64::MAX),
        (_, 0) => return (false, u64::MAX),
        _ => {}
    }
    // a's weight (t − ca)/ra against b's (t − cb)/rb, as exact fractions:
    // each product of two `u64`s fits in `u128`.
    let la = u128::from(now.saturating_sub(ca.created_ns));
    let lb = u128::from(now.saturating_sub(cb.created_ns));
    let (x, y) = (la * u128::from(rb), lb * u128::from(ra));
    let a_wins = x > y || (x == y && a_first);
    // The winner's lead falls by the runtimes' difference per ns; it can
    // only fall if the loser's weight grows faster (a smaller runtime).
    let (lead, w_runtime, l_runtime, l_first) = match a_wins {
        true => (x - y, ra, rb, !a_first),
        false => (y - x, rb, ra, a_first),
    };
    if w_runtime <= l_runtime {
        return (a_wins, u64::MAX);
    }
    let slope = u128::from(w_runtime - l_runtime);
    // Ties go by the tie-breaks: a loser that wins them is ahead once the
    // lead is 0, another once it is negative.
    let steps = match l_first {
        true => quotient_at_most(lead, slope),
        false => quotient_at_most(lead, slope).saturating_add(1),
    };
    (a_wins, now.saturating_add(steps.max(1)))
}

/// `num ÷ den` rounded down, or less: an early certificate only costs a
/// replay, and one `u64` division is far cheaper than an exact `u128` one
/// ([`div_sat`] takes up to 128 rounds). `den > 0`.
fn quotient_at_most(num: u128, den: u128) -> u64 {
    if let (Ok(n), Ok(d)) = (u64::try_from(num), u64::try_from(den)) {
        return n / d.max(1);
    }
    // Scale both down until they fit: the numerator rounded down, the
    // denominator up, so the quotient can only come out smaller.
    let shift = 128 - num.max(den).leading_zeros().min(64);
    let n = (num >> shift) as u64;
    let d = (den >> shift) as u64 + 1;
    n / d
}

impl<'a> Kinetic<'a> {
    /// An empty tournament at time `now` over `leaves` (a power of two
    /// long, at least the number of contexts) and `nodes` (twice as long);
    /// `None` if the sizes do not fit.
    pub fn new(
        leaves: &'a mut [Option<Candidate>],
        nodes: &'a mut [Node],
        now: u64,
    ) -> Option<Self> {
        let k = Self::attach(leaves, nodes, now)?;
        k.leaves.iter_mut().for_each(|l| *l = None);
        k.nodes.iter_mut().for_each(|n| *n = Node::EMPTY);
        Some(k)
    }

    /// The tournament kept in `leaves` and `nodes` by an earlier
    /// [`Self::new`], at time `now` (not before the time it was last used
    /// at); `None` if the sizes do not fit.
    pub fn attach(
        leaves: &'a mut [Option<Candidate>],
        nodes: &'a mut [Node],
        now: u64,
    ) -> Option<Self> {
        if !leaves.len().is_power_of_two() || nodes.len() != 2 * leaves.len() {
            return None;
        }
        Some(Self { leaves, nodes, now })
    }

    /// What leaf `index` holds.
    pub fn leaf(&self, index: usize) -> Option<Candidate> {
        self.leaves.get(index).copied().flatten()
    }

    /// How many contexts it can hold.
    pub fn capacity(&self) -> usize {
        self.leaves.len()
    }

    /// Replays match `i` (an inner node) at the current time.
    fn replay(&mut self, i: usize) {
        let (l, r) = (2 * i, 2 * i + 1);
        // The children by reference: only the winner's key is copied.
        let (Some(nl), Some(nr)) = (self.nodes.get(l), self.nodes.get(r)) else {
            return;
        };
        let (from, fail_at) = match (nl.winner != NONE, nr.winner != NONE) {
            (false, false) | (true, false) => (nl, u64::MAX),
            (false, true) => (nr, u64::MAX),
            (true, true) => match play(&nl.key, nl.winner, &nr.key, nr.winner, self.now) {
                (true, fail_at) => (nl, fail_at),
                (false, fail_at) => (nr, fail_at),
            },
        };
        let (winner, key) = (from.winner, from.key);
        let min_fail = fail_at.min(nl.min_fail).min(nr.min_fail);
        if let Some(n) = self.nodes.get_mut(i) {
            n.winner = winner;
            n.key = key;
            n.fail_at = fail_at;
            n.min_fail = min_fail;
        }
    }

    /// Replays the matches on the path from leaf `index` to the root, up
    /// to the first whose outcome and certificates did not change and that
    /// leaf `index` does not win (the matches above it then have the same
    /// inputs).
    fn replay_path(&mut self, index: usize) {
        let mut i = (self.leaves.len() + index) / 2;
        // A node's key is its winner's: it changes only with the winner, or
        // with the key of leaf `index` when that leaf wins.
        let outcome = |n: &Node| (n.winner, n.fail_at, n.min_fail);
        while i >= 1 {
            let before = self.nodes.get(i).map(outcome);
            self.replay(i);
            let after = self.nodes.get(i).map(outcome);
            // Unchanged, and not won by the leaf whose key changed.
            if after == before && after.is_some_and(|(w, ..)| w as usize != index) {
                return;
            }
            i /= 2;
        }
    }

    /// Puts `cand` in leaf `index` without replaying any match: for
    /// filling a tournament made by [`Self::new`] before one
    /// [`Self::rebuild`]. Ignored past the capacity.
    pub fn place(&mut self, index: usize, cand: Candidate) {
        let cap = self.leaves.len();
        let Some(leaf) = self.leaves.get_mut(index) else {
            return;
        };
        *leaf = Some(cand);
        if let Some(n) = self.nodes.get_mut(cap + index) {
            n.winner = index as u32;
            n.key = cand;
            n.fail_at = u64::MAX;
            n.min_fail = u64::MAX;
        }
    }

    /// Replays every match once, bottom up, at the current time: the tree
    /// over its leaves as they are, in `O(capacity)` (instead of one path
    /// per leaf set).
    pub fn rebuild(&mut self) {
        for i in (1..self.leaves.len()).rev() {
            self.replay(i);
        }
    }

    /// Sets leaf `index` (insert, re-key or, with `None`, remove) at time
    /// `now`. Ignored past the capacity.
    pub fn set(&mut self, index: usize, cand: Option<Candidate>, now: u64) {
        self.advance(now);
        let cap = self.leaves.len();
        let Some(leaf) = self.leaves.get_mut(index) else {
            return;
        };
        *leaf = cand;
        if let Some(n) = self.nodes.get_mut(cap + index) {
            n.winner = if cand.is_some() { index as u32 } else { NONE };
            if let Some(c) = cand {
                n.key = c;
            }
        }
        self.replay_path(index);
    }

    /// Brings every match up to `now` (which never goes backwards): the
    /// matches whose certificate failed are replayed, deepest first.
    pub fn advance(&mut self, now: u64) {
        self.now = self.now.max(now);
        self.fix(1);
    }

    /// Replays the failed matches below node `i`, then `i` itself.
    fn fix(&mut self, i: usize) {
        let Some(min_fail) = self.nodes.get(i).map(|n| n.min_fail) else {
            return;
        };
        if min_fail > self.now || i >= self.leaves.len() {
            return;
        }
        self.fix(2 * i);
        self.fix(2 * i + 1);
        self.replay(i);
    }

    /// The best waiting context at `now`: highest level, largest weight.
    pub fn best(&mut self, now: u64) -> Option<usize> {
        self.advance(now);
        let w = self.nodes.get(1)?.winner;
        (w != NONE).then_some(w as usize)
    }

    /// Writes to `out` the best `k` (at most [`MAX_K`]) waiting contexts
    /// of the highest level with any, best first (what `pool::select`
    /// chooses for `k` free slots), and returns how many. `O(k log n)`
    /// after [`Self::advance`].
    pub fn best_k(&mut self, now: u64, k: usize, out: &mut [usize]) -> usize {
        let k = k.min(out.len()).min(MAX_K);
        if k == 1 {
            // One slot: the root's winner, nothing to take out and back.
            let Some(best) = self.best(now) else {
                return 0;
            };
            out[0] = best;
            return 1;
        }
        let mut parked = [None; MAX_K];
        let mut taken = 0;
        let mut level = None;
        while taken < k {
            let Some(i) = self.best(now) else {
                break;
            };
            let Some(c) = self.leaves.get(i).copied().flatten() else {
                break;
            };
            if level.is_some_and(|l| l != c.level()) {
                break;
            }
            level = Some(c.level());
            out[taken] = i;
            parked[taken] = Some(c);
            taken += 1;
            // Out of the tournament while the next ones are found.
            self.set(i, None, now);
        }
        for (&i, c) in out.iter().zip(parked).take(taken) {
            self.set(i, c, now);
        }
        taken
    }
}

/// Most contexts [`Kinetic::best_k`] returns: the most hardware slots.
pub const MAX_K: usize = 64;

#[cfg(test)]
mod tests {
    use super::super::pool::select;
    use super::super::rng::Rng;
    use super::*;

    use core::cmp::Ordering;

    // The match's two answers written out one at a time: the
    // specification the fused `play` is checked against.

    /// Whether leaf `a` ranks ahead of leaf `b` at `now`, as `pool::select`
    /// ranks candidates.
    fn ahead(ca: &Candidate, a: u32, cb: &Candidate, b: u32, now: u64) -> bool {
        cb.level()
            .cmp(&ca.level())
            .then_with(|| cb.served_pass.cmp(&ca.served_pass))
            .then_with(|| ca.weight(now).cmp(&cb.weight(now)))
            .then_with(|| cb.created_ns.cmp(&ca.created_ns))
            .then_with(|| cb.id.cmp(&ca.id))
            .then_with(|| b.cmp(&a))
            == Ordering::Greater
    }

    /// The first time after `now` at which `b` ranks ahead of `a`, given that
    /// `a` ranks ahead of `b` at `now`; `u64::MAX` if never.
    fn failure_time(ca: &Candidate, a: u32, cb: &Candidate, b: u32, now: u64) -> u64 {
        // Levels, passes, infinite weights and the tie-breaks do not change
        // with time: only two finite weights of one level and pass can swap.
        let fixed = ca.level() != cb.level() || ca.served_pass != cb.served_pass;
        if fixed || ca.runtime_ns == 0 || cb.runtime_ns == 0 {
            return u64::MAX;
        }
        let (ra, rb) = (u128::from(ca.runtime_ns), u128::from(cb.runtime_ns));
        // a's weight grows by 1/ra per ns, b's by 1/rb: b catches up only if
        // it grows faster, i.e. ra > rb.
        if ra <= rb {
            return u64::MAX;
        }
        // f(t) = (t − ca)·rb − (t − cb)·ra >= 0 now (weights as fractions);
        // it falls by (ra − rb) per ns.
        let la = u128::from(now.saturating_sub(ca.created_ns));
        let lb = u128::from(now.saturating_sub(cb.created_ns));
        let (Some(x), Some(y)) = (la.checked_mul(rb), lb.checked_mul(ra)) else {
            return now.saturating_add(1);
        };
        let Some(f0) = x.checked_sub(y) else {
            // a is ahead on a tie-break only if f0 == 0; otherwise cannot be.
            return now.saturating_add(1);
        };
        let slope = ra - rb;
        // Ties at f == 0 go by the fixed tie-breaks: older, lower id, lower
        // index first.
        let b_wins_ties = (cb.created_ns, cb.id, b) < (ca.created_ns, ca.id, a);
        let steps = if b_wins_ties {
            // b ahead once f <= 0: after ceil(f0 / slope) ns.
            quotient_at_most(f0, slope)
        } else {
            // b ahead once f < 0: after floor(f0 / slope) + 1 ns.
            quotient_at_most(f0, slope).saturating_add(1)
        };
        now.saturating_add(steps.max(1))
    }

    const MS: u64 = 1_000_000;
    const MIN: u64 = 60_000 * MS;

    /// A tournament over `N` leaves kept in test-owned arrays.
    struct Fixture<const N: usize> {
        leaves: [Option<Candidate>; N],
        nodes: [Node; 256],
    }

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

    #[test]
    fn the_documents_weights_order_the_contexts() {
        let mut f = Fixture::<8> {
            leaves: [None; 8],
            nodes: [Node::EMPTY; 256],
        };
        let mut k = Kinetic::new(&mut f.leaves, &mut f.nodes[..16], 0).unwrap();
        // Created 9:00, now 10:00; ran 3, 10, 2, 6 and 1 minutes: weights
        // 20, 6, 30, 10, 60.
        let (nine, ten) = (9 * 60 * MIN, 10 * 60 * MIN);
        for (i, ran) in [3, 10, 2, 6, 1].into_iter().enumerate() {
            k.set(i, Some(cand(i as u32, 7, nine, ran * MIN)), ten);
        }
        let mut out = [0; 8];
        assert_eq!(k.best_k(ten, 2, &mut out), 2);
        assert_eq!(out[..2], [4, 2]);
        assert_eq!(k.best_k(ten, 8, &mut out), 5);
        assert_eq!(out[..5], [4, 2, 0, 3, 1]);
        // A higher level alone is chosen, however light.
        k.set(6, Some(cand(6, 3, nine, 59 * MIN)), ten);
        assert_eq!(k.best_k(ten, 8, &mut out), 1);
        assert_eq!(out[0], 6);
        k.set(6, None, ten);
        assert_eq!(k.best(ten), Some(4));
    }

    #[test]
    fn two_lines_swap_once_at_the_computed_time() {
        let mut f = Fixture::<2> {
            leaves: [None; 2],
            nodes: [Node::EMPTY; 256],
        };
        let mut k = Kinetic::new(&mut f.leaves, &mut f.nodes[..4], 0).unwrap();
        // a: lifetime 30, runtime 10 (weight 3, grows by 1/10 per ms);
        // b: lifetime 20, runtime 2 at 0... b starts ahead (weight 10) —
        // pick a case where a leads and b catches up: a = 40/10, b = 6/2.
        let now = 100 * MS;
        k.set(0, Some(cand(0, 5, now - 40 * MS, 10 * MS)), now);
        k.set(1, Some(cand(1, 5, now - 6 * MS, 2 * MS)), now);
        assert_eq!(k.best(now), Some(0));
        // (40 + x) / 10 = (6 + x) / 2 at x = 2.5 ms; ties go to the older (a).
        assert_eq!(k.best(now + 2_500_000), Some(0));
        assert_eq!(k.best(now + 2_500_001), Some(1));
        assert_eq!(k.best(now + 60 * MIN), Some(1));
    }

    /// Replays a random trace of events through the tournament and through
    /// `pool::select`, which must choose the same contexts in the same
    /// order at every decision.
    fn replay_trace(
        seed: u64,
        contexts: usize,
        events: usize,
        leaves: &mut [Option<Candidate>],
        nodes: &mut [Node],
    ) {
        let mut rng = Rng::new(seed);
        let mut now = 10 * MIN;
        let mut k = Kinetic::new(leaves, nodes, now).unwrap();
        let mut all: [Candidate; 512] = [cand(0, 0, 0, 0); 512];
        for (i, c) in all.iter_mut().enumerate().take(contexts) {
            *c = cand(0, 0, 0, 0);
            c.runnable = false;
            c.id = i as u32 / 2; // duplicate ids exercise the index tie-break
        }
        let (mut out_new, mut out_old) = ([0usize; 64], [0usize; 64]);
        for _ in 0..events {
            let i = rng.below_u64(contexts as u64) as usize;
            match rng.below(10) {
                // Arrives or wakes with some history (or none).
                0..=2 => {
                    let c = &mut all[i];
                    c.runnable = true;
                    c.priority = 4 + rng.below(3) as u8;
                    c.created_ns = now - rng.below_u64(10 * MIN);
                    c.runtime_ns = match rng.below(4) {
                        0 => 0,
                        _ => rng.below_u64(now - c.created_ns + 1),
                    };
                    k.set(i, Some(*c), now);
                }
                // Loaded, idle or gone.
                3 => {
                    all[i].runnable = false;
                    k.set(i, None, now);
                }
                // Ran for a while (a slice) and waits again.
                4..=5 if all[i].runnable => {
                    all[i].runtime_ns += 1 + rng.below_u64(20 * MS);
                    k.set(i, Some(all[i]), now);
                }
                // Priority change, or it had its turn in a pass.
                6 if all[i].runnable => {
                    match rng.below(2) {
                        0 => all[i].priority = 4 + rng.below(3) as u8,
                        _ => all[i].served_pass = u64::from(rng.below(3)),
                    }
                    k.set(i, Some(all[i]), now);
                }
                // Time passes, then a decision for 1..=8 free slots.
                _ => {
                    now += rng.below_u64(50 * MS);
                    let slots = 1 + rng.below(8) as usize;
                    let a = k.best_k(now, slots, &mut out_new);
                    let b = select(&all[..contexts], now, slots, &mut out_old);
                    assert_eq!(out_new[..a], out_old[..b], "seed {seed} at {now}");
                }
            }
        }
    }

    #[test]
    fn identical_choices_to_the_linear_selection_on_random_traces() {
        let mut leaves = [None; 512];
        let mut nodes = [Node::EMPTY; 1024];
        for seed in 1..=40 {
            let n: usize = [3, 17, 64, 200, 512][seed as usize % 5];
            let cap = n.next_power_of_two();
            replay_trace(seed, n, 4000, &mut leaves[..cap], &mut nodes[..2 * cap]);
        }
    }

    /// The fused match gives what [`ahead`] and [`failure_time`] give,
    /// on random pairs with ties, infinite weights and shared creation
    /// times.
    #[test]
    fn play_is_ahead_and_failure_time_at_once() {
        let mut rng = Rng::new(0x91a7);
        for _ in 0..200_000 {
            let now = 10 * MIN + rng.below_u64(MIN);
            let c = |rng: &mut Rng| {
                let id = rng.below(3);
                let created = now - rng.below_u64(8) * (MIN / 4);
                let runtime = match rng.below(4) {
                    0 => 0,
                    _ => 1 + rng.below_u64(8) * (MS / 2),
                };
                let mut c = cand(id, 4 + rng.below(2) as u8, created, runtime);
                c.served_pass = u64::from(rng.below(4) / 3);
                c
            };
            let (ca, cb) = (c(&mut rng), c(&mut rng));
            let (a, b) = (rng.below(4), 4 + rng.below(4));
            let a_wins = ahead(&ca, a, &cb, b, now);
            let fail = match a_wins {
                true => failure_time(&ca, a, &cb, b, now),
                false => failure_time(&cb, b, &ca, a, now),
            };
            assert_eq!(play(&ca, a, &cb, b, now), (a_wins, fail), "{ca:?} {cb:?}");
        }
    }
}
