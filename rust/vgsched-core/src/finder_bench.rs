// SPDX-License-Identifier: GPL-2.0

//! Side-by-side timing of the free-run finders (`make bench`).
//!
//! One harness serves both sides of the benchmark: the host binary
//! (`rust/vgsched-bench`, a release build) and the in-kernel debugfs file
//! `vgsched/finder_bench` (`drivers/gpu/drm/vgsched/bench.rs`). Keeping it in
//! the core crate means both build the same maps from the same seeds (see
//! [`super::sample_maps`]), run the same loops and print the same table; the
//! caller only supplies a clock, a scratch buffer and, in the kernel, the
//! kernel's own `bitmap_find_next_zero_area()` as a third contender.
//!
//! Method: for every case of [`CASES`] the maps are generated once into the
//! scratch buffer. For every query (`first_free_run` with each length of
//! [`FIRST_LENS`], then `largest_free_run`) all contenders are first checked
//! to agree on every map, then each is timed on its own: one untimed pass
//! over all maps, then passes until at least `target_ns` nanoseconds have
//! gone by; the time per call is the elapsed time over the calls made, the
//! clock read once per pass. Inputs go through [`core::hint::black_box`], so
//! the calls can be neither hoisted out of the loop nor folded.
//!
//! Integer arithmetic only (the kernel has no floating point): times are
//! kept in hundredths of nanoseconds.

use core::fmt::{
    self,
    Write, //
};
use core::hint::black_box;

use super::bitmask;
use super::rng::Rng;
use super::sample_maps::{
    self,
    Density,
    Runs, //
};

/// Words of scratch space [`run`] needs: the largest case's maps.
pub const SCRATCH_WORDS: usize = 1024;

/// How the blocks of a case's maps are occupied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Occupancy {
    /// Each block used independently with this probability
    /// ([`sample_maps::random`]).
    Random(Density),
    /// Alternating used and free runs ([`sample_maps::fragmented`]).
    Fragmented(Runs),
}

impl Occupancy {
    /// Fills `map` as this occupancy says.
    pub fn fill(self, rng: &mut Rng, map: &mut [u64], nbits: usize) {
        match self {
            Occupancy::Random(p) => sample_maps::random(rng, map, nbits, p),
            Occupancy::Fragmented(r) => sample_maps::fragmented(rng, map, nbits, r),
        }
    }
}

impl fmt::Display for Occupancy {
    /// A short label: `random50` (per cent used), `frag1-8/1-8` (used
    /// lengths / free lengths).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = Buf::new();
        let _ = match self {
            Occupancy::Random(p) => {
                let pm = p.as_per_mille();
                if pm % 10 == 0 {
                    write!(buf, "random{}", pm / 10)
                } else {
                    write!(buf, "random{}.{}", pm / 10, pm % 10)
                }
            }
            Occupancy::Fragmented(r) => write!(
                buf,
                "frag{}-{}/{}-{}",
                r.used.0, r.used.1, r.free.0, r.free.1
            ),
        };
        f.pad(buf.as_str())
    }
}

/// One set of maps to time the finders on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Case {
    /// Bits per map.
    pub nbits: usize,
    /// Number of maps; the timing loop cycles over all of them, so branch
    /// predictors cannot learn one map's answer.
    pub maps: usize,
    /// How the maps are occupied.
    pub occupancy: Occupancy,
    /// Seed of the [`Rng`] the maps are drawn from, one after the other.
    pub seed: u64,
}

impl Case {
    /// Words per map.
    pub const fn words(&self) -> usize {
        bitmask::map_words(self.nbits)
    }

    /// Generates the case's maps into the front of `scratch` (at least
    /// `maps * words()` words) and returns that part.
    pub fn generate<'a>(&self, scratch: &'a mut [u64]) -> &'a mut [u64] {
        let words = self.words();
        let maps = &mut scratch[..self.maps * words];
        let mut rng = Rng::new(self.seed);
        for m in maps.chunks_exact_mut(words) {
            self.occupancy.fill(&mut rng, m, self.nbits);
        }
        maps
    }
}

