// SPDX-License-Identifier: GPL-2.0

//! The ioctl table and its handlers.
//!
//! `kernel::declare_drm_ioctls!` only accepts argument structs of the
//! kernel's own uapi crate, so this driver builds its table from the
//! [`Ioctl`] trait instead: one type per ioctl names its argument struct,
//! its number from `enum drm_vgsched_ioctl_id` and its handler, and
//! [`dispatch`] adapts the handler to the C calling convention. A compile
//! time check keeps the table dense and in the order of the enum.

use kernel::{
    bindings,
    drm::{
        self,
        gem::BaseObject, //
    },
    error::code::*,
    ioctl::_IOC_NR,
    prelude::*,
    sync::Arc,
    transmute::{
        AsBytes,
        FromBytes, //
    },
    uaccess::{
        UserPtr,
        UserSlice, //
    }, //
};

use crate::{
    context::Context,
    driver::VgDevice,
    engine::Engine,
    fence::{
        self,
        with_resv_locked,
        WaitResult, //
    },
    file::DrmFile,
    gem,
    projects::{
        shared,
        Started, //
    },
    submit::Submission,
    uapi,
    vgsched_core::{
        projects::Resource,
        tiles::Reserved, //
    },
};

/// Offset of driver-private ioctl numbers (`DRM_COMMAND_BASE`).
const COMMAND_BASE: u32 = 0x40;

/// One driver ioctl.
pub(crate) trait Ioctl {
    /// The argument struct from the uAPI header.
    type Arg: FromBytes + AsBytes;
    /// Its number in `enum drm_vgsched_ioctl_id`.
    const NR: u32;
    /// Name shown by DRM debug output.
    const NAME: &'static CStr;
    /// DRM access flags; every vgsched ioctl is usable on the render node.
    const FLAGS: u32 = drm::ioctl::RENDER_ALLOW;

    /// Handles the ioctl; `args` is the kernel copy of the argument, copied
    /// back to user space by the DRM core whatever the result.
    fn handle(dev: &VgDevice<drm::Registered>, args: &mut Self::Arg, file: &DrmFile)
        -> Result<u32>;
}

/// C entry point of ioctl `I`, called by `drm_ioctl()`.
///
/// # Safety
///
/// Only `drm_ioctl()` may call this, for a device of [`VgDriver`], with
/// `raw_data` pointing at `_IOC_SIZE(cmd)` bytes and `raw_file` an open file
/// of that device.
unsafe extern "C" fn dispatch<I: Ioctl>(
    raw_dev: *mut bindings::drm_device,
    raw_data: *mut c_void,
    raw_file: *mut bindings::drm_file,
) -> c_int {
    // SAFETY: `drm_ioctl()` holds a reference on the device for the call, the
    // device belongs to this driver (the table is only installed in it), and it
    // has been registered, since ioctls only reach registered devices.
    let dev: &VgDevice<drm::Ioctl> = unsafe { drm::Device::from_raw(raw_dev) };
    let Some(guard) = dev.registration_guard() else {
        return ENODEV.to_errno();
    };
    // SAFETY: `desc::<I>()` encodes `size_of::<I::Arg>()` as `_IOC_SIZE(cmd)`
    // and `drm_ioctl()` provides a kernel buffer of that size; `drm_ioctl()` gives us exclusive use of the
    // kernel copy for this call, and every bit pattern is valid (`FromBytes`).
    let args = unsafe { &mut *raw_data.cast::<I::Arg>() };
    // SAFETY: `raw_file` is an open file of this device, opened by `VgFile::open`.
    let file = unsafe { DrmFile::from_raw(raw_file) };
    match I::handle(&guard, args, file) {
        Ok(ret) => ret.try_into().unwrap_or(ERANGE.to_errno()),
        Err(e) => e.to_errno(),
    }
}

/// The table entry of ioctl `I`.
const fn desc<I: Ioctl>() -> drm::ioctl::DrmIoctlDescriptor {
    bindings::drm_ioctl_desc {
        cmd: drm::ioctl::IOWR::<I::Arg>(COMMAND_BASE + I::NR),
        func: Some(dispatch::<I>),
        flags: I::FLAGS,
        name: kernel::str::as_char_ptr_in_const_context(I::NAME),
    }
}

