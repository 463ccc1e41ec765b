// SPDX-License-Identifier: GPL-2.0

//! vgsched: a DRM render device for a virtual GPU, and the scheduler of the
//! work user programs submit to it.
//!
//! The device sits on a faux bus device named `vgsched`; its shape (execution
//! modules, units, hardware context slots, resources) comes from the module
//! parameters, validated by the shared core crate before anything is
//! registered. User space reaches it through the render node and the ioctls
//! of `include/uapi/drm/vgsched_drm.h`.

use kernel::{
    drm,
    faux,
    prelude::*, //
};

mod auth;
mod bench;
mod context;
mod debugfs;
mod driver;
mod engine;
mod fdinfo;
mod fence;
mod file;
mod gem;
mod gpu;
mod hwmon;
mod ioctl;
mod job;
mod kunit;
mod params;
mod projects;
mod submit;
mod uapi;
mod vram;

/// The pure scheduling logic, compiled from the very files `cargo test`
/// checks on the host (`rust/vgsched-core/src`). Keep this list in step with
/// that crate's `lib.rs`.
#[path = "../../../../rust/vgsched-core/src"]
pub mod vgsched_core {
    pub mod bitmask;
    pub mod claim;
    pub mod context_switch;
    pub mod device_memory;
    pub mod dispatch;
    pub mod exec;
    pub mod finder_bench;
    pub mod grid;
    pub mod index_set;
    pub mod isa;
    pub mod kinetic;
    pub mod module_choice;
    pub mod occupancy;
    pub mod ordered_slots;
    pub mod pipeline;
    pub mod pool;
    pub mod progress;
    pub mod projects;
    pub mod ring;
    pub mod rng;
    pub mod sample_maps;
    pub mod sample_programs;
    pub mod slice;
    pub mod slots;
    pub mod softfloat;
    pub mod split;
    pub mod tiles;
    pub mod topology;
}

use vgsched_core::{
    context_switch::{
        SchedParamValues,
        SchedParams, //
    },
    device_memory::{
        bandwidth_mbps,
        vram_bytes, //
    },
    dispatch::DispatchParams,
    pipeline::PhaseOneParams,
    projects as projects_core,
    tiles::TileAccount,
    topology::{
        within,
        ParamError,
        Topology,
        TopologyParams, //
    }, //
};

use context::monotonic_ns;

module! {
    type: VgschedModule,
    name: "vgsched",
    authors: ["vgsched developers"],
    description: "Scheduling virtual GPU (DRM render device)",
    license: "GPL",
    params: {
        modules: u64 {
            default: 4,
            description: "Execution modules on the virtual GPU (1-64)",
        },
        units_per_module: u64 {
            default: 4,
            description: "Execution units per module (1-16)",
        },
        hw_slots: u64 {
            default: 8,
            description: "Hardware context slots (1-64)",
        },
        time_slice_us: u64 {
            default: 10000,
            description: "Base time slice t0 in microseconds (100-1000000)",
        },
        vgpr_blocks: u64 {
            default: 128,
            description: "Vector register blocks per unit (1-4096)",
        },
        sgpr_blocks: u64 {
            default: 64,
            description: "Scalar register blocks per unit (1-4096)",
        },
        wave_slots: u64 {
            default: 16,
            description: "Wave slots per unit (1-64)",
        },
        shared_mem_blocks: u64 {
            default: 48,
            description: "Shared-memory blocks per module (1-4096)",
        },
        clock_khz: u64 {
            default: 1000,
            description: "Modeled clock rate in kHz (1-1000000)",
        },
        job_timeout_ms: u64 {
            default: 2000,
            description: "A wave running longer than this (modeled ms) hangs its job (10-60000)",
        },
        module_choice: u64 {
            default: 0,
            description: "Execution module choice: 0 least recent power, 1 most free resources, 2 both",
        },
        finder: u64 {
            default: 0,
            description: "Resource finder: 0 exact, 1 grouped by 4, 2 sampled, 3 packed (exact; the time-multiplexed finder, a placement's maps searched in 128-bit periods)",
        },
        rotation_period_cycles: u64 {
            default: 15000,
            description: "Period of the rotating priority windows, modeled cycles (15-2^32)",
        },
        split_after_rounds: u64 {
            default: 256,
            description: "Failed dispatch rounds (cycles) before blocked independent work-groups are split (1-2^32)",
        },
        power_window_cycles: u64 {
            default: 1024,
            description: "Window of the recent-power count of module choice, modeled cycles (16-2^24)",
        },
        slice_formula: u64 {
            default: 0,
            description: "Time-slice formula: 0 proportional (t0*n*wc/wz), 1 literal (t0*wz/wc); fixed at load",
        },
        preemption_us: u64 {
            default: 1000,
            description: "Distance between preemption points, modeled us (100-1000000)",
        },
        slot_mode: u64 {
            default: 0,
            description: "How residents share the device: 0 side by side, 1 in turn (one after another in load order)",
        },
        weight_history: u64 {
            default: 0,
            description: "What slot-selection weights count: 0 bounded (runnable time; entering contexts join the residents), 1 unbounded (all since creation)",
        },
        slot_switch_us: u64 {
            default: 5,
            description: "Modeled time to stop or resume a wave whose state stays in its slot, us (0-1000)",
        },
        pool_contexts: u64 {
            default: 1024,
            description: "Contexts the members of all projects may hold together (1-1000000)",
        },
        pool_bo_mib: u64 {
            default: 1024,
            description: "Buffer-object MiB the members of all projects may hold together (1-1048576)",
        },
        tile_enrolment: u64 {
            default: 0,
            description: "Where the tiles start: 0 in the pool for everyone, 1 outside it until their providers' codes are entered (configfs providers)",
        },
        vram_mib: u64 {
            default: 64,
            description: "Device memory, MiB (1-1024), handed out in 4 KiB chunks",
        },
        ctx_state_kib: u64 {
            default: 64,
            description: "Phase 1: a context's state area in device memory, KiB (0-65536)",
        },
        ctx_init_us: u64 {
            default: 0,
            description: "Phase 1: a context's modeled environment initialisation, us (0-10000000)",
        },
        vram_bandwidth_mbps: u64 {
            default: 12000,
            description: "Modeled copy bandwidth between system and device memory, MB/s (1-1000000)",
        },
        preempt_at_once: u64 {
            default: 1,
            description: "A context losing its slot stops its waves: 1 at once (their current instruction), 0 at their next preemption point",
        },
        backend: u64 {
            default: 0,
            description: "The device under the scheduler: 0 the virtual GPU, 1 the mock (benchmarks of the scheduler alone: jobs take no time and compute nothing)",
        },
    },
}

