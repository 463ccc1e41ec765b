// SPDX-License-Identifier: GPL-2.0

//! What a context switch costs and when it may happen (slot selection).
//!
//! Waves stop only at preemption points, a fixed grid of modeled time
//! (`preemption_us`): the engine interprets each running wave up to the
//! next point and no further, so a context that loses its slot stops there
//! at an instruction boundary, and a context of a higher level gets the
//! device at the next point. The state of a stopped wave (program counter
//! and registers of every thread, its register blocks) and of its
//! work-group (shared memory) is moved to and from the context's save area
//! at [`BYTES_PER_CYCLE`]; the time this takes is charged in modeled time
//! and is not the context's runtime.

use super::grid::MAX_THREADS_PER_WAVE;
use super::isa::NUM_REGS;
use super::occupancy::GroupNeeds;
use super::slice::SliceFormula;
use super::slots::SlotPolicy;
use super::topology::{
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
    /// Slots, slice formula and slice bounds.
    pub policy: SlotPolicy,
    /// Distance between preemption points, in ns.
    pub preemption_ns: u64,
}

impl SchedParams {
    /// The settings for `topology` (slots and `t0`), `formula` (0
    /// proportional, 1 literal) and `preemption_us`, or the first
    /// parameter out of range.
    pub fn from_params(
        topology: &Topology,
        formula: u32,
        preemption_us: u32,
    ) -> Result<Self, ParamError> {
        let formula = match formula {
            0 => SliceFormula::Proportional,
            1 => SliceFormula::Literal,
            _ => {
                return Err(ParamError {
                    field: "slice_formula",
                    value: u64::from(formula),
                    min: 0,
                    max: 1,
                })
            }
        };
        let (min, max) = PREEMPTION_US;
        if !(min..=max).contains(&preemption_us) {
            return Err(ParamError {
                field: "preemption_us",
                value: u64::from(preemption_us),
                min: u64::from(min),
                max: u64::from(max),
            });
        }
        let t0_ns = u64::from(topology.time_slice_us) * 1000;
        Ok(Self {
            policy: SlotPolicy::new(topology.hw_slots as usize, formula, t0_ns),
            preemption_ns: u64::from(preemption_us) * 1000,
        })
    }

    /// The first preemption point strictly after `ns`.
    pub fn next_point(&self, ns: u64) -> u64 {
        let q = self.preemption_ns.max(1);
        (ns / q).saturating_add(1).saturating_mul(q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::occupancy::WaveNeeds;

    #[test]
    fn points_form_a_grid() {
        let p = SchedParams::from_params(&Topology::DEFAULT, 0, 1000).unwrap();
        assert_eq!(p.next_point(0), 1_000_000);
        assert_eq!(p.next_point(999_999), 1_000_000);
        assert_eq!(p.next_point(1_000_000), 2_000_000, "strictly after");
        assert_eq!(p.next_point(u64::MAX), u64::MAX);
    }

    #[test]
    fn parameters_are_checked() {
        let t = Topology::DEFAULT;
        let p = SchedParams::from_params(&t, 1, 100).unwrap();
        assert_eq!(p.policy.formula, SliceFormula::Literal);
        assert_eq!(p.policy.slots, 8);
        assert_eq!(p.policy.slice.t0_ns, 10_000_000);
        assert_eq!(
            SchedParams::from_params(&t, 2, 1000).unwrap_err().field,
            "slice_formula"
        );
        let e = SchedParams::from_params(&t, 0, 99).unwrap_err();
        assert_eq!(
            (e.field, e.value, e.min, e.max),
            ("preemption_us", 99, 100, 1_000_000)
        );
        assert!(SchedParams::from_params(&t, 0, 1_000_001).is_err());
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
