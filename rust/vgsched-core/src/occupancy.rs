// SPDX-License-Identifier: GPL-2.0

//! What the execution units and modules have in use, as bitmaps, and the
//! placement of a work-group onto one module as contiguous ranges.
//!
//! A work-group runs on one execution module (its waves share the module's
//! shared memory); each of its waves occupies one wave slot and a range of
//! vector and of scalar register blocks on one unit of that module. The design document
//! calls registers and shared memory *first-class* resources: they must be
//! allocated contiguously, so each is a bitmap searched with the resource
//! finder ([`super::bitmask`]) and handed out as start + count. Wave slots
//! are *second-class*: a count. Which unit each wave goes to is decided by
//! the caller (the split table, [`super::split`]); which module, by the
//! dispatcher.
//!
//! The maps are owned by the caller (the kernel keeps them in one
//! allocation); [`Occupancy`] is a view over them.

use super::bitmask::{
    clear_range,
    count_free,
    finds,
    largest_free_run,
    packed_first_runs_each,
    set_range,
    FinderKind,
    Search, //
};
use super::grid::MAX_WAVES_PER_GROUP;
use super::module_choice::FreeResources;
use super::split::RotatingPointer;
use super::topology::{
    limits,
    Topology, //
};

/// Most units a (validated) module has.
const MAX_UNITS_PER_MODULE: usize = limits::UNITS_PER_MODULE.1 as usize;

/// Per unit of a module: the starts of a work-group's vector and scalar
/// register ranges.
type UnitStarts = [(u32, u32); MAX_UNITS_PER_MODULE];

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

/// Where one wave runs: its unit and the first block of each of its
/// register ranges (each range is as long as the wave's need).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaveSlot {
    /// Unit within the module.
    pub unit: u8,
    /// First vector register block.
    pub vgpr_start: u16,
    /// First scalar register block.
    pub sgpr_start: u16,
}

/// Where a work-group runs and which contiguous ranges it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The execution module.
    pub module: u32,
    /// First shared-memory block (meaningless when the need is 0).
    pub shared_start: u32,
    /// Each wave's unit and register ranges; the first `GroupNeeds::waves`
    /// entries are meaningful. The waves a unit gets hold adjacent ranges:
    /// the unit's part of the work-group is one contiguous allocation.
    pub waves: [WaveSlot; MAX_WAVES_PER_GROUP as usize],
}

/// Where each map lives in the one array of words the caller owns: per
/// module the shared-memory map, then per unit its vector- and its
/// scalar-register map, each rounded up to whole words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapLayout {
    vgpr_words: usize,
    sgpr_words: usize,
    shared_words: usize,
    unit_words: usize,
    module_words: usize,
}

impl MapLayout {
    /// The layout for `topo`.
    pub fn new(topo: &Topology) -> Self {
        let words = |bits: u32| (bits as usize).div_ceil(64);
        let (vgpr_words, sgpr_words) = (words(topo.vgpr_blocks), words(topo.sgpr_blocks));
        let shared_words = words(topo.shared_mem_blocks);
        let unit_words = vgpr_words + sgpr_words;
        let module_words = shared_words + unit_words * topo.units_per_module as usize;
        Self {
            vgpr_words,
            sgpr_words,
            shared_words,
            unit_words,
            module_words,
        }
    }

    /// Words of bitmap the whole device needs.
    pub fn total_words(&self, topo: &Topology) -> usize {
        self.module_words * topo.modules as usize
    }

    fn shared(&self, module: u32) -> core::ops::Range<usize> {
        let at = self.module_words * module as usize;
        at..at + self.shared_words
    }

    fn vgpr(&self, module: u32, unit: u32) -> core::ops::Range<usize> {
        let at = self.module_words * module as usize
            + self.shared_words
            + self.unit_words * unit as usize;
        at..at + self.vgpr_words
    }

    fn sgpr(&self, module: u32, unit: u32) -> core::ops::Range<usize> {
        let at = self.vgpr(module, unit).end;
        at..at + self.sgpr_words
    }
}

/// A view of the device's resource maps: one bitmap per first-class
/// resource (set bit = block in use, as in Linux bitmaps) and a count of
/// occupied wave slots per unit. First-class resources are handed out as
/// start + count from the resource finder ([`super::bitmask`]).
///
/// # Invariants
///
/// `words` has [`MapLayout::total_words`] entries and `waves` one per unit
/// (module-major); a bit is set exactly while a placed wave or work-group
/// holds that block, and no count exceeds the topology.
pub struct Occupancy<'a> {
    topo: &'a Topology,
    layout: MapLayout,
    words: &'a mut [u64],
    waves: &'a mut [u32],
    finder: FinderKind,
    /// The largest free run of every map ([`Occupancy::with_summaries`]),
    /// kept equal to the maps by every change made through this view.
    summary: Option<&'a mut [u16]>,
    /// A change count per module ([`Occupancy::with_generations`]).
    generations: Option<&'a mut [u64]>,
}

/// A remembered verdict of [`Occupancy::matches_at`] for one channel and
/// one module: valid while the module's generation, the work-group's needs
/// and the module's rotating pointer are those it was computed for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CachedMatch {
    generation: u64,
    needs: GroupNeeds,
    pointer: RotatingPointer,
    fits: bool,
}

impl CachedMatch {
    /// Remembers nothing.
    pub const EMPTY: Self = Self {
        generation: u64::MAX,
        needs: GroupNeeds {
            waves: 0,
            wave: WaveNeeds { vgpr: 0, sgpr: 0 },
            shared: 0,
        },
        pointer: RotatingPointer::new(1),
        fits: false,
    };
}

/// Entries of the summaries of a device of shape `topo`: per module its
/// shared memory's largest free run, then per unit those of its vector and
/// its scalar registers.
pub fn summary_len(topo: &Topology) -> usize {
    topo.modules as usize * (1 + 2 * topo.units_per_module as usize)
}

impl<'a> Occupancy<'a> {
    /// A view over `words` and `waves`, or `None` if their lengths do not
    /// match `topo`. Ranges are found with the exact finder.
    pub fn new(topo: &'a Topology, words: &'a mut [u64], waves: &'a mut [u32]) -> Option<Self> {
        let layout = MapLayout::new(topo);
        (words.len() == layout.total_words(topo) && waves.len() == topo.total_units() as usize)
            .then_some(Self {
                topo,
                layout,
                words,
                waves,
                finder: FinderKind::Exact,
                summary: None,
                generations: None,
            })
    }

