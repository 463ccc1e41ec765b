// SPDX-License-Identifier: GPL-2.0

//! A job's grid: work-groups made of waves made of threads, and running one
//! work-group's waves to completion with their modeled cycle counts.
//!
//! Threads of a wave run in lock step on real hardware, so a wave's
//! modeled duration is that of its slowest thread; the instruction counters
//! add up every thread's instructions. A wave stops early when one of its
//! threads faults or would exceed the cycle limit, which is how an endless
//! loop is caught.
//!
//! A wave is interpreted in calls of bounded work ([`advance_wave_bounded`]):
//! each advances the lanes up to a horizon in cycles and executes at most
//! an instruction budget, so a caller holding a lock can stop between calls
//! whatever the program does.

use super::exec::{
    Counters,
    CycleCosts,
    Exit,
    Memory,
    Thread,
    ThreadIds, //
};
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
            || self.total_threads() > u64::from(u32::MAX)
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
        u64::from(self.groups) * u64::from(self.waves_per_group) * u64::from(self.threads_per_wave)
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
    /// A thread's next instruction would have ended past the cycle limit
    /// without the thread reaching `END` (the wave is stopped there).
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
    /// Modeled cycles: those of its slowest thread; the limit for `Hung`.
    pub cycles: u64,
    /// Instructions its threads executed, per class.
    pub counters: Counters,
}

/// One thread of a wave that can be stopped and resumed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lane {
    /// Its architectural state.
    pub thread: Thread,
    /// Cycles it has spent since the wave started; never above the cycle
    /// limit.
    pub cycles: u64,
    /// Instructions it has executed since the wave started.
    pub instrs: u64,
    /// It executed `END` within the cycle limit.
    pub ended: bool,
}

/// What one call of [`advance_wave_bounded`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaveStep {
    /// `None`: still running; `Some(end)`: the wave finished (`Done`,
    /// `Hung` or `Fault`).
    pub end: Option<WaveEnd>,
    /// Nothing is left to do up to the call's horizon: the wave finished,
    /// or every unfinished lane stopped at an instruction boundary whose
    /// next instruction would end past the horizon. `false`: the
    /// instruction budget ran out first; call again with the same horizon
    /// to go on from where this call stopped.
    pub at_horizon: bool,
    /// The wave's cycles so far: the most any lane has spent. When `end` is
    /// `Some` this is the wave's modeled duration (the cycle limit itself
    /// for `Hung`).
    pub cycles: u64,
    /// Instructions executed in this call only, per class; their total is
    /// what the call took from the budget.
    pub counters: Counters,
}

/// How far one lane got in one call.
enum LaneStop {
    /// At an instruction boundary whose next instruction would end past
    /// the horizon (but within the cycle limit).
    Horizon,
    /// It executed `END` within the limit.
    Ended,
    /// The call's instruction budget ran out first.
    OutOfBudget,
    /// It failed, which ends the wave.
    Failed(WaveEnd),
}

/// Most instructions a lane may execute before it is hung: as many as fit
/// in `cycle_limit` at the cheapest class's cost. When every class costs a
/// cycle or more the cycle limit is always reached first; the bound only
/// matters for loops made of zero-cost instructions, which the cycle
/// limit alone would never stop.
fn lane_instr_limit(costs: &CycleCosts, cycle_limit: u64) -> u64 {
    let cheapest = u64::from(costs.per_class.iter().copied().min().unwrap_or(1).max(1));
    (cycle_limit / cheapest).saturating_add(1)
}

/// Advances `lane` towards `until` cycles: the one step function behind
/// both wave functions.
///
/// The lane executes instructions while the next one ends within
/// `until.min(cycle_limit)` and `budget` lasts, taking what it executes
/// from `budget`. Then, looking only at the lane's state and the horizon:
/// a lane whose next instruction would end past `cycle_limit` is hung
/// (that instruction, `END` included, never executes); one whose next
/// instruction would end past `until` waits at the horizon; one that has
/// executed [`lane_instr_limit`] instructions (a zero-cost loop) is hung;
/// otherwise the budget ran out. So whether a lane is hung, faults or
/// ends never depends on how the budget was split between calls.
#[allow(clippy::too_many_arguments)]
fn advance_lane<M: Memory>(
    prog: &[Instr],
    ids: &ThreadIds,
    lane: &mut Lane,
    mem: &mut M,
    costs: &CycleCosts,
    until: u64,
    cycle_limit: u64,
    max_instrs: u64,
    budget: &mut u64,
    counters: &mut Counters,
) -> LaneStop {
    if lane.ended {
        return LaneStop::Ended;
    }
    let target = until.min(cycle_limit);
    // A lane already past `until` (an earlier call went further) waits.
    let room = target.saturating_sub(lane.cycles);
    let allowed = max_instrs.saturating_sub(lane.instrs).min(*budget);
    let (exit, spent, done) = lane
        .thread
        .run_bounded(prog, ids, mem, costs, room, allowed, counters);
    // `spent <= room` and `done <= allowed`: none of these can wrap.
    lane.cycles = lane.cycles.saturating_add(spent);
    lane.instrs = lane.instrs.saturating_add(done);
    *budget = budget.saturating_sub(done);
    match exit {
        Exit::Ended => {
            lane.ended = true;
            return LaneStop::Ended;
        }
        fault @ Exit::OutOfBounds { .. } => {
            return LaneStop::Failed(WaveEnd::Fault { exit: fault })
        }
        Exit::Budget => {}
    }
    // Past the end of the program the next step is `END`, which costs
    // nothing; only a spent budget stops a lane there.
    let Some(next) = prog.get(lane.thread.pc as usize) else {
        return LaneStop::OutOfBudget;
    };
    let cost = u64::from(costs.of(next.op.class()));
    if cost > cycle_limit.saturating_sub(lane.cycles) {
        LaneStop::Failed(WaveEnd::Hung)
    } else if cost > target.saturating_sub(lane.cycles) {
        LaneStop::Horizon
    } else if lane.instrs >= max_instrs {
        LaneStop::Failed(WaveEnd::Hung)
    } else {
        LaneStop::OutOfBudget
    }
}

