// SPDX-License-Identifier: GPL-2.0

//! What debugfs shows of the engine (`debugfs.rs`): its state, the
//! contexts as the slot scheduler sees them, the resource bitmaps of every
//! module and the placements of the last dispatched work-groups.
//!
//! Every view is taken in two steps, so that a reader neither formats text
//! nor allocates while it holds the engine's lock, and never changes what
//! it reads:
//!
//! 1. under the engine lock, plain numbers are copied into a snapshot
//!    whose room was allocated before the lock was taken. Should the
//!    engine have grown past that room meanwhile (more queues, jobs or
//!    contexts), the lock is dropped, the room enlarged and the copy
//!    retried, a few times at most ([`EAGAIN`] after that);
//! 2. the snapshot is formatted after the lock is dropped. Derived figures
//!    that would advance state (a module's recent power brought up to
//!    now) are computed on the snapshot's copy.
//!
//! The `state` file is read a record at a time ([`StateRecord`]: its
//! head, one context and its jobs, its tail), each taken in these two
//! steps on its own, so that one hold copies one context's jobs at most
//! (a bounded number), however many contexts have jobs queued.
//!
//! The engine lock's meter ([`LockHolds`]) is the exception: its atomics
//! are read without the lock, so that the file that reports the lock's
//! holds makes none.

use kernel::{
    alloc::{
        kvec::Vec,
        Allocator, //
    },
    fmt,
    prelude::*, //
};

use super::{
    memory::{
        StageRecord,
        STAGE_LOG_ENTRIES, //
    },
    Engine, //
};
use crate::gpu::{
    exec::ExecStats,
    Backend, //
};
use crate::vgsched_core::{
    exec::Counters,
    isa::NUM_CLASSES,
    module_choice::PowerWindow,
    occupancy::{
        GroupNeeds,
        MapLayout,
        Occupancy,
        Placement, //
    },
    pool::Weight,
    tiles::{
        Policy,
        TilePlacement, //
    },
    topology::Topology, //
};

/// Placements debugfs keeps: enough for a test or a person to follow a
/// few hundred dispatch decisions.
const LOG_ENTRIES: usize = 512;

/// One dispatched work-group (or piece of a split one) and where it went.
#[derive(Clone, Copy)]
pub(super) struct PlacementRecord {
    /// When it was placed (modeled = monotonic nanoseconds).
    pub(super) time_ns: u64,
    /// Client (open file) of its context.
    pub(super) client: u64,
    /// Context id within the client.
    pub(super) ctx: u32,
    /// Job sequence number in the context.
    pub(super) seqno: u64,
    /// Work-group index in the job's grid.
    pub(super) group: u32,
    /// Index in the work-group of the first wave placed.
    pub(super) first_wave: u32,
    /// Priority band it was dispatched at.
    pub(super) band: u8,
    /// What it holds.
    pub(super) needs: GroupNeeds,
    /// Where.
    pub(super) placement: Placement,
}

/// The tiles a job got when its first work-group was about to be placed,
/// and why: the nodes that could take it, in the order tried.
#[derive(Clone, Copy)]
pub(super) struct TileRecord {
    /// When (modeled = monotonic nanoseconds).
    pub(super) time_ns: u64,
    /// Client (open file) of its context.
    pub(super) client: u64,
    /// Context id within the client.
    pub(super) ctx: u32,
    /// Job sequence number in the context.
    pub(super) seqno: u64,
    /// Tiles it asked for.
    pub(super) k: u32,
    /// The policy in force.
    pub(super) policy: Policy,
    /// What it got.
    pub(super) placement: TilePlacement,
}

/// A change of slot selection, as the placement log shows it.
#[derive(Clone, Copy)]
pub(super) enum SlotEvent {
    /// Loaded into a slot; in turn, `slice_ns` is its turn in the round.
    Load { slice_ns: u64 },
    /// In turn: its turn begins.
    Turn { slice_ns: u64 },
    /// Left its slot, stopped with work left (`preempted`) or idle.
    Evict { preempted: bool },
}

