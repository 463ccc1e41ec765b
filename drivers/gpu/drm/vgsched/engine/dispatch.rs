// SPDX-License-Identifier: GPL-2.0

//! Work-group dispatch rounds on the engine's state.
//!
//! The decisions themselves are the core crate's
//! ([`crate::vgsched_core::dispatch`], [`crate::vgsched_core::split`],
//! [`crate::vgsched_core::module_choice`]); this file feeds them the
//! channels and modules of the device and carries out their answers: it
//! takes the ranges, starts the waves and records the placement. Only
//! contexts that hold a hardware slot are channels (slot selection); a
//! channel's first heads are its work-groups stopped at a preemption point,
//! which are restored before anything new of it is placed. A head kept out
//! for a time slice claims a module that others of its level or lower do
//! not place on until it is placed ([`crate::vgsched_core::claim`]).
//! Placing never interprets: a placed wave's chunks are leased to the
//! device by the step ([`super::waves`]).

use kernel::{
    alloc::kvec::PushError,
    prelude::*,
    sync::ArcBorrow,
    warn_on, //
};

use super::{
    active_in,
    dump::{
        LogRecord,
        PlacementRecord,
        TileRecord, //
    },
    memory::{
        self,
        StageEvent, //
    },
    queue_at,
    tiles,
    Engine,
    EngineState,
    RunningGroup,
    RunningWave,
    WavePhase, //
};
use crate::{
    params,
    vgsched_core::{
        claim::Claim,
        context_switch::transfer_cycles,
        dispatch::{
            pick,
            Candidate,
            MarkUpdate,
            BANDS,
            LOWEST_BAND, //
        },
        grid::MAX_WAVES_PER_GROUP,
        kinetic::MAX_K,
        module_choice::{
            choose,
            free_score,
            FreeResources,
            FreeWeights,
            ModuleScore, //
        },
        occupancy::{
            CachedMatch,
            GroupNeeds,
            Occupancy, //
        },
        split::RotatingPointer, //
    },
};

/// The head of one channel in a dispatch round: its next work-group, or
/// the next one-wave piece of a split one.
#[derive(Clone, Copy)]
pub(super) struct Head {
    /// Index of the channel in [`EngineState::queues`].
    queue: usize,
    /// What it needs.
    needs: GroupNeeds,
    /// Its priority band.
    band: u8,
    /// Index in its work-group of its first wave (non-zero for pieces).
    first_wave: u32,
    /// It is a piece of a split work-group.
    piece: bool,
    /// It is the channel's first saved work-group, to be restored.
    restore: bool,
    /// The tiles its job holds: it goes only to their modules.
    tiles: u32,
    /// Its context's priority level (0 is the highest) and its key (the
    /// context's timeline, stable while it lives, where `queue` is not),
    /// for the claim of a kept-out head ([`crate::vgsched_core::claim`]).
    level: u8,
    key: u64,
}

/// Units of a work-group's waves on a module, from the split table
/// rotated by the module's pointer (wave balancing).
fn wave_units(
    pointer: &RotatingPointer,
    waves: u32,
    units: u32,
) -> [u8; MAX_WAVES_PER_GROUP as usize] {
    let mut out = [0; MAX_WAVES_PER_GROUP as usize];
    pointer.wave_units(waves, units, &mut out);
    out
}

/// The remembered match verdicts of the channel in hardware slot `slot`,
/// one per module.
fn memo_row(
    memo: &mut [CachedMatch],
    slot: Option<u32>,
    modules: usize,
) -> Option<&mut [CachedMatch]> {
    let start = (slot? as usize).checked_mul(modules)?;
    memo.get_mut(start..start.checked_add(modules)?)
}

