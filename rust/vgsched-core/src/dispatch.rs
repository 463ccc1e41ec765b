// SPDX-License-Identifier: GPL-2.0

//! Work-group dispatch decisions, apart from the resources
//! they are about.
//!
//! Every runnable context is a FIFO *channel* whose head is its next
//! work-group. In one dispatch round the heads of all channels are matched
//! against all execution modules at once ([`super::occupancy`]); every head
//! that fits somewhere is a candidate and the candidate of highest priority
//! is dispatched, so a big work-group that fits nowhere does not hold
//! back smaller ones behind it. Between equal candidates each channel keeps
//! a *selected* mark per priority band, which makes the choice round-robin
//! with a random order ([`pick`]). The priority order itself rotates (rotation windows):
//! a period is cut into [`BANDS`] windows of decreasing length, and during
//! window `y` band `y` counts as the highest ([`Rotation`]), so low bands
//! are served in every period however much high-priority work arrives.
//! When no head fits anywhere, failed rounds are counted; past a threshold
//! the heads whose work-groups are independent are split into one-wave
//! pieces of the lowest band that can fill the gaps ([`SplitTrigger`]).

use super::bitmask::FinderKind;
use super::module_choice::ModuleChoice;
use super::rng::Rng;
use super::topology::ParamError;

/// Priority bands of work-groups (equal to the number of
/// rotation windows `Y`). Band 0 comes first.
pub const BANDS: usize = 4;

/// The band of the one-wave pieces of a split work-group.
pub const LOWEST_BAND: u8 = BANDS as u8 - 1;

/// Relative lengths of the rotation windows `T1..TY`, decreasing: band 0
/// is promoted for 8/15 of the period, band 3 for 1/15.
pub const WINDOW_SHARES: [u64; BANDS] = [8, 4, 2, 1];

/// Policy settings of the dispatcher, from module parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchParams {
    /// Rotation period of the priority windows, in modeled cycles.
    pub rotation_period_cycles: u64,
    /// Failed rounds (modeled cycles in which no head fits anywhere) after
    /// which independent heads are split.
    pub split_after_rounds: u64,
    /// How far back module choice counts instructions (`Nx`), in modeled cycles.
    pub power_window_cycles: u64,
    /// How the execution module of a work-group is chosen (module choice).
    pub choice: ModuleChoice,
    /// Which resource finder hands out ranges (exact, or grouped/sampled to compare).
    pub finder: FinderKind,
}

impl DispatchParams {
    /// The split threshold of 256 failed rounds and the recent-power window of
    /// 1024 cycles, a 15 000-cycle rotation period (15 ms at the default 1 MHz
    /// clock: windows of 8, 4, 2 and 1 ms), module choice by recent power and
    /// the exact finder.
    pub const DEFAULT: Self = Self {
        rotation_period_cycles: 15_000,
        split_after_rounds: 256,
        power_window_cycles: 1024,
        choice: ModuleChoice::RecentPower,
        finder: FinderKind::Exact,
    };

    /// Builds the settings from raw module parameters: `choice` as in
    /// [`ModuleChoice::from_param`], `finder` 0 exact, 1 grouped by 4, 2
    /// sampled. Names the first parameter out of range.
    pub fn from_params(
        rotation_period_cycles: u64,
        split_after_rounds: u64,
        power_window_cycles: u64,
        choice: u64,
        finder: u64,
    ) -> Result<Self, ParamError> {
        let check = |field, value: u64, min: u64, max: u64| {
            if value < min || value > max {
                Err(ParamError {
                    field,
                    value,
                    min,
                    max,
                })
            } else {
                Ok(value)
            }
        };
        let choice_ok = u32::try_from(choice)
            .ok()
            .and_then(ModuleChoice::from_param)
            .ok_or(ParamError {
                field: "module_choice",
                value: choice,
                min: 0,
                max: 2,
            })?;
        let finder_ok = match finder {
            0 => FinderKind::Exact,
            1 => FinderKind::Grouped { group: 4 },
            2 => FinderKind::Sampled,
            3 => FinderKind::Packed,
            _ => {
                return Err(ParamError {
                    field: "finder",
                    value: finder,
                    min: 0,
                    max: 3,
                })
            }
        };
        Ok(Self {
            rotation_period_cycles: check(
                "rotation_period_cycles",
                rotation_period_cycles,
                15,
                1 << 32,
            )?,
            split_after_rounds: check("split_after_rounds", split_after_rounds, 1, 1 << 32)?,
            power_window_cycles: check("power_window_cycles", power_window_cycles, 16, 1 << 24)?,
            choice: choice_ok,
            finder: finder_ok,
        })
    }
}