/// One entry of the placement log: a placement, or a change of slot
/// selection between them.
///
/// Entries live in a ring allocated once, so every entry has the size of
/// the largest record (a placement or a tile choice); boxing those would
/// allocate on the signalling path.
#[derive(Clone, Copy)]
pub(super) enum LogRecord {
    /// A work-group (or piece) was placed.
    Placement(PlacementRecord),
    /// A context was loaded, got its turn or left its slot.
    Slot {
        time_ns: u64,
        client: u64,
        ctx: u32,
        slot: Option<u32>,
        event: SlotEvent,
    },
    /// In turn: stage 1 selected again, a new round begins.
    Round { time_ns: u64 },
    /// A job got its tiles.
    Tiles(TileRecord),
}

impl LogRecord {
    /// Context `q` had slot event `event` at `time_ns`.
    pub(super) fn slot(time_ns: u64, q: &super::ContextQueue, event: SlotEvent) -> Self {
        Self::Slot {
            time_ns,
            client: q.ctx.client,
            ctx: q.ctx.id,
            slot: q.slot,
            event,
        }
    }

    /// A new round began at `time_ns`.
    pub(super) fn round(time_ns: u64) -> Self {
        Self::Round { time_ns }
    }
}

/// A ring of the last `N` records of a log, allocated once.
///
/// # Invariants
///
/// `entries.len() <= N`; once full, the oldest entry is at `total % N`.
pub(super) struct Ring<T: Copy, const N: usize> {
    entries: KVVec<T>,
    /// Records since load.
    total: u64,
}

/// The placement log: the last [`LOG_ENTRIES`] placements and slot events.
pub(super) type PlacementLog = Ring<LogRecord, LOG_ENTRIES>;

impl<T: Copy, const N: usize> Ring<T, N> {
    /// An empty log with room for all its entries.
    pub(super) fn new() -> Result<Self> {
        Ok(Self {
            entries: KVVec::with_capacity(N, GFP_KERNEL)?,
            total: 0,
        })
    }

    /// Adds a record, replacing the oldest when full. Never allocates.
    pub(super) fn record(&mut self, r: T) {
        let at = (self.total % N as u64) as usize;
        if self.entries.len() < N {
            // The log was created with room for all its entries.
            kernel::warn_on!(self.entries.push_within_capacity(r).is_err());
        } else if let Some(slot) = self.entries.get_mut(at) {
            *slot = r;
        }
        self.total = self.total.wrapping_add(1);
    }

    /// Copies the records, oldest first, into `out` (which has room for
    /// `N`); returns the number of the first.
    pub(super) fn copy_into(&self, out: &mut KVVec<T>) -> u64 {
        let n = self.entries.len();
        let oldest = if n < N {
            0
        } else {
            (self.total % N as u64) as usize
        };
        let (newer, older) = self.entries.split_at(oldest.min(n));
        for r in Iterator::chain(older.iter(), newer.iter()) {
            if out.push_within_capacity(*r).is_err() {
                break;
            }
        }
        self.total.saturating_sub(n as u64)
    }
}

/// Writes `bits` of a map as `#` (in use) and `.` (free).
fn write_map(f: &mut fmt::Formatter<'_>, map: &[u64], bits: u32) -> fmt::Result {
    for i in 0..bits as usize {
        let used = map.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1);
        f.write_str(if used { "#" } else { "." })?;
    }
    Ok(())
}

/// Times a snapshot is retried when the engine outgrew its room.
const SNAPSHOT_TRIES: usize = 4;

/// Copies `src` into `dst` (of the same length, checked by the caller).
fn copy_words<T: Copy>(dst: &mut [T], src: &[T]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = *s;
    }
}

/// Makes room for `needed` more items than `v` holds now (it is empty).
fn make_room<T, A: Allocator>(v: &mut Vec<T, A>, needed: usize) -> Result {
    v.clear();
    v.reserve(needed, GFP_KERNEL)?;
    Ok(())
}

/// One execution module's dispatch state.
struct ModuleSnapshot {
    pointer_shift: u32,
    /// A copy of the module's window, brought up to the snapshot's time
    /// once the lock is dropped.
    power: PowerWindow,
    counters: Counters,
    /// Blocks in use: vector, scalar, shared; and waves (from the maps).
    used: (u32, u32, u32, u32),
}

/// One context with queued work.
#[derive(Clone, Copy)]
struct QueueSnapshot {
    client: u64,
    id: u32,
    priority: u32,
    jobs: usize,
    slot: Option<u32>,
    slice_end_ns: u64,
    saved: usize,
}

