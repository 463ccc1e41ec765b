// SPDX-License-Identifier: GPL-2.0

//! Choosing the execution module for a work-group among those it fits on:
//! by remaining resources, by recent power (the default)
//! or by a weighted mix of the two.
//!
//! Choosing by recent power needs each module's weighted instruction count over the last `Nx`
//! cycles. The engine interprets a wave all at once when it places it, but
//! in modeled time the wave issues its instructions over its whole
//! interval; [`PowerWindow`] spreads them evenly over that interval, so a
//! module that has just been given a long wave does not look busier than
//! it will be, nor one that is still running long waves look idle.
//!
//! There is no power meter behind the virtual GPU, so the per-class and
//! per-resource weights the document calibrates from measured power are
//! model constants here ([`PowerWeights::DEFAULT`], [`FreeWeights::DEFAULT`]).
//!
//! Everything is integer arithmetic that saturates instead of overflowing,
//! with no `u128` division (the kernel's compiler builtins panic on it).

use core::cmp::Reverse;

use super::exec::Counters;
use super::isa::NUM_CLASSES;

/// Energy weight `bs` of one instruction of each class (`TB = Σ bs ×
/// cs`), indexed by `isa::Class as usize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PowerWeights {
    /// Weight per instruction class.
    pub per_class: [u32; NUM_CLASSES],
}

impl PowerWeights {
    /// Move 1, ALU 2, load 4, store 4, matrix 8, compare 1, jump 1.
    ///
    /// Model constants, not measurements: moves, compares and branches
    /// barely use the datapath, arithmetic drives the ALUs, memory access
    /// costs several times an ALU operation (data travels off the unit),
    /// and a multiply-accumulate is a multiply and an add on wide data.
    pub const DEFAULT: Self = Self {
        per_class: [1, 2, 4, 4, 8, 1, 1],
    };

    /// The weighted instruction count `Σ bs × cs` of `c`, saturating.
    pub fn weigh(&self, c: &Counters) -> u64 {
        c.per_class
            .iter()
            .zip(self.per_class.iter())
            .fold(0u64, |sum, (&n, &b)| {
                sum.saturating_add(n.saturating_mul(u64::from(b)))
            })
    }
}

impl Default for PowerWeights {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The default recent-power window `Nx`, in cycles.
pub const DEFAULT_WINDOW_CYCLES: u64 = 1024;

/// Buckets in a [`PowerWindow`]'s ring.
const BUCKETS: u64 = 16;

/// Fractional bits of the fixed-point rates and bucket contents.
const FRAC_BITS: u32 = 16;

/// The weighted instructions one module issued over roughly the last `Nx`
/// cycles (`TB` in the design document), for a module whose waves each issue at a constant
/// rate over their modeled interval.
///
/// Time is in cycles and is split into buckets of `w = Nx / 16` cycles
/// (at least 1); a ring of 16 of them holds the current bucket and the 15
/// before it. The module's rate, the sum of its running waves' rates in
/// units of 2^-16 weighted instructions per cycle, is integrated into the
/// buckets as time advances. Each call costs at most a few passes over the
/// 16 buckets, however far time jumps.
///
/// Each wave's rate is rounded down to a multiple of 2^-16 instructions
/// per cycle, so a wave of `d` cycles is counted short by less than
/// `d / 65536` instructions (less than one for `d < 65536`). Per wave
/// weighted counts below 2^48 and module rates below 2^48 per cycle keep
/// everything exact (the engine's are far smaller); beyond that values
/// saturate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PowerWindow {
    /// Weighted instructions issued in each bucket, in units of 2^-16.
    /// Bucket number `m` (cycles `m·w` to `(m + 1)·w`) is slot `m mod 16`.
    buckets: [u64; BUCKETS as usize],
    /// log2 of the bucket width `w`.
    shift: u32,
    /// Sum of the running waves' rates, 2^-16 instructions per cycle.
    rate: u64,
    /// The rate is integrated up to this cycle; never decreases.
    now: u64,
}

