// SPDX-License-Identifier: GPL-2.0

//! Occupancy maps for benchmarks: random and fragmented resource bitmaps.
//!
//! The host benchmark (`rust/vgsched-bench`) and the in-kernel one
//! (`drivers/gpu/drm/vgsched/bench.rs`) build their maps with these
//! functions from the same [`Rng`] seeds, so both measure the very same
//! bitmaps. Everything here is integer arithmetic (the kernel has no
//! floating point) and consumes the generator in a fixed, documented order.
//!
//! Maps follow the [`super::bitmask`] convention: bit `i` in word `i / 64` at
//! position `i % 64`, a set bit meaning *in use*. A generator fills the
//! first `nbits` bits of the slice and marks every bit after them, up to the
//! end of the slice, in use, so a reader that ignores `nbits` sees no
//! phantom free space.

use super::rng::Rng;

/// `log2` of [`Density`]'s unit: probabilities are multiples of `2^-16`.
pub const DENSITY_BITS: u32 = 16;

/// Probability that a block is in use, as a multiple of `2^-16`
/// (0 ..= 65536). Dyadic, so that the random generator can draw it exactly
/// from whole random words (see [`random`]); 1/4, 1/2 and 3/4 are exact,
/// other values are rounded to the nearest `2^-16`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Density(u32);

impl Density {
    /// Every block free.
    pub const EMPTY: Self = Self(0);
    /// Every block used.
    pub const FULL: Self = Self(1 << DENSITY_BITS);

    /// `n / 65536`, saturating at 1.
    pub const fn from_frac16(n: u32) -> Self {
        Self(if n > 1 << DENSITY_BITS {
            1 << DENSITY_BITS
        } else {
            n
        })
    }

    /// `num / den` rounded to the nearest `2^-16`, saturating at 1; a zero
    /// `den` gives [`Density::FULL`].
    pub const fn from_ratio(num: u32, den: u32) -> Self {
        if den == 0 || num >= den {
            return Self::FULL;
        }
        let scaled = ((num as u64) << DENSITY_BITS) + den as u64 / 2;
        Self((scaled / den as u64) as u32)
    }

    /// `per_mille / 1000`, rounded to the nearest `2^-16`.
    pub const fn per_mille(per_mille: u32) -> Self {
        Self::from_ratio(per_mille, 1000)
    }

    /// The probability as a multiple of `2^-16`.
    pub const fn frac16(self) -> u32 {
        self.0
    }

    /// The probability in thousandths, rounded to nearest (for labels).
    pub const fn as_per_mille(self) -> u32 {
        ((self.0 as u64 * 1000 + (1 << (DENSITY_BITS - 1))) >> DENSITY_BITS) as u32
    }
}

/// Marks bits `nbits..` of the slice in use (see the module docs).
fn close_tail(map: &mut [u64], nbits: usize) {
    super::bitmask::set_range(map, nbits, usize::MAX);
}

/// One word whose bits are independently set with probability `p`.
///
/// With `p = 0.b1 b2 .. b16` in binary, start from all zeros and, for `bk`
/// from the last one set up to `b1`, OR in a fresh random word where
/// `bk = 1` and AND with one where `bk = 0`: each step maps a bit's
/// probability `q` to `(1 + q) / 2` or `q / 2`, which builds `p` digit by
/// digit. This is the bitwise comparison of a uniform 16-bit number with
/// `p`, for 64 lanes at once, at most 16 random words instead of 64 draws.
fn random_word(rng: &mut Rng, p: Density) -> u64 {
    let t = p.frac16();
    if t == 0 {
        return 0;
    }
    if t >= 1 << DENSITY_BITS {
        return !0;
    }
    let mut x = 0u64;
    for j in t.trailing_zeros()..DENSITY_BITS {
        let r = rng.next_u64();
        x = if (t >> j) & 1 == 1 { x | r } else { x & r };
    }
    x
}

/// Fills `map` with independent blocks: each of the first `nbits` bits is in
/// use with probability `p`, exactly (no rounding beyond [`Density`]'s).
///
/// Consumes, for each of the first `nbits.div_ceil(64)` words in order,
/// `16 - p.frac16().trailing_zeros()` random words (one for p = 1/2, two for
/// 1/4 and 3/4, none for 0 and 1); bits past `nbits` are set afterwards.
pub fn random(rng: &mut Rng, map: &mut [u64], nbits: usize, p: Density) {
    let words = super::bitmask::map_words(nbits).min(map.len());
    for w in &mut map[..words] {
        *w = random_word(rng, p);
    }
    close_tail(map, nbits);
}