    /// Uses `summary` (of [`summary_len`] entries, else ignored), which
    /// must hold the largest free run of every map as they are now (what
    /// [`Occupancy::summarize`] writes), and keeps it so: every take and
    /// release recomputes the runs of the maps it changed, so matching a
    /// work-group compares numbers instead of scanning bitmaps.
    pub fn with_summaries(mut self, summary: &'a mut [u16]) -> Self {
        if summary.len() == summary_len(self.topo) {
            self.summary = Some(summary);
        }
        self
    }

    /// Counts every take and release in `generations` (one entry per
    /// module, else ignored), so a verdict remembered for a module
    /// ([`CachedMatch`]) is known stale once the module changed.
    pub fn with_generations(mut self, generations: &'a mut [u64]) -> Self {
        if generations.len() == self.topo.modules as usize {
            self.generations = Some(generations);
        }
        self
    }

    /// Records a change of `module`.
    fn changed(&mut self, module: u32) {
        if let Some(g) = self
            .generations
            .as_deref_mut()
            .and_then(|g| g.get_mut(module as usize))
        {
            *g = g.wrapping_add(1);
        }
    }

    /// [`Self::matches_at`], answered from `memo` when it still holds (the
    /// module did not change since, same needs and pointer), and
    /// remembered there otherwise. Without generations it is never used.
    pub fn matches_memo(
        &self,
        module: u32,
        needs: &GroupNeeds,
        pointer: &RotatingPointer,
        memo: &mut CachedMatch,
    ) -> bool {
        let generation = self
            .generations
            .as_deref()
            .and_then(|g| g.get(module as usize))
            .copied();
        let Some(generation) = generation else {
            return self.matches_at(module, needs, pointer);
        };
        if memo.generation == generation && memo.needs == *needs && memo.pointer == *pointer {
            return memo.fits;
        }
        let fits = self.matches_at(module, needs, pointer);
        *memo = CachedMatch {
            generation,
            needs: *needs,
            pointer: *pointer,
            fits,
        };
        fits
    }

    /// Recomputes every map's summary from the bitmaps.
    pub fn summarize(&mut self) {
        for m in 0..self.topo.modules {
            self.resum_shared(m);
            for u in 0..self.topo.units_per_module {
                self.resum_unit(m, u);
            }
        }
    }

    /// The summaries in use, for checks.
    pub fn summaries(&self) -> Option<&[u16]> {
        self.summary.as_deref()
    }

    fn sum_base(&self, module: u32) -> usize {
        module as usize * (1 + 2 * self.topo.units_per_module as usize)
    }

    fn largest_of(map: &[u64], bits: u32) -> u16 {
        largest_free_run(map, bits as usize).map_or(0, |(_, n)| n.min(usize::from(u16::MAX)) as u16)
    }

    fn resum_shared(&mut self, module: u32) {
        let at = self.sum_base(module);
        let v = Self::largest_of(self.shared_map(module), self.topo.shared_mem_blocks);
        if let Some(e) = self.summary.as_deref_mut().and_then(|s| s.get_mut(at)) {
            *e = v;
        }
    }

    fn resum_unit(&mut self, module: u32, unit: u32) {
        let at = self.sum_base(module) + 1 + 2 * unit as usize;
        let v = Self::largest_of(self.vgpr_map(module, unit), self.topo.vgpr_blocks);
        let g = Self::largest_of(self.sgpr_map(module, unit), self.topo.sgpr_blocks);
        if let Some(s) = self.summary.as_deref_mut() {
            if let Some(e) = s.get_mut(at) {
                *e = v;
            }
            if let Some(e) = s.get_mut(at + 1) {
                *e = g;
            }
        }
    }

    /// Whether a work-group with `needs` matches `module` with wave `k` on
    /// unit `wave_units[k]`: `try_place(..).is_some()`, answered from the
    /// summaries when there are some. A finder finds no run longer than the
    /// largest, so a summary below the need rejects the module at once; the
    /// exact finder finds one whenever the largest is long enough, so with
    /// it the summaries alone decide. The approximate finders may still
    /// miss: a module they pass is checked on the bitmaps.
    pub fn matches(&self, module: u32, needs: &GroupNeeds, wave_units: &[u8]) -> bool {
        if self.summary.is_none() {
            return self.try_place(module, needs, wave_units).is_some();
        }
        let waves = needs.waves as usize;
        if waves > MAX_WAVES_PER_GROUP as usize || wave_units.len() < waves {
            return false;
        }
        let mut per_unit = [0u8; MAX_UNITS_PER_MODULE];
        for &unit in &wave_units[..waves] {
            match per_unit.get_mut(unit as usize) {
                Some(c) if u32::from(unit) < self.topo.units_per_module => *c += 1,
                _ => return false,
            }
        }
        self.matches_counts(module, needs, &per_unit)
            .unwrap_or_else(|| self.try_place(module, needs, wave_units).is_some())
    }

    /// [`Self::matches`] from the summaries alone, given how many of the
    /// work-group's waves go to each unit (`counts`, as
    /// [`super::split::RotatingPointer::counts`] gives them): `Some` when
    /// the summaries decide (a summary below the need rejects; with the
    /// exact finder, enough everywhere accepts), `None` when the bitmaps
    /// must be searched (no summaries, or an approximate finder passed).
    pub fn matches_counts(&self, module: u32, needs: &GroupNeeds, counts: &[u8]) -> Option<bool> {
        let sum = self.summary.as_deref()?;
        if module >= self.topo.modules {
            return Some(false);
        }
        let base = self.sum_base(module);
        let fits =
            |at: usize, need: u32| need == 0 || sum.get(at).is_some_and(|&l| u32::from(l) >= need);
        if !fits(base, needs.shared) {
            return Some(false);
        }
        let units = self.topo.units_per_module as usize;
        let mut placed = 0u32;
        for (unit, &count) in counts.iter().enumerate() {
            if count == 0 {
                continue;
            }
            let count = u32::from(count);
            let at = base + 1 + 2 * unit;
            if unit >= units
                || self.unit_waves(module, unit as u32) + count > self.topo.wave_slots
                || !fits(at, count * needs.wave.vgpr)
                || !fits(at + 1, count * needs.wave.sgpr)
            {
                return Some(false);
            }
            placed += count;
        }
        if placed != needs.waves {
            return Some(false);
        }
        self.finder.is_exact().then_some(true)
    }