/// The driver's ioctls, indexed by `enum drm_vgsched_ioctl_id`.
pub(crate) const TABLE: &[drm::ioctl::DrmIoctlDescriptor] = &[
    desc::<DevQuery>(),
    desc::<BoCreate>(),
    desc::<BoMmapOffset>(),
    desc::<CtxCreate>(),
    desc::<CtxDestroy>(),
    desc::<CtxQuery>(),
    desc::<Submit>(),
    desc::<Wait>(),
    desc::<BoCpuPrep>(),
    desc::<Authorize>(),
    desc::<SharedPublish>(),
    desc::<SharedOpen>(),
    desc::<SharedUnpublish>(),
    desc::<Start>(),
];

// The DRM core finds a handler by `nr - DRM_COMMAND_BASE`: the table must be
// dense and in enum order.
const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        assert!(_IOC_NR(TABLE[i].cmd) == COMMAND_BASE + i as u32);
        i += 1;
    }
};

/// Copies `answer` to the user buffer described by a query's `pointer` and
/// `size`, following the size negotiation of `struct drm_vgsched_dev_query`.
fn copy_answer<T: AsBytes>(pointer: u64, size: &mut u32, answer: &T) -> Result {
    let needed = size_of::<T>() as u32;
    if pointer == 0 {
        *size = needed;
        return Ok(());
    }
    if *size < needed {
        return Err(EINVAL);
    }
    let addr = usize::try_from(pointer).map_err(|_| EFAULT)?;
    UserSlice::new(UserPtr::from_addr(addr), needed as usize)
        .writer()
        .write(answer)?;
    *size = needed;
    Ok(())
}

/// `DRM_IOCTL_VGSCHED_DEV_QUERY`: version and topology of the device.
struct DevQuery;

impl Ioctl for DevQuery {
    type Arg = uapi::drm_vgsched_dev_query;
    const NR: u32 = uapi::DRM_VGSCHED_DEV_QUERY;
    const NAME: &'static CStr = c"VGSCHED_DEV_QUERY";

    fn handle(
        dev: &VgDevice<drm::Registered>,
        args: &mut Self::Arg,
        _file: &DrmFile,
    ) -> Result<u32> {
        if args.flags != 0 || args.pad != 0 {
            return Err(EINVAL);
        }
        let mut size = args.size;
        match args.type_ {
            uapi::DRM_VGSCHED_DEV_QUERY_GPU_INFO => {
                let t = &dev.topology;
                let info = uapi::drm_vgsched_gpu_info {
                    uapi_major: uapi::DRM_VGSCHED_UAPI_MAJOR,
                    uapi_minor: uapi::DRM_VGSCHED_UAPI_MINOR,
                    modules: t.modules,
                    units_per_module: t.units_per_module,
                    hw_slots: t.hw_slots,
                    time_slice_us: t.time_slice_us,
                    vgpr_blocks: t.vgpr_blocks,
                    sgpr_blocks: t.sgpr_blocks,
                    wave_slots: t.wave_slots,
                    shared_mem_blocks: t.shared_mem_blocks,
                    clock_khz: t.clock_khz,
                    job_timeout_ms: t.job_timeout_ms,
                    cycle_costs: cycle_costs(dev.engine.costs()),
                };
                copy_answer(args.pointer, &mut size, &info)?;
            }
            uapi::DRM_VGSCHED_DEV_QUERY_TILES => {
                let t = dev.engine.tile_topology();
                let mut info = uapi::drm_vgsched_tiles_info {
                    nodes: t.nodes,
                    tiles_per_node: t.tiles_per_node,
                    types: t.types,
                    modules_per_tile: t.modules_per_tile,
                    type_power_mw: t.type_power_mw,
                    node_standby_mw: t.standby_mw,
                    ..Default::default()
                };
                info.tile_type = t.tile_type;
                copy_answer(args.pointer, &mut size, &info)?;
            }
            uapi::DRM_VGSCHED_DEV_QUERY_POWER => {
                let m = dev.engine.power_model();
                let info = uapi::drm_vgsched_power_info {
                    idle_mw: u32::try_from(m.idle_mw).unwrap_or(u32::MAX),
                    sleep_mw: u32::try_from(m.sleep_mw).unwrap_or(u32::MAX),
                    idle_delay_us: u32::try_from(m.idle_delay_ns / 1000).unwrap_or(u32::MAX),
                    wake_us: u32::try_from(m.wake_ns / 1000).unwrap_or(u32::MAX),
                };
                copy_answer(args.pointer, &mut size, &info)?;
            }
            _ => return Err(EINVAL),
        }
        // Written only on success: bad input leaves the argument unchanged.
        args.size = size;
        Ok(0)
    }
}

