// SPDX-License-Identifier: GPL-2.0

//! What a context switch costs and when it may happen (slot selection).
//!
//! Preemption points are a fixed grid of modeled time (`preemption_us`):
//! the engine interprets each running wave up to the next point and no
//! further, so a wave is at an instruction boundary at every point. A
//! context that loses its slot stops its waves at once (`preempt_at_once`,
//! the default: the chunk interpreted ahead is taken back and run again up
//! to the decision) or at their next point. The state of a stopped wave (program counter
//! and registers of every thread, its register blocks) and of its
//! work-group (shared memory) is moved to and from the context's save area
//! at [`BYTES_PER_CYCLE`]; the time this takes is charged in modeled time
//! and is not the context's runtime.

use super::grid::MAX_THREADS_PER_WAVE;
use super::isa::NUM_REGS;
use super::occupancy::GroupNeeds;
use super::slice::SliceFormula;
use super::slots::{
    HistoryRule,
    SlotMode,
    SlotPolicy, //
};
use super::topology::{
    within,
    ParamError,
    Topology, //
};

/// Bytes of one vector-register block: 4 registers of a 64-thread wave.
pub const VGPR_BLOCK_BYTES: u64 = 4 * 64 * 4;
/// Bytes of one scalar-register block: 4 registers.
pub const SGPR_BLOCK_BYTES: u64 = 4 * 4;
/// Bytes of one shared-memory block.
pub const SHARED_BLOCK_BYTES: u64 = 1024;
/// Bytes of one thread's architectural state: program counter and
/// registers, as [`super::exec::Thread`] holds them.
pub const THREAD_STATE_BYTES: u64 = 4 + 4 * NUM_REGS as u64;
/// Bytes the save/restore path moves per modeled cycle.
pub const BYTES_PER_CYCLE: u64 = 64;

/// Limits of `preemption_us`: at least 100 µs, at most a second.
pub const PREEMPTION_US: (u32, u32) = (100, 1_000_000);

/// Limits of `slot_switch_us`, the modeled time to stop or resume a wave
/// whose state stays in its hardware slot (a switch between the residents
/// in turn): at most a millisecond, far below a save of a whole wave
/// state to memory at [`BYTES_PER_CYCLE`] (about 100 µs for a 64-thread
/// wave at 1 MHz).
pub const SLOT_SWITCH_US: (u32, u32) = (0, 1000);

/// Bytes saved for one stopped wave of `threads` threads whose group needs
/// `needs` (its own register blocks; shared memory is counted per group).
pub fn wave_state_bytes(needs: &GroupNeeds, threads: u32) -> u64 {
    let threads = u64::from(threads.min(MAX_THREADS_PER_WAVE));
    threads * THREAD_STATE_BYTES
        + u64::from(needs.wave.vgpr) * VGPR_BLOCK_BYTES
        + u64::from(needs.wave.sgpr) * SGPR_BLOCK_BYTES
}

/// Bytes of a work-group's shared memory.
pub fn shared_state_bytes(needs: &GroupNeeds) -> u64 {
    u64::from(needs.shared) * SHARED_BLOCK_BYTES
}

/// Modeled cycles to move `bytes` (rounded up).
pub fn transfer_cycles(bytes: u64) -> u64 {
    bytes.div_ceil(BYTES_PER_CYCLE)
}

/// The context scheduler's settings, from the module parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedParams {
    /// Slots, slice formula and bounds, how residents share the device,
    /// what weights count.
    pub policy: SlotPolicy,
    /// Distance between preemption points, in ns.
    pub preemption_ns: u64,
    /// Time to stop or resume a wave whose state stays in its slot, in ns.
    pub slot_switch_ns: u64,
    /// A context that loses its slot with work left stops its waves at
    /// the instruction boundary they are at, instead of at their next
    /// preemption point.
    pub preempt_at_once: bool,
}

/// The module parameters of the context scheduler, as loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedParamValues {
    /// `slice_formula`: 0 proportional, 1 literal.
    pub slice_formula: u64,
    /// `preemption_us`.
    pub preemption_us: u64,
    /// `slot_mode`: 0 side by side, 1 in turn.
    pub slot_mode: u64,
    /// `weight_history`: 0 bounded, 1 unbounded.
    pub weight_history: u64,
    /// `slot_switch_us`.
    pub slot_switch_us: u64,
    /// `preempt_at_once`: 0 at the next preemption point, 1 at once.
    pub preempt_at_once: u64,
}

