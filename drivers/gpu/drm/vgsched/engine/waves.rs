// SPDX-License-Identifier: GPL-2.0

//! The wave runner: waves on the device, from their placement to their
//! retirement.
//!
//! A running wave goes from one preemption point to the next a chunk at a
//! time ([`Engine::advance_waves`]). At a point the engine decides what the
//! wave does next: it is dropped if its job failed, saved if its context's
//! slice or turn ended, or else given its next chunk, which the wave
//! executor ([`crate::gpu::exec`]) interprets on its own work queue,
//! outside the engine lock: the engine hands it the wave's threads as a
//! lease and takes them back, with what the chunk did, when the executor
//! hands the lease back ([`Engine::take_returns`]). A chunk's modeled
//! effects (runtime, recent power) are counted then, once, so how the
//! executor cut its interpretation changes nothing the model shows. When
//! slot selection ([`super::slots`]) takes the slot of a context with work
//! left, its waves stop: at once, their chunk taken back to the
//! instruction boundary where modeled time stands ([`Rewind`],
//! [`Engine::stop_at_once`], with `preempt_at_once`; a chunk the executor
//! has is cut, and taken back when it comes back if it ran past the
//! eviction), or at their next point. There their threads move to the
//! job's save area ([`super::save_area`]), and their registers and the
//! group's shared memory are copied out at the modeled switch bandwidth
//! (the wave keeps its resources until that is done). A wave that ended,
//! or finished saving, gives its ranges back when it is retired
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
    gpu::{
        exec::{
            ChunkOrder,
            Lease,
            Recall,
            Rewind, //
        },
        Backend, //
    },
    job::BoMemory,
    vgsched_core::{
        context_switch::{
            shared_state_bytes,
            transfer_cycles,
            wave_state_bytes, //
        },
        exec::Counters,
        grid::{
            Lane,
            WaveEnd, //
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
/// preemption point to the next. The executor interprets it under a lease
/// ([`RunningWave::lease`]); its modeled effects are counted once, when it
/// is complete.
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

impl RunningWave {
    /// The step decides what the wave does next: it has no lease out and
    /// was not recalled.
    pub(super) fn waits_for_step(&self) -> bool {
        self.lease == 0 && !self.recalled
    }
}

/// How the chunk of a wave whose lease came back ends.
enum ChunkEnd {
    /// It is complete: the wave reached the chunk's end, or ended.
    Complete,
    /// It was taken back to an eviction: it is interpreted again, to there.
    TakenBack,
    /// The lease was recalled before the chunk was complete.
    Recalled,
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
    /// The executor's lease on its chunk (0: none, the wave's threads and
    /// rewind are here). While a lease is out, `lanes` is empty and
    /// `rewind` is `None`: the lease carries them.
    pub(super) lease: u64,
    /// It was cut at this moment (its context lost its slot, preemption at
    /// once) while its lease was out.
    pub(super) cut_at: Option<u64>,
    /// Its lease was recalled (its context is being cancelled): it gets no
    /// new one, and leaves the device with its context.
    pub(super) recalled: bool,
    /// Its current chunk's share of its module's recent power.
    pub(super) power_token: u64,
    /// What taking its current chunk back needs (preemption at once);
    /// `None` if none was free when it was placed.
    pub(super) rewind: Option<Rewind>,
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
            collecting,
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
                // A wave whose chunk ended it after its modeled end
                // stopped its rate then ([`Engine::complete_chunk`]);
                // one that ended ahead of the step, or otherwise, may
                // still hold its token.
                if w.phase == WavePhase::Ended && w.power_token != 0 {
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
                // may have ended, or its runtime moved while evicted), and
                // so is the collection ([`EngineState::collecting`]).
                super::list_changed(slots, queues, collecting, g.queue);
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
    /// wave whose chunk the executor has is cut at `now`
    /// ([`crate::gpu::Backend::cut`]) and, if it ran past `now`
    /// before the cut reached it, taken back when it comes back only if it
    /// is its job's one wave ([`Engine::cut_chunk`]); else it runs on to
    /// its point. A wave whose chunk cannot be taken back (its undo log
    /// overflowed, or no rewind was free when it was placed) stops at its
    /// point as before.
    pub(super) fn stop_at_once(&self, st: &mut EngineState, index: usize, now: u64) {
        // Chunks the executor has finished are the engine's again first:
        // a complete chunk is taken back below like any other.
        self.take_returns(st, now);
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
        // A chunk is taken back only while no wave of the job is being
        // interpreted: undoing stores beside a running sibling could hand
        // it words that then change under it.
        let siblings_out = waves.iter().any(|w| {
            w.lease != 0
                && groups
                    .get(w.slot)
                    .and_then(Option::as_ref)
                    .is_some_and(|g| Arc::ptr_eq(&g.ctx, &q.ctx) && g.job_id == job.id)
        });
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
                // is cut short.
                let Some(c) = w.chunk.filter(|c| c.to_ns > now && c.from_ns <= now) else {
                    continue;
                };
                if w.phase != WavePhase::Running {
                    continue;
                }
                if w.lease != 0 {
                    // Decided when its lease is back (it may yet run on);
                    // nothing of the chunk is counted yet, so nothing of
                    // it is taken back here.
                    self.exec.cut(w.lease, self.cycle_at(w, now));
                    w.cut_at = Some(w.cut_at.map_or(now, |at| at.min(now)));
                    continue;
                }
                // Its lease was recalled: its threads are here.
                let ms = modules.get_mut(g.module as usize);
                if self.cut_chunk(w, false, &mut mem, ms, now) {
                    totals.waves_stopped_at_once += 1;
                } else {
                    runs_until = runs_until.max(c.to_ns);
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
            let Some(ms) = modules.get_mut(g.module as usize) else {
                continue;
            };
            let taken = match siblings_out {
                true => None,
                false => w
                    .rewind
                    .as_mut()
                    .and_then(|r| r.take_back(now, &mut w.lanes, &mut mem)),
            };
            let Some(taken) = taken else {
                runs_until = runs_until.max(w.end_ns);
                continue;
            };
            w.cycles = taken.before_cycles;
            ms.counters.sub(&taken.counters);
            // Its rate counted from the chunk's start is taken out again;
            // the run up to `now` counts its own.
            let from_cycle = self.topology.ns_to_cycles(taken.from_ns);
            ms.power.stop(from_cycle, now_cycle, w.power_token);
            w.power_token = 0;
            w.phase = WavePhase::Running;
            w.chunk = Some(Chunk {
                point_ns: taken.point_ns,
                from_ns: taken.from_ns,
                to_ns: now,
                before_cycles: taken.before_cycles,
                counters: Counters::default(),
            });
            w.end_ns = now;
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

    /// The cycle count wave `w` reaches at `at_ns`, as the interpreter's
    /// horizon counts it.
    fn cycle_at(&self, w: &RunningWave, at_ns: u64) -> u64 {
        w.base_cycles.saturating_add(
            self.topology
                .ns_to_cycles(at_ns.saturating_sub(w.exec_from_ns)),
        )
    }

    /// Ends the chunk of running wave `w`, its threads here (not leased),
    /// at `at`. Where its interpretation has not passed `at`, only the
    /// chunk's end moves, so every instruction it ran stays before the
    /// eviction. Past it, the chunk is taken back (its stores undone, its
    /// threads, cycles and counts restored, from `ms`, its module's state)
    /// and set to be interpreted again up to `at`, but only when `w` is its
    /// job's one running wave (`alone`): sibling waves interpreted at the
    /// same time may have stored over, or loaded, the words its log
    /// restores, which per-wave logs cannot undo in order; such a wave runs
    /// on to its point. Its power stand-in is left as it is: the chunk's
    /// completion replaces it, as for any chunk. Returns whether it now
    /// ends at `at`.
    fn cut_chunk(
        &self,
        w: &mut RunningWave,
        alone: bool,
        mem: &mut BoMemory<'_>,
        ms: Option<&mut ModuleState>,
        at: u64,
    ) -> bool {
        let at_cycle = self.cycle_at(w, at);
        let Some(chunk) = w.chunk.as_mut() else {
            return false;
        };
        if w.cycles <= at_cycle {
            chunk.to_ns = at;
            return true;
        }
        if !alone {
            return false;
        }
        let Some(ms) = ms else {
            return false;
        };
        let Some(taken) = w
            .rewind
            .as_mut()
            .and_then(|r| r.take_back(at, &mut w.lanes, mem))
        else {
            return false;
        };
        w.cycles = taken.before_cycles;
        ms.counters.sub(&taken.counters);
        *chunk = Chunk {
            point_ns: taken.point_ns,
            from_ns: taken.from_ns,
            to_ns: at,
            before_cycles: taken.before_cycles,
            counters: Counters::default(),
        };
        true
    }

    /// Handles the running waves that reached their preemption point: a
    /// wave whose job failed is dropped, a wave whose context lost its slot
    /// is saved, the others are given their next chunk, which the executor
    /// interprets. Leases handed back are taken first. Returns how many
    /// waves changed.
    pub(super) fn advance_waves(&self, st: &mut EngineState, now: u64) -> usize {
        let mut changed = self.take_returns(st, now);
        let EngineState {
            waves,
            groups,
            queues,
            modules,
            totals,
            gpu_due,
            ..
        } = st;
        let next_point = self.sched.next_point(now);
        let now_cycle = self.topology.ns_to_cycles(now);
        for w in waves
            .iter_mut()
            .filter(|w| w.phase == WavePhase::Running && w.end_ns <= now && w.waits_for_step())
        {
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
                    r.begin(&w.lanes, chunk.point_ns, chunk.from_ns, chunk.before_cycles);
                }
                w.chunk = Some(chunk);
            }
            if self.lease_chunk(w, g.group, q) {
                *gpu_due = true;
            }
        }
        changed
    }

    /// Hands the chunk of wave `w` (of work-group `group` of the active job
    /// of `q`) to the executor. Returns whether it did; if not (the
    /// executor had no room, which one lease per wave slot rules out), the
    /// wave stays due with its threads.
    fn lease_chunk(&self, w: &mut RunningWave, group: u32, q: &mut ContextQueue) -> bool {
        let Some(chunk) = w.chunk else {
            return false;
        };
        let Some(job) = active_in(&mut q.jobs) else {
            return false;
        };
        let until = self.cycle_at(w, chunk.to_ns);
        let order = ChunkOrder {
            program: &job.spec.program,
            grid: job.spec.grid,
            group,
            wave: w.wave,
            pins: job.device.as_ref().map_or(&[], |d| &d.pins[..]),
            cycles: w.cycles,
            until,
            limit: self.topology.timeout_cycles(),
            duration: job.spec.mock_cycles,
        };
        // SAFETY: The job's copies stay held and alive while the lease is
        // out: the wave is not retired before the lease is back (it stays
        // `Running`), so its job is not finished and keeps its device
        // memory; a context is taken off the device only once its waves'
        // leases are back ([`Engine::recall_leases`]), and the device shuts
        // down only after the executor's work item has stopped.
        let lease = unsafe { Lease::new(order, core::mem::take(&mut w.lanes), w.rewind.take()) };
        match self.exec.submit(lease) {
            Ok(id) => {
                w.lease = id;
                true
            }
            Err(lease) => {
                warn_on!(true);
                let back = lease.into_returned();
                w.lanes = back.lanes;
                w.rewind = back.rewind;
                false
            }
        }
    }

    /// Takes the leases the executor handed back, computed at or before
    /// `now` (one handed back since is the next step's), and completes
    /// their waves' chunks: the chunk's modeled effects are counted, a cut
    /// made while the lease was out is decided. Returns how many waves
    /// changed.
    pub(super) fn take_returns(&self, st: &mut EngineState, now: u64) -> usize {
        let mut changed = 0;
        while let Some(lease) = self.exec.take_done(now) {
            let id = lease.id();
            let back = lease.into_returned();
            let Some(i) = st.waves.iter().position(|w| w.lease == id) else {
                // Cannot happen: a wave leaves the device only with its
                // lease back. Its rewind goes back to the pool (room for
                // every wave slot's); its threads go with the lease.
                warn_on!(true);
                if let Some(r) = back.rewind {
                    let _unexpected = st.rewinds.push_within_capacity(r);
                }
                continue;
            };
            // Its job's one running wave: a chunk that ran past a cut may
            // be taken back (looked at only for a wave that was cut).
            let alone = st
                .waves
                .get(i)
                .filter(|w| w.cut_at.is_some())
                .is_some_and(|w| {
                    let job = st.groups.get(w.slot).and_then(Option::as_ref);
                    st.waves
                        .iter()
                        .filter(|v| {
                            let other = st.groups.get(v.slot).and_then(Option::as_ref);
                            match (job, other) {
                                (Some(a), Some(b)) => {
                                    Arc::ptr_eq(&a.ctx, &b.ctx) && a.job_id == b.job_id
                                }
                                _ => false,
                            }
                        })
                        .count()
                        == 1
                });
            let EngineState {
                waves,
                groups,
                queues,
                modules,
                totals,
                ..
            } = &mut *st;
            let Some(w) = waves.get_mut(i) else {
                continue;
            };
            w.lease = 0;
            w.lanes = back.lanes;
            w.rewind = back.rewind;
            w.cycles = back.cycles;
            let found = groups
                .get_mut(w.slot)
                .and_then(Option::as_mut)
                .and_then(|g| Some((g.module, queue_of(queues, g)?)));
            let (Some((module, q)), Some(chunk)) = (found, w.chunk.as_mut()) else {
                warn_on!(true);
                w.chunk = None;
                w.phase = WavePhase::Ended;
                w.end_ns = now;
                changed += 1;
                continue;
            };
            chunk.counters.add(&back.counters);
            let Some(ms) = modules.get_mut(module as usize) else {
                continue;
            };
            ms.counters.add(&back.counters);
            let how = match (back.complete, w.cut_at.take()) {
                (false, _) => ChunkEnd::Recalled,
                (true, None) => ChunkEnd::Complete,
                (true, Some(at)) if w.cycles <= self.cycle_at(w, at) => {
                    // The cut took, or the wave ended before it.
                    if back.end.is_none() {
                        if let Some(c) = w.chunk.as_mut() {
                            c.to_ns = c.to_ns.min(at);
                        }
                        totals.waves_stopped_at_once += 1;
                    }
                    ChunkEnd::Complete
                }
                (true, Some(at)) => {
                    // Interpreted past the eviction before the cut reached
                    // it.
                    let Some(job) = active_in(&mut q.jobs) else {
                        continue;
                    };
                    let mut mem = BoMemory(job.device.as_ref().map_or(&[], |d| &d.pins[..]));
                    if self.cut_chunk(w, alone, &mut mem, Some(&mut *ms), at) {
                        totals.waves_stopped_at_once += 1;
                        ChunkEnd::TakenBack
                    } else {
                        ChunkEnd::Complete
                    }
                }
            };
            if let ChunkEnd::Complete = how {
                let stalled = self.complete_chunk(w, q, ms, &back.end, back.done_ns, now);
                totals.stalled_ns = totals.stalled_ns.saturating_add(stalled);
            }
            changed += 1;
        }
        changed
    }

    /// Counts the complete chunk of wave `w` (of the active job of `q`, on
    /// the module whose state is `ms`): its runtime, its share of recent
    /// power, the wave's end and its job's failure, if it failed. The
    /// device handed it back having computed it at `done_ns` (0: on the
    /// model's time): a wave that ended in the chunk ended no earlier than
    /// that, so its end is not one the device could not have reported
    /// yet (the virtual GPU's interpreter behind its modeled clock); the
    /// wave stalled for the difference, its cycles the model's. The stall
    /// is not the context's device time: the executor is shared, and most
    /// of a stall is other leases interpreted in turn, so charging it
    /// would let one client's heavy waves lower another's weight. A chunk
    /// the wave runs on from keeps its modeled end: its next chunk starts
    /// there and reaches the first point after the engine's step, as
    /// before, so the executor interprets on without waiting for the
    /// engine between chunks. Returns the stall, ns.
    fn complete_chunk(
        &self,
        w: &mut RunningWave,
        q: &mut ContextQueue,
        ms: &mut ModuleState,
        ended: &Option<WaveEnd>,
        done_ns: u64,
        now: u64,
    ) -> u64 {
        let Some(chunk) = w.chunk.take() else {
            return 0;
        };
        let (modeled, end) = match ended {
            None => (chunk.to_ns, chunk.to_ns),
            Some(_) => {
                let modeled = w.exec_from_ns.saturating_add(
                    self.topology
                        .cycles_to_ns(w.cycles.saturating_sub(w.base_cycles)),
                );
                (modeled, modeled.max(done_ns.min(now)))
            }
        };
        let stalled = end - modeled;
        // The last chunk stopped issuing at the point; this one's rate
        // replaces its stand-in from its start on.
        ms.power.stop(
            self.topology.ns_to_cycles(chunk.point_ns),
            self.topology.ns_to_cycles(now),
            w.power_token,
        );
        let weighted = self.power_weights.weigh(&chunk.counters);
        let spent = w.cycles.saturating_sub(chunk.before_cycles);
        w.power_token = ms
            .power
            .start(self.topology.ns_to_cycles(chunk.from_ns), weighted, spent);
        if ended.is_some() && modeled <= now {
            // A wave that ended stopped issuing at its modeled end, not at
            // the end its retirement sees, later by the stall: its rate
            // counts up to there, and it holds no token past its end. (One
            // whose modeled end lies ahead keeps its token: its rate counts
            // until then, and retirement, or a take-back before then,
            // stops it.)
            ms.power.stop(
                self.topology.ns_to_cycles(modeled),
                self.topology.ns_to_cycles(now),
                w.power_token,
            );
            w.power_token = 0;
        }
        // Waves after a failed one are dropped, so the first failure is the
        // only one.
        let error = match ended {
            Some(WaveEnd::Hung) => ETIME.to_errno(),
            Some(WaveEnd::Fault { .. }) => EFAULT.to_errno(),
            Some(WaveEnd::Done) | None => 0,
        };
        if let Some(job) = active_in(&mut q.jobs) {
            if error != 0 {
                job.progress.fail(error);
            }
        }
        if ended.is_some() {
            w.phase = WavePhase::Ended;
        }
        // The context's device time is the model's (see above).
        q.account(chunk.from_ns, modeled);
        w.end_ns = end;
        stalled
    }

    /// Recalls the leases of the waves of the contexts `of` picks and takes
    /// back those handed back. Returns `false` if one is still in the
    /// executor's hands: the caller releases the engine lock, waits for the
    /// executor's work item ([`Engine::wait_for_gpu`]) and tries again.
    pub(super) fn recall_leases(
        &self,
        st: &mut EngineState,
        of: impl Fn(&Arc<Context>) -> bool,
    ) -> bool {
        let mut all_back = true;
        let EngineState { waves, groups, .. } = &mut *st;
        for w in waves.iter_mut() {
            let picked = groups
                .get(w.slot)
                .and_then(Option::as_ref)
                .is_some_and(|g| of(&g.ctx));
            if !picked {
                continue;
            }
            // Back or not, it gets no new lease (the executor's hand-back
            // queues the step, which could otherwise lease it again before
            // the cancellation takes it off the device).
            w.recalled = true;
            if w.lease != 0 && self.exec.recall(w.lease) == Recall::InHand {
                all_back = false;
            }
        }
        self.take_returns(st, super::monotonic_ns());
        all_back
    }
}