/// Advances wave `wave` of work-group `group` towards `until` cycles since
/// the wave started, executing at most `*budget` instructions over all its
/// lanes and taking them from `*budget` (`lanes` = the wave's saved state,
/// `len == grid.threads_per_wave`; `Lane::default()` is a wave not
/// started).
///
/// The rules, which [`run_wave`] follows too (it is this function with
/// the horizon at the limit and no budget):
///
/// - Lanes advance in lane order, each as far as its next instruction
///   still ends at or before `until` (and the limit).
/// - The first lane, in lane order, that faults ends the wave with that
///   fault; lanes after it do not run any further.
/// - A lane whose next instruction would end past `cycle_limit` without
///   having reached `END` hangs the wave at once; it never runs past the
///   limit. (So does a lane that has executed `cycle_limit / c + 1`
///   instructions, `c` the cheapest class's cost: only a loop of
///   zero-cost instructions gets there.)
/// - When the budget runs out, the call returns at an instruction boundary
///   with `at_horizon == false` and the wave unfinished; calling again with
///   the same `until` goes on exactly from there, and the wave's lanes,
///   memory, summed counters and end are exactly those of calls that had
///   no budget at all.
///
/// Once `end` is `Some` the lanes are spent: do not advance them again.
///
/// Splitting a wave's run at different horizons gives the same result
/// (lanes, memory, counters, cycles) for a wave that ends `Done`, for
/// programs whose lanes do not read what other lanes of the wave write. A
/// wave that fails can end differently: a lane after the failing one may
/// have run in an earlier call, and an earlier lane may have stopped at the
/// horizon before its own end, as lock-stepped threads would have when the
/// fault stopped them.
#[allow(clippy::too_many_arguments)]
pub fn advance_wave_bounded<M: Memory>(
    prog: &[Instr],
    grid: &Grid,
    group: u32,
    wave: u32,
    lanes: &mut [Lane],
    mem: &mut M,
    costs: &CycleCosts,
    until: u64,
    cycle_limit: u64,
    budget: &mut u64,
) -> WaveStep {
    let max_instrs = lane_instr_limit(costs, cycle_limit);
    let len = lanes.len().min(grid.threads_per_wave as usize);
    let lanes = &mut lanes[..len];
    let mut step = WaveStep {
        end: None,
        at_horizon: true,
        cycles: 0,
        counters: Counters::default(),
    };
    let mut all_ended = true;
    for (i, lane) in (0u32..).zip(lanes.iter_mut()) {
        let ids = grid.thread_ids(group, wave, i);
        match advance_lane(
            prog,
            &ids,
            lane,
            mem,
            costs,
            until,
            cycle_limit,
            max_instrs,
            budget,
            &mut step.counters,
        ) {
            LaneStop::Ended => {}
            LaneStop::Horizon => all_ended = false,
            LaneStop::OutOfBudget => {
                step.at_horizon = false;
                all_ended = false;
                break;
            }
            LaneStop::Failed(end) => {
                step.end = Some(end);
                break;
            }
        }
    }
    if step.end.is_none() && all_ended {
        step.end = Some(WaveEnd::Done);
    }
    step.cycles = match step.end {
        Some(WaveEnd::Hung) => cycle_limit,
        _ => lanes
            .iter()
            .map(|l| l.cycles.min(cycle_limit))
            .max()
            .unwrap_or(0),
    };
    step
}

/// [`advance_wave_bounded`] with no instruction budget, for the host tests
/// and benchmarks that advance a wave in one call per horizon. The engine
/// always gives a budget: one unbudgeted call may execute up to every
/// lane's share of the cycle limit.
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
    let mut budget = u64::MAX;
    advance_wave_bounded(
        prog,
        grid,
        group,
        wave,
        lanes,
        mem,
        costs,
        until_cycles,
        cycle_limit,
        &mut budget,
    )
}

