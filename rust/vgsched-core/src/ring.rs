// SPDX-License-Identifier: GPL-2.0

//! A first-in, first-out queue of fixed capacity over storage the caller
//! owns: the wave executor's lists of leases (the driver's `gpu/exec.rs`),
//! which move between preallocated rings on the fence-signalling path and
//! so may never allocate.
//!
//! [`Ring`] keeps only where the queue starts and how long it is; every
//! operation takes the slots, `&mut [Option<T>]`, whose length is the
//! capacity. A value that does not fit is handed back whole.

/// Where a queue lies in its slots.
///
/// # Invariants
///
/// For the slots it is used with (always the same, of length `n`):
/// `head < n` (or `head == 0` when `n == 0`) and `len <= n`; the `len`
/// slots from `head` on, wrapping, hold the queued values in order, the
/// others are `None`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ring {
    head: usize,
    len: usize,
}

impl Ring {
    /// An empty queue (its slots must all be `None`).
    pub const fn new() -> Self {
        Self { head: 0, len: 0 }
    }

    /// Values queued.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot `k` places after the head, of `n` slots.
    fn at(&self, k: usize, n: usize) -> usize {
        // No division: `head` and `k` are below `n`.
        match self.head + k {
            i if i >= n => i - n,
            i => i,
        }
    }

    /// Queues `v` last; hands it back if the slots are full.
    pub fn push_back<T>(&mut self, slots: &mut [Option<T>], v: T) -> Result<(), T> {
        let n = slots.len();
        if self.len >= n {
            return Err(v);
        }
        match slots.get_mut(self.at(self.len, n)) {
            Some(slot) => {
                *slot = Some(v);
                self.len += 1;
                Ok(())
            }
            None => Err(v),
        }
    }

    /// Queues `v` first; hands it back if the slots are full.
    pub fn push_front<T>(&mut self, slots: &mut [Option<T>], v: T) -> Result<(), T> {
        let n = slots.len();
        if self.len >= n {
            return Err(v);
        }
        let at = match self.head {
            0 => n - 1,
            h => h - 1,
        };
        match slots.get_mut(at) {
            Some(slot) => {
                *slot = Some(v);
                self.head = at;
                self.len += 1;
                Ok(())
            }
            None => Err(v),
        }
    }

