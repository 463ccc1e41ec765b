// SPDX-License-Identifier: GPL-2.0

//! Pure scheduling logic of the vgsched virtual GPU.
//!
//! Everything here is `no_std`, allocation free and independent of the
//! kernel, so the same source files are compiled into the `vgsched` kernel
//! module (see `drivers/gpu/drm/vgsched/vgsched_main.rs`, which includes
//! them by path) and tested natively with `cargo test`.
//!
//! Keep the list of modules below in step with the list in the kernel
//! module's crate root. Modules refer to each other as `super::name`, never
//! `crate::name`, because in the kernel they are not at the crate root.

#![no_std]
#![warn(missing_docs)]

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