impl SchedParamValues {
    /// The defaults of the module parameters.
    pub const DEFAULT: Self = Self {
        slice_formula: 0,
        preemption_us: 1000,
        slot_mode: 0,
        weight_history: 0,
        slot_switch_us: 5,
        preempt_at_once: 1,
    };
}

/// `value` as the enumeration `parse` makes of it, or the range error of
/// parameter `field` (0..=`max`).
fn choice<T>(
    field: &'static str,
    value: u64,
    max: u64,
    parse: fn(u32) -> Option<T>,
) -> Result<T, ParamError> {
    u32::try_from(value).ok().and_then(parse).ok_or(ParamError {
        field,
        value,
        min: 0,
        max,
    })
}

impl SchedParams {
    /// The settings for `topology` (slots and `t0`) and the parameter
    /// values `v`, or the first parameter out of range.
    pub fn from_params(topology: &Topology, v: &SchedParamValues) -> Result<Self, ParamError> {
        let formula = choice("slice_formula", v.slice_formula, 1, |f| match f {
            0 => Some(SliceFormula::Proportional),
            1 => Some(SliceFormula::Literal),
            _ => None,
        })?;
        let preemption_us = within("preemption_us", v.preemption_us, PREEMPTION_US)?;
        let mode = choice("slot_mode", v.slot_mode, 1, SlotMode::from_param)?;
        let history = choice(
            "weight_history",
            v.weight_history,
            1,
            HistoryRule::from_param,
        )?;
        let slot_switch_us = within("slot_switch_us", v.slot_switch_us, SLOT_SWITCH_US)?;
        let preempt_at_once = within("preempt_at_once", v.preempt_at_once, (0, 1))? == 1;
        let t0_ns = u64::from(topology.time_slice_us) * 1000;
        Ok(Self {
            policy: SlotPolicy::new(topology.hw_slots as usize, formula, t0_ns)
                .with_mode(mode)
                .with_history(history),
            preemption_ns: u64::from(preemption_us) * 1000,
            slot_switch_ns: u64::from(slot_switch_us) * 1000,
            preempt_at_once,
        })
    }

    /// The first preemption point strictly after `ns`.
    pub fn next_point(&self, ns: u64) -> u64 {
        let q = self.preemption_ns.max(1);
        (ns / q).saturating_add(1).saturating_mul(q)
    }