/// Random occupancy with p = 1/2.
const HALF: Occupancy = Occupancy::Random(Density::from_ratio(1, 2));
/// Fragmented occupancy with runs of 1 to 8.
const FRAG: Occupancy = Occupancy::Fragmented(Runs::SHORT);

/// The timed cases: maps of 128 bits (a unit's vector registers) and of
/// 4096 bits (the largest resource the module accepts), random and
/// fragmented. All maps of one size fit in the L1 cache.
pub const CASES: [Case; 4] = [
    Case {
        nbits: 128,
        maps: 64,
        occupancy: HALF,
        seed: 0x0128_0050,
    },
    Case {
        nbits: 128,
        maps: 64,
        occupancy: FRAG,
        seed: 0x0128_f0a6,
    },
    Case {
        nbits: 4096,
        maps: 16,
        occupancy: HALF,
        seed: 0x4096_0050,
    },
    Case {
        nbits: 4096,
        maps: 16,
        occupancy: FRAG,
        seed: 0x4096_f0a6,
    },
];

/// [`sample_maps::fnv1a`] of each case's maps, pinned: the host tests and
/// the module's KUnit suite both check them, so the host and the guest are
/// known to time identical maps, and a change to a generator or a seed
/// cannot go unnoticed (update these together with the numbers in
/// `Documentation/benchmarks.rst`).
pub const CASE_FNV1A: [u64; 4] = [
    0x0a0b_d326_da1a_1106,
    0xa9c3_3c92_d2a6_095a,
    0x97e3_ef0d_cf79_e2c9,
    0x93c3_61c1_eb70_6dbc,
];

/// Lengths `first_free_run` is timed with.
pub const FIRST_LENS: [usize; 4] = [1, 4, 16, 32];

/// A third contender for `first_free_run` (the kernel's
/// `bitmap_find_next_zero_area()` in the guest): same arguments and answer
/// as [`bitmask::first_free_run`].
pub struct External<'a, K> {
    /// One line saying what the `kernel` column measures.
    pub describe: &'a str,
    /// The finder.
    pub first_free_run: K,
}

/// The type of "no third contender", for `None::<NoExternal>`.
pub type NoExternal = External<'static, fn(&[u64], usize, usize) -> Option<usize>>;

/// What a [`run`] found besides the table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Rows timed.
    pub rows: usize,
    /// (map, query) pairs where the contenders disagreed; must be 0.
    pub mismatches: usize,
}

/// A small stack buffer for formatting a cell before padding it.
struct Buf {
    bytes: [u8; 32],
    len: usize,
}

impl Buf {
    const fn new() -> Self {
        Self {
            bytes: [0; 32],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        // Only whole `&str`s are ever appended, so this cannot fail.
        core::str::from_utf8(&self.bytes[..self.len]).unwrap_or("?")
    }
}

impl Write for Buf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        if end > self.bytes.len() {
            return Err(fmt::Error);
        }
        self.bytes[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// A value in hundredths, printed with two decimals and padded as asked;
/// `None` prints as `-`.
struct Centi(Option<u64>);

impl fmt::Display for Centi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = Buf::new();
        let _ = match self.0 {
            Some(v) => write!(buf, "{}.{:02}", v / 100, v % 100),
            None => write!(buf, "-"),
        };
        f.pad(buf.as_str())
    }
}

/// `a / b` in hundredths, `None` if either is missing or `b` is 0.
fn ratio(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    (a? * 100).checked_div(b?)
}

/// Timed blocks per contender and row; the fastest counts (see
/// `time_row`).
pub const REPS: u64 = 5;

/// One timed block: one untimed pass over the maps of `words` words each in
/// `maps` (to warm caches and predictors after the previous contender),
/// then passes until at least `block_ns` have gone by, the clock read once
/// per pass. Returns hundredths of nanoseconds per call of `f`. `f` returns
/// something derived from its answer, which is summed into a black box so
/// the answer must really be computed.
fn time_block<F: FnMut(&[u64]) -> usize>(
    maps: &[u64],
    words: usize,
    clock: &mut dyn FnMut() -> u64,
    block_ns: u64,
    f: &mut F,
) -> u64 {
    let per_pass = (maps.len() / words.max(1)) as u64;
    let mut acc = 0usize;
    for m in maps.chunks_exact(words) {
        acc = acc.wrapping_add(f(black_box(m)));
    }
    let (t0, mut calls) = (clock(), 0u64);
    let elapsed = loop {
        for m in maps.chunks_exact(words) {
            acc = acc.wrapping_add(f(black_box(m)));
        }
        calls += per_pass;
        let dt = clock().saturating_sub(t0);
        if dt >= block_ns {
            break dt;
        }
    };
    black_box(acc);
    (elapsed * 100).checked_div(calls).unwrap_or(0)
}