/// The rotating priority order of the bands (rotation windows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rotation {
    period: u64,
}

impl Rotation {
    /// A rotation over `period` cycles (at least one cycle per window
    /// share, so every window exists).
    pub fn new(period: u64) -> Self {
        let total: u64 = WINDOW_SHARES.iter().sum();
        Self {
            period: period.max(total),
        }
    }

    /// The band promoted to highest at cycle `now`.
    pub fn promoted(&self, now: u64) -> u8 {
        let total: u64 = WINDOW_SHARES.iter().sum();
        // Position in the period, in fifteenths. `period` is never 0 (see
        // `new`); the checked forms keep a panic path out of the kernel.
        let at = now
            .checked_rem(self.period)
            .unwrap_or(0)
            .saturating_mul(total)
            .checked_div(self.period)
            .unwrap_or(0);
        let mut end = 0u64;
        for (band, share) in WINDOW_SHARES.iter().enumerate() {
            end = end.saturating_add(*share);
            if at < end {
                return band as u8;
            }
        }
        LOWEST_BAND
    }

    /// First cycle after `now` at which the promoted band changes.
    pub fn next_change(&self, now: u64) -> u64 {
        let total: u64 = WINDOW_SHARES.iter().sum();
        let base = now.saturating_sub(now.checked_rem(self.period).unwrap_or(0));
        let mut end = 0u64;
        for share in WINDOW_SHARES {
            end = end.saturating_add(share);
            // Smallest offset whose window index reaches `end`.
            let boundary = base.saturating_add(end.saturating_mul(self.period).div_ceil(total));
            if boundary > now {
                return boundary;
            }
        }
        base.saturating_add(self.period)
    }
}

/// Which band a dispatch decision promotes: the rotation window's band, or a band
/// whose window passed while no decision was taken.
///
/// The engine decides only when something happens (a wave ends, work
/// arrives). If those events fall into a fixed phase of the period (work-
/// groups of equal length started together end together), a short window
/// may never see one, and its band would wait for ever although the
/// rotation exists to prevent that. So a band that had waiting work while
/// its window passed is *owed* a turn: the next decision promotes the
/// band owed longest instead of the window's, until a work-group of that
/// band is dispatched or it has no work left. When events do fall inside
/// the windows this is exactly the rotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowDebts {
    /// Since when each band is owed a turn.
    owed_since: [Option<u64>; BANDS],
    /// Time of the last decision.
    last: Option<u64>,
    /// Bands with waiting work at the last decision: they kept it until
    /// now, since only a decision changes what waits.
    last_waiting: [bool; BANDS],
}

impl WindowDebts {
    /// No band owed.
    pub const fn new() -> Self {
        Self {
            owed_since: [None; BANDS],
            last: None,
            last_waiting: [false; BANDS],
        }
    }

    /// Brings the debts up to `now`: every band that had waiting work at
    /// the last decision and whose window began after it, up to `now`,
    /// becomes owed; bands without work now (`waiting`) are owed nothing.
    pub fn update(&mut self, rotation: &Rotation, now: u64, waiting: [bool; BANDS]) {
        // The window of the last decision had its decision; look at each
        // one that began since, up to `now` (a period's worth at most).
        let mut t = self.last.map_or(now, |last| rotation.next_change(last));
        self.last = Some(now.max(self.last.unwrap_or(0)));
        for _ in 0..=BANDS {
            if t > now {
                break;
            }
            let band = rotation.promoted(t) as usize;
            if self.last_waiting[band]
                && self.owed_since[band].is_none()
                && band != rotation.promoted(now) as usize
            {
                self.owed_since[band] = Some(t);
            }
            t = rotation.next_change(t);
        }
        for (owed, &w) in self.owed_since.iter_mut().zip(waiting.iter()) {
            if !w {
                *owed = None;
            }
        }
        self.last_waiting = waiting;
    }