/// `DRM_IOCTL_VGSCHED_BO_CREATE`.
struct BoCreate;

impl Ioctl for BoCreate {
    type Arg = uapi::drm_vgsched_bo_create;
    const NR: u32 = uapi::DRM_VGSCHED_BO_CREATE;
    const NAME: &'static CStr = c"VGSCHED_BO_CREATE";

    fn handle(
        dev: &VgDevice<drm::Registered>,
        args: &mut Self::Arg,
        file: &DrmFile,
    ) -> Result<u32> {
        if args.flags & !uapi::DRM_VGSCHED_CREATE_WAIT != 0 {
            return Err(EINVAL);
        }
        let wait = args.flags & uapi::DRM_VGSCHED_CREATE_WAIT != 0;
        let bo = gem::create(dev, args.size, file.inner().opener(), wait)?;
        // The handle holds its own reference; ours drops on return.
        args.handle = bo.create_handle(file)?;
        Ok(0)
    }
}

/// `DRM_IOCTL_VGSCHED_AUTHORIZE`.
struct Authorize;

impl Ioctl for Authorize {
    type Arg = uapi::drm_vgsched_authorize;
    const NR: u32 = uapi::DRM_VGSCHED_AUTHORIZE;
    const NAME: &'static CStr = c"VGSCHED_AUTHORIZE";

    fn handle(
        dev: &VgDevice<drm::Registered>,
        args: &mut Self::Arg,
        file: &DrmFile,
    ) -> Result<u32> {
        let authority = &dev.book.authority;
        if args.provider > authority.tiles() || args.flags != 0 {
            return Err(EINVAL);
        }
        let inner = file.inner();
        let mut grants = inner.auth.lock();
        let now = crate::context::monotonic_ns();
        authority.authorize(&mut grants, inner.uid, args.provider, &args.code, now)?;
        Ok(0)
    }
}

/// `DRM_IOCTL_VGSCHED_START`: start the environment of the file's project
/// member (`projects.rs`, [`crate::projects::Book::start`]).
struct Start;

impl Ioctl for Start {
    type Arg = uapi::drm_vgsched_start;
    const NR: u32 = uapi::DRM_VGSCHED_START;
    const NAME: &'static CStr = c"VGSCHED_START";

    fn handle(
        dev: &VgDevice<drm::Registered>,
        args: &mut Self::Arg,
        file: &DrmFile,
    ) -> Result<u32> {
        if args.flags & !uapi::DRM_VGSCHED_START_WAIT != 0 || args.pad != 0 {
            return Err(EINVAL);
        }
        let inner = file.inner();
        // Root is not limited: nothing to reserve.
        if inner.uid == 0 {
            return Ok(0);
        }
        // A start of a member the administrator removed since is stale:
        // the file may start the uid's new member.
        let live = |slot: &Option<Started>| slot.as_ref().is_some_and(Started::is_live);
        if live(&inner.started.lock()) {
            return Err(EALREADY);
        }
        // Of the tiles it reserves, those kept from others are those the
        // file's jobs may run on: whose access codes (or the device's) it
        // presented, and those that need none.
        let authorized = dev.book.authority.tiles_allowed(&inner.auth.lock());
        // Not under the file's lock: the start may sleep.
        let wait = args.flags & uapi::DRM_VGSCHED_START_WAIT != 0;
        let started = dev.book.start(inner.uid, wait, authorized)?;
        let mut slot = inner.started.lock();
        if live(&slot) {
            // Another thread of the file started it meanwhile: this start
            // is given back, after the file's lock (stopping takes the
            // ledger's).
            drop(slot);
            drop(started);
            return Err(EALREADY);
        }
        let stale = slot.replace(started);
        drop(slot);
        drop(stale);
        Ok(0)
    }
}

