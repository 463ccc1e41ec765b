// SPDX-License-Identifier: GPL-2.0

//! The device's debugfs files, in the directory the DRM core keeps for it:
//! `/sys/kernel/debug/dri/<minor>/` (a link to `dri/vgsched/`).
//!
//! | file | contents |
//! |---|---|
//! | `state` | totals, dispatcher, modules, slots, queued jobs, longest engine-lock hold |
//! | `contexts` | one line per live context: the numbers the slot scheduler decides by |
//! | `occupancy` | every resource bitmap |
//! | `placements` | the last dispatched work-groups |
//! | `lock_hold_max_us` | the longest engine-lock hold since load (or since `0` was written to it), in µs, alone |
//! | `lock_hold_mean_us` | the mean engine-lock hold since load, in µs, alone |
//! | `lock_holds` | `state`'s line on the engine lock: longest hold and where it was taken, mean, count, holds over 1 ms |
//! | `finder_bench` | only in a module built with `VGSCHED_BENCH=1` (`bench.rs`) |
//!
//! Reading a file never changes the engine: the engine's views are
//! snapshots copied under its lock and formatted after it is dropped
//! (`engine/dump.rs`; `state` one record at a time, a hold each), but for
//! the lock's own meter (the `lock_hold*`
//! files), read from its atomics without it. Every file is read-only but `lock_hold_max_us`,
//! where writing `0` starts the measurement of the longest hold again (so
//! that a benchmark can leave out a warm-up, such as lockdep's first pass
//! over new lock chains); the holds' count and mean go on. Policies are
//! module parameters, not debugfs writes.
//!
//! The files are created by `debugfs.c` (its comment gives the contract):
//! the Rust abstractions of Linux 7.3 have no hook for a DRM device's
//! debugfs directory. [`DeviceFiles`] removes them when dropped, waiting
//! for reads in progress, and must be dropped before the DRM device is
//! unregistered.

use kernel::{
    bindings,
    ffi::{
        c_char,
        c_int,
        c_void, //
    },
    prelude::*,
    seq_file::SeqFile,
    seq_print,
    sync::Arc, //
};

use crate::engine::{
    Engine,
    StateRecord, //
};

/// Opaque `struct dentry`.
#[repr(C)]
struct RawDentry {
    _opaque: [u8; 0],
}

/// Opaque `struct vgsched_debugfs_file` of `debugfs.c`.
#[repr(C)]
struct RawFile {
    _opaque: [u8; 0],
}

extern "C" {
    fn vgsched_debugfs_dir_get(unique: *const c_char) -> *mut RawDentry;
    fn vgsched_debugfs_dir_put(dir: *mut RawDentry);
    fn vgsched_debugfs_file_create(
        dir: *mut RawDentry,
        name: *const c_char,
        show: unsafe extern "C" fn(m: *mut bindings::seq_file, data: *mut c_void) -> c_int,
        write: Option<
            unsafe extern "C" fn(data: *mut c_void, text: *const c_char, len: usize) -> c_int,
        >,
        data: *mut c_void,
    ) -> *mut RawFile;
    fn vgsched_debugfs_records_create(
        dir: *mut RawDentry,
        name: *const c_char,
        records: unsafe extern "C" fn(data: *mut c_void) -> usize,
        show_record: unsafe extern "C" fn(
            m: *mut bindings::seq_file,
            data: *mut c_void,
            index: usize,
        ) -> c_int,
        data: *mut c_void,
    ) -> *mut RawFile;
    fn vgsched_debugfs_file_remove(file: *mut RawFile);
}

/// The write callback of a writable file.
type WriteFn = unsafe extern "C" fn(data: *mut c_void, text: *const c_char, len: usize) -> c_int;

/// What a file shows.
#[derive(Clone, Copy)]
enum View {
    State,
    Contexts,
    Occupancy,
    Placements,
    Stages,
    LockHold,
    LockHoldMean,
    LockHolds,
    DeviceMemory,
    Tiles,
    #[cfg(vgsched_bench)]
    FinderBench,
}

/// The data behind one file.
struct Entry {
    engine: Arc<Engine>,
    view: View,
}

/// One debugfs file of the device.
///
/// # Invariants
///
/// `raw` was returned by `vgsched_debugfs_file_create()` with `entry` as
/// its data, and is removed only by [`Drop`], before `entry` is freed.
struct File {
    raw: *mut RawFile,
    _entry: KBox<Entry>,
}

