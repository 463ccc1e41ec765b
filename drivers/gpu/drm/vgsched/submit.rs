// SPDX-License-Identifier: GPL-2.0

//! `DRM_IOCTL_VGSCHED_SUBMIT`'s argument, checked and turned into a
//! [`JobSpec`] plus what implicit synchronisation needs (which bound
//! objects the job writes).
//!
//! Everything that can fail on bad input happens here, before the engine
//! sees the job, so a refused submission changes nothing.

use kernel::{
    drm::gem::BaseObject,
    prelude::*,
    uaccess::{
        UserPtr,
        UserSlice, //
    }, //
};

use crate::{
    fence::{
        Fence,
        Usage, //
    },
    file::DrmFile,
    gem::{
        self,
        Program,
        VgObject, //
    },
    job::{
        Bindings,
        JobSpec, //
    },
    uapi,
    vgsched_core::{
        dispatch::BANDS,
        grid::{
            Grid,
            GridError, //
        },
        isa::{
            self,
            Op, //
        },
        occupancy::{
            FitError,
            GroupNeeds,
            Occupancy,
            WaveNeeds, //
        },
        topology::Topology, //
    }, //
};

/// Flags a submission may carry.
const KNOWN_FLAGS: u32 = uapi::DRM_VGSCHED_SUBMIT_FLAGS;

/// A checked submission.
pub(crate) struct Submission {
    /// The job.
    pub(crate) spec: JobSpec,
    /// Per binding slot, how the job takes part in its object's implicit
    /// synchronisation (a writer where it may store).
    pub(crate) usage: [Usage; isa::MAX_BINDINGS],
}

impl Submission {
    /// Checks a submission and gathers what the job needs; `allowed_tiles`
    /// are the tiles its file may use.
    pub(crate) fn from_args(
        args: &uapi::drm_vgsched_submit,
        topo: &Topology,
        file: &DrmFile,
        allowed_tiles: u32,
    ) -> Result<Self> {
        if args.flags & !KNOWN_FLAGS != 0 || args.group_priority >= BANDS as u32 || args.pad != 0 {
            return Err(EINVAL);
        }
        let grid = Grid {
            groups: args.groups,
            waves_per_group: args.waves_per_group,
            threads_per_wave: args.threads_per_wave,
        };
        grid.validate().map_err(|e| match e {
            GridError::Empty => EINVAL,
            GridError::TooBig => E2BIG,
        })?;
        let needs = GroupNeeds {
            waves: args.waves_per_group,
            wave: WaveNeeds {
                vgpr: args.vgpr_blocks,
                sgpr: args.sgpr_blocks,
            },
            shared: args.shared_mem_blocks,
        };
        let independent = args.flags & uapi::DRM_VGSCHED_SUBMIT_INDEPENDENT != 0;
        Occupancy::check_fits(topo, &needs, independent).map_err(|e| match e {
            FitError::BadWaves => EINVAL,
            FitError::WaveTooBig | FitError::GroupTooBig => E2BIG,
        })?;
        let writes = binding_access(args)?;
        let mut usage = [Usage::Read; isa::MAX_BINDINGS];
        let bindings = bind_buffers(file, args.bindings, args.binding_count, &writes, &mut usage)?;
        let program = load_program(
            file,
            args.program_handle,
            args.program_instrs,
            bindings.len(),
        )?;
        // The binding of every store is an operand of the instruction, so
        // the validated program names all the slots it can write.
        if program
            .iter()
            .any(|i| i.op == Op::St && !writes.get(i.rb as usize).copied().unwrap_or(false))
        {
            return Err(EACCES);
        }
        let in_fence = if args.flags & uapi::DRM_VGSCHED_SUBMIT_IN_FENCE != 0 {
            Some(Fence::from_sync_file(args.in_fence_fd)?)
        } else {
            None
        };
        let spec = JobSpec {
            program,
            bindings,
            grid,
            needs,
            independent,
            band: args.group_priority as u8,
            in_fence,
            deps: None,
            want_out_fence: args.flags & uapi::DRM_VGSCHED_SUBMIT_OUT_FENCE != 0,
            scratch: args.scratch_bytes,
            tiles: args.tiles.max(1),
            allowed_tiles,
            reserved: Default::default(),
            charge: None,
            mock_cycles: 0,
        };
        Ok(Self { spec, usage })
    }
}

