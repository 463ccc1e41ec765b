// SPDX-License-Identifier: GPL-2.0

//! Shape of the virtual GPU and the rules a valid shape obeys.
//!
//! The kernel module builds a [`Topology`] from its module parameters and
//! refuses to load when [`Topology::validate`] fails, naming the offending
//! parameter so the administrator knows what to fix.

/// Limits on every topology field, inclusive. Chosen so that per-unit
/// resource bitmaps stay within what the resource finder is tested for
/// (4096 bits) and the device stays small enough to model in software.
pub mod limits {
    /// Execution modules ("AP") per device.
    pub const MODULES: (u32, u32) = (1, 64);
    /// Execution units ("PEU") per module.
    pub const UNITS_PER_MODULE: (u32, u32) = (1, 16);
    /// Hardware context slots (`L` of slot selection).
    pub const HW_SLOTS: (u32, u32) = (1, 64);
    /// Base time slice `t0` in microseconds: 100 us to 1 s.
    pub const TIME_SLICE_US: (u32, u32) = (100, 1_000_000);
    /// Vector register blocks per unit.
    pub const VGPR_BLOCKS: (u32, u32) = (1, 4096);
    /// Scalar register blocks per unit.
    pub const SGPR_BLOCKS: (u32, u32) = (1, 4096);
    /// Wave slots per unit.
    pub const WAVE_SLOTS: (u32, u32) = (1, 64);
    /// Shared-memory blocks per module.
    pub const SHARED_MEM_BLOCKS: (u32, u32) = (1, 4096);
    /// Modeled clock rate in kHz: 1 kHz to 1 GHz.
    pub const CLOCK_KHZ: (u32, u32) = (1, 1_000_000);
    /// Job timeout in milliseconds: 10 ms to 60 s.
    pub const JOB_TIMEOUT_MS: (u32, u32) = (10, 60_000);
}

/// The shape of the virtual GPU: how many of each part it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Topology {
    /// Execution modules on the device.
    pub modules: u32,
    /// Execution units in each module.
    pub units_per_module: u32,
    /// Hardware context slots: contexts that may be resident at once.
    pub hw_slots: u32,
    /// Base time slice `t0`, in microseconds.
    pub time_slice_us: u32,
    /// Vector register blocks per unit (first-class, contiguous).
    pub vgpr_blocks: u32,
    /// Scalar register blocks per unit (first-class, contiguous).
    pub sgpr_blocks: u32,
    /// Wave slots per unit (second-class, counted).
    pub wave_slots: u32,
    /// Shared-memory blocks per module (first-class, contiguous).
    pub shared_mem_blocks: u32,
    /// Modeled clock rate, in kHz.
    pub clock_khz: u32,
    /// A wave that would run longer than this, in modeled time, hangs.
    pub job_timeout_ms: u32,
}

/// Which module parameter is out of range, with the accepted range: a
/// topology field here, a dispatcher setting in [`super::dispatch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamError {
    /// Name of the field, identical to the module parameter's name.
    pub field: &'static str,
    /// The rejected value.
    pub value: u64,
    /// Smallest accepted value.
    pub min: u64,
    /// Largest accepted value.
    pub max: u64,
}

/// `value` if it lies within `limits`, or the range error of `field`. A
/// value as given may be wider than the parameter (past 32 bits): it is
/// out of range, and the error names it as given.
pub fn within(
    field: &'static str,
    value: impl Into<u64>,
    limits: (u32, u32),
) -> Result<u32, ParamError> {
    let (min, max) = limits;
    let value = value.into();
    match u32::try_from(value) {
        Ok(v) if (min..=max).contains(&v) => Ok(v),
        _ => Err(ParamError {
            field,
            value,
            min: u64::from(min),
            max: u64::from(max),
        }),
    }
}