impl Engine {
    /// Dispatch rounds until no channel head fits anywhere; returns how
    /// many work-groups (or pieces) were placed.
    pub(super) fn dispatch(this: ArcBorrow<'_, Self>, st: &mut EngineState, now: u64) -> usize {
        let now_cycle = this.topology.ns_to_cycles(now);
        for m in st.modules.iter_mut() {
            m.power.advance(now_cycle);
        }
        let mut placed = 0;
        loop {
            Self::gather_heads(st, now, this.gate_hold_ns());
            if st.heads.is_empty() {
                st.kept_out.clear();
                st.trigger.progress(now);
                return placed;
            }
            this.claim_module(st, now);
            this.match_heads(st);
            let mut waiting = [false; BANDS];
            st.heads
                .iter()
                .for_each(|h| waiting[h.band as usize] = true);
            st.debts.update(&this.rotation, now, waiting);
            let promoted = st.debts.promoted(&this.rotation, now);
            let Some((ci, update)) = pick(&st.candidates, promoted, &mut st.rng) else {
                // Every head failed to match: a failed round, which counts
                // towards splitting blocked work-groups.
                st.trigger.blocked(now);
                if st.trigger.fires(now) && this.split_heads(st) {
                    st.trigger.reset(now);
                    continue;
                }
                // Every head left is kept out.
                let EngineState {
                    heads, kept_out, ..
                } = &mut *st;
                kept_out.settle(heads.iter().map(|h| h.key), now);
                return placed;
            };
            let head = st.heads[st.candidate_heads[ci]];
            let band = head.band as usize;
            if update == MarkUpdate::KeepOnlyWinner {
                // Only a working context has a mark (a settled one has
                // none).
                let EngineState {
                    queues, working, ..
                } = &mut *st;
                for i in working.iter() {
                    if let Some(q) = queues.get_mut(i) {
                        q.selected[band] = false;
                    }
                }
            }
            st.queues[head.queue].selected[band] = true;
            if !this.place(st, &head, now) {
                // The head matched, so only an allocation failure gets
                // here; never spin on it.
                return placed;
            }
            placed += 1;
            st.kept_out.placed(head.key);
            st.debts.served(head.band);
            st.trigger.progress(now);
        }
    }

