// SPDX-License-Identifier: GPL-2.0

//! A job's grid: work-groups made of waves made of threads, and running one
//! work-group's waves to completion with their modeled cycle counts.
//!
//! Threads of a wave run in lock step on real hardware, so a wave's
//! modeled duration is that of its slowest thread; the instruction counters
//! add up every thread's instructions. A wave stops early when one of its
//! threads faults or exceeds the cycle limit, which is how an endless loop
//! is caught.

use super::exec::{Counters, CycleCosts, Exit, Memory, Thread, ThreadIds};
use super::isa::Instr;

/// Most threads in one wave.
pub const MAX_THREADS_PER_WAVE: u32 = 64;
/// Most waves in one work-group.
pub const MAX_WAVES_PER_GROUP: u32 = 64;

/// The shape of a job's grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    /// Work-groups in the grid.
    pub groups: u32,
    /// Waves per work-group.
    pub waves_per_group: u32,
    /// Threads per wave.
    pub threads_per_wave: u32,
}

/// Why a grid shape was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GridError {
    /// A dimension is zero.
    Empty,
    /// A dimension is above its limit, or the grid has 2^32 threads or more.
    TooBig,
}

impl Grid {
    /// Checks the shape: every dimension at least 1, waves and threads
    /// within their limits, and thread indices fitting in 32 bits.
    pub fn validate(&self) -> Result<(), GridError> {
        if self.groups == 0 || self.waves_per_group == 0 || self.threads_per_wave == 0 {
            return Err(GridError::Empty);
        }
        if self.waves_per_group > MAX_WAVES_PER_GROUP
            || self.threads_per_wave > MAX_THREADS_PER_WAVE
            || self.total_threads() > u32::MAX as u64
        {
            return Err(GridError::TooBig);
        }
        Ok(())
    }

    /// Threads per work-group.
    pub fn group_threads(&self) -> u32 {
        self.waves_per_group * self.threads_per_wave
    }

    /// Threads in the whole grid.
    pub fn total_threads(&self) -> u64 {
        self.groups as u64 * self.waves_per_group as u64 * self.threads_per_wave as u64
    }

    /// The identity of thread `lane` of wave `wave` in work-group `group`.
    pub fn thread_ids(&self, group: u32, wave: u32, lane: u32) -> ThreadIds {
        let local = wave * self.threads_per_wave + lane;
        ThreadIds {
            global: group * self.group_threads() + local,
            local,
            group,
            group_threads: self.group_threads(),
            num_groups: self.groups,
            wave,
            lane,
        }
    }
}

/// How one wave ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaveEnd {
    /// Every thread reached `END`.
    Done,
    /// A thread ran past the cycle limit (the wave is stopped there).
    Hung,
    /// A thread's load or store fell outside its buffer.
    Fault {
        /// The first fault seen, in lane order.
        exit: Exit,
    },
}

/// The result of running one wave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaveRun {
    /// How it ended.
    pub end: WaveEnd,
    /// Modeled cycles: those of its slowest thread (capped at the limit).
    pub cycles: u64,
    /// Instructions its threads executed, per class.
    pub counters: Counters,
}

/// One thread of a wave that can be stopped and resumed: its architectural
/// state and the cycles it has spent. `Lane::default()` has not started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lane {
    /// Program counter and registers.
    pub thread: Thread,
    /// Cycles spent since the wave started.
    pub cycles: u64,
    /// It executed `END`.
    pub ended: bool,
}

/// What one call of [`advance_wave`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaveStep {
    /// `None` while the wave runs on: every unfinished lane stopped at an
    /// instruction boundary at or before the horizon. Otherwise how it
    /// ended.
    pub end: Option<WaveEnd>,
    /// The wave's cycles so far, the most any lane has spent; once it has
    /// ended, its modeled duration (a hung wave lasts exactly the limit).
    pub cycles: u64,
    /// Instructions executed in this call, per class.
    pub counters: Counters,
}

