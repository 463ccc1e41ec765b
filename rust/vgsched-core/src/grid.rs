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

/// One thread of a wave that can be stopped and resumed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lane {
    /// Its architectural state.
    pub thread: Thread,
    /// Cycles it has spent since the wave started.
    pub cycles: u64,
    /// Instructions it has executed since the wave started: [`run_wave`]
    /// bounds them, and a hung lane stops where that bound says.
    pub instrs: u64,
    /// It executed `END` within the cycle limit.
    pub ended: bool,
}

/// What one call of [`advance_wave`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaveStep {
    /// `None`: still running (every unfinished lane stopped at an
    /// instruction boundary at or before `until_cycles`); `Some(end)`: the
    /// wave finished (`Done`, `Hung` or `Fault`).
    pub end: Option<WaveEnd>,
    /// The wave's cycles so far: the most any lane has spent (capped at the
    /// cycle limit); when `end` is `Some` this is the wave's modeled
    /// duration, exactly what [`run_wave`] reports.
    pub cycles: u64,
    /// Instructions executed in this call only, per class.
    pub counters: Counters,
}

/// How far one lane got.
enum LaneStop {
    /// At an instruction boundary within `until_cycles` and the limit.
    Boundary,
    /// It executed `END` within the limit.
    Ended,
    /// It failed, which ends the wave.
    Failed(WaveEnd),
}

/// Most instructions a lane may execute before it is hung: enough to reach
/// `cycle_limit` even if each costs the fewest cycles (at least one, so a
/// class costing nothing cannot loop forever).
fn lane_instr_limit(costs: &CycleCosts, cycle_limit: u64) -> u64 {
    let cheapest = costs.per_class.iter().copied().min().unwrap_or(1).max(1) as u64;
    (cycle_limit / cheapest).saturating_add(1)
}

/// Advances `lane` until it has spent at most `until_cycles` in total, or
/// ends, or fails. The one interpreter loop behind both wave functions.
///
/// A lane is hung exactly as if it ran in one go under an instruction
/// budget of `max_instrs`: once its next instruction no longer fits in
/// `cycle_limit`, it keeps going until that budget, `END` (too late) or a
/// fault, which still wins.
#[allow(clippy::too_many_arguments)]
fn advance_lane<M: Memory>(
    prog: &[Instr],
    ids: &ThreadIds,
    lane: &mut Lane,
    mem: &mut M,
    costs: &CycleCosts,
    until_cycles: u64,
    cycle_limit: u64,
    max_instrs: u64,
    counters: &mut Counters,
) -> LaneStop {
    if lane.ended {
        return LaneStop::Ended;
    }
    let target = until_cycles.min(cycle_limit);
    let instrs_left = max_instrs.saturating_sub(lane.instrs);
    // A lane already past `until_cycles` (an earlier call went further) waits.
    if let Some(room) = target.checked_sub(lane.cycles) {
        let (exit, spent, done) = lane.thread.run_bounded(prog, ids, mem, costs, room, instrs_left, counters);
        lane.cycles += spent;
        lane.instrs += done;
        match exit {
            Exit::Ended => {
                lane.ended = true;
                return LaneStop::Ended;
            }
            Exit::Budget => {}
            fault @ Exit::OutOfBounds { .. } => {
                return LaneStop::Failed(WaveEnd::Fault { exit: fault });
            }
        }
    }
    if target < cycle_limit && lane.instrs < max_instrs {
        return LaneStop::Boundary;
    }
    // Past the limit: only the cycle sum is left to bound, and it cannot
    // matter any more.
    let room = u64::MAX - lane.cycles;
    let instrs_left = max_instrs.saturating_sub(lane.instrs);
    let (exit, spent, done) = lane.thread.run_bounded(prog, ids, mem, costs, room, instrs_left, counters);
    lane.cycles += spent;
    lane.instrs += done;
    match exit {
        fault @ Exit::OutOfBounds { .. } => LaneStop::Failed(WaveEnd::Fault { exit: fault }),
        Exit::Ended | Exit::Budget => LaneStop::Failed(WaveEnd::Hung),
    }
}