impl PowerWindow {
    /// An empty window at cycle 0 over `window_cycles` cycles, rounded up to
    /// a power of two; a window under 16 cycles becomes 16 (one cycle per
    /// bucket).
    pub const fn new(window_cycles: u64) -> Self {
        let window = match window_cycles.checked_next_power_of_two() {
            Some(w) => w,
            None => 1 << 63,
        };
        let width = if window > BUCKETS {
            window / BUCKETS
        } else {
            1
        };
        Self {
            buckets: [0; BUCKETS as usize],
            shift: width.trailing_zeros(),
            rate: 0,
            now: 0,
        }
    }

    /// `Nx`, the window length in cycles after rounding (16 buckets).
    pub fn window_cycles(&self) -> u64 {
        BUCKETS << self.shift
    }

    /// The cycle of the last advance: what [`PowerWindow::recent`] is as of.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Bucket width `w` in cycles.
    fn width(&self) -> u64 {
        1 << self.shift
    }

    /// First cycle the ring still holds: the start of the bucket 15 before
    /// the current one (0 early on).
    fn ring_start(&self) -> u64 {
        ((self.now >> self.shift).saturating_sub(BUCKETS - 1)) << self.shift
    }

    /// Adds (`add`) or takes back `rate` per cycle over cycles `from..to`,
    /// as far as they are both integrated and still in the ring.
    fn spread(&mut self, rate: u64, from: u64, to: u64, add: bool) {
        let lo = from.max(self.ring_start());
        let hi = to.min(self.now);
        if rate == 0 || lo >= hi {
            return;
        }
        // lo..hi lies inside the ring: at most 16 buckets.
        for m in (lo >> self.shift)..=((hi - 1) >> self.shift) {
            let start = m << self.shift;
            let cycles = hi.min(start.saturating_add(self.width())) - lo.max(start);
            let amount = rate.saturating_mul(cycles);
            let bucket = &mut self.buckets[(m % BUCKETS) as usize];
            *bucket = if add {
                bucket.saturating_add(amount)
            } else {
                bucket.saturating_sub(amount)
            };
        }
    }

    /// Integrates the current rate up to cycle `now`. Buckets that leave
    /// the ring are emptied first, so a jump of a whole ring or more leaves
    /// only what the current rate issued in the ring's span. A `now` before
    /// the last one is ignored: time never goes backwards.
    pub fn advance(&mut self, now: u64) {
        if now <= self.now {
            return;
        }
        let (old, new) = (self.now >> self.shift, now >> self.shift);
        // The slots of the buckets entering the ring still hold the buckets
        // 16 before them.
        let fresh = (new - old).min(BUCKETS);
        for k in 0..fresh {
            self.buckets[((new - k) % BUCKETS) as usize] = 0;
        }
        let from = self.now;
        self.now = now;
        self.spread(self.rate, from, now, true);
    }

    /// A wave issuing `weighted` instructions over `duration` cycles (0 is
    /// taken as 1) starts at cycle `now`. Returns its rate, the token to
    /// pass to [`PowerWindow::stop`].
    ///
    /// If the window has already been advanced past `now`, what the wave
    /// issued since `now` is counted at once, as far as it is in the ring.
    pub fn start(&mut self, now: u64, weighted: u64, duration: u64) -> u64 {
        let rate = weighted.saturating_mul(1 << FRAC_BITS) / duration.max(1);
        self.advance(now);
        self.spread(rate, now, self.now, true);
        self.rate = self.rate.saturating_add(rate);
        rate
    }

    /// The wave of rate `token`, which stopped issuing at cycle `end`, is
    /// retired at cycle `now`. The window is advanced to `now`; if it has
    /// gone past `end` (late retirement), the rate counted from `end` on is
    /// taken back out of the buckets still in the ring, so the result is
    /// the same as a stop exactly at `end`. An `end` beyond the last advance
    /// means the wave was cut short: it stops issuing there.
    pub fn stop(&mut self, end: u64, now: u64, token: u64) {
        self.advance(now);
        self.rate = self.rate.saturating_sub(token);
        self.spread(token, end, self.now, false);
    }

    /// Weighted instructions issued, rounded down, as of the last advance at
    /// cycle `t` ([`PowerWindow::now`]): over cycles `(⌊t / w⌋ − 15)·w`
    /// (or 0, if that is negative) up to but not including `t`, i.e. the
    /// current partial bucket and the 15 whole ones before it, between
    /// `Nx − w` and `Nx − 1` cycles.
    pub fn recent(&self) -> u64 {
        self.buckets
            .iter()
            .fold(0u64, |sum, &b| sum.saturating_add(b))
            >> FRAC_BITS
    }
}