/// Run lengths of the fragmented generator: inclusive ranges of used and of
/// free run lengths, in blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Runs {
    /// Shortest and longest used run (a minimum of 0 acts as 1).
    pub used: (u32, u32),
    /// Shortest and longest free run (a minimum of 0 acts as 1).
    pub free: (u32, u32),
}

impl Runs {
    /// The benchmarks' fragmented occupancy: used and free runs of 1 to 8
    /// blocks, so about half the blocks are used but no free run is longer
    /// than 8.
    pub const SHORT: Self = Self {
        used: (1, 8),
        free: (1, 8),
    };

    /// A run length uniform in `lo ..= hi` (`lo` at least 1, `hi` at least
    /// `lo`), from one 32-bit draw.
    fn draw(rng: &mut Rng, (lo, hi): (u32, u32)) -> usize {
        let lo = lo.max(1);
        let hi = hi.max(lo);
        (lo + rng.below(hi - lo + 1)) as usize
    }
}

/// Fills `map` with alternating used and free runs (a fragmented heap).
///
/// Precisely: one draw (`next_u64() & 1`, 1 meaning used) picks the kind of
/// the run starting at bit 0; then runs alternate between used and free,
/// each with a length drawn uniformly (`Rng::below`) from its range of
/// `runs`, until `nbits` bits are covered; the last run is cut at `nbits`.
/// Every run but the last therefore has a length within its range, and the
/// expected share of used blocks is `mean(used) / (mean(used) + mean(free))`.
pub fn fragmented(rng: &mut Rng, map: &mut [u64], nbits: usize, runs: Runs) {
    let nbits = nbits.min(map.len().saturating_mul(64));
    let mut used = rng.next_u64() & 1 == 1;
    let mut i = 0;
    while i < nbits {
        let n = Runs::draw(rng, if used { runs.used } else { runs.free }).min(nbits - i);
        if used {
            super::bitmask::set_range(map, i, n);
        } else {
            super::bitmask::clear_range(map, i, n);
        }
        i += n;
        used = !used;
    }
    close_tail(map, nbits);
}