    /// Whether a work-group with `needs` fits `module` with its waves
    /// spread over the units as `pointer` (the module's rotating pointer)
    /// spreads them: [`Self::matches_counts`] on the pointer's counts,
    /// searching the bitmaps only when the summaries cannot decide.
    pub fn matches_at(&self, module: u32, needs: &GroupNeeds, pointer: &RotatingPointer) -> bool {
        let units = self.topo.units_per_module;
        let counts = pointer.counts(needs.waves, units);
        self.matches_counts(module, needs, &counts)
            .unwrap_or_else(|| {
                let mut wave_units = [0u8; MAX_WAVES_PER_GROUP as usize];
                pointer.wave_units(needs.waves, units, &mut wave_units);
                self.try_place(module, needs, &wave_units).is_some()
            })
    }

    /// Uses `finder` to find free ranges (an approximate finder may miss a
    /// range that exists, never return one that does not).
    pub fn with_finder(mut self, finder: FinderKind) -> Self {
        self.finder = finder;
        self
    }

    /// Checks that a work-group with `needs` fits an idle module, so it is
    /// worth queueing. With `independent`, only one wave (plus the shared
    /// memory) must fit: the dispatcher may split such a group into
    /// single-wave pieces (splitting).
    pub fn check_fits(
        topo: &Topology,
        needs: &GroupNeeds,
        independent: bool,
    ) -> Result<(), FitError> {
        if needs.waves == 0 || needs.waves > MAX_WAVES_PER_GROUP {
            return Err(FitError::BadWaves);
        }
        if needs.wave.vgpr > topo.vgpr_blocks || needs.wave.sgpr > topo.sgpr_blocks {
            return Err(FitError::WaveTooBig);
        }
        if needs.shared > topo.shared_mem_blocks {
            return Err(FitError::GroupTooBig);
        }
        // The split table gives an idle unit at most ceil(waves / units)
        // waves, each holding its register blocks.
        let fit = |blocks: u32, need: u32| blocks.checked_div(need).unwrap_or(u32::MAX);
        let per_unit = topo
            .wave_slots
            .min(fit(topo.vgpr_blocks, needs.wave.vgpr))
            .min(fit(topo.sgpr_blocks, needs.wave.sgpr));
        let capacity = u64::from(per_unit) * u64::from(topo.units_per_module);
        if !independent && u64::from(needs.waves) > capacity {
            return Err(FitError::GroupTooBig);
        }
        Ok(())
    }

    /// Checks that a work-group with `needs` can ever be placed on an idle
    /// module when ranges are found with `finder`: [`Occupancy::check_fits`]
    /// plus the finder's rounding. The grouped finder searches lengths
    /// rounded up to whole groups and sees only the whole groups of a map;
    /// the sampled one searches lengths rounded up to a power of two
    /// ([`FinderKind::search_len`]). So on a 48-block module the sampled
    /// finder never places a need of 33 to 48 blocks (it looks for 64).
    /// A unit gets at most `ceil(waves / units)` waves of a whole group
    /// (the split table), one wave of a split piece.
    pub fn check_placeable(
        topo: &Topology,
        needs: &GroupNeeds,
        independent: bool,
        finder: FinderKind,
    ) -> Result<(), FitError> {
        Self::check_fits(topo, needs, independent)?;
        // `search_len(1)` is the finder's granule (the group size of the
        // grouped finder, else 1): a map of `bits` blocks offers whole
        // granules only.
        let granule = finder.search_len(1).max(1);
        let found = |bits: u32, len: Option<u32>| match len {
            Some(0) => true,
            Some(len) => {
                let bits = bits as usize;
                finder.search_len(len as usize) <= bits - bits % granule
            }
            None => false,
        };
        if !found(topo.shared_mem_blocks, Some(needs.shared)) {
            return Err(FitError::GroupTooBig);
        }
        let per_unit = if independent {
            1
        } else {
            needs.waves.div_ceil(topo.units_per_module.max(1))
        };
        let vgpr = per_unit.checked_mul(needs.wave.vgpr);
        let sgpr = per_unit.checked_mul(needs.wave.sgpr);
        if found(topo.vgpr_blocks, vgpr) && found(topo.sgpr_blocks, sgpr) {
            Ok(())
        } else if per_unit == 1 {
            Err(FitError::WaveTooBig)
        } else {
            Err(FitError::GroupTooBig)
        }
    }

    /// The vector-register map of a unit.
    pub fn vgpr_map(&self, module: u32, unit: u32) -> &[u64] {
        &self.words[self.layout.vgpr(module, unit)]
    }

    /// The scalar-register map of a unit.
    pub fn sgpr_map(&self, module: u32, unit: u32) -> &[u64] {
        &self.words[self.layout.sgpr(module, unit)]
    }

    /// The shared-memory map of a module.
    pub fn shared_map(&self, module: u32) -> &[u64] {
        &self.words[self.layout.shared(module)]
    }

    /// Occupied wave slots of a unit.
    pub fn unit_waves(&self, module: u32, unit: u32) -> u32 {
        self.waves[self.unit_index(module, unit)]
    }

    fn unit_index(&self, module: u32, unit: u32) -> usize {
        (module * self.topo.units_per_module + unit) as usize
    }

    fn find(&self, map: &[u64], nbits: u32, len: u32) -> Option<u32> {
        if len == 0 {
            return Some(0);
        }
        finds(self.finder, map, nbits as usize, len as usize).map(|s| s as u32)
    }