impl Drop for File {
    fn drop(&mut self) {
        // SAFETY: By the type invariants `raw` is a live file of
        // `debugfs.c`; removing it waits for reads in progress, after which
        // nothing uses `_entry` any more, which drops after this.
        unsafe { vgsched_debugfs_file_remove(self.raw) };
    }
}

/// The device's debugfs files and the reference to their directory.
///
/// # Invariants
///
/// `dir` is null or a dentry reference from `vgsched_debugfs_dir_get()`,
/// put only by [`Drop`], after every file of `files` (all in `dir`) has
/// been removed.
pub(crate) struct DeviceFiles {
    dir: *mut RawDentry,
    files: KVec<File>,
}

// SAFETY: The raw pointers are only handed back to `debugfs.c`, whose
// functions may be called from any thread; `Entry` is `Send` and `Sync`.
unsafe impl Send for DeviceFiles {}
// SAFETY: `DeviceFiles` has no methods taking `&self`.
unsafe impl Sync for DeviceFiles {}

impl DeviceFiles {
    /// Creates the files of the device whose parent device is named
    /// `unique` (the DRM core's name of its debugfs directory). Without
    /// debugfs, or if the directory is missing, there are no files.
    pub(crate) fn new(unique: &CStr, engine: &Arc<Engine>) -> Result<Self> {
        // SAFETY: `unique` is a NUL-terminated string valid for the call.
        let dir = unsafe { vgsched_debugfs_dir_get(unique.as_char_ptr()) };
        // INVARIANT: `dir` is null or a reference from `vgsched_debugfs_dir_get()`.
        let mut this = Self {
            dir,
            files: KVec::new(),
        };
        if dir.is_null() {
            return Ok(this);
        }
        let views: &[(&CStr, View)] = &[
            (c"state", View::State),
            (c"contexts", View::Contexts),
            (c"occupancy", View::Occupancy),
            (c"placements", View::Placements),
            (c"stages", View::Stages),
            (c"lock_hold_max_us", View::LockHold),
            (c"lock_hold_mean_us", View::LockHoldMean),
            (c"lock_holds", View::LockHolds),
            (c"vram", View::DeviceMemory),
            (c"tiles", View::Tiles),
            #[cfg(vgsched_bench)]
            (c"finder_bench", View::FinderBench),
        ];
        this.files.reserve(views.len(), GFP_KERNEL)?;
        for &(name, view) in views {
            let entry = KBox::new(
                Entry {
                    engine: engine.clone(),
                    view,
                },
                GFP_KERNEL,
            )?;
            let data = core::ptr::from_ref::<Entry>(&entry)
                .cast_mut()
                .cast::<c_void>();
            let write: Option<WriteFn> = match view {
                View::LockHold => Some(write_lock_hold_max),
                _ => None,
            };
            // SAFETY: `dir` is a live dentry (referenced), `name` is
            // NUL-terminated and copied by debugfs; `data` points at the
            // boxed `entry`, which the `File` below keeps until the file is
            // removed, and the callbacks expect exactly such a pointer.
            let raw = unsafe {
                match view {
                    // Read a record at a time ([`state_record`]).
                    View::State => vgsched_debugfs_records_create(
                        dir,
                        name.as_char_ptr(),
                        state_records,
                        show_state_record,
                        data,
                    ),
                    _ => vgsched_debugfs_file_create(dir, name.as_char_ptr(), show, write, data),
                }
            };
            if raw.is_null() {
                return Err(ENOMEM);
            }
            // INVARIANT: `raw` was just created with `entry` as its data.
            this.files
                .push_within_capacity(File { raw, _entry: entry })
                .map_err(|_| ENOMEM)?;
        }
        Ok(this)
    }
}

impl Drop for DeviceFiles {
    fn drop(&mut self) {
        // Every file goes (waiting for its readers) before the directory's
        // reference.
        self.files.clear();
        if !self.dir.is_null() {
            // SAFETY: By the type invariants `dir` is our reference, put once.
            unsafe { vgsched_debugfs_dir_put(self.dir) };
        }
    }
}

/// The write callback of `lock_hold_max_us`: `0` (with or without a
/// newline) starts the measurement of the longest hold (and of the wave
/// executor's longest piece) again; anything else is `EINVAL`.
///
/// # Safety
///
/// `text` is a NUL-terminated string of `len` bytes, valid for the call;
/// `data` is the `Entry` of a [`File`] that has not been removed.
unsafe extern "C" fn write_lock_hold_max(
    data: *mut c_void,
    text: *const c_char,
    len: usize,
) -> c_int {
    // SAFETY: By the safety requirements.
    let (entry, text) = unsafe {
        (
            &*data.cast::<Entry>(),
            core::slice::from_raw_parts(text.cast::<u8>(), len),
        )
    };
    match text {
        b"0" | b"0\n" => {
            entry.engine.reset_lock_hold_max();
            0
        }
        _ => EINVAL.to_errno(),
    }
}