/// One queued or running job.
#[derive(Clone, Copy)]
struct JobSnapshot {
    seqno: u64,
    next_group: u32,
    groups: u32,
    running: u32,
    band: u8,
    error: i32,
    independent: bool,
    split: bool,
    waits: bool,
}

/// The engine lock's meter: the `lock_holds` file, and its line in
/// `state`. Read without the lock (the meter's own atomics), so reading it
/// neither waits for a hold nor makes one; a hold that ends during the read
/// may show in some of the numbers and not in others.
pub(crate) struct LockHolds {
    max_ns: u64,
    max_at: Option<&'static core::panic::Location<'static>>,
    mean_ns: u64,
    /// Holds since load, and how many of them lasted over a millisecond.
    count: (u64, u64),
}

impl fmt::Display for LockHolds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lock_hold_max_us: {}", self.max_ns / 1000)?;
        if let Some(at) = self.max_at {
            write!(f, " (taken at {}:{})", at.file(), at.line())?;
        }
        let (holds, slow) = self.count;
        writeln!(
            f,
            ", mean {} us, {slow} of {holds} holds over 1000 us",
            self.mean_ns / 1000
        )
    }
}

/// One record of the `state` file ([`Engine::state_record`]): the file is
/// read a record at a time, so that no reader copies every queued job in
/// one hold of the engine lock.
pub(crate) enum StateRecord<'a> {
    /// The device, the totals, the dispatcher, the modules and the slots.
    Head(StateHead<'a>),
    /// One context and its jobs.
    Context(ContextRecord),
    /// The work on the device, the lock's meter, submissions and the
    /// device's own work.
    Tail(StateTail),
}

/// The head of `state`: everything but the contexts and the tail.
pub(crate) struct StateHead<'a> {
    engine: &'a Engine,
    totals: super::Totals,
    promoted: u8,
    failed_ns: u64,
    maps: KVVec<u64>,
    unit_waves: KVec<u32>,
    modules: KVec<ModuleSnapshot>,
    slots_held: u32,
    formula: &'static str,
}

/// One context of `state`, with its jobs.
pub(crate) struct ContextRecord {
    now: u64,
    queue: QueueSnapshot,
    jobs: KVVec<JobSnapshot>,
}

/// The tail of `state`.
pub(crate) struct StateTail {
    groups_on_device: usize,
    waves_on_device: usize,
    /// How long waves stalled in all, the device computing their chunks
    /// after the chunks' modeled ends.
    stalled_ns: u64,
    holds: LockHolds,
    /// Mean time of a job queued by the engine, and how many were.
    submit_mean_ns: (u64, u64),
    /// The device's work, and whether the device is the mock.
    exec: ExecStats,
    mock: bool,
}

/// The `contexts` file: one line per live context.
#[derive(Clone, Copy)]
struct ContextSnapshot {
    client: u64,
    id: u32,
    priority: u32,
    created_ns: u64,
    runtime_ns: u64,
    slot: Option<u32>,
    slices: u64,
    preemptions: u64,
    switch_ns: u64,
    in_flight: u64,
    /// Slot selection's weight of it.
    weight: Weight,
    /// It may run now (its turn, in turn).
    turn: bool,
}

/// The `contexts` file.
pub(crate) struct ContextsSnapshot {
    now: u64,
    contexts: KVVec<ContextSnapshot>,
}

/// The `occupancy` file: copies of the resource bitmaps.
pub(crate) struct OccupancySnapshot<'a> {
    engine: &'a Engine,
    maps: KVVec<u64>,
    unit_waves: KVec<u32>,
}

/// The text of an [`OccupancySnapshot`]: a view over its copies.
pub(crate) struct OccupancyText<'a> {
    topology: &'a Topology,
    occ: Occupancy<'a>,
}

impl OccupancySnapshot<'_> {
    /// The text of the snapshot.
    pub(crate) fn text(&mut self) -> Result<OccupancyText<'_>> {
        let topology = &self.engine.topology;
        let occ = Occupancy::new(topology, &mut self.maps, &mut self.unit_waves).ok_or(EINVAL)?;
        Ok(OccupancyText { topology, occ })
    }
}

/// The `stages` file: the last stage starts and ends, in the order they
/// were recorded.
pub(crate) struct StagesSnapshot {
    first_number: u64,
    records: KVVec<StageRecord>,
}