    /// Places a work-group on `module` with wave `k` on unit
    /// `wave_units[k]` (the split table's combination), without taking
    /// anything: each unit needs its wave slots and one contiguous range of
    /// each register class for all its waves, the module one range of
    /// shared memory. `None` if the module does not match.
    pub fn try_place(
        &self,
        module: u32,
        needs: &GroupNeeds,
        wave_units: &[u8],
    ) -> Option<Placement> {
        let waves = needs.waves as usize;
        if module >= self.topo.modules
            || waves > MAX_WAVES_PER_GROUP as usize
            || wave_units.len() < waves
        {
            return None;
        }
        let mut per_unit = [0u32; MAX_UNITS_PER_MODULE];
        for &unit in &wave_units[..waves] {
            *per_unit
                .get_mut(unit as usize)
                .filter(|_| u32::from(unit) < self.topo.units_per_module)? += 1;
        }
        let units = self.topo.units_per_module as usize;
        for (unit, &count) in per_unit.iter().enumerate().take(units) {
            if count > 0 && self.unit_waves(module, unit as u32) + count > self.topo.wave_slots {
                return None;
            }
        }
        let (shared_start, mut starts) = match self.finder {
            FinderKind::Packed => self.find_packed(module, needs, &per_unit)?,
            _ => self.find_each(module, needs, &per_unit)?,
        };
        let mut p = Placement {
            module,
            shared_start,
            waves: [WaveSlot::default(); MAX_WAVES_PER_GROUP as usize],
        };
        // Each wave takes the next piece of its unit's ranges.
        for (slot, &unit) in p.waves.iter_mut().zip(&wave_units[..waves]) {
            let (vgpr, sgpr) = &mut starts[unit as usize];
            *slot = WaveSlot {
                unit,
                vgpr_start: *vgpr as u16,
                sgpr_start: *sgpr as u16,
            };
            *vgpr += needs.wave.vgpr;
            *sgpr += needs.wave.sgpr;
        }
        Some(p)
    }

    /// The ranges a work-group of `needs` with `per_unit` waves on each
    /// unit takes on `module`, one search after the other: the start of
    /// its shared memory, and per unit the starts of its vector and scalar
    /// registers.
    fn find_each(
        &self,
        module: u32,
        needs: &GroupNeeds,
        per_unit: &[u32; MAX_UNITS_PER_MODULE],
    ) -> Option<(u32, UnitStarts)> {
        let t = &self.topo;
        let shared = self.find(self.shared_map(module), t.shared_mem_blocks, needs.shared)?;
        let mut starts = [(0u32, 0u32); MAX_UNITS_PER_MODULE];
        for (unit, count) in self.units_with_waves(per_unit) {
            let u = unit as u32;
            let vgpr = self.find(
                self.vgpr_map(module, u),
                t.vgpr_blocks,
                count * needs.wave.vgpr,
            )?;
            let sgpr = self.find(
                self.sgpr_map(module, u),
                t.sgpr_blocks,
                count * needs.wave.sgpr,
            )?;
            starts[unit] = (vgpr, sgpr);
        }
        Some((shared, starts))
    }

