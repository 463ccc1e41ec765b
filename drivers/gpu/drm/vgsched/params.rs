// SPDX-License-Identifier: GPL-2.0

//! The parameters `params.c` registers (the Rust `module!` macro of 7.3
//! makes parameters sysfs cannot show): the pipeline's, the placement
//! policy and the default bound of a uid in no project, changed at run
//! time, checked here against the core crate's limits and read at every
//! use; the tile topology and power model, read once at load.

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
    projects::{
        default_bound,
        Amounts,
        DEFAULT_BO_MIB,
        DEFAULT_BO_MIB_LIMITS,
        DEFAULT_CONTEXTS,
        DEFAULT_CONTEXTS_LIMITS, //
    },
    tiles::{
        Policy,
        PowerModel,
        TileTopology,
        TopologyError,
        MAX_NODES,
        MAX_TILES,
        MAX_TYPES,
        POLICY,
        POWER_MW, //
    },
    topology::within, //
};

/// Indexes of `params.h`'s enum, in its order.
const MODE_INDEX: c_uint = 0;
const PHASE1_THRESHOLD_INDEX: c_uint = 1;
const SUBTASK_THRESHOLD_INDEX: c_uint = 2;
const PROGRESS_POINT_INDEX: c_uint = 3;
const PLACEMENT_POLICY_INDEX: c_uint = 4;
const DEFAULT_CONTEXTS_INDEX: c_uint = 5;
const DEFAULT_BO_MIB_INDEX: c_uint = 6;

/// `struct vgsched_tile_params` of `params.h`.
#[repr(C)]
struct RawTileParams {
    nodes: u64,
    tiles_per_node: u64,
    tile_type: *const c_uint,
    tile_type_n: c_int,
    type_power_mw: *const c_uint,
    type_power_n: c_int,
    node_standby_mw: *const c_uint,
    node_standby_n: c_int,
    idle_mw: u64,
    sleep_mw: u64,
    idle_delay_us: u64,
    wake_us: u64,
}

extern "C" {
    fn vgsched_pipeline_param(index: c_uint) -> c_uint;
    fn vgsched_pipeline_default(index: c_uint) -> c_uint;
    fn vgsched_tile_params(out: *mut RawTileParams);
    fn vgsched_tile_lists_write_back(
        tile_type: *const c_uint,
        tiles: c_int,
        type_power_mw: *const c_uint,
        types: c_int,
        node_standby_mw: *const c_uint,
        nodes: c_int,
    );
}

/// A copy of the first `n` entries (at most `N`) of a parameter list
/// `params.c` owns, and how many there are: the list is written back at
/// load ([`write_back_tile_lists`]), so no slice of it is kept.
///
/// # Safety
///
/// `list` points at a `static` array of at least `N` entries, not written
/// meanwhile.
unsafe fn entries<const N: usize>(list: *const c_uint, n: c_int) -> ([u32; N], usize) {
    let n = usize::try_from(n).unwrap_or(0).min(N);
    let mut out = [0; N];
    // SAFETY: Per the function's safety requirement, `list` has `N >= n`
    // entries, which nothing writes during the copy.
    let given = unsafe { core::slice::from_raw_parts(list, n) };
    for (o, &g) in out.iter_mut().zip(given) {
        *o = g;
    }
    (out, n)
}

