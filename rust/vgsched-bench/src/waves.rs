// SPDX-License-Identifier: GPL-2.0

//! Section 5: how much one call of the wave interpreter can do.
//!
//! The worst wave for a caller that holds a lock: 64 threads, the last of
//! which faults at once while the other 63 loop until just under the job
//! timeout (the default topology's cycle limit). Measured three ways:
//!
//! - `run_wave`: the whole wave in one go (lanes in order, so the 63
//!   loops run to their end before the last lane faults);
//! - one call at a preemption point's horizon with no budget (what the
//!   engine does today through the compatibility `advance_wave`): the
//!   fault ends the wave, and the 63 loops stop at the horizon;
//! - calls of at most `BUDGET` instructions with the horizon at the
//!   limit: the longest single call, which does not depend on the
//!   program's length.

use std::time::Instant;

use vgsched_core::{
    exec::{
        CycleCosts,
        SliceMemory, //
    },
    grid::{
        advance_wave,
        advance_wave_bounded,
        run_wave,
        Grid,
        Lane,
        WaveEnd, //
    },
    isa::{
        validate,
        Instr,
        Op, //
    },
    sample_programs,
    topology::Topology, //
};

use crate::Options;

/// Instructions one budgeted call may execute.
const BUDGET: u64 = 65_536;

/// Cycles between preemption points in the measurement of one call.
const HORIZON: u64 = 10_000;

/// Lanes 0-62 count down a loop that ends just under `limit` cycles; lane
/// 63 loads far out of its buffer.
fn program(limit: u64) -> ([Instr; 16], usize) {
    let words = sample_programs::last_lane_faults(limit);
    let mut prog = [Instr {
        op: Op::End,
        rd: 0,
        ra: 0,
        rb: 0,
        imm: 0,
    }; 16];
    let n = validate(&words, 1, &mut prog).expect("the benchmark's program is valid");
    (prog, n)
}

/// The report of section 5.
pub fn report(opts: &Options) -> String {
    let limit = Topology::DEFAULT.timeout_cycles();
    let (prog, n) = program(limit);
    let prog = &prog[..n];
    let grid = Grid {
        groups: 1,
        waves_per_group: 1,
        threads_per_wave: 64,
    };
    let costs = CycleCosts::DEFAULT;
    let mut buf = [0u32; 16];
    let mut out = String::new();
    out.push_str(&format!(
        "Wave interpretation per call: 64 threads, lane 63 faults, lanes 0-62 loop to just under the \
         limit ({limit} cycles)\n"
    ));
    out.push_str(&format!(
        "{:<44} {:>14} {:>10} {:>8}\n",
        "call", "instructions", "time (us)", "end"
    ));
    let end_name = |end: Option<WaveEnd>| match end {
        None => "running",
        Some(WaveEnd::Done) => "done",
        Some(WaveEnd::Hung) => "hung",
        Some(WaveEnd::Fault { .. }) => "fault",
    };
    let repeats = opts.count(3);

    // The whole wave in one go.
    let mut best = u128::MAX;
    let mut run = None;
    for _ in 0..repeats {
        let mut bufs: [&mut [u32]; 1] = [&mut buf];
        let t = Instant::now();
        run = Some(run_wave(
            prog,
            &grid,
            0,
            0,
            &mut SliceMemory(&mut bufs),
            &costs,
            limit,
        ));
        best = best.min(t.elapsed().as_micros());
    }
    if let Some(run) = run {
        let name = "run_wave (whole wave, lanes in order)";
        out.push_str(&format!(
            "{name:<44} {:>14} {best:>10} {:>8}\n",
            run.counters.total(),
            end_name(Some(run.end))
        ));
    }

    // One call at a preemption point, no budget.
    let mut best = u128::MAX;
    let mut step = None;
    for _ in 0..opts.count(1000) {
        let mut lanes = [Lane::default(); 64];
        let mut bufs: [&mut [u32]; 1] = [&mut buf];
        let t = Instant::now();
        step = Some(advance_wave(
            prog,
            &grid,
            0,
            0,
            &mut lanes,
            &mut SliceMemory(&mut bufs),
            &costs,
            HORIZON,
            limit,
        ));
        best = best.min(t.elapsed().as_micros());
    }
    if let Some(step) = step {
        let name = format!("advance_wave to {HORIZON} cycles, no budget");
        out.push_str(&format!(
            "{name:<44} {:>14} {best:>10} {:>8}\n",
            step.counters.total(),
            end_name(step.end)
        ));
    }

    // Budgeted calls with the horizon at the limit: the longest call.
    let mut lanes = [Lane::default(); 64];
    let (mut calls, mut most) = (0u64, 0u64);
    let mut times = Vec::new();
    let end = loop {
        let mut bufs: [&mut [u32]; 1] = [&mut buf];
        let mut budget = BUDGET;
        let t = Instant::now();
        let step = advance_wave_bounded(
            prog,
            &grid,
            0,
            0,
            &mut lanes,
            &mut SliceMemory(&mut bufs),
            &costs,
            limit,
            limit,
            &mut budget,
        );
        times.push(t.elapsed().as_nanos());
        most = most.max(step.counters.total());
        calls += 1;
        if step.end.is_some() {
            break step.end;
        }
    };
    times.sort_unstable();
    let median_us = times.get(times.len() / 2).copied().unwrap_or(0) / 1000;
    let longest_us = times.last().copied().unwrap_or(0) / 1000;
    let name = format!("advance_wave_bounded, budget {BUDGET} ({calls} calls)");
    out.push_str(&format!(
        "{name:<44} {most:>14} {median_us:>10} {:>8}\n",
        end_name(end)
    ));
    out.push_str(&format!(
        "(instructions: the most one call executed; time: best of the repeats for the first two, the \
         median call for the budgeted calls, whose longest took {longest_us} us on this loaded host)\n"
    ));
    out
}