    /// Collects the head of every resident channel whose active job may
    /// place work; the execution gate holds a task back `gate_hold_ns` at
    /// most.
    fn gather_heads(st: &mut EngineState, now: u64, gate_hold_ns: u64) {
        st.heads.clear();
        st.splittable_waiting = false;
        let pipeline = params::pipeline();
        let policy = params::placement_policy();
        // The residents, in index order: the channels are among them.
        let mut residents = [usize::MAX; MAX_K];
        let mut count = 0;
        for (r, i) in residents.iter_mut().zip(st.slots.residents()) {
            *r = i;
            count += 1;
        }
        let residents = &mut residents[..count];
        residents.sort_unstable();
        // Every context is looked at only while a job of a context without
        // a slot may hold tiles (it gives them back below once it is off
        // the device), or the residents' list may be out of date:
        // otherwise the others have nothing to do here. Only a context's
        // head jobs (the active one and the finished ones before it) can
        // hold tiles.
        let resident_holders = residents
            .iter()
            .filter_map(|&i| st.queues.get(i))
            .map(|q| q.head_jobs().filter(|j| j.tiles != 0).count())
            .sum::<usize>();
        let walk = st.tile_jobs > resident_holders || !st.slots.residents_exact();
        // The walk goes over the working contexts: the others have no job.
        let running = match walk {
            true => memory::running_bytes(
                st.working
                    .iter()
                    .filter_map(|i| st.queues.get(i).map(|q| &**q)),
            ),
            false => memory::running_bytes(
                residents
                    .iter()
                    .filter_map(|&i| st.queues.get(i).map(|q| &**q)),
            ),
        };
        let count = match walk {
            true => st.working.len(),
            false => residents.len(),
        };
        for k in 0..count {
            let queue = match walk {
                true => st.working.get(k),
                false => residents.get(k).copied(),
            };
            let Some(queue) = queue else {
                continue;
            };
            let Some(q) = queue_at(&mut st.queues, queue) else {
                continue;
            };
            let level = u8::try_from(q.ctx.priority).unwrap_or(u8::MAX);
            let key = q.ctx.timeline;
            // Side by side every resident is a channel; in turn only the
            // resident whose turn it is.
            if !q.entry.turn {
                // Off the device, a job gives its tiles back once nothing
                // of it runs there: a context waiting for its slot must
                // not keep another's job from its tiles.
                if let Some(job) = active_in(&mut q.jobs) {
                    let off = job.progress.running() == 0 && q.store.all_saved_complete(job.id);
                    if off {
                        tiles::give_back(&mut st.tiles, &mut st.tile_jobs, job, now);
                    }
                }
                continue;
            }
            // Its context initialised, and the execution gate for a task's
            // first job.
            // Behind a hung job (waiting for its clean-up and its fence),
            // nothing of the context starts: its fence cancels the rest.
            if q.head_jobs().any(|j| j.hung()) {
                continue;
            }
            let initialised = q.initialised(now);
            let gate_open = initialised
                && Self::may_execute(
                    q,
                    &running,
                    &pipeline,
                    (now, gate_hold_ns),
                    &mut st.next_event_ns,
                );
            let Some(job) = active_in(&mut q.jobs) else {
                continue;
            };
            // The first saved group: whether all of it is off the device,
            // and the head that restores it.
            // The save area is the active job's from here on.
            q.store.claim(job.id);
            let saved = q.store.saved_of(job.id).first().map(|sg| {
                let head = Head {
                    queue,
                    needs: sg.restore_needs(),
                    band: sg.band,
                    first_wave: sg.first_wave,
                    piece: sg.piece,
                    restore: true,
                    tiles: 0,
                    level,
                    key,
                };
                (sg.complete, head)
            });
            // Saved work runs before anything new of the channel; a failed
            // job's saved groups never run again, it finishes once nothing
            // of it is on the device.
            // Saved work is restored onto its objects' device copies: after
            // a reclaim, only once they are resident again.
            let failed = st.failed_at_once;
            let wants = match saved {
                Some((complete, _)) => {
                    complete && job.progress.error() == 0 && job.stage.on_device(now) && initialised
                }
                None => {
                    job.has_groups_to_place()
                        && Self::ready(job, now, &mut st.failed_at_once)
                        && gate_open
                }
            };
            if st.failed_at_once != failed {
                // Its in-fence failed it: collected in the next pass.
                super::list_collected(&mut st.collecting, queue);
            }
            if !wants {
                continue;
            }
            if job.tiles == 0 {
                // Its tiles are chosen as its first work-group is about to
                // be placed (again, after it was off the device); while no
                // node has enough idle ones, it waits.
                let Some(p) = tiles::take(&mut st.tiles, &mut st.tile_jobs, job, policy, now)
                else {
                    continue;
                };
                st.next_event_ns = st.next_event_ns.min(p.start_ns);
                // A single shared tile is no decision: not logged.
                if st.tiles.exclusive() {
                    st.log.record(LogRecord::Tiles(TileRecord {
                        time_ns: now,
                        client: q.ctx.client,
                        ctx: q.ctx.id,
                        seqno: job.seqno,
                        k: job.spec.tiles,
                        policy,
                        placement: p,
                    }));
                }
            }
            if job.tiles_start_ns > now {
                // Its tiles are waking up (the timer is armed for then).
                continue;
            }
            let head = if let Some((_, head)) = saved {
                Head {
                    tiles: job.tiles,
                    ..head
                }
            } else {
                let needs = job.spec.needs;
                let Some(unit) = job.progress.next_unit() else {
                    continue;
                };
                match unit.piece {
                    true => Head {
                        queue,
                        needs: GroupNeeds { waves: 1, ..needs },
                        band: LOWEST_BAND,
                        first_wave: unit.first_wave,
                        piece: true,
                        restore: false,
                        tiles: job.tiles,
                        level,
                        key,
                    },
                    false => {
                        st.splittable_waiting |= job.spec.independent && needs.waves > 1;
                        Head {
                            queue,
                            needs,
                            band: job.spec.band,
                            first_wave: 0,
                            piece: false,
                            restore: false,
                            tiles: job.tiles,
                            level,
                            key,
                        }
                    }
                }
            };
            // Room for one head per channel is reserved with the channel.
            if st.heads.push_within_capacity(head).is_err() {
                warn_on!(true);
                return;
            }
        }
    }