/// The tile topology of the module parameters over `modules` modules, and
/// its power model: `EINVAL` and a log line if either is refused.
pub(crate) fn tiles(modules: u32) -> Result<(TileTopology, PowerModel)> {
    let mut raw = RawTileParams {
        nodes: 0,
        tiles_per_node: 0,
        tile_type: core::ptr::null(),
        tile_type_n: 0,
        type_power_mw: core::ptr::null(),
        type_power_n: 0,
        node_standby_mw: core::ptr::null(),
        node_standby_n: 0,
        idle_mw: 0,
        sleep_mw: 0,
        idle_delay_us: 0,
        wake_us: 0,
    };
    // SAFETY: `raw` is a valid place for the answer.
    unsafe { vgsched_tile_params(&mut raw) };
    // SAFETY: The lists are the static arrays of `params.c`, of
    // `VGSCHED_MAX_TILES`, `VGSCHED_MAX_TYPES` and `VGSCHED_MAX_NODES`
    // entries (the same as `MAX_TILES`, `MAX_TYPES`, `MAX_NODES`), written
    // only by the write-back below, after the copies.
    let ((tiles_given, nt), (types_given, np), (standby_given, ns)) = unsafe {
        (
            entries::<MAX_TILES>(raw.tile_type, raw.tile_type_n),
            entries::<MAX_TYPES>(raw.type_power_mw, raw.type_power_n),
            entries::<MAX_NODES>(raw.node_standby_mw, raw.node_standby_n),
        )
    };
    let (tile_type, type_power_mw, node_standby_mw) = (
        tiles_given.get(..nt).unwrap_or(&[]),
        types_given.get(..np).unwrap_or(&[]),
        standby_given.get(..ns).unwrap_or(&[]),
    );
    let topology = TileTopology::from_values(
        modules,
        raw.nodes,
        raw.tiles_per_node,
        tile_type,
        type_power_mw,
        node_standby_mw,
    )
    .map_err(|e| {
        match e {
            TopologyError::Param(p) => return crate::invalid_parameter(p),
            TopologyError::TooMany { tiles } => {
                pr_err!("invalid tiles: {tiles} tiles, at most {MAX_TILES}\n")
            }
            TopologyError::Uneven { modules, tiles } => {
                pr_err!("invalid tiles: {tiles} tiles do not share {modules} modules evenly\n")
            }
            TopologyError::Count {
                field,
                given,
                wanted,
            } => pr_err!("invalid parameter {field}: {given} entries, not {wanted}\n"),
            TopologyError::UnknownType { tile, ty } => {
                pr_err!("invalid parameter tile_type: tile {tile} has type {ty}, which type_power_mw lacks\n")
            }
            TopologyError::BadPower { field, index, mw } => {
                let (min, max) = POWER_MW;
                pr_err!("invalid parameter {field}: entry {index} is {mw} (must be {min}..={max})\n")
            }
        }
        EINVAL
    })?;
    write_back_tile_lists(&topology);
    let model = PowerModel::from_values(
        &topology,
        raw.idle_mw,
        raw.sleep_mw,
        raw.idle_delay_us,
        raw.wake_us,
    )
    .map_err(crate::invalid_parameter)?;
    Ok((topology, model))
}

/// Writes the lists `topology` uses back to the module parameters (the
/// defaults of those left out filled in), so that
/// `/sys/module/vgsched/parameters/` shows them.
fn write_back_tile_lists(topology: &TileTopology) {
    let tiles = topology.tiles().min(MAX_TILES as u32) as usize;
    let types = (topology.types as usize).min(MAX_TYPES);
    let nodes = (topology.nodes as usize).min(MAX_NODES);
    let mut tile_type = [0u32; MAX_TILES];
    for (t, &ty) in tile_type.iter_mut().zip(topology.tile_type.iter()) {
        *t = u32::from(ty);
    }
    // SAFETY: Each pointer is valid for the count given with it (at most
    // the array's length, which `params.c`'s arrays share); the lists are
    // copied, under the parameter lock, before the call returns. No slice
    // of `params.c`'s lists is held here ([`tiles`] copied them).
    unsafe {
        vgsched_tile_lists_write_back(
            tile_type.as_ptr(),
            tiles as c_int,
            topology.type_power_mw.as_ptr(),
            types as c_int,
            topology.standby_mw.as_ptr(),
            nodes as c_int,
        )
    };
}

/// The placement policy in force.
pub(crate) fn placement_policy() -> Policy {
    Policy::from_param(value(PLACEMENT_POLICY_INDEX))
}

/// What a uid in no project may hold on the device, in force.
pub(crate) fn default_request() -> Amounts {
    default_bound(value(DEFAULT_CONTEXTS_INDEX), value(DEFAULT_BO_MIB_INDEX))
}

/// Whether `params.c` starts the default bound from the core crate's
/// defaults, for KUnit.
pub(crate) fn default_bound_starts_from_the_core() -> bool {
    // SAFETY: Any index is accepted (an unknown one reads 0 and warns).
    let default = |i| unsafe { vgsched_pipeline_default(i) };
    default(DEFAULT_CONTEXTS_INDEX) == DEFAULT_CONTEXTS
        && default(DEFAULT_BO_MIB_INDEX) == DEFAULT_BO_MIB
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
pub extern "C" fn vgsched_pipeline_param_check(index: c_uint, value: u64) -> c_int {
    let limits = match index {
        MODE_INDEX => ("pipeline_mode", MODE),
        PHASE1_THRESHOLD_INDEX => ("phase1_threshold_kib", THRESHOLD_KIB),
        SUBTASK_THRESHOLD_INDEX => ("subtask_threshold_kib", THRESHOLD_KIB),
        PROGRESS_POINT_INDEX => ("progress_point", PROGRESS_POINT),
        PLACEMENT_POLICY_INDEX => ("placement_policy", POLICY),
        DEFAULT_CONTEXTS_INDEX => ("default_contexts", DEFAULT_CONTEXTS_LIMITS),
        DEFAULT_BO_MIB_INDEX => ("default_bo_mib", DEFAULT_BO_MIB_LIMITS),
        _ => return EINVAL.to_errno(),
    };
    match within(limits.0, value, limits.1) {
        Ok(_) => 0,
        Err(e) => crate::invalid_parameter(e).to_errno(),
    }
}