impl fmt::Display for StagesSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.records.iter().enumerate() {
            let n = self.first_number.saturating_add(i as u64);
            writeln!(
                f,
                "#{n} t={} client={} ctx={} job={} {}",
                r.time_ns,
                r.client,
                r.ctx,
                r.seqno,
                r.event.name()
            )?;
        }
        Ok(())
    }
}

/// The `placements` file: the last placements, oldest first.
pub(crate) struct PlacementsSnapshot {
    first_number: u64,
    records: KVVec<LogRecord>,
}

impl Engine {
    /// Room for copies of the resource maps, filled under the lock.
    fn map_room(&self) -> Result<(KVVec<u64>, KVec<u32>)> {
        let st = &self.topology;
        let words = MapLayout::new(st).total_words(st);
        Ok((
            KVVec::from_elem(0, words, GFP_KERNEL)?,
            KVec::from_elem(0, st.total_units() as usize, GFP_KERNEL)?,
        ))
    }

    /// The engine lock's meter, now.
    pub(crate) fn lock_holds_snapshot(&self) -> LockHolds {
        LockHolds {
            max_ns: self.lock_hold_max_ns(),
            max_at: self.lock_hold_max_at(),
            mean_ns: self.lock_hold_mean_ns(),
            count: self.lock_holds(),
        }
    }

    /// How many records the `state` file has now: its head, one per
    /// context and its tail.
    pub(crate) fn state_records(&self) -> usize {
        self.lock().queues.len().saturating_add(2)
    }