/// Advances wave `wave` of work-group `group` until each lane has spent at
/// most `until_cycles` cycles in total since the wave started (`lanes` =
/// the wave's saved state, `len == grid.threads_per_wave`;
/// `Lane::default()` is a wave not started). A lane reaching `cycle_limit`
/// without `END` hangs the wave; a fault ends it at once (later lanes need
/// not run), as [`run_wave`] does. Once `end` is `Some` the lanes are spent:
/// do not advance them again.
///
/// Lanes take turns within each call, as lock-stepped threads would. So
/// that a failed wave ends exactly as in [`run_wave`] (same [`WaveEnd`],
/// same `cycles`), a failing lane first lets the lanes before it run to
/// their end: one of them may fail instead, and [`run_wave`] reports the
/// first failure in lane order. What the lanes after the failed one did
/// in earlier calls cannot be undone, though: on `Hung` or `Fault`, the
/// counters summed over all calls (and memory, if those lanes stored
/// anything) can exceed [`run_wave`]'s, which never runs them. A wave that
/// ends `Done` matches [`run_wave`] in everything for programs whose lanes
/// do not read what other lanes of the wave write.
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
    let max_instrs = lane_instr_limit(costs, cycle_limit);
    let len = lanes.len().min(grid.threads_per_wave as usize);
    let lanes = &mut lanes[..len];
    let mut step = WaveStep { end: None, cycles: 0, counters: Counters::default() };
    let mut done = true;
    let mut failed = None;
    for (i, lane) in (0u32..).zip(lanes.iter_mut()) {
        let ids = grid.thread_ids(group, wave, i);
        match advance_lane(prog, &ids, lane, mem, costs, until_cycles, cycle_limit, max_instrs, &mut step.counters) {
            LaneStop::Boundary => done = false,
            LaneStop::Ended => {}
            LaneStop::Failed(end) => {
                failed = Some((i, end));
                break;
            }
        }
    }
    let last = match failed {
        None => {
            if done {
                step.end = Some(WaveEnd::Done);
            }
            lanes.len()
        }
        Some((failed, end)) => {
            // Run the earlier lanes to their end, as run_wave would have.
            let mut last = (failed, end);
            for (i, lane) in (0u32..failed).zip(lanes.iter_mut()) {
                let ids = grid.thread_ids(group, wave, i);
                if let LaneStop::Failed(end) =
                    advance_lane(prog, &ids, lane, mem, costs, u64::MAX, cycle_limit, max_instrs, &mut step.counters)
                {
                    last = (i, end);
                    break;
                }
            }
            step.end = Some(last.1);
            last.0 as usize + 1
        }
    };
    step.cycles = lanes.iter().take(last).map(|l| l.cycles.min(cycle_limit)).max().unwrap_or(0);
    step
}