/// Runs wave `wave` of work-group `group` to completion under the rules of
/// [`advance_wave_bounded`], with the horizon at `cycle_limit` and no
/// budget: lane 0 runs to its end, then lane 1, and so on, until one
/// faults or hangs, which ends the wave (later lanes do not run). Exactly
/// what fresh lanes advanced in one call with such a horizon give.
///
/// One lane at a time, so no lane array is needed; the work is bounded by
/// the cycle limit: at most `cycle_limit / c + 1` instructions per thread,
/// `c` the cheapest class's cost (at least 1).
pub fn run_wave<M: Memory>(
    prog: &[Instr],
    grid: &Grid,
    group: u32,
    wave: u32,
    mem: &mut M,
    costs: &CycleCosts,
    cycle_limit: u64,
) -> WaveRun {
    let max_instrs = lane_instr_limit(costs, cycle_limit);
    let mut run = WaveRun {
        end: WaveEnd::Done,
        cycles: 0,
        counters: Counters::default(),
    };
    for i in 0..grid.threads_per_wave {
        let ids = grid.thread_ids(group, wave, i);
        let mut lane = Lane::default();
        let mut budget = u64::MAX;
        let stop = advance_lane(
            prog,
            &ids,
            &mut lane,
            mem,
            costs,
            cycle_limit,
            cycle_limit,
            max_instrs,
            &mut budget,
            &mut run.counters,
        );
        run.cycles = run.cycles.max(lane.cycles.min(cycle_limit));
        match stop {
            LaneStop::Ended => {}
            // With the horizon at the limit a lane that neither ended nor
            // faulted is hung (a lane executes at most `max_instrs`, far
            // below the budget).
            LaneStop::Horizon | LaneStop::OutOfBudget | LaneStop::Failed(WaveEnd::Hung) => {
                run.end = WaveEnd::Hung;
                run.cycles = cycle_limit;
                return run;
            }
            LaneStop::Failed(end) => {
                run.end = end;
                return run;
            }
        }
    }
    run
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::{
        validate,
        Op,
        Special, //
    };

    use crate::exec::SliceMemory as Buffers;

    fn program(words: &[u64], bindings: usize) -> ([Instr; 32], usize) {
        let mut out = [Instr {
            op: Op::End,
            rd: 0,
            ra: 0,
            rb: 0,
            imm: 0,
        }; 32];
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
        for (groups, waves, threads) in [(1, 1, 1), (3, 2, 5), (7, 4, 16), (1, 64, 1), (16, 1, 64)]
        {
            let grid = Grid {
                groups,
                waves_per_group: waves,
                threads_per_wave: threads,
            };
            grid.validate().unwrap();
            let total = grid.total_threads() as usize;
            let mut a: [u32; 2048] = core::array::from_fn(|i| i as u32);
            let mut b: [u32; 2048] = core::array::from_fn(|i| 1000 * i as u32);
            let mut c = [0u32; 2048];
            let mut bufs: [&mut [u32]; 3] = [&mut a[..total], &mut b[..total], &mut c[..total]];
            let mut mem = Buffers(&mut bufs);
            for g in 0..groups {
                for w in 0..waves {
                    let run = run_wave(
                        &prog[..n],
                        &grid,
                        g,
                        w,
                        &mut mem,
                        &CycleCosts::DEFAULT,
                        1_000,
                    );
                    assert_eq!(run.end, WaveEnd::Done);
                    assert_eq!(run.cycles, 1 + 16 + 16 + 1 + 16 + 2);
                    assert_eq!(run.counters.total(), 6 * threads as u64);
                }
            }
            for (i, &w) in c[..total].iter().enumerate() {
                assert_eq!(
                    w,
                    1001 * i as u32,
                    "shape {groups}x{waves}x{threads}, thread {i}"
                );
            }
        }
    }

    #[test]
    fn a_fault_stops_the_wave_and_names_the_access() {
        let (prog, n) = vector_add();
        let grid = Grid {
            groups: 1,
            waves_per_group: 1,
            threads_per_wave: 8,
        };
        let (mut a, mut b, mut c) = ([1u32; 8], [2u32; 8], [0u32; 5]);
        let mut bufs: [&mut [u32]; 3] = [&mut a, &mut b, &mut c];
        let run = run_wave(
            &prog[..n],
            &grid,
            0,
            0,
            &mut Buffers(&mut bufs),
            &CycleCosts::DEFAULT,
            1_000,
        );
        assert_eq!(
            run.end,
            WaveEnd::Fault {
                exit: Exit::OutOfBounds {
                    pc: 4,
                    slot: 2,
                    index: 5
                }
            }
        );
        assert_eq!(c, [3; 5]);
    }

    #[test]
    fn shapes_are_checked() {
        let g = |groups, waves_per_group, threads_per_wave| Grid {
            groups,
            waves_per_group,
            threads_per_wave,
        };
        assert_eq!(g(0, 1, 1).validate(), Err(GridError::Empty));
        assert_eq!(g(1, 0, 1).validate(), Err(GridError::Empty));
        assert_eq!(g(1, 1, 0).validate(), Err(GridError::Empty));
        assert_eq!(g(1, 65, 1).validate(), Err(GridError::TooBig));
        assert_eq!(g(1, 1, 65).validate(), Err(GridError::TooBig));
        assert_eq!(g(u32::MAX, 64, 64).validate(), Err(GridError::TooBig));
        assert_eq!(g((1 << 20) - 1, 64, 64).validate(), Ok(()));
        let ids = g(4, 3, 8).thread_ids(2, 1, 5);
        assert_eq!(
            (ids.global, ids.local, ids.group_threads),
            (2 * 24 + 13, 13, 24)
        );
    }

    use crate::rng::Rng;

    /// Three bindings of a test job, `lens` words long each.
    #[derive(Clone, Debug, PartialEq)]
    struct Job {
        words: [[u32; 256]; 3],
        lens: [usize; 3],
    }

    impl Job {
        fn new(lens: [usize; 3], rng: &mut Rng, a_below: u32) -> Self {
            let mut words = [[0u32; 256]; 3];
            for w in words[0].iter_mut() {
                *w = rng.below(a_below);
            }
            for w in words[1].iter_mut() {
                *w = rng.next_u32() >> 8;
            }
            Self { words, lens }
        }

        fn with_mem<R>(&mut self, f: impl FnOnce(&mut Buffers<'_, '_>) -> R) -> R {
            let [a, b, c] = &mut self.words;
            let [la, lb, lc] = self.lens;
            let mut bufs: [&mut [u32]; 3] = [&mut a[..la], &mut b[..lb], &mut c[..lc]];
            f(&mut Buffers(&mut bufs))
        }
    }

    /// A wave run through [`advance_wave_bounded`] to its end.
    #[derive(Debug, PartialEq)]
    struct Outcome {
        /// End, final cycles, and counters summed over every call.
        run: WaveRun,
        /// The lanes as the wave left them.
        lanes: [Lane; MAX_THREADS_PER_WAVE as usize],
        /// The most instructions one call executed.
        most_per_call: u64,
    }

    /// Runs wave `wave` of `group` through `advance_wave_bounded` at the
    /// horizons `horizons` (increasing), then at the limit, each call with
    /// the budget `budget_of` gives. Checks at every call that it took
    /// exactly what it executed from the budget and ran out of it before
    /// the horizon only when it is spent; at every horizon reached, that
    /// each lane is at a boundary whose next instruction ends past it and
    /// that a second call there does nothing.
    #[allow(clippy::too_many_arguments)]
    fn run_schedule(
        prog: &[Instr],
        grid: &Grid,
        group: u32,
        wave: u32,
        job: &mut Job,
        costs: &CycleCosts,
        limit: u64,
        horizons: &[u64],
        mut budget_of: impl FnMut() -> u64,
    ) -> (Outcome, usize) {
        let mut lanes = [Lane::default(); MAX_THREADS_PER_WAVE as usize];
        let n = grid.threads_per_wave as usize;
        let (mut counters, mut calls, mut most_per_call) = (Counters::default(), 0, 0);
        for &until in horizons.iter().chain([limit].iter()) {
            let step = loop {
                let given = budget_of();
                let mut budget = given;
                let step = job.with_mem(|mem| {
                    advance_wave_bounded(
                        prog,
                        grid,
                        group,
                        wave,
                        &mut lanes[..n],
                        mem,
                        costs,
                        until,
                        limit,
                        &mut budget,
                    )
                });
                calls += 1;
                assert_eq!(given - budget, step.counters.total());
                most_per_call = most_per_call.max(step.counters.total());
                counters.add(&step.counters);
                if step.end.is_some() {
                    assert!(step.at_horizon);
                }
                if step.at_horizon {
                    break step;
                }
                assert_eq!(budget, 0, "stopped before the horizon with budget left");
            };
            if let Some(end) = step.end {
                let run = WaveRun {
                    end,
                    cycles: step.cycles,
                    counters,
                };
                return (
                    Outcome {
                        run,
                        lanes,
                        most_per_call,
                    },
                    calls,
                );
            }
            assert!(until < limit, "the limit's horizon always ends the wave");
            assert!(step.cycles <= until);
            for lane in &lanes[..n] {
                assert!(lane.cycles <= until);
                if !lane.ended {
                    let next = costs.of(prog[lane.thread.pc as usize].op.class()) as u64;
                    assert!(
                        next > until - lane.cycles,
                        "lane stopped early: {lane:?} at {until}"
                    );
                }
            }
            let saved = (job.clone(), lanes);
            let mut budget = u64::MAX;
            let again = job.with_mem(|mem| {
                advance_wave_bounded(
                    prog,
                    grid,
                    group,
                    wave,
                    &mut lanes[..n],
                    mem,
                    costs,
                    until,
                    limit,
                    &mut budget,
                )
            });
            let idle = WaveStep {
                end: None,
                at_horizon: true,
                cycles: step.cycles,
                counters: Counters::default(),
            };
            assert_eq!(again, idle);
            assert!(saved == (job.clone(), lanes));
        }
        unreachable!("the limit's horizon ends every wave");
    }

    /// `count` increasing horizons, at most `max_step` cycles apart
    /// (sometimes 0 apart).
    fn horizons(rng: &mut Rng, count: usize, max_step: u64) -> [u64; 64] {
        let mut out = [0; 64];
        let mut until = 0;
        for h in out.iter_mut().take(count) {
            until += rng.below_u64(max_step + 1);
            *h = until;
        }
        out
    }

    /// Runs through `run_schedule` in horizons at most `max_step` cycles
    /// apart (as many as it takes to reach `limit`), budgets of 1 to
    /// `max_budget` instructions a call.
    #[allow(clippy::too_many_arguments)]
    fn run_in_chunks(
        prog: &[Instr],
        grid: &Grid,
        group: u32,
        wave: u32,
        job: &mut Job,
        costs: &CycleCosts,
        limit: u64,
        rng: &mut Rng,
        max_step: u64,
        max_budget: u64,
    ) -> (WaveRun, usize) {
        let mut hs = [0u64; 64];
        let mut until = 0;
        let mut count = 0;
        while count < hs.len() && until < limit {
            until += rng.below_u64(max_step + 1);
            hs[count] = until.min(limit);
            count += 1;
        }
        let mut budget_rng = Rng::new(rng.next_u64());
        let (out, calls) = run_schedule(
            prog,
            grid,
            group,
            wave,
            job,
            costs,
            limit,
            &hs[..count],
            || 1 + budget_rng.below_u64(max_budget),
        );
        assert!(out.most_per_call <= max_budget);
        (out.run, calls)
    }

    /// Float arithmetic of every kind on a[i] (as an integer) and b[i]
    /// (as float bits), three results per thread.
    fn float_mix() -> ([Instr; 32], usize) {
        program(
            &[
                op(Op::Sreg, 0, 0, 0, Special::GlobalId as i32),
                op(Op::Ld, 1, 0, 0, 0),
                op(Op::Itof, 1, 1, 0, 0),
                op(Op::Ld, 2, 0, 1, 0),
                op(Op::Fmul, 3, 1, 2, 0),
                op(Op::Fsub, 4, 3, 2, 0),
                op(Op::Fadd, 4, 4, 1, 0),
                op(Op::Fma, 4, 1, 2, 0),
                op(Op::Flt, 5, 4, 3, 0),
                op(Op::St, 4, 0, 2, 0),
                op(Op::Ftoi, 6, 4, 0, 0),
                op(Op::St, 6, 0, 2, 64),
                op(Op::St, 5, 0, 2, 128),
                op(Op::End, 0, 0, 0, 0),
            ],
            3,
        )
    }

    /// c[i] = sum of b[j] * j for j below a[i]: lanes of one wave take
    /// very different times.
    fn uneven_loop() -> ([Instr; 32], usize) {
        program(
            &[
                op(Op::Sreg, 0, 0, 0, Special::GlobalId as i32),
                op(Op::Ld, 1, 0, 0, 0),
                op(Op::Movi, 2, 0, 0, 0),
                op(Op::Movi, 3, 0, 0, 0),
                op(Op::Seq, 4, 3, 1, 0), // loop: done?
                op(Op::Brnz, 0, 4, 0, 10),
                op(Op::Ld, 5, 3, 1, 0),
                op(Op::Mad, 2, 5, 3, 0),
                op(Op::Addi, 3, 3, 0, 1),
                op(Op::Br, 0, 0, 0, 4),
                op(Op::St, 2, 0, 2, 0),
                op(Op::End, 0, 0, 0, 0),
            ],
            3,
        )
    }

    const ODD_COSTS: CycleCosts = CycleCosts {
        per_class: [0, 3, 7, 11, 5, 1, 2],
    };
    const UNIT_COSTS: CycleCosts = CycleCosts { per_class: [1; 7] };

    #[test]
    fn chunked_waves_match_run_wave() {
        let mut rng = Rng::new(42);
        let mut most_calls = 0;
        let programs = [
            (vector_add(), u32::MAX),
            (float_mix(), 1000),
            (uneven_loop(), 200),
        ];
        for ((prog, n), a_below) in programs {
            for (groups, waves, threads) in [(1, 1, 1), (2, 3, 7), (1, 1, 64), (4, 2, 8)] {
                let grid = Grid {
                    groups,
                    waves_per_group: waves,
                    threads_per_wave: threads,
                };
                for costs in [CycleCosts::DEFAULT, ODD_COSTS, UNIT_COSTS] {
                    for (max_step, max_budget) in
                        [(7, u64::MAX), (100, 1), (5000, 40), (1 << 20, 3)]
                    {
                        let mut whole = Job::new([256; 3], &mut rng, a_below);
                        let mut chunked = whole.clone();
                        for g in 0..groups {
                            for w in 0..waves {
                                let want = whole.with_mem(|mem| {
                                    run_wave(&prog[..n], &grid, g, w, mem, &costs, 1 << 20)
                                });
                                let (got, calls) = run_in_chunks(
                                    &prog[..n],
                                    &grid,
                                    g,
                                    w,
                                    &mut chunked,
                                    &costs,
                                    1 << 20,
                                    &mut rng,
                                    max_step,
                                    max_budget,
                                );
                                assert_eq!(want.end, WaveEnd::Done);
                                assert_eq!(
                                    got, want,
                                    "{grid:?} wave {g}.{w}, costs {costs:?}, steps {max_step}"
                                );
                                assert!(chunked == whole);
                                most_calls = most_calls.max(calls);
                            }
                        }
                    }
                }
            }
        }
        assert!(most_calls > 100, "{most_calls} calls at most");
    }

    /// A random valid program of 2 to 15 instructions over three bindings:
    /// every opcode, loops, loads and stores near the buffers' ends.
    fn random_program(rng: &mut Rng) -> ([Instr; 32], usize) {
        let len = 2 + rng.below(14) as usize;
        let mut words = [0u64; 32];
        for (pc, word) in words.iter_mut().enumerate().take(len) {
            loop {
                let op = Op::ALL[rng.below(Op::ALL.len() as u32) as usize];
                let mut field = |n: u32| {
                    if rng.below(2) == 0 {
                        0
                    } else {
                        rng.below(n) as u8
                    }
                };
                let (rd, ra, rb) = (field(16), field(16), field(16));
                let imm = match rng.below(4) {
                    0 => 0,
                    1 => rng.below(len as u32) as i32,
                    2 => rng.below(7) as i32,
                    _ => rng.below(64) as i32 - 32,
                };
                let w = op_word(op, rd, ra, rb, imm);
                if crate::isa::decode(w, pc, len, 3).is_ok() {
                    *word = w;
                    break;
                }
            }
        }
        words[len - 1] = match rng.below(4) {
            0 => op(Op::Br, 0, 0, 0, rng.below(len as u32) as i32),
            _ => op(Op::End, 0, 0, 0, 0),
        };
        program(&words[..len], 3)
    }

    fn op_word(o: Op, rd: u8, ra: u8, rb: u8, imm: i32) -> u64 {
        op(o, rd, ra, rb, imm)
    }

    /// The budget never changes anything: random programs, shapes,
    /// horizons and cycle costs, run with budgets of 1, of random sizes and
    /// with none, give the same lanes, memory, summed counters, cycles and
    /// end; with no horizon before the limit, that is exactly `run_wave`.
    #[test]
    fn budgets_never_change_the_result() {
        let mut rng = Rng::new(2026);
        let mut ends = [0usize; 3];
        for case in 0..600 {
            let (prog, n) = random_program(&mut rng);
            let prog = &prog[..n];
            let threads = 1 + rng.below(12);
            let grid = Grid {
                groups: 2,
                waves_per_group: 2,
                threads_per_wave: threads,
            };
            let (group, wave) = (rng.below(2), rng.below(2));
            let costs = [CycleCosts::DEFAULT, ODD_COSTS, UNIT_COSTS][rng.below(3) as usize];
            let limit = 50 + rng.below_u64(3000);
            let count = rng.below(6) as usize;
            let hs = horizons(&mut rng, count, limit / 2);
            let hs = &hs[..count];
            let start = Job::new([16, 24, 40], &mut rng, 32);

            let mut free = start.clone();
            let (want, _) = run_schedule(
                prog,
                &grid,
                group,
                wave,
                &mut free,
                &costs,
                limit,
                hs,
                || u64::MAX,
            );
            ends[match want.run.end {
                WaveEnd::Done => 0,
                WaveEnd::Hung => 1,
                WaveEnd::Fault { .. } => 2,
            }] += 1;
            let mut sizes = Rng::new(case);
            let max_budget = 1 + sizes.below_u64(60);
            for random in [false, true] {
                let budget_of = || {
                    if random {
                        1 + sizes.below_u64(max_budget)
                    } else {
                        1
                    }
                };
                let mut job = start.clone();
                let (got, _) = run_schedule(
                    prog, &grid, group, wave, &mut job, &costs, limit, hs, budget_of,
                );
                assert_eq!(
                    got.run, want.run,
                    "case {case}: {prog:?} {grid:?} horizons {hs:?} limit {limit}"
                );
                assert_eq!(got.lanes, want.lanes, "case {case}");
                assert!(job == free, "case {case}: memory differs");
            }
            if hs.is_empty() {
                let mut job = start.clone();
                let run =
                    job.with_mem(|mem| run_wave(prog, &grid, group, wave, mem, &costs, limit));
                assert_eq!(run, want.run, "case {case}: run_wave differs");
                assert!(job == free, "case {case}: run_wave's memory differs");
            }
        }
        // Every kind of end was tried, many times.
        assert!(
            ends.iter().all(|&n| n > 60),
            "ends (done, hung, fault): {ends:?}"
        );
    }

    /// Fresh lanes advanced once with the horizon at the limit.
    fn in_one_call(
        prog: &[Instr],
        grid: &Grid,
        job: &mut Job,
        costs: &CycleCosts,
        limit: u64,
    ) -> WaveRun {
        let mut lanes = [Lane::default(); MAX_THREADS_PER_WAVE as usize];
        let lanes = &mut lanes[..grid.threads_per_wave as usize];
        let step =
            job.with_mem(|mem| advance_wave(prog, grid, 0, 0, lanes, mem, costs, u64::MAX, limit));
        WaveRun {
            end: step.end.unwrap(),
            cycles: step.cycles,
            counters: step.counters,
        }
    }

    #[test]
    fn endless_loop_is_hung_without_running_past_the_limit() {
        let (prog, n) = program(&[op(Op::Br, 0, 0, 0, 0)], 0);
        let grid = Grid {
            groups: 1,
            waves_per_group: 1,
            threads_per_wave: 2,
        };
        let mut bufs: [&mut [u32]; 0] = [];
        let run = run_wave(
            &prog[..n],
            &grid,
            0,
            0,
            &mut Buffers(&mut bufs),
            &CycleCosts::DEFAULT,
            10_001,
        );
        assert_eq!(run.end, WaveEnd::Hung);
        assert_eq!(run.cycles, 10_001);
        // The second lane never ran; the first made the 5 000 jumps (2
        // cycles each) that fit in the limit, and not one more.
        assert_eq!(run.counters.total(), 5_000);
        for costs in [CycleCosts::DEFAULT, ODD_COSTS] {
            for until in [4_000, 10_000, 10_001, u64::MAX] {
                let mut lanes = [Lane::default(); 2];
                let step = advance_wave(
                    &prog[..n],
                    &grid,
                    0,
                    0,
                    &mut lanes,
                    &mut Buffers(&mut bufs),
                    &costs,
                    until,
                    10_001,
                );
                if until < 10_000 {
                    assert_eq!(step.end, None);
                    continue;
                }
                assert_eq!((step.end, step.cycles), (Some(WaveEnd::Hung), 10_001));
                let jump = costs.of(Op::Br.class()) as u64;
                assert_eq!(
                    lanes[0].cycles,
                    10_001 / jump * jump,
                    "{costs:?} until {until}"
                );
                assert_eq!(lanes[0].instrs, 10_001 / jump);
                assert_eq!(step.counters.total(), lanes[0].instrs);
            }
        }
    }

    /// A lane whose `END` would end one cycle past the limit is hung
    /// before executing it; one cycle more of limit and the wave is done.
    #[test]
    fn end_past_the_limit_is_a_hang() {
        let (prog, n) = program(
            &[
                op(Op::Movi, 1, 0, 0, 100),
                op(Op::Addi, 1, 1, 0, -1),
                op(Op::Brnz, 0, 1, 0, 1),
                op(Op::End, 0, 0, 0, 0),
            ],
            0,
        );
        // 1 + 100 × (1 + 2) + 2 cycles, 1 + 200 + 1 instructions.
        let grid = Grid {
            groups: 1,
            waves_per_group: 1,
            threads_per_wave: 3,
        };
        let mut bufs: [&mut [u32]; 0] = [];
        let mem = &mut Buffers(&mut bufs);
        let run = run_wave(&prog[..n], &grid, 0, 0, mem, &CycleCosts::DEFAULT, 303);
        assert_eq!(
            (run.end, run.cycles, run.counters.total()),
            (WaveEnd::Done, 303, 3 * 202)
        );
        let run = run_wave(&prog[..n], &grid, 0, 0, mem, &CycleCosts::DEFAULT, 302);
        assert_eq!(
            (run.end, run.cycles, run.counters.total()),
            (WaveEnd::Hung, 302, 201)
        );
        let mut lanes = [Lane::default(); 3];
        let step = advance_wave(
            &prog[..n],
            &grid,
            0,
            0,
            &mut lanes,
            mem,
            &CycleCosts::DEFAULT,
            1_000,
            302,
        );
        assert_eq!(
            (step.end, step.cycles, step.counters.total()),
            (Some(WaveEnd::Hung), 302, 201)
        );
        assert_eq!(
            (lanes[0].cycles, lanes[0].thread.pc, lanes[0].ended),
            (301, 3, false)
        );
    }

    #[test]
    fn endless_loop_hangs_in_chunks_as_in_one_go() {
        let (prog, n) = program(&[op(Op::Br, 0, 0, 0, 0)], 0);
        let mut rng = Rng::new(3);
        for costs in [
            CycleCosts::DEFAULT,
            ODD_COSTS,
            CycleCosts { per_class: [0; 7] },
        ] {
            for threads in [1, 2, 5] {
                let grid = Grid {
                    groups: 1,
                    waves_per_group: 1,
                    threads_per_wave: threads,
                };
                let mut job = Job::new([0; 3], &mut rng, 1);
                let want =
                    job.with_mem(|mem| run_wave(&prog[..n], &grid, 0, 0, mem, &costs, 10_000));
                assert_eq!((want.end, want.cycles), (WaveEnd::Hung, 10_000));
                assert_eq!(
                    in_one_call(&prog[..n], &grid, &mut job, &costs, 10_000),
                    want
                );
                for (max_step, max_budget) in [(1, 7), (300, u64::MAX), (20_000, 1_000)] {
                    let (got, _) = run_in_chunks(
                        &prog[..n],
                        &grid,
                        0,
                        0,
                        &mut job,
                        &costs,
                        10_000,
                        &mut rng,
                        max_step,
                        max_budget,
                    );
                    if threads == 1 {
                        assert_eq!(got, want, "costs {costs:?}, steps {max_step}");
                    } else {
                        // Later lanes ran up to the horizons before the
                        // first one hung, never past the limit.
                        assert_eq!((got.end, got.cycles), (want.end, want.cycles));
                        assert!(got.counters.total() >= want.counters.total());
                        assert!(got.counters.total() <= threads as u64 * want.counters.total());
                    }
                }
            }
        }
    }

    /// Lane `hung` loops forever, the others end at once.
    fn one_lane_loops(hung: i32) -> ([Instr; 32], usize) {
        program(
            &[
                op(Op::Sreg, 0, 0, 0, Special::Lane as i32),
                op(Op::Movi, 1, 0, 0, hung),
                op(Op::Seq, 2, 0, 1, 0),
                op(Op::Brz, 0, 2, 0, 5),
                op(Op::Br, 0, 0, 0, 4),
                op(Op::End, 0, 0, 0, 0),
            ],
            0,
        )
    }

    #[test]
    fn one_hung_lane_hangs_in_chunks_as_in_one_go() {
        let grid = Grid {
            groups: 1,
            waves_per_group: 1,
            threads_per_wave: 8,
        };
        let mut rng = Rng::new(5);
        for hung in [7, 3, 0] {
            let (prog, n) = one_lane_loops(hung);
            for costs in [CycleCosts::DEFAULT, ODD_COSTS] {
                let mut job = Job::new([0; 3], &mut rng, 1);
                let want =
                    job.with_mem(|mem| run_wave(&prog[..n], &grid, 0, 0, mem, &costs, 5_000));
                assert_eq!((want.end, want.cycles), (WaveEnd::Hung, 5_000));
                assert_eq!(
                    in_one_call(&prog[..n], &grid, &mut job, &costs, 5_000),
                    want
                );
                for (max_step, max_budget) in [(1, 1), (64, u64::MAX), (4_999, 5), (100_000, 100)] {
                    let (got, _) = run_in_chunks(
                        &prog[..n],
                        &grid,
                        0,
                        0,
                        &mut job,
                        &costs,
                        5_000,
                        &mut rng,
                        max_step,
                        max_budget,
                    );
                    if hung == 7 {
                        assert_eq!(got, want, "costs {costs:?}, steps {max_step}");
                    } else {
                        // Later lanes may have run (5 instructions each at
                        // most) in the calls before the one that hung.
                        let later = (7 - hung) as u64 * 5;
                        let extra = got.counters.total() - want.counters.total();
                        assert_eq!((got.end, got.cycles), (want.end, want.cycles));
                        assert!(extra <= later, "lane {hung}: {extra} more");
                    }
                }
            }
        }
    }

    #[test]
    fn fault_in_chunks_matches_run_wave() {
        let (prog, n) = vector_add();
        let grid = Grid {
            groups: 1,
            waves_per_group: 1,
            threads_per_wave: 8,
        };
        let mut rng = Rng::new(11);
        for c_len in [5, 7] {
            for costs in [CycleCosts::DEFAULT, ODD_COSTS, UNIT_COSTS] {
                for (max_step, max_budget) in [(1, 1), (5, u64::MAX), (40, 3), (1_000, 9)] {
                    let mut whole = Job::new([8, 8, c_len], &mut rng, 1000);
                    let mut chunked = whole.clone();
                    let mut once = whole.clone();
                    let want =
                        whole.with_mem(|mem| run_wave(&prog[..n], &grid, 0, 0, mem, &costs, 1_000));
                    let exit = Exit::OutOfBounds {
                        pc: 4,
                        slot: 2,
                        index: c_len as i64,
                    };
                    assert_eq!(want.end, WaveEnd::Fault { exit });
                    assert_eq!(
                        in_one_call(&prog[..n], &grid, &mut once, &costs, 1_000),
                        want
                    );
                    let (got, _) = run_in_chunks(
                        &prog[..n],
                        &grid,
                        0,
                        0,
                        &mut chunked,
                        &costs,
                        1_000,
                        &mut rng,
                        max_step,
                        max_budget,
                    );
                    // Every lane reaches the faulting store at the same
                    // cycle: the first in lane order wins, the lanes before
                    // it stored (some may not have reached END yet).
                    assert_eq!(got.end, want.end, "costs {costs:?}, steps {max_step}");
                    assert!(got.cycles <= want.cycles);
                    let (g, w) = (got.counters.total(), want.counters.total());
                    let ends = c_len as u64;
                    if c_len == 7 {
                        assert!(g <= w && g + ends >= w, "{g} vs {w}");
                    }
                    assert!(chunked == whole && once == whole);
                }
            }
        }
    }

    /// Lane 0 fails late (after 300 cycles or more), the other lanes early
    /// (19 cycles). In one call lane 0 runs first and its failure ends the
    /// wave; in calls whose horizons come before lane 0's failure, the
    /// early failure of lane 1 comes first and ends it, and lane 0 never
    /// reaches its own.
    #[test]
    fn first_failure_in_lane_order_within_a_call_wins() {
        let late_fault = program(
            &[
                op(Op::Sreg, 0, 0, 0, Special::Lane as i32),
                op(Op::Brnz, 0, 0, 0, 6),
                op(Op::Movi, 1, 0, 0, 100),
                op(Op::Addi, 1, 1, 0, -1),
                op(Op::Brnz, 0, 1, 0, 3),
                op(Op::Ld, 2, 1, 0, -1),
                op(Op::Ld, 2, 0, 0, 1000),
                op(Op::End, 0, 0, 0, 0),
            ],
            1,
        );
        let late_hang = program(
            &[
                op(Op::Sreg, 0, 0, 0, Special::Lane as i32),
                op(Op::Brnz, 0, 0, 0, 3),
                op(Op::Br, 0, 0, 0, 2),
                op(Op::Ld, 2, 0, 0, 1000),
                op(Op::End, 0, 0, 0, 0),
            ],
            1,
        );
        let lane_1 = WaveEnd::Fault {
            exit: Exit::OutOfBounds {
                pc: 6,
                slot: 0,
                index: 1001,
            },
        };
        let cases = [
            (
                late_fault,
                WaveEnd::Fault {
                    exit: Exit::OutOfBounds {
                        pc: 5,
                        slot: 0,
                        index: -1,
                    },
                },
                lane_1,
            ),
            (
                late_hang,
                WaveEnd::Hung,
                WaveEnd::Fault {
                    exit: Exit::OutOfBounds {
                        pc: 3,
                        slot: 0,
                        index: 1001,
                    },
                },
            ),
        ];
        let grid = Grid {
            groups: 1,
            waves_per_group: 1,
            threads_per_wave: 4,
        };
        let mut rng = Rng::new(13);
        for ((prog, n), alone, chunked) in cases {
            let mut job = Job::new([16, 0, 0], &mut rng, 1);
            let want = job.with_mem(|mem| {
                run_wave(&prog[..n], &grid, 0, 0, mem, &CycleCosts::DEFAULT, 2_000)
            });
            assert_eq!(want.end, alone);
            assert_eq!(
                in_one_call(&prog[..n], &grid, &mut job, &CycleCosts::DEFAULT, 2_000),
                want
            );
            for (max_step, max_budget) in [(1, 1), (10, u64::MAX), (50, 4)] {
                let (got, _) = run_in_chunks(
                    &prog[..n],
                    &grid,
                    0,
                    0,
                    &mut job,
                    &CycleCosts::DEFAULT,
                    2_000,
                    &mut rng,
                    max_step,
                    max_budget,
                );
                assert_eq!(got.end, chunked, "steps {max_step}");
                assert!(got.cycles < 100, "lane 0 ran on to {}", got.cycles);
            }
        }
    }

    /// Lanes 0 to 62 loop until just under the limit, lane 63 faults at
    /// once: the wave of the job timeout that faults in its last lane.
    fn last_lane_faults(limit: u64) -> ([Instr; 32], usize) {
        program(&crate::sample_programs::last_lane_faults(limit), 1)
    }

    /// A call whose horizon comes before the looping lanes' end stops them
    /// there when the last lane faults: no lane runs on to the limit.
    #[test]
    fn a_fault_does_not_run_earlier_lanes_to_the_limit() {
        let limit = 1 << 16;
        let (prog, n) = last_lane_faults(limit);
        let grid = Grid {
            groups: 1,
            waves_per_group: 1,
            threads_per_wave: 64,
        };
        let mut rng = Rng::new(17);
        let mut job = Job::new([16, 0, 0], &mut rng, 1);
        let mut lanes = [Lane::default(); 64];
        let until = 2_000;
        let step = job.with_mem(|mem| {
            advance_wave(
                &prog[..n],
                &grid,
                0,
                0,
                &mut lanes,
                mem,
                &CycleCosts::DEFAULT,
                until,
                limit,
            )
        });
        let fault = WaveEnd::Fault {
            exit: Exit::OutOfBounds {
                pc: 8,
                slot: 0,
                index: 1063,
            },
        };
        assert_eq!(step.end, Some(fault));
        // Every instruction costs a cycle or more: 64 lanes up to the
        // horizon at most, where the unbounded run went on to the limit.
        assert!(
            step.counters.total() <= 64 * until,
            "{} instructions",
            step.counters.total()
        );
        assert!(lanes.iter().all(|l| l.cycles <= until));
        assert!(step.cycles <= until);
    }

    /// The same wave with the horizon at the limit: in calls of at most
    /// `budget` instructions it ends with the last lane's fault after the
    /// others ended, exactly as run_wave and as one call with no budget.
    #[test]
    fn a_budget_bounds_every_call_of_a_long_wave() {
        let limit = 1 << 16;
        let (prog, n) = last_lane_faults(limit);
        let grid = Grid {
            groups: 1,
            waves_per_group: 1,
            threads_per_wave: 64,
        };
        let mut rng = Rng::new(19);
        let start = Job::new([16, 0, 0], &mut rng, 1);
        let mut job = start.clone();
        let want =
            job.with_mem(|mem| run_wave(&prog[..n], &grid, 0, 0, mem, &CycleCosts::DEFAULT, limit));
        let fault = WaveEnd::Fault {
            exit: Exit::OutOfBounds {
                pc: 8,
                slot: 0,
                index: 1063,
            },
        };
        assert_eq!(want.end, fault);
        // Lanes 0-62 ran to their END, just under the limit.
        assert!(
            want.cycles > limit - 10 && want.cycles <= limit,
            "{}",
            want.cycles
        );
        assert!(want.counters.total() > 63 * (limit / 3) * 2);
        for budget in [10_000, 4_097, 1 << 20] {
            let mut job = start.clone();
            let (got, calls) = run_schedule(
                &prog[..n],
                &grid,
                0,
                0,
                &mut job,
                &CycleCosts::DEFAULT,
                limit,
                &[],
                || budget,
            );
            assert_eq!(got.run, want, "budget {budget}");
            assert!(got.most_per_call <= budget);
            assert!(calls as u64 >= want.counters.total() / budget);
        }
    }
}

