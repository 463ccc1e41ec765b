// SPDX-License-Identifier: GPL-2.0

//! Dispatch rounds (SEEDS C1–C3, C8–C10) on the engine's state.
//!
//! The decisions themselves are the core crate's
//! ([`crate::vgsched_core::dispatch`], [`crate::vgsched_core::split`],
//! [`crate::vgsched_core::module_choice`]); this file feeds them the
//! channels and modules of the device and carries out their answers: it
//! takes the ranges, starts the waves and records the placement. Only
//! contexts that hold a hardware slot are channels (SEEDS A); a channel's
//! first heads are its work-groups stopped at a preemption point, which
//! are restored before anything new of it is placed.

use kernel::{prelude::*, sync::ArcBorrow};

use super::{dump::PlacementRecord, Engine, EngineState, RunningGroup, RunningWave, SplitGroup, WavePhase};
use crate::vgsched_core::{
    context_switch::{shared_state_bytes, transfer_cycles, wave_state_bytes},
    dispatch::{pick, Candidate, MarkUpdate, BANDS, LOWEST_BAND},
    grid::{Lane, MAX_WAVES_PER_GROUP},
    module_choice::{choose, free_score, FreeResources, FreeWeights, ModuleScore},
    occupancy::{GroupNeeds, Remaining},
    split::RotatingPointer,
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
    /// Dispatch rounds until no channel head fits anywhere; returns how
    /// many work-groups (or pieces) were placed.
    pub(super) fn dispatch(this: ArcBorrow<'_, Self>, st: &mut EngineState, now: u64) -> usize {
        let now_cycle = this.topology.ns_to_cycles(now);
        for m in st.modules.iter_mut() {
            m.power.advance(now_cycle);
        }
        let mut placed = 0;
        loop {
            Self::gather_heads(this, st);
            if st.heads.is_empty() {
                st.trigger.progress(now);
                return placed;
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
                return placed;
            };
            let head = st.heads[st.candidate_heads[ci]];
            let band = head.band as usize;
            if update == MarkUpdate::KeepOnlyWinner {
                st.queues.iter_mut().for_each(|q| q.selected[band] = false);
            }
            st.queues[head.queue].selected[band] = true;
            if !this.place(st, &head, now) {
                // The head matched, so only an allocation failure gets
                // here; never spin on it.
                return placed;
            }
            placed += 1;
            st.debts.served(head.band);
            st.trigger.progress(now);
        }
    }

    /// Collects the head of every resident channel whose first job may
    /// place work.
    fn gather_heads(this: ArcBorrow<'_, Self>, st: &mut EngineState) {
        st.heads.clear();
        st.splittable_waiting = false;
        for (queue, q) in st.queues.iter_mut().enumerate() {
            if !q.entry.resident {
                continue;
            }
            if let Some(saved) = q.saved.first() {
                if saved.complete {
                    let head = Head {
                        queue,
                        needs: saved.restore_needs(),
                        band: saved.band,
                        first_wave: saved.waves.first().map_or(0, |w| w.wave),
                        piece: saved.piece,
                        restore: true,
                    };
                    // Room for one head per channel is reserved with the channel.
                    let _ = st.heads.push_within_capacity(head);
                }
                // Saved work runs before anything new of the channel.
                continue;
            }
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
                    restore: false,
                },
                None => {
                    st.splittable_waiting |= job.spec.independent && needs.waves > 1;
                    Head { queue, needs, band: job.spec.band, first_wave: 0, piece: false, restore: false }
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
        for h in st.heads.iter().filter(|h| !h.piece && !h.restore && h.needs.waves > 1) {
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
        let q = &mut queues[head.queue];
        let job = &mut q.jobs[0];
        // The threads of every wave: a restored group brings its own, new
        // waves start from scratch. Allocated before anything is taken, so
        // a failure changes nothing.
        let mut lanes = KVec::new();
        if !head.restore {
            if lanes.reserve(needs.waves as usize, GFP_KERNEL).is_err() {
                return false;
            }
            for _ in 0..needs.waves {
                let threads = job.spec.grid.threads_per_wave as usize;
                let Ok(fresh) = KVVec::from_elem(Lane::default(), threads, GFP_KERNEL) else {
                    return false;
                };
                let _ = lanes.push_within_capacity(fresh);
            }
        }
        // The head is the first saved group; taken before anything changes.
        let restored = match head.restore {
            true => match q.saved.remove(0) {
                Ok(sg) => Some(sg),
                Err(_) => return false,
            },
            false => None,
        };
        occ.take(&placement, &needs);
        ms.pointer.advance(needs.waves, units);

        let mut cs = q.ctx.state.lock();
        // Restoring copies the group's state back in before it executes.
        let (group, exec_from, restored_waves) = if let Some(sg) = restored {
            let bytes = sg.waves.len() as u64 * wave_state_bytes(&sg.needs, job.spec.grid.threads_per_wave)
                + shared_state_bytes(&sg.needs);
            let restore_ns = self.topology.cycles_to_ns(transfer_cycles(bytes));
            cs.switch_ns += restore_ns;
            job.groups_saved -= 1;
            totals.groups_restored += 1;
            (sg.group, now.saturating_add(restore_ns), Some(sg.waves))
        } else {
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
            totals.groups_dispatched += 1;
            (group, now, None)
        };
        job.groups_running += 1;
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
        let g = RunningGroup {
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
        let to = self.sched.next_point(exec_from);
        let mut restored_waves = restored_waves.map(|v| v.into_iter());
        let mut fresh = lanes.into_iter();
        for (i, place) in placement.waves[..needs.waves as usize].iter().enumerate() {
            let (wave, cycles, lanes) = match restored_waves.as_mut().and_then(Iterator::next) {
                Some(sw) => (sw.wave, sw.cycles, sw.lanes),
                None => (head.first_wave + i as u32, 0, fresh.next().unwrap_or(KVVec::new())),
            };
            let mut w = RunningWave {
                slot,
                wave,
                place: *place,
                phase: WavePhase::Running,
                end_ns: now,
                exec_from_ns: exec_from,
                base_cycles: cycles,
                cycles,
                lanes,
                power_token: 0,
            };
            // Once the job has failed its other waves need not run; they
            // give their resources back at once.
            if job.error == 0 {
                self.run_chunk(&mut w, &g, job, ms, &mut cs, &mut q.entry, now, to);
            } else {
                w.phase = WavePhase::Ended;
            }
            // Capacity for every wave slot was reserved in `new`.
            let _ = waves.push_within_capacity(w);
        }
        drop(cs);
        groups[slot] = Some(g);
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
