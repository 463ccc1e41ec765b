// SPDX-License-Identifier: GPL-2.0

//! Balanced waves over the units of one execution module (wave balancing).
//!
//! A work-group of `wx` waves runs on one module of `Q` units. The split
//! table gives every unit `wx div Q` waves and the `wx mod Q` remainder
//! waves one more each, on the lowest units ([`split_counts`]). Were that
//! combination used as is, unit 0 would take every remainder wave and fill
//! up first; so each module keeps a [`RotatingPointer`] and rotates the
//! combination to start just after the unit that took the last remainder
//! wave. The remainder waves then go round the module like a token, and the
//! waves dispatched to each unit never differ by more than one after any
//! number of work-groups of any sizes (the proof is on [`RotatingPointer`]).
//!
//! Unit counts above [`MAX_UNITS`] are treated as [`MAX_UNITS`] (a validated
//! topology never has more), and a module of no units gets no waves, so
//! nothing here can panic.

use super::topology::limits;

/// Most units in one module, the size of the per-unit tables here.
pub const MAX_UNITS: usize = 16;

// The tables must hold every unit a valid topology may have.
const _: () = assert!(MAX_UNITS == limits::UNITS_PER_MODULE.1 as usize);

/// `units` limited to what the tables hold.
const fn unit_count(units: u32) -> u32 {
    if units < MAX_UNITS as u32 {
        units
    } else {
        MAX_UNITS as u32
    }
}

/// The split table's initial combination for `waves` waves over `units`
/// units: unit `t` gets `waves / units + 1` waves if `t < waves % units`,
/// else `waves / units`; entries from `units` on are 0, and so is every
/// entry when `units` is 0.
///
/// Work-groups have at most 64 waves (`grid::MAX_WAVES_PER_GROUP`), so the
/// counts fit a `u8`; a count that would not is saturated at 255.
pub fn split_counts(waves: u32, units: u32) -> [u8; MAX_UNITS] {
    let mut out = [0; MAX_UNITS];
    let q = unit_count(units);
    let (Some(wy), Some(wz)) = (waves.checked_div(q), waves.checked_rem(q)) else {
        return out;
    };
    for (t, count) in (0u32..).zip(out.iter_mut().take(q as usize)) {
        let n = if t < wz { wy + 1 } else { wy };
        *count = u8::try_from(n).unwrap_or(u8::MAX);
    }
    out
}

/// A module's rotation pointer, in its *tail* form: the unit that took the last
/// remainder wave of the previous work-group (`t1'`).
///
/// The next work-group's combination starts on the unit after it, the
/// shift `su = (t1' + 1) mod Q`; dispatching `wx` waves moves the tail to
/// `(t1' + wx) mod Q`, the last unit of this work-group's remainder run
/// (unchanged when `wx mod Q = 0`: no unit got a remainder wave). The
/// equivalent *head* form keeps `su` itself and moves it to
/// `(t1' + 1 + wx) mod Q`; [`RotatingPointer::head`] gives that value.
///
/// # Balance
///
/// Counting the waves each unit has been given, the units holding one
/// more than the others always form a cyclic run that ends at the tail
/// (the run is empty when all are equal). A work-group gives every unit
/// `wx div Q` waves, which keeps that shape, and `wx mod Q` remainder waves
/// on the units right after the tail, which extends the run past its end;
/// if the run grows to `Q` units or more, everyone is one up and the wrapped
/// part is the new, shorter run, still ending at the new tail. So the
/// counts never differ by more than one after every work-group. (Within a
/// work-group, placed in [`RotatingPointer::wave_units`] order, a unit takes
/// all its waves before the next one starts; the bound is about whole
/// work-groups, and about waves given, not waves still resident.)
///
/// The pointer moves only when [`RotatingPointer::advance`] is called,
/// which the dispatcher does once a work-group is placed on this module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RotatingPointer {
    /// `t1'`, kept below the module's unit count.
    tail: u32,
}

impl RotatingPointer {
    /// A pointer for a module of `units` units, placed so that the first
    /// work-group's combination starts on unit 0 (the tail is the last
    /// unit).
    pub const fn new(units: u32) -> Self {
        Self {
            tail: unit_count(units).saturating_sub(1),
        }
    }

    /// The tail `t1'` for a module of `units` units (0 if `units` is 0).
    pub fn tail(&self, units: u32) -> u32 {
        self.tail.checked_rem(unit_count(units)).unwrap_or(0)
    }

    /// The shift `su`: the unit where the next work-group's combination
    /// starts, `(t1' + 1) mod Q` (0 if `units` is 0).
    pub fn shift(&self, units: u32) -> u32 {
        (self.tail(units) + 1)
            .checked_rem(unit_count(units))
            .unwrap_or(0)
    }