    /// Takes the first value.
    pub fn pop_front<T>(&mut self, slots: &mut [Option<T>]) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let n = slots.len();
        let v = slots.get_mut(self.head)?.take();
        self.head = self.at(1, n);
        self.len -= 1;
        v
    }

    /// Takes the first value if `pick` picks it; `None` if the queue is
    /// empty or it is not picked (it stays first).
    pub fn pop_front_if<T>(
        &mut self,
        slots: &mut [Option<T>],
        pick: impl FnOnce(&T) -> bool,
    ) -> Option<T> {
        if self.len == 0 || !pick(slots.get(self.head)?.as_ref()?) {
            return None;
        }
        self.pop_front(slots)
    }

    /// Takes out the first value `pick` picks, keeping the others in
    /// order; `None` if none is picked.
    pub fn remove<T>(&mut self, slots: &mut [Option<T>], pick: impl Fn(&T) -> bool) -> Option<T> {
        let n = slots.len();
        let k = (0..self.len).find(|&k| {
            slots
                .get(self.at(k, n))
                .and_then(Option::as_ref)
                .is_some_and(&pick)
        })?;
        let v = slots.get_mut(self.at(k, n))?.take();
        // Those behind it move up one place.
        for j in k + 1..self.len {
            let behind = slots.get_mut(self.at(j, n)).and_then(Option::take);
            if let Some(slot) = slots.get_mut(self.at(j - 1, n)) {
                *slot = behind;
            }
        }
        self.len -= 1;
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(r: &mut Ring, slots: &mut [Option<u32>]) -> [Option<u32>; 6] {
        let mut out = [None; 6];
        for o in out.iter_mut() {
            *o = r.pop_front(slots);
        }
        out
    }

    #[test]
    fn first_in_first_out_round_the_end() {
        let mut slots = [None; 4];
        let mut r = Ring::new();
        for round in 0..5u32 {
            for v in 0..3 {
                assert_eq!(r.push_back(&mut slots, round * 10 + v), Ok(()));
            }
            assert_eq!(r.len(), 3);
            for v in 0..3 {
                assert_eq!(r.pop_front(&mut slots), Some(round * 10 + v));
            }
            assert!(r.is_empty());
        }
        assert!(slots.iter().all(Option::is_none));
    }

    #[test]
    fn pop_front_if_takes_only_a_picked_first() {
        let mut slots = [None; 3];
        let mut r = Ring::new();
        assert_eq!(r.pop_front_if(&mut slots, |_: &u32| true), None);
        // Round the end of the slots, so the head is not slot 0.
        assert_eq!(r.push_back(&mut slots, 9), Ok(()));
        assert_eq!(r.pop_front(&mut slots), Some(9));
        for v in [5, 1, 7] {
            assert_eq!(r.push_back(&mut slots, v), Ok(()));
        }
        // The first is 5: a pick of values below 3 takes nothing, not the 1
        // behind it, and leaves the queue as it was.
        assert_eq!(r.pop_front_if(&mut slots, |&v| v < 3), None);
        assert_eq!(r.len(), 3);
        assert_eq!(r.pop_front_if(&mut slots, |&v| v == 5), Some(5));
        assert_eq!(r.pop_front_if(&mut slots, |&v| v < 3), Some(1));
        assert_eq!(
            drain(&mut r, &mut slots),
            [Some(7), None, None, None, None, None]
        );
    }

    #[test]
    fn full_hands_the_value_back() {
        let mut slots = [None; 2];
        let mut r = Ring::new();
        assert_eq!(r.push_back(&mut slots, 1), Ok(()));
        assert_eq!(r.push_front(&mut slots, 0), Ok(()));
        assert_eq!(r.push_back(&mut slots, 2), Err(2));
        assert_eq!(r.push_front(&mut slots, 3), Err(3));
        assert_eq!(
            drain(&mut r, &mut slots),
            [Some(0), Some(1), None, None, None, None]
        );
        let mut none: [Option<u32>; 0] = [];
        let mut e = Ring::new();
        assert_eq!(e.push_back(&mut none, 1), Err(1));
        assert_eq!(e.push_front(&mut none, 1), Err(1));
        assert_eq!(e.pop_front(&mut none), None);
    }

    #[test]
    fn push_front_goes_first_across_the_start() {
        let mut slots = [None; 5];
        let mut r = Ring::new();
        assert_eq!(r.push_back(&mut slots, 2), Ok(()));
        assert_eq!(r.push_front(&mut slots, 1), Ok(()));
        assert_eq!(r.push_front(&mut slots, 0), Ok(()));
        assert_eq!(r.push_back(&mut slots, 3), Ok(()));
        assert_eq!(
            drain(&mut r, &mut slots),
            [Some(0), Some(1), Some(2), Some(3), None, None]
        );
    }

    #[test]
    fn remove_keeps_the_others_in_order_wrapped() {
        let mut slots = [None; 4];
        let mut r = Ring::new();
        // Move the head to the last slot, so the queue wraps.
        for v in 0..3 {
            r.push_back(&mut slots, v).unwrap();
            r.pop_front(&mut slots);
        }
        for v in 10..14 {
            r.push_back(&mut slots, v).unwrap();
        }
        assert_eq!(r.remove(&mut slots, |&v| v == 11), Some(11));
        assert_eq!(r.remove(&mut slots, |&v| v == 99), None);
        assert_eq!(r.len(), 3);
        assert_eq!(r.push_back(&mut slots, 14), Ok(()));
        assert_eq!(r.remove(&mut slots, |&v| v == 10), Some(10));
        assert_eq!(
            drain(&mut r, &mut slots),
            [Some(12), Some(13), Some(14), None, None, None]
        );
        assert!(slots.iter().all(Option::is_none));
    }
}
