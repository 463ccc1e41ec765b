// SPDX-License-Identifier: GPL-2.0

//! The engine's record of a context: its jobs, its wave store, its
//! scheduling state; and finding a context's record in the context list.

use kernel::{
    prelude::*,
    sync::Arc,
    warn_on, //
};

use crate::{
    context::{
        Context,
        MAX_JOBS_IN_FLIGHT, //
    },
    vgsched_core::{
        dispatch::BANDS,
        pipeline::{
            self,
            Mode, //
        },
        pool,
        slots::SlotEntry, //
    },
    vram::{
        DeviceArea,
        DeviceMemory, //
    }, //
};

use super::{
    job::Job,
    memory::{
        JobTimes,
        PhaseOne, //
    },
    save_area::WaveStore,
    RunningGroup,
    DONE_CAPACITY, //
};

/// Everything the engine keeps about one live context, from its creation to
/// its destruction: its jobs (a dispatch channel while it holds a hardware
/// slot) and its scheduling state. The one place each of these facts lives.
///
/// # Invariants
///
/// - `slot.is_some() == entry.resident`;
/// - `jobs.len() <= MAX_JOBS_IN_FLIGHT` and
///   `jobs.len() + done.len() <= DONE_CAPACITY`, within the capacities
///   reserved at creation: every job can move to `done` when it signals;
/// - `runtime_ns` is the context's runtime: the union of the modeled
///   intervals its waves executed; slot selection's weight basis
///   (`entry.cand`) is charged the same time.
pub(super) struct ContextQueue {
    pub(super) ctx: Arc<Context>,
    /// Unsignalled jobs, oldest first.
    pub(super) jobs: KVec<KBox<Job>>,
    /// Signalled jobs, waiting to be dropped (by the clean-up work item,
    /// or by a submission of the context, [`Engine::make_room`]).
    pub(super) done: KVec<KBox<Job>>,
    /// The thread state and save area of its waves ([`save_area`]).
    pub(super) store: WaveStore,
    /// The channel's "selected" mark of work-group dispatch, per band.
    pub(super) selected: [bool; BANDS],
    /// The context as slot selection sees it: priority, age, runtime,
    /// whether it has work, residency and slice.
    pub(super) entry: SlotEntry,
    /// The hardware slot it holds, while resident.
    pub(super) slot: Option<u32>,
    /// Its runtime, modeled nanoseconds.
    pub(super) runtime_ns: u64,
    /// End of the latest interval counted in its runtime.
    pub(super) busy_until_ns: u64,
    /// Jobs finished so far, with or without error.
    pub(super) completed: u64,
    /// Time slices received: loads into a slot and renewals.
    pub(super) slices: u64,
    /// Times it lost its slot with work left.
    pub(super) preemptions: u64,
    /// Modeled time spent saving and restoring its waves.
    pub(super) switch_ns: u64,
    /// Its phase 1 ([`memory`]).
    pub(super) phase1: PhaseOne,
    /// Its state area in device memory (none if `ctx_state_kib` is 0),
    /// placed from phase 1 to the clean-up of its task; the memory work
    /// item takes it out while it places it.
    pub(super) state_area: Option<DeviceArea>,
    /// When its last phase 1 started and ended.
    pub(super) phase1_times: (u64, u64),
    /// It has placed work since it was loaded (the execution gate no
    /// longer applies).
    pub(super) task_started: bool,
    /// Since when (monotonic ns; 0: not) the execution gate holds its
    /// task's first job back, prepared and on the device: it opens once
    /// it has for the job timeout ([`pipeline::execution_gate_opens`]).
    pub(super) gate_held_since: u64,
    /// Listed for the runnable refresh ([`super::slots::SlotSelection::list`]).
    pub(super) refresh_listed: bool,
    /// The stage times of its last signalled job.
    pub(super) last_job: JobTimes,
}

// The context list holds records boxed (removing one moves pointers, not
// records): slot selection reads them through the box.
impl AsRef<SlotEntry> for KBox<ContextQueue> {
    fn as_ref(&self) -> &SlotEntry {
        &self.entry
    }
}

impl AsMut<SlotEntry> for KBox<ContextQueue> {
    fn as_mut(&mut self) -> &mut SlotEntry {
        &mut self.entry
    }
}

impl ContextQueue {
    /// The engine's record of a new context; allocates its job lists and
    /// its state area (`state_bytes` of `memory`, placed by phase 1).
    pub(super) fn new(
        ctx: &Arc<Context>,
        memory: &Arc<DeviceMemory>,
        state_bytes: u64,
    ) -> Result<Self> {
        let entry = SlotEntry::new(pool::Candidate {
            id: ctx.timeline as u32,
            priority: ctx.priority as u8,
            created_ns: ctx.created_ns,
            runtime_ns: 0,
            runnable: false,
            served_pass: 0,
        });
        Ok(Self {
            ctx: ctx.clone(),
            jobs: KVec::with_capacity(MAX_JOBS_IN_FLIGHT as usize, GFP_KERNEL_ACCOUNT)?,
            done: KVec::with_capacity(DONE_CAPACITY, GFP_KERNEL_ACCOUNT)?,
            store: WaveStore::new(),
            selected: [false; BANDS],
            entry,
            slot: None,
            runtime_ns: 0,
            busy_until_ns: 0,
            completed: 0,
            slices: 0,
            preemptions: 0,
            switch_ns: 0,
            phase1: PhaseOne::Idle,
            state_area: DeviceArea::new(memory, state_bytes)?,
            phase1_times: (0, 0),
            task_started: false,
            gate_held_since: 0,
            last_job: JobTimes::default(),
            refresh_listed: false,
        })
    }

