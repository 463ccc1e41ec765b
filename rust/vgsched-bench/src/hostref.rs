// SPDX-License-Identifier: GPL-2.0

//! The host-speed reference printed at the top of every host report.
//!
//! A fixed CPU-bound loop: `REF_STEPS` steps of a 64-bit hash, each a load
//! from a 2 KiB table indexed by the value so far (an L1 cache hit) and a
//! multiply and xorshift mix, each step depending on the one before, so the
//! loop cannot be vectorised or run in parallel and its time is the latency
//! of that chain on this CPU. The load is there for the guest's sake: under
//! QEMU's TCG register arithmetic runs at nearly the host's speed, while
//! every memory access goes through the soft TLB, as the kernel's code
//! does all the time. The step count and the seed pass through
//! `core::hint::black_box`, and so does the result, so the optimiser can
//! neither fold the loop into a constant nor drop it. The guest program
//! `vgsched-bench-guest ref` runs the same steps from the same seed (C,
//! the same constants), and both print the result, so a reader can check
//! that they ran the same loop; the ratio of their times is TCG's slowdown
//! on a chain of integer operations.
//!
//! The figure is the median wall time of `REF_RUNS` runs after one untimed
//! run, in ns: `bench.host_ref_ns`. It is never scaled by `--quick`, so it
//! means the same in every run (Documentation/benchmarks.rst, *Host
//! speed*).

use core::hint::black_box;
use std::time::Instant;

/// Steps of the loop (about 20 ms on a 3 GHz core).
pub const REF_STEPS: u64 = 1 << 22;

/// Entries of the table (a power of two).
const REF_TABLE: usize = 256;

/// The loop's starting value.
pub const REF_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// Timed runs; the figure is their median.
pub const REF_RUNS: usize = 7;

/// `steps` steps of the hash from `seed`, over a table made from `seed`.
fn mix_chain(steps: u64, seed: u64) -> u64 {
    let mut table = [0u64; REF_TABLE];
    let mut t = seed;
    for (i, e) in table.iter_mut().enumerate() {
        t = t.wrapping_mul(0x2545_f491_4f6c_dd1d).wrapping_add(i as u64);
        *e = t ^ (t >> 31);
    }
    let mut x = seed;
    for _ in 0..steps {
        x ^= table[(x as usize) & (REF_TABLE - 1)];
        x ^= x >> 29;
        x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x ^= x >> 32;
    }
    x
}

/// Runs the reference and returns its report, ending in the key line.
pub fn report() -> String {
    let mut times = [0u64; REF_RUNS];
    let result = black_box(mix_chain(black_box(REF_STEPS), black_box(REF_SEED)));
    for t in times.iter_mut() {
        let t0 = Instant::now();
        let r = black_box(mix_chain(black_box(REF_STEPS), black_box(REF_SEED)));
        *t = t0.elapsed().as_nanos() as u64;
        if r != result {
            eprintln!("vgsched-bench: the reference loop gave two results");
        }
    }
    let runs = times
        .iter()
        .map(|t| format!("{:.2}", *t as f64 / 1e6))
        .collect::<Vec<_>>()
        .join(" ");
    times.sort_unstable();
    format!(
        "Host-speed reference: {REF_STEPS} steps of a 64-bit table-and-multiply hash chain, \
         {REF_RUNS} runs: {runs} ms\n  result {result:#018x}\nbench.host_ref_ns = {}\n",
        times[REF_RUNS / 2]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The result the guest's C loop prints too: changing the loop here
    /// means changing `ref_chain()` of vgsched_bench_guest.c with it.
    #[test]
    fn chain_is_fixed() {
        assert_eq!(mix_chain(0, REF_SEED), REF_SEED);
        assert_eq!(mix_chain(REF_STEPS, REF_SEED), 0xaa34_534c_e2cd_0370);
    }
}