/// The record count of `state`: its head, one record per context, its
/// tail.
///
/// # Safety
///
/// `data` is the `Entry` of a [`File`] that has not been removed.
unsafe extern "C" fn state_records(data: *mut c_void) -> usize {
    // SAFETY: By the safety requirements.
    let entry = unsafe { &*data.cast::<Entry>() };
    entry.engine.state_records()
}

/// The show callback of `state`: prints its record `index` into `m`, each
/// copied in a hold of the engine lock of its own; nothing
/// (`SEQ_SKIP`) for an index past the end, where contexts went away since
/// the count.
///
/// # Safety
///
/// `m` is the `seq_file` of a read in progress, used by this thread only;
/// `data` is the `Entry` of a [`File`] that has not been removed.
unsafe extern "C" fn show_state_record(
    m: *mut bindings::seq_file,
    data: *mut c_void,
    index: usize,
) -> c_int {
    // SAFETY: By the safety requirements.
    let (m, entry) = unsafe { (SeqFile::from_raw(m), &*data.cast::<Entry>()) };
    match entry.engine.state_record(index) {
        Ok(Some(StateRecord::Head(h))) => seq_print!(m, "{h}"),
        Ok(Some(StateRecord::Context(c))) => seq_print!(m, "{c}"),
        Ok(Some(StateRecord::Tail(t))) => seq_print!(m, "{t}"),
        // `SEQ_SKIP` is 1.
        Ok(None) => return bindings::SEQ_SKIP as c_int,
        Err(e) => return e.to_errno(),
    }
    0
}

/// The show callback of every file: prints `data`'s view into `m`.
///
/// # Safety
///
/// `m` is the `seq_file` of a read in progress, used by this thread only;
/// `data` is the `Entry` of a [`File`] that has not been removed.
unsafe extern "C" fn show(m: *mut bindings::seq_file, data: *mut c_void) -> c_int {
    // SAFETY: By the safety requirements.
    let (m, entry) = unsafe { (SeqFile::from_raw(m), &*data.cast::<Entry>()) };
    let engine = &entry.engine;
    let ret = match entry.view {
        // A file of records ([`show_state_record`]).
        View::State => Err(EINVAL),
        View::Contexts => engine.contexts_snapshot().map(|s| seq_print!(m, "{s}")),
        View::Occupancy => engine.occupancy_snapshot().and_then(|mut s| {
            let text = s.text()?;
            seq_print!(m, "{text}");
            Ok(())
        }),
        View::Placements => engine.placements_snapshot().map(|s| seq_print!(m, "{s}")),
        View::Stages => engine.stages_snapshot().map(|s| seq_print!(m, "{s}")),
        View::Tiles => engine.tiles_snapshot().map(|s| seq_print!(m, "{s}")),
        View::LockHold => {
            seq_print!(m, "{}\n", engine.lock_hold_max_ns() / 1000);
            Ok(())
        }
        View::LockHoldMean => {
            seq_print!(m, "{}\n", engine.lock_hold_mean_ns() / 1000);
            Ok(())
        }
        View::LockHolds => {
            seq_print!(m, "{}", engine.lock_holds_snapshot());
            Ok(())
        }
        View::DeviceMemory => {
            let vram = engine.device_memory();
            let stats = vram.stats();
            seq_print!(
                m,
                "size {} bytes\nfree {} bytes\nchunk {} bytes\nbandwidth {} MB/s\n\
                 uploaded {} bytes\nwritten_back {} bytes\nevictions {}\n\
                 reclaims {}\nreclaimed {} bytes\nreclaim_ns {}\n\
                 resident {} objects {} bytes\nobject bytes pins last_use\n",
                vram.size(),
                vram.avail(),
                crate::vgsched_core::device_memory::CHUNK_BYTES,
                vram.bandwidth_mbps(),
                stats.uploaded_bytes,
                stats.written_back_bytes,
                stats.evictions,
                stats.reclaims,
                stats.reclaimed_bytes,
                stats.reclaim_ns,
                stats.resident_objects,
                stats.resident_bytes
            );
            vram.for_each_resident(|object, bytes, pins, last_use| {
                seq_print!(m, "{} {} {} {}\n", object, bytes, pins, last_use);
            });
            Ok(())
        }
        #[cfg(vgsched_bench)]
        View::FinderBench => crate::bench::show(m),
    };
    match ret {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