/// `DRM_IOCTL_VGSCHED_BO_MMAP_OFFSET`.
struct BoMmapOffset;

impl Ioctl for BoMmapOffset {
    type Arg = uapi::drm_vgsched_bo_mmap_offset;
    const NR: u32 = uapi::DRM_VGSCHED_BO_MMAP_OFFSET;
    const NAME: &'static CStr = c"VGSCHED_BO_MMAP_OFFSET";

    fn handle(
        _dev: &VgDevice<drm::Registered>,
        args: &mut Self::Arg,
        file: &DrmFile,
    ) -> Result<u32> {
        if args.pad != 0 {
            return Err(EINVAL);
        }
        // `EINVAL` for a dumb buffer (mapped with `MODE_MAP_DUMB`) or an
        // imported dma-buf of another device: no mapping of ours.
        let bo = gem::lookup(file, args.handle)?;
        args.offset = bo.create_mmap_offset()?;
        Ok(0)
    }
}

/// `DRM_IOCTL_VGSCHED_CTX_CREATE`.
struct CtxCreate;

impl Ioctl for CtxCreate {
    type Arg = uapi::drm_vgsched_ctx_create;
    const NR: u32 = uapi::DRM_VGSCHED_CTX_CREATE;
    const NAME: &'static CStr = c"VGSCHED_CTX_CREATE";

    fn handle(
        dev: &VgDevice<drm::Registered>,
        args: &mut Self::Arg,
        file: &DrmFile,
    ) -> Result<u32> {
        if args.flags & !uapi::DRM_VGSCHED_CREATE_WAIT != 0 || args.pad != 0 {
            return Err(EINVAL);
        }
        let inner = file.inner();
        let wait = args.flags & uapi::DRM_VGSCHED_CREATE_WAIT != 0;
        let charge = dev
            .book
            .charge(inner.opener(), Resource::Contexts, 1, wait)?;
        let mut table = inner.contexts.lock();
        let ctx = table.create(args.priority, file.client_id(), charge)?;
        if let Err(e) = dev.engine.register_context(&ctx) {
            // A refused creation leaves nothing behind. The context was
            // created under the same hold of the table lock, so it is there.
            kernel::warn_on!(table.remove(ctx.id).is_err());
            return Err(e);
        }
        args.ctx_id = ctx.id;
        Ok(0)
    }
}

/// `DRM_IOCTL_VGSCHED_CTX_DESTROY`.
struct CtxDestroy;

impl Ioctl for CtxDestroy {
    type Arg = uapi::drm_vgsched_ctx_destroy;
    const NR: u32 = uapi::DRM_VGSCHED_CTX_DESTROY;
    const NAME: &'static CStr = c"VGSCHED_CTX_DESTROY";

    fn handle(
        dev: &VgDevice<drm::Registered>,
        args: &mut Self::Arg,
        file: &DrmFile,
    ) -> Result<u32> {
        if args.pad != 0 {
            return Err(EINVAL);
        }
        let ctx = file.inner().contexts.lock().remove(args.ctx_id)?;
        // Its unfinished jobs go with it (their fences signal -ECANCELED).
        let runtime = Engine::cancel_context(dev.engine.as_arc_borrow(), &ctx);
        file.inner().retire_runtime(runtime);
        Ok(0)
    }
}

/// `DRM_IOCTL_VGSCHED_CTX_QUERY`.
struct CtxQuery;

impl Ioctl for CtxQuery {
    type Arg = uapi::drm_vgsched_ctx_query;
    const NR: u32 = uapi::DRM_VGSCHED_CTX_QUERY;
    const NAME: &'static CStr = c"VGSCHED_CTX_QUERY";

