// SPDX-License-Identifier: GPL-2.0

//! Time slices: how long each loaded context runs per turn.
//!
//! The literal formula `tc = t0 × wz ÷ wc` gives a larger weight a shorter
//! slice, against the intent that a larger weight gets more time, so both
//! readings exist and are chosen at run time ([`SliceFormula`]). Weights enter
//! as [`Weight::milli`] fixed point (weight × 1000): the kernel has no floating
//! point, and a sum of fractions has no exact common denominator in 128 bits.
//! Intermediates are `u128` products; divisions go through [`div_sat`], so
//! nothing divides by zero or calls a `u128` division intrinsic.
//!
//! Infinite weights (contexts that never ran) are handled by [`slices`]:
//! each stands in as twice the largest finite weight in the loaded set.
//! That keeps them ranked above every context that ran, as in stage 1, but
//! by a bounded margin: under `proportional` a newcomer gets at most twice
//! the share of the most deserving old context rather than the whole round,
//! under `literal` the shortest slice, as that formula says of large
//! weights. After one turn it has a real weight. When every loaded context
//! is infinite they are all equal, so the formula gives what equal weights
//! give: `t0` each (`proportional`) or `n × t0` (`literal`).

use super::pool::{
    div_sat,
    Weight, //
};

/// Which slice-length formula stage 2 uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SliceFormula {
    /// `tc = t0 × n × wc ÷ wz`: shares follow weights and a round of `n`
    /// contexts lasts `n × t0`, the intent of the weights. The default.
    #[default]
    Proportional,
    /// `tc = t0 × wz ÷ wc`: the slice formula exactly as first written.
    Literal,
}

impl SliceFormula {
    /// Every formula, in the order they are listed to users.
    pub const ALL: [Self; 2] = [Self::Proportional, Self::Literal];

    /// The formula's user-visible name: `"proportional"` or `"literal"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Proportional => "proportional",
            Self::Literal => "literal",
        }
    }

    /// The formula called `name`, or `None`. One trailing newline is
    /// ignored, as `echo` appends one when writing a parameter file.
    pub fn from_name(name: &str) -> Option<Self> {
        let name = name.strip_suffix('\n').unwrap_or(name);
        Self::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// Time-slice parameters, all in ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceParams {
    /// The base GPU time slice `t0`.
    pub t0_ns: u64,
    /// Shortest slice: bounds the switching overhead whatever the weights.
    /// Wins over `max_ns` if the two cross.
    pub min_ns: u64,
    /// Longest slice: bounds how long the other loaded contexts wait.
    pub max_ns: u64,
}

impl SliceParams {
    /// `tc` clamped into `[min_ns, max_ns]`; the floor is applied last so
    /// that crossed bounds never yield a slice shorter than `min_ns`.
    pub fn clamp(&self, tc: u64) -> u64 {
        tc.min(self.max_ns).max(self.min_ns)
    }
}

/// The slice of one loaded context, clamped by `params`.
///
/// `n_loaded` contexts are loaded, this one's weight × 1000 is `wc_milli`
/// and the sum over all of them (this one included) is `wz_milli`; both
/// must be finite (see [`slices`] for infinite weights). Edge cases follow
/// the limits of the formulas: `wz_milli` 0 means all weights are 0, hence
/// equal, and gives what equal weights give (`t0`, or `n × t0` for
/// `literal`); `wc_milli` 0 with a positive sum gives the shortest slice
/// (`proportional`) or the longest (`literal`). Results saturate at
/// `u64::MAX`; `proportional` may be off by up to `n` ns when
/// `t0 × n × wc` exceeds 2^128, which takes a `t0` of years.
pub fn slice_len(
    formula: SliceFormula,
    params: &SliceParams,
    n_loaded: usize,
    wc_milli: u64,
    wz_milli: u128,
) -> u64 {
    let t0 = u128::from(params.t0_ns);
    let n = n_loaded as u128;
    let tc = if wz_milli == 0 {
        match formula {
            SliceFormula::Proportional => params.t0_ns,
            SliceFormula::Literal => div_sat(t0.saturating_mul(n), 1),
        }
    } else {
        match formula {
            // t0 × wc is exact in u128; if the × n overflows, scaling the
            // quotient instead is off by less than n ns.
            SliceFormula::Proportional => {
                let part = t0 * u128::from(wc_milli);
                match part.checked_mul(n) {
                    Some(num) => div_sat(num, wz_milli),
                    None => div_sat(u128::from(div_sat(part, wz_milli)).saturating_mul(n), 1),
                }
            }
            // t0 × wz ≥ 2^128 with wc < 2^64 means tc ≥ 2^64, so saturating
            // the product still saturates the result correctly.
            SliceFormula::Literal => div_sat(t0.saturating_mul(wz_milli), u128::from(wc_milli)),
        }
    };
    params.clamp(tc)
}

