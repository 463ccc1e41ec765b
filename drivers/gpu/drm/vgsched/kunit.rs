// SPDX-License-Identifier: GPL-2.0

//! KUnit suites run when the module loads (with `CONFIG_KUNIT`): the shared
//! core logic checked again inside the kernel, built with the kernel's
//! compiler flags.

#[kernel::macros::kunit_tests(vgsched_core_topology)]
mod topology {
    use crate::vgsched_core::topology::{limits, Topology};

    #[test]
    fn default_topology_is_valid() {
        assert_eq!(Topology::DEFAULT.validate(), Ok(()));
        assert_eq!(Topology::DEFAULT.total_units(), 16);
    }

    #[test]
    fn out_of_range_field_is_named() {
        let mut t = Topology::DEFAULT;
        t.units_per_module = limits::UNITS_PER_MODULE.1 + 1;
        let err = t.validate().unwrap_err();
        assert_eq!(err.field, "units_per_module");
        assert_eq!(err.max, limits::UNITS_PER_MODULE.1);
    }

    #[test]
    fn zero_modules_is_rejected() {
        let t = Topology { modules: 0, ..Topology::DEFAULT };
        assert_eq!(t.validate().unwrap_err().field, "modules");
    }
}
