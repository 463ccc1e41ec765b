// SPDX-License-Identifier: GPL-2.0

//! Pipelined context switching: when the stages of the next task may
//! start while the current one runs.
//!
//! A *task* is a context's turn on the device, from its load into a
//! hardware slot until it leaves. It is prepared, executed and cleaned up.
//! *Phase 1* is the context's environment initialisation (a modeled init
//! time and a state area in device memory); a *sub-task* is one job, and
//! its *phase 2* makes its objects and scratch area resident in device
//! memory; it then executes (its waves) and is cleaned up (write-back and
//! release).
//!
//! In `Pipelined` mode:
//! 1. *early phase 1*: phase 1 of the next task runs while the current task
//!    prepares or executes;
//! 2. *the phase-1 threshold*: no phase 1 of a context not loaded yet
//!    starts while the state areas of the contexts in phase 1 (initialised
//!    and not yet cleaned up) hold `phase1_threshold` bytes or more;
//!    clean-up brings them back under it (a loaded context is the current
//!    task: its phase 1 always starts, or its slot would stay idle for
//!    good);
//! 3. *the progress point*: the next task's first sub-task starts phase 2
//!    once the current task has fewer than `progress_point` sub-tasks left
//!    unrun and none of its remaining sub-tasks needs more than
//!    `subtask_threshold` bytes (those are marked, and waited for);
//! 4. *the execution gate*: that sub-task, prepared, starts executing at
//!    once if the current task's execution is over, else only if the memory
//!    of the current running sub-task and its own together stay within
//!    `subtask_threshold`; otherwise it waits for the current task, for at
//!    most the gate's hold bound (the job timeout,
//!    [`execution_gate_opens`]), after which it executes beside it;
//! 5. *prepare-ahead*: inside a task, the next sub-task's phase 2 runs
//!    while one executes, and finished ones are cleaned up alongside;
//! 6. *state-area release*: after its last sub-task, the task is cleaned up
//!    and its state area given back.
//!
//! In both modes, a job that finds device memory full waits for it; a job
//! of a lower standing may be prepared beside it only within what is left
//! once the waiter's need is met ([`room_beside`]), at most
//! [`PASS_LIMIT`] times between two releases of memory.
//!
//! In `Sequential` mode nothing overlaps: one context's phase 1 once it
//! is loaded, then each sub-task's phase 2, execution and clean-up, one
//! at a time over the whole device.

use super::{
    device_memory::first_failing,
    topology::{
        within,
        ParamError, //
    }, //
};

/// How preparation and execution overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Early phase 1, the phase-1 threshold, the progress point, the
    /// execution gate, prepare-ahead and state-area release.
    Pipelined,
    /// Prepare, execute, clean up, one at a time.
    Sequential,
}

/// The settings of the pipeline, as the module parameters give them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipelineParams {
    /// Pipelined or sequential.
    pub mode: Mode,
    /// The first threshold: state-area bytes of contexts in phase 1 at
    /// which no new phase 1 starts.
    pub phase1_threshold: u64,
    /// The second threshold: bytes of a sub-task above which it is marked
    /// at the progress point, and the limit of the execution gate.
    pub subtask_threshold: u64,
    /// The progress point: fewer than this many sub-tasks left unrun.
    pub progress_point: u32,
}

/// Limits of `pipeline_mode`: 0 pipelined, 1 sequential.
pub const MODE: (u32, u32) = (0, 1);
/// Limits of the two thresholds, KiB (up to 1 GiB, the largest device).
pub const THRESHOLD_KIB: (u32, u32) = (1, 1 << 20);
/// Limits of `progress_point` (a context has at most 64 jobs in flight).
pub const PROGRESS_POINT: (u32, u32) = (1, 64);

impl PipelineParams {
    /// The defaults: pipelined, 16 MiB of phase-1 state, 32 MiB per
    /// sub-task, progress point 2.
    pub const DEFAULT: Self = Self {
        mode: Mode::Pipelined,
        phase1_threshold: 16 << 20,
        subtask_threshold: 32 << 20,
        progress_point: 2,
    };