/// Runs wave `wave` of work-group `group` to completion. A thread that
/// would take more than `cycle_limit` cycles is stopped and the wave is
/// reported hung; a faulting thread ends the wave at once. Either way its
/// later lanes do not run: the job has failed, and interpreting every lane
/// of a hung wave to the limit would only burn CPU time.
///
/// A thread past the limit runs on until `END`, a fault or its
/// `cycle_limit / c + 1`th instruction, `c` being the cheapest class's cost
/// (at least 1); its counters show all of that.
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
    let mut run = WaveRun { end: WaveEnd::Done, cycles: 0, counters: Counters::default() };
    // One lane at a time, to its end: no lane array on the kernel stack.
    for i in 0..grid.threads_per_wave {
        let ids = grid.thread_ids(group, wave, i);
        let mut lane = Lane::default();
        let stop =
            advance_lane(prog, &ids, &mut lane, mem, costs, u64::MAX, cycle_limit, max_instrs, &mut run.counters);
        run.cycles = run.cycles.max(lane.cycles.min(cycle_limit));
        match stop {
            LaneStop::Ended => {}
            // Unreachable with no horizon before the limit.
            LaneStop::Boundary => {
                run.end = WaveEnd::Hung;
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
            for (i, &w) in c[..total].iter().enumerate() {
                assert_eq!(w, 1001 * i as u32, "shape {groups}x{waves}x{threads}, thread {i}");
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

    /// Runs a wave through `advance_wave` at random horizons, `max_step`
    /// cycles apart at most (sometimes 0), checking at every stop that each
    /// lane is at a boundary within the horizon and that a second call with
    /// the same horizon does nothing. Returns the wave's summed result and
    /// the number of calls.
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
    ) -> (WaveRun, usize) {
        let mut lanes = [Lane::default(); MAX_THREADS_PER_WAVE as usize];
        let n = grid.threads_per_wave as usize;
        let (mut until, mut counters, mut calls) = (0u64, Counters::default(), 0);
        loop {
            until += rng.below_u64(max_step + 1);
            let step =
                job.with_mem(|mem| advance_wave(prog, grid, group, wave, &mut lanes[..n], mem, costs, until, limit));
            calls += 1;
            counters.add(&step.counters);
            if let Some(end) = step.end {
                return (WaveRun { end, cycles: step.cycles, counters }, calls);
            }
            assert!(step.cycles <= until);
            for lane in &lanes[..n] {
                assert!(lane.cycles <= until);
                if !lane.ended {
                    let next = costs.of(prog[lane.thread.pc as usize].op.class()) as u64;
                    assert!(next > until - lane.cycles, "lane stopped early: {lane:?} at {until}");
                }
            }
            let saved = (job.clone(), lanes);
            let again =
                job.with_mem(|mem| advance_wave(prog, grid, group, wave, &mut lanes[..n], mem, costs, until, limit));
            assert_eq!(again, WaveStep { end: None, cycles: step.cycles, counters: Counters::default() });
            assert!(saved == (job.clone(), lanes));
        }
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

    const ODD_COSTS: CycleCosts = CycleCosts { per_class: [0, 3, 7, 11, 5, 1, 2] };
    const UNIT_COSTS: CycleCosts = CycleCosts { per_class: [1; 7] };

    #[test]
    fn chunked_waves_match_run_wave() {
        let mut rng = Rng::new(42);
        let mut most_calls = 0;
        let programs = [(vector_add(), u32::MAX), (float_mix(), 1000), (uneven_loop(), 200)];
        for ((prog, n), a_below) in programs {
            for (groups, waves, threads) in [(1, 1, 1), (2, 3, 7), (1, 1, 64), (4, 2, 8)] {
                let grid = Grid { groups, waves_per_group: waves, threads_per_wave: threads };
                for costs in [CycleCosts::DEFAULT, ODD_COSTS, UNIT_COSTS] {
                    for max_step in [7, 100, 5000] {
                        let mut whole = Job::new([256; 3], &mut rng, a_below);
                        let mut chunked = whole.clone();
                        for g in 0..groups {
                            for w in 0..waves {
                                let want = whole.with_mem(|mem| run_wave(&prog[..n], &grid, g, w, mem, &costs, 1 << 20));
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
                                );
                                assert_eq!(want.end, WaveEnd::Done);
                                assert_eq!(got, want, "{grid:?} wave {g}.{w}, costs {costs:?}, steps {max_step}");
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

    /// Fresh lanes advanced once with no horizon: exactly run_wave, even
    /// when the wave fails, since later lanes never start.
    fn in_one_call(prog: &[Instr], grid: &Grid, job: &mut Job, costs: &CycleCosts, limit: u64) -> WaveRun {
        let mut lanes = [Lane::default(); MAX_THREADS_PER_WAVE as usize];
        let lanes = &mut lanes[..grid.threads_per_wave as usize];
        let step = job.with_mem(|mem| advance_wave(prog, grid, 0, 0, lanes, mem, costs, u64::MAX, limit));
        WaveRun { end: step.end.unwrap(), cycles: step.cycles, counters: step.counters }
    }

    #[test]
    fn endless_loop_hangs_in_chunks_as_in_one_go() {
        let (prog, n) = program(&[op(Op::Br, 0, 0, 0, 0)], 0);
        let mut rng = Rng::new(3);
        for costs in [CycleCosts::DEFAULT, ODD_COSTS, CycleCosts { per_class: [0; 7] }] {
            for threads in [1, 2, 5] {
                let grid = Grid { groups: 1, waves_per_group: 1, threads_per_wave: threads };
                let mut job = Job::new([0; 3], &mut rng, 1);
                let want = job.with_mem(|mem| run_wave(&prog[..n], &grid, 0, 0, mem, &costs, 10_000));
                assert_eq!(want.end, WaveEnd::Hung);
                assert_eq!(in_one_call(&prog[..n], &grid, &mut job, &costs, 10_000), want);
                for max_step in [1, 300, 20_000] {
                    let (got, _) = run_in_chunks(&prog[..n], &grid, 0, 0, &mut job, &costs, 10_000, &mut rng, max_step);
                    if threads == 1 {
                        assert_eq!(got, want, "costs {costs:?}, steps {max_step}");
                    } else {
                        // Later lanes ran until the first one hung.
                        assert_eq!((got.end, got.cycles), (want.end, want.cycles));
                        assert!(got.counters.total() >= want.counters.total());
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
        let grid = Grid { groups: 1, waves_per_group: 1, threads_per_wave: 8 };
        let mut rng = Rng::new(5);
        for hung in [7, 3, 0] {
            let (prog, n) = one_lane_loops(hung);
            for costs in [CycleCosts::DEFAULT, ODD_COSTS] {
                let mut job = Job::new([0; 3], &mut rng, 1);
                let want = job.with_mem(|mem| run_wave(&prog[..n], &grid, 0, 0, mem, &costs, 5_000));
                assert_eq!((want.end, want.cycles), (WaveEnd::Hung, 5_000));
                assert_eq!(in_one_call(&prog[..n], &grid, &mut job, &costs, 5_000), want);
                for max_step in [1, 64, 4_999, 100_000] {
                    let (got, _) = run_in_chunks(&prog[..n], &grid, 0, 0, &mut job, &costs, 5_000, &mut rng, max_step);
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
        let grid = Grid { groups: 1, waves_per_group: 1, threads_per_wave: 8 };
        let mut rng = Rng::new(11);
        for costs in [CycleCosts::DEFAULT, ODD_COSTS, UNIT_COSTS] {
            for max_step in [1, 5, 40, 1_000] {
                let mut whole = Job::new([8, 8, 5], &mut rng, 1000);
                let mut chunked = whole.clone();
                let mut once = whole.clone();
                let want = whole.with_mem(|mem| run_wave(&prog[..n], &grid, 0, 0, mem, &costs, 1_000));
                assert_eq!(want.end, WaveEnd::Fault { exit: Exit::OutOfBounds { pc: 4, slot: 2, index: 5 } });
                assert_eq!(in_one_call(&prog[..n], &grid, &mut once, &costs, 1_000), want);
                let (got, _) = run_in_chunks(&prog[..n], &grid, 0, 0, &mut chunked, &costs, 1_000, &mut rng, max_step);
                assert_eq!((got.end, got.cycles), (want.end, want.cycles), "costs {costs:?}, steps {max_step}");
                assert!(chunked == whole && once == whole);
            }
        }
    }

    /// Lane 0 fails late (after 300 cycles or more), the other lanes early
    /// (19 cycles): in chunks a later lane fails first, yet the wave ends
    /// with lane 0's failure, as in run_wave.
    #[test]
    fn first_failure_in_lane_order_wins_in_chunks() {
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
        let wants = [
            WaveEnd::Fault { exit: Exit::OutOfBounds { pc: 5, slot: 0, index: -1 } },
            WaveEnd::Hung,
        ];
        let grid = Grid { groups: 1, waves_per_group: 1, threads_per_wave: 4 };
        let mut rng = Rng::new(13);
        for ((prog, n), end) in [late_fault, late_hang].into_iter().zip(wants) {
            let mut job = Job::new([16, 0, 0], &mut rng, 1);
            let want = job.with_mem(|mem| run_wave(&prog[..n], &grid, 0, 0, mem, &CycleCosts::DEFAULT, 2_000));
            assert_eq!(want.end, end);
            for max_step in [1, 10, 50] {
                let (got, _) =
                    run_in_chunks(&prog[..n], &grid, 0, 0, &mut job, &CycleCosts::DEFAULT, 2_000, &mut rng, max_step);
                assert_eq!((got.end, got.cycles), (want.end, want.cycles), "steps {max_step}");
            }
        }
    }
}