#[cfg(test)]
mod rewind_tests {
    use super::*;
    use crate::exec::{
        undo_stores,
        Recording,
        SliceMemory,
        Undo, //
    };
    use crate::isa::{
        encode as op,
        validate,
        Op,
        Special, //
    };

    /// Every thread adds 1 to its own word twenty times, reading it back
    /// each time: what a wave wrote ahead changes what it reads.
    fn accumulate() -> ([Instr; 16], usize) {
        let mut out = [Instr {
            op: Op::End,
            rd: 0,
            ra: 0,
            rb: 0,
            imm: 0,
        }; 16];
        let words = [
            op(Op::Sreg, 0, 0, 0, Special::GlobalId as i32),
            op(Op::Movi, 3, 0, 0, 0),
            op(Op::Movi, 6, 0, 0, 20),
            op(Op::Ld, 1, 0, 0, 0),
            op(Op::Addi, 1, 1, 0, 1),
            op(Op::St, 1, 0, 0, 0),
            op(Op::Addi, 3, 3, 0, 1),
            op(Op::Seq, 4, 3, 6, 0),
            op(Op::Brz, 0, 4, 0, 3),
            op(Op::End, 0, 0, 0, 0),
        ];
        let n = validate(&words, 1, &mut out).unwrap();
        (out, n)
    }