/// Runs `lane` until it has spent `until` cycles in all (or `limit`, if
/// lower), ends or faults. Returns how the wave ends if this lane ends it:
/// a fault, or a hang when the lane cannot finish within `limit`.
#[allow(clippy::too_many_arguments)]
fn advance_lane<M: Memory>(
    lane: &mut Lane,
    prog: &[Instr],
    ids: &ThreadIds,
    mem: &mut M,
    costs: &CycleCosts,
    until: u64,
    limit: u64,
    counters: &mut Counters,
) -> Option<WaveEnd> {
    if lane.ended {
        return None;
    }
    let stop = until.min(limit);
    let budget = stop.saturating_sub(lane.cycles);
    // The instruction bound only matters for classes costing no cycle.
    let (exit, spent, _) = lane.thread.run_bounded(prog, ids, mem, costs, budget, budget.saturating_add(1), counters);
    lane.cycles += spent;
    match exit {
        Exit::Ended => {
            lane.ended = true;
            None
        }
        Exit::Budget => {
            // Stopped before an instruction that would cross the limit:
            // it cannot finish in time.
            let next = prog.get(lane.thread.pc as usize).map_or(1, |i| costs.of(i.op.class()) as u64);
            (until >= limit && lane.cycles.saturating_add(next.max(1)) > limit).then_some(WaveEnd::Hung)
        }
        fault @ Exit::OutOfBounds { .. } => Some(WaveEnd::Fault { exit: fault }),
    }
}

/// Advances wave `wave` of work-group `group`, whose threads are `lanes`
/// (one per thread, `Lane::default()` for a wave not started), until each
/// lane has spent `until_cycles` cycles since the wave started, ended, or
/// faulted. The wave hangs when a lane cannot finish within `cycle_limit`,
/// and a fault ends it at once; either way its later lanes are not run, as
/// the job has failed. Calling it again with a later horizon resumes every
/// thread where it stopped, so a wave advanced in any number of steps that
/// completes has exactly the effects, cycles and counters of one advanced
/// at once; one that hangs or faults ends the same way at the same cycle,
/// though its later lanes may have run part of the way first.
#[allow(clippy::too_many_arguments)]
pub fn advance_wave<M: Memory>(
    prog: &[Instr],
    grid: &Grid,
    group: u32,
    wave: u32,
    lanes: &mut [Lane],
    mem: &mut M,
    costs: &CycleCosts,
    until_cycles: u64,
    cycle_limit: u64,
) -> WaveStep {
    let mut step = WaveStep { end: None, cycles: 0, counters: Counters::default() };
    let mut all_ended = true;
    for (i, lane) in lanes.iter_mut().enumerate() {
        let ids = grid.thread_ids(group, wave, i as u32);
        if let Some(end) = advance_lane(lane, prog, &ids, mem, costs, until_cycles, cycle_limit, &mut step.counters) {
            step.end = Some(end);
            break;
        }
        all_ended &= lane.ended;
    }
    step.cycles = lanes.iter().map(|l| l.cycles).max().unwrap_or(0);
    match step.end {
        Some(WaveEnd::Hung) => step.cycles = cycle_limit,
        None if all_ended => step.end = Some(WaveEnd::Done),
        _ => {}
    }
    step
}