impl Default for PowerWindow {
    fn default() -> Self {
        Self::new(DEFAULT_WINDOW_CYCLES)
    }
}

/// Resource amounts on one module, for the free-resource score.
///
/// As remaining amounts: for the first-class resources the largest
/// contiguous free run, summed over the module's units for registers, the
/// module's own for shared memory; free wave slots summed over the units.
/// As capacities: the same sums on an idle module.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FreeResources {
    /// Vector register blocks.
    pub vgpr: u64,
    /// Scalar register blocks.
    pub sgpr: u64,
    /// Shared-memory blocks.
    pub shared: u64,
    /// Wave slots.
    pub waves: u64,
}

/// The free-resource score's per-resource weights `ah`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreeWeights {
    /// Weight of vector register blocks.
    pub vgpr: u32,
    /// Weight of scalar register blocks.
    pub sgpr: u32,
    /// Weight of shared-memory blocks.
    pub shared: u32,
    /// Weight of wave slots.
    pub waves: u32,
}

impl FreeWeights {
    /// All 1: every resource counts the same, as a share of its capacity.
    /// The document calibrates these from power measured running tasks
    /// that use one resource only; with no power meter, they are equal.
    pub const DEFAULT: Self = Self {
        vgpr: 1,
        sgpr: 1,
        shared: 1,
        waves: 1,
    };
}

impl Default for FreeWeights {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Scale the scores normalise to: 1024 is all of it.
const SCALE: u64 = 1024;

/// `value × 1024 / max`, `value` capped at `max`; 0 when `max` is 0. Never
/// overflows: above 2^54 both lose low bits first, which costs nothing at
/// this precision.
fn per_1024(value: u64, max: u64) -> u64 {
    let value = value.min(max);
    let drop = (u64::BITS - max.leading_zeros()).saturating_sub(54);
    ((value >> drop) * SCALE)
        .checked_div(max >> drop)
        .unwrap_or(0)
}

/// The free-resource score `TA = Σh ah × rh`, each remaining amount `rh` taken as its share of
/// the capacity in 1/1024ths so that blocks of different resources are
/// comparable. A resource of capacity 0 contributes 0; a remaining amount
/// above the capacity counts as the capacity.
pub fn free_score(rem: &FreeResources, cap: &FreeResources, w: &FreeWeights) -> u64 {
    [
        (rem.vgpr, cap.vgpr, w.vgpr),
        (rem.sgpr, cap.sgpr, w.sgpr),
        (rem.shared, cap.shared, w.shared),
        (rem.waves, cap.waves, w.waves),
    ]
    .iter()
    .fold(0u64, |sum, &(r, c, a)| {
        sum.saturating_add(u64::from(a).saturating_mul(per_1024(r, c)))
    })
}

/// How the dispatcher picks among the modules a work-group fits on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ModuleChoice {
    /// The most free resources.
    FreeResources,
    /// The least recent power: the preferred choice, and the default.
    #[default]
    RecentPower,
    /// Both, weighted: the smallest `power_weight × power − free_weight ×
    /// free`, each normalised to 0..=1024 by its maximum over the
    /// candidates.
    Mixed {
        /// Weight of the recent-power term.
        power_weight: u32,
        /// Weight of the free-resource term.
        free_weight: u32,
    },
}

impl ModuleChoice {
    /// The choice a module parameter's value selects: 0 recent power,
    /// 1 free resources, 2 both with equal weights; `None` otherwise.
    pub fn from_param(v: u32) -> Option<Self> {
        match v {
            0 => Some(Self::RecentPower),
            1 => Some(Self::FreeResources),
            2 => Some(Self::Mixed {
                power_weight: 1,
                free_weight: 1,
            }),
            _ => None,
        }
    }
}

/// One candidate module and its two scores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModuleScore {
    /// Module index; the lowest wins the last ties.
    pub module: u32,
    /// Free-resource score, [`free_score`]: larger is more free.
    pub free: u64,
    /// Recent-power score, [`PowerWindow::recent`]: larger is more power.
    pub power: u64,
}