    /// Settings from the module parameters' values, checked.
    pub fn from_values(
        mode: u32,
        phase1_threshold_kib: u32,
        subtask_threshold_kib: u32,
        progress_point: u32,
    ) -> Result<Self, ParamError> {
        let mode = match within("pipeline_mode", mode, MODE)? {
            0 => Mode::Pipelined,
            _ => Mode::Sequential,
        };
        let p1 = within("phase1_threshold_kib", phase1_threshold_kib, THRESHOLD_KIB)?;
        let st = within(
            "subtask_threshold_kib",
            subtask_threshold_kib,
            THRESHOLD_KIB,
        )?;
        Ok(Self {
            mode,
            phase1_threshold: u64::from(p1) << 10,
            subtask_threshold: u64::from(st) << 10,
            progress_point: within("progress_point", progress_point, PROGRESS_POINT)?,
        })
    }
}

/// Limits of `ctx_state_kib`, a context's state area (0: none).
pub const CTX_STATE_KIB: (u32, u32) = (0, 1 << 16);
/// Limits of `ctx_init_us`, a context's modeled init time (up to 10 s).
pub const CTX_INIT_US: (u32, u32) = (0, 10_000_000);

/// What phase 1 costs a context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseOneParams {
    /// Its state area in device memory, bytes.
    pub state_bytes: u64,
    /// Its modeled init time, ns.
    pub init_ns: u64,
}

impl PhaseOneParams {
    /// From the module parameters `ctx_state_kib` and `ctx_init_us`.
    pub fn from_values(state_kib: u64, init_us: u64) -> Result<Self, ParamError> {
        Ok(Self {
            state_bytes: u64::from(within("ctx_state_kib", state_kib, CTX_STATE_KIB)?) << 10,
            init_ns: u64::from(within("ctx_init_us", init_us, CTX_INIT_US)?) * 1000,
        })
    }
}

/// One sub-task of a current task, as the progress point sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubTask {
    /// Device memory it needs (its objects and scratch).
    pub bytes: u64,
    /// It has started executing (placed work).
    pub started: bool,
}

/// Early phase 1 and the phase-1 threshold (pipelined): phase 1 of a context
/// not loaded yet may start while the contexts in phase 1 hold less than the
/// first threshold; a loaded one's always. Sequential: only for a loaded
/// context, when no other context is in phase 1 and no sub-task holds device
/// memory.
pub fn may_start_phase1(
    p: &PipelineParams,
    held_in_phase1: u64,
    loaded: bool,
    device_busy: bool,
) -> bool {
    match p.mode {
        Mode::Pipelined => loaded || held_in_phase1 < p.phase1_threshold,
        Mode::Sequential => loaded && !device_busy,
    }
}

/// The progress point: whether the next task's first sub-task may start phase
/// 2, given the unfinished sub-tasks of one current task (oldest first). The
/// progress point is reached when fewer than `progress_point` of them are
/// unrun; then it waits while any of them is marked (needs more than the second
/// threshold).
pub fn next_phase2_allowed(
    p: &PipelineParams,
    current: impl Iterator<Item = SubTask> + Clone,
) -> bool {
    let unrun = current.clone().filter(|s| !s.started).count();
    let reached = unrun < p.progress_point as usize;
    reached && !current.into_iter().any(|s| s.bytes > p.subtask_threshold)
}

/// The execution gate: whether the next task's first sub-task, prepared, may
/// start executing: at once if the current task's execution is over (nothing of
/// it runs: `running` is 0), else only if the current running sub-tasks' memory
/// and its own stay within the second threshold.
pub fn next_may_execute(p: &PipelineParams, running: u64, next: u64) -> bool {
    running == 0 || running.saturating_add(next) <= p.subtask_threshold
}

/// The execution gate with its hold bound: [`next_may_execute`], or the
/// gate has held the task back (its first job prepared, on the device)
/// for `held_ns`, at least `bound_ns` (the job timeout). The gate orders
/// tasks of equal standing; it does not make one wait for as long as
/// another's job runs, which nothing bounds. The memory of both jobs is
/// already held (phase 2 is over), so opening it takes no memory.
pub fn execution_gate_opens(
    p: &PipelineParams,
    running: u64,
    next: u64,
    held_ns: u64,
    bound_ns: u64,
) -> bool {
    next_may_execute(p, running, next) || held_ns >= bound_ns
}

/// How many jobs (or phase 1s) of a lower standing may be prepared beside
/// a job waiting for device memory between two releases of memory: each
/// is an upload on the memory work item ahead of the waiter's next try.
pub const PASS_LIMIT: u32 = 8;