    const GRID: Grid = Grid {
        groups: 1,
        waves_per_group: 1,
        threads_per_wave: 8,
    };

    /// Runs the wave from `lanes` to horizon `until` over `words`.
    fn run(lanes: &mut [Lane], mem: &mut impl Memory, until: u64) -> WaveStep {
        let (prog, n) = accumulate();
        let mut budget = u64::MAX;
        advance_wave_bounded(
            &prog[..n],
            &GRID,
            0,
            0,
            lanes,
            mem,
            &CycleCosts::DEFAULT,
            until,
            1 << 20,
            &mut budget,
        )
    }

    /// A chunk interpreted ahead to its next point, taken back (its stores
    /// undone, its threads restored) and run again only to an earlier
    /// horizon, leaves exactly the threads and memory of a wave run to that
    /// horizon directly: a wave can stop at the instruction boundary where
    /// it was preempted although it had been interpreted further.
    #[test]
    fn a_chunk_taken_back_and_run_to_an_earlier_horizon_is_exact() {
        for (start, stop, ahead) in [(0, 37, 200), (50, 51, 400), (100, 250, 251), (10, 10, 90)] {
            // The reference: straight to `stop`.
            let mut want_words = [5u32; 8];
            let mut want_lanes = [Lane::default(); 8];
            {
                let mut bufs: [&mut [u32]; 1] = [&mut want_words];
                run(&mut want_lanes, &mut SliceMemory(&mut bufs), stop);
            }
            // To `start`, then a recorded chunk to `ahead`, taken back.
            let mut words = [5u32; 8];
            let mut lanes = [Lane::default(); 8];
            let mut log = [Undo::default(); 256];
            let (mut len, mut full) = (0, false);
            let mut bufs: [&mut [u32]; 1] = [&mut words];
            run(&mut lanes, &mut SliceMemory(&mut bufs), start);
            let snapshot = lanes;
            {
                let mut rec = Recording {
                    inner: SliceMemory(&mut bufs),
                    log: &mut log,
                    len: &mut len,
                    full: &mut full,
                };
                run(&mut lanes, &mut rec, ahead);
            }
            assert!(!full && len > 0);
            undo_stores(&mut SliceMemory(&mut bufs), &log[..len]);
            lanes = snapshot;
            run(&mut lanes, &mut SliceMemory(&mut bufs), stop);
            assert_eq!(lanes, want_lanes, "{start} {stop} {ahead}");
            assert_eq!(words, want_words, "{start} {stop} {ahead}");
            // Without taking the stores back, the run would read its own
            // future writes.
            assert_ne!(want_words, [5 + 20; 8]);
        }
    }

    /// A log too small for the chunk says so, and every store still lands.
    #[test]
    fn a_full_log_is_reported() {
        let mut words = [0u32; 8];
        let mut lanes = [Lane::default(); 8];
        let mut log = [Undo::default(); 4];
        let (mut len, mut full) = (0, false);
        let mut bufs: [&mut [u32]; 1] = [&mut words];
        let mut rec = Recording {
            inner: SliceMemory(&mut bufs),
            log: &mut log,
            len: &mut len,
            full: &mut full,
        };
        run(&mut lanes, &mut rec, u64::MAX / 2);
        assert!(full);
        assert_eq!(len, 4);
        assert_eq!(words, [20; 8]);
    }
}
