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

/// Runs wave `wave` of work-group `group` to completion. A thread that
/// would take more than `cycle_limit` cycles is stopped and the wave is
/// reported hung; a faulting thread ends the wave at once. Either way its
/// later lanes do not run: the job has failed, and interpreting every lane
/// of a hung wave to the limit would only burn CPU time.
pub fn run_wave<M: Memory>(
    prog: &[Instr],
    grid: &Grid,
    group: u32,
    wave: u32,
    mem: &mut M,
    costs: &CycleCosts,
    cycle_limit: u64,
) -> WaveRun {
    // The cheapest instruction costs at least one cycle, so this many
    // instructions always reach the limit.
    let slowest = costs.per_class.iter().copied().min().unwrap_or(1).max(1) as u64;
    let budget = cycle_limit / slowest + 1;
    let mut run = WaveRun { end: WaveEnd::Done, cycles: 0, counters: Counters::default() };
    for lane in 0..grid.threads_per_wave {
        let ids = grid.thread_ids(group, wave, lane);
        let mut counters = Counters::default();
        let exit = Thread::default().run(prog, &ids, mem, budget, &mut counters);
        let cycles = counters.cycles(costs);
        run.counters.add(&counters);
        run.cycles = run.cycles.max(cycles.min(cycle_limit));
        match exit {
            Exit::Ended if cycles <= cycle_limit => {}
            Exit::Ended | Exit::Budget => {
                run.end = WaveEnd::Hung;
                return run;
            }
            fault @ Exit::OutOfBounds { .. } => {
                run.end = WaveEnd::Fault { exit: fault };
                return run;
            }
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
        // The second lane never ran: one lane's budget of jumps (2 cycles each).
        assert_eq!(run.counters.total(), 10_001);
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
}
