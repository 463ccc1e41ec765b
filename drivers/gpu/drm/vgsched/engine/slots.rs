// SPDX-License-Identifier: GPL-2.0

//! SEEDS A on the engine: who holds the hardware slots, and running,
//! stopping, saving and resuming waves at preemption points.
//!
//! The decision is the core crate's ([`crate::vgsched_core::slots`]); this
//! file feeds it the contexts with work and carries it out. A running wave
//! is interpreted one chunk at a time, each ending at the next preemption
//! point, so when its context loses its slot it is already stopped at an
//! instruction boundary there: its threads move to the context's save
//! area, and its registers and the group's shared memory are copied out
//! at the modeled switch bandwidth (the wave keeps its resources until
//! that is done). When the context holds a slot again, its saved groups
//! are its first dispatch heads; a restored wave starts executing once its
//! state is copied back in. Runtime counts only the chunks that executed.

use kernel::{
    prelude::*,
    sync::{Arc, ArcBorrow},
};

use super::{Engine, EngineState, Job, ModuleState, RunningGroup, RunningWave, WavePhase};
use crate::{
    context::ContextState,
    job::BoMemory,
    vgsched_core::{
        context_switch::{shared_state_bytes, transfer_cycles, wave_state_bytes},
        grid::{advance_wave, Lane, WaveEnd},
        occupancy::GroupNeeds,
        pool,
        slots::{reschedule, Scratch, SlotChange, SlotEntry, SlotPolicy},
    },
};

/// A stopped wave in a save area.
pub(super) struct SavedWave {
    /// Its index in its work-group.
    pub(super) wave: u32,
    /// Its cycles when it stopped.
    pub(super) cycles: u64,
    /// Its threads.
    pub(super) lanes: KVVec<Lane>,
}

/// A work-group with stopped waves, in its context's save area.
pub(super) struct SavedGroup {
    /// Its job.
    pub(super) job_id: u64,
    /// Its index in the job's grid.
    pub(super) group: u32,
    /// Its dispatch band.
    pub(super) band: u8,
    /// A one-wave piece of a split group (never merged with another).
    pub(super) piece: bool,
    /// What it needs per wave and in shared memory.
    pub(super) needs: GroupNeeds,
    /// Every wave still on the device has been saved: it may be restored.
    pub(super) complete: bool,
    /// Its stopped waves; capacity for all of the group's waves.
    pub(super) waves: KVec<SavedWave>,
}

impl SavedGroup {
    /// What restoring it takes: the group's needs for its saved waves.
    pub(super) fn restore_needs(&self) -> GroupNeeds {
        GroupNeeds { waves: self.waves.len() as u32, ..self.needs }
    }
}

impl Engine {
    /// Takes the slot decision at `now` and carries it out; returns how
    /// many changes it made.
    pub(super) fn reschedule(this: ArcBorrow<'_, Self>, st: &mut EngineState, now: u64) -> usize {
        for q in st.queues.iter_mut() {
            q.entry.cand.runnable = match q.jobs.first_mut() {
                None => false,
                Some(job) => {
                    job.error == 0
                        && (job.groups_running > 0
                            || job.groups_saved > 0
                            || (job.has_groups_to_place() && Self::ready(this, job)))
                }
            };
        }
        let policy = SlotPolicy { formula: st.formula, ..this.sched.policy };
        let EngineState { queues, next_load_seq, slot_cands, slot_changes, slot_chosen, slots_used, .. } = st;
        // Capacity for every channel was reserved with the channel.
        let blank = pool::Candidate { id: 0, priority: 0, created_ns: 0, runtime_ns: 0, runnable: false };
        slot_cands.clear();
        slot_changes.clear();
        for _ in 0..queues.len() {
            let _ = slot_cands.push_within_capacity(blank);
            let _ = slot_changes.push_within_capacity(SlotChange::Evict { index: 0, preempted: false });
            let _ = slot_changes.push_within_capacity(SlotChange::Evict { index: 0, preempted: false });
        }
        let scratch = Scratch { cands: slot_cands, chosen: slot_chosen, changes: slot_changes };
        let n = reschedule(queues, now, &policy, next_load_seq, scratch);
        for change in &slot_changes[..n] {
            match *change {
                SlotChange::Evict { index, preempted } => {
                    let q = &mut queues[index];
                    if let Some(slot) = q.slot.take() {
                        *slots_used &= !(1u64 << slot);
                    }
                    let mut cs = q.ctx.state.lock();
                    cs.slot = None;
                    cs.preemptions += preempted as u64;
                }
                SlotChange::Load { index, .. } => {
                    let q = &mut queues[index];
                    // At most `hw_slots` <= 64 contexts are resident.
                    let slot = (!*slots_used).trailing_zeros();
                    if slot < 64 {
                        *slots_used |= 1u64 << slot;
                        q.slot = Some(slot);
                    }
                    let mut cs = q.ctx.state.lock();
                    cs.slot = q.slot;
                    cs.slices += 1;
                }
                SlotChange::Renew { index, .. } => queues[index].ctx.state.lock().slices += 1,
            }
        }
        n
    }