    /// Where the chunk of a wave that reached preemption point `point` ends
    /// when the engine looks at it at `now` (at or after `point`) and lets
    /// it run on: its context held the device at the point (`slice_end`,
    /// the end of its slice or turn, lies past it), or its save area was
    /// full (`slice_end` at or before it: to the first point after `now`).
    /// The wave runs on to the first point
    /// after `now`, but not past the first point at or after `slice_end`:
    /// an engine that steps late does not let a wave run through the end
    /// of its slice, since what counts is modeled time. A context evicted
    /// when preemption is at once (`evicted_at_once`) stops at `slice_end`
    /// itself.
    pub fn chunk_end(&self, point: u64, now: u64, slice_end: u64, evicted_at_once: bool) -> u64 {
        let to = self.next_point(now.max(point));
        if slice_end >= to || slice_end <= point {
            return to;
        }
        match evicted_at_once {
            true => slice_end,
            false => self.next_point(slice_end - 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::occupancy::WaveNeeds;

    #[test]
    fn points_form_a_grid() {
        let p = SchedParams::from_params(&Topology::DEFAULT, &SchedParamValues::DEFAULT).unwrap();
        assert_eq!(p.next_point(0), 1_000_000);
        assert_eq!(p.next_point(999_999), 1_000_000);
        assert_eq!(p.next_point(1_000_000), 2_000_000, "strictly after");
        assert_eq!(p.next_point(u64::MAX), u64::MAX);
    }

    #[test]
    fn a_chunk_ends_at_its_slice_however_late_the_engine_is() {
        const MS: u64 = 1_000_000;
        let p = SchedParams::from_params(&Topology::DEFAULT, &SchedParamValues::DEFAULT).unwrap();
        // On time: to the next point, whatever the slice (it ends there or later).
        assert_eq!(p.chunk_end(4 * MS, 4 * MS, 4 * MS + 500_000, false), 5 * MS);
        assert_eq!(p.chunk_end(4 * MS, 4 * MS, 9 * MS, false), 5 * MS);
        // 60 ms late, the slice ending in between: the first point at or after its end.
        assert_eq!(p.chunk_end(4 * MS, 64 * MS + 1, 6 * MS + 1, false), 7 * MS);
        assert_eq!(p.chunk_end(4 * MS, 64 * MS + 1, 6 * MS, false), 6 * MS);
        // Evicted, preempting at once: at the eviction itself.
        assert_eq!(
            p.chunk_end(4 * MS, 64 * MS + 1, 6 * MS + 1, true),
            6 * MS + 1
        );
        // The slice runs past now: to the first point after now.
        assert_eq!(p.chunk_end(4 * MS, 64 * MS + 1, 90 * MS, false), 65 * MS);
        assert_eq!(p.chunk_end(4 * MS, 64 * MS, 64 * MS + 1, true), 64 * MS + 1);
        assert_eq!(p.chunk_end(4 * MS, 64 * MS, 65 * MS, true), 65 * MS);
        // Its save area full (the slice over at or before the point): on to the next point.
        assert_eq!(p.chunk_end(4 * MS, 64 * MS + 1, 4 * MS, false), 65 * MS);
        assert_eq!(p.chunk_end(4 * MS, 4 * MS, 2 * MS, true), 5 * MS);
        // A restored wave's first point need not lie on the grid.
        assert_eq!(
            p.chunk_end(4 * MS + 300, 30 * MS, 6 * MS + 1, false),
            7 * MS
        );
        assert_eq!(
            p.chunk_end(4 * MS + 300, 4 * MS + 300, 9 * MS, false),
            5 * MS
        );
    }

    #[test]
    fn parameters_are_checked() {
        let t = Topology::DEFAULT;
        let d = SchedParamValues::DEFAULT;
        let with = |f: fn(&mut SchedParamValues)| {
            let mut v = d;
            f(&mut v);
            SchedParams::from_params(&t, &v)
        };
        let p = with(|v| {
            v.slice_formula = 1;
            v.preemption_us = 100;
            v.slot_mode = 1;
            v.weight_history = 1;
            v.slot_switch_us = 7;
        })
        .unwrap();
        assert_eq!(p.policy.formula, SliceFormula::Literal);
        assert_eq!(p.policy.slots, 8);
        assert_eq!(p.policy.slice.t0_ns, 10_000_000);
        assert_eq!(p.policy.mode, SlotMode::InTurn);
        assert_eq!(p.policy.history, HistoryRule::Unbounded);
        assert_eq!(p.slot_switch_ns, 7000);
        let p = SchedParams::from_params(&t, &d).unwrap();
        assert_eq!(p.policy.mode, SlotMode::SideBySide);
        assert_eq!(p.policy.history, HistoryRule::Bounded);
        let field = |f: fn(&mut SchedParamValues)| with(f).unwrap_err().field;
        assert_eq!(field(|v| v.slice_formula = 2), "slice_formula");
        assert_eq!(field(|v| v.slot_mode = 2), "slot_mode");
        assert_eq!(field(|v| v.weight_history = 2), "weight_history");
        assert_eq!(field(|v| v.slot_switch_us = 1001), "slot_switch_us");
        assert_eq!(field(|v| v.preempt_at_once = 2), "preempt_at_once");
        let e = with(|v| v.preemption_us = 99).unwrap_err();
        assert_eq!(
            (e.field, e.value, e.min, e.max),
            ("preemption_us", 99, 100, 1_000_000)
        );
        assert!(with(|v| v.preemption_us = 1_000_001).is_err());
    }

    #[test]
    fn costs_follow_the_bytes_moved() {
        let needs = GroupNeeds {
            waves: 2,
            wave: WaveNeeds { vgpr: 2, sgpr: 1 },
            shared: 3,
        };
        assert_eq!(wave_state_bytes(&needs, 64), 64 * 68 + 2 * 1024 + 16);
        assert_eq!(shared_state_bytes(&needs), 3072);
        assert_eq!(transfer_cycles(0), 0);
        assert_eq!(transfer_cycles(1), 1);
        assert_eq!(transfer_cycles(128), 2);
    }
}