/// The topology's module parameters as given, each as wide as the
/// parameter parser reads it (a value past 32 bits is out of range, named
/// as given).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopologyParams {
    /// `modules`.
    pub modules: u64,
    /// `units_per_module`.
    pub units_per_module: u64,
    /// `hw_slots`.
    pub hw_slots: u64,
    /// `time_slice_us`.
    pub time_slice_us: u64,
    /// `vgpr_blocks`.
    pub vgpr_blocks: u64,
    /// `sgpr_blocks`.
    pub sgpr_blocks: u64,
    /// `wave_slots`.
    pub wave_slots: u64,
    /// `shared_mem_blocks`.
    pub shared_mem_blocks: u64,
    /// `clock_khz`.
    pub clock_khz: u64,
    /// `job_timeout_ms`.
    pub job_timeout_ms: u64,
}

impl From<Topology> for TopologyParams {
    fn from(t: Topology) -> Self {
        Self {
            modules: t.modules.into(),
            units_per_module: t.units_per_module.into(),
            hw_slots: t.hw_slots.into(),
            time_slice_us: t.time_slice_us.into(),
            vgpr_blocks: t.vgpr_blocks.into(),
            sgpr_blocks: t.sgpr_blocks.into(),
            wave_slots: t.wave_slots.into(),
            shared_mem_blocks: t.shared_mem_blocks.into(),
            clock_khz: t.clock_khz.into(),
            job_timeout_ms: t.job_timeout_ms.into(),
        }
    }
}

impl TopologyParams {
    /// The topology, or the first parameter out of [`limits`], in
    /// declaration order (as [`Topology::validate`] names it).
    pub fn topology(&self) -> Result<Topology, ParamError> {
        Ok(Topology {
            modules: within("modules", self.modules, limits::MODULES)?,
            units_per_module: within(
                "units_per_module",
                self.units_per_module,
                limits::UNITS_PER_MODULE,
            )?,
            hw_slots: within("hw_slots", self.hw_slots, limits::HW_SLOTS)?,
            time_slice_us: within("time_slice_us", self.time_slice_us, limits::TIME_SLICE_US)?,
            vgpr_blocks: within("vgpr_blocks", self.vgpr_blocks, limits::VGPR_BLOCKS)?,
            sgpr_blocks: within("sgpr_blocks", self.sgpr_blocks, limits::SGPR_BLOCKS)?,
            wave_slots: within("wave_slots", self.wave_slots, limits::WAVE_SLOTS)?,
            shared_mem_blocks: within(
                "shared_mem_blocks",
                self.shared_mem_blocks,
                limits::SHARED_MEM_BLOCKS,
            )?,
            clock_khz: within("clock_khz", self.clock_khz, limits::CLOCK_KHZ)?,
            job_timeout_ms: within(
                "job_timeout_ms",
                self.job_timeout_ms,
                limits::JOB_TIMEOUT_MS,
            )?,
        })
    }
}

impl Topology {
    /// The default device: 4 modules of 4 units, 8 hardware slots, a 10 ms
    /// slice and the per-unit resources of the design brief.
    pub const DEFAULT: Self = Self {
        modules: 4,
        units_per_module: 4,
        hw_slots: 8,
        time_slice_us: 10_000,
        vgpr_blocks: 128,
        sgpr_blocks: 64,
        wave_slots: 16,
        shared_mem_blocks: 48,
        clock_khz: 1000,
        job_timeout_ms: 2000,
    };

    /// Checks every field against [`limits`]; reports the first field that
    /// is out of range, in declaration order.
    pub fn validate(&self) -> Result<(), ParamError> {
        TopologyParams::from(*self).topology().map(|_| ())
    }

    /// Total execution units on the device.
    pub fn total_units(&self) -> u32 {
        self.modules * self.units_per_module
    }

    /// Modeled duration of `cycles` clock cycles, in nanoseconds.
    pub fn cycles_to_ns(&self, cycles: u64) -> u64 {
        // No u128 division: the kernel's compiler builtins panic on it.
        // Saturates only beyond 5 hours at 1 kHz, far past any timeout.
        cycles.saturating_mul(1_000_000) / u64::from(self.clock_khz.max(1))
    }