/// Device memory a job of equal standing may take beside a job waiting
/// for `need` bytes without taking from what the waiter waits for: `free`
/// bytes are free now and `releasing` bytes are held by jobs executing at
/// the waiter's level or above, which give them back as they end. Once
/// they have, the waiter finds `free + releasing` less what was taken
/// beside it; what is taken beside it stays within that less its need.
/// `None` if even that is short of its need (the waiter needs more than
/// those jobs give back: nothing may be taken beside it, and what it may
/// reclaim it must), or once `passes` reached [`PASS_LIMIT`].
pub fn room_beside(free: u64, releasing: u64, need: u64, passes: u32) -> Option<u64> {
    if passes >= PASS_LIMIT {
        return None;
    }
    let left = free.saturating_add(releasing).checked_sub(need)?;
    Some(free.min(left))
}

/// Prepare-ahead (pipelined): how many sub-tasks of one task may hold device
/// memory at once (the one that runs and the next); sequential: one over the
/// whole device.
pub const fn prepare_ahead(mode: Mode) -> usize {
    match mode {
        Mode::Pipelined => 2,
        Mode::Sequential => 1,
    }
}

/// State-area release: a task is over, and its state area given back
/// (its clean-up), once it was initialised and has no unfinished job and
/// no slot. A task with work keeps its area for its next job; a loaded one
/// keeps it for its slot.
pub fn task_over(initialised: bool, unfinished_jobs: usize, loaded: bool) -> bool {
    initialised && unfinished_jobs == 0 && !loaded
}

/// The rules' cases, one per branch, as the host tests and KUnit run
/// them: `Err(name)` names the first case that fails.
pub fn rule_cases() -> Result<(), &'static str> {
    const MIB: u64 = 1 << 20;
    let pipelined = PipelineParams {
        mode: Mode::Pipelined,
        phase1_threshold: 4 * MIB,
        subtask_threshold: 10 * MIB,
        progress_point: 2,
    };
    let sequential = PipelineParams {
        mode: Mode::Sequential,
        ..pipelined
    };
    let p = &pipelined;
    let s = &sequential;
    let sub = |bytes, started| SubTask { bytes, started };
    let three = [sub(MIB, false), sub(MIB, false), sub(MIB, false)];
    let two = [sub(MIB, true), sub(MIB, false)];
    let marked = [sub(11 * MIB, true), sub(MIB, false)];
    let marked_unrun = [sub(MIB, true), sub(11 * MIB, false)];
    let at = [sub(10 * MIB, true)];
    let cases: [(&'static str, bool); 36] = [
        // Early phase 1 and the phase-1 threshold.
        (
            "early phase 1: ahead of its load, the device busy",
            may_start_phase1(p, 0, false, true),
        ),
        (
            "phase-1 threshold: just under it",
            may_start_phase1(p, 4 * MIB - 1, false, true),
        ),
        (
            "phase-1 threshold: at it, phase 1 stops",
            !may_start_phase1(p, 4 * MIB, false, false),
        ),
        (
            "phase-1 threshold: above it too",
            !may_start_phase1(p, 5 * MIB, false, true),
        ),
        (
            "phase-1 threshold: under it again, it resumes",
            may_start_phase1(p, 3 * MIB, false, true),
        ),
        (
            "phase-1 threshold: a loaded context always",
            may_start_phase1(p, 5 * MIB, true, false),
        ),
        (
            "sequential: not before its load",
            !may_start_phase1(s, 0, false, false),
        ),
        (
            "sequential: not while busy",
            !may_start_phase1(s, 0, true, true),
        ),
        (
            "sequential: loaded and idle",
            may_start_phase1(s, 0, true, false),
        ),
        (
            "sequential: no threshold",
            may_start_phase1(s, 100 * MIB, true, false),
        ),
        // The progress point.
        (
            "progress point: not reached yet",
            !next_phase2_allowed(p, three.iter().copied()),
        ),
        (
            "progress point: reached",
            next_phase2_allowed(p, two.iter().copied()),
        ),
        (
            "progress point: a marked running one",
            !next_phase2_allowed(p, marked.iter().copied()),
        ),
        (
            "progress point: a marked unrun one",
            !next_phase2_allowed(p, marked_unrun.iter().copied()),
        ),
        (
            "progress point: at the threshold, not marked",
            next_phase2_allowed(p, at.iter().copied()),
        ),
        (
            "progress point: nothing left",
            next_phase2_allowed(p, core::iter::empty()),
        ),
        // The execution gate.
        (
            "execution gate: execution over, any size",
            next_may_execute(p, 0, 100 * MIB),
        ),
        (
            "execution gate: both fit",
            next_may_execute(p, 4 * MIB, 6 * MIB),
        ),
        (
            "execution gate: both do not fit",
            !next_may_execute(p, 4 * MIB, 6 * MIB + 1),
        ),
        (
            "execution gate: no overflow",
            !next_may_execute(p, u64::MAX, 1),
        ),
        // The gate's hold bound.
        (
            "gate hold: held less than the bound, closed",
            !execution_gate_opens(p, 30 * MIB, MIB, 1999, 2000),
        ),
        (
            "gate hold: held the bound, it opens",
            execution_gate_opens(p, 30 * MIB, MIB, 2000, 2000),
        ),
        (
            "gate hold: both fit, open at once",
            execution_gate_opens(p, 4 * MIB, 6 * MIB, 0, 2000),
        ),
        // Room beside a job waiting for memory.
        (
            "beside a waiter: what is left once its need is met",
            room_beside(44 * MIB, 20 * MIB, 50 * MIB, 0) == Some(14 * MIB),
        ),
        (
            "beside a waiter: never more than is free",
            room_beside(4 * MIB, 60 * MIB, 8 * MIB, 0) == Some(4 * MIB),
        ),
        (
            "beside a waiter: nothing when its need is not met by releases",
            room_beside(44 * MIB, 0, 50 * MIB, 0).is_none(),
        ),
        (
            "beside a waiter: nothing left when its need takes it all",
            room_beside(30 * MIB, 20 * MIB, 50 * MIB, 0) == Some(0),
        ),
        (
            "beside a waiter: no overflow",
            room_beside(u64::MAX, u64::MAX, 1, 0) == Some(u64::MAX - 1),
        ),
        (
            "beside a waiter: passed up to the limit",
            room_beside(44 * MIB, 20 * MIB, 50 * MIB, PASS_LIMIT - 1).is_some(),
        ),
        (
            "beside a waiter: not past the limit",
            room_beside(44 * MIB, 20 * MIB, 50 * MIB, PASS_LIMIT).is_none(),
        ),
        // Prepare-ahead.
        (
            "prepare-ahead: one ahead, pipelined",
            prepare_ahead(Mode::Pipelined) == 2,
        ),
        (
            "prepare-ahead: one at a time, sequential",
            prepare_ahead(Mode::Sequential) == 1,
        ),
        // State-area release.
        (
            "state-area release: no work, no slot",
            task_over(true, 0, false),
        ),
        (
            "state-area release: not while a job is unfinished",
            !task_over(true, 1, false),
        ),
        (
            "state-area release: not while it holds a slot",
            !task_over(true, 0, true),
        ),
        (
            "state-area release: nothing before phase 1",
            !task_over(false, 0, false),
        ),
    ];
    first_failing(&cases)
}