    /// The pointer in its head form, which is the shift itself.
    pub fn head(&self, units: u32) -> u32 {
        self.shift(units)
    }

    /// Waves per unit for the next work-group of `waves` waves: the split
    /// table's combination rotated by the shift, so unit `(i + su) mod Q`
    /// gets initial entry `i`. Entries from `units` on are 0.
    pub fn counts(&self, waves: u32, units: u32) -> [u8; MAX_UNITS] {
        let initial = split_counts(waves, units);
        let q = unit_count(units) as usize;
        let su = self.shift(units) as usize;
        let mut out = [0; MAX_UNITS];
        for (i, &n) in initial.iter().enumerate().take(q) {
            if let Some(slot) = out.get_mut((i + su) % q) {
                *slot = n;
            }
        }
        out
    }

    /// The unit of each of the next work-group's waves, in wave order:
    /// starting at the shift and going round the module, each unit takes
    /// its count from [`RotatingPointer::counts`] in consecutive waves, so
    /// the unit of wave `k` is fixed by `k`, the wave count and the pointer.
    ///
    /// Writes `out[0..waves]`; `out` should be at least that long (writing
    /// stops at its end) and later entries are left alone. Nothing is
    /// written when `units` is 0.
    pub fn wave_units(&self, waves: u32, units: u32, out: &mut [u8]) {
        let initial = split_counts(waves, units);
        let q = unit_count(units) as usize;
        let su = self.shift(units) as usize;
        let mut slots = out.iter_mut().take(waves as usize);
        for (i, &n) in initial.iter().enumerate().take(q) {
            // Below MAX_UNITS, so the cast is exact.
            let unit = ((i + su) % q) as u8;
            for slot in slots.by_ref().take(n as usize) {
                *slot = unit;
            }
        }
    }

