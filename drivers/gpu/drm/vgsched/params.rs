// SPDX-License-Identifier: GPL-2.0

//! The pipeline's run-time parameters: registered by `params.c` (the
//! Rust `module!` macro of 7.3 makes parameters sysfs cannot show), checked
//! here against the core crate's limits, read at every decision.

use kernel::{
    ffi::{
        c_int,
        c_uint, //
    },
    prelude::*, //
};

use crate::vgsched_core::{
    pipeline::{
        PipelineParams,
        MODE,
        PROGRESS_POINT,
        THRESHOLD_KIB, //
    },
    topology::within, //
};

/// Indexes of `params.h`'s enum, in its order.
const MODE_INDEX: c_uint = 0;
const PHASE1_THRESHOLD_INDEX: c_uint = 1;
const SUBTASK_THRESHOLD_INDEX: c_uint = 2;
const PROGRESS_POINT_INDEX: c_uint = 3;

extern "C" {
    fn vgsched_pipeline_param(index: c_uint) -> c_uint;
    fn vgsched_pipeline_default(index: c_uint) -> c_uint;
}

/// The value of parameter `index`.
fn value(index: c_uint) -> u32 {
    // SAFETY: Any index is accepted (an unknown one reads 0 and warns).
    unsafe { vgsched_pipeline_param(index) }
}

/// The settings `params.c` starts from, for KUnit to hold against the
/// core crate's defaults.
pub(crate) fn defaults() -> Result<PipelineParams, crate::vgsched_core::topology::ParamError> {
    // SAFETY: Any index is accepted (an unknown one reads 0 and warns).
    let default = |i| unsafe { vgsched_pipeline_default(i) };
    PipelineParams::from_values(
        default(MODE_INDEX),
        default(PHASE1_THRESHOLD_INDEX),
        default(SUBTASK_THRESHOLD_INDEX),
        default(PROGRESS_POINT_INDEX),
    )
}

/// The pipeline settings in force.
pub(crate) fn pipeline() -> PipelineParams {
    PipelineParams::from_values(
        value(MODE_INDEX),
        value(PHASE1_THRESHOLD_INDEX),
        value(SUBTASK_THRESHOLD_INDEX),
        value(PROGRESS_POINT_INDEX),
    )
    // Every value was checked when it was set.
    .unwrap_or(PipelineParams::DEFAULT)
}

/// Checks a new value of parameter `index` (`params.c` calls it before it
/// stores one): 0 or `-EINVAL`.
#[no_mangle]
#[expect(unreachable_pub, reason = "called from params.c, not from Rust")]
pub extern "C" fn vgsched_pipeline_param_check(index: c_uint, value: c_uint) -> c_int {
    let limits = match index {
        MODE_INDEX => ("pipeline_mode", MODE),
        PHASE1_THRESHOLD_INDEX => ("phase1_threshold_kib", THRESHOLD_KIB),
        SUBTASK_THRESHOLD_INDEX => ("subtask_threshold_kib", THRESHOLD_KIB),
        PROGRESS_POINT_INDEX => ("progress_point", PROGRESS_POINT),
        _ => return EINVAL.to_errno(),
    };
    match within(limits.0, value, limits.1) {
        Ok(_) => 0,
        Err(e) => crate::invalid_parameter(e).to_errno(),
    }
}