    /// Record `index` of the `state` file ([`Self::state_records`]), as
    /// the engine is now: the head, context `index - 1`, or the tail just
    /// past the last context; `None` further on (contexts went away since
    /// the count). A hold of the engine lock copies one context's jobs at
    /// most.
    pub(crate) fn state_record(&self, index: usize) -> Result<Option<StateRecord<'_>>> {
        if index == 0 {
            return self.state_head().map(|h| Some(StateRecord::Head(h)));
        }
        let mut jobs = KVVec::new();
        let mut want = 16;
        for _ in 0..SNAPSHOT_TRIES {
            make_room(&mut jobs, want)?;
            let st = self.lock();
            let Some(q) = st.queues.get(index - 1) else {
                if index != st.queues.len().saturating_add(1) {
                    return Ok(None);
                }
                let groups_on_device = st.groups.iter().filter(|g| g.is_some()).count();
                let waves_on_device = st.waves.len();
                let stalled_ns = st.totals.stalled_ns;
                drop(st);
                return Ok(Some(StateRecord::Tail(StateTail {
                    groups_on_device,
                    waves_on_device,
                    stalled_ns,
                    holds: self.lock_holds_snapshot(),
                    submit_mean_ns: self.submit_mean_ns(),
                    exec: self.exec.stats(),
                    mock: self.exec.mock().is_some(),
                })));
            };
            if q.jobs.len() > jobs.capacity() {
                want = q.jobs.len();
                continue;
            }
            let queue = QueueSnapshot {
                client: q.ctx.client,
                id: q.ctx.id,
                priority: q.ctx.priority,
                jobs: q.jobs.len(),
                slot: q.slot,
                slice_end_ns: q.entry.slice_end_ns,
                saved: q.store.saved.len(),
            };
            for job in q.jobs.iter() {
                let js = JobSnapshot {
                    seqno: job.seqno,
                    next_group: job.progress.next_group(),
                    groups: job.spec.grid.groups,
                    running: job.progress.running(),
                    band: job.spec.band,
                    error: job.progress.error(),
                    independent: job.spec.independent,
                    split: job.progress.split().is_some(),
                    waits: job.spec.in_fence.is_some() || job.spec.deps.is_some(),
                };
                jobs.push_within_capacity(js).map_err(|_| ENOMEM)?;
            }
            let now = crate::context::monotonic_ns();
            drop(st);
            return Ok(Some(StateRecord::Context(ContextRecord {
                now,
                queue,
                jobs,
            })));
        }
        Err(EAGAIN)
    }

    /// The head of `state`: it copies what the device's size bounds, and
    /// counts the slot holders among the working contexts.
    fn state_head(&self) -> Result<StateHead<'_>> {
        let (maps, unit_waves) = self.map_room()?;
        let mut head = StateHead {
            engine: self,
            totals: super::Totals::default(),
            promoted: 0,
            failed_ns: 0,
            maps,
            unit_waves,
            modules: KVec::with_capacity(self.topology.modules as usize, GFP_KERNEL)?,
            slots_held: 0,
            formula: "",
        };
        let st = self.lock();
        let now = crate::context::monotonic_ns();
        head.totals = st.totals;
        head.promoted = st.debts.promoted(&self.rotation, now);
        head.failed_ns = st.trigger.failed(now);
        if head.maps.len() != st.resources.maps.len()
            || head.unit_waves.len() != st.resources.unit_waves.len()
        {
            return Err(EINVAL);
        }
        copy_words(&mut head.maps, &st.resources.maps);
        copy_words(&mut head.unit_waves, &st.resources.unit_waves);
        for ms in st.modules.iter() {
            let m = ModuleSnapshot {
                pointer_shift: ms.pointer.shift(self.topology.units_per_module),
                power: ms.power.clone(),
                counters: ms.counters,
                used: (0, 0, 0, 0),
            };
            head.modules.push_within_capacity(m).map_err(|_| ENOMEM)?;
        }
        // Every slot holder is a working context.
        head.slots_held = st
            .working
            .iter()
            .filter_map(|i| st.queues.get(i))
            .filter(|q| q.slot.is_some())
            .count() as u32;
        head.formula = st.slots.formula.name();
        drop(st);
        // What follows only reads and changes the copies.
        let now_cycle = self.topology.ns_to_cycles(now);
        let occ =
            Occupancy::new(&self.topology, &mut head.maps, &mut head.unit_waves).ok_or(EINVAL)?;
        for (m, ms) in head.modules.iter_mut().enumerate() {
            ms.used = occ.used(m as u32);
            ms.power.advance(now_cycle);
        }
        Ok(head)
    }

    /// Snapshot of every live context.
    pub(crate) fn contexts_snapshot(&self) -> Result<ContextsSnapshot> {
        let mut snap = ContextsSnapshot {
            now: 0,
            contexts: KVVec::new(),
        };
        let mut want = 16;
        for _ in 0..SNAPSHOT_TRIES {
            make_room(&mut snap.contexts, want)?;
            let st = self.lock();
            if st.queues.len() > snap.contexts.capacity() {
                want = st.queues.len();
                continue;
            }
            snap.now = crate::context::monotonic_ns();
            for q in st.queues.iter() {
                let c = ContextSnapshot {
                    client: q.ctx.client,
                    id: q.ctx.id,
                    priority: q.ctx.priority,
                    created_ns: q.ctx.created_ns,
                    runtime_ns: q.runtime_ns(),
                    slot: q.slot,
                    slices: q.slices,
                    preemptions: q.preemptions,
                    switch_ns: q.switch_ns,
                    in_flight: q.jobs.len() as u64,
                    weight: q.entry.weight(snap.now),
                    turn: q.entry.turn,
                };
                snap.contexts.push_within_capacity(c).map_err(|_| ENOMEM)?;
            }
            return Ok(snap);
        }
        Err(EAGAIN)
    }

    /// Snapshot of the resource bitmaps.
    pub(crate) fn occupancy_snapshot(&self) -> Result<OccupancySnapshot<'_>> {
        let (mut maps, mut unit_waves) = self.map_room()?;
        let st = self.lock();
        if maps.len() != st.resources.maps.len()
            || unit_waves.len() != st.resources.unit_waves.len()
        {
            return Err(EINVAL);
        }
        copy_words(&mut maps, &st.resources.maps);
        copy_words(&mut unit_waves, &st.resources.unit_waves);
        drop(st);
        Ok(OccupancySnapshot {
            engine: self,
            maps,
            unit_waves,
        })
    }

    /// Snapshot of the stage log.
    pub(crate) fn stages_snapshot(&self) -> Result<StagesSnapshot> {
        let mut records = KVVec::with_capacity(STAGE_LOG_ENTRIES, GFP_KERNEL)?;
        let first_number = self.lock().stages.copy_into(&mut records);
        Ok(StagesSnapshot {
            first_number,
            records,
        })
    }

    /// Snapshot of the placement log.
    pub(crate) fn placements_snapshot(&self) -> Result<PlacementsSnapshot> {
        let mut records = KVVec::with_capacity(LOG_ENTRIES, GFP_KERNEL)?;
        let first_number = self.lock().log.copy_into(&mut records);
        Ok(PlacementsSnapshot {
            first_number,
            records,
        })
    }
}