/// The first `N` contexts by key that may begin a phase 1 ahead of their
/// load, as one walk over the contexts finds them (the engine's survey):
/// `(index, key)` pairs, the smallest key first, and of equal keys the one
/// kept first before the others, as a walk that keeps the first minimum
/// finds it. The engine starts the first and, while the areas held stay
/// under the phase-1 threshold, the next ones in the same task.
///
/// # Invariants
///
/// `len <= N`, and `at[..len]` is in key order, equal keys in the order
/// they were kept.
#[derive(Clone, Copy, Debug)]
pub struct AheadFirsts<K, const N: usize> {
    /// How many are kept.
    len: usize,
    /// Those kept, then unused entries.
    at: [(usize, K); N],
}

impl<K: Copy + Default, const N: usize> Default for AheadFirsts<K, N> {
    fn default() -> Self {
        // INVARIANT: none kept.
        Self {
            len: 0,
            at: [(0, K::default()); N],
        }
    }
}

impl<K: Ord + Copy, const N: usize> AheadFirsts<K, N> {
    /// Keeps `index` with `key` if it is among the first `N` so far. One
    /// comparison for a key that is not, once `N` are kept.
    pub fn keep(&mut self, index: usize, key: K) {
        if self.len == N && self.at.last().is_none_or(|(_, last)| key >= *last) {
            return;
        }
        let pos = self
            .as_slice()
            .iter()
            .position(|(_, k)| key < *k)
            .unwrap_or(self.len);
        // `pos < end`: under `N` kept, `pos <= len`; at `N`, `key` is below
        // the last.
        let end = (self.len + 1).min(N);
        self.at.copy_within(pos..end - 1, pos + 1);
        if let Some(entry) = self.at.get_mut(pos) {
            *entry = (index, key);
        }
        // INVARIANT: one more kept unless `N` were, in order.
        self.len = end;
    }