/// Reads the topology from the module parameters: `EINVAL` and a log line
/// for one out of range.
fn topology_from_params() -> Result<Topology> {
    TopologyParams {
        modules: module_parameters::modules.value(),
        units_per_module: module_parameters::units_per_module.value(),
        hw_slots: module_parameters::hw_slots.value(),
        time_slice_us: module_parameters::time_slice_us.value(),
        vgpr_blocks: module_parameters::vgpr_blocks.value(),
        sgpr_blocks: module_parameters::sgpr_blocks.value(),
        wave_slots: module_parameters::wave_slots.value(),
        shared_mem_blocks: module_parameters::shared_mem_blocks.value(),
        clock_khz: module_parameters::clock_khz.value(),
        job_timeout_ms: module_parameters::job_timeout_ms.value(),
    }
    .topology()
    .map_err(invalid_parameter)
}

/// Reads the dispatcher's settings from the module parameters.
fn dispatch_params() -> Result<DispatchParams> {
    DispatchParams::from_params(
        module_parameters::rotation_period_cycles.value(),
        module_parameters::split_after_rounds.value(),
        module_parameters::power_window_cycles.value(),
        module_parameters::module_choice.value(),
        module_parameters::finder.value(),
    )
    .map_err(invalid_parameter)
}

/// Reads the settings of slot selection and time slices.
fn sched_params(topology: &Topology) -> Result<SchedParams> {
    let values = SchedParamValues {
        slice_formula: module_parameters::slice_formula.value(),
        preemption_us: module_parameters::preemption_us.value(),
        slot_mode: module_parameters::slot_mode.value(),
        weight_history: module_parameters::weight_history.value(),
        slot_switch_us: module_parameters::slot_switch_us.value(),
        preempt_at_once: module_parameters::preempt_at_once.value(),
    };
    SchedParams::from_params(topology, &values).map_err(invalid_parameter)
}

/// Whether the `backend` parameter chooses the mock device (`EINVAL` past
/// 1). The mock interprets nothing, so it is only for measuring the
/// scheduler alone (`Documentation/benchmarks.rst`); the load says so.
fn mock_backend(value: u64) -> Result<bool> {
    let mock = within("backend", value, (0, 1)).map_err(invalid_parameter)? == 1;
    if mock {
        pr_info!("backend=1: the mock device; jobs take no time and compute nothing\n");
    }
    Ok(mock)
}

/// Logs which parameter is out of range; `EINVAL` for `insmod`.
pub(crate) fn invalid_parameter(e: ParamError) -> Error {
    pr_err!(
        "invalid parameter {}={} (must be {}..={})\n",
        e.field,
        e.value,
        e.min,
        e.max
    );
    EINVAL
}

