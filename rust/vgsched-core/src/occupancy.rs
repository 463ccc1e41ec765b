// SPDX-License-Identifier: GPL-2.0

//! What the execution units and modules have in use, and first-fit
//! placement of a work-group onto one module.
//!
//! A work-group runs on one execution module (its waves share the module's
//! shared memory); each of its waves occupies one wave slot and its vector
//! and scalar register blocks on one unit of that module. This is the
//! simple placement the first scheduler uses: modules in index order, each
//! wave on the first unit with room. Counts only; SEEDS C's contiguous
//! ranges and module choice replace it in the dispatch layer.
//!
//! The usage arrays are owned by the caller (the kernel keeps them in one
//! allocation); [`Occupancy`] is a view over them.

use super::grid::MAX_WAVES_PER_GROUP;
use super::topology::{limits, Topology};

/// Most units a (validated) module has.
const MAX_UNITS_PER_MODULE: usize = limits::UNITS_PER_MODULE.1 as usize;

/// What one wave of a job needs on its unit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaveNeeds {
    /// Vector register blocks.
    pub vgpr: u32,
    /// Scalar register blocks.
    pub sgpr: u32,
}

/// What one work-group of a job needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupNeeds {
    /// Waves in the work-group, all placed on one module.
    pub waves: u32,
    /// Needs of each wave.
    pub wave: WaveNeeds,
    /// Shared-memory blocks of the module.
    pub shared: u32,
}

/// Resources in use on one execution unit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnitUse {
    /// Occupied wave slots.
    pub waves: u32,
    /// Vector register blocks in use.
    pub vgpr: u32,
    /// Scalar register blocks in use.
    pub sgpr: u32,
}

/// Where a work-group's waves go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The execution module.
    pub module: u32,
    /// Unit (index within the module) of each wave; the first
    /// `GroupNeeds::waves` entries are meaningful.
    pub units: [u8; MAX_WAVES_PER_GROUP as usize],
}

/// Why a work-group can never be placed, even on an idle device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FitError {
    /// No waves, or more than a work-group may have.
    BadWaves,
    /// One wave needs more than a whole unit has.
    WaveTooBig,
    /// The work-group needs more than a whole module has.
    GroupTooBig,
}

/// A view of the device's usage arrays.
///
/// # Invariants
///
/// `units` has `modules * units_per_module` entries (module-major) and
/// `shared` has `modules` entries; usage never exceeds the topology.
pub struct Occupancy<'a> {
    topo: &'a Topology,
    units: &'a mut [UnitUse],
    shared: &'a mut [u32],
}

impl<'a> Occupancy<'a> {
    /// A view over `units` and `shared`, or `None` if their lengths do not
    /// match `topo`.
    pub fn new(topo: &'a Topology, units: &'a mut [UnitUse], shared: &'a mut [u32]) -> Option<Self> {
        let n = topo.modules as usize * topo.units_per_module as usize;
        (units.len() == n && shared.len() == topo.modules as usize)
            .then_some(Self { topo, units, shared })
    }

    /// Checks that `needs` fits an idle module, so it is worth queueing.
    pub fn check_fits(topo: &Topology, needs: &GroupNeeds) -> Result<(), FitError> {
        if needs.waves == 0 || needs.waves > MAX_WAVES_PER_GROUP {
            return Err(FitError::BadWaves);
        }
        if needs.wave.vgpr > topo.vgpr_blocks || needs.wave.sgpr > topo.sgpr_blocks {
            return Err(FitError::WaveTooBig);
        }
        // On an idle module every unit takes the same number of waves.
        let fit = |blocks: u32, need: u32| blocks.checked_div(need).unwrap_or(u32::MAX);
        let per_unit = topo
            .wave_slots
            .min(fit(topo.vgpr_blocks, needs.wave.vgpr))
            .min(fit(topo.sgpr_blocks, needs.wave.sgpr));
        let capacity = per_unit as u64 * topo.units_per_module as u64;
        if needs.shared > topo.shared_mem_blocks || (needs.waves as u64) > capacity {
            return Err(FitError::GroupTooBig);
        }
        Ok(())
    }

    fn unit_index(&self, module: u32, unit: u32) -> usize {
        (module * self.topo.units_per_module + unit) as usize
    }

    fn unit_has_room(&self, used: &UnitUse, wave: &WaveNeeds) -> bool {
        used.waves < self.topo.wave_slots
            && used.vgpr + wave.vgpr <= self.topo.vgpr_blocks
            && used.sgpr + wave.sgpr <= self.topo.sgpr_blocks
    }