    /// The module's units a work-group has waves on, with how many
    /// (`per_unit`, of [`Occupancy::find_each`]), in unit order.
    fn units_with_waves<'p>(
        &self,
        per_unit: &'p [u32; MAX_UNITS_PER_MODULE],
    ) -> impl Iterator<Item = (usize, u32)> + 'p {
        per_unit
            .iter()
            .copied()
            .enumerate()
            .take(self.topo.units_per_module as usize)
            .filter(|&(_, count)| count > 0)
    }

    /// [`Occupancy::find_each`]'s answers from the time-multiplexed
    /// finder: the searches (shared memory, then the scalar registers of
    /// each unit with waves, then their vector registers) packed into
    /// periods of [`super::bitmask::PACK_WIDTH`] bits, one pass each
    /// ([`packed_first_runs_each`]). At the default sizes the shared and
    /// scalar maps share periods and a vector map takes a whole one.
    fn find_packed(
        &self,
        module: u32,
        needs: &GroupNeeds,
        per_unit: &[u32; MAX_UNITS_PER_MODULE],
    ) -> Option<(u32, UnitStarts)> {
        let t = &self.topo;
        let used = || self.units_with_waves(per_unit);
        let mut unit_of = [0usize; MAX_UNITS_PER_MODULE];
        let mut n = 0;
        for ((unit, _), u) in used().zip(unit_of.iter_mut()) {
            *u = unit;
            n += 1;
        }
        let shared_search = core::iter::once(Search {
            map: self.shared_map(module),
            nbits: t.shared_mem_blocks as usize,
            len: needs.shared as usize,
        });
        let sgprs = used().map(|(unit, count)| Search {
            map: self.sgpr_map(module, unit as u32),
            nbits: t.sgpr_blocks as usize,
            len: (count * needs.wave.sgpr) as usize,
        });
        let vgprs = used().map(|(unit, count)| Search {
            map: self.vgpr_map(module, unit as u32),
            nbits: t.vgpr_blocks as usize,
            len: (count * needs.wave.vgpr) as usize,
        });
        let (mut shared, mut found) = (None, true);
        let mut starts = [(0u32, 0u32); MAX_UNITS_PER_MODULE];
        let searches = shared_search.chain(sgprs).chain(vgprs);
        packed_first_runs_each(searches, |i, answer| {
            let Some(start) = answer else {
                found = false;
                return;
            };
            // Position 0 is shared memory, 1 to n the scalar maps, then
            // the vector maps, of the units in `unit_of`'s order.
            let (j, scalar) = match i.checked_sub(1) {
                None => {
                    shared = Some(start as u32);
                    return;
                }
                Some(j) if j < n => (j, true),
                Some(j) => (j - n, false),
            };
            let slot = unit_of.get(j).and_then(|&u| starts.get_mut(u));
            match (slot, scalar) {
                (Some(s), true) => s.1 = start as u32,
                (Some(s), false) => s.0 = start as u32,
                (None, _) => found = false,
            }
        });
        let shared = shared.filter(|_| found)?;
        Some((shared, starts))
    }

    /// Takes the resources of a placement [`Occupancy::try_place`] returned.
    pub fn take(&mut self, p: &Placement, needs: &GroupNeeds) {
        let shared = self.layout.shared(p.module);
        set_range(
            &mut self.words[shared],
            p.shared_start as usize,
            needs.shared as usize,
        );
        self.changed(p.module);
        let mut touched = 0u32;
        for w in &p.waves[..needs.waves as usize] {
            self.change_wave(p.module, w, &needs.wave, true);
            touched |= 1u32.checked_shl(u32::from(w.unit)).unwrap_or(0);
        }
        if self.summary.is_some() {
            self.resum_shared(p.module);
            for unit in 0..self.topo.units_per_module.min(32) {
                if touched & (1 << unit) != 0 {
                    self.resum_unit(p.module, unit);
                }
            }
        }
    }

    fn change_wave(&mut self, module: u32, w: &WaveSlot, need: &WaveNeeds, take: bool) {
        let unit = u32::from(w.unit);
        let fill = if take { set_range } else { clear_range };
        let vgpr = self.layout.vgpr(module, unit);
        fill(
            &mut self.words[vgpr],
            w.vgpr_start as usize,
            need.vgpr as usize,
        );
        let sgpr = self.layout.sgpr(module, unit);
        fill(
            &mut self.words[sgpr],
            w.sgpr_start as usize,
            need.sgpr as usize,
        );
        let i = self.unit_index(module, unit);
        self.waves[i] = if take {
            self.waves[i] + 1
        } else {
            self.waves[i].saturating_sub(1)
        };
    }

    /// Gives back one wave's slot and register ranges.
    pub fn release_wave(&mut self, module: u32, w: &WaveSlot, need: &WaveNeeds) {
        self.change_wave(module, w, need, false);
        self.changed(module);
        if self.summary.is_some() {
            self.resum_unit(module, u32::from(w.unit));
        }
    }

    /// Gives back a work-group's shared memory: `len` blocks from `start`
    /// on `module`.
    pub fn release_shared(&mut self, module: u32, start: u32, len: u32) {
        let range = self.layout.shared(module);
        clear_range(&mut self.words[range], start as usize, len as usize);
        self.changed(module);
        if self.summary.is_some() {
            self.resum_shared(module);
        }
    }

    /// What remains free on `module`, for choosing between modules (module choice):
    /// first-class resources as largest contiguous runs (summed over the
    /// units for per-unit ones), wave slots as a count.
    pub fn remaining(&self, module: u32) -> FreeResources {
        let t = self.topo;
        if let Some(sum) = self.summary.as_deref() {
            let base = self.sum_base(module);
            let at = |i: usize| u64::from(sum.get(i).copied().unwrap_or(0));
            let mut r = FreeResources {
                shared: at(base),
                ..FreeResources::default()
            };
            for unit in 0..t.units_per_module {
                let i = base + 1 + 2 * unit as usize;
                r.vgpr += at(i);
                r.sgpr += at(i + 1);
                r.waves +=
                    u64::from(t.wave_slots - self.unit_waves(module, unit).min(t.wave_slots));
            }
            return r;
        }
        let largest = |map: &[u64], bits: u32| {
            largest_free_run(map, bits as usize).map_or(0, |(_, n)| n as u64)
        };
        let mut r = FreeResources {
            shared: largest(self.shared_map(module), t.shared_mem_blocks),
            ..FreeResources::default()
        };
        for unit in 0..t.units_per_module {
            r.vgpr += largest(self.vgpr_map(module, unit), t.vgpr_blocks);
            r.sgpr += largest(self.sgpr_map(module, unit), t.sgpr_blocks);
            r.waves += u64::from(t.wave_slots - self.unit_waves(module, unit).min(t.wave_slots));
        }
        r
    }

    /// Blocks in use of each first-class resource and occupied wave slots
    /// on `module`: (vgpr, sgpr, shared, waves).
    pub fn used(&self, module: u32) -> (u32, u32, u32, u32) {
        let t = self.topo;
        let used = |map: &[u64], bits: u32| bits - count_free(map, bits as usize) as u32;
        let mut u = (0, 0, used(self.shared_map(module), t.shared_mem_blocks), 0);
        for unit in 0..t.units_per_module {
            u.0 += used(self.vgpr_map(module, unit), t.vgpr_blocks);
            u.1 += used(self.sgpr_map(module, unit), t.sgpr_blocks);
            u.3 += self.unit_waves(module, unit);
        }
        u
    }

    /// Whether nothing at all is in use.
    pub fn is_idle(&self) -> bool {
        self.words.iter().all(|&w| w == 0) && self.waves.iter().all(|&n| n == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::bitmask::{
        naive,
        PACK_WIDTH, //
    };
    use super::super::rng::Rng;
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
        GroupNeeds {
            waves,
            wave: WaveNeeds { vgpr, sgpr },
            shared,
        }
    }

    struct Maps {
        words: [u64; 64],
        waves: [u32; 16],
        len: (usize, usize),
    }

    impl Maps {
        fn new(t: &Topology) -> Self {
            let len = (MapLayout::new(t).total_words(t), t.total_units() as usize);
            Self {
                words: [0; 64],
                waves: [0; 16],
                len,
            }
        }

        fn occ<'a>(&'a mut self, t: &'a Topology) -> Occupancy<'a> {
            Occupancy::new(
                t,
                &mut self.words[..self.len.0],
                &mut self.waves[..self.len.1],
            )
            .unwrap()
        }
    }

    #[test]
    fn fit_checks_name_the_reason() {
        let t = topo();
        let fits = |n: GroupNeeds| Occupancy::check_fits(&t, &n, false);
        assert_eq!(fits(needs(0, 1, 1, 0)), Err(FitError::BadWaves));
        assert_eq!(fits(needs(65, 1, 1, 0)), Err(FitError::BadWaves));
        assert_eq!(fits(needs(1, 9, 1, 0)), Err(FitError::WaveTooBig));
        assert_eq!(fits(needs(1, 1, 5, 0)), Err(FitError::WaveTooBig));
        assert_eq!(fits(needs(1, 1, 1, 11)), Err(FitError::GroupTooBig));
        // 2 units x min(3 slots, 8/4 vgpr, 4/1 sgpr) = 4 waves per module.
        assert_eq!(fits(needs(4, 4, 1, 10)), Ok(()));
        assert_eq!(fits(needs(5, 4, 1, 0)), Err(FitError::GroupTooBig));
        assert_eq!(fits(needs(6, 0, 0, 0)), Ok(()));
        assert_eq!(fits(needs(7, 0, 0, 0)), Err(FitError::GroupTooBig));
        // An independent group may be larger than a module: it can be split.
        assert_eq!(Occupancy::check_fits(&t, &needs(7, 4, 1, 0), true), Ok(()));
        assert_eq!(
            Occupancy::check_fits(&t, &needs(7, 9, 1, 0), true),
            Err(FitError::WaveTooBig)
        );
        assert_eq!(
            Occupancy::check_fits(&t, &needs(7, 1, 1, 11), true),
            Err(FitError::GroupTooBig)
        );
    }

    /// Whether `needs` is placed on an idle device by `finder`: the real
    /// search on empty maps, whole and (if independent) as one-wave pieces.
    fn placed_on_idle(t: &Topology, n: &GroupNeeds, independent: bool, finder: FinderKind) -> bool {
        use super::super::split::RotatingPointer;
        if Occupancy::check_fits(t, n, independent).is_err() {
            return false;
        }
        let mut maps = Maps::new(t);
        let occ = maps.occ(t).with_finder(finder);
        let place = |n: &GroupNeeds| {
            let mut units = [0u8; MAX_WAVES_PER_GROUP as usize];
            RotatingPointer::new(t.units_per_module).wave_units(
                n.waves,
                t.units_per_module,
                &mut units,
            );
            occ.try_place(0, n, &units).is_some()
        };
        place(n) || (independent && place(&GroupNeeds { waves: 1, ..*n }))
    }

    #[test]
    fn placeable_agrees_with_the_finders_on_every_need() {
        let finders = [
            FinderKind::Exact,
            FinderKind::Grouped { group: 4 },
            FinderKind::Sampled,
        ];
        // The default device, and one whose sizes are not multiples of a
        // group nor powers of two.
        let odd = Topology {
            units_per_module: 3,
            vgpr_blocks: 30,
            sgpr_blocks: 13,
            wave_slots: 5,
            shared_mem_blocks: 50,
            ..Topology::DEFAULT
        };
        for t in [Topology::DEFAULT, odd] {
            for finder in finders {
                for independent in [false, true] {
                    for shared in 0..=t.shared_mem_blocks + 1 {
                        let n = needs(2, 1, 1, shared);
                        let want = placed_on_idle(&t, &n, independent, finder);
                        let got = Occupancy::check_placeable(&t, &n, independent, finder);
                        assert_eq!(got.is_ok(), want, "{finder:?} shared {shared}");
                    }
                    for waves in 1..=2 * t.units_per_module + 1 {
                        for vgpr in 0..=t.vgpr_blocks + 1 {
                            let n = needs(waves, vgpr, 1, 0);
                            let want = placed_on_idle(&t, &n, independent, finder);
                            let got = Occupancy::check_placeable(&t, &n, independent, finder);
                            assert_eq!(
                                got.is_ok(),
                                want,
                                "{finder:?} {waves} waves of {vgpr} vgpr"
                            );
                        }
                        for sgpr in 0..=t.sgpr_blocks + 1 {
                            let n = needs(waves, 1, sgpr, 0);
                            let want = placed_on_idle(&t, &n, independent, finder);
                            let got = Occupancy::check_placeable(&t, &n, independent, finder);
                            assert_eq!(
                                got.is_ok(),
                                want,
                                "{finder:?} {waves} waves of {sgpr} sgpr"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn placeable_names_the_rounded_needs() {
        let t = Topology::DEFAULT;
        let check =
            |shared, finder| Occupancy::check_placeable(&t, &needs(1, 1, 1, shared), false, finder);
        // Sampled: 33..=48 blocks look for 64 on a 48-block module.
        assert_eq!(check(32, FinderKind::Sampled), Ok(()));
        for shared in 33..=48 {
            assert_eq!(
                check(shared, FinderKind::Sampled),
                Err(FitError::GroupTooBig)
            );
            assert_eq!(check(shared, FinderKind::Exact), Ok(()));
        }
        // Grouped by 4 on a 50-block module: 49 and 50 round to 52.
        let t = Topology {
            shared_mem_blocks: 50,
            ..Topology::DEFAULT
        };
        let grouped = |shared| {
            Occupancy::check_placeable(
                &t,
                &needs(1, 1, 1, shared),
                false,
                FinderKind::Grouped { group: 4 },
            )
        };
        assert_eq!(grouped(48), Ok(()));
        assert_eq!(grouped(49), Err(FitError::GroupTooBig));
        // One wave rounded past its unit is a wave too big.
        let t = Topology {
            vgpr_blocks: 126,
            ..Topology::DEFAULT
        };
        let wave = |vgpr| {
            Occupancy::check_placeable(
                &t,
                &needs(1, vgpr, 1, 0),
                false,
                FinderKind::Grouped { group: 4 },
            )
        };
        assert_eq!(wave(124), Ok(()));
        assert_eq!(wave(125), Err(FitError::WaveTooBig));
    }

    #[test]
    fn a_unit_gets_one_contiguous_range_for_its_waves() {
        let t = topo();
        let mut m = Maps::new(&t);
        let mut occ = m.occ(&t);
        let n = needs(3, 2, 1, 4);
        let p = occ.try_place(0, &n, &[1, 1, 0]).unwrap();
        assert_eq!(p.shared_start, 0);
        assert_eq!(
            &p.waves[..3],
            &[
                WaveSlot {
                    unit: 1,
                    vgpr_start: 0,
                    sgpr_start: 0
                },
                WaveSlot {
                    unit: 1,
                    vgpr_start: 2,
                    sgpr_start: 1
                },
                WaveSlot {
                    unit: 0,
                    vgpr_start: 0,
                    sgpr_start: 0
                },
            ]
        );
        occ.take(&p, &n);
        assert_eq!(occ.vgpr_map(0, 1)[0], 0b1111);
        assert_eq!(occ.sgpr_map(0, 1)[0], 0b11);
        assert_eq!(occ.shared_map(0)[0], 0b1111);
        assert_eq!(occ.used(0), (6, 3, 4, 3));
        // The next group on unit 1 starts after the first one's range.
        let q = occ.try_place(0, &needs(1, 2, 1, 0), &[1]).unwrap();
        assert_eq!(
            q.waves[0],
            WaveSlot {
                unit: 1,
                vgpr_start: 4,
                sgpr_start: 2
            }
        );
        // Unit 1 has one wave slot left: two more waves do not match.
        assert_eq!(occ.try_place(0, &needs(2, 1, 0, 0), &[1, 1]), None);
        // A unit index beyond the module is refused, not a panic.
        assert_eq!(occ.try_place(0, &needs(1, 1, 0, 0), &[2]), None);
        occ.release_wave(0, &p.waves[1], &n.wave);
        assert_eq!(occ.vgpr_map(0, 1)[0], 0b0011);
        occ.release_wave(0, &p.waves[0], &n.wave);
        occ.release_wave(0, &p.waves[2], &n.wave);
        occ.release_shared(p.module, p.shared_start, n.shared);
        assert!(occ.is_idle());
    }

    #[test]
    fn fragmentation_is_seen_by_contiguity_not_counts() {
        let t = topo();
        let mut m = Maps::new(&t);
        let mut occ = m.occ(&t);
        // Three one-wave groups of 2 vgpr blocks on unit 0, then free the
        // middle one: 4 blocks are free but the largest run is 2 + 2 apart.
        let n = needs(1, 2, 0, 0);
        let ps: [Placement; 3] = core::array::from_fn(|_| {
            let p = occ.try_place(0, &n, &[0]).unwrap();
            occ.take(&p, &n);
            p
        });
        occ.release_wave(0, &ps[1].waves[0], &n.wave);
        assert_eq!(occ.remaining(0).vgpr, 2 + 8);
        // 4 contiguous blocks: not on unit 0 (2 + 2 split), yes on unit 1.
        assert_eq!(occ.try_place(0, &needs(1, 4, 0, 0), &[0]), None);
        assert!(occ.try_place(0, &needs(1, 4, 0, 0), &[1]).is_some());
        let r = occ.remaining(0);
        assert_eq!((r.shared, r.waves, r.sgpr), (10, 4, 8));
    }

    /// Random placements and releases against a model that records every
    /// live range: nothing ever overlaps, the maps are exactly the union of
    /// live ranges, and a placement is refused only when a unit or the
    /// module really lacks a contiguous run or a slot.
    #[test]
    fn random_placements_never_overlap_and_refuse_only_when_full() {
        let t = Topology {
            vgpr_blocks: 100,
            sgpr_blocks: 70,
            shared_mem_blocks: 90,
            wave_slots: 6,
            ..topo()
        };
        let mut m = Maps::new(&t);
        let mut rng = Rng(0x5eed);
        // Live groups: (placement, needs).
        let mut live: [(Option<Placement>, GroupNeeds); 24] = [(None, GroupNeeds::default()); 24];
        for _ in 0..20_000 {
            let slot = rng.below(24) as usize;
            let mut occ = m.occ(&t);
            if let (Some(p), n) = live[slot] {
                for w in &p.waves[..n.waves as usize] {
                    occ.release_wave(p.module, w, &n.wave);
                }
                occ.release_shared(p.module, p.shared_start, n.shared);
                live[slot].0 = None;
                continue;
            }
            let n = needs(
                1 + rng.below(4),
                rng.below(20),
                rng.below(12),
                rng.below(30),
            );
            let module = rng.below(2);
            let units: [u8; 4] = core::array::from_fn(|_| rng.below(2) as u8);
            match occ.try_place(module, &n, &units) {
                Some(p) => {
                    occ.take(&p, &n);
                    live[slot] = (Some(p), n);
                }
                None => {
                    // Some unit or the module must really lack room.
                    let mut lacks =
                        naive::first_free_run(occ.shared_map(module), 90, n.shared as usize)
                            .is_none();
                    for unit in 0..2u8 {
                        let k = units[..n.waves as usize]
                            .iter()
                            .filter(|&&u| u == unit)
                            .count() as u32;
                        let u = unit as u32;
                        lacks |= k > 0
                            && (occ.unit_waves(module, u) + k > 6
                                || naive::first_free_run(
                                    occ.vgpr_map(module, u),
                                    100,
                                    (k * n.wave.vgpr) as usize,
                                )
                                .is_none()
                                || naive::first_free_run(
                                    occ.sgpr_map(module, u),
                                    70,
                                    (k * n.wave.sgpr) as usize,
                                )
                                .is_none());
                    }
                    assert!(
                        lacks,
                        "refused although it fits: {n:?} on {module} units {units:?}"
                    );
                }
            }
            // Rebuild the maps from the live ranges and compare.
            let mut model = Maps::new(&t);
            let mut mo = model.occ(&t);
            for (p, n) in live.iter().filter_map(|(p, n)| p.map(|p| (p, *n))) {
                for w in &p.waves[..n.waves as usize] {
                    for b in 0..n.wave.vgpr as usize {
                        assert!(
                            !naive::is_used(
                                mo.vgpr_map(p.module, w.unit as u32),
                                100,
                                w.vgpr_start as usize + b
                            ),
                            "overlap"
                        );
                    }
                    for b in 0..n.wave.sgpr as usize {
                        assert!(
                            !naive::is_used(
                                mo.sgpr_map(p.module, w.unit as u32),
                                70,
                                w.sgpr_start as usize + b
                            ),
                            "overlap"
                        );
                    }
                    mo.change_wave(p.module, w, &n.wave, true);
                }
                for b in 0..n.shared as usize {
                    assert!(
                        !naive::is_used(mo.shared_map(p.module), 90, p.shared_start as usize + b),
                        "overlap"
                    );
                }
                let shared = mo.layout.shared(p.module);
                set_range(
                    &mut mo.words[shared],
                    p.shared_start as usize,
                    n.shared as usize,
                );
            }
            assert_eq!(model.words, m.words);
            assert_eq!(model.waves, m.waves);
        }
    }

    #[test]
    fn wrong_array_sizes_are_refused() {
        let t = topo();
        let (mut words, mut waves) = ([0u64; 64], [0u32; 4]);
        assert!(Occupancy::new(&t, &mut words[..3], &mut waves).is_none());
        assert!(Occupancy::new(
            &t,
            &mut words[..MapLayout::new(&t).total_words(&t)],
            &mut waves[..3]
        )
        .is_none());
    }

    /// Summaries kept through long random traces of placements and
    /// releases equal a rescan of the bitmaps at every step, and matching
    /// from them gives exactly what placing on the bitmaps gives, for every
    /// finder.
    #[test]
    fn summaries_follow_every_change_and_match_like_the_bitmaps() {
        let t = Topology {
            modules: 3,
            units_per_module: 4,
            vgpr_blocks: 100,
            sgpr_blocks: 40,
            wave_slots: 6,
            shared_mem_blocks: 48,
            ..Topology::DEFAULT
        };
        for finder in [
            FinderKind::Exact,
            FinderKind::Grouped { group: 4 },
            FinderKind::Sampled,
        ] {
            let mut rng = Rng::new(0x5a11);
            let mut m = Maps::new(&t);
            let mut sum = [0u16; 64];
            let sum = &mut sum[..summary_len(&t)];
            let mut live: [(Placement, GroupNeeds); 64] = [(
                Placement {
                    module: 0,
                    shared_start: 0,
                    waves: [WaveSlot::default(); MAX_WAVES_PER_GROUP as usize],
                },
                needs(1, 0, 0, 0),
            ); 64];
            let mut n = 0;
            {
                let mut occ = m.occ(&t).with_finder(finder).with_summaries(sum);
                occ.summarize();
            }
            // Four channels whose heads change now and then, and verdicts
            // remembered per channel and module.
            let mut gens = [0u64; 3];
            let mut memo = [CachedMatch::EMPTY; 12];
            let mut pointers = [RotatingPointer::new(4); 3];
            let mut heads: [GroupNeeds; 4] = core::array::from_fn(|_| {
                needs(1 + rng.below(8), rng.below(12), rng.below(6), rng.below(10))
            });
            let mut hits = 0;
            let mut waves_left: Option<(Placement, GroupNeeds)> = None;
            for step in 0..6000 {
                let mut occ = m
                    .occ(&t)
                    .with_finder(finder)
                    .with_summaries(sum)
                    .with_generations(&mut gens);
                if rng.below(8) == 0 {
                    heads[rng.below(4) as usize] =
                        needs(1 + rng.below(8), rng.below(12), rng.below(6), rng.below(10));
                }
                for (c, h) in heads.iter().enumerate() {
                    for (module, p) in (0u32..).zip(pointers.iter()) {
                        let mut units = [0u8; MAX_WAVES_PER_GROUP as usize];
                        p.wave_units(h.waves, 4, &mut units);
                        let want = occ.try_place(module, h, &units).is_some();
                        let e = &mut memo[c * 3 + module as usize];
                        hits += usize::from(e.generation == gens_of(&occ, module));
                        assert_eq!(occ.matches_at(module, h, p), want, "step {step}");
                        assert_eq!(occ.matches_memo(module, h, p, e), want, "step {step}");
                    }
                }
                let g = needs(1 + rng.below(8), rng.below(12), rng.below(6), rng.below(10));
                let module = rng.below(3);
                let units: [u8; 8] =
                    core::array::from_fn(|k| ((k as u32 + rng.below(4)) % 4) as u8);
                let placed = occ.try_place(module, &g, &units);
                assert_eq!(
                    occ.matches(module, &g, &units),
                    placed.is_some(),
                    "step {step}"
                );
                if let Some((p, g)) = waves_left.take() {
                    for w in &p.waves[..g.waves as usize] {
                        occ.release_wave(p.module, w, &g.wave);
                    }
                } else if n < 64 && rng.below(3) != 0 {
                    if let Some(p) = placed {
                        occ.take(&p, &g);
                        pointers[p.module as usize].advance(g.waves, 4);
                        live[n] = (p, g);
                        n += 1;
                    }
                } else if n > 0 {
                    let i = rng.below(n as u32) as usize;
                    let (p, g) = live[i];
                    occ.release_shared(p.module, p.shared_start, g.shared);
                    // The waves go now, or alone in the next step.
                    match rng.below(2) {
                        0 => waves_left = Some((p, g)),
                        _ => {
                            for w in &p.waves[..g.waves as usize] {
                                occ.release_wave(p.module, w, &g.wave);
                            }
                        }
                    }
                    live[i] = live[n - 1];
                    n -= 1;
                }
                let kept: [u16; 27] = core::array::from_fn(|i| occ.summaries().unwrap()[i]);
                let mut again = [0u16; 27];
                let mut fresh = Maps::new(&t);
                fresh.words = m.words;
                fresh.waves = m.waves;
                fresh.occ(&t).with_summaries(&mut again).summarize();
                assert_eq!(kept, again, "step {step}");
                // remaining() from summaries equals the rescan.
                let mut plain = Maps::new(&t);
                plain.words = m.words;
                plain.waves = m.waves;
                let occ = m.occ(&t).with_summaries(sum);
                for module in 0..3 {
                    assert_eq!(occ.remaining(module), plain.occ(&t).remaining(module));
                }
            }
            // Remembered verdicts were used, not only recomputed.
            assert!(hits > 6000, "{hits}");
        }
    }

    /// The packed finder places exactly as the exact finder does, one pass
    /// over a unit's two register maps when they fit in 128 bits together
    /// (here 64 + 48), on random occupancy over thousands of placements and
    /// releases.
    #[test]
    fn packed_finder_places_as_the_exact_one() {
        // A unit's two register maps in one period, and the default sizes
        // (128 vector blocks take a period; shared and scalar maps share).
        let small = Topology {
            modules: 2,
            units_per_module: 4,
            vgpr_blocks: 64,
            sgpr_blocks: 48,
            wave_slots: 8,
            shared_mem_blocks: 32,
            ..Topology::DEFAULT
        };
        assert!((small.vgpr_blocks + small.sgpr_blocks) as usize <= PACK_WIDTH);
        let default = Topology {
            modules: 2,
            units_per_module: 4,
            wave_slots: 8,
            ..Topology::DEFAULT
        };
        for t in [small, default] {
            packed_places_as_exact_on(&t);
        }
    }

    fn packed_places_as_exact_on(t: &Topology) {
        let t = *t;
        let mut rng = Rng::new(0x9ac4);
        let mut m = Maps::new(&t);
        let mut live: [(Placement, GroupNeeds); 48] = [(
            Placement {
                module: 0,
                shared_start: 0,
                waves: [WaveSlot::default(); MAX_WAVES_PER_GROUP as usize],
            },
            needs(1, 0, 0, 0),
        ); 48];
        let (mut n, mut placed) = (0, 0);
        for step in 0..6000 {
            let g = needs(1 + rng.below(6), rng.below(10), rng.below(8), rng.below(6));
            let module = rng.below(2);
            let units: [u8; 8] = core::array::from_fn(|k| ((k as u32 + rng.below(4)) % 4) as u8);
            let exact = m.occ(&t).try_place(module, &g, &units);
            let mut occ = m.occ(&t).with_finder(FinderKind::Packed);
            assert_eq!(occ.try_place(module, &g, &units), exact, "step {step}");
            if n < 48 && rng.below(3) != 0 {
                if let Some(p) = exact {
                    occ.take(&p, &g);
                    live[n] = (p, g);
                    n += 1;
                    placed += 1;
                }
            } else if n > 0 {
                let i = rng.below(n as u32) as usize;
                let (p, g) = live[i];
                for w in &p.waves[..g.waves as usize] {
                    occ.release_wave(p.module, w, &g.wave);
                }
                occ.release_shared(p.module, p.shared_start, g.shared);
                live[i] = live[n - 1];
                n -= 1;
            }
        }
        assert!(placed > 1000, "{placed}");
    }

    /// The generation `occ` counts for `module`.
    fn gens_of(occ: &Occupancy<'_>, module: u32) -> u64 {
        occ.generations
            .as_deref()
            .and_then(|g| g.get(module as usize))
            .copied()
            .unwrap_or(u64::MAX - 1)
    }
}