/// The module to dispatch to, `None` if there is no candidate.
///
/// - [`ModuleChoice::RecentPower`]: smallest power; ties go to the larger
///   free score, then the lowest module.
/// - [`ModuleChoice::FreeResources`]: largest free score; ties go to the
///   smaller power, then the lowest module.
/// - [`ModuleChoice::Mixed`]: smallest `power_weight × power_norm −
///   free_weight × free_norm`, where each score is normalised to
///   0..=1024 by the largest among the candidates (all 0 if that is 0);
///   ties go to the lowest module.
pub fn choose(choice: ModuleChoice, candidates: &[ModuleScore]) -> Option<u32> {
    let best = match choice {
        ModuleChoice::RecentPower => candidates
            .iter()
            .min_by_key(|c| (c.power, Reverse(c.free), c.module)),
        ModuleChoice::FreeResources => candidates
            .iter()
            .min_by_key(|c| (Reverse(c.free), c.power, c.module)),
        ModuleChoice::Mixed {
            power_weight,
            free_weight,
        } => {
            let max_power = candidates.iter().map(|c| c.power).max().unwrap_or(0);
            let max_free = candidates.iter().map(|c| c.free).max().unwrap_or(0);
            // Each product is below 2^32 × 2^10: exact in i64.
            let mixed = |c: &ModuleScore| {
                let p = i64::from(power_weight).saturating_mul(per_1024(c.power, max_power) as i64);
                let f = i64::from(free_weight).saturating_mul(per_1024(c.free, max_free) as i64);
                p.saturating_sub(f)
            };
            candidates.iter().min_by_key(|c| (mixed(c), c.module))
        }
    };
    best.map(|c| c.module)
}

#[cfg(test)]
mod tests {
    use super::super::isa::Class;
    use super::super::rng::Rng;
    use super::*;

    #[test]
    fn weights_weigh_each_class() {
        let mut c = Counters::default();
        c.per_class[Class::Move as usize] = 10;
        c.per_class[Class::Alu as usize] = 5;
        c.per_class[Class::Load as usize] = 3;
        c.per_class[Class::Store as usize] = 2;
        c.per_class[Class::Matrix as usize] = 7;
        c.per_class[Class::Compare as usize] = 4;
        c.per_class[Class::Jump as usize] = 6;
        let w = PowerWeights::default();
        assert_eq!(w.weigh(&c), 10 + 10 + 12 + 8 + 56 + 4 + 6);
        assert_eq!(w.weigh(&Counters::default()), 0);
        c.per_class[Class::Matrix as usize] = u64::MAX / 2;
        assert_eq!(w.weigh(&c), u64::MAX);
    }

    #[test]
    fn free_score_normalises_each_resource() {
        let cap = FreeResources {
            vgpr: 512,
            sgpr: 256,
            shared: 48,
            waves: 64,
        };
        let half = FreeResources {
            vgpr: 256,
            sgpr: 128,
            shared: 24,
            waves: 32,
        };
        let w = FreeWeights::default();
        assert_eq!(free_score(&cap, &cap, &w), 4 * 1024);
        assert_eq!(free_score(&half, &cap, &w), 4 * 512);
        assert_eq!(free_score(&FreeResources::default(), &cap, &w), 0);
        // Weights multiply; capacity 0 contributes nothing; excess is capped.
        let w2 = FreeWeights {
            vgpr: 3,
            sgpr: 0,
            shared: 1,
            waves: 2,
        };
        assert_eq!(free_score(&half, &cap, &w2), 3 * 512 + 512 + 2 * 512);
        let no_shared = FreeResources { shared: 0, ..cap };
        assert_eq!(free_score(&half, &no_shared, &w), 3 * 512);
        let over = FreeResources {
            vgpr: 10_000,
            ..half
        };
        assert_eq!(free_score(&over, &cap, &w), 1024 + 3 * 512);
        // Huge values and weights neither overflow nor lose the ratio.
        let big = FreeResources {
            vgpr: u64::MAX,
            sgpr: u64::MAX,
            shared: u64::MAX,
            waves: u64::MAX,
        };
        let big_half = FreeResources {
            vgpr: u64::MAX / 2,
            ..big
        };
        let heavy = FreeWeights {
            vgpr: u32::MAX,
            sgpr: u32::MAX,
            shared: u32::MAX,
            waves: u32::MAX,
        };
        assert_eq!(free_score(&big, &big, &heavy), 4 * 1024 * u32::MAX as u64);
        assert_eq!(free_score(&big_half, &big, &w), 511 + 3 * 1024);
        assert_eq!(per_1024(3, 4), 768);
        assert_eq!(per_1024(1 << 60, 1 << 61), 512);
        assert_eq!(per_1024(5, 0), 0);
    }

