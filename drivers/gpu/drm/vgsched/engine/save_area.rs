// SPDX-License-Identifier: GPL-2.0

//! Thread state and the save area of a context's waves.
//!
//! Only a context's active job (its first unfinished one) has waves on the
//! device or runs again from the save area (its jobs run one after the
//! other), so the thread state of its waves belongs to the context, not to
//! each queued job: a [`WaveStore`] holds one array of threads for every
//! wave the context's jobs can have at once (never more than the device's
//! wave slots), the stopped work-groups and the stopped waves. The save
//! area records which job it holds: a job that failed with groups saved is
//! finished at once, but stays in its context's list until its write-back
//! ends, while the next job already runs; what it left is forgotten when
//! another job claims the save area ([`WaveStore::claim`]) or when it is
//! collected, and never restored for another job. It grows at `SUBMIT`, outside
//! the engine lock, to the largest job the context has queued, and goes
//! with the context. A wave placed on the device takes an array and gives
//! it back when it retires; a saved wave keeps it in the save area until
//! it is restored. Nothing here allocates under the engine lock.

use kernel::{
    alloc::kvec::PushError,
    prelude::*,
    warn_on, //
};

use super::{
    RunningGroup,
    RunningWave, //
};
use crate::vgsched_core::{
    context_switch::{
        shared_state_bytes,
        wave_state_bytes, //
    },
    grid::{
        Lane,
        MAX_THREADS_PER_WAVE, //
    },
    occupancy::GroupNeeds,
    progress::JobProgress,
};

/// A stopped wave in its context's save area.
pub(super) struct SavedWave {
    /// Its work-group.
    pub(super) group: u32,
    /// It is a one-wave piece of a split group.
    pub(super) piece: bool,
    /// Its index in its work-group.
    pub(super) wave: u32,
    /// Its cycles when it stopped.
    pub(super) cycles: u64,
    /// Its threads.
    pub(super) lanes: KVVec<Lane>,
}

/// A work-group with stopped waves, in its context's save area.
pub(super) struct SavedGroup {
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
    /// Its state stays in its context's hardware slot (saved at the end of
    /// a turn, in turn): stopping and resuming cost the in-slot switch
    /// time. Cleared, and the copy to memory charged, when the context
    /// leaves its slot.
    pub(super) in_slot: bool,
    /// Its waves in the save area.
    pub(super) waves: u32,
    /// The first of them (lowest index in the group).
    pub(super) first_wave: u32,
}

impl SavedGroup {
    /// Bytes of its saved state: its waves' of `threads` threads each and
    /// the group's shared memory.
    pub(super) fn state_bytes(&self, threads: u32) -> u64 {
        u64::from(self.waves)
            .saturating_mul(wave_state_bytes(&self.needs, threads))
            .saturating_add(shared_state_bytes(&self.needs))
    }

    /// What restoring it takes: the group's needs for its saved waves.
    pub(super) fn restore_needs(&self) -> GroupNeeds {
        GroupNeeds {
            waves: self.waves,
            ..self.needs
        }
    }
}

/// The thread state and save area of one context's waves.
///
/// # Invariants
///
/// - `room` arrays of [`MAX_THREADS_PER_WAVE`] lanes exist for the
///   context: in `free`, held by a wave of its active job on the device,
///   or in `saved_waves`; `free`, `saved` and `saved_waves` have capacity
///   for `room`, so giving an array back or saving a wave never allocates;
/// - `saved` and `saved_waves` belong to the job numbered `owner`; only
///   that job restores from them, and they are emptied before another job
///   saves to them.
pub(super) struct WaveStore {
    /// Thread arrays not in use.
    free: KVec<KVVec<Lane>>,
    /// Stopped work-groups, in the order they were placed; they run again
    /// before anything new.
    pub(super) saved: KVec<SavedGroup>,
    /// Their stopped waves, in the order they stopped.
    pub(super) saved_waves: KVec<SavedWave>,
    /// Waves the context may have on the device and saved at once.
    room: usize,
    /// The job whose waves `saved` and `saved_waves` hold.
    owner: Option<u64>,
}

impl WaveStore {
    /// An empty store: room for no wave. Does not allocate.
    pub(super) const fn new() -> Self {
        Self {
            free: KVec::new(),
            saved: KVec::new(),
            saved_waves: KVec::new(),
            room: 0,
            owner: None,
        }
    }

    /// Makes job `job` (its context's active job) the owner of the save
    /// area: what another job left there is forgotten, its threads free.
    pub(super) fn claim(&mut self, job: u64) {
        if self.owner != Some(job) {
            self.forget_saved();
            self.owner = Some(job);
        }
    }

    /// The stopped work-groups of job `job`, in the order they were placed
    /// (none if the save area holds another job's).
    pub(super) fn saved_of(&self, job: u64) -> &[SavedGroup] {
        match self.owner == Some(job) {
            true => &self.saved,
            false => &[],
        }
    }

    /// [`WaveStore::saved_of`], to change.
    pub(super) fn saved_of_mut(&mut self, job: u64) -> &mut [SavedGroup] {
        match self.owner == Some(job) {
            true => &mut self.saved,
            false => &mut [],
        }
    }

    /// Job `job` was collected: what it left in the save area never runs.
    pub(super) fn collected(&mut self, job: u64) {
        if self.owner == Some(job) {
            self.forget_saved();
            self.owner = None;
        }
    }

    /// The last wave of group `group` (`piece`: a one-wave piece) of job
    /// `job` left the device: the group may be restored.
    pub(super) fn group_off_device(&mut self, job: u64, group: u32, piece: bool) {
        if self.owner != Some(job) {
            return;
        }
        let same = |s: &&mut SavedGroup| s.group == group && s.piece == piece && !s.complete;
        if let Some(s) = self.saved.iter_mut().find(same) {
            s.complete = true;
        }
    }