    /// The band to promote at `now`: the one owed longest, else the
    /// window's.
    pub fn promoted(&self, rotation: &Rotation, now: u64) -> u8 {
        let owed = (0..BANDS)
            .filter_map(|b| self.owed_since[b].map(|t| (t, b)))
            .min();
        owed.map_or(rotation.promoted(now), |(_, b)| b as u8)
    }

    /// A work-group of `band` was dispatched: its debt is paid.
    pub fn served(&mut self, band: u8) {
        if let Some(owed) = self.owed_since.get_mut(band as usize) {
            *owed = None;
        }
    }
}

impl Default for WindowDebts {
    fn default() -> Self {
        Self::new()
    }
}

/// Rank of `band` in the order where `promoted` comes first and the
/// others keep their order; lower ranks are dispatched first.
pub fn rank(band: u8, promoted: u8) -> u8 {
    if band == promoted {
        0
    } else {
        band + 1
    }
}

/// A candidate of one dispatch round: a channel head that fits somewhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Priority band of the head work-group.
    pub band: u8,
    /// The channel's selected mark for that band.
    pub marked: bool,
}

/// How the selected marks change after [`pick`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkUpdate {
    /// Set the winner's mark for its band.
    MarkWinner,
    /// Every channel at the top was marked: keep the winner's mark for its
    /// band and clear that band's mark of every other channel.
    KeepOnlyWinner,
}

/// Chooses which candidate to dispatch: the best rank under
/// `promoted`; among those, a random channel not yet marked for that band,
/// or a random one of them all if all are marked. Returns the index into
/// `candidates`, its band and how to update the marks; `None` if empty.
pub fn pick(candidates: &[Candidate], promoted: u8, rng: &mut Rng) -> Option<(usize, MarkUpdate)> {
    let top = candidates.iter().map(|c| rank(c.band, promoted)).min()?;
    let at_top = |c: &&Candidate| rank(c.band, promoted) == top;
    let unmarked = candidates
        .iter()
        .filter(at_top)
        .filter(|c| !c.marked)
        .count() as u32;
    let (want_marked, n, update) = match unmarked {
        0 => (
            true,
            candidates.iter().filter(at_top).count() as u32,
            MarkUpdate::KeepOnlyWinner,
        ),
        n => (false, n, MarkUpdate::MarkWinner),
    };
    let nth = rng.below(n) as usize;
    let winner = candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| at_top(c) && c.marked == want_marked)
        .nth(nth)
        .map(|(i, _)| i)?;
    Some((winner, update))
}

/// Counts failed dispatch rounds and says when to split.
///
/// The hardware of the document runs one round per clock; the engine only
/// looks when something happens, so a round is a modeled cycle and the
/// count is the time during which no head fitted anywhere. It is not reset
/// by a successful round, only by a split: a head that some other work
/// keeps out is split eventually even while the device is busy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitTrigger {
    threshold: u64,
    failed: u64,
    blocked_since: Option<u64>,
}

impl SplitTrigger {
    /// A trigger that fires after more than `threshold` failed rounds.
    pub const fn new(threshold: u64) -> Self {
        Self {
            threshold,
            failed: 0,
            blocked_since: None,
        }
    }

    /// No head fitted anywhere at cycle `now` (the rounds from now on fail
    /// until [`SplitTrigger::progress`]).
    pub fn blocked(&mut self, now: u64) {
        if self.blocked_since.is_none() {
            self.blocked_since = Some(now);
        }
    }

    /// Something was dispatched, or no channel has a head, at `now`.
    pub fn progress(&mut self, now: u64) {
        if let Some(since) = self.blocked_since.take() {
            self.failed = self.failed.saturating_add(now.saturating_sub(since));
        }
    }

    /// Failed rounds counted up to `now`.
    pub fn failed(&self, now: u64) -> u64 {
        let running = self
            .blocked_since
            .map_or(0, |since| now.saturating_sub(since));
        self.failed.saturating_add(running)
    }

    /// Whether the count has passed the threshold at `now`.
    pub fn fires(&self, now: u64) -> bool {
        self.failed(now) > self.threshold
    }

    /// The cycle at which it fires if nothing is dispatched before; `None`
    /// while not blocked.
    pub fn fire_time(&self) -> Option<u64> {
        let since = self.blocked_since?;
        let left = (self.threshold + 1).saturating_sub(self.failed);
        Some(since.saturating_add(left))
    }