/// The [`Weight::milli`] that `w` counts as in the formulas: its own, or
/// `standin` when it is infinite.
fn effective_milli(w: &Weight, standin: u64) -> u64 {
    if w.is_infinite() {
        standin
    } else {
        w.milli()
    }
}

/// The stand-in for infinite weights in `weights`: twice the largest
/// finite weight, at least 1 milli so it stays above weights of 0; 1 when
/// there is no finite weight, as infinite weights are then all equal.
pub fn infinite_standin_milli(weights: &[Weight]) -> u64 {
    standin_of(weights.iter().copied())
}

fn standin_of(weights: impl Iterator<Item = Weight>) -> u64 {
    let largest = weights
        .filter(|w| !w.is_infinite())
        .map(|w| w.milli())
        .max();
    largest.map_or(1, |m| m.saturating_mul(2).max(1))
}

/// Stage 2 over one loaded set: what every slice depends on besides the
/// context's own weight, gathered in one pass so callers that keep their
/// contexts in their own structures need no weight array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceSet {
    formula: SliceFormula,
    params: SliceParams,
    n_loaded: usize,
    standin_milli: u64,
    wz_milli: u128,
}

impl SliceSet {
    /// The loaded set whose weights `weights` yields (called twice: once
    /// for the stand-in, once for the sum). O(n).
    pub fn new<I>(formula: SliceFormula, params: SliceParams, weights: I) -> Self
    where
        I: Iterator<Item = Weight> + Clone,
    {
        let standin_milli = standin_of(weights.clone());
        let (mut n_loaded, mut wz_milli) = (0usize, 0u128);
        // At most n × 2^64, so the sum cannot overflow for any n.
        for w in weights {
            n_loaded += 1;
            wz_milli += u128::from(effective_milli(&w, standin_milli));
        }
        Self {
            formula,
            params,
            n_loaded,
            standin_milli,
            wz_milli,
        }
    }

    /// The slice of the loaded context whose weight is `w`.
    pub fn slice_of(&self, w: &Weight) -> u64 {
        let wc = effective_milli(w, self.standin_milli);
        slice_len(self.formula, &self.params, self.n_loaded, wc, self.wz_milli)
    }
}

