// SPDX-License-Identifier: GPL-2.0

//! How far a job's grid has got: the work-groups placed, split, running,
//! saved and retired, and whether the job failed.
//!
//! Work-group dispatch places a job's work-groups whole, in order. When
//! the dispatcher finds that no head fits for long enough, it may split the
//! next whole work-group of a job whose groups are independent into
//! one-wave pieces, placed one after the other at the lowest band before
//! the next whole group. A placed group or piece (a *unit*) runs until its
//! last wave retires; when its context loses its hardware slot, its waves
//! are saved and the unit waits in the save area until it is restored.
//!
//! [`JobProgress`] keeps exactly that state for one job and offers one
//! method per transition. A transition that the state does not allow (a
//! unit placed out of order, a retire with nothing running, ...) is
//! refused with a [`ProgressError`] and changes nothing, so a caller that
//! breaks the protocol gets an error to report instead of a wrapped
//! counter.

use super::grid::Grid;

/// The one-wave pieces of a split work-group still to place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitGroup {
    /// The work-group that was split.
    pub group: u32,
    /// Its next wave to place.
    pub next_wave: u32,
}

/// A unit of work to place: a whole work-group, or one wave of a split one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unit {
    /// Its work-group.
    pub group: u32,
    /// Index in the work-group of its first wave (0 for a whole group).
    pub first_wave: u32,
    /// How many waves it has: all the group's, or 1 for a piece.
    pub waves: u32,
    /// It is a one-wave piece of a split work-group.
    pub piece: bool,
}

/// Why a transition was refused; the state is unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressError {
    /// The unit is not the job's next one to place (or there is none).
    NotNext,
    /// The job has failed: nothing more of it is placed or restored.
    Failed,
    /// A retire or save with no unit running.
    NothingRunning,
    /// A restore with no unit saved.
    NothingSaved,
    /// More units running or saved than a `u32` counts.
    Overflow,
}

/// The progress of one job through its grid.
///
/// # Invariants
///
/// - `waves_per_group >= 1` and `next_group <= groups`: groups
///   `0..next_group` have been handed out, whole or to be split.
/// - `split == Some(s)` implies `s.group < next_group`,
///   `s.next_wave < waves_per_group` and `waves_per_group > 1`: a split
///   group always has a piece left to place (the split ends with its last
///   piece).
/// - `running` counts the units placed or restored whose last wave has not
///   retired; `saved` the units with waves in the save area that have not
///   been restored. A unit being saved (waves saved, others still on the
///   device) counts in both.
/// - `error` is 0 or the first (negative) errno the job failed with; once
///   set it never changes, and no unit is placed or restored after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobProgress {
    groups: u32,
    waves_per_group: u32,
    next_group: u32,
    split: Option<SplitGroup>,
    running: u32,
    saved: u32,
    error: i32,
}

impl JobProgress {
    /// A job of `groups` work-groups of `waves_per_group` waves, nothing
    /// placed. A `waves_per_group` of 0 is taken as 1 (validated grids
    /// never have it); a job of no groups is finished at once.
    pub fn new(groups: u32, waves_per_group: u32) -> Self {
        Self {
            groups,
            waves_per_group: waves_per_group.max(1),
            next_group: 0,
            split: None,
            running: 0,
            saved: 0,
            error: 0,
        }
    }

    /// The progress of a job with grid `grid`, nothing placed.
    pub fn for_grid(grid: &Grid) -> Self {
        Self::new(grid.groups, grid.waves_per_group)
    }

    /// The next whole work-group to place (all of them are handed out when
    /// it equals the grid's count).
    pub fn next_group(&self) -> u32 {
        self.next_group
    }

    /// The work-group being placed wave by wave, if any.
    pub fn split(&self) -> Option<SplitGroup> {
        self.split
    }

    /// Units placed or restored and not yet retired.
    pub fn running(&self) -> u32 {
        self.running
    }

    /// Units in the save area, not yet restored.
    pub fn saved(&self) -> u32 {
        self.saved
    }

    /// 0, or the first negative errno the job failed with.
    pub fn error(&self) -> i32 {
        self.error
    }

    /// The job could place a unit (if it fits): it has not failed and has a
    /// piece or a whole group left.
    pub fn has_groups_to_place(&self) -> bool {
        self.error == 0 && (self.split.is_some() || self.next_group < self.groups)
    }

    /// The job needs nothing more from the device: nothing is running, and
    /// it failed or every unit was placed and none waits in the save area.
    pub fn is_finished(&self) -> bool {
        self.running == 0
            && (self.error != 0
                || (self.next_group == self.groups && self.split.is_none() && self.saved == 0))
    }