/// Times up to three contenders on one row: [`REPS`] rounds, each giving
/// every contender one block of `target_ns / REPS`, and for each the
/// fastest of its blocks. The rounds interleave the contenders, so a burst
/// of interference from elsewhere on the machine falls on all of them
/// rather than on one, which keeps the ratios honest; and the minimum,
/// rather than the mean, because interference only ever adds time.
fn time_row<A, B, C>(
    maps: &[u64],
    words: usize,
    clock: &mut dyn FnMut() -> u64,
    target_ns: u64,
    a: &mut A,
    b: &mut B,
    mut c: Option<&mut C>,
) -> (u64, u64, Option<u64>)
where
    A: FnMut(&[u64]) -> usize,
    B: FnMut(&[u64]) -> usize,
    C: FnMut(&[u64]) -> usize,
{
    let block_ns = target_ns / REPS;
    let mut best = (u64::MAX, u64::MAX, c.as_ref().map(|_| u64::MAX));
    for _ in 0..REPS {
        best.0 = best.0.min(time_block(maps, words, clock, block_ns, a));
        best.1 = best.1.min(time_block(maps, words, clock, block_ns, b));
        if let (Some(c), Some(t)) = (c.as_deref_mut(), best.2.as_mut()) {
            *t = (*t).min(time_block(maps, words, clock, block_ns, c));
        }
    }
    best
}

/// Encodes a start for the black box.
fn start_or_max(s: Option<usize>) -> usize {
    s.unwrap_or(usize::MAX)
}