impl fmt::Display for StateHead<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = self.engine;
        let t = &e.topology;
        writeln!(
            f,
            "device: {} modules x {} units, clock {} kHz, job timeout {} ms",
            t.modules, t.units_per_module, t.clock_khz, t.job_timeout_ms
        )?;
        let tot = &self.totals;
        writeln!(
            f,
            "jobs: done {} faulted {} hung {} cancelled {}",
            tot.jobs_done, tot.jobs_faulted, tot.jobs_hung, tot.jobs_cancelled
        )?;
        let p = &e.params;
        writeln!(
            f,
            "dispatcher: module choice {:?}, finder {:?}, rotation period {} cycles (band {} promoted now), split after {} failed rounds (failed now {} ns), dispatched {} split {}, modules claimed {}",
            p.choice,
            p.finder,
            p.rotation_period_cycles,
            self.promoted,
            p.split_after_rounds,
            self.failed_ns,
            tot.groups_dispatched,
            tot.groups_split,
            tot.claims
        )?;
        writeln!(
            f,
            "per module: blocks in use vgpr/{} sgpr/{} shared/{} waves/{}, split pointer, recent power; instructions per class: move alu load store matrix compare jump",
            t.vgpr_blocks * t.units_per_module,
            t.sgpr_blocks * t.units_per_module,
            t.shared_mem_blocks,
            t.wave_slots * t.units_per_module
        )?;
        for (m, ms) in self.modules.iter().enumerate() {
            let (vgpr, sgpr, shared, waves) = ms.used;
            write!(
                f,
                "module {m}: vgpr {vgpr} sgpr {sgpr} shared {shared} waves {waves}, pointer {}, power {}, instructions",
                ms.pointer_shift,
                ms.power.recent()
            )?;
            for class in 0..NUM_CLASSES {
                write!(f, " {}", ms.counters.per_class[class])?;
            }
            writeln!(f)?;
        }
        let sp = &e.sched.policy;
        writeln!(
            f,
            "slots: {} of {} held, mode {}, weights {}, formula {}, t0 {} us (slices {}..={} us), in-slot switch {} us, preemption point every {} us, waves saved {} (stopped at once {}) groups restored {}",
            self.slots_held,
            sp.slots,
            sp.mode.name(),
            sp.history.name(),
            self.formula,
            sp.slice.t0_ns / 1000,
            sp.slice.min_ns / 1000,
            sp.slice.max_ns / 1000,
            e.sched.slot_switch_ns / 1000,
            e.sched.preemption_ns / 1000,
            tot.waves_saved,
            tot.waves_stopped_at_once,
            tot.groups_restored
        )?;
        Ok(())
    }
}

impl fmt::Display for ContextRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q = &self.queue;
        write!(
            f,
            "context client {} id {} priority {}: {} jobs queued, ",
            q.client, q.id, q.priority, q.jobs
        )?;
        match q.slot {
            Some(slot) => write!(
                f,
                "slot {slot}, slice ends in {} us",
                q.slice_end_ns.saturating_sub(self.now) / 1000
            )?,
            None => write!(f, "no slot")?,
        }
        writeln!(f, ", {} groups saved", q.saved)?;
        for job in self.jobs.iter() {
            writeln!(
                f,
                "  job seqno {}: groups {}/{} placed, {} running, band {}, error {}{}{}{}",
                job.seqno,
                job.next_group,
                job.groups,
                job.running,
                job.band,
                job.error,
                if job.independent { ", independent" } else { "" },
                if job.split { ", split" } else { "" },
                if job.waits { ", waits for a fence" } else { "" }
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for StateTail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "work-groups on the device: {}, waves: {}, waves stalled {} us in all",
            self.groups_on_device,
            self.waves_on_device,
            self.stalled_ns / 1000
        )?;
        fmt::Display::fmt(&self.holds, f)?;
        let (mean, jobs) = self.submit_mean_ns;
        writeln!(f, "engine_submit_ns: {mean} mean over {jobs} submissions")?;
        let x = &self.exec;
        let device = match self.mock {
            false => "virtual GPU",
            true => "mock (backend=1)",
        };
        writeln!(f, "device: {device}")?;
        writeln!(
            f,
            "executor: {} instructions in {} pieces, {} us interpreting, longest piece {} us, {} yields, {} stops, longest stop wait {} us",
            x.instructions,
            x.pieces,
            x.busy_ns / 1000,
            x.piece_max_ns / 1000,
            x.yields,
            x.stops,
            x.stop_wait_max_ns / 1000
        )
    }
}