    /// The next unit to place: the next piece of the split group, or else
    /// the next whole group; `None` once all are placed or the job failed.
    pub fn next_unit(&self) -> Option<Unit> {
        if self.error != 0 {
            return None;
        }
        match self.split {
            Some(s) => Some(Unit {
                group: s.group,
                first_wave: s.next_wave,
                waves: 1,
                piece: true,
            }),
            None if self.next_group < self.groups => Some(Unit {
                group: self.next_group,
                first_wave: 0,
                waves: self.waves_per_group,
                piece: false,
            }),
            None => None,
        }
    }

    /// Whether [`JobProgress::split_next`] would split: no split is under
    /// way, a whole group is left, it has more than one wave, and the job
    /// has not failed. (Whether the job's groups are independent enough to
    /// be split is the caller's to check.)
    pub fn can_split(&self) -> bool {
        self.error == 0
            && self.split.is_none()
            && self.next_group < self.groups
            && self.waves_per_group > 1
    }

    /// Splits the next whole work-group into one-wave pieces, which then
    /// come before any other group. Returns whether it did
    /// ([`JobProgress::can_split`]).
    pub fn split_next(&mut self) -> bool {
        if !self.can_split() {
            return false;
        }
        self.split = Some(SplitGroup {
            group: self.next_group,
            next_wave: 0,
        });
        self.next_group += 1;
        true
    }

    /// `unit`, which must be [`JobProgress::next_unit`], was placed: it
    /// runs, and the job moves on to the next one.
    pub fn place(&mut self, unit: Unit) -> Result<(), ProgressError> {
        if self.error != 0 {
            return Err(ProgressError::Failed);
        }
        if self.next_unit() != Some(unit) {
            return Err(ProgressError::NotNext);
        }
        let running = self.running.checked_add(1).ok_or(ProgressError::Overflow)?;
        match &mut self.split {
            Some(s) => {
                s.next_wave += 1;
                if s.next_wave >= self.waves_per_group {
                    self.split = None;
                }
            }
            // `next_unit` returned a whole group, so `next_group < groups`.
            None => self.next_group += 1,
        }
        self.running = running;
        Ok(())
    }

    /// A saved unit was placed again: it runs and leaves the save area.
    pub fn restore(&mut self) -> Result<(), ProgressError> {
        if self.error != 0 {
            return Err(ProgressError::Failed);
        }
        let saved = self
            .saved
            .checked_sub(1)
            .ok_or(ProgressError::NothingSaved)?;
        let running = self.running.checked_add(1).ok_or(ProgressError::Overflow)?;
        self.saved = saved;
        self.running = running;
        Ok(())
    }

    /// A running unit's first wave went to the save area: the unit is saved
    /// (and still running until its last wave retires).
    pub fn start_saving(&mut self) -> Result<(), ProgressError> {
        if self.running == 0 {
            return Err(ProgressError::NothingRunning);
        }
        self.saved = self.saved.checked_add(1).ok_or(ProgressError::Overflow)?;
        Ok(())
    }

    /// A running unit's last wave retired (ended, or finished saving).
    pub fn retire(&mut self) -> Result<(), ProgressError> {
        self.running = self
            .running
            .checked_sub(1)
            .ok_or(ProgressError::NothingRunning)?;
        Ok(())
    }

    /// The job failed with `errno` (negative). The first failure is the
    /// job's; returns whether this was it. A non-negative `errno` is not a
    /// failure and changes nothing.
    pub fn fail(&mut self, errno: i32) -> bool {
        if errno >= 0 || self.error != 0 {
            return false;
        }
        self.error = errno;
        true
    }