    /// It is now at position `i` of the context list: its context's hint
    /// says so ([`queue_index`]). Under the engine lock.
    pub(super) fn place_at(&self, i: usize) {
        self.ctx.set_queue_hint(i);
    }

    /// Nothing of it is left for the engine's walks: no job (queued,
    /// running, waiting for its write-back or signalled and not dropped),
    /// no phase 1 begun (no state area), no slot (so no execution gate
    /// hold), no dispatch mark and nothing slot selection has not seen
    /// ([`SlotEntry::settled`]). Only a job taken from the inbox changes
    /// that; until then it may stay out of [`super::EngineState::working`].
    pub(super) fn settled(&self) -> bool {
        self.jobs.is_empty()
            && self.done.is_empty()
            && self.phase1 == PhaseOne::Idle
            && self.slot.is_none()
            && self.gate_held_since == 0
            && !self.selected.contains(&true)
            && self.entry.settled()
    }

    /// Its active job: the first not finished. The jobs before it are
    /// finished and wait for their clean-up and fence; only the active job
    /// has work on the device.
    pub(super) fn active(&self) -> Option<&Job> {
        self.jobs.iter().find(|j| !j.is_finished()).map(|j| &**j)
    }

    /// Its jobs up to the active one: the finished ones not collected yet
    /// and the active job. Only these can have hung or failed while
    /// running; every job behind them waits its turn.
    pub(super) fn head_jobs(&self) -> impl Iterator<Item = &Job> {
        let mut active_seen = false;
        self.jobs.iter().map(|j| &**j).take_while(move |j| {
            let take = !active_seen;
            active_seen |= !j.is_finished();
            take
        })
    }

    /// Its jobs that may be in a timed stage (an upload or a write-back
    /// under way): the finished ones not collected yet, which come first,
    /// and the first unfinished ones, which the memory work item may have
    /// prepared ([`pipeline::prepare_ahead`]); every job behind them is
    /// still queued. So a step looks at a few jobs per context, however
    /// many are queued.
    pub(super) fn staged_jobs(&self) -> impl Iterator<Item = &Job> {
        let ahead =
            pipeline::prepare_ahead(Mode::Pipelined).max(pipeline::prepare_ahead(Mode::Sequential));
        let mut unfinished = 0;
        self.jobs.iter().map(|j| &**j).take_while(move |j| {
            if !j.is_finished() {
                unfinished += 1;
            }
            unfinished <= ahead
        })
    }

    /// Its runtime, modeled nanoseconds.
    pub(super) fn runtime_ns(&self) -> u64 {
        self.runtime_ns
    }

    /// Counts modeled device time `[start, end)` of one of its waves.
    /// Starts never go backwards, so adding what lies past the last counted
    /// end measures the union of overlapping waves.
    pub(super) fn account(&mut self, start_ns: u64, end_ns: u64) {
        let from = start_ns.max(self.busy_until_ns);
        if end_ns > from {
            self.runtime_ns = self.runtime_ns.saturating_add(end_ns - from);
            self.entry.charge(end_ns - from);
            self.busy_until_ns = end_ns;
        }
    }

    /// Leaves its hardware slot (slot selection already cleared `resident`).
    pub(super) fn leave_slot(&mut self) {
        self.slot = None;
        self.task_started = false;
        self.gate_held_since = 0;
    }
}

/// The record of `ctx` among `queues`, if it is live (for callers that
/// hold other parts of the engine state at the same time).
pub(super) fn queue_in<'a>(
    queues: &'a mut [KBox<ContextQueue>],
    ctx: &Context,
) -> Option<&'a mut ContextQueue> {
    queue_at(queues, queue_index(queues, ctx)?)
}

/// Record `i` of the context list, out of its box.
pub(super) fn queue_at(queues: &mut [KBox<ContextQueue>], i: usize) -> Option<&mut ContextQueue> {
    queues.get_mut(i).map(|q| &mut **q)
}

/// The position of the record of `ctx` in `queues`, the context list, if
/// it is live: where its hint says (kept by every change of the list
/// under the engine lock, [`ContextQueue::place_at`]), O(1). A context
/// whose record was removed has the hint `usize::MAX`: none, without a
/// walk (a hand-back for a cancelled context costs no walk of everyone's
/// records). A record found anywhere else is a hint not kept: warned
/// about, and found by a walk.
pub(super) fn queue_index(queues: &[KBox<ContextQueue>], ctx: &Context) -> Option<usize> {
    let hint = ctx.queue_hint();
    if hint == usize::MAX {
        return None;
    }
    let at = |i: usize| queues.get(i).is_some_and(|q| core::ptr::eq(&*q.ctx, ctx));
    if at(hint) {
        return Some(hint);
    }
    let found = queues.iter().position(|q| core::ptr::eq(&*q.ctx, ctx));
    warn_on!(found.is_some());
    found
}

/// The record of the context of running group `g` among `queues`.
pub(super) fn queue_of<'a>(
    queues: &'a mut [KBox<ContextQueue>],
    g: &RunningGroup,
) -> Option<&'a mut ContextQueue> {
    let q = queues.get_mut(g.queue)?;
    // The index follows removals ([`Engine::cancel_context`]).
    match Arc::ptr_eq(&q.ctx, &g.ctx) {
        true => Some(q),
        false => {
            warn_on!(true);
            None
        }
    }
}