    #[test]
    fn params_select_choices() {
        assert_eq!(ModuleChoice::default(), ModuleChoice::RecentPower);
        assert_eq!(ModuleChoice::from_param(0), Some(ModuleChoice::RecentPower));
        assert_eq!(
            ModuleChoice::from_param(1),
            Some(ModuleChoice::FreeResources)
        );
        assert_eq!(
            ModuleChoice::from_param(2),
            Some(ModuleChoice::Mixed {
                power_weight: 1,
                free_weight: 1
            })
        );
        assert_eq!(ModuleChoice::from_param(3), None);
        assert_eq!(ModuleChoice::from_param(u32::MAX), None);
    }

    fn score(module: u32, free: u64, power: u64) -> ModuleScore {
        ModuleScore {
            module,
            free,
            power,
        }
    }

    /// Naive least-recent-power choice: scan, keeping the first best by power, free, module.
    fn ref_power(c: &[ModuleScore]) -> Option<u32> {
        let mut best: Option<ModuleScore> = None;
        for &x in c {
            let better = match best {
                None => true,
                Some(b) => {
                    x.power < b.power
                        || (x.power == b.power && x.free > b.free)
                        || (x.power == b.power && x.free == b.free && x.module < b.module)
                }
            };
            if better {
                best = Some(x);
            }
        }
        best.map(|b| b.module)
    }

    /// Naive most-free-resources choice: scan, keeping the first best by free, power, module.
    fn ref_free(c: &[ModuleScore]) -> Option<u32> {
        let mut best: Option<ModuleScore> = None;
        for &x in c {
            let better = match best {
                None => true,
                Some(b) => {
                    x.free > b.free
                        || (x.free == b.free && x.power < b.power)
                        || (x.free == b.free && x.power == b.power && x.module < b.module)
                }
            };
            if better {
                best = Some(x);
            }
        }
        best.map(|b| b.module)
    }

    /// Up to 16 candidates with distinct module numbers in random order and
    /// scores below `range` (small ranges make many ties).
    fn candidates(rng: &mut Rng, range: u64, out: &mut [ModuleScore; 16]) -> usize {
        let n = rng.below(17) as usize;
        let mut ids = [0u32; 64];
        for (i, id) in ids.iter_mut().enumerate() {
            *id = i as u32;
        }
        for i in 0..n {
            let j = i + rng.below((64 - i) as u32) as usize;
            ids.swap(i, j);
            out[i] = score(ids[i], rng.below_u64(range), rng.below_u64(range));
        }
        n
    }

    #[test]
    fn power_and_free_choices_match_naive_scans() {
        let mut rng = Rng(0xc10);
        let mut buf = [ModuleScore::default(); 16];
        for round in 0..20_000 {
            let range = [2, 5, 1000, u64::MAX][round % 4];
            let n = candidates(&mut rng, range, &mut buf);
            let c = &buf[..n];
            assert_eq!(choose(ModuleChoice::RecentPower, c), ref_power(c), "{c:?}");
            assert_eq!(choose(ModuleChoice::FreeResources, c), ref_free(c), "{c:?}");
        }
    }

    #[test]
    fn tie_rules() {
        let c = [
            score(3, 10, 5),
            score(1, 20, 5),
            score(2, 20, 5),
            score(0, 20, 9),
        ];
        // Power 5 three times: larger free (1 and 2), then lower module.
        assert_eq!(choose(ModuleChoice::RecentPower, &c), Some(1));
        // Free 20 three times: smaller power (1 and 2), then lower module.
        assert_eq!(choose(ModuleChoice::FreeResources, &c), Some(1));
        let same = [score(7, 4, 4), score(5, 4, 4), score(6, 4, 4)];
        for choice in [
            ModuleChoice::RecentPower,
            ModuleChoice::FreeResources,
            ModuleChoice::default(),
        ] {
            assert_eq!(choose(choice, &same), Some(5));
        }
        assert_eq!(
            choose(
                ModuleChoice::Mixed {
                    power_weight: 1,
                    free_weight: 1
                },
                &same
            ),
            Some(5)
        );
        for choice in [0, 1, 2].map(|v| ModuleChoice::from_param(v).unwrap()) {
            assert_eq!(choose(choice, &[]), None);
        }
    }

