// SPDX-License-Identifier: GPL-2.0

//! The wave runner: waves on the device, from their placement to their
//! retirement.
//!
//! A running wave is interpreted one chunk at a time, each ending at the
//! next preemption point ([`Engine::advance_waves`],
//! [`Engine::run_chunk`]); interpreting a chunk may take several holds of
//! the engine lock (each hold interprets at most a fixed number of
//! instructions over all waves), and a chunk's modeled effects (runtime,
//! recent power) are counted when it is complete, so how it was cut
//! changes nothing the model shows. When slot selection ([`super::slots`])
//! takes the slot of a context with work left, its waves stop: at once,
//! their chunk taken back to the instruction boundary where modeled time
//! stands ([`Rewind`], [`Engine::stop_at_once`], with `preempt_at_once`),
//! or at their next point. There their threads move to the job's save
//! area ([`super::save_area`]), and their registers and the group's
//! shared memory are copied out at the modeled switch bandwidth (the wave
//! keeps its resources until that is done). A wave that ended, or
//! finished saving, gives its ranges back when it is retired
//! ([`Engine::retire`]); its work-group goes with its last wave. Runtime
//! counts only the chunks that executed.

use kernel::{
    prelude::*,
    sync::Arc,
    warn_on, //
};

use super::{
    active_in,
    queue_at,
    queue_of,
    ContextQueue,
    Engine,
    EngineState,
    ModuleState, //
};
use crate::{
    context::Context,
    job::BoMemory,
    vgsched_core::{
        context_switch::{
            shared_state_bytes,
            transfer_cycles,
            wave_state_bytes, //
        },
        exec::{
            undo_stores,
            Counters,
            Recording,
            Undo, //
        },
        grid::{
            advance_wave_bounded,
            Lane,
            WaveEnd,
            MAX_THREADS_PER_WAVE, //
        },
        occupancy::{
            GroupNeeds,
            WaveSlot, //
        },
    }, //
};

/// A placed work-group (or one-wave piece of a split one).
pub(super) struct RunningGroup {
    /// Its context's index in [`EngineState::queues`] (kept up to date
    /// when a context before it goes), so a retiring wave finds its job at
    /// once.
    pub(super) queue: usize,
    /// Its job.
    pub(super) job_id: u64,
    /// Its index in the job's grid.
    pub(super) group: u32,
    /// Its dispatch band (pieces of a split group: the lowest).
    pub(super) band: u8,
    /// A one-wave piece of a split group.
    pub(super) piece: bool,
    /// Waves of it saved to its context's save area.
    pub(super) saved_waves: u32,
    /// Its context (for accounting and cancelling).
    pub(super) ctx: Arc<Context>,
    /// What it holds: the job's needs, or one wave's for a piece.
    pub(super) needs: GroupNeeds,
    /// Its execution module.
    pub(super) module: u32,
    /// First shared-memory block it holds.
    pub(super) shared_start: u32,
    /// Waves not yet retired.
    pub(super) waves_left: u32,
}

/// What a wave on the device is doing.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum WavePhase {
    /// Executing; interpreted up to `end_ns`, a preemption point.
    Running,
    /// Finished (or abandoned with its failed job) at `end_ns`.
    Ended,
    /// Stopped, its state being moved to the save area until `end_ns`.
    Saving,
}

/// The chunk a running wave is being interpreted through: from one
/// preemption point to the next. It may take several holds of the engine
/// lock; its modeled effects are counted once, when it is complete.
#[derive(Clone, Copy)]
pub(super) struct Chunk {
    /// The preemption point it starts at, where the last chunk stopped
    /// issuing.
    pub(super) point_ns: u64,
    /// Modeled start.
    pub(super) from_ns: u64,
    /// Modeled end: the next preemption point.
    pub(super) to_ns: u64,
    /// The wave's cycles when the chunk began.
    pub(super) before_cycles: u64,
    /// Instructions executed in the chunk so far, per class.
    pub(super) counters: Counters,
}