    /// The split happened at `now`: start counting again.
    pub fn reset(&mut self, now: u64) {
        self.failed = 0;
        self.blocked_since = self.blocked_since.map(|_| now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_checked_and_named() {
        assert_eq!(
            DispatchParams::from_params(15_000, 256, 1024, 0, 0),
            Ok(DispatchParams::DEFAULT)
        );
        let p = DispatchParams::from_params(100, 1, 16, 1, 1).unwrap();
        assert_eq!(
            (p.choice, p.finder),
            (
                ModuleChoice::FreeResources,
                FinderKind::Grouped { group: 4 }
            )
        );
        let p = DispatchParams::from_params(15_000, 256, 1024, 0, 3).unwrap();
        assert_eq!(p.finder, FinderKind::Packed);
        let field = |r: Result<DispatchParams, ParamError>| r.unwrap_err().field;
        assert_eq!(
            field(DispatchParams::from_params(14, 256, 1024, 0, 0)),
            "rotation_period_cycles"
        );
        assert_eq!(
            field(DispatchParams::from_params(15_000, 0, 1024, 0, 0)),
            "split_after_rounds"
        );
        assert_eq!(
            field(DispatchParams::from_params(15_000, 256, 8, 0, 0)),
            "power_window_cycles"
        );
        assert_eq!(
            field(DispatchParams::from_params(15_000, 256, 1024, 3, 0)),
            "module_choice"
        );
        assert_eq!(
            field(DispatchParams::from_params(15_000, 256, 1024, 0, 4)),
            "finder"
        );
    }

    #[test]
    fn windows_decrease_and_cover_the_period() {
        let r = Rotation::new(15_000);
        let mut len = [0u64; BANDS];
        for t in 0..30_000 {
            len[r.promoted(t) as usize] += 1;
        }
        assert_eq!(len, [16_000, 8_000, 4_000, 2_000]);
        assert_eq!(
            (r.promoted(0), r.promoted(7_999), r.promoted(8_000)),
            (0, 0, 1)
        );
        assert_eq!(
            (r.promoted(13_999), r.promoted(14_000), r.promoted(14_999)),
            (2, 3, 3)
        );
        // next_change lands exactly on the first cycle of another window.
        for p in [15u64, 16, 17, 100, 1_001, 15_000] {
            let r = Rotation::new(p);
            for t in 0..3 * p {
                let next = r.next_change(t);
                assert!(next > t);
                assert_eq!(r.promoted(next - 1), r.promoted(t), "p {p} t {t}");
                assert_ne!(r.promoted(next), r.promoted(next - 1), "p {p} t {t}");
            }
        }
        // Too short a period is stretched so every window has a cycle.
        let short = Rotation::new(3);
        assert_eq!(
            (0..15)
                .map(|t| short.promoted(t))
                .filter(|&b| b == 3)
                .count(),
            1
        );
    }

    #[test]
    fn promotion_moves_one_band_first_and_keeps_the_rest_in_order() {
        assert_eq!([0, 1, 2, 3].map(|b| rank(b, 0)), [0, 2, 3, 4]);
        assert_eq!([0, 1, 2, 3].map(|b| rank(b, 2)), [1, 2, 0, 4]);
        assert_eq!([0, 1, 2, 3].map(|b| rank(b, 3)), [1, 2, 3, 0]);
    }

    /// Equal work-groups started together end together: decisions at
    /// 0, 6, 12, ... never fall into band 3's window [14, 15) of a period
    /// of 15. The debt gives band 3 the decision at 18, right after its
    /// window; without waiting work nothing is owed.
    #[test]
    fn a_window_without_a_decision_is_owed_to_its_band() {
        let r = Rotation::new(15);
        let mut d = WindowDebts::new();
        let waiting = [true, false, false, true];
        let mut promoted = [0u8; 5];
        for (i, t) in [0u64, 6, 12, 18, 24].into_iter().enumerate() {
            d.update(&r, t, waiting);
            promoted[i] = d.promoted(&r, t);
            d.served(promoted[i]);
        }
        // 12 and 24 fall in the windows of bands 2 and 1 (which have no
        // work, so band 0 wins those decisions).
        assert_eq!(promoted, [0, 0, 2, 3, 1]);
        // Decisions inside the windows: exactly the rotation, nothing owed.
        let mut d = WindowDebts::new();
        for t in 0..45 {
            d.update(&r, t, [true; BANDS]);
            assert_eq!(d.promoted(&r, t), r.promoted(t), "t {t}");
        }
        // Band 1 had no work while its window passed: owed nothing.
        let mut d = WindowDebts::new();
        d.update(&r, 0, [true, false, true, true]);
        d.update(&r, 13, [true, true, true, true]);
        assert_eq!(d.promoted(&r, 13), 2);
        // A debt lapses when the band's work is gone.
        let mut d = WindowDebts::new();
        d.update(&r, 0, [true; BANDS]);
        d.update(&r, 16, [true; BANDS]);
        assert_eq!(d.promoted(&r, 16), 1);
        d.update(&r, 17, [true, false, true, true]);
        assert_eq!(d.promoted(&r, 17), 2);
    }

    /// Simulates channels that always have a head of `bands[i]`.
    fn run(bands: &[u8], promoted: u8, rounds: usize, rng: &mut Rng) -> [u32; 8] {
        let mut marks = [[false; BANDS]; 8];
        let mut wins = [0u32; 8];
        for _ in 0..rounds {
            let cands: [Candidate; 8] = core::array::from_fn(|i| Candidate {
                band: *bands.get(i).unwrap_or(&LOWEST_BAND),
                marked: marks[i][*bands.get(i).unwrap_or(&0) as usize],
            });
            let (w, update) = pick(&cands[..bands.len()], promoted, rng).unwrap();
            let band = bands[w] as usize;
            if update == MarkUpdate::KeepOnlyWinner {
                marks.iter_mut().for_each(|m| m[band] = false);
            }
            marks[w][band] = true;
            wins[w] += 1;
        }
        wins
    }

    #[test]
    fn the_best_band_wins_and_equal_channels_take_turns() {
        let mut rng = Rng::new(1);
        assert_eq!(pick(&[], 0, &mut rng), None);
        // Band 1 beats bands 2 and 3 unless a window promotes one of them.
        let wins = run(&[2, 1, 3], 0, 100, &mut rng);
        assert_eq!(&wins[..3], &[0, 100, 0]);
        let wins = run(&[2, 1, 3], 3, 100, &mut rng);
        assert_eq!(&wins[..3], &[0, 0, 100]);
        // Five equal channels: in every five rounds each wins exactly once
        // (the marks make the random choice a round robin).
        let mut marks = [[false; BANDS]; 5];
        for round in 0..50 {
            if round % 5 == 0 {
                assert!(round == 0 || marks.iter().all(|m| m[1]), "round {round}");
            }
            let cands: [Candidate; 5] = core::array::from_fn(|i| Candidate {
                band: 1,
                marked: marks[i][1],
            });
            let (w, update) = pick(&cands, 0, &mut rng).unwrap();
            assert_eq!(
                update == MarkUpdate::KeepOnlyWinner,
                round % 5 == 0 && round > 0
            );
            assert!(!marks[w][1] || update == MarkUpdate::KeepOnlyWinner);
            if update == MarkUpdate::KeepOnlyWinner {
                marks.iter_mut().for_each(|m| m[1] = false);
            }
            marks[w][1] = true;
        }
        let wins = run(&[1; 5], 0, 5_000, &mut rng);
        assert!(
            wins[..5].iter().all(|&w| (990..=1010).contains(&w)),
            "{wins:?}"
        );
    }

    #[test]
    fn split_trigger_counts_blocked_cycles_until_reset() {
        let mut s = SplitTrigger::new(256);
        assert_eq!(s.fire_time(), None);
        s.blocked(1_000);
        s.blocked(1_100); // still the same blocked stretch
        assert_eq!(s.fire_time(), Some(1_257));
        assert!(!s.fires(1_256) && s.fires(1_257));
        s.progress(1_200);
        assert_eq!((s.failed(5_000), s.fire_time()), (200, None));
        s.blocked(2_000);
        assert_eq!(s.fire_time(), Some(2_057));
        assert!(s.fires(2_057));
        s.reset(2_057);
        assert_eq!((s.failed(2_057), s.fire_time()), (0, Some(2_314)));
        s.progress(2_100);
        assert_eq!(s.failed(9_999), 43);
    }
}
