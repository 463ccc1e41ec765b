// SPDX-License-Identifier: GPL-2.0

//! Jobs: one program run over a grid, as `DRM_IOCTL_VGSCHED_SUBMIT`
//! describes it, checked and turned into what the engine runs.
//!
//! Everything that can fail on bad input happens here, before the engine
//! sees the job, so a refused submission changes nothing.

use kernel::{
    drm::gem::{shmem::VMapOwned, BaseObject},
    io::Io,
    prelude::*,
    uaccess::{UserPtr, UserSlice},
};

use crate::{
    fence::Fence,
    file::DrmFile,
    gem::{Bo, VgObject},
    uapi,
    vgsched_core::{
        dispatch::BANDS,
        exec::Memory,
        grid::{Grid, GridError},
        isa::{self, Instr, Op},
        occupancy::{FitError, GroupNeeds, Occupancy, WaveNeeds},
        topology::Topology,
    },
};

/// Flags a submission may carry.
const KNOWN_FLAGS: u32 = uapi::DRM_VGSCHED_SUBMIT_FLAGS;

/// A checked job, ready to queue.
pub(crate) struct JobSpec {
    /// The validated program.
    pub(crate) program: KVec<Instr>,
    /// Kernel mappings of the bound buffer objects, by binding slot; they
    /// hold references, so the objects outlive the job.
    pub(crate) bindings: KVec<VMapOwned<VgObject>>,
    /// The grid.
    pub(crate) grid: Grid,
    /// What each work-group needs.
    pub(crate) needs: GroupNeeds,
    /// Work-groups do not depend on each other (SEEDS C3 may split them).
    pub(crate) independent: bool,
    /// Priority band of the work-groups in the dispatcher (SEEDS C1/C2).
    pub(crate) band: u8,
    /// Fence to wait for before starting.
    pub(crate) in_fence: Option<Fence>,
    /// Return a sync_file of the job's completion.
    pub(crate) want_out_fence: bool,
}

impl JobSpec {
    /// Checks a submission and gathers what the job needs.
    pub(crate) fn from_args(
        args: &uapi::drm_vgsched_submit,
        topo: &Topology,
        file: &DrmFile,
    ) -> Result<Self> {
        if args.flags & !KNOWN_FLAGS != 0 || args.group_priority >= BANDS as u32 {
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
            wave: WaveNeeds { vgpr: args.vgpr_blocks, sgpr: args.sgpr_blocks },
            shared: args.shared_mem_blocks,
        };
        let independent = args.flags & uapi::DRM_VGSCHED_SUBMIT_INDEPENDENT != 0;
        Occupancy::check_fits(topo, &needs, independent).map_err(|e| match e {
            FitError::BadWaves => EINVAL,
            FitError::WaveTooBig | FitError::GroupTooBig => E2BIG,
        })?;
        let bindings = bind_buffers(file, args.bindings, args.binding_count)?;
        let program = load_program(file, args.program_handle, args.program_instrs, bindings.len())?;
        let in_fence = if args.flags & uapi::DRM_VGSCHED_SUBMIT_IN_FENCE != 0 {
            Some(Fence::from_sync_file(args.in_fence_fd)?)
        } else {
            None
        };
        Ok(Self {
            program,
            bindings,
            grid,
            needs,
            independent,
            band: args.group_priority as u8,
            in_fence,
            want_out_fence: args.flags & uapi::DRM_VGSCHED_SUBMIT_OUT_FENCE != 0,
        })
    }
}

/// Looks up and maps the buffer objects named by `count` handles at user
/// address `pointer`.
fn bind_buffers(file: &DrmFile, pointer: u64, count: u32) -> Result<KVec<VMapOwned<VgObject>>> {
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
    let mut maps = KVec::with_capacity(count, GFP_KERNEL)?;
    for &handle in &handles[..count] {
        let bo = Bo::lookup_handle(file, handle)?;
        maps.push(bo.owned_vmap::<0>()?, GFP_KERNEL)?;
    }
    Ok(maps)
}

/// Copies and validates the program: `instrs` words from the start of the
/// buffer object `handle`.
fn load_program(file: &DrmFile, handle: u32, instrs: u32, bindings: usize) -> Result<KVec<Instr>> {
    let bo = Bo::lookup_handle(file, handle)?;
    let len = instrs as usize;
    if len == 0 || len > isa::MAX_INSTRS || len * isa::INSTR_BYTES > bo.size() {
        return Err(EINVAL);
    }
    let map = bo.owned_vmap::<0>()?;
    let mut words = KVec::with_capacity(len, GFP_KERNEL)?;
    for i in 0..len {
        let lo = (&map).try_read32(i * isa::INSTR_BYTES)?;
        let hi = (&map).try_read32(i * isa::INSTR_BYTES + 4)?;
        words.push(u64::from(lo) | u64::from(hi) << 32, GFP_KERNEL)?;
    }
    let filler = Instr { op: Op::End, rd: 0, ra: 0, rb: 0, imm: 0 };
    let mut program = KVec::from_elem(filler, len, GFP_KERNEL)?;
    isa::validate(&words, bindings, &mut program).map_err(|_| EINVAL)?;
    Ok(program)
}

/// [`Memory`] over a job's mapped buffer objects.
pub(crate) struct BoMemory<'a>(pub(crate) &'a [VMapOwned<VgObject>]);

impl BoMemory<'_> {
    fn offset(index: u64) -> Option<usize> {
        usize::try_from(index.checked_mul(4)?).ok()
    }
}

impl Memory for BoMemory<'_> {
    fn load(&mut self, slot: u8, index: u64) -> Option<u32> {
        let map = self.0.get(slot as usize)?;
        map.try_read32(Self::offset(index)?).ok()
    }

    fn store(&mut self, slot: u8, index: u64, value: u32) -> bool {
        let (Some(map), Some(offset)) = (self.0.get(slot as usize), Self::offset(index)) else {
            return false;
        };
        map.try_write32(value, offset).is_ok()
    }
}