    fn handle(
        dev: &VgDevice<drm::Registered>,
        args: &mut Self::Arg,
        file: &DrmFile,
    ) -> Result<u32> {
        if args.pad != 0 {
            return Err(EINVAL);
        }
        let ctx = file.inner().contexts.lock().get(args.ctx_id)?;
        let submitted = ctx.submissions.lock().last_seqno;
        let stats = dev.engine.context_stats(&ctx)?;
        let now = crate::context::monotonic_ns();
        args.created_ns = ctx.created_ns;
        args.runtime_ns = stats.runtime_ns;
        args.priority = ctx.priority;
        args.state = stats.state();
        args.jobs_submitted = submitted;
        args.jobs_completed = stats.completed;
        args.client_id = ctx.client;
        args.lifetime_ns = now.saturating_sub(ctx.created_ns);
        args.weight_milli = stats.weight_milli;
        args.slices = stats.slices;
        args.preemptions = stats.preemptions;
        args.switch_ns = stats.switch_ns;
        args.slot = stats.slot.map_or(-1, |s| s as i32);
        (args.phase1_start_ns, args.phase1_end_ns) = stats.phase1;
        let job = &stats.last_job;
        args.last_job_seqno = job.seqno;
        args.phase2_start_ns = job.phase2_start;
        args.phase2_end_ns = job.phase2_end;
        args.first_wave_ns = job.first_wave;
        args.last_wave_ns = job.last_wave;
        args.cleanup_start_ns = job.cleanup_start;
        args.cleanup_end_ns = job.cleanup_end;
        Ok(0)
    }
}

/// The cycle costs in the layout of `drm_vgsched_gpu_info::cycle_costs`.
fn cycle_costs(costs: &crate::vgsched_core::exec::CycleCosts) -> [u32; 8] {
    let mut out = [0; 8];
    for (o, &c) in out.iter_mut().zip(costs.per_class.iter()) {
        *o = c;
    }
    out
}

/// `DRM_IOCTL_VGSCHED_SUBMIT`: queue a job.
struct Submit;

impl Ioctl for Submit {
    type Arg = uapi::drm_vgsched_submit;
    const NR: u32 = uapi::DRM_VGSCHED_SUBMIT;
    const NAME: &'static CStr = c"VGSCHED_SUBMIT";

    fn handle(
        dev: &VgDevice<drm::Registered>,
        args: &mut Self::Arg,
        file: &DrmFile,
    ) -> Result<u32> {
        let inner = file.inner();
        // The tiles the file may use: of those in the pool for its user
        // (`projects/providers.rs`), those whose access codes (or
        // the device's) it presented, and those that need none; every
        // tile in the pool for root.
        let authorized = match inner.uid {
            0 => dev.engine.tile_topology().all_tiles(),
            _ => dev.book.authority.tiles_allowed(&inner.auth.lock()),
        };
        let allowed = authorized & dev.book.pool_tiles(inner.uid);
        if allowed == 0 {
            return Err(EACCES);
        }
        // Started environments' tiles: its own, if it started one, are
        // where it runs; others' are not its job's ([`Engine::submit`]).
        let reserved = dev.book.reservations(inner.uid);
        let ctx = inner.contexts.lock().get(args.ctx_id)?;
        // A context whose signalled jobs fill its done list (a second
        // submitter raced this one's drain) is drained here, holding no
        // reservation lock, and the submission is made once more.
        match Self::submit_once(dev, args, file, &ctx, allowed, reserved) {
            Err(e) if e == EAGAIN => {
                Engine::make_room(dev.engine.as_arc_borrow(), &ctx);
                match Self::submit_once(dev, args, file, &ctx, allowed, reserved) {
                    Err(e) if e == EAGAIN => Err(EBUSY),
                    r => r,
                }
            }
            r => r,
        }
    }
}