/// A wave on the device.
pub(super) struct RunningWave {
    /// Index of its work-group in [`EngineState::groups`].
    pub(super) slot: usize,
    /// Its index in its work-group.
    pub(super) wave: u32,
    /// Its unit and register ranges.
    pub(super) place: WaveSlot,
    /// What it is doing.
    pub(super) phase: WavePhase,
    /// Its next event: the point it is interpreted to while running, the
    /// moment it gives its resources back otherwise.
    pub(super) end_ns: u64,
    /// When it started executing here (after its state was restored).
    pub(super) exec_from_ns: u64,
    /// Its cycles when it started executing here (non-zero once resumed).
    pub(super) base_cycles: u64,
    /// Its cycles so far.
    pub(super) cycles: u64,
    /// Its threads, stopped at an instruction boundary.
    pub(super) lanes: KVVec<Lane>,
    /// The chunk being interpreted, when one is under way.
    pub(super) chunk: Option<Chunk>,
    /// Its current chunk's share of its module's recent power.
    pub(super) power_token: u64,
    /// What taking its current chunk back needs (preemption at once);
    /// `None` if none was free when it was placed.
    pub(super) rewind: Option<Rewind>,
}

/// Undo-log entries of one wave's chunk: a chunk that overwrites more words
/// cannot be taken back, and its wave stops at its next point instead.
const REWIND_LOG: usize = 512;

/// What taking a running wave's current chunk back needs: its threads as
/// the chunk began and every word the chunk overwrote. A pool of these,
/// one per wave slot, is allocated with the engine; a wave holds one while
/// it is on the device.
///
/// # Invariants
///
/// While `armed`, `lanes[..threads]` are the wave's threads at the start of
/// its current chunk, `log[..logged]` the words it overwrote since (unless
/// `full`), and `counters` the instructions it counted since into its
/// module's counters.
pub(super) struct Rewind {
    lanes: KVVec<Lane>,
    log: KVVec<Undo>,
    logged: usize,
    full: bool,
    armed: bool,
    threads: usize,
    /// The chunk's preemption point and modeled start.
    point_ns: u64,
    from_ns: u64,
    /// The wave's cycles when the chunk began.
    before_cycles: u64,
    counters: Counters,
}

impl Rewind {
    /// One rewind for a wave of up to [`MAX_THREADS_PER_WAVE`] threads.
    pub(super) fn new() -> Result<Self> {
        Ok(Self {
            lanes: KVVec::from_elem(Lane::default(), MAX_THREADS_PER_WAVE as usize, GFP_KERNEL)?,
            log: KVVec::from_elem(Undo::default(), REWIND_LOG, GFP_KERNEL)?,
            logged: 0,
            full: false,
            armed: false,
            threads: 0,
            point_ns: 0,
            from_ns: 0,
            before_cycles: 0,
            counters: Counters::default(),
        })
    }

    /// Records the start of a chunk of a wave whose threads are `lanes`.
    fn begin(&mut self, lanes: &[Lane], chunk: &Chunk) {
        // Element by element: nothing here can panic on a length.
        let mut threads = 0;
        for (d, s) in self.lanes.iter_mut().zip(lanes) {
            *d = *s;
            threads += 1;
        }
        self.threads = threads;
        self.logged = 0;
        self.full = false;
        self.armed = true;
        self.point_ns = chunk.point_ns;
        self.from_ns = chunk.from_ns;
        self.before_cycles = chunk.before_cycles;
        self.counters = Counters::default();
    }