    #[test]
    fn mixed_weighs_normalised_scores() {
        // Norms (power, free): m0 (1024, 1024), m1 (512, 256), m2 (0, 0).
        let c = [score(0, 400, 80), score(1, 100, 40), score(2, 0, 0)];
        let mix = |power_weight, free_weight| ModuleChoice::Mixed {
            power_weight,
            free_weight,
        };
        // 1:1 -> 0, 256, 0: tie between m0 and m2, lowest module.
        assert_eq!(choose(mix(1, 1), &c), Some(0));
        // 1:2 -> -1024, 0, 0.
        assert_eq!(choose(mix(1, 2), &c), Some(0));
        // 2:1 -> 1024, 768, 0.
        assert_eq!(choose(mix(2, 1), &c), Some(2));
        // All zero: every score is 0, lowest module.
        let zero = [score(4, 0, 0), score(2, 0, 0)];
        assert_eq!(choose(mix(1, 1), &zero), Some(2));
        // Huge scores and weights do not overflow.
        let huge = [score(1, u64::MAX, u64::MAX), score(0, u64::MAX / 3, 1)];
        assert_eq!(choose(mix(u32::MAX, u32::MAX), &huge), Some(0));
        assert_eq!(choose(mix(0, u32::MAX), &huge), Some(1));
    }

    #[test]
    fn mixed_with_one_weight_zero_is_the_pure_choice() {
        let mut rng = Rng(0x9c10);
        for _ in 0..5000 {
            let n = 1 + rng.below(16) as usize;
            // Distinct scores up to 1024: distinct after normalisation too,
            // as each step of 1 in a score moves its norm by at least 1.
            let mut c = [ModuleScore::default(); 16];
            let (mut powers, mut frees) = ([u64::MAX; 16], [u64::MAX; 16]);
            for (i, s) in c.iter_mut().enumerate().take(n) {
                let pick = |rng: &mut Rng, taken: &[u64]| loop {
                    let v = rng.below_u64(1025);
                    if !taken.contains(&v) {
                        break v;
                    }
                };
                powers[i] = pick(&mut rng, &powers[..i]);
                frees[i] = pick(&mut rng, &frees[..i]);
                *s = score(rng.below(64), frees[i], powers[i]);
            }
            let c = &c[..n];
            let w = 1 + rng.below(100);
            let pure_power = ModuleChoice::Mixed {
                power_weight: w,
                free_weight: 0,
            };
            let pure_free = ModuleChoice::Mixed {
                power_weight: 0,
                free_weight: w,
            };
            assert_eq!(
                choose(pure_power, c),
                choose(ModuleChoice::RecentPower, c),
                "{c:?}"
            );
            assert_eq!(
                choose(pure_free, c),
                choose(ModuleChoice::FreeResources, c),
                "{c:?}"
            );
        }
    }

    #[test]
    fn window_sizes_round_up_to_powers_of_two() {
        assert_eq!(
            PowerWindow::default().window_cycles(),
            DEFAULT_WINDOW_CYCLES
        );
        assert_eq!(PowerWindow::new(1000).window_cycles(), 1024);
        assert_eq!(PowerWindow::new(64).window_cycles(), 64);
        assert_eq!(PowerWindow::new(8).window_cycles(), 16);
        assert_eq!(PowerWindow::new(0).window_cycles(), 16);
        assert_eq!(PowerWindow::new(u64::MAX).window_cycles(), 1 << 63);
    }