    /// Fills the candidate list: the heads that match some module.
    fn match_heads(&self, st: &mut EngineState) {
        let EngineState {
            heads,
            candidates,
            candidate_heads,
            queues,
            resources,
            match_memo,
            modules,
            kept_out,
            ..
        } = st;
        candidates.clear();
        candidate_heads.clear();
        let Some(occ) = self.occupancy(resources) else {
            return;
        };
        for (hi, h) in heads.iter().enumerate() {
            let row = memo_row(
                match_memo,
                queues.get(h.queue).and_then(|q| q.slot),
                modules.len(),
            );
            let open = |m: u32| self.on_tiles(m, h.tiles) && kept_out.allows(h.key, h.level, m);
            let fits = match row {
                Some(row) => modules
                    .iter()
                    .zip(row.iter_mut())
                    .zip(0u32..)
                    .filter(|(_, m)| open(*m))
                    .any(|((ms, memo), m)| occ.matches_memo(m, &h.needs, &ms.pointer, memo)),
                None => modules
                    .iter()
                    .zip(0u32..)
                    .filter(|(_, m)| open(*m))
                    .any(|(ms, m)| occ.matches_at(m, &h.needs, &ms.pointer)),
            };
            if fits {
                let marked = queues
                    .get(h.queue)
                    .is_some_and(|q| q.selected[h.band as usize]);
                // Room for every channel is reserved with the channel.
                let room = candidates
                    .push_within_capacity(Candidate {
                        band: h.band,
                        marked,
                    })
                    .is_ok()
                    && candidate_heads.push_within_capacity(hi).is_ok();
                if !room {
                    warn_on!(true);
                    return;
                }
            }
        }
    }

    /// Gives the module claim to the head kept out longest, once it has
    /// waited a base time slice: the module of its tiles with the most
    /// free resources now (module choice's free score; the first of equal
    /// ones), which no other channel's head of its level or lower is
    /// placed on until it is (`vgsched_core::claim`). A claim whose head
    /// is gone is dropped first.
    fn claim_module(&self, st: &mut EngineState, now: u64) {
        let EngineState {
            heads,
            kept_out,
            resources,
            totals,
            ..
        } = st;
        kept_out.check(heads.iter().map(|h| h.key));
        let delay = self.sched.policy.slice.t0_ns;
        // A head that does not fit even an idle module (an unsplit
        // independent group bigger than one) waits for splitting instead.
        let fits_idle = |h: &Head| Occupancy::check_fits(&self.topology, &h.needs, false).is_ok();
        let eligible = |c: u64| heads.iter().any(|h| h.key == c && fits_idle(h));
        let Some(channel) = kept_out.due(now, delay, eligible) else {
            return;
        };
        let Some(head) = heads.iter().find(|h| h.key == channel) else {
            return;
        };
        let Some(occ) = self.occupancy(resources) else {
            return;
        };
        let cap = self.capacity();
        let mut best: Option<(u32, u64)> = None;
        for m in (0..self.topology.modules).filter(|&m| self.on_tiles(m, head.tiles)) {
            let free = free_score(&occ.remaining(m), &cap, &FreeWeights::DEFAULT);
            if best.is_none_or(|(_, f)| free > f) {
                best = Some((m, free));
            }
        }
        if let Some((module, _)) = best {
            kept_out.grant(Claim {
                channel,
                module,
                level: head.level,
            });
            totals.claims += 1;
        }
    }

    /// Splits every unsplit independent head into one-wave pieces;
    /// `false` if there was none.
    fn split_heads(&self, st: &mut EngineState) -> bool {
        let mut any = false;
        for h in st
            .heads
            .iter()
            .filter(|h| !h.piece && !h.restore && h.needs.waves > 1)
        {
            let Some(job) = st
                .queues
                .get_mut(h.queue)
                .and_then(|q| active_in(&mut q.jobs))
            else {
                continue;
            };
            if job.spec.independent && job.progress.split_next() {
                st.totals.groups_split += 1;
                any = true;
            }
        }
        any
    }