    /// Forgets the saved units of a failed job, which never run again;
    /// returns how many there were. Does nothing (returns 0) while the job
    /// has not failed.
    pub fn discard_saved(&mut self) -> u32 {
        if self.error == 0 {
            return 0;
        }
        core::mem::take(&mut self.saved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// Checks the type's invariants from outside.
    fn check(p: &JobProgress) {
        assert!(p.waves_per_group >= 1);
        assert!(p.next_group <= p.groups);
        if let Some(s) = p.split {
            assert!(
                s.group < p.next_group && s.next_wave < p.waves_per_group && p.waves_per_group > 1,
                "{p:?}"
            );
        }
        assert_eq!(p.has_groups_to_place(), p.next_unit().is_some());
    }

    #[test]
    fn whole_groups_are_placed_in_order_then_the_job_finishes() {
        let mut p = JobProgress::for_grid(&Grid {
            groups: 3,
            waves_per_group: 4,
            threads_per_wave: 8,
        });
        for g in 0..3 {
            let unit = p.next_unit().unwrap();
            assert_eq!(
                unit,
                Unit {
                    group: g,
                    first_wave: 0,
                    waves: 4,
                    piece: false
                }
            );
            // A stale or made-up unit is refused.
            let other = Unit {
                group: g + 1,
                ..unit
            };
            assert_eq!(p.place(other), Err(ProgressError::NotNext));
            p.place(unit).unwrap();
            assert!(!p.is_finished());
        }
        assert_eq!(p.next_unit(), None);
        assert!(!p.has_groups_to_place() && !p.is_finished());
        for _ in 0..3 {
            p.retire().unwrap();
        }
        assert!(p.is_finished());
        assert_eq!(p.retire(), Err(ProgressError::NothingRunning));
        assert_eq!(p.running(), 0);
        assert!(JobProgress::new(0, 1).is_finished());
    }

    #[test]
    fn a_split_group_is_placed_wave_by_wave_before_the_next_group() {
        let mut p = JobProgress::new(2, 3);
        assert!(p.split_next());
        assert!(!p.split_next(), "one split at a time");
        assert_eq!(p.next_group(), 1);
        for w in 0..3 {
            let unit = p.next_unit().unwrap();
            assert_eq!(
                unit,
                Unit {
                    group: 0,
                    first_wave: w,
                    waves: 1,
                    piece: true
                }
            );
            p.place(unit).unwrap();
        }
        assert_eq!(p.split(), None);
        assert_eq!(
            p.next_unit(),
            Some(Unit {
                group: 1,
                first_wave: 0,
                waves: 3,
                piece: false
            })
        );
        assert_eq!(p.running(), 3);
        // One-wave groups are never split.
        assert!(!JobProgress::new(2, 1).split_next());
    }

    #[test]
    fn failure_stops_placing_and_restoring_and_finishes_when_nothing_runs() {
        let mut p = JobProgress::new(4, 2);
        p.place(p.next_unit().unwrap()).unwrap();
        p.start_saving().unwrap();
        p.retire().unwrap();
        p.place(p.next_unit().unwrap()).unwrap();
        assert!(!p.fail(0), "0 is not an errno");
        assert!(p.fail(-14));
        assert!(!p.fail(-62), "the first failure stays");
        assert_eq!(p.error(), -14);
        assert_eq!(p.next_unit(), None);
        assert!(!p.has_groups_to_place() && !p.can_split() && !p.split_next());
        let whole = Unit {
            group: 2,
            first_wave: 0,
            waves: 2,
            piece: false,
        };
        assert_eq!(p.place(whole), Err(ProgressError::Failed));
        assert_eq!(p.restore(), Err(ProgressError::Failed));
        assert!(!p.is_finished(), "a unit still runs");
        p.retire().unwrap();
        assert!(
            p.is_finished(),
            "saved units of a failed job do not hold it"
        );
        assert_eq!(p.discard_saved(), 1);
        assert_eq!(p.saved(), 0);
    }

    #[test]
    fn refused_transitions_change_nothing() {
        let mut p = JobProgress::new(1, 2);
        let before = p;
        assert_eq!(p.retire(), Err(ProgressError::NothingRunning));
        assert_eq!(p.start_saving(), Err(ProgressError::NothingRunning));
        assert_eq!(p.restore(), Err(ProgressError::NothingSaved));
        assert_eq!(p.discard_saved(), 0);
        assert_eq!(p, before);
        p.running = u32::MAX;
        p.saved = u32::MAX;
        let before = p;
        assert_eq!(
            p.place(p.next_unit().unwrap()),
            Err(ProgressError::Overflow)
        );
        assert_eq!(p.start_saving(), Err(ProgressError::Overflow));
        assert_eq!(p.restore(), Err(ProgressError::Overflow));
        assert_eq!(p, before);
    }

    /// A unit as the simulated device holds it.
    #[derive(Clone, Copy, Debug)]
    struct Held {
        /// On the device (else only in the save area).
        on_device: bool,
        /// Some of its waves are in the save area.
        saving: bool,
    }

    /// A random one of the held units that `want` accepts.
    fn pick(held: &[Option<Held>], rng: &mut Rng, want: impl Fn(&Held) -> bool) -> Option<usize> {
        let n = held.iter().flatten().filter(|h| want(h)).count() as u32;
        let k = rng.below(n.max(1)) as usize;
        let mut matching = held
            .iter()
            .enumerate()
            .filter(|(_, h)| h.as_ref().is_some_and(&want));
        if n == 0 {
            return None;
        }
        matching.nth(k).map(|(i, _)| i)
    }

    /// Random interleavings of every transition, against a model device
    /// that holds the units: the invariants hold after every step, every
    /// wave of every group is placed exactly once (whole or in pieces,
    /// never both), the job finishes exactly when the model says, and
    /// nothing is placed after a failure.
    #[test]
    fn random_interleavings_keep_the_invariants() {
        let mut rng = Rng::new(77);
        let (mut failures, mut splits, mut completed) = (0, 0, 0);
        for case in 0..2_000 {
            let groups = rng.below(6);
            let waves = 1 + rng.below(4);
            let mut p = JobProgress::new(groups, waves);
            let mut held: [Option<Held>; 64] = [None; 64];
            // placed[g][w]: how many times wave w of group g was placed.
            let mut placed = [[0u8; 4]; 6];
            // kinds[g]: whole placements and pieces of group g.
            let mut kinds = [(0u32, 0u32); 6];
            let fail_at = if rng.below(4) == 0 {
                Some(rng.below(40))
            } else {
                None
            };
            let mut failed = false;
            for step in 0..400u32 {
                check(&p);
                if fail_at == Some(step) {
                    assert!(p.fail(-5));
                    failed = true;
                }
                let running = held.iter().flatten().filter(|h| h.on_device).count() as u32;
                let saved = held.iter().flatten().filter(|h| h.saving).count() as u32;
                assert_eq!(
                    (p.running(), p.saved()),
                    (running, saved),
                    "case {case} step {step}"
                );
                let all_placed =
                    (0..groups as usize).all(|g| (0..waves as usize).all(|w| placed[g][w] == 1));
                let model_finished = running == 0 && (failed || (all_placed && saved == 0));
                assert_eq!(
                    p.is_finished(),
                    model_finished,
                    "case {case} step {step}: {p:?}"
                );
                if p.is_finished() {
                    break;
                }
                let slot = held.iter().position(Option::is_none).unwrap();
                match rng.below(6) {
                    0 => {
                        let did = p.split_next();
                        splits += did as u32;
                        assert!(!did || !failed);
                    }
                    1 | 2 => match p.next_unit() {
                        Some(unit) => {
                            assert!(!failed, "placing after a failure");
                            p.place(unit).unwrap();
                            for w in unit.first_wave..unit.first_wave + unit.waves {
                                placed[unit.group as usize][w as usize] += 1;
                            }
                            held[slot] = Some(Held {
                                on_device: true,
                                saving: false,
                            });
                            let (whole, pieces) = &mut kinds[unit.group as usize];
                            if unit.piece {
                                *pieces += 1;
                            } else {
                                *whole += 1;
                            }
                        }
                        None => assert!(failed || p.split().is_none() && p.next_group() == groups),
                    },
                    3 => {
                        // Retire a unit on the device: it is done, or its
                        // saving is complete.
                        if let Some(i) = pick(&held, &mut rng, |h| h.on_device) {
                            let h = held[i].as_mut().unwrap();
                            p.retire().unwrap();
                            h.on_device = false;
                            if !h.saving {
                                held[i] = None;
                            }
                        } else if running == 0 {
                            assert_eq!(p.retire(), Err(ProgressError::NothingRunning));
                        }
                    }
                    4 => {
                        if let Some(i) = pick(&held, &mut rng, |h| h.on_device && !h.saving) {
                            let h = held[i].as_mut().unwrap();
                            p.start_saving().unwrap();
                            h.saving = true;
                        }
                    }
                    _ => {
                        // Restore a saved unit that left the device.
                        if let Some(i) = pick(&held, &mut rng, |h| !h.on_device && h.saving) {
                            let h = held[i].as_mut().unwrap();
                            if failed {
                                assert_eq!(p.restore(), Err(ProgressError::Failed));
                            } else {
                                p.restore().unwrap();
                                h.on_device = true;
                                h.saving = false;
                            }
                        }
                    }
                }
            }
            failures += failed as u32;
            // Every wave was placed at most once; exactly once, and every
            // group either whole or in pieces, if the job did not fail and
            // the run got to the end.
            assert!(
                placed.iter().flatten().all(|&n| n <= 1),
                "case {case}: {placed:?}"
            );
            if p.is_finished() && !failed {
                completed += 1;
                for g in 0..groups as usize {
                    assert!(
                        placed[g][..waves as usize].iter().all(|&n| n == 1),
                        "case {case}: group {g}"
                    );
                    assert!(
                        kinds[g] == (1, 0) || kinds[g] == (0, waves),
                        "case {case}: group {g}: {:?}",
                        kinds[g]
                    );
                }
            }
        }
        assert!(
            failures > 300 && splits > 300 && completed > 1000,
            "{failures} failed, {splits} splits, {completed} done"
        );
    }
}