    /// Records that a work-group of `waves` waves was placed on this module:
    /// the tail moves to `(t1' + waves) mod Q`.
    pub fn advance(&mut self, waves: u32, units: u32) {
        let q = unit_count(units);
        if let Some(step) = waves.checked_rem(q) {
            // Both terms are below q <= 16: no overflow, and the sum wraps
            // at most once.
            self.tail = (self.tail(units) + step) % q;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::rng::Rng;
    use super::*;

    /// The head-pointer form: from tail `t1'`, the next shift
    /// is `(t1' + 1 + wx) mod Q` directly.
    fn head_form_next_shift(tail: u32, waves: u32, q: u32) -> u32 {
        (tail + 1 + waves) % q
    }

    #[test]
    fn split_table_for_every_size() {
        for q in 1..=MAX_UNITS as u32 {
            for waves in 1..=q * 16 {
                let c = split_counts(waves, q);
                let used = &c[..q as usize];
                assert!(c[q as usize..].iter().all(|&n| n == 0));
                assert_eq!(used.iter().map(|&n| n as u32).sum::<u32>(), waves);
                let max = *used.iter().max().unwrap();
                let min = *used.iter().min().unwrap();
                assert!(max - min <= 1, "q {q} waves {waves}: {c:?}");
                // The extra waves are on the lowest units.
                for (t, &n) in used.iter().enumerate() {
                    let want = waves / q + ((t as u32) < waves % q) as u32;
                    assert_eq!(n as u32, want, "q {q} waves {waves} unit {t}");
                }
            }
        }
    }

    #[test]
    fn degenerate_sizes_do_not_panic() {
        assert_eq!(split_counts(7, 0), [0; MAX_UNITS]);
        assert_eq!(split_counts(0, 4), [0; MAX_UNITS]);
        // More units than the tables hold: treated as MAX_UNITS.
        assert_eq!(split_counts(20, 40), split_counts(20, MAX_UNITS as u32));
        // A count beyond u8 saturates.
        assert_eq!(split_counts(1000, 1)[0], u8::MAX);
        let mut p = RotatingPointer::new(0);
        assert_eq!(p.shift(0), 0);
        assert_eq!(p.counts(5, 0), [0; MAX_UNITS]);
        let mut out = [9u8; 8];
        p.wave_units(5, 0, &mut out);
        assert_eq!(out, [9; 8]);
        p.advance(5, 0);
        assert_eq!(p.shift(0), 0);
        // A short output buffer is filled and no more.
        let mut short = [9u8; 3];
        RotatingPointer::new(2).wave_units(6, 2, &mut short);
        assert_eq!(short, [0, 0, 0]);
    }

    #[test]
    fn worked_rotation() {
        // Q = 4: 5 waves -> 2,1,1,1 from unit 0, tail at 0; then 6 waves
        // start on unit 1 -> 2,2 on units 1,2, tail at 2; then 4 waves
        // start on unit 3, no remainder, tail stays at 2.
        let mut p = RotatingPointer::new(4);
        assert_eq!(p.shift(4), 0);
        assert_eq!(&p.counts(5, 4)[..4], &[2, 1, 1, 1]);
        p.advance(5, 4);
        assert_eq!((p.tail(4), p.shift(4)), (0, 1));
        assert_eq!(&p.counts(6, 4)[..4], &[1, 2, 2, 1]);
        let mut units = [0u8; 6];
        p.wave_units(6, 4, &mut units);
        assert_eq!(units, [1, 1, 2, 2, 3, 0]);
        p.advance(6, 4);
        assert_eq!((p.tail(4), p.shift(4)), (2, 3));
        p.advance(4, 4);
        assert_eq!((p.tail(4), p.shift(4)), (2, 3));
    }

    #[test]
    fn tail_and_head_forms_agree() {
        let mut rng = Rng(0x005e_edc8);
        for q in 1..=MAX_UNITS as u32 {
            let mut p = RotatingPointer::new(q);
            // The head form starts at su = 0 as well.
            let mut head = 0;
            for _ in 0..500 {
                let wx = 1 + rng.below(64);
                let t1 = p.tail(q);
                assert_eq!(p.head(q), head);
                assert_eq!(p.shift(q), (t1 + 1) % q);
                p.advance(wx, q);
                // Tail form: t = (t1' + wx) mod Q, unchanged for whole rounds.
                assert_eq!(p.tail(q), (t1 + wx) % q);
                if wx.is_multiple_of(q) {
                    assert_eq!(p.tail(q), t1);
                }
                head = head_form_next_shift(t1, wx, q);
                assert_eq!(p.shift(q), head, "q {q} t1 {t1} wx {wx}");
            }
        }
    }

    #[test]
    fn pointer_moves_only_on_advance() {
        let p = RotatingPointer::new(5);
        let mut out = [0u8; 64];
        let before = p;
        let _ = p.counts(7, 5);
        p.wave_units(7, 5, &mut out);
        assert_eq!(p, before);
    }

    #[test]
    fn cumulative_waves_stay_within_one() {
        let mut rng = Rng(0x0ba1_a2ce);
        for q in 1..=MAX_UNITS as u32 {
            for _ in 0..20 {
                let mut p = RotatingPointer::new(q);
                let mut given = [0u64; MAX_UNITS];
                for _ in 0..200 {
                    // Mostly 1..64, sometimes exact multiples of Q.
                    let wx = if rng.below(4) == 0 {
                        q * (1 + rng.below(4))
                    } else {
                        1 + rng.below(64)
                    };
                    for (g, &n) in given.iter_mut().zip(p.counts(wx, q).iter()) {
                        *g += n as u64;
                    }
                    p.advance(wx, q);
                    let used = &given[..q as usize];
                    let max = *used.iter().max().unwrap();
                    let min = *used.iter().min().unwrap();
                    assert!(max - min <= 1, "q {q}: {used:?}");
                    // The units one up form a cyclic run ending at the tail.
                    let extra = used.iter().filter(|&&g| g == max).count() as u32;
                    if max != min {
                        let tail = p.tail(q);
                        for k in 0..q {
                            let unit = (tail + q - k) % q;
                            assert_eq!(used[unit as usize] == max, k < extra, "q {q}: {used:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn wave_units_agree_with_counts() {
        let mut rng = Rng(77);
        for q in 1..=MAX_UNITS as u32 {
            let mut p = RotatingPointer::new(q);
            for _ in 0..100 {
                let wx = 1 + rng.below(64);
                let counts = p.counts(wx, q);
                let mut units = [0xffu8; 65];
                p.wave_units(wx, q, &mut units);
                assert_eq!(units[wx as usize], 0xff);
                let placed = &units[..wx as usize];
                // Same number of waves per unit.
                for (u, &want) in counts.iter().enumerate() {
                    let n = placed.iter().filter(|&&x| x as usize == u).count();
                    assert_eq!(n, want as usize);
                }
                // Consecutive runs, starting at the shift, going round.
                assert_eq!(placed[0] as u32, p.shift(q));
                let mut changes = 0;
                for pair in placed.windows(2) {
                    let (a, b) = (pair[0] as u32, pair[1] as u32);
                    assert!(b == a || b == (a + 1) % q, "q {q}: {placed:?}");
                    changes += (a != b) as u32;
                }
                // Never round the module twice: each unit is one run.
                assert!(changes < q, "q {q}: {placed:?}");
                p.advance(wx, q);
            }
        }
    }
}