    /// Forgets the chunk: the wave left, or its chunk cannot be taken back.
    pub(super) fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Engine {
    /// Retires waves that ended or finished saving by `now`, giving back
    /// their ranges, and work-groups whose last wave has. Returns how many.
    pub(super) fn retire(&self, st: &mut EngineState, now: u64) -> usize {
        let EngineState {
            groups,
            waves,
            resources,
            modules,
            queues,
            rewinds,
            slots,
            ..
        } = st;
        let Some(mut occ) = self.occupancy(resources) else {
            return 0;
        };
        let now_cycle = self.topology.ns_to_cycles(now);
        let before = waves.len();
        waves.retain(|w| {
            // Running waves at their point are [`Engine::advance_waves`]'s.
            if w.end_ns > now || w.phase == WavePhase::Running {
                return true;
            }
            let Some(slot) = groups.get_mut(w.slot) else {
                // A wave without its group: cannot happen; it just goes.
                warn_on!(true);
                return false;
            };
            let Some(g) = slot.as_mut() else {
                warn_on!(true);
                return false;
            };
            occ.release_wave(g.module, &w.place, &g.needs.wave);
            if let Some(ms) = modules.get_mut(g.module as usize) {
                if w.phase == WavePhase::Ended {
                    ms.power.stop(
                        self.topology.ns_to_cycles(w.end_ns),
                        now_cycle,
                        w.power_token,
                    );
                }
            }
            if let Some(ContextQueue { jobs, store, .. }) = queue_of(queues, g) {
                // A saved wave's threads moved to the save area already.
                if w.phase == WavePhase::Ended {
                    store.give_back(core::mem::take(&mut w.lanes));
                }
                // Its job is the context's active one, the first of its
                // jobs not finished, behind at most a few finished ones.
                if let Some(job) = jobs.iter_mut().find(|j| j.id == g.job_id) {
                    if w.phase == WavePhase::Ended {
                        // When its last wave ended, in modeled time.
                        job.last_wave_end_ns = job.last_wave_end_ns.max(w.end_ns);
                    }
                    if g.waves_left == 1 {
                        // A group's last wave retires once: its job runs it.
                        warn_on!(job.progress.retire().is_err());
                    }
                }
                if g.waves_left == 1 && g.saved_waves > 0 {
                    // Its last wave left the device: it may be restored.
                    store.group_off_device(g.job_id, g.group, g.piece);
                }
            }
            g.waves_left = g.waves_left.saturating_sub(1);
            if g.waves_left == 0 {
                occ.release_shared(g.module, g.shared_start, g.needs.shared);
                // Off the device now: the runnable refresh no longer finds
                // its context through its groups, so it is listed (its job
                // may have ended, or its runtime moved while evicted).
                slots.list(queues, g.queue);
                *slot = None;
            }
            if let Some(r) = w.rewind.take() {
                // Room for every wave slot's.
                let _unexpected = rewinds.push_within_capacity(r);
            }
            false
        });
        before - waves.len()
    }

    /// Stops the running waves of the context at `index` (which just lost
    /// its slot) at the instruction boundary where they are at `now`,
    /// instead of at their next preemption point: each chunk interpreted
    /// ahead is taken back (its stores undone, its threads, cycles and
    /// counts restored, its share of recent power withdrawn) and set to be
    /// interpreted again only up to `now`, where the wave is then saved.
    /// The context's runtime counted past `now` for them is taken back. A
    /// wave whose chunk is still being interpreted (over several holds of
    /// the lock, [`Engine::run_chunk`]) has it cut short at `now`
    /// ([`Engine::cut_chunk`]: taken back past `now` only if it is its
    /// job's one wave), and else runs on to its point. A wave whose chunk cannot be taken back (its undo log overflowed, or
    /// no rewind was free when it was placed) stops at its point as before.
    pub(super) fn stop_at_once(&self, st: &mut EngineState, index: usize, now: u64) {
        let EngineState {
            waves,
            groups,
            queues,
            modules,
            totals,
            ..
        } = st;
        let Some(q) = queue_at(queues, index) else {
            return;
        };
        let Some(job) = active_in(&mut q.jobs) else {
            return;
        };
        if job.progress.error() != 0 {
            // Its waves are being dropped anyway.
            return;
        }
        let mut mem = BoMemory(job.device.as_ref().map_or(&[], |d| &d.pins[..]));
        let now_cycle = self.topology.ns_to_cycles(now);
        // The latest end of a wave of it that runs on past `now`.
        let mut runs_until = now;
        // It has one running wave: a chunk under way may be taken back
        // ([`Engine::cut_chunk`]).
        let alone = waves
            .iter()
            .filter(|w| {
                groups
                    .get(w.slot)
                    .and_then(Option::as_ref)
                    .is_some_and(|g| Arc::ptr_eq(&g.ctx, &q.ctx) && g.job_id == job.id)
            })
            .count()
            == 1;
        for w in waves.iter_mut() {
            let Some(g) = groups.get(w.slot).and_then(Option::as_ref) else {
                continue;
            };
            if !Arc::ptr_eq(&g.ctx, &q.ctx) || g.job_id != job.id {
                continue;
            }
            if w.end_ns <= now {
                // Due at a point at or before `now`: a wave whose chunk has
                // not begun runs on only to the eviction
                // ([`Engine::advance_waves`]); one whose chunk is under way
                // is cut short here.
                if w.phase == WavePhase::Running
                    && w.chunk.is_some_and(|c| c.to_ns > now && c.from_ns <= now)
                {
                    let ms = modules.get_mut(g.module as usize);
                    if self.cut_chunk(w, alone, &mut mem, ms, now) {
                        totals.waves_stopped_at_once += 1;
                    } else if let Some(c) = w.chunk {
                        runs_until = runs_until.max(c.to_ns);
                    }
                }
                continue;
            }
            let ahead = match w.phase {
                WavePhase::Running => w.exec_from_ns <= now,
                // Finished, but only later in modeled time.
                WavePhase::Ended => true,
                WavePhase::Saving => false,
            };
            if !ahead {
                continue;
            }
            let Some(r) = w
                .rewind
                .as_mut()
                .filter(|r| r.armed && !r.full && r.from_ns <= now)
            else {
                runs_until = runs_until.max(w.end_ns);
                continue;
            };
            let Some(ms) = modules.get_mut(g.module as usize) else {
                continue;
            };
            undo_stores(&mut mem, r.log.get(..r.logged).unwrap_or(&[]));
            for (d, s) in w.lanes.iter_mut().zip(r.lanes.iter().take(r.threads)) {
                *d = *s;
            }
            w.cycles = r.before_cycles;
            ms.counters.sub(&r.counters);
            // Its rate counted from the chunk's start is taken out again;
            // the run up to `now` counts its own.
            let from_cycle = self.topology.ns_to_cycles(r.from_ns);
            ms.power.stop(from_cycle, now_cycle, w.power_token);
            w.power_token = 0;
            w.phase = WavePhase::Running;
            w.chunk = Some(Chunk {
                point_ns: r.point_ns,
                from_ns: r.from_ns,
                to_ns: now,
                before_cycles: r.before_cycles,
                counters: Counters::default(),
            });
            w.end_ns = now;
            r.counters = Counters::default();
            r.logged = 0;
            r.full = false;
            r.disarm();
            totals.waves_stopped_at_once += 1;
        }
        // Runtime counted ahead past what still runs is taken back.
        if q.busy_until_ns > runs_until {
            let over = q.busy_until_ns - runs_until;
            q.runtime_ns = q.runtime_ns.saturating_sub(over);
            q.entry.cand.runtime_ns = q.entry.cand.runtime_ns.saturating_sub(over);
            q.busy_until_ns = runs_until;
        }
    }

    /// Ends the chunk under way of running wave `w` (due, its chunk begun
    /// and reaching past `now`) at `now`. Where its interpretation has not
    /// passed `now`, only the chunk's end moves, so every instruction it
    /// ran stays before the eviction. Past it, the chunk is taken back (its
    /// stores undone, its threads, cycles and counts restored, from `ms`,
    /// its module's state) and set to be interpreted again up to `now`,
    /// but only when `w` is its job's one running wave (`alone`): sibling
    /// waves interpreted in the same holds may have stored over, or
    /// loaded, the words its log restores, which per-wave logs cannot undo
    /// in order; such a wave runs on to its point. Its power stand-in is
    /// left as it is: the chunk's completion replaces it, as for any
    /// chunk. Returns whether it now ends at `now`.
    fn cut_chunk(
        &self,
        w: &mut RunningWave,
        alone: bool,
        mem: &mut BoMemory<'_>,
        ms: Option<&mut ModuleState>,
        now: u64,
    ) -> bool {
        let Some(chunk) = w.chunk.as_mut() else {
            return false;
        };
        // The wave's cycle at `now`, as the interpreter's horizon counts it.
        let at_now = w.base_cycles.saturating_add(
            self.topology
                .ns_to_cycles(now.saturating_sub(w.exec_from_ns)),
        );
        if w.cycles <= at_now {
            chunk.to_ns = now;
            return true;
        }
        if !alone {
            return false;
        }
        let Some(r) = w
            .rewind
            .as_mut()
            .filter(|r| r.armed && !r.full && r.from_ns <= now)
        else {
            return false;
        };
        let Some(ms) = ms else {
            return false;
        };
        undo_stores(mem, r.log.get(..r.logged).unwrap_or(&[]));
        for (d, s) in w.lanes.iter_mut().zip(r.lanes.iter().take(r.threads)) {
            *d = *s;
        }
        w.cycles = r.before_cycles;
        ms.counters.sub(&r.counters);
        *chunk = Chunk {
            point_ns: r.point_ns,
            from_ns: r.from_ns,
            to_ns: now,
            before_cycles: r.before_cycles,
            counters: Counters::default(),
        };
        r.counters = Counters::default();
        r.logged = 0;
        r.full = false;
        r.disarm();
        true
    }

    /// Handles the running waves that reached their preemption point: a
    /// wave whose job failed is dropped, a wave whose context lost its slot
    /// is saved, the others are interpreted on to the next point, within
    /// the hold's instruction budget. Returns how many waves changed.
    pub(super) fn advance_waves(&self, st: &mut EngineState, now: u64) -> usize {
        let EngineState {
            waves,
            groups,
            queues,
            modules,
            totals,
            budget,
            wave_cursor,
            ..
        } = st;
        let next_point = self.sched.next_point(now);
        let now_cycle = self.topology.ns_to_cycles(now);
        let mut changed = 0;
        // From the wave the last spent budget stopped at, round the list:
        // waves placed early cannot take every hold's budget from those
        // placed after them.
        let n = waves.len();
        let start = match n {
            0 => 0,
            n => *wave_cursor % n,
        };
        let (before, from) = waves.split_at_mut(start);
        for (k, w) in Iterator::chain(from.iter_mut(), before.iter_mut())
            .enumerate()
            .filter(|(_, w)| w.phase == WavePhase::Running && w.end_ns <= now)
        {
            if *budget == 0 {
                *wave_cursor = (start + k) % n;
                break;
            }
            let found = groups
                .get_mut(w.slot)
                .and_then(Option::as_mut)
                .and_then(|g| {
                    let q = super::queue_of(queues, g)?;
                    q.active()
                        .is_some_and(|j| j.id == g.job_id)
                        .then_some((g, q))
                });
            let Some((g, q)) = found else {
                // Cannot happen (a wave's job is its context's active job
                // until it retires); never leave a wave due in the past.
                warn_on!(true);
                w.phase = WavePhase::Ended;
                w.end_ns = now;
                changed += 1;
                continue;
            };
            let Some(ms) = modules.get_mut(g.module as usize) else {
                continue;
            };
            if w.chunk.is_none() {
                // At a preemption point, where the last chunk stops issuing.
                let point = w.end_ns;
                let point_cycle = self.topology.ns_to_cycles(point);
                let Some(job) = active_in(&mut q.jobs) else {
                    continue;
                };
                if job.progress.error() != 0 {
                    ms.power.stop(point_cycle, now_cycle, w.power_token);
                    w.power_token = 0;
                    w.phase = WavePhase::Ended;
                    w.end_ns = now;
                    changed += 1;
                    continue;
                }
                // A wave runs on while its context held the device at the
                // point (the engine may step late: what counts is modeled
                // time); after its slice or turn ended it is saved, in the
                // slot if its context still holds one.
                let in_slot = q.entry.resident;
                if point >= q.entry.slice_end_ns
                    && q.store.save_wave(w, g, &mut job.progress, in_slot)
                {
                    ms.power.stop(point_cycle, now_cycle, w.power_token);
                    w.power_token = 0;
                    let mut bytes = wave_state_bytes(&g.needs, job.spec.grid.threads_per_wave);
                    if g.saved_waves == 0 {
                        bytes = bytes.saturating_add(shared_state_bytes(&g.needs));
                    }
                    g.saved_waves += 1;
                    let save_ns = match in_slot {
                        true => self.sched.slot_switch_ns,
                        false => self.topology.cycles_to_ns(transfer_cycles(bytes)),
                    };
                    q.switch_ns = q.switch_ns.saturating_add(save_ns);
                    w.phase = WavePhase::Saving;
                    w.end_ns = point.saturating_add(save_ns);
                    totals.waves_saved += 1;
                    changed += 1;
                    continue;
                }
                // Resident (or its save area is full): run on to the next
                // point. Until the new chunk is interpreted, the last one's
                // rate stands in for it in the module's recent power, which
                // module choice reads meanwhile; it is stopped at the point
                // when the new one's rate is known.
                // Not past its slice's end, however late the engine
                // stepped: a wave whose slice or turn ended after this
                // point runs on to the first point at or after that end
                // (where it is saved), or only to the eviction when its
                // context lost its slot and preemption is at once. (One
                // whose save area was full runs on to the next point.)
                let evicted_at_once = self.sched.preempt_at_once && !in_slot;
                let to_ns = self
                    .sched
                    .chunk_end(point, now, q.entry.slice_end_ns, evicted_at_once);
                if evicted_at_once && to_ns != next_point {
                    // Stopped at the eviction, not at a point.
                    totals.waves_stopped_at_once += 1;
                }
                let chunk = Chunk {
                    point_ns: point,
                    from_ns: point.max(w.exec_from_ns),
                    to_ns,
                    before_cycles: w.cycles,
                    counters: Counters::default(),
                };
                if let Some(r) = w.rewind.as_mut() {
                    r.begin(&w.lanes, &chunk);
                }
                w.chunk = Some(chunk);
            }
            if self.run_chunk(w, g.group, q, ms, budget, now_cycle) {
                changed += 1;
            }
        }
        changed
    }

    /// Interprets wave `w` of work-group `group` (of the active job of `q`)
    /// through its chunk, within `budget` instructions. When the chunk is
    /// complete (the wave reached its next point, or ended), its time is
    /// counted to the context and `true` is returned; otherwise the wave
    /// stays due and the next hold of the lock goes on from where this one
    /// stopped.
    pub(super) fn run_chunk(
        &self,
        w: &mut RunningWave,
        group: u32,
        q: &mut ContextQueue,
        ms: &mut ModuleState,
        budget: &mut u64,
        now_cycle: u64,
    ) -> bool {
        let Some(mut chunk) = w.chunk else {
            return false;
        };
        let Some(job) = active_in(&mut q.jobs) else {
            return false;
        };
        let horizon = chunk.to_ns.saturating_sub(w.exec_from_ns);
        let until = w
            .base_cycles
            .saturating_add(self.topology.ns_to_cycles(horizon));
        let limit = self.topology.timeout_cycles();
        let spec = &job.spec;
        let mem = BoMemory(job.device.as_ref().map_or(&[], |d| &d.pins[..]));
        let step = match w.rewind.as_mut().filter(|r| r.armed) {
            // The chunk's stores are recorded, so it can be taken back.
            Some(r) => {
                let Rewind {
                    log, logged, full, ..
                } = r;
                let mut rec = Recording {
                    inner: mem,
                    log,
                    len: logged,
                    full,
                };
                advance_wave_bounded(
                    &spec.program,
                    &spec.grid,
                    group,
                    w.wave,
                    &mut w.lanes,
                    &mut rec,
                    &self.costs,
                    until,
                    limit,
                    budget,
                )
            }
            None => advance_wave_bounded(
                &spec.program,
                &spec.grid,
                group,
                w.wave,
                &mut w.lanes,
                &mut { mem },
                &self.costs,
                until,
                limit,
                budget,
            ),
        };
        if let Some(r) = w.rewind.as_mut() {
            r.counters.add(&step.counters);
            // A failed wave stays failed.
            if matches!(step.end, Some(WaveEnd::Hung | WaveEnd::Fault { .. })) {
                r.disarm();
            }
        }
        ms.counters.add(&step.counters);
        chunk.counters.add(&step.counters);
        w.cycles = step.cycles;
        if step.end.is_none() && !step.at_horizon {
            w.chunk = Some(chunk);
            return false;
        }
        w.chunk = None;
        let end = match step.end {
            None => chunk.to_ns,
            Some(_) => w.exec_from_ns.saturating_add(
                self.topology
                    .cycles_to_ns(step.cycles.saturating_sub(w.base_cycles)),
            ),
        };
        // The last chunk stopped issuing at the point; this one's rate
        // replaces its stand-in from its start on.
        ms.power.stop(
            self.topology.ns_to_cycles(chunk.point_ns),
            now_cycle,
            w.power_token,
        );
        let weighted = self.power_weights.weigh(&chunk.counters);
        let spent = step.cycles.saturating_sub(chunk.before_cycles);
        w.power_token = ms
            .power
            .start(self.topology.ns_to_cycles(chunk.from_ns), weighted, spent);
        // Waves after a failed one are dropped, so the first failure is the
        // only one.
        let error = match step.end {
            Some(WaveEnd::Hung) => ETIME.to_errno(),
            Some(WaveEnd::Fault { .. }) => EFAULT.to_errno(),
            Some(WaveEnd::Done) | None => 0,
        };
        if error != 0 {
            job.progress.fail(error);
        }
        if step.end.is_some() {
            w.phase = WavePhase::Ended;
        }
        q.account(chunk.from_ns, end);
        w.end_ns = end;
        true
    }
}
