// SPDX-License-Identifier: GPL-2.0

//! Host half of `make bench`: measurements of the core crate's logic, printed
//! as aligned tables on standard output.
//!
//! First, in every run, the host-speed reference (`hostref`,
//! `bench.host_ref_ns`): a fixed CPU-bound loop whose time lets runs on
//! different machines be compared. Then the sections, in order:
//!
//! 1. finder timing: ns per call of the exact free-run finders against the
//!    naive bit-by-bit scan, by the harness shared with the in-kernel
//!    benchmark (`vgsched_core::finder_bench`), so the guest's table (which
//!    adds the kernel's `bitmap_find_next_zero_area()`) is directly
//!    comparable;
//! 2. miss rates of the grouped and sampled finders against the exact one,
//!    and the check of the grouped finder's published miss estimate for 128
//!    blocks in groups of 4 (`misses`);
//! 3. dispatch decisions per second with 16 channels and 16 modules, by the
//!    core crate's dispatcher logic (`dispatch`);
//! 4. the context scheduler's slot selection (`slots`): fairness of the slice
//!    formulas against FIFO, priority-0 latency to first dispatch, and the
//!    cost of one `reschedule` decision as the number of contexts grows;
//! 5. the wave interpreter's work per call on the worst wave for a caller
//!    holding a lock (`waves`): the whole wave, one call at a preemption
//!    point, and the longest call under an instruction budget.
//!
//! `--quick` divides every loop and trial count by ten, for a smoke test;
//! `--section N` runs section `N` only.

use std::time::Instant;

use vgsched_core::finder_bench::{
    self,
    NoExternal,
    SCRATCH_WORDS, //
};

mod dispatch;
mod hostref;
mod misses;
mod slots;
mod waves;

/// Settings from the command line.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Divisor of every loop and trial count (1, or 10 with `--quick`).
    pub scale: u64,
}

impl Options {
    /// `n` divided by the scale, at least 1.
    pub fn count(&self, n: u64) -> u64 {
        (n / self.scale).max(1)
    }
}

/// Least time spent timing each finder on each row, in nanoseconds.
const TIMING_TARGET_NS: u64 = 40_000_000;

/// Section 1: the finder timing table (release build on the host).
fn finder_timing(opts: &Options) -> String {
    let mut out = String::new();
    let mut scratch = vec![0u64; SCRATCH_WORDS];
    let t0 = Instant::now();
    let mut clock = || t0.elapsed().as_nanos() as u64;
    let target = TIMING_TARGET_NS / opts.scale;
    match finder_bench::run(
        &mut out,
        "host (release build)",
        &mut clock,
        &mut scratch,
        target,
        None::<&NoExternal>,
    ) {
        Ok(sum) if sum.mismatches == 0 => {}
        Ok(_) => eprintln!("vgsched-bench: the finders disagree (see the table)"),
        Err(_) => eprintln!("vgsched-bench: the finder timing failed"),
    }
    out
}

fn main() {
    let mut opts = Options { scale: 1 };
    let mut only = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => opts.scale = 10,
            "--section" => match args.next().and_then(|n| n.parse::<usize>().ok()) {
                Some(n @ 1..=5) => only = Some(n - 1),
                _ => {
                    eprintln!("vgsched-bench: --section takes 1 to 5");
                    std::process::exit(2);
                }
            },
            _ => {
                eprintln!("usage: vgsched-bench [--quick] [--section N]");
                std::process::exit(2);
            }
        }
    }
    let t0 = Instant::now();
    // Whatever --section says: a report without it cannot be compared.
    println!("{}", hostref::report());
    let sections: [fn(&Options) -> String; 5] = [
        finder_timing,
        misses::report,
        dispatch::report,
        slots::report,
        waves::report,
    ];
    for (i, section) in sections.iter().enumerate() {
        if only.is_some_and(|n| n != i) {
            continue;
        }
        if i > 0 && only.is_none() {
            println!();
        }
        print!("{}", section(&opts));
    }
    println!(
        "\n(host benchmark took {:.1} s)",
        t0.elapsed().as_secs_f64()
    );
}