    /// The clock cycle at monotonic time `ns`: where the modeled clock
    /// stands. Exact and overflow-free for any `ns` (no u128 division).
    pub fn ns_to_cycles(&self, ns: u64) -> u64 {
        let khz = u64::from(self.clock_khz);
        (ns / 1_000_000) * khz + (ns % 1_000_000) * khz / 1_000_000
    }

    /// The job timeout in clock cycles: a wave is stopped there.
    pub fn timeout_cycles(&self) -> u64 {
        u64::from(self.job_timeout_ms) * u64::from(self.clock_khz)
    }
}

impl Default for Topology {
    fn default() -> Self {
        Self::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid() {
        assert_eq!(Topology::DEFAULT.validate(), Ok(()));
        assert_eq!(Topology::DEFAULT.total_units(), 16);
    }

    #[test]
    fn a_value_past_32_bits_is_out_of_range_as_given() {
        let mut p = TopologyParams::from(Topology::DEFAULT);
        p.modules = 1 << 32;
        let e = p.topology().unwrap_err();
        assert_eq!(
            (e.field, e.value, e.min, e.max),
            ("modules", 1 << 32, 1, 64)
        );
        assert_eq!(
            TopologyParams::from(Topology::DEFAULT).topology(),
            Ok(Topology::DEFAULT)
        );
    }

    #[test]
    fn limits_are_inclusive() {
        let mut t = Topology::DEFAULT;
        t.modules = limits::MODULES.1;
        assert_eq!(t.validate(), Ok(()));
        t.modules = limits::MODULES.0;
        assert_eq!(t.validate(), Ok(()));
    }

    #[test]
    fn each_field_is_checked_and_named() {
        type Setter = fn(&mut Topology, u32);
        let cases: [(&str, Setter, (u32, u32)); 10] = [
            ("modules", |t, v| t.modules = v, limits::MODULES),
            (
                "units_per_module",
                |t, v| t.units_per_module = v,
                limits::UNITS_PER_MODULE,
            ),
            ("hw_slots", |t, v| t.hw_slots = v, limits::HW_SLOTS),
            (
                "time_slice_us",
                |t, v| t.time_slice_us = v,
                limits::TIME_SLICE_US,
            ),
            ("vgpr_blocks", |t, v| t.vgpr_blocks = v, limits::VGPR_BLOCKS),
            ("sgpr_blocks", |t, v| t.sgpr_blocks = v, limits::SGPR_BLOCKS),
            ("wave_slots", |t, v| t.wave_slots = v, limits::WAVE_SLOTS),
            (
                "shared_mem_blocks",
                |t, v| t.shared_mem_blocks = v,
                limits::SHARED_MEM_BLOCKS,
            ),
            ("clock_khz", |t, v| t.clock_khz = v, limits::CLOCK_KHZ),
            (
                "job_timeout_ms",
                |t, v| t.job_timeout_ms = v,
                limits::JOB_TIMEOUT_MS,
            ),
        ];
        for (name, set, (min, max)) in cases {
            for bad in [min - 1, max + 1] {
                let mut t = Topology::DEFAULT;
                set(&mut t, bad);
                let err = t.validate().unwrap_err();
                assert_eq!(
                    err,
                    ParamError {
                        field: name,
                        value: bad.into(),
                        min: min.into(),
                        max: max.into()
                    }
                );
            }
        }
    }

    #[test]
    fn modeled_time() {
        let t = Topology::DEFAULT;
        // 1 MHz: a cycle is a microsecond; 2 s are 2 million cycles.
        assert_eq!(t.cycles_to_ns(3), 3000);
        assert_eq!(t.timeout_cycles(), 2_000_000);
        let fast = Topology {
            clock_khz: 1_000_000,
            ..t
        };
        assert_eq!(fast.cycles_to_ns(5), 5);
        assert_eq!(fast.cycles_to_ns(u64::MAX), u64::MAX / 1_000_000);
    }

    #[test]
    fn first_bad_field_is_reported() {
        let mut t = Topology::DEFAULT;
        t.hw_slots = 0;
        t.wave_slots = 0;
        assert_eq!(t.validate().unwrap_err().field, "hw_slots");
    }
}