/// Stage 2 for the whole loaded set: writes the slice of the context with
/// weight `weights[i]` to `out[i]` and returns how many were written
/// (`min(weights.len(), out.len())`). `n` and `wz` always cover all of
/// `weights`. Infinite weights are replaced as described in the module
/// documentation. O(n), no allocation.
pub fn slices(
    formula: SliceFormula,
    params: &SliceParams,
    weights: &[Weight],
    out: &mut [u64],
) -> usize {
    let set = SliceSet::new(formula, *params, weights.iter().copied());
    let mut written = 0;
    for (o, w) in out.iter_mut().zip(weights) {
        *o = set.slice_of(w);
        written += 1;
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const MIN: u64 = 60_000 * MS;
    /// t0 = 30 ms, bounds wide enough not to interfere.
    const P: SliceParams = SliceParams {
        t0_ns: 30 * MS,
        min_ns: 1,
        max_ns: u64::MAX,
    };

    /// A weight of exactly `num / den` over an hour of lifetime.
    fn weight(num: u64, den: u64) -> Weight {
        Weight::new(60 * MIN, 0, 60 * MIN * den / num)
    }

    #[test]
    fn names_round_trip() {
        for f in SliceFormula::ALL {
            assert_eq!(SliceFormula::from_name(f.name()), Some(f));
        }
        assert_eq!(
            SliceFormula::from_name("literal\n"),
            Some(SliceFormula::Literal)
        );
        assert_eq!(SliceFormula::from_name("Literal"), None);
        assert_eq!(SliceFormula::from_name(""), None);
        assert_eq!(SliceFormula::default(), SliceFormula::Proportional);
    }

    #[test]
    fn document_example() {
        // 10 loaded, weights sum to 30, this one weighs 5.
        let lit = slice_len(SliceFormula::Literal, &P, 10, 5_000, 30_000);
        assert_eq!(lit, 6 * P.t0_ns);
        let prop = slice_len(SliceFormula::Proportional, &P, 10, 5_000, 30_000);
        assert_eq!(prop, P.t0_ns * 10 * 5 / 30);
        // The same through whole-set computation from real weights.
        let w = [5, 5, 5, 3, 3, 3, 2, 2, 1, 1].map(|x| weight(x, 1));
        assert_eq!(w.iter().map(Weight::milli).sum::<u64>(), 30_000);
        let mut out = [0; 10];
        assert_eq!(slices(SliceFormula::Literal, &P, &w, &mut out), 10);
        assert_eq!(out[0], 6 * P.t0_ns);
        assert_eq!(out[9], 30 * P.t0_ns);
        assert_eq!(slices(SliceFormula::Proportional, &P, &w, &mut out), 10);
        assert_eq!(out[0], P.t0_ns * 10 * 5 / 30);
        assert_eq!(out[9], P.t0_ns * 10 / 30);
        // A proportional round lasts n × t0, give or take rounding.
        let round: u64 = out.iter().sum();
        assert!(round <= 10 * P.t0_ns && round + 10 >= 10 * P.t0_ns);
    }

    #[test]
    fn clamps() {
        let p = SliceParams {
            t0_ns: 30 * MS,
            min_ns: 10 * MS,
            max_ns: 60 * MS,
        };
        assert_eq!(
            slice_len(SliceFormula::Literal, &p, 10, 5_000, 30_000),
            60 * MS
        );
        assert_eq!(
            slice_len(SliceFormula::Proportional, &p, 10, 1_000, 30_000),
            10 * MS
        );
        assert_eq!(
            slice_len(SliceFormula::Proportional, &p, 10, 5_000, 30_000),
            50 * MS
        );
        let crossed = SliceParams {
            t0_ns: 30 * MS,
            min_ns: 20 * MS,
            max_ns: 5 * MS,
        };
        assert_eq!(crossed.clamp(0), 20 * MS);
        assert_eq!(crossed.clamp(u64::MAX), 20 * MS);
    }

    #[test]
    fn zero_weights_never_divide_by_zero() {
        for f in SliceFormula::ALL {
            // All weights 0: equal weights.
            let equal = if f == SliceFormula::Literal {
                4 * P.t0_ns
            } else {
                P.t0_ns
            };
            assert_eq!(slice_len(f, &P, 4, 0, 0), equal);
        }
        assert_eq!(slice_len(SliceFormula::Literal, &P, 4, 0, 3_000), P.max_ns);
        assert_eq!(
            slice_len(SliceFormula::Proportional, &P, 4, 0, 3_000),
            P.min_ns
        );
        assert_eq!(
            slice_len(SliceFormula::Proportional, &P, 0, 1_000, 1_000),
            P.min_ns
        );
    }

    #[test]
    fn extreme_values_saturate() {
        let p = SliceParams {
            t0_ns: u64::MAX,
            min_ns: 0,
            max_ns: u64::MAX,
        };
        let wz = u64::MAX as u128 * 64;
        assert_eq!(slice_len(SliceFormula::Literal, &p, 64, 1, wz), u64::MAX);
        assert_eq!(
            slice_len(SliceFormula::Proportional, &p, usize::MAX, u64::MAX, 1),
            u64::MAX
        );
        // Exact answer u64::MAX; the overflow fallback is off by under n.
        assert!(slice_len(SliceFormula::Proportional, &p, 64, u64::MAX, wz) > u64::MAX - 64);
        let w = [Weight::new(u64::MAX, 0, 1), Weight::new(u64::MAX, 0, 0)];
        let mut out = [0; 2];
        assert_eq!(slices(SliceFormula::Literal, &p, &w, &mut out), 2);
        assert_eq!(out, [u64::MAX; 2]);
    }

    #[test]
    fn infinite_weight_stands_in_as_twice_the_largest() {
        let never = Weight::new(60 * MIN, 30 * MIN, 0);
        let w = [weight(4, 1), never, weight(2, 1), weight(2, 1)];
        assert_eq!(infinite_standin_milli(&w), 8_000);
        let mut out = [0; 4];
        slices(SliceFormula::Proportional, &P, &w, &mut out);
        // wz = 4 + 8 + 2 + 2 = 16: shares 4:8:2:2 of a 4 × t0 round.
        assert_eq!(out, [P.t0_ns, 2 * P.t0_ns, P.t0_ns / 2, P.t0_ns / 2]);
        slices(SliceFormula::Literal, &P, &w, &mut out);
        assert_eq!(out, [4 * P.t0_ns, 2 * P.t0_ns, 8 * P.t0_ns, 8 * P.t0_ns]);
        // Above weights of 0, which leave a stand-in of 0 otherwise.
        assert_eq!(infinite_standin_milli(&[Weight::new(0, 0, 5), never]), 1);
    }

    #[test]
    fn all_infinite_are_equal() {
        let w = [
            Weight::new(100, 0, 0),
            Weight::new(100, 90, 0),
            Weight::new(100, 50, 0),
        ];
        let mut out = [0; 3];
        slices(SliceFormula::Proportional, &P, &w, &mut out);
        assert_eq!(out, [P.t0_ns; 3]);
        slices(SliceFormula::Literal, &P, &w, &mut out);
        assert_eq!(out, [3 * P.t0_ns; 3]);
    }

    #[test]
    fn output_bounded_by_buffer_but_sum_covers_all() {
        let w = [weight(1, 1), weight(1, 1), weight(2, 1)];
        let mut out = [0; 1];
        assert_eq!(slices(SliceFormula::Proportional, &P, &w, &mut out), 1);
        assert_eq!(out[0], P.t0_ns * 3 / 4);
        assert_eq!(slices(SliceFormula::Proportional, &P, &[], &mut out), 0);
    }
}