impl Submit {
    /// One try at queueing the job on the tiles of `allowed`, beside the
    /// started environments' `reserved` ones ([`Engine::submit`]'s
    /// `ENOSPC`); `EAGAIN` (never returned to user space) if the
    /// context's done list must be drained first.
    fn submit_once(
        dev: &VgDevice<drm::Registered>,
        args: &mut uapi::drm_vgsched_submit,
        file: &DrmFile,
        ctx: &Arc<Context>,
        allowed: u32,
        reserved: Reserved,
    ) -> Result<u32> {
        let Submission { mut spec, usage } =
            Submission::from_args(args, &dev.topology, file, allowed)?;
        spec.reserved = reserved;
        // The tiles it asks for count against its project member's request
        // until the job is dropped, after its fence has signalled.
        spec.charge = dev.book.charge(
            file.inner().opener(),
            Resource::Tiles,
            u64::from(spec.tiles),
            false,
        )?;
        // Implicit synchronisation: from here until the job's fence is in
        // the bound objects' reservations, they stay locked, so every other
        // submission on them orders itself before or after this one. The
        // submission's own references to the mappings outlive the locks:
        // dropping a last one unmaps, which takes the lock.
        let bindings = spec.bindings.clone();
        let (seqno, out_fd, crowded) =
            with_resv_locked(&bindings, &usage[..bindings.len()], ctx.timeline, |deps| {
                spec.deps = deps;
                let (seqno, fence, out_fd, crowded) =
                    Engine::submit(dev.engine.as_arc_borrow(), ctx, spec)?;
                Ok(((seqno, out_fd, crowded), fence))
            })?;
        drop(bindings);
        if crowded {
            Engine::make_room(dev.engine.as_arc_borrow(), ctx);
        }
        // Nothing below can fail: the job is queued.
        args.seqno = seqno;
        if let Some(fd) = out_fd {
            args.out_fence_fd = fd.fd();
            fd.install();
        }
        Ok(0)
    }
}

/// `DRM_IOCTL_VGSCHED_WAIT`: wait for a job to finish.
struct Wait;

impl Ioctl for Wait {
    type Arg = uapi::drm_vgsched_wait;
    const NR: u32 = uapi::DRM_VGSCHED_WAIT;
    const NAME: &'static CStr = c"VGSCHED_WAIT";

    fn handle(
        _dev: &VgDevice<drm::Registered>,
        args: &mut Self::Arg,
        file: &DrmFile,
    ) -> Result<u32> {
        if args.flags & !uapi::DRM_VGSCHED_WAIT_FLAGS != 0 || args.pad != 0 {
            return Err(EINVAL);
        }
        let ctx = file.inner().contexts.lock().get(args.ctx_id)?;
        let fence = match ctx.submissions.lock().fence(args.seqno) {
            Ok(fence) => fence,
            // Finished so long ago that its fence is gone: done, status unknown.
            Err(e) if e == ENODATA => {
                args.status = ENODATA.to_errno();
                return Ok(0);
            }
            Err(e) => return Err(e),
        };
        // A signal ends the wait with -ERESTARTSYS and the call is made
        // again with the same argument: a relative timeout starts over, an
        // absolute deadline stays where it was.
        let result = if args.flags & uapi::DRM_VGSCHED_WAIT_ABSOLUTE != 0 {
            fence.wait_until(args.timeout_ns)?
        } else {
            fence.wait(args.timeout_ns)?
        };
        // A fence may signal just as the timeout ends: trust its status.
        match (result, fence.status()) {
            (WaitResult::TimedOut, 0) => Err(ETIMEDOUT),
            (_, status) => {
                args.status = status.min(0);
                Ok(0)
            }
        }
    }
}

/// `DRM_IOCTL_VGSCHED_BO_CPU_PREP`: wait for the jobs using an object
/// before the CPU reads or writes it; before a write, its device copy goes.
struct BoCpuPrep;

impl Ioctl for BoCpuPrep {
    type Arg = uapi::drm_vgsched_bo_cpu_prep;
    const NR: u32 = uapi::DRM_VGSCHED_BO_CPU_PREP;
    const NAME: &'static CStr = c"VGSCHED_BO_CPU_PREP";