/// Whether the job may store to each binding slot, from
/// `binding_access`: 0 (what callers of uAPI 1.2 pass) is read-write,
/// `READ` read-only, `READ | WRITE` read-write; `WRITE` alone, unknown
/// bits and any bits on a slot past `binding_count` are `EINVAL`.
fn binding_access(args: &uapi::drm_vgsched_submit) -> Result<[bool; isa::MAX_BINDINGS]> {
    const READ: u32 = uapi::DRM_VGSCHED_BINDING_READ;
    const WRITE: u32 = uapi::DRM_VGSCHED_BINDING_WRITE;
    let count = args.binding_count as usize;
    let mut writes = [false; isa::MAX_BINDINGS];
    for (slot, (&access, write)) in args
        .binding_access
        .iter()
        .zip(writes.iter_mut())
        .enumerate()
    {
        *write = match access {
            0 if slot >= count => false,
            0 => true,
            _ if slot >= count => return Err(EINVAL),
            READ => false,
            a if a == READ | WRITE => true,
            _ => return Err(EINVAL),
        };
    }
    Ok(writes)
}

/// Looks up and maps the buffer objects named by `count` handles at user
/// address `pointer`. A handle of a dumb buffer or of another device's
/// imported dma-buf is `EINVAL` ([`gem::lookup`]), an unknown one `ENOENT`;
/// an object bound writable (`writes`) that the file may only read (a
/// read-only shared-storage open) is `EACCES`. Sets each slot's `usage`:
/// a writer, a reader, or a reader of a shared object the file may not
/// write, whose fence holds no writer back ([`Usage::ReadOnlyHolder`]).
fn bind_buffers(
    file: &DrmFile,
    pointer: u64,
    count: u32,
    writes: &[bool; isa::MAX_BINDINGS],
    usage: &mut [Usage; isa::MAX_BINDINGS],
) -> Result<Bindings> {
    let count = count as usize;
    if count > isa::MAX_BINDINGS {
        return Err(EINVAL);
    }
    let mut handles = [0u32; isa::MAX_BINDINGS];
    if count > 0 {
        let addr = usize::try_from(pointer).map_err(|_| EFAULT)?;
        let mut reader = UserSlice::new(UserPtr::from_addr(addr), count * 4).reader();
        for handle in &mut handles[..count] {
            *handle = reader.read::<u32>()?;
        }
    }
    let mut maps = Bindings::default();
    for ((&handle, &write), usage) in handles[..count].iter().zip(writes).zip(usage.iter_mut()) {
        let bo = gem::lookup(file, handle)?;
        let may_write = bo.may_write_held(file);
        if write && !may_write {
            return Err(EACCES);
        }
        *usage = match (write, bo.is_shared() && !may_write) {
            (true, _) => Usage::Write,
            (false, true) => Usage::ReadOnlyHolder,
            (false, false) => Usage::Read,
        };
        // What the CPU wrote through mmap() reaches this job (before any
        // reservation lock is taken).
        VgObject::take_cpu_written(&bo);
        maps.push(VgObject::keep_mapped(&bo)?)?;
    }
    Ok(maps)
}

/// The validated program: `instrs` instructions from the start of the
/// buffer object `handle` (cached by the object while it is unchanged).
fn load_program(file: &DrmFile, handle: u32, instrs: u32, bindings: usize) -> Result<Program> {
    let bo = gem::lookup(file, handle)?;
    let len = instrs as usize;
    if len == 0 || len > isa::MAX_INSTRS || len * isa::INSTR_BYTES > bo.size() {
        return Err(EINVAL);
    }
    VgObject::program(&bo, len, bindings)
}