    /// Chooses the module for `head` among those it matches (module choice),
    /// takes its ranges, runs its waves and records it; `false` if it
    /// could not be placed after all.
    fn place(&self, st: &mut EngineState, head: &Head, now: u64) -> bool {
        let units = self.topology.units_per_module;
        let EngineState {
            queues,
            groups,
            waves,
            resources,
            match_memo,
            modules,
            scores,
            log,
            totals,
            rewinds,
            stages,
            kept_out,
            ..
        } = st;
        let Some(mut occ) = self.occupancy(resources) else {
            return false;
        };
        let needs = head.needs;
        scores.clear();
        let cap = self.capacity();
        let slot = queues.get(head.queue).and_then(|q| q.slot);
        let mut row = memo_row(match_memo, slot, modules.len());
        for (ms, m) in modules.iter().zip(0u32..) {
            if !self.on_tiles(m, head.tiles) || !kept_out.allows(head.key, head.level, m) {
                continue;
            }
            let fits = match row.as_deref_mut().and_then(|r| r.get_mut(m as usize)) {
                Some(memo) => occ.matches_memo(m, &needs, &ms.pointer, memo),
                None => occ.matches_at(m, &needs, &ms.pointer),
            };
            if fits {
                let free = free_score(&occ.remaining(m), &cap, &FreeWeights::DEFAULT);
                // Capacity for every module was reserved in `new`.
                if scores
                    .push_within_capacity(ModuleScore {
                        module: m,
                        free,
                        power: ms.power.recent(),
                    })
                    .is_err()
                {
                    break;
                }
            }
        }
        let Some(module) = choose(self.params.choice, scores) else {
            return false;
        };
        let Some(ms) = modules.get_mut(module as usize) else {
            return false;
        };
        let wu = wave_units(&ms.pointer, needs.waves, units);
        let Some(placement) = occ.try_place(module, &needs, &wu) else {
            // It matched, so cannot happen; a remembered verdict must not
            // keep saying it fits.
            warn_on!(true);
            if let Some(row) = row {
                row.iter_mut().for_each(|e| *e = CachedMatch::EMPTY);
            }
            return false;
        };
        let Some(slot) = groups.iter().position(Option::is_none) else {
            // Cannot happen: every group holds a wave slot until it retires.
            warn_on!(true);
            return false;
        };
        let Some(q) = queue_at(queues, head.queue) else {
            return false;
        };
        let Some(job) = active_in(&mut q.jobs) else {
            return false;
        };
        // The threads of every wave: a restored group brings its own, new
        // waves take preallocated ones. Checked before anything is taken,
        // so a shortfall changes nothing.
        let waves_needed = needs.waves as usize;
        let fresh_short = !head.restore && !q.store.has_free(waves_needed);
        let saved_index = match head.restore {
            true => match q.store.saved_of(job.id).first() {
                Some(sg) if sg.complete && sg.waves as usize == waves_needed => Some(0),
                _ => None,
            },
            false => None,
        };
        // The unit the head stands for must be the job's next one.
        let unit = match head.restore {
            true => None,
            false => match job.progress.next_unit() {
                Some(u) if u.piece == head.piece && u.first_wave == head.first_wave => Some(u),
                _ => {
                    warn_on!(true);
                    return false;
                }
            },
        };
        let failed = job.progress.error() != 0;
        if fresh_short || (head.restore && (saved_index.is_none() || failed)) {
            warn_on!(true);
            return false;
        }
        occ.take(&placement, &needs);
        ms.pointer.advance(needs.waves, units);

        // Restoring copies the group's state back in before it executes.
        let (group, exec_from) = if head.restore {
            let Ok(sg) = q.store.saved.remove(0) else {
                return false;
            };
            let bytes = sg.state_bytes(job.spec.grid.threads_per_wave);
            // State kept in the slot comes back at the in-slot cost.
            let restore_ns = match sg.in_slot {
                true => self.sched.slot_switch_ns,
                false => self.topology.cycles_to_ns(transfer_cycles(bytes)),
            };
            q.switch_ns = q.switch_ns.saturating_add(restore_ns);
            // Checked above: the job has not failed and this group is saved.
            warn_on!(job.progress.restore().is_err());
            totals.groups_restored += 1;
            (sg.group, now.saturating_add(restore_ns))
        } else {
            let Some(unit) = unit else {
                return false;
            };
            // The next unit, checked above, of a job that has not failed.
            warn_on!(job.progress.place(unit).is_err());
            totals.groups_dispatched += 1;
            (unit.group, now)
        };
        log.record(LogRecord::Placement(PlacementRecord {
            time_ns: now,
            client: q.ctx.client,
            ctx: q.ctx.id,
            seqno: job.seqno,
            group,
            first_wave: head.first_wave,
            band: head.band,
            needs,
            placement,
        }));
        if job.times.first_wave == 0 {
            job.times.first_wave = now;
            memory::record(stages, &q.ctx, job.seqno, StageEvent::FirstWave, now);
        }
        q.task_started = true;
        let g = RunningGroup {
            queue: head.queue,
            job_id: job.id,
            group,
            band: head.band,
            piece: head.piece,
            saved_waves: 0,
            ctx: q.ctx.clone(),
            needs,
            module,
            shared_start: placement.shared_start,
            waves_left: needs.waves,
        };
        for (i, place) in (0u32..).zip(placement.waves.iter().take(waves_needed)) {
            let (wave, cycles, lanes) = if head.restore {
                // The group's stopped waves, lowest index first.
                let at = q
                    .store
                    .saved_waves
                    .iter()
                    .position(|w| w.group == group && w.piece == head.piece);
                match at.map(|at| q.store.saved_waves.remove(at)) {
                    Some(Ok(sw)) => (sw.wave, sw.cycles, sw.lanes),
                    _ => {
                        warn_on!(true);
                        (head.first_wave + i, 0, KVVec::new())
                    }
                }
            } else {
                // A wave starts from scratch; checked above that arrays
                // are free.
                let threads = job.spec.grid.threads_per_wave;
                let lanes = q.store.take_fresh(threads).unwrap_or_default();
                (head.first_wave + i, 0, lanes)
            };
            let mut w = RunningWave {
                slot,
                wave,
                place: *place,
                phase: WavePhase::Running,
                // Due when its state is in: the engine interprets it then.
                end_ns: exec_from,
                exec_from_ns: exec_from,
                base_cycles: cycles,
                cycles,
                lanes,
                chunk: None,
                lease: 0,
                cut_at: None,
                recalled: false,
                power_token: 0,
                rewind: rewinds.pop(),
            };
            if let Some(r) = w.rewind.as_mut() {
                r.disarm();
            }
            // Once the job has failed its other waves need not run; they
            // give their resources back at once.
            if job.progress.error() != 0 {
                w.phase = WavePhase::Ended;
                w.end_ns = now;
            }
            // Capacity for every wave slot was reserved in `new`.
            if let Err(PushError(w)) = waves.push_within_capacity(w) {
                warn_on!(true);
                q.store.give_back(w.lanes);
                if let Some(r) = w.rewind {
                    let _unexpected = rewinds.push_within_capacity(r);
                }
            }
        }
        if let Some(slot) = groups.get_mut(slot) {
            *slot = Some(g);
        }
        true
    }

    /// Every resource of an idle module, the scale of module choice's scores.
    fn capacity(&self) -> FreeResources {
        let t = &self.topology;
        let units = u64::from(t.units_per_module);
        FreeResources {
            vgpr: units * u64::from(t.vgpr_blocks),
            sgpr: units * u64::from(t.sgpr_blocks),
            shared: u64::from(t.shared_mem_blocks),
            waves: units * u64::from(t.wave_slots),
        }
    }
}
