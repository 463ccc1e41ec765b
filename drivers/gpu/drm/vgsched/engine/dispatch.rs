// SPDX-License-Identifier: GPL-2.0

//! Dispatch rounds (SEEDS C1–C3, C8–C10) on the engine's state.
//!
//! The decisions themselves are the core crate's
//! ([`crate::vgsched_core::dispatch`], [`crate::vgsched_core::split`],
//! [`crate::vgsched_core::module_choice`]); this file feeds them the
//! channels and modules of the device and carries out their answers: it
//! takes the ranges, runs the waves and records the placement.

use kernel::{prelude::*, sync::ArcBorrow};

use super::{dump::PlacementRecord, Engine, EngineState, RunningGroup, RunningWave, SplitGroup};
use crate::{
    job::BoMemory,
    vgsched_core::{
        dispatch::{pick, Candidate, MarkUpdate, BANDS, LOWEST_BAND},
        grid::{run_wave, WaveEnd, MAX_WAVES_PER_GROUP},
        module_choice::{choose, free_score, FreeResources, FreeWeights, ModuleScore},
        occupancy::{GroupNeeds, Remaining},
        split::RotatingPointer,
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
}

/// Units of a work-group's waves on a module, from the split table
/// rotated by the module's pointer (SEEDS C8).
fn wave_units(pointer: &RotatingPointer, waves: u32, units: u32) -> [u8; MAX_WAVES_PER_GROUP as usize] {
    let mut out = [0; MAX_WAVES_PER_GROUP as usize];
    pointer.wave_units(waves, units, &mut out);
    out
}

/// SEEDS C9's view of a module's free resources.
fn free_resources(r: &Remaining) -> FreeResources {
    FreeResources { vgpr: r.vgpr, sgpr: r.sgpr, shared: r.shared, waves: r.waves }
}

impl Engine {
    /// Dispatch rounds until no channel head fits anywhere.
    pub(super) fn dispatch(this: ArcBorrow<'_, Self>, st: &mut EngineState, now: u64) {
        let now_cycle = this.topology.ns_to_cycles(now);
        for m in st.modules.iter_mut() {
            m.power.advance(now_cycle);
        }
        loop {
            Self::gather_heads(this, st);
            if st.heads.is_empty() {
                st.trigger.progress(now);
                return;
            }
            this.match_heads(st);
            let mut waiting = [false; BANDS];
            st.heads.iter().for_each(|h| waiting[h.band as usize] = true);
            st.debts.update(&this.rotation, now, waiting);
            let promoted = st.debts.promoted(&this.rotation, now);
            let Some((ci, update)) = pick(&st.candidates, promoted, &mut st.rng) else {
                // Every head failed to match: a failed round (C3).
                st.trigger.blocked(now);
                if st.trigger.fires(now) && this.split_heads(st) {
                    st.trigger.reset(now);
                    continue;
                }
                return;
            };
            let head = st.heads[st.candidate_heads[ci]];
            let band = head.band as usize;
            if update == MarkUpdate::KeepOnlyWinner {
                st.queues.iter_mut().for_each(|q| q.selected[band] = false);
            }
            st.queues[head.queue].selected[band] = true;
            if !this.place(st, &head, now) {
                // Cannot happen (the head matched); never spin on it.
                return;
            }
            st.debts.served(head.band);
            st.trigger.progress(now);
        }
    }

    /// Collects the head of every channel whose first job may place work.
    fn gather_heads(this: ArcBorrow<'_, Self>, st: &mut EngineState) {
        st.heads.clear();
        st.splittable_waiting = false;
        for (queue, q) in st.queues.iter_mut().enumerate() {
            let Some(job) = q.jobs.first_mut() else { continue };
            if !job.has_groups_to_place() || !Self::ready(this, job) {
                continue;
            }
            let needs = job.spec.needs;
            let head = match job.split {
                Some(split) => Head {
                    queue,
                    needs: GroupNeeds { waves: 1, ..needs },
                    band: LOWEST_BAND,
                    first_wave: split.next_wave,
                    piece: true,
                },
                None => {
                    st.splittable_waiting |= job.spec.independent && needs.waves > 1;
                    Head { queue, needs, band: job.spec.band, first_wave: 0, piece: false }
                }
            };
            // Room for one head per channel is reserved with the channel.
            let _ = st.heads.push_within_capacity(head);
        }
    }

    /// Fills the candidate list: the heads that match some module (C1).
    fn match_heads(&self, st: &mut EngineState) {
        let EngineState { heads, candidates, candidate_heads, queues, maps, unit_waves, modules, .. } = st;
        candidates.clear();
        candidate_heads.clear();
        let occ = self.occupancy(maps, unit_waves);
        let units = self.topology.units_per_module;
        for (hi, h) in heads.iter().enumerate() {
            let fits = (0..self.topology.modules).any(|m| {
                let wu = wave_units(&modules[m as usize].pointer, h.needs.waves, units);
                occ.try_place(m, &h.needs, &wu).is_some()
            });
            if fits {
                let marked = queues[h.queue].selected[h.band as usize];
                // Room for every channel is reserved with the channel.
                let _ = candidates.push_within_capacity(Candidate { band: h.band, marked });
                let _ = candidate_heads.push_within_capacity(hi);
            }
        }
    }

    /// Splits every unsplit independent head into one-wave pieces (C3);
    /// `false` if there was none.
    fn split_heads(&self, st: &mut EngineState) -> bool {
        let mut any = false;
        for h in st.heads.iter().filter(|h| !h.piece && h.needs.waves > 1) {
            let job = &mut st.queues[h.queue].jobs[0];
            if job.spec.independent {
                job.split = Some(SplitGroup { group: job.next_group, next_wave: 0 });
                job.next_group += 1;
                st.totals.groups_split += 1;
                any = true;
            }
        }
        any
    }

    /// Chooses the module for `head` among those it matches (C9/C10),
    /// takes its ranges, runs its waves and records it; `false` if it
    /// could not be placed after all.
    fn place(&self, st: &mut EngineState, head: &Head, now: u64) -> bool {
        let units = self.topology.units_per_module;
        let EngineState { queues, groups, waves, maps, unit_waves, modules, scores, log, totals, .. } = st;
        let mut occ = self.occupancy(maps, unit_waves);
        let needs = head.needs;
        scores.clear();
        let cap = self.capacity();
        for m in 0..self.topology.modules {
            let ms = &modules[m as usize];
            let wu = wave_units(&ms.pointer, needs.waves, units);
            if occ.try_place(m, &needs, &wu).is_some() {
                let free = free_score(&free_resources(&occ.remaining(m)), &cap, &FreeWeights::DEFAULT);
                // Capacity for every module was reserved in `new`.
                let _ = scores.push_within_capacity(ModuleScore { module: m, free, power: ms.power.recent() });
            }
        }
        let Some(module) = choose(self.params.choice, scores) else {
            return false;
        };
        let ms = &mut modules[module as usize];
        let wu = wave_units(&ms.pointer, needs.waves, units);
        let Some(placement) = occ.try_place(module, &needs, &wu) else {
            return false;
        };
        let Some(slot) = groups.iter().position(Option::is_none) else {
            // Cannot happen: every group holds a wave slot until it retires.
            return false;
        };
        occ.take(&placement, &needs);
        ms.pointer.advance(needs.waves, units);

        let q = &mut queues[head.queue];
        let job = &mut q.jobs[0];
        let group = match &mut job.split {
            Some(split) if head.piece => {
                let group = split.group;
                split.next_wave += 1;
                if split.next_wave == job.spec.needs.waves {
                    job.split = None;
                }
                group
            }
            _ => {
                job.next_group += 1;
                job.next_group - 1
            }
        };
        job.groups_running += 1;
        totals.groups_dispatched += 1;
        log.record(PlacementRecord {
            time_ns: now,
            client: q.ctx.client,
            ctx: q.ctx.id,
            seqno: job.seqno,
            group,
            first_wave: head.first_wave,
            band: head.band,
            needs,
            placement,
        });

        let limit = self.topology.timeout_cycles();
        let mut mem = BoMemory(&job.spec.bindings);
        let mut last_end = now;
        for (i, place) in placement.waves[..needs.waves as usize].iter().enumerate() {
            let (mut end_ns, mut power_token) = (now, 0);
            // Once the job has failed its other waves need not run; they
            // give their resources back at once.
            if job.error == 0 {
                let wave = head.first_wave + i as u32;
                let run = run_wave(&job.spec.program, &job.spec.grid, group, wave, &mut mem, &self.costs, limit);
                ms.counters.add(&run.counters);
                let duration = self.topology.cycles_to_ns(run.cycles);
                end_ns = now.saturating_add(duration);
                power_token = ms.power.start(self.topology.ns_to_cycles(now), self.power_weights.weigh(&run.counters), run.cycles);
                last_end = last_end.max(end_ns);
                match run.end {
                    WaveEnd::Done => {}
                    // Waves after a failed one are skipped, so the first
                    // failure is the only one.
                    WaveEnd::Hung => job.error = ETIME.to_errno(),
                    WaveEnd::Fault { .. } => job.error = EFAULT.to_errno(),
                }
            }
            // Capacity for every wave slot was reserved in `new`.
            let _ = waves.push_within_capacity(RunningWave { slot, place: *place, end_ns, power_token });
        }
        q.ctx.state.lock().account(now, last_end);
        groups[slot] = Some(RunningGroup {
            job_id: job.id,
            ctx: q.ctx.clone(),
            needs,
            module,
            shared_start: placement.shared_start,
            waves_left: needs.waves,
        });
        true
    }

    /// Every resource of an idle module, the scale of C9's scores.
    fn capacity(&self) -> FreeResources {
        let t = &self.topology;
        let units = t.units_per_module as u64;
        FreeResources {
            vgpr: units * t.vgpr_blocks as u64,
            sgpr: units * t.sgpr_blocks as u64,
            shared: t.shared_mem_blocks as u64,
            waves: units * t.wave_slots as u64,
        }
    }
}