    /// First-fit placement of a work-group, without taking anything.
    pub fn find(&self, needs: &GroupNeeds) -> Option<Placement> {
        let upm = self.topo.units_per_module as usize;
        'modules: for module in 0..self.topo.modules {
            if self.shared[module as usize] + needs.shared > self.topo.shared_mem_blocks {
                continue;
            }
            let first = self.unit_index(module, 0);
            // A scratch copy of this module's units to count tentative waves.
            let mut scratch = [UnitUse::default(); MAX_UNITS_PER_MODULE];
            let scratch = &mut scratch[..upm.min(MAX_UNITS_PER_MODULE)];
            for (s, u) in scratch.iter_mut().zip(&self.units[first..]) {
                *s = *u;
            }
            let mut placement = Placement { module, units: [0; MAX_WAVES_PER_GROUP as usize] };
            for wave in 0..needs.waves as usize {
                let Some(unit) = (0..scratch.len()).find(|&u| self.unit_has_room(&scratch[u], &needs.wave))
                else {
                    continue 'modules;
                };
                scratch[unit].waves += 1;
                scratch[unit].vgpr += needs.wave.vgpr;
                scratch[unit].sgpr += needs.wave.sgpr;
                placement.units[wave] = unit as u8;
            }
            return Some(placement);
        }
        None
    }

    /// Takes the resources of a placement [`Occupancy::find`] returned.
    pub fn take(&mut self, p: &Placement, needs: &GroupNeeds) {
        self.shared[p.module as usize] += needs.shared;
        for &unit in &p.units[..needs.waves as usize] {
            let i = self.unit_index(p.module, unit as u32);
            self.units[i].waves += 1;
            self.units[i].vgpr += needs.wave.vgpr;
            self.units[i].sgpr += needs.wave.sgpr;
        }
    }

    /// Gives back one wave's unit resources.
    pub fn release_wave(&mut self, module: u32, unit: u32, wave: &WaveNeeds) {
        let i = self.unit_index(module, unit);
        let used = &mut self.units[i];
        used.waves = used.waves.saturating_sub(1);
        used.vgpr = used.vgpr.saturating_sub(wave.vgpr);
        used.sgpr = used.sgpr.saturating_sub(wave.sgpr);
    }

    /// Gives back a work-group's shared memory.
    pub fn release_shared(&mut self, module: u32, shared: u32) {
        let used = &mut self.shared[module as usize];
        *used = used.saturating_sub(shared);
    }

    /// Usage of one unit.
    pub fn unit(&self, module: u32, unit: u32) -> UnitUse {
        self.units[self.unit_index(module, unit)]
    }

    /// Shared-memory blocks in use on a module.
    pub fn shared(&self, module: u32) -> u32 {
        self.shared[module as usize]
    }

    /// Whether nothing at all is in use.
    pub fn is_idle(&self) -> bool {
        self.shared.iter().all(|&s| s == 0) && self.units.iter().all(|u| *u == UnitUse::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo() -> Topology {
        Topology {
            modules: 2,
            units_per_module: 2,
            hw_slots: 8,
            time_slice_us: 10_000,
            vgpr_blocks: 8,
            sgpr_blocks: 4,
            wave_slots: 3,
            shared_mem_blocks: 10,
            ..Topology::DEFAULT
        }
    }

    fn needs(waves: u32, vgpr: u32, sgpr: u32, shared: u32) -> GroupNeeds {
        GroupNeeds { waves, wave: WaveNeeds { vgpr, sgpr }, shared }
    }

    #[test]
    fn fit_checks_name_the_reason() {
        let t = topo();
        assert_eq!(Occupancy::check_fits(&t, &needs(0, 1, 1, 0)), Err(FitError::BadWaves));
        assert_eq!(Occupancy::check_fits(&t, &needs(65, 1, 1, 0)), Err(FitError::BadWaves));
        assert_eq!(Occupancy::check_fits(&t, &needs(1, 9, 1, 0)), Err(FitError::WaveTooBig));
        assert_eq!(Occupancy::check_fits(&t, &needs(1, 1, 5, 0)), Err(FitError::WaveTooBig));
        assert_eq!(Occupancy::check_fits(&t, &needs(1, 1, 1, 11)), Err(FitError::GroupTooBig));
        // 2 units x min(3 slots, 8/4 vgpr, 4/1 sgpr) = 4 waves per module.
        assert_eq!(Occupancy::check_fits(&t, &needs(4, 4, 1, 10)), Ok(()));
        assert_eq!(Occupancy::check_fits(&t, &needs(5, 4, 1, 0)), Err(FitError::GroupTooBig));
        assert_eq!(Occupancy::check_fits(&t, &needs(6, 0, 0, 0)), Ok(()));
        assert_eq!(Occupancy::check_fits(&t, &needs(7, 0, 0, 0)), Err(FitError::GroupTooBig));
    }

    #[test]
    fn first_fit_fills_modules_in_order_and_releases() {
        let t = topo();
        let (mut units, mut shared) = ([UnitUse::default(); 4], [0u32; 2]);
        let mut occ = Occupancy::new(&t, &mut units, &mut shared).unwrap();
        let n = needs(3, 4, 1, 6);
        let a = occ.find(&n).unwrap();
        assert_eq!((a.module, &a.units[..3]), (0, &[0u8, 0, 1][..]));
        occ.take(&a, &n);
        // Module 0 has 4 shared blocks left: the next group goes to module 1.
        let b = occ.find(&n).unwrap();
        assert_eq!(b.module, 1);
        occ.take(&b, &n);
        assert_eq!(occ.find(&n), None);
        assert_eq!(occ.unit(0, 0), UnitUse { waves: 2, vgpr: 8, sgpr: 2 });
        for (i, &unit) in a.units[..3].iter().enumerate() {
            occ.release_wave(0, unit as u32, &n.wave);
            assert!(occ.find(&n).is_none(), "wave {i}: shared memory still held");
        }
        occ.release_shared(0, 6);
        assert_eq!(occ.find(&n).map(|p| p.module), Some(0));
        for &unit in &b.units[..3] {
            occ.release_wave(1, unit as u32, &n.wave);
        }
        occ.release_shared(1, 6);
        assert!(occ.is_idle());
    }

    #[test]
    fn wrong_array_sizes_are_refused() {
        let t = topo();
        let (mut units, mut shared) = ([UnitUse::default(); 3], [0u32; 2]);
        assert!(Occupancy::new(&t, &mut units, &mut shared).is_none());
    }
}