    fn handle(
        dev: &VgDevice<drm::Registered>,
        args: &mut Self::Arg,
        file: &DrmFile,
    ) -> Result<u32> {
        const ACCESS: u32 = uapi::DRM_VGSCHED_CPU_PREP_READ | uapi::DRM_VGSCHED_CPU_PREP_WRITE;
        let flags = args.flags;
        if flags & ACCESS == 0 || flags & !uapi::DRM_VGSCHED_CPU_PREP_FLAGS != 0 {
            return Err(EINVAL);
        }
        let bo = gem::lookup(file, args.handle)?;
        let write = flags & uapi::DRM_VGSCHED_CPU_PREP_WRITE != 0;
        // Preparing to write drops the device copy other files' jobs use.
        if write && !bo.may_write_held(file) {
            return Err(EACCES);
        }
        // A signal ends the wait with -ERESTARTSYS and the call is made
        // again: a relative timeout starts over, a deadline stays.
        let wait = match flags & uapi::DRM_VGSCHED_CPU_PREP_ABSOLUTE != 0 {
            true => fence::CpuWait::Until(args.timeout_ns),
            false => fence::CpuWait::For(args.timeout_ns),
        };
        fence::wait_for_cpu(&bo, write, wait)?;
        if write {
            Engine::drop_signalled(dev.engine.as_arc_borrow());
            dev.engine.device_memory().forget(&bo.copy);
            Engine::memory_released(dev.engine.as_arc_borrow());
        }
        Ok(0)
    }
}

/// `DRM_IOCTL_VGSCHED_SHARED_PUBLISH`: name a buffer object in a project's
/// shared storage (`projects/shared.rs`).
struct SharedPublish;

impl Ioctl for SharedPublish {
    type Arg = uapi::drm_vgsched_shared_publish;
    const NR: u32 = uapi::DRM_VGSCHED_SHARED_PUBLISH;
    const NAME: &'static CStr = c"VGSCHED_SHARED_PUBLISH";

    fn handle(
        dev: &VgDevice<drm::Registered>,
        args: &mut Self::Arg,
        file: &DrmFile,
    ) -> Result<u32> {
        if args.flags != 0 {
            return Err(EINVAL);
        }
        shared::publish(&dev.book, file, &args.path, args.handle)?;
        Ok(0)
    }
}

/// `DRM_IOCTL_VGSCHED_SHARED_OPEN`: a handle to a shared buffer object.
struct SharedOpen;

impl Ioctl for SharedOpen {
    type Arg = uapi::drm_vgsched_shared_open;
    const NR: u32 = uapi::DRM_VGSCHED_SHARED_OPEN;
    const NAME: &'static CStr = c"VGSCHED_SHARED_OPEN";

    fn handle(
        dev: &VgDevice<drm::Registered>,
        args: &mut Self::Arg,
        file: &DrmFile,
    ) -> Result<u32> {
        if args.flags & !uapi::DRM_VGSCHED_SHARED_OPEN_FLAGS != 0 || args.pad != 0 {
            return Err(EINVAL);
        }
        let write = args.flags & uapi::DRM_VGSCHED_SHARED_OPEN_WRITE != 0;
        let (handle, writable, size) = shared::open(&dev.book, file, &args.path, write)?;
        args.handle = handle;
        args.writable = u32::from(writable);
        args.size = size;
        Ok(0)
    }
}

/// `DRM_IOCTL_VGSCHED_SHARED_UNPUBLISH`: remove a name from shared storage.
struct SharedUnpublish;

impl Ioctl for SharedUnpublish {
    type Arg = uapi::drm_vgsched_shared_unpublish;
    const NR: u32 = uapi::DRM_VGSCHED_SHARED_UNPUBLISH;
    const NAME: &'static CStr = c"VGSCHED_SHARED_UNPUBLISH";

    fn handle(
        dev: &VgDevice<drm::Registered>,
        args: &mut Self::Arg,
        file: &DrmFile,
    ) -> Result<u32> {
        if args.flags != 0 || args.pad != 0 {
            return Err(EINVAL);
        }
        shared::unpublish(&dev.book, file, &args.path)?;
        Ok(0)
    }
}
