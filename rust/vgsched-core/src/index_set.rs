// SPDX-License-Identifier: GPL-2.0

//! A set of small indices (positions in a list) in fixed storage: O(1)
//! insertion, removal and membership, and a walk over the members alone.
//!
//! The engine keeps the positions of the contexts that have something to
//! do in one ([`IndexSet`]), so that a step walks those rather than every
//! context: a context enters when it gets work and leaves, lazily, when a
//! walk finds it settled. Walks that must see the contexts in list order
//! get the members in ascending order ([`IndexSet::sort`] restores it after
//! insertions out of order; [`IndexSet::retain`] and
//! [`IndexSet::remove_shifted`] keep it).
//!
//! The storage is the caller's (two slices of `u32` of one length, the
//! capacity), so that it is allocated where the list grows and never where
//! the set is used.

use core::ops::DerefMut;

/// A position's mark in the slot table: not a member.
const ABSENT: u32 = u32::MAX;

/// A set of indices below its capacity, over storage `S`.
///
/// # Invariants
///
/// - `members[..len]` holds each member once, and `slots[m] == k` exactly
///   when `members[k] == m` for some `k < len`; every other element of
///   `slots` is [`ABSENT`];
/// - `len <= capacity()`;
/// - `sorted` implies `members[..len]` is strictly ascending.
pub struct IndexSet<S> {
    /// The members, densely: the first `len` elements.
    members: S,
    /// Per index, its position in `members`, or [`ABSENT`].
    slots: S,
    /// How many members there are.
    len: usize,
    /// The members are in ascending order.
    sorted: bool,
}

impl<S: DerefMut<Target = [u32]>> IndexSet<S> {
    /// An empty set over `members` and `slots`, with room for the indices
    /// below the shorter one's length (and below `u32::MAX`). Marks every
    /// element of `slots`: `O(capacity)`, once.
    pub fn new(members: S, mut slots: S) -> Self {
        slots.iter_mut().for_each(|s| *s = ABSENT);
        Self {
            members,
            slots,
            len: 0,
            sorted: true,
        }
    }

    /// The indices it can hold: those below this.
    pub fn capacity(&self) -> usize {
        self.members
            .len()
            .min(self.slots.len())
            .min(ABSENT as usize)
    }

    /// How many members it has.
    pub fn len(&self) -> usize {
        self.len
    }

    /// It has no member.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `i` is a member.
    pub fn contains(&self, i: usize) -> bool {
        self.slots.get(i).is_some_and(|&k| k != ABSENT)
    }

    /// Adds `i`; returns whether it is a member now (`false` only for an
    /// index at or past the capacity).
    pub fn insert(&mut self, i: usize) -> bool {
        if self.contains(i) {
            return true;
        }
        if i >= self.capacity() {
            return false;
        }
        let (Some(slot), Some(member)) = (self.slots.get_mut(i), self.members.get_mut(self.len))
        else {
            return false;
        };
        *slot = self.len as u32;
        *member = i as u32;
        if self.len > 0
            && self
                .members
                .get(self.len - 1)
                .is_some_and(|&l| l as usize > i)
        {
            self.sorted = false;
        }
        self.len += 1;
        true
    }

    /// Takes `i` out (the last member takes its place); returns whether it
    /// was a member.
    pub fn remove(&mut self, i: usize) -> bool {
        let Some(k) = self.slots.get(i).copied().filter(|&k| k != ABSENT) else {
            return false;
        };
        let last = self.len.saturating_sub(1);
        let moved = self.members().get(last).copied().unwrap_or(ABSENT);
        if k as usize != last {
            self.put(k as usize, moved);
            self.sorted = false;
        }
        self.mark(i, ABSENT);
        self.len = last;
        true
    }

    /// Takes every member out: `O(len)`.
    pub fn clear(&mut self) {
        for k in 0..self.len {
            let m = self.members.get(k).copied().unwrap_or(ABSENT);
            self.mark(m as usize, ABSENT);
        }
        self.len = 0;
        self.sorted = true;
    }

    /// Sets index `i`'s position mark (nothing for an index past the
    /// storage).
    fn mark(&mut self, i: usize, k: u32) {
        if let Some(slot) = self.slots.get_mut(i) {
            *slot = k;
        }
    }

    /// Puts member `m` at position `k`, its mark following.
    fn put(&mut self, k: usize, m: u32) {
        if let Some(member) = self.members.get_mut(k) {
            *member = m;
        }
        self.mark(m as usize, k as u32);
    }

    /// The members, in ascending order if [`Self::is_sorted`].
    pub fn members(&self) -> &[u32] {
        self.members.get(..self.len).unwrap_or(&[])
    }

