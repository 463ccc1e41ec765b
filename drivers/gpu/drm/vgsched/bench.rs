// SPDX-License-Identifier: GPL-2.0

//! In-kernel finder benchmark: the debugfs file `finder_bench` of the
//! device (`debugfs.rs`), present only in a module built for benchmarking
//! (`make ... VGSCHED_BENCH=1`, which `make bench` does, passes
//! `--cfg vgsched_bench`); production builds carry only
//! [`kernel_first_free_run`], which the KUnit suite `vgsched_finder_bench`
//! checks against the core crate's finders.
//!
//! Reading the file times, inside the guest kernel and with the kernel's
//! compiler flags, the core crate's exact free-run finders, the naive
//! bit-by-bit scan and the kernel's own `bitmap_find_next_zero_area()` on
//! the same maps, and prints the table. The harness, the maps and their
//! seeds are the core crate's (`vgsched_core::finder_bench`), shared with the
//! host benchmark, so the two tables compare directly; the map checksums
//! they both print show the maps are identical.
//!
//! A read takes a few seconds (each of the 56 table cells is timed for at
//! least [`TARGET_NS`]); the file is root-only, like all of debugfs.

use kernel::{
    bindings,
    ffi::{
        c_uint,
        c_ulong, //
    }, //
};
#[cfg(vgsched_bench)]
use kernel::{
    prelude::*,
    seq_file::SeqFile,
    time::{
        Instant,
        Monotonic, //
    }, //
};

#[cfg(vgsched_bench)]
use crate::vgsched_core::finder_bench::{
    self,
    External,
    SCRATCH_WORDS, //
};

// The maps are `u64` words and the kernel's bitmaps `unsigned long` ones:
// the same layout only where both are 64 bits wide.
const _: () = assert!(size_of::<c_ulong>() == size_of::<u64>());

/// Least time spent timing each finder on each row. Under QEMU's TCG a
/// whole read then takes about 56 x 80 ms, well under ten seconds.
#[cfg(vgsched_bench)]
const TARGET_NS: u64 = 80_000_000;

/// The kernel's `bitmap_find_next_zero_area(map, nbits, 0, len, 0)`, in the
/// core crate's calling convention: `None` when no run of `len` free bits
/// exists among the first `nbits` of `map`.
///
/// `bitmap_find_next_zero_area()` is a static inline Rust cannot call; it
/// only forwards to the exported `bitmap_find_next_zero_area_off()` with an
/// alignment offset of 0, which this calls directly. Both share our bit
/// sense: a set bit is in use. Meant for `len >= 1` (for 0 the two
/// conventions differ on an empty map, and the benchmark never asks).
pub(crate) fn kernel_first_free_run(map: &[u64], nbits: usize, len: usize) -> Option<usize> {
    // The C function reads `nbits.div_ceil(64)` longs: refuse shorter maps
    // rather than let it read past the slice.
    let (Ok(nr), true) = (c_uint::try_from(len), nbits <= map.len().saturating_mul(64)) else {
        return None;
    };
    // SAFETY: `map` holds at least `nbits` bits (checked above), as `u64`
    // words, which on the 64-bit kernels this module builds for have the
    // layout of the `unsigned long` words of a kernel bitmap. The function
    // only reads the bitmap (its pointer is not `const` for historical
    // reasons, `lib/bitmap.c` never writes through it), so passing a pointer
    // derived from a shared reference is sound.
    let start = unsafe {
        bindings::bitmap_find_next_zero_area_off(
            map.as_ptr().cast_mut().cast::<c_ulong>(),
            nbits,
            0,
            nr,
            0,
            0,
        )
    };
    // "Not found" is any value >= size.
    (start < nbits).then_some(start)
}

/// Adapts a [`SeqFile`] to [`core::fmt::Write`], for the shared harness.
#[cfg(vgsched_bench)]
struct SeqWriter<'a>(&'a SeqFile);

#[cfg(vgsched_bench)]
impl core::fmt::Write for SeqWriter<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0.call_printf(fmt!("{s}"));
        Ok(())
    }
}

/// The contents of `finder_bench`: each read runs the measurement and
/// prints its table into `m`.
#[cfg(vgsched_bench)]
pub(crate) fn show(m: &SeqFile) -> Result {
    let mut scratch = KVec::from_elem(0u64, SCRATCH_WORDS, GFP_KERNEL)?;
    let t0 = Instant::<Monotonic>::now();
    // The monotonic clock never goes backwards, so this is never negative.
    let mut clock = || t0.elapsed().as_nanos().unsigned_abs();
    let kernel = External {
        describe: "bitmap_find_next_zero_area(map, nbits, 0, len, 0)",
        first_free_run: kernel_first_free_run,
    };
    let sum = finder_bench::run(
        &mut SeqWriter(m),
        "guest kernel",
        &mut clock,
        &mut scratch,
        TARGET_NS,
        Some(&kernel),
    )
    .map_err(|_| EINVAL)?;
    if sum.mismatches != 0 {
        pr_warn!("finder_bench: finders disagreed {} times\n", sum.mismatches);
    }
    Ok(())
}