    /// Waves it has room for.
    pub(super) fn room(&self) -> usize {
        self.room
    }

    /// The room to add to a store with room for `room` so it has room for
    /// `waves`: allocated with `flags` (outside the engine lock), then put
    /// in by [`WaveStore::grow`].
    pub(super) fn growth(room: usize, waves: usize, flags: kernel::alloc::Flags) -> Result<Growth> {
        let mut lanes = KVec::with_capacity(waves, flags)?;
        for _ in room..waves {
            let array = KVVec::with_capacity(MAX_THREADS_PER_WAVE as usize, flags)?;
            lanes.push_within_capacity(array).map_err(|_| ENOMEM)?;
        }
        Ok(Growth {
            waves,
            free: lanes,
            saved: KVec::with_capacity(waves, flags)?,
            saved_waves: KVec::with_capacity(waves, flags)?,
        })
    }

    /// Puts `growth` in, if it is for more waves than the store has room
    /// for; returns what it replaced (to drop outside the lock).
    pub(super) fn grow(&mut self, mut growth: Growth) -> Growth {
        if growth.waves <= self.room {
            return growth;
        }
        // The new vectors have room for every array and saved entry.
        for array in self.free.drain_all() {
            if let Err(PushError(array)) = growth.free.push_within_capacity(array) {
                warn_on!(true);
                drop(array);
            }
        }
        for g in self.saved.drain_all() {
            let _unexpected = growth.saved.push_within_capacity(g);
        }
        for w in self.saved_waves.drain_all() {
            let _unexpected = growth.saved_waves.push_within_capacity(w);
        }
        core::mem::swap(&mut self.free, &mut growth.free);
        core::mem::swap(&mut self.saved, &mut growth.saved);
        core::mem::swap(&mut self.saved_waves, &mut growth.saved_waves);
        core::mem::swap(&mut self.room, &mut growth.waves);
        growth
    }

    /// Thread arrays for `waves` new waves are free.
    pub(super) fn has_free(&self, waves: usize) -> bool {
        self.free.len() >= waves
    }

    /// A thread array for a new wave of `threads` threads, all at their
    /// start; `None` if none is free.
    pub(super) fn take_fresh(&mut self, threads: u32) -> Option<KVVec<Lane>> {
        let mut lanes = self.free.pop()?;
        lanes.clear();
        for _ in 0..threads.min(MAX_THREADS_PER_WAVE) {
            // Every array has room for the most threads a wave can have.
            if lanes.push_within_capacity(Lane::default()).is_err() {
                warn_on!(true);
                break;
            }
        }
        Some(lanes)
    }

    /// Gives a wave's thread array back.
    pub(super) fn give_back(&mut self, lanes: KVVec<Lane>) {
        // Room for every array of the store; an array from elsewhere (a
        // wave that never had one holds an empty vector) is just dropped.
        if lanes.capacity() == MAX_THREADS_PER_WAVE as usize {
            let _unexpected = self.free.push_within_capacity(lanes);
        }
    }

    /// Forgets what the save area holds, its threads free.
    fn forget_saved(&mut self) {
        self.saved.clear();
        while let Some(w) = self.saved_waves.pop() {
            self.give_back(w.lanes);
        }
    }

    /// Nothing of job `job` is on the device, as far as the save area
    /// knows: every group of it saved has all its waves off the device.
    pub(super) fn all_saved_complete(&self, job: u64) -> bool {
        self.saved_of(job).iter().all(|s| s.complete)
    }

    /// Moves the threads of wave `w` of group `g` (of the context's active
    /// job) into the save area. `false` (nothing changed) if it is full:
    /// the wave then runs on and is saved at a later point. `in_slot`: the
    /// state stays in the context's hardware slot.
    pub(super) fn save_wave(
        &mut self,
        w: &mut RunningWave,
        g: &RunningGroup,
        progress: &mut JobProgress,
        in_slot: bool,
    ) -> bool {
        self.claim(g.job_id);
        if self.saved_waves.len() >= self.saved_waves.capacity() {
            return false;
        }
        let existing = if g.piece {
            None
        } else {
            self.saved
                .iter()
                .position(|s| s.group == g.group && !s.piece && !s.complete)
        };
        let index = match existing {
            Some(i) => i,
            None => {
                let group = SavedGroup {
                    group: g.group,
                    band: g.band,
                    piece: g.piece,
                    needs: g.needs,
                    complete: false,
                    in_slot,
                    waves: 0,
                    first_wave: w.wave,
                };
                // Room first, so the count and the list cannot disagree.
                if self.saved.len() >= self.saved.capacity() || progress.start_saving().is_err() {
                    return false;
                }
                if self.saved.push_within_capacity(group).is_err() {
                    warn_on!(true);
                    return false;
                }
                self.saved.len() - 1
            }
        };
        let wave = SavedWave {
            group: g.group,
            piece: g.piece,
            wave: w.wave,
            cycles: w.cycles,
            lanes: core::mem::take(&mut w.lanes),
        };
        match self.saved_waves.push_within_capacity(wave) {
            Ok(()) => {
                if let Some(s) = self.saved.get_mut(index) {
                    s.waves += 1;
                    s.first_wave = s.first_wave.min(w.wave);
                    s.in_slot &= in_slot;
                }
                true
            }
            Err(PushError(wave)) => {
                // Room was checked first; put the threads back.
                w.lanes = wave.lanes;
                false
            }
        }
    }
}

/// Room allocated for a [`WaveStore`] to grow into.
pub(super) struct Growth {
    waves: usize,
    free: KVec<KVVec<Lane>>,
    saved: KVec<SavedGroup>,
    saved_waves: KVec<SavedWave>,
}