    /// The members as indices, in the order of [`Self::members`].
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.members().iter().map(|&m| m as usize)
    }

    /// The `k`-th member, in the order of [`Self::members`].
    pub fn get(&self, k: usize) -> Option<usize> {
        self.members().get(k).map(|&m| m as usize)
    }

    /// The members are in ascending order.
    pub fn is_sorted(&self) -> bool {
        self.sorted
    }

    /// Puts the members in ascending order (nothing to do if they are):
    /// `O(len log len)`, in place.
    pub fn sort(&mut self) {
        if self.sorted {
            return;
        }
        if let Some(members) = self.members.get_mut(..self.len) {
            members.sort_unstable();
        }
        for k in 0..self.len {
            let m = self.members.get(k).copied().unwrap_or(ABSENT);
            self.mark(m as usize, k as u32);
        }
        self.sorted = true;
    }

    /// With the members sorted, those at `from` or above, ascending (in
    /// the order of [`Self::members`] otherwise, and all of them).
    pub fn iter_from(&self, from: usize) -> impl Iterator<Item = usize> + '_ {
        let start = match self.sorted {
            true => self.members().partition_point(|&m| (m as usize) < from),
            false => 0,
        };
        self.members()
            .get(start..)
            .unwrap_or(&[])
            .iter()
            .map(|&m| m as usize)
    }

    /// Keeps the members `keep` returns `true` for, calling it once for
    /// each, in the order of [`Self::members`], which the kept ones keep.
    pub fn retain(&mut self, keep: impl FnMut(usize) -> bool) {
        // One share over every member: it reaches the end.
        let _start_over = self.retain_some(0, self.len, keep);
    }

    /// [`Self::retain`] over at most `count` members, from the `k`-th on
    /// in the order of [`Self::members`]: a sweep that looks at a bounded
    /// share of the set per call. Returns where the next call goes on: the
    /// position of the first member not looked at, or 0 once the sweep
    /// reached the end (the next starts over). `O(count)`, and `O(len)`
    /// moves of indices when a member leaves (the ones behind it close
    /// up, in order).
    pub fn retain_some(
        &mut self,
        k: usize,
        count: usize,
        mut keep: impl FnMut(usize) -> bool,
    ) -> usize {
        let len = self.len;
        let start = k.min(len);
        let end = start.saturating_add(count).min(len);
        let mut kept = start;
        for j in start..end {
            let m = self.members.get(j).copied().unwrap_or(ABSENT);
            if keep(m as usize) {
                self.put(kept, m);
                kept += 1;
            } else {
                self.mark(m as usize, ABSENT);
            }
        }
        if kept != end {
            for j in end..len {
                let m = self.members.get(j).copied().unwrap_or(ABSENT);
                self.put(kept + (j - end), m);
            }
            self.len = len - (end - kept);
        }
        if end == len {
            0
        } else {
            kept
        }
    }

    /// The list the indices point into lost the records at `removed`
    /// (ascending positions in the list as it was), the others moving down
    /// over them in order: those members leave, and every other member
    /// moves down by the number removed below it. Order is kept.
    /// `O(len log removed.len())`.
    pub fn remove_shifted(&mut self, removed: &[usize]) {
        if removed.is_empty() {
            return;
        }
        // The old positions first: a member's new one may be another's old.
        for k in 0..self.len {
            let m = self.members.get(k).copied().unwrap_or(ABSENT);
            self.mark(m as usize, ABSENT);
        }
        let mut kept = 0;
        for k in 0..self.len {
            let m = self.members.get(k).copied().unwrap_or(ABSENT) as usize;
            let below = removed.partition_point(|&r| r < m);
            if removed.get(below) == Some(&m) {
                continue;
            }
            self.put(kept, (m - below) as u32);
            kept += 1;
        }
        self.len = kept;
    }

    /// Adds every member of `other` (in its order), into storage at least
    /// as large: for a list that grew. Returns whether all of them fit.
    pub fn insert_all<T: DerefMut<Target = [u32]>>(&mut self, other: &IndexSet<T>) -> bool {
        let mut all = true;
        for i in other.iter() {
            all &= self.insert(i);
        }
        all
    }
}