/// A 64-bit FNV-1a hash of the words of a map, little-endian bytes: printed
/// next to benchmark results so runs on the host and in the guest can show
/// they measured identical maps.
pub fn fnv1a(map: &[u64], mut hash: u64) -> u64 {
    for w in map {
        for b in w.to_le_bytes() {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

/// Starting value of [`fnv1a`].
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

#[cfg(test)]
mod tests {
    use super::super::bitmask::{
        count_free,
        naive::is_used, //
    };
    use super::*;

    #[test]
    fn density_conversions() {
        assert_eq!(Density::per_mille(250), Density::from_frac16(16384));
        assert_eq!(Density::per_mille(500), Density::from_frac16(32768));
        assert_eq!(Density::from_ratio(3, 4), Density::from_frac16(49152));
        assert_eq!(Density::per_mille(1000), Density::FULL);
        assert_eq!(Density::per_mille(2000), Density::FULL);
        assert_eq!(Density::from_ratio(1, 0), Density::FULL);
        assert_eq!(Density::from_frac16(1 << 20), Density::FULL);
        assert_eq!(Density::per_mille(0), Density::EMPTY);
        // 0.1 is not dyadic: rounded to the nearest 2^-16.
        assert_eq!(Density::per_mille(100).frac16(), 6554);
        assert_eq!(Density::per_mille(100).as_per_mille(), 100);
        assert_eq!(Density::from_frac16(38994).as_per_mille(), 595);
    }

    /// Observed share of used bits over many maps is within five standard
    /// deviations of `p`, and the tail past `nbits` is used.
    #[test]
    fn random_density() {
        let mut rng = Rng::new(7);
        for p in [0, 1, 100, 250, 500, 595, 750, 999, 1000].map(Density::per_mille) {
            let (nbits, maps) = (100, 4000);
            let mut used = 0;
            for _ in 0..maps {
                let mut m = [0u64; 3];
                random(&mut rng, &mut m, nbits, p);
                used += nbits - count_free(&m, nbits);
                assert_eq!(m[1] >> 36, !0 >> 36, "bits 100..128 used");
                assert_eq!(m[2], !0, "words past nbits used");
            }
            let n = (nbits * maps) as f64;
            let q = p.frac16() as f64 / 65536.0;
            let got = used as f64 / n;
            // |got - q| <= 5 sigma, squared (no sqrt in core).
            let var = q * (1.0 - q) / n;
            assert!(
                (got - q) * (got - q) <= 25.0 * var + 1e-18,
                "p {q}: observed {got}"
            );
        }
    }

    /// Bits of one word are independent: pairs of neighbours are both used
    /// with probability p^2.
    #[test]
    fn random_pairs_independent() {
        let mut rng = Rng::new(8);
        let p = Density::per_mille(750);
        let (mut pairs, mut both) = (0u64, 0u64);
        for _ in 0..20_000 {
            let mut m = [0u64; 1];
            random(&mut rng, &mut m, 64, p);
            both += (m[0] & (m[0] >> 1) & (!0 >> 1)).count_ones() as u64;
            pairs += 63;
        }
        let got = both as f64 / pairs as f64;
        assert!((got - 0.5625).abs() < 0.005, "{got}");
    }

    /// Same seed, same maps; the generator's consumption is as documented.
    #[test]
    fn random_is_deterministic() {
        let (mut a, mut b) = ([0u64; 2], [0u64; 2]);
        random(&mut Rng::new(5), &mut a, 128, Density::per_mille(500));
        let mut rng = Rng::new(5);
        b[0] = rng.next_u64();
        b[1] = rng.next_u64();
        assert_eq!(a, b, "p = 1/2 is one raw word per map word");
        let mut r1 = Rng::new(9);
        random(&mut r1, &mut a, 128, Density::per_mille(250));
        let mut r2 = Rng::new(9);
        (0..4).for_each(|_| {
            r2.next_u64();
        });
        assert_eq!(
            r1.next_u64(),
            r2.next_u64(),
            "p = 1/4 takes two words per word"
        );
    }

    /// Runs alternate with lengths within bounds (the last may be cut), both
    /// kinds appear at both ends, and about half the blocks are used.
    #[test]
    fn fragmented_runs() {
        let mut rng = Rng::new(11);
        let mut starts = [0; 2];
        let mut used_total = 0;
        for (k, runs) in [
            Runs::SHORT,
            Runs {
                used: (2, 5),
                free: (10, 20),
            },
            Runs {
                used: (0, 0),
                free: (3, 3),
            },
        ]
        .into_iter()
        .enumerate()
        {
            for nbits in [1, 63, 128, 1000, 4096] {
                for _ in 0..50 {
                    let mut m = [0u64; 65];
                    fragmented(&mut rng, &mut m, nbits, runs);
                    assert!(
                        (nbits..65 * 64).all(|i| is_used(&m, 65 * 64, i)),
                        "tail used"
                    );
                    let mut i = 0;
                    let first = is_used(&m, nbits, 0);
                    if k == 0 {
                        starts[first as usize] += 1;
                    }
                    let mut expect = first;
                    while i < nbits {
                        let u = is_used(&m, nbits, i);
                        assert_eq!(u, expect, "runs alternate");
                        let n = (i..nbits)
                            .take_while(|&j| is_used(&m, nbits, j) == u)
                            .count();
                        let (lo, hi) = if u { runs.used } else { runs.free };
                        assert!(n <= hi.max(1) as usize, "run of {n} > {hi}");
                        if i + n < nbits {
                            assert!(n >= lo.max(1) as usize, "run of {n} < {lo}");
                        }
                        if k == 0 && nbits == 4096 && u {
                            used_total += n;
                        }
                        i += n;
                        expect = !u;
                    }
                }
            }
        }
        assert!(starts[0] > 40 && starts[1] > 40, "{starts:?}");
        let share = used_total as f64 / (50.0 * 4096.0);
        assert!((share - 0.5).abs() < 0.02, "{share}");
    }

    #[test]
    fn fnv_distinguishes() {
        assert_eq!(fnv1a(&[], FNV_OFFSET), FNV_OFFSET);
        assert_ne!(fnv1a(&[1], FNV_OFFSET), fnv1a(&[2], FNV_OFFSET));
        assert_ne!(fnv1a(&[1, 0], FNV_OFFSET), fnv1a(&[0, 1], FNV_OFFSET));
    }
}