    /// The first, if any.
    pub fn first(&self) -> Option<(usize, K)> {
        self.as_slice().first().copied()
    }

    /// Those kept, the first first.
    pub fn as_slice(&self) -> &[(usize, K)] {
        self.at.get(..self.len).unwrap_or(&[])
    }
}

/// [`AheadFirsts`] against a stable sort of everything offered, over
/// random streams (few distinct keys, so many are equal) of up to 48
/// offers and capacities 0 to 5: the same pairs in the same order. For
/// the host tests and KUnit.
pub fn ahead_firsts_cases() -> Result<(), &'static str> {
    fn check<const N: usize>(rng: &mut super::rng::Rng) -> Result<(), &'static str> {
        let mut firsts = AheadFirsts::<u32, N>::default();
        let mut all = [(0usize, 0u32); 48];
        let n = rng.below(all.len() as u32 + 1) as usize;
        for (i, offer) in all.iter_mut().enumerate().take(n) {
            *offer = (i, rng.below(6));
            firsts.keep(offer.0, offer.1);
        }
        // A stable insertion sort by key of what was offered.
        let offered = all.get_mut(..n).unwrap_or(&mut []);
        for i in 1..offered.len() {
            let mut j = i;
            while j > 0 && offered[j - 1].1 > offered[j].1 {
                offered.swap(j - 1, j);
                j -= 1;
            }
        }
        let want = offered.get(..n.min(N)).unwrap_or(&[]);
        if firsts.as_slice() != want {
            return Err("the first kept are not the stable sort's first");
        }
        if firsts.first() != want.first().copied() {
            return Err("the first is not the smallest, first kept");
        }
        Ok(())
    }
    let mut rng = super::rng::Rng::new(0x5eed_f125);
    for _ in 0..200 {
        check::<0>(&mut rng)?;
        check::<1>(&mut rng)?;
        check::<3>(&mut rng)?;
        check::<5>(&mut rng)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked_and_named() {
        let p = PipelineParams::from_values(0, 16 << 10, 32 << 10, 2).unwrap();
        assert_eq!(p, PipelineParams::DEFAULT);
        let s = PipelineParams::from_values(1, 1, 1, 64).unwrap();
        assert_eq!(
            (s.mode, s.phase1_threshold, s.progress_point),
            (Mode::Sequential, 1024, 64)
        );
        let e = PipelineParams::from_values(2, 1, 1, 1).unwrap_err();
        assert_eq!((e.field, e.value, e.min, e.max), ("pipeline_mode", 2, 0, 1));
        let e = PipelineParams::from_values(0, 0, 1, 1).unwrap_err();
        assert_eq!((e.field, e.max), ("phase1_threshold_kib", 1 << 20));
        let e = PipelineParams::from_values(0, 1, (1 << 20) + 1, 1).unwrap_err();
        assert_eq!(e.field, "subtask_threshold_kib");
        for bad in [0, 65] {
            let e = PipelineParams::from_values(0, 1, 1, bad).unwrap_err();
            assert_eq!((e.field, e.min, e.max), ("progress_point", 1, 64));
        }
    }

    #[test]
    fn phase_one_costs_are_checked() {
        let p = PhaseOneParams::from_values(64, 1500).unwrap();
        assert_eq!((p.state_bytes, p.init_ns), (64 << 10, 1_500_000));
        assert_eq!(PhaseOneParams::from_values(0, 0).unwrap().state_bytes, 0);
        assert_eq!(
            PhaseOneParams::from_values(65537, 0).unwrap_err().field,
            "ctx_state_kib"
        );
        assert_eq!(
            PhaseOneParams::from_values(1, 10_000_001)
                .unwrap_err()
                .field,
            "ctx_init_us"
        );
    }

    #[test]
    fn every_rule_case_holds() {
        assert_eq!(rule_cases(), Ok(()));
    }

    #[test]
    fn ahead_firsts_keep_the_first_in_order() {
        assert_eq!(ahead_firsts_cases(), Ok(()));
    }
}