    #[test]
    fn whole_wave_inside_the_window() {
        // Rate 2 per cycle exactly: nothing is lost to rounding.
        let mut pw = PowerWindow::default();
        let t = pw.start(100, 1000, 500);
        pw.advance(350);
        assert_eq!(pw.recent(), 500);
        pw.stop(600, 600, t);
        pw.advance(700);
        assert_eq!(pw.recent(), 1000);
        // Any wave shorter than 65536 cycles is off by at most one.
        let mut rng = Rng(0x1024);
        for _ in 0..2000 {
            let mut pw = PowerWindow::new(1 << 20);
            let w = 1 << 16;
            let start = rng.below_u64(8 * w);
            let d = 1 + rng.below_u64(65535);
            let weighted = rng.below_u64(1 << 40);
            let token = pw.start(start, weighted, d);
            pw.stop(start + d, start + d, token);
            pw.advance(start + d + rng.below_u64(4 * w));
            // Still within the 15 buckets before the current one.
            assert!(pw.now() < 15 * w);
            let got = pw.recent();
            assert!(
                got == weighted || got + 1 == weighted,
                "{weighted} over {d}: {got}"
            );
        }
    }

    #[test]
    fn window_covering_half_a_wave() {
        // w = 64; at cycle 1984 (bucket 31) the window is 1024..1984.
        let mut pw = PowerWindow::new(1024);
        let t = pw.start(64, 1920 * 3, 1920);
        pw.advance(1000);
        pw.advance(1984);
        assert_eq!(pw.recent(), 960 * 3);
        // Retired at its end: what stays in the window is what it issued.
        pw.stop(1984, 1984, t);
        pw.advance(2048 + 30);
        // Window 1088..2078: 896 of its cycles, 3 instructions each.
        assert_eq!(pw.recent(), 896 * 3);
        // A wave of odd rate, half in the window: half, give or take one.
        let mut pw = PowerWindow::new(1024);
        let t = pw.start(64, 1001, 1920);
        pw.stop(1984, 1984, t);
        assert!((500..=501).contains(&pw.recent()), "{}", pw.recent());
    }

    #[test]
    fn late_stop_counts_like_an_on_time_one() {
        let mut rng = Rng(0x1a7e);
        for _ in 0..500 {
            let nx = 1 << (4 + rng.below(8));
            let (mut on_time, mut late) = (PowerWindow::new(nx), PowerWindow::new(nx));
            let start = rng.below_u64(3000);
            let d = 1 + rng.below_u64(2000);
            let weighted = rng.below_u64(1 << 30);
            // Another wave keeps running across it.
            for pw in [&mut on_time, &mut late] {
                pw.start(0, 7 << 20, 1 << 20);
            }
            let a = on_time.start(start, weighted, d);
            let b = late.start(start, weighted, d);
            assert_eq!(a, b);
            let end = start + d;
            on_time.stop(end, end, a);
            let overshoot = end + rng.below_u64(3 * nx);
            late.advance(overshoot);
            late.stop(end, overshoot, b);
            for probe in [overshoot, overshoot + rng.below_u64(nx), overshoot + 2 * nx] {
                on_time.advance(probe);
                late.advance(probe);
                assert_eq!(on_time.recent(), late.recent());
            }
            assert_eq!(on_time, late);
        }
    }

    #[test]
    fn nothing_left_after_a_whole_window() {
        let mut pw = PowerWindow::new(256);
        let t1 = pw.start(10, 5000, 300);
        let t2 = pw.start(50, 9999, 1);
        pw.stop(51, 60, t2);
        pw.stop(310, 400, t1);
        assert!(pw.recent() > 0);
        pw.advance(310 + 257);
        assert_eq!(pw.recent(), 0);
        // A wave running on at one instruction per cycle: a huge jump leaves
        // exactly the window's span, 15 whole buckets of 16 cycles and 8
        // cycles of the current one.
        let t = pw.start(1000, 1 << 20, 1 << 20);
        pw.advance(1_000_000 * 256 + 8);
        assert_eq!(pw.recent(), 15 * 16 + 8);
        // Time going backwards is ignored.
        pw.advance(5);
        assert_eq!(pw.recent(), 15 * 16 + 8);
        // Retired long after its end: all of it is taken back.
        pw.stop(1000 + (1 << 20), 1_000_000 * 256 + 8, t);
        assert_eq!(pw.recent(), 0);
        pw.advance(u64::MAX - 3);
        assert_eq!(pw.recent(), 0);
        // At the end of time nothing overflows.
        let t = pw.start(u64::MAX - 2, u64::MAX, 0);
        pw.advance(u64::MAX);
        pw.stop(u64::MAX, u64::MAX, t);
        assert_eq!(pw.recent(), u64::MAX >> 16);
    }

