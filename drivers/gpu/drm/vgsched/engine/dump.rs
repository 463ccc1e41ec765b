// SPDX-License-Identifier: GPL-2.0

//! What debugfs shows of the engine: its state, the contexts as the slot
//! scheduler sees them, the resource bitmaps of every module and the
//! placements of the last dispatched work-groups; and the one setting that
//! can change at run time, the slice formula.

use core::fmt;

use kernel::{debugfs::Reader, prelude::*, sync::Arc, uaccess::UserSliceReader};

use super::Engine;
use crate::vgsched_core::{
    isa::NUM_CLASSES,
    occupancy::{GroupNeeds, Placement},
    pool::Weight,
    slice::SliceFormula,
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

/// A ring of the last [`LOG_ENTRIES`] placements.
///
/// # Invariants
///
/// `entries.len() <= LOG_ENTRIES`; once full, the oldest entry is at
/// `total % LOG_ENTRIES`.
pub(super) struct PlacementLog {
    entries: KVVec<PlacementRecord>,
    /// Placements recorded since load.
    total: u64,
}

impl PlacementLog {
    /// An empty log with room for all its entries.
    pub(super) fn new() -> Result<Self> {
        Ok(Self { entries: KVVec::with_capacity(LOG_ENTRIES, GFP_KERNEL)?, total: 0 })
    }

    /// Adds a placement, replacing the oldest when full. Never allocates.
    pub(super) fn record(&mut self, r: PlacementRecord) {
        let at = (self.total % LOG_ENTRIES as u64) as usize;
        if self.entries.len() < LOG_ENTRIES {
            let _ = self.entries.push_within_capacity(r);
        } else {
            self.entries[at] = r;
        }
        self.total += 1;
    }

    /// The recorded placements, oldest first, with their numbers.
    fn iter(&self) -> impl Iterator<Item = (u64, &PlacementRecord)> {
        let n = self.entries.len();
        let oldest = if n < LOG_ENTRIES { 0 } else { (self.total % LOG_ENTRIES as u64) as usize };
        let first_number = self.total - n as u64;
        (0..n).map(move |i| (first_number + i as u64, &self.entries[(oldest + i) % n]))
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

impl Engine {
    /// The general state: totals, dispatcher, per-module use and queues.
    fn dump(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut guard = self.lock();
        let st = &mut *guard;
        let t = &self.topology;
        let now = crate::context::monotonic_ns();
        writeln!(
            f,
            "device: {} modules x {} units, clock {} kHz, job timeout {} ms",
            t.modules, t.units_per_module, t.clock_khz, t.job_timeout_ms
        )?;
        writeln!(f, "lock_hold_max_us: {}", self.lock_hold_max_ns() / 1000)?;
        let tot = &st.totals;
        writeln!(
            f,
            "jobs: done {} faulted {} hung {} cancelled {}",
            tot.jobs_done, tot.jobs_faulted, tot.jobs_hung, tot.jobs_cancelled
        )?;
        let p = &self.params;
        writeln!(
            f,
            "dispatcher: module choice {:?}, finder {:?}, rotation period {} cycles (band {} promoted now), split after {} failed rounds (failed now {} ns), dispatched {} split {}",
            p.choice,
            p.finder,
            p.rotation_period_cycles,
            st.debts.promoted(&self.rotation, now),
            p.split_after_rounds,
            st.trigger.failed(now),
            tot.groups_dispatched,
            tot.groups_split
        )?;
        writeln!(
            f,
            "per module: blocks in use vgpr/{} sgpr/{} shared/{} waves/{}, split pointer, recent power; instructions per class: move alu load store matrix compare jump",
            t.vgpr_blocks * t.units_per_module,
            t.sgpr_blocks * t.units_per_module,
            t.shared_mem_blocks,
            t.wave_slots * t.units_per_module
        )?;
        let super::EngineState { maps, unit_waves, modules, .. } = st;
        let Some(occ) = self.occupancy(maps, unit_waves) else {
            return Ok(());
        };
        for (m, ms) in modules.iter_mut().enumerate() {
            let (vgpr, sgpr, shared, waves) = occ.used(m as u32);
            ms.power.advance(t.ns_to_cycles(now));
            write!(
                f,
                "module {m}: vgpr {vgpr} sgpr {sgpr} shared {shared} waves {waves}, pointer {}, power {}, instructions",
                ms.pointer.shift(t.units_per_module),
                ms.power.recent()
            )?;
            for class in 0..NUM_CLASSES {
                write!(f, " {}", ms.counters.per_class[class])?;
            }
            writeln!(f)?;
        }
        let sp = &self.sched.policy;
        writeln!(
            f,
            "slots: {} of {} held, formula {}, t0 {} us (slices {}..={} us), preemption point every {} us, waves saved {} groups restored {}",
            st.queues.iter().filter(|q| q.slot.is_some()).count(),
            sp.slots,
            st.formula.name(),
            sp.slice.t0_ns / 1000,
            sp.slice.min_ns / 1000,
            sp.slice.max_ns / 1000,
            self.sched.preemption_ns / 1000,
            st.totals.waves_saved,
            st.totals.groups_restored
        )?;
        for q in st.queues.iter() {
            write!(
                f,
                "context client {} id {} priority {}: {} jobs queued, ",
                q.ctx.client,
                q.ctx.id,
                q.ctx.priority,
                q.jobs.len()
            )?;
            match q.slot {
                Some(slot) => write!(f, "slot {slot}, slice ends in {} us", q.entry.slice_end_ns.saturating_sub(now) / 1000)?,
                None => write!(f, "no slot")?,
            }
            writeln!(f, ", {} groups saved", q.jobs.first().map_or(0, |j| j.saved.len()))?;
            for job in q.jobs.iter() {
                writeln!(
                    f,
                    "  job seqno {}: groups {}/{} placed, {} running, band {}, error {}{}{}{}",
                    job.seqno,
                    job.next_group,
                    job.spec.grid.groups,
                    job.groups_running,
                    job.spec.band,
                    job.error,
                    if job.spec.independent { ", independent" } else { "" },
                    if job.split.is_some() { ", split" } else { "" },
                    if job.spec.in_fence.is_some() { ", waits for a fence" } else { "" }
                )?;
            }
        }
        writeln!(
            f,
            "work-groups on the device: {}, waves: {}",
            st.groups.iter().filter(|g| g.is_some()).count(),
            st.waves.len()
        )
    }

    /// One line per live context: the numbers SEEDS A decides by.
    fn dump_contexts(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.lock();
        let now = crate::context::monotonic_ns();
        writeln!(
            f,
            "# client ctx priority lifetime_ns runtime_ns weight_milli slot slices preemptions switch_ns jobs_in_flight"
        )?;
        for q in st.queues.iter() {
            let ctx = &q.ctx;
            let weight = Weight::new(now, ctx.created_ns, q.runtime_ns());
            write!(
                f,
                "{} {} {} {} {} ",
                ctx.client,
                ctx.id,
                ctx.priority,
                now.saturating_sub(ctx.created_ns),
                q.runtime_ns()
            )?;
            match weight.is_infinite() {
                true => write!(f, "inf ")?,
                false => write!(f, "{} ", weight.milli())?,
            }
            match q.slot {
                Some(slot) => write!(f, "{slot} ")?,
                None => write!(f, "- ")?,
            }
            writeln!(f, "{} {} {} {}", q.slices, q.preemptions, q.switch_ns, q.jobs.len())?;
        }
        Ok(())
    }

    /// The resource bitmaps, `#` in use and `.` free.
    fn dump_occupancy(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut guard = self.lock();
        let super::EngineState { maps, unit_waves, .. } = &mut *guard;
        let t = &self.topology;
        let Some(occ) = self.occupancy(maps, unit_waves) else {
            return Ok(());
        };
        for m in 0..t.modules {
            write!(f, "module {m} shared ")?;
            write_map(f, occ.shared_map(m), t.shared_mem_blocks)?;
            writeln!(f)?;
            for u in 0..t.units_per_module {
                write!(f, "  unit {u} waves {}/{} vgpr ", occ.unit_waves(m, u), t.wave_slots)?;
                write_map(f, occ.vgpr_map(m, u), t.vgpr_blocks)?;
                write!(f, " sgpr ")?;
                write_map(f, occ.sgpr_map(m, u), t.sgpr_blocks)?;
                writeln!(f)?;
            }
        }
        Ok(())
    }

    /// The last placements, oldest first, one line each.
    fn dump_placements(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.lock();
        for (n, r) in st.log.iter() {
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
            for w in &p.waves[..r.needs.waves as usize] {
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

/// The debugfs view of an engine: `/sys/kernel/debug/vgsched/state`.
pub(crate) struct EngineDump(pub(crate) Arc<Engine>);

impl fmt::Debug for EngineDump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.dump(f)
    }
}

/// `/sys/kernel/debug/vgsched/occupancy`: every resource bitmap.
pub(crate) struct OccupancyDump(pub(crate) Arc<Engine>);

impl fmt::Debug for OccupancyDump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.dump_occupancy(f)
    }
}

/// `/sys/kernel/debug/vgsched/placements`: the last dispatched
/// work-groups, their modules, units and ranges.
pub(crate) struct PlacementsDump(pub(crate) Arc<Engine>);

impl fmt::Debug for PlacementsDump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.dump_placements(f)
    }
}

/// `/sys/kernel/debug/vgsched/contexts`: every live context with its
/// priority, lifetime, runtime, weight, slot, slices and preemptions.
pub(crate) struct ContextsDump(pub(crate) Arc<Engine>);

impl fmt::Debug for ContextsDump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.dump_contexts(f)
    }
}

/// `/sys/kernel/debug/vgsched/slice_formula`: reads as the formula in use,
/// `proportional` or `literal`; writing either name switches to it for
/// every slice given from then on.
pub(crate) struct SliceFormulaFile(pub(crate) Arc<Engine>);

impl fmt::Debug for SliceFormulaFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.state.lock().formula.name())
    }
}

impl Reader for SliceFormulaFile {
    fn read_from_slice(&self, reader: &mut UserSliceReader) -> Result {
        let mut buf = [0u8; 16];
        let n = reader.len();
        if n > buf.len() {
            return Err(EINVAL);
        }
        reader.read_slice(&mut buf[..n])?;
        let name = core::str::from_utf8(&buf[..n]).map_err(|_| EINVAL)?;
        let formula = SliceFormula::from_name(name).ok_or(EINVAL)?;
        self.0.state.lock().formula = formula;
        Ok(())
    }
}