/// Times the finders on every case of [`CASES`] and writes the table to
/// `out`. `clock` returns nanoseconds from any fixed origin; `scratch` must
/// hold at least [`SCRATCH_WORDS`] words; `target_ns` is the least time
/// spent timing each contender on each row; `where_` names the machine in
/// the title. With `external`, its finder is checked and timed next to the
/// others on the `first_free_run` rows.
///
/// The table stays below 3 KiB, so it fits in one page of a `seq_file`
/// (which runs a debugfs file's show callback again, doubling its buffer,
/// when the output does not fit).
pub fn run<K: Fn(&[u64], usize, usize) -> Option<usize>>(
    out: &mut dyn Write,
    where_: &str,
    clock: &mut dyn FnMut() -> u64,
    scratch: &mut [u64],
    target_ns: u64,
    external: Option<&External<'_, K>>,
) -> Result<Summary, fmt::Error> {
    if scratch.len() < SCRATCH_WORDS {
        writeln!(out, "finder timing: scratch buffer too small")?;
        return Err(fmt::Error);
    }
    let mut sum = Summary::default();
    writeln!(
        out,
        "Finder timing, {where_}: ns per call, best of {REPS} runs of >= {} ms each",
        target_ns / REPS / 1_000_000
    )?;
    writeln!(
        out,
        "  exact  = bitmask::{{first_free_run,largest_free_run}} (word-parallel)"
    )?;
    writeln!(out, "  naive  = bitmask::naive::* (one bit at a time)")?;
    writeln!(
        out,
        "  kernel = {}",
        external.map_or("(only in the guest)", |e| e.describe)
    )?;
    for c in &CASES {
        let maps = c.generate(scratch);
        let hash = sample_maps::fnv1a(maps, sample_maps::FNV_OFFSET);
        writeln!(
            out,
            "  maps {:>4}/{:<12} {:>2} maps, seed {:#010x}, fnv1a {:016x}",
            c.nbits, c.occupancy, c.maps, c.seed, hash
        )?;
    }
    writeln!(
        out,
        "{:>5} {:<12} {:<9} {:>7} {:>8} {:>8} {:>8} {:>7} {:>7}",
        "bits", "occupancy", "query", "found", "exact", "naive", "kernel", "naive/x", "kern/x"
    )?;
    for c in &CASES {
        let (nbits, words) = (c.nbits, c.words());
        let maps = &*c.generate(scratch);
        for q in FIRST_LENS.iter().map(|&l| Some(l)).chain([None]) {
            // Agreement first; it also gives the "found" column.
            let mut found = 0;
            for m in maps.chunks_exact(words) {
                let agree = match q {
                    Some(len) => {
                        let e = bitmask::first_free_run(m, nbits, len);
                        found += usize::from(e.is_some());
                        e == bitmask::naive::first_free_run(m, nbits, len)
                            && external.is_none_or(|x| (x.first_free_run)(m, nbits, len) == e)
                    }
                    None => {
                        let e = bitmask::largest_free_run(m, nbits);
                        found += e.map_or(0, |(_, l)| l);
                        e == bitmask::naive::largest_free_run(m, nbits)
                    }
                };
                sum.mismatches += usize::from(!agree);
            }
            let (exact, naive, kernel) = match q {
                Some(len) => {
                    let len = black_box(len);
                    time_row(
                        maps,
                        words,
                        clock,
                        target_ns,
                        &mut |m: &[u64]| start_or_max(bitmask::first_free_run(m, nbits, len)),
                        &mut |m: &[u64]| {
                            start_or_max(bitmask::naive::first_free_run(m, nbits, len))
                        },
                        external
                            .map(|x| {
                                move |m: &[u64]| start_or_max((x.first_free_run)(m, nbits, len))
                            })
                            .as_mut(),
                    )
                }
                None => {
                    let largest = |r: Option<(usize, usize)>| r.map_or(0, |(s, l)| s ^ l);
                    time_row(
                        maps,
                        words,
                        clock,
                        target_ns,
                        &mut |m: &[u64]| largest(bitmask::largest_free_run(m, nbits)),
                        &mut |m: &[u64]| largest(bitmask::naive::largest_free_run(m, nbits)),
                        None::<&mut fn(&[u64]) -> usize>,
                    )
                }
            };
            let mut query = Buf::new();
            let mut result = Buf::new();
            match q {
                Some(len) => {
                    let _ = write!(query, "first({len})");
                    let _ = write!(result, "{}%", found * 100 / c.maps);
                }
                None => {
                    let _ = write!(query, "largest");
                    let avg = found * 10 / c.maps;
                    let _ = write!(result, "~{}.{}", avg / 10, avg % 10);
                }
            }
            writeln!(
                out,
                "{:>5} {:<12} {:<9} {:>7} {:>8} {:>8} {:>8} {:>7} {:>7}",
                nbits,
                c.occupancy,
                query.as_str(),
                result.as_str(),
                Centi(Some(exact)),
                Centi(Some(naive)),
                Centi(kernel),
                Centi(ratio(Some(naive), Some(exact))),
                Centi(ratio(kernel, Some(exact))),
            )?;
            sum.rows += 1;
        }
    }
    writeln!(
        out,
        "  found: share of maps with a run (first), ~mean largest run (largest)"
    )?;
    if sum.mismatches == 0 {
        writeln!(out, "  all finders agreed on every map and query")?;
    } else {
        writeln!(
            out,
            "  MISMATCH: finders disagreed {} times",
            sum.mismatches
        )?;
    }
    Ok(sum)
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::string::String;

    /// A clock that advances 1 µs per reading, so every cell stops after a
    /// known number of passes.
    fn fake_clock() -> impl FnMut() -> u64 {
        let mut t = 0;
        move || {
            t += 1000;
            t
        }
    }

    #[test]
    fn table_fits_a_page_and_finders_agree() {
        let mut scratch = std::vec![0u64; SCRATCH_WORDS];
        let mut out = String::new();
        let ext = External {
            describe:
                "naive again, as a stand-in for bitmap_find_next_zero_area(map, nbits, 0, len, 0)",
            first_free_run: bitmask::naive::first_free_run,
        };
        let sum = run(
            &mut out,
            "test",
            &mut fake_clock(),
            &mut scratch,
            5000,
            Some(&ext),
        )
        .unwrap();
        assert_eq!(
            sum,
            Summary {
                rows: CASES.len() * (FIRST_LENS.len() + 1),
                mismatches: 0
            }
        );
        assert!(out.len() < 3072, "{} bytes:\n{out}", out.len());
        assert!(out.contains("random50"), "{out}");
        assert!(out.contains("frag1-8/1-8"), "{out}");
        let rows = out
            .lines()
            .filter(|l| l.starts_with("  128 ") || l.starts_with(" 4096 "))
            .count();
        assert_eq!(rows, sum.rows);
        let none = run(
            &mut String::new(),
            "t",
            &mut fake_clock(),
            &mut scratch,
            1,
            None::<&NoExternal>,
        );
        assert_eq!(none.unwrap().mismatches, 0);
    }

    #[test]
    fn a_wrong_contender_is_reported() {
        let mut scratch = std::vec![0u64; SCRATCH_WORDS];
        let mut out = String::new();
        let ext = External {
            describe: "wrong",
            first_free_run: |_: &[u64], _, _| Some(7),
        };
        let sum = run(
            &mut out,
            "test",
            &mut fake_clock(),
            &mut scratch,
            1,
            Some(&ext),
        )
        .unwrap();
        assert!(sum.mismatches > 0);
        assert!(out.contains("MISMATCH"));
    }

    /// Interference only adds time: the fastest block counts, for each
    /// contender, and the blocks interleave.
    #[test]
    fn fastest_block_counts() {
        let maps = [0u64; 8];
        // One pass (8 calls) per reading after the block's first; 10 ns
        // per call in the first round, 1 ns afterwards.
        let readings = core::cell::Cell::new(0u64);
        let mut t = 0u64;
        let mut clock = || {
            readings.set(readings.get() + 1);
            t += if readings.get() <= 6 { 80 } else { 8 };
            t
        };
        let mut f = |m: &[u64]| m[0] as usize;
        let (mut g, mut h) = (f, f);
        let got = time_row(&maps, 1, &mut clock, 5, &mut f, &mut g, Some(&mut h));
        assert_eq!(
            got,
            (100, 100, Some(100)),
            "1.00 ns, not the first round's 10 ns"
        );
        assert_eq!(readings.get(), 2 * 3 * REPS, "two readings per block");
        let none = None::<&mut fn(&[u64]) -> usize>;
        let got = time_row(&maps, 1, &mut clock, 5, &mut f, &mut g, none);
        assert_eq!(got, (100, 100, None));
    }

    #[test]
    fn small_scratch_is_refused() {
        let mut scratch = [0u64; 8];
        let r = run(
            &mut String::new(),
            "t",
            &mut fake_clock(),
            &mut scratch,
            1,
            None::<&NoExternal>,
        );
        assert!(r.is_err());
    }

    #[test]
    fn labels_and_fixed_point() {
        let s = |o: Occupancy| std::format!("{o}");
        assert_eq!(s(HALF), "random50");
        assert_eq!(s(Occupancy::Random(Density::per_mille(595))), "random59.5");
        assert_eq!(s(FRAG), "frag1-8/1-8");
        assert_eq!(std::format!("{:>7}", Centi(Some(1234))), "  12.34");
        assert_eq!(std::format!("{:>3}", Centi(None)), "  -");
        assert_eq!(ratio(Some(300), Some(100)), Some(300));
        assert_eq!(ratio(None, Some(100)), None);
        assert_eq!(ratio(Some(1), Some(0)), None);
    }

    /// Maps of every case are deterministic: the scratch's earlier content
    /// does not matter.
    #[test]
    fn cases_are_reproducible() {
        for (c, &hash) in CASES.iter().zip(&CASE_FNV1A) {
            let mut a = std::vec![0u64; SCRATCH_WORDS];
            let mut b = std::vec![!0u64; SCRATCH_WORDS];
            assert_eq!(c.generate(&mut a), c.generate(&mut b));
            assert!(c.maps * c.words() <= SCRATCH_WORDS);
            assert_eq!(
                sample_maps::fnv1a(c.generate(&mut a), sample_maps::FNV_OFFSET),
                hash
            );
        }
    }
}