/// Runs wave `wave` of work-group `group` to completion in one go, one
/// thread after the other (no lane array: a thread's state is only needed
/// while it runs). Ends as [`advance_wave`] with a horizon at the limit.
pub fn run_wave<M: Memory>(
    prog: &[Instr],
    grid: &Grid,
    group: u32,
    wave: u32,
    mem: &mut M,
    costs: &CycleCosts,
    cycle_limit: u64,
) -> WaveRun {
    let mut run = WaveRun { end: WaveEnd::Done, cycles: 0, counters: Counters::default() };
    for i in 0..grid.threads_per_wave {
        let ids = grid.thread_ids(group, wave, i);
        let mut lane = Lane::default();
        let end = advance_lane(&mut lane, prog, &ids, mem, costs, cycle_limit, cycle_limit, &mut run.counters);
        run.cycles = run.cycles.max(lane.cycles);
        if let Some(end) = end {
            if end == WaveEnd::Hung {
                run.cycles = cycle_limit;
            }
            run.end = end;
            break;
        }
    }
    run
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::{validate, Op, Special};

    use crate::exec::SliceMemory as Buffers;

    fn program(words: &[u64], bindings: usize) -> ([Instr; 32], usize) {
        let mut out = [Instr { op: Op::End, rd: 0, ra: 0, rb: 0, imm: 0 }; 32];
        let n = validate(words, bindings, &mut out).unwrap();
        (out, n)
    }

    use crate::isa::encode as op;

    fn vector_add() -> ([Instr; 32], usize) {
        program(
            &[
                op(Op::Sreg, 0, 0, 0, Special::GlobalId as i32),
                op(Op::Ld, 1, 0, 0, 0),
                op(Op::Ld, 2, 0, 1, 0),
                op(Op::Add, 3, 1, 2, 0),
                op(Op::St, 3, 0, 2, 0),
                op(Op::End, 0, 0, 0, 0),
            ],
            3,
        )
    }

    #[test]
    fn every_thread_of_every_shape_runs_once() {
        let (prog, n) = vector_add();
        for (groups, waves, threads) in [(1, 1, 1), (3, 2, 5), (7, 4, 16), (1, 64, 1), (16, 1, 64)] {
            let grid = Grid { groups, waves_per_group: waves, threads_per_wave: threads };
            grid.validate().unwrap();
            let total = grid.total_threads() as usize;
            let mut a: [u32; 2048] = core::array::from_fn(|i| i as u32);
            let mut b: [u32; 2048] = core::array::from_fn(|i| 1000 * i as u32);
            let mut c = [0u32; 2048];
            let mut bufs: [&mut [u32]; 3] = [&mut a[..total], &mut b[..total], &mut c[..total]];
            let mut mem = Buffers(&mut bufs);
            for g in 0..groups {
                for w in 0..waves {
                    let run = run_wave(&prog[..n], &grid, g, w, &mut mem, &CycleCosts::DEFAULT, 1_000);
                    assert_eq!(run.end, WaveEnd::Done);
                    assert_eq!(run.cycles, 1 + 16 + 16 + 1 + 16 + 2);
                    assert_eq!(run.counters.total(), 6 * threads as u64);
                }
            }
            for i in 0..total {
                assert_eq!(c[i], 1001 * i as u32, "shape {groups}x{waves}x{threads}, thread {i}");
            }
        }
    }

    #[test]
    fn endless_loop_is_hung_at_the_limit() {
        let (prog, n) = program(&[op(Op::Br, 0, 0, 0, 0)], 0);
        let grid = Grid { groups: 1, waves_per_group: 1, threads_per_wave: 2 };
        let mut bufs: [&mut [u32]; 0] = [];
        let run = run_wave(&prog[..n], &grid, 0, 0, &mut Buffers(&mut bufs), &CycleCosts::DEFAULT, 10_000);
        assert_eq!(run.end, WaveEnd::Hung);
        assert_eq!(run.cycles, 10_000);
        // The second lane never ran; the first made the jumps (2 cycles
        // each) that fit in the limit.
        assert_eq!(run.counters.total(), 5_000);
    }

    #[test]
    fn a_fault_stops_the_wave_and_names_the_access() {
        let (prog, n) = vector_add();
        let grid = Grid { groups: 1, waves_per_group: 1, threads_per_wave: 8 };
        let (mut a, mut b, mut c) = ([1u32; 8], [2u32; 8], [0u32; 5]);
        let mut bufs: [&mut [u32]; 3] = [&mut a, &mut b, &mut c];
        let run = run_wave(&prog[..n], &grid, 0, 0, &mut Buffers(&mut bufs), &CycleCosts::DEFAULT, 1_000);
        assert_eq!(run.end, WaveEnd::Fault { exit: Exit::OutOfBounds { pc: 4, slot: 2, index: 5 } });
        assert_eq!(c, [3; 5]);
    }

    #[test]
    fn shapes_are_checked() {
        let g = |groups, waves_per_group, threads_per_wave| Grid { groups, waves_per_group, threads_per_wave };
        assert_eq!(g(0, 1, 1).validate(), Err(GridError::Empty));
        assert_eq!(g(1, 0, 1).validate(), Err(GridError::Empty));
        assert_eq!(g(1, 1, 0).validate(), Err(GridError::Empty));
        assert_eq!(g(1, 65, 1).validate(), Err(GridError::TooBig));
        assert_eq!(g(1, 1, 65).validate(), Err(GridError::TooBig));
        assert_eq!(g(u32::MAX, 64, 64).validate(), Err(GridError::TooBig));
        assert_eq!(g((1 << 20) - 1, 64, 64).validate(), Ok(()));
        let ids = g(4, 3, 8).thread_ids(2, 1, 5);
        assert_eq!((ids.global, ids.local, ids.group_threads), (2 * 24 + 13, 13, 24));
    }

    /// A loop keeping state in registers and memory: x = x * 5 + 1,
    /// mem[id] += x, `loops` times; out[id] = x.
    fn mix(loops: i32) -> ([Instr; 32], usize) {
        program(
            &[
                op(Op::Sreg, 0, 0, 0, Special::GlobalId as i32),
                op(Op::Mov, 1, 0, 0, 0),
                op(Op::Movi, 2, 0, 0, loops),
                op(Op::Movi, 3, 0, 0, 5),
                op(Op::Mul, 1, 1, 3, 0),
                op(Op::Addi, 1, 1, 0, 1),
                op(Op::Ld, 4, 0, 0, 0),
                op(Op::Add, 4, 4, 1, 0),
                op(Op::St, 4, 0, 0, 0),
                op(Op::Addi, 2, 2, 0, -1),
                op(Op::Brnz, 0, 2, 0, 4),
                op(Op::St, 1, 0, 1, 0),
                op(Op::End, 0, 0, 0, 0),
            ],
            2,
        )
    }

    /// Runs wave 1 of group 2 of a 3x2x8 grid of `prog` over two 64-word
    /// buffers, either at once or in chunks ending at random horizons.
    fn run_chunked(prog: &[Instr], limit: u64, chunked: Option<u64>) -> (WaveStep, [u32; 64], [u32; 64], usize) {
        let grid = Grid { groups: 3, waves_per_group: 2, threads_per_wave: 8 };
        let (mut a, mut b) = ([0u32; 64], [0u32; 64]);
        let mut bufs: [&mut [u32]; 2] = [&mut a, &mut b];
        let mut mem = Buffers(&mut bufs);
        let mut lanes = [Lane::default(); 8];
        let mut total = WaveStep { end: None, cycles: 0, counters: Counters::default() };
        let mut rng = crate::rng::Rng::new(chunked.unwrap_or(1));
        let (mut horizon, mut chunks) = (0u64, 0);
        while total.end.is_none() {
            horizon = match chunked {
                Some(_) => horizon + 1 + rng.below_u64(40),
                None => limit,
            };
            let step = advance_wave(prog, &grid, 2, 1, &mut lanes, &mut mem, &CycleCosts::DEFAULT, horizon, limit);
            assert!(lanes.iter().all(|l| l.cycles <= horizon.min(limit)));
            total.counters.add(&step.counters);
            total.end = step.end;
            total.cycles = step.cycles;
            chunks += 1;
        }
        (total, a, b, chunks)
    }

    #[test]
    fn chunked_waves_match_one_run() {
        let (prog, n) = mix(100);
        let once = run_chunked(&prog[..n], 100_000, None);
        assert_eq!(once.0.end, Some(WaveEnd::Done));
        for seed in 1..20 {
            let chunked = run_chunked(&prog[..n], 100_000, Some(seed));
            assert!(chunked.3 > 100, "{} chunks", chunked.3);
            assert_eq!((chunked.0, chunked.1, chunked.2), (once.0, once.1, once.2), "seed {seed}");
        }
        // The same as run_wave, thread after thread.
        let grid = Grid { groups: 3, waves_per_group: 2, threads_per_wave: 8 };
        let (mut a, mut b) = ([0u32; 64], [0u32; 64]);
        let mut bufs: [&mut [u32]; 2] = [&mut a, &mut b];
        let run = run_wave(&prog[..n], &grid, 2, 1, &mut Buffers(&mut bufs), &CycleCosts::DEFAULT, 100_000);
        assert_eq!((run.cycles, run.counters), (once.0.cycles, once.0.counters));
        assert_eq!((a, b), (once.1, once.2));
        assert_eq!(b[2 * 16 + 8], (0..100).fold(2 * 16 + 8u32, |x, _| x.wrapping_mul(5).wrapping_add(1)));
    }

    #[test]
    fn chunked_hangs_and_faults_match_one_run() {
        // Hangs: the loop needs more than the limit.
        let (prog, n) = mix(50);
        let once = run_chunked(&prog[..n], 500, None);
        assert_eq!((once.0.end, once.0.cycles), (Some(WaveEnd::Hung), 500));
        for seed in 1..10 {
            // Later lanes may have run part of the way before the first
            // one hung: only how it ends and when are the same.
            let chunked = run_chunked(&prog[..n], 500, Some(seed));
            assert_eq!((chunked.0.end, chunked.0.cycles), (once.0.end, once.0.cycles), "seed {seed}");
        }
        // Faults: wave 1 of group 2 stores past a 64-word buffer at index 40+.
        let (prog, n) = vector_add();
        let grid = Grid { groups: 3, waves_per_group: 2, threads_per_wave: 8 };
        let (mut a, mut b, mut c) = ([1u32; 64], [2u32; 64], [0u32; 44]);
        let mut bufs: [&mut [u32]; 3] = [&mut a, &mut b, &mut c];
        let mut lanes = [Lane::default(); 8];
        let mut mem = Buffers(&mut bufs);
        let mut ends = None;
        for horizon in 1..1000 {
            let s = advance_wave(&prog[..n], &grid, 2, 1, &mut lanes, &mut mem, &CycleCosts::DEFAULT, horizon, 1000);
            if s.end.is_some() {
                ends = s.end;
                break;
            }
        }
        assert_eq!(ends, Some(WaveEnd::Fault { exit: Exit::OutOfBounds { pc: 4, slot: 2, index: 44 } }));
        assert_eq!(c[40..44], [3; 4]);
    }

    #[test]
    fn a_thread_stops_before_an_instruction_that_crosses_the_horizon() {
        let (prog, n) = vector_add();
        let grid = Grid { groups: 1, waves_per_group: 1, threads_per_wave: 1 };
        let (mut a, mut b, mut c) = ([1u32; 1], [2u32; 1], [0u32; 1]);
        let mut bufs: [&mut [u32]; 3] = [&mut a, &mut b, &mut c];
        let mut lanes = [Lane::default(); 1];
        let mut mem = Buffers(&mut bufs);
        // SREG (1) fits in 16, the first LD (16) does not.
        let s = advance_wave(&prog[..n], &grid, 0, 0, &mut lanes, &mut mem, &CycleCosts::DEFAULT, 16, 1000);
        assert_eq!((s.end, s.cycles, lanes[0].thread.pc), (None, 1, 1));
        let again = advance_wave(&prog[..n], &grid, 0, 0, &mut lanes, &mut mem, &CycleCosts::DEFAULT, 16, 1000);
        assert_eq!((again.end, again.counters.total()), (None, 0), "the same horizon does nothing");
        let s = advance_wave(&prog[..n], &grid, 0, 0, &mut lanes, &mut mem, &CycleCosts::DEFAULT, 17, 1000);
        assert_eq!((s.cycles, lanes[0].thread.pc), (17, 2));
    }

}