/// Name of the faux device the DRM device sits on; the DRM core names the
/// device's debugfs directory (`dri/vgsched`) after it.
const DEVICE_NAME: &CStr = c"vgsched";

/// The loaded module: the device's debugfs files, the DRM registration and
/// the faux device it sits on.
///
/// # Invariants
///
/// `drm` borrows the device of `faux` (its lifetime is erased to `'static`);
/// it is declared before it so that it is dropped, and the DRM device
/// unplugged, before the faux device is destroyed. `hwmon` (a child of the
/// faux device) and `debugfs` are declared first: they go before the DRM
/// device is unregistered, which removes the debugfs directory.
struct VgschedModule {
    _configfs: Pin<KBox<projects::Subsystem>>,
    /// The projects' book, whose device-wide public names are dropped
    /// first: they hold objects, which hold the DRM device.
    book: kernel::sync::Arc<projects::Book>,
    _hwmon: hwmon::Hwmon,
    _debugfs: debugfs::DeviceFiles,
    _drm: drm::Registration<'static, driver::VgDriver>,
    _faux: faux::Registration,
}

impl kernel::Module for VgschedModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let topology = topology_from_params()?;

        let (tile_topology, power_model) = params::tiles(topology.modules)?;
        let tiles = KBox::new(
            TileAccount::new(tile_topology, power_model, monotonic_ns()),
            GFP_KERNEL,
        )?;
        let params = dispatch_params()?;
        let sched = sched_params(&topology)?;
        let vram = vram_bytes(module_parameters::vram_mib.value()).map_err(invalid_parameter)?;
        let bandwidth = bandwidth_mbps(module_parameters::vram_bandwidth_mbps.value())
            .map_err(invalid_parameter)?;
        let memory = vram::DeviceMemory::new(vram, bandwidth)?;
        let phase_one = PhaseOneParams::from_values(
            module_parameters::ctx_state_kib.value(),
            module_parameters::ctx_init_us.value(),
        )
        .map_err(invalid_parameter)?;
        let mock = mock_backend(module_parameters::backend.value())?;
        let engine =
            engine::Engine::new_on(topology, params, sched, memory, phase_one, tiles, mock)?;
        let pool = projects_core::pool_from_values(
            module_parameters::pool_contexts.value(),
            module_parameters::pool_bo_mib.value(),
        )
        .map_err(invalid_parameter)?;
        let tiles_outside =
            projects_core::tiles_start_outside(module_parameters::tile_enrolment.value())
                .map_err(invalid_parameter)?;
        let book = projects::Book::new(
            pool,
            &tile_topology,
            engine::MAX_CONTEXTS as u64,
            tiles_outside,
        )?;
        let faux = faux::Registration::new(DEVICE_NAME, None)?;
        let unregistered = drm::UnregisteredDevice::<driver::VgDriver>::new(
            faux.as_ref(),
            driver::DeviceData::new(topology, engine.clone(), book.clone()),
        )?;
        let parent: &kernel::device::Device<kernel::device::Bound> = faux.as_ref().as_ref();
        // SAFETY: The registration data is `()` and holds no borrow, and by the
        // type invariant of `VgschedModule` the registration is dropped before
        // `faux`, so the parent device outlives it. Extending the borrow to
        // `'static` is therefore never observed. The registration is never
        // forgotten: it lives in `Self` and is dropped with it.
        let drm =
            unsafe { drm::Registration::new(&*core::ptr::from_ref(parent), unregistered, (), 0) }?;
        pr_info!(
            "virtual GPU ready: {} modules x {} units, {} hardware slots, t0 {} us, {} MiB of device memory\n",
            topology.modules,
            topology.units_per_module,
            topology.hw_slots,
            topology.time_slice_us,
            vram >> 20
        );
        let debugfs = debugfs::DeviceFiles::new(DEVICE_NAME, &engine)?;
        let hwmon = hwmon::Hwmon::new(parent, &engine)?;
        let configfs = KBox::pin_init(projects::Registry::subsystem(book.clone()), GFP_KERNEL)?;
        Ok(Self {
            _configfs: configfs,
            book,
            _hwmon: hwmon,
            _debugfs: debugfs,
            _drm: drm,
            _faux: faux,
        })
    }
}

impl Drop for VgschedModule {
    fn drop(&mut self) {
        // No project is left (configfs holds the module while one exists),
        // but the device's public folders may hold names: emptied here,
        // their objects (and their references to the device) go before the
        // device is unregistered.
        self.book.clear_public();
        // The fields drop after this, in declaration order: configfs, the
        // hwmon and debugfs files, DRM, then faux.
        pr_info!("unloaded\n");
    }
}