    #[test]
    fn start_in_the_past_counts_from_its_start() {
        let mut a = PowerWindow::new(64);
        let mut b = PowerWindow::new(64);
        a.advance(100);
        let ta = a.start(90, 400, 20);
        b.advance(90);
        let tb = b.start(90, 400, 20);
        b.advance(100);
        assert_eq!(a, b);
        a.stop(110, 120, ta);
        b.stop(110, 120, tb);
        assert_eq!(a.recent(), 400);
        assert_eq!(a, b);
    }

    /// A wave as the naive reference sees it.
    #[derive(Clone, Copy)]
    struct RefWave {
        start: u64,
        /// Where it stopped issuing; `u64::MAX` while it runs.
        end: u64,
        /// Its planned end, for the stop call.
        planned: u64,
        rate: u64,
        token: u64,
    }

    /// Weighted instructions the waves issued over the window a
    /// `PowerWindow` of bucket width `w` covers at `now`, cycle by cycle.
    fn ref_recent(waves: &[RefWave], w: u64, now: u64) -> u64 {
        let from = (now / w).saturating_sub(15) * w;
        let mut sum = 0;
        for x in waves {
            for _cycle in x.start.max(from)..x.end.min(now) {
                sum += x.rate;
            }
        }
        sum >> 16
    }

    #[test]
    fn random_sequences_match_a_per_cycle_reference() {
        let mut rng = Rng(0xca11);
        for round in 0..300 {
            let nx = [16, 32, 64, 64][round % 4];
            let w = (nx / 16).max(1);
            let mut pw = PowerWindow::new(nx);
            let mut waves = [RefWave {
                start: 0,
                end: 0,
                planned: 0,
                rate: 0,
                token: 0,
            }; 256];
            let mut n = 0;
            let mut now = 0u64;
            while now < 10_000 && n < waves.len() {
                match rng.below(8) {
                    0..=1 => {
                        // Usually now or soon, sometimes in the recent past.
                        let at = match rng.below(4) {
                            0 => now.saturating_sub(rng.below_u64(2 * nx)),
                            1 => now + rng.below_u64(30),
                            _ => now,
                        };
                        let weighted = rng.below_u64(5000);
                        let d = rng.below_u64(300);
                        let token = pw.start(at, weighted, d);
                        now = now.max(at);
                        let rate = (weighted << 16) / d.max(1);
                        assert_eq!(token, rate);
                        let planned = at + d.max(1);
                        waves[n] = RefWave {
                            start: at,
                            end: u64::MAX,
                            planned,
                            rate,
                            token,
                        };
                        n += 1;
                    }
                    2..=3 => {
                        let running = waves[..n].iter().filter(|x| x.end == u64::MAX).count();
                        if running == 0 {
                            continue;
                        }
                        let k = rng.below(running as u32) as usize;
                        let x = waves[..n]
                            .iter_mut()
                            .filter(|x| x.end == u64::MAX)
                            .nth(k)
                            .unwrap();
                        // On time, late, or (cut short) before its end.
                        let at = match rng.below(3) {
                            0 => x.planned,
                            1 => x.planned + rng.below_u64(3 * nx),
                            _ => now + rng.below_u64(20),
                        };
                        pw.stop(x.planned, at, x.token);
                        now = now.max(at);
                        x.end = x.planned.min(now);
                    }
                    4 => pw.advance(now.saturating_sub(rng.below_u64(50))),
                    _ => {
                        now += if rng.below(10) == 0 {
                            rng.below_u64(3 * nx)
                        } else {
                            rng.below_u64(8)
                        };
                        pw.advance(now);
                    }
                }
                assert_eq!(pw.now(), now);
                assert_eq!(
                    pw.recent(),
                    ref_recent(&waves[..n], w, now),
                    "round {round} at {now}"
                );
            }
            // Everything stopped and a whole window later: empty.
            for x in waves[..n].iter_mut().filter(|x| x.end == u64::MAX) {
                pw.stop(x.planned, now, x.token);
                x.end = x.planned.min(now);
            }
            assert_eq!(pw.recent(), ref_recent(&waves[..n], w, now));
            let last = waves[..n].iter().map(|x| x.end).max().unwrap_or(0).max(now);
            pw.advance(last + nx + 1);
            assert_eq!(pw.recent(), 0);
        }
    }
}
