// SPDX-License-Identifier: GPL-2.0

//! Programs for tests and benchmarks of the wave interpreter.
//!
//! The host tests of [`super::grid`] and the host benchmark
//! (`rust/vgsched-bench`) run the same worst case for a lock holder with
//! these words, so the two cannot drift apart.

use super::isa::{
    encode as op,
    Op,
    Special, //
};

/// Instructions of [`last_lane_faults`].
pub const LAST_LANE_FAULTS_LEN: usize = 10;

/// One wave's worst case: lanes 0-62 count a loop down until just under
/// `limit` cycles at the default costs (3 cycles an iteration, 9 around the
/// loop), lane 63 loads far out of its one binding at once and faults.
pub fn last_lane_faults(limit: u64) -> [u64; LAST_LANE_FAULTS_LEN] {
    let iterations = i32::try_from(limit.saturating_sub(9) / 3).unwrap_or(i32::MAX);
    [
        op(Op::Sreg, 0, 0, 0, Special::Lane as i32),
        op(Op::Movi, 1, 0, 0, 63),
        op(Op::Seq, 2, 0, 1, 0),
        op(Op::Brnz, 0, 2, 0, 8),
        op(Op::Movi, 3, 0, 0, iterations),
        op(Op::Addi, 3, 3, 0, -1),
        op(Op::Brnz, 0, 3, 0, 5),
        op(Op::End, 0, 0, 0, 0),
        op(Op::Ld, 4, 0, 0, 1000),
        op(Op::End, 0, 0, 0, 0),
    ]
}