impl fmt::Display for ContextsSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "# client ctx priority lifetime_ns runtime_ns weight_milli slot slices preemptions switch_ns jobs_in_flight turn"
        )?;
        for c in self.contexts.iter() {
            let weight = c.weight;
            write!(
                f,
                "{} {} {} {} {} ",
                c.client,
                c.id,
                c.priority,
                self.now.saturating_sub(c.created_ns),
                c.runtime_ns
            )?;
            match weight.is_infinite() {
                true => write!(f, "inf ")?,
                false => write!(f, "{} ", weight.milli())?,
            }
            match c.slot {
                Some(slot) => write!(f, "{slot} ")?,
                None => write!(f, "- ")?,
            }
            writeln!(
                f,
                "{} {} {} {} {}",
                c.slices,
                c.preemptions,
                c.switch_ns,
                c.in_flight,
                u8::from(c.turn)
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for OccupancyText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (t, occ) = (self.topology, &self.occ);
        for m in 0..t.modules {
            write!(f, "module {m} shared ")?;
            write_map(f, occ.shared_map(m), t.shared_mem_blocks)?;
            writeln!(f)?;
            for u in 0..t.units_per_module {
                write!(
                    f,
                    "  unit {u} waves {}/{} vgpr ",
                    occ.unit_waves(m, u),
                    t.wave_slots
                )?;
                write_map(f, occ.vgpr_map(m, u), t.vgpr_blocks)?;
                write!(f, " sgpr ")?;
                write_map(f, occ.sgpr_map(m, u), t.sgpr_blocks)?;
                writeln!(f)?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for PlacementsSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.records.iter().enumerate() {
            let n = self.first_number.saturating_add(i as u64);
            let r = match r {
                LogRecord::Placement(r) => r,
                LogRecord::Round { time_ns } => {
                    writeln!(f, "#{n} t={time_ns} round")?;
                    continue;
                }
                LogRecord::Tiles(r) => {
                    let p = &r.placement;
                    write!(
                        f,
                        "#{n} t={} tiles client={} ctx={} job={} k={} policy={} node={} mask={:#x} start={} woken={} order=",
                        r.time_ns,
                        r.client,
                        r.ctx,
                        r.seqno,
                        r.k,
                        r.policy.name(),
                        p.node,
                        p.mask,
                        p.start_ns,
                        p.woken
                    )?;
                    // Each candidate as node:idle tiles:power it was ordered by.
                    for (i, c) in p.order.iter().take(p.candidates as usize).enumerate() {
                        let sep = if i == 0 { "" } else { "," };
                        write!(f, "{sep}{}:{}:{}", c.node, c.idle, c.power_mw)?;
                    }
                    writeln!(f)?;
                    continue;
                }
                LogRecord::Slot {
                    time_ns,
                    client,
                    ctx,
                    slot,
                    event,
                } => {
                    let (name, us) = match *event {
                        SlotEvent::Load { slice_ns } => ("load", Some(slice_ns / 1000)),
                        SlotEvent::Turn { slice_ns } => ("turn", Some(slice_ns / 1000)),
                        SlotEvent::Evict { preempted: true } => ("preempt", None),
                        SlotEvent::Evict { preempted: false } => ("leave", None),
                    };
                    write!(f, "#{n} t={time_ns} {name} client={client} ctx={ctx}")?;
                    if let Some(slot) = slot {
                        write!(f, " slot={slot}")?;
                    }
                    if let Some(us) = us {
                        write!(f, " slice_us={us}")?;
                    }
                    writeln!(f)?;
                    continue;
                }
            };
            let p = &r.placement;
            write!(
                f,
                "#{n} t={} client={} ctx={} job={} group={} waves={}+{} band={} module={} shared={}+{}",
                r.time_ns,
                r.client,
                r.ctx,
                r.seqno,
                r.group,
                r.first_wave,
                r.needs.waves,
                r.band,
                p.module,
                p.shared_start,
                r.needs.shared
            )?;
            for w in p.waves.iter().take(r.needs.waves as usize) {
                write!(
                    f,
                    " w={}:{}+{}:{}+{}",
                    w.unit, w.vgpr_start, r.needs.wave.vgpr, w.sgpr_start, r.needs.wave.sgpr
                )?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