/// A replay of the engine's use on a random trace, for the host tests and
/// KUnit: a list of `work.len()` records (each `work[i]` units of work;
/// settled at 0), a set over `members` and `slots` of the positions that
/// may have work. Work is given (the record enters), taken (it stays until
/// a walk finds it settled), records are removed (the list closes up,
/// fresh settled records appended behind) and at every step the walk over
/// the set, which drops the settled members it meets, is compared with
/// the walk over every record: both must see the records with work, in
/// list order. Returns the first step at which they differ, if any.
pub fn replay_lazy_walks(
    seed: u64,
    steps: usize,
    work: &mut [u32],
    members: &mut [u32],
    slots: &mut [u32],
) -> Option<usize> {
    let n = work.len().min(members.len()).min(slots.len());
    if n == 0 {
        return None;
    }
    let work = &mut work[..n];
    work.fill(0);
    let mut set = IndexSet::new(members, slots);
    let mut rng = super::rng::Rng::new(seed);
    // The positions of a removal, at most 4 of them.
    let mut removed = [0usize; 4];
    for step in 0..steps {
        let i = rng.below(n as u32) as usize;
        match rng.below(8) {
            0..=2 => {
                if let Some(w) = work.get_mut(i) {
                    *w = w.saturating_add(1 + rng.below(3));
                }
                if !set.insert(i) {
                    return Some(step);
                }
            }
            3..=5 => {
                if let Some(w) = work.get_mut(i) {
                    *w = w.saturating_sub(1 + rng.below(3));
                }
            }
            6 => {
                // Up to 4 records leave, ascending; the rest close up.
                let mut count = 0;
                for r in 0..n {
                    if count < removed.len() && rng.below(n as u32) < 2 {
                        removed[count] = r;
                        count += 1;
                    }
                }
                let gone = &removed[..count];
                let mut kept = 0;
                for r in 0..n {
                    if gone.binary_search(&r).is_err() {
                        work[kept] = work[r];
                        kept += 1;
                    }
                }
                work[kept..].fill(0);
                set.remove_shifted(gone);
            }
            _ => set.sort(),
        }
        set.sort();
        // The walk over the set, leaving the settled, against the full
        // one.
        let mut full = (0..n).filter(|&r| work[r] != 0);
        let mut same = true;
        set.retain(|m| {
            let busy = work.get(m).is_some_and(|&w| w != 0);
            if busy {
                same &= full.next() == Some(m);
            }
            busy
        });
        if !same || full.next().is_some() {
            return Some(step);
        }
        // Every record outside the set is settled.
        if (0..n).any(|r| work[r] != 0 && !set.contains(r)) {
            return Some(step);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::{
        vec,
        vec::Vec, //
    };

    use super::super::rng::Rng;
    use super::*;

    fn set(n: usize) -> IndexSet<Vec<u32>> {
        IndexSet::new(vec![0; n], vec![0; n])
    }

    /// Checks the invariants against `model` (a membership per index).
    fn check(s: &IndexSet<Vec<u32>>, model: &[bool]) {
        assert_eq!(s.len(), model.iter().filter(|&&m| m).count());
        for (i, &m) in model.iter().enumerate() {
            assert_eq!(s.contains(i), m, "index {i}");
        }
        for (k, &m) in s.members().iter().enumerate() {
            assert_eq!(s.slots[m as usize] as usize, k);
        }
        if s.is_sorted() {
            assert!(s.members().windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn insert_remove_contains() {
        let mut s = set(8);
        assert!(s.is_empty());
        assert!(s.insert(5));
        assert!(s.insert(2));
        assert!(s.insert(5));
        assert!(!s.insert(8));
        assert_eq!(s.len(), 2);
        assert!(!s.is_sorted());
        s.sort();
        assert_eq!(s.members(), &[2, 5]);
        assert!(s.remove(2));
        assert!(!s.remove(2));
        assert!(!s.remove(100));
        assert_eq!(s.members(), &[5]);
        s.clear();
        assert!(s.is_empty());
        assert!(!s.contains(5));
    }

    #[test]
    fn appended_in_order_stays_sorted() {
        let mut s = set(16);
        for i in [1, 3, 4, 9] {
            s.insert(i);
        }
        assert!(s.is_sorted());
        // Removing the last member moves nothing.
        s.remove(9);
        assert!(s.is_sorted());
        s.remove(1);
        assert!(!s.is_sorted());
        s.sort();
        assert_eq!(s.members(), &[3, 4]);
        assert_eq!(s.iter_from(4).collect::<Vec<_>>(), [4]);
        assert_eq!(s.iter_from(0).collect::<Vec<_>>(), [3, 4]);
        assert_eq!(s.iter_from(5).count(), 0);
    }

    #[test]
    fn storage_of_unequal_lengths() {
        let mut s = IndexSet::new(vec![0u32; 3], vec![0u32; 10]);
        assert_eq!(s.capacity(), 3);
        assert!(s.insert(2));
        assert!(!s.insert(3));
        let mut slice_members = [0u32; 4];
        let mut slice_slots = [7u32; 4];
        let mut t = IndexSet::new(&mut slice_members[..], &mut slice_slots[..]);
        assert!(!t.contains(0));
        assert!(t.insert(3));
        assert!(t.contains(3));
    }

    #[test]
    fn shifted_removal_keeps_order_and_moves_members_down() {
        let mut s = set(16);
        for i in [0, 2, 3, 7, 8, 12] {
            s.insert(i);
        }
        // Records 2, 5 and 8 leave the list: 3 -> 2, 7 -> 5, 12 -> 9.
        s.remove_shifted(&[2, 5, 8]);
        assert_eq!(s.members(), &[0, 2, 5, 9]);
        assert!(s.is_sorted());
        let mut model = [false; 16];
        for i in [0, 2, 5, 9] {
            model[i] = true;
        }
        check(&s, &model);
    }

    #[test]
    fn a_sweep_in_shares_keeps_what_one_retain_keeps() {
        let mut rng = Rng::new(7);
        for round in 0..200 {
            let n = 1 + round % 97;
            let (mut s, mut t) = (set(n), set(n));
            let mut model = vec![false; n];
            for (i, m) in model.iter_mut().enumerate() {
                if rng.below(3) != 0 {
                    s.insert(i);
                    t.insert(i);
                    *m = true;
                }
            }
            let gone: Vec<bool> = (0..n).map(|_| rng.below(4) == 0).collect();
            t.retain(|i| !gone[i]);
            // Shares of 1 to 9 members until the sweep says it is through.
            // (A share whose members all leave returns 0 too: the test
            // counts what was looked at.)
            let share = 1 + round % 9;
            let (mut k, len) = (0, s.len());
            let mut seen = Vec::new();
            while seen.len() < len {
                k = s.retain_some(k, share, |i| {
                    seen.push(i);
                    !gone[i]
                });
            }
            assert_eq!(k, 0);
            for (i, m) in model.iter_mut().enumerate() {
                *m &= !gone[i];
            }
            assert_eq!(s.members(), t.members());
            assert!(s.is_sorted());
            check(&s, &model);
            // Each member was looked at once, in order.
            assert!(seen.windows(2).all(|w| w[0] < w[1]));
        }
        // A start past the end looks at nothing and starts over.
        let mut s = set(4);
        s.insert(1);
        assert_eq!(s.retain_some(9, 4, |_| false), 0);
        assert_eq!(s.members(), &[1]);
    }

    #[test]
    fn a_larger_set_takes_every_member() {
        let mut s = set(4);
        s.insert(3);
        s.insert(1);
        let mut t = set(8);
        assert!(t.insert_all(&s));
        t.sort();
        assert_eq!(t.members(), &[1, 3]);
        let mut small = set(2);
        assert!(!small.insert_all(&s));
    }

    #[test]
    fn lazy_set_walks_see_what_full_walks_see() {
        for seed in 1..40 {
            let n = 1 + (seed as usize * 7) % 300;
            let (mut work, mut members, mut slots) = (vec![0; n], vec![0; n], vec![0; n]);
            assert_eq!(
                replay_lazy_walks(seed, 3_000, &mut work, &mut members, &mut slots),
                None,
                "seed {seed}"
            );
        }
    }

    /// Random operations against a membership array, including removals
    /// of list records (the indices behind them shifting).
    #[test]
    fn random_operations_match_a_model() {
        let mut rng = Rng::new(11);
        for round in 0..50 {
            let n = 1 + rng.below(200) as usize;
            let mut s = set(n);
            let mut model = vec![false; n];
            for _ in 0..2_000 {
                let i = rng.below(n as u32) as usize;
                match rng.below(6) {
                    0 | 1 => {
                        assert!(s.insert(i));
                        model[i] = true;
                    }
                    2 => assert_eq!(s.remove(i), core::mem::replace(&mut model[i], false)),
                    3 => {
                        let odd = round % 2 == 1;
                        s.retain(|m| (m % 2 == 1) != odd || m < i);
                        for (m, x) in model.iter_mut().enumerate() {
                            *x &= (m % 2 == 1) != odd || m < i;
                        }
                    }
                    4 => {
                        s.sort();
                        let want: Vec<u32> = (0..n as u32).filter(|&m| model[m as usize]).collect();
                        assert_eq!(s.members(), &want[..]);
                    }
                    _ => {
                        // Some records leave; the list keeps its length in
                        // this model (new records are appended at the
                        // end, unmarked).
                        let mut removed: Vec<usize> =
                            (0..n).filter(|_| rng.below(8) == 0).collect();
                        removed.dedup();
                        s.remove_shifted(&removed);
                        let kept: Vec<bool> = model
                            .iter()
                            .enumerate()
                            .filter(|(m, _)| removed.binary_search(m).is_err())
                            .map(|(_, &x)| x)
                            .collect();
                        model.fill(false);
                        model[..kept.len()].copy_from_slice(&kept);
                    }
                }
                check(&s, &model);
            }
        }
    }
}