    /// Handles the running waves that reached their preemption point: a
    /// wave whose job failed is dropped, a wave whose context lost its slot
    /// is saved, the others run on to the next point. Returns how many
    /// waves stopped.
    pub(super) fn advance_waves(&self, st: &mut EngineState, now: u64) -> usize {
        let EngineState { waves, groups, queues, modules, totals, .. } = st;
        let next_point = self.sched.next_point(now);
        let now_cycle = self.topology.ns_to_cycles(now);
        let mut stopped = 0;
        for w in waves.iter_mut().filter(|w| w.phase == WavePhase::Running && w.end_ns <= now) {
            let found = groups[w.slot].as_mut().and_then(|g| {
                let q = queues.iter_mut().find(|q| Arc::ptr_eq(&q.ctx, &g.ctx))?;
                q.jobs.first().is_some_and(|j| j.id == g.job_id).then_some((g, q))
            });
            let Some((g, q)) = found else {
                // Cannot happen (a wave's job is its context's first until
                // it retires); never leave a wave due in the past.
                w.phase = WavePhase::Ended;
                w.end_ns = now;
                stopped += 1;
                continue;
            };
            let Some(job) = q.jobs.first_mut() else { continue };
            let ms = &mut modules[g.module as usize];
            // The chunk that ended at the point stops issuing there.
            let point = w.end_ns;
            ms.power.stop(self.topology.ns_to_cycles(point), now_cycle, w.power_token);
            w.power_token = 0;
            if job.error != 0 {
                w.phase = WavePhase::Ended;
                w.end_ns = now;
                stopped += 1;
                continue;
            }
            let mut cs = q.ctx.state.lock();
            if !q.entry.resident && save_wave(w, g, job, &mut q.saved) {
                let mut bytes = wave_state_bytes(&g.needs, job.spec.grid.threads_per_wave);
                if g.saved_waves == 0 {
                    bytes += shared_state_bytes(&g.needs);
                }
                g.saved_waves += 1;
                let save_ns = self.topology.cycles_to_ns(transfer_cycles(bytes));
                cs.switch_ns += save_ns;
                w.phase = WavePhase::Saving;
                w.end_ns = point.saturating_add(save_ns);
                totals.waves_saved += 1;
                stopped += 1;
                continue;
            }
            // Resident (or its save area could not grow): run on.
            self.run_chunk(w, g, job, ms, &mut cs, &mut q.entry, point, next_point);
        }
        stopped
    }

    /// Interprets wave `w` of group `g` from `from_ns` up to the preemption
    /// point `to_ns`, or to its end if that comes first, and accounts the
    /// time it ran to its context.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run_chunk(
        &self,
        w: &mut RunningWave,
        g: &RunningGroup,
        job: &mut Job,
        ms: &mut ModuleState,
        cs: &mut ContextState,
        entry: &mut SlotEntry,
        from_ns: u64,
        to_ns: u64,
    ) {
        let start = from_ns.max(w.exec_from_ns);
        let until = w.base_cycles + self.topology.ns_to_cycles(to_ns.saturating_sub(w.exec_from_ns));
        let before = w.cycles;
        let mut mem = BoMemory(&job.spec.bindings);
        let limit = self.topology.timeout_cycles();
        let spec = &job.spec;
        let step = advance_wave(&spec.program, &spec.grid, g.group, w.wave, &mut w.lanes, &mut mem, &self.costs, until, limit);
        ms.counters.add(&step.counters);
        w.cycles = step.cycles;
        let end = match step.end {
            None => to_ns,
            Some(_) => w.exec_from_ns + self.topology.cycles_to_ns(step.cycles - w.base_cycles),
        };
        let weighted = self.power_weights.weigh(&step.counters);
        w.power_token = ms.power.start(self.topology.ns_to_cycles(start), weighted, step.cycles - before);
        cs.account(start, end);
        entry.cand.runtime_ns = cs.runtime_ns;
        w.end_ns = end;
        match step.end {
            None => {}
            Some(end) => {
                w.phase = WavePhase::Ended;
                // Waves after a failed one are dropped, so the first
                // failure is the only one.
                match end {
                    WaveEnd::Done => {}
                    WaveEnd::Hung => job.error = ETIME.to_errno(),
                    WaveEnd::Fault { .. } => job.error = EFAULT.to_errno(),
                }
            }
        }
    }
}

/// Moves the threads of wave `w` of group `g` into the save area `saved`.
/// `false` (nothing changed) if the save area cannot grow: the wave then
/// runs on and is saved at a later point.
fn save_wave(w: &mut RunningWave, g: &RunningGroup, job: &mut Job, saved: &mut KVec<SavedGroup>) -> bool {
    let existing = if g.piece {
        None
    } else {
        saved.iter().position(|s| s.job_id == g.job_id && s.group == g.group && !s.complete)
    };
    let index = match existing {
        Some(i) => i,
        None => {
            let Ok(waves) = KVec::with_capacity(g.needs.waves as usize, GFP_KERNEL) else {
                return false;
            };
            let group = SavedGroup {
                job_id: g.job_id,
                group: g.group,
                band: g.band,
                piece: g.piece,
                needs: g.needs,
                complete: false,
                waves,
            };
            if saved.push(group, GFP_KERNEL).is_err() {
                return false;
            }
            job.groups_saved += 1;
            saved.len() - 1
        }
    };
    let waves = &mut saved[index].waves;
    // Capacity for every wave of the group was reserved with the group;
    // checked first so the threads are never moved and then lost.
    if waves.len() == waves.capacity() {
        return false;
    }
    let wave = SavedWave { wave: w.wave, cycles: w.cycles, lanes: core::mem::take(&mut w.lanes) };
    waves.push_within_capacity(wave).is_ok()
}
