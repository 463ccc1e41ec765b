// SPDX-License-Identifier: GPL-2.0

//! Completion fences (`dma_fence`) and `sync_file` descriptors.
//!
//! Linux 7.3 has no Rust abstraction for either, so the operations live in
//! `fence.c`; this file gives them owning types: [`Fence`] holds one
//! reference, [`OutFenceFd`] a reserved but not yet installed file
//! descriptor, [`Waiter`] a callback armed on a fence, and
//! [`with_resv_locked`] holds the reservation locks of a job's bound
//! objects during its submission (implicit synchronisation, `resv.c`).

use core::{
    mem::MaybeUninit,
    ptr::NonNull, //
};

use kernel::{
    bindings,
    drm::gem::IntoGEMObject,
    error::to_result,
    ffi::c_void,
    prelude::*, //
};

use crate::{
    context::monotonic_ns,
    gem::Bo,
    job::Bindings,
    vgsched_core::isa, //
};

/// Opaque C waiter (`struct vgsched_fence_waiter` of `fence.c`).
#[repr(C)]
struct RawWaiter {
    _opaque: [u8; 0],
}

/// Bytes of the storage of a `struct vgsched_resv_set` (`fence.h`'s
/// `VGSCHED_RESV_SET_BYTES`, the same number; `resv.c` checks at build time
/// that the set fits).
const RESV_SET_BYTES: usize = 512;

/// Storage of a C lock set (`struct vgsched_resv_set` of `resv.c`), on the
/// submitting task's stack, so locking allocates nothing.
#[repr(C, align(8))]
struct RawResvSet {
    _storage: [MaybeUninit<u8>; RESV_SET_BYTES],
}

/// Opaque `struct drm_gem_object` (the generated binding is not FFI-safe
/// by lint).
#[repr(C)]
pub(crate) struct RawGemObject {
    _opaque: [u8; 0],
}

/// Opaque `struct file` (the generated binding is not FFI-safe by lint).
#[repr(C)]
struct RawFile {
    _opaque: [u8; 0],
}

extern "C" {
    fn vgsched_fence_context_alloc() -> u64;
    fn vgsched_fence_create(context: u64, seqno: u64) -> *mut bindings::dma_fence;
    fn vgsched_fence_get(fence: *mut bindings::dma_fence) -> *mut bindings::dma_fence;
    fn vgsched_fence_put(fence: *mut bindings::dma_fence);
    fn vgsched_fence_signal(fence: *mut bindings::dma_fence, error: c_int);
    fn vgsched_fence_status(fence: *mut bindings::dma_fence) -> c_int;
    fn vgsched_fence_signalled_at(fence: *mut bindings::dma_fence) -> i64;
    fn vgsched_fence_wait(fence: *mut bindings::dma_fence, timeout_ns: u64) -> c_long;
    fn vgsched_fence_wait_until(fence: *mut bindings::dma_fence, deadline_ns: u64) -> c_long;
    fn vgsched_sync_file_fence(fd: c_int) -> *mut bindings::dma_fence;
    fn vgsched_sync_file_reserve(fence: *mut bindings::dma_fence, file: *mut *mut RawFile)
        -> c_int;
    fn vgsched_sync_file_install(fd: c_int, file: *mut RawFile);
    fn vgsched_sync_file_abort(fd: c_int, file: *mut RawFile);
    fn vgsched_fence_waiter_add(
        fence: *mut bindings::dma_fence,
        func: unsafe extern "C" fn(*mut c_void),
        data: *mut c_void,
    ) -> *mut RawWaiter;
    fn vgsched_fence_waiter_free(waiter: *mut RawWaiter);
    fn vgsched_resv_lock(
        set: *mut RawResvSet,
        objs: *mut *mut RawGemObject,
        usage: *const Usage,
        count: c_uint,
        own_context: u64,
        wait: *mut *mut bindings::dma_fence,
    ) -> c_int;
    fn vgsched_resv_publish(set: *mut RawResvSet, fence: *mut bindings::dma_fence);
    fn vgsched_resv_unlock(set: *mut RawResvSet);
    fn vgsched_resv_wait(obj: *mut RawGemObject, write: bool, timeout_ns: u64) -> c_long;
}

/// How long [`wait_for_cpu`] waits.
pub(crate) enum CpuWait {
    /// This many nanoseconds; 0 only checks.
    For(u64),
    /// Until this `CLOCK_MONOTONIC` time; a deadline past only checks.
    Until(u64),
}

/// Waits, interruptibly, until the jobs using `bo` are done, for the CPU:
/// all of them if it will `write`, the writers otherwise. `EBUSY` if they
/// are not done and the call only checked (`For(0)`), `ETIMEDOUT` if they
/// are not done in time.
pub(crate) fn wait_for_cpu(bo: &Bo, write: bool, wait: CpuWait) -> Result {
    let (timeout_ns, checking) = match wait {
        CpuWait::For(ns) => (ns, ns == 0),
        CpuWait::Until(deadline) => (deadline.saturating_sub(monotonic_ns()), false),
    };
    let obj = bo.as_raw().cast::<RawGemObject>();
    // SAFETY: `bo` is a live object for the whole call; we may sleep here.
    let ret = unsafe { vgsched_resv_wait(obj, write, timeout_ns) };
    match ret {
        0 if checking => Err(EBUSY),
        0 => Err(ETIMEDOUT),
        r if r > 0 => Ok(()),
        r => Err(Error::from_errno(
            i32::try_from(r).unwrap_or(EINVAL.to_errno()),
        )),
    }
}

/// A new fence timeline: fences of one context share it and signal in
/// sequence-number order.
pub(crate) fn new_timeline() -> u64 {
    // SAFETY: No preconditions.
    unsafe { vgsched_fence_context_alloc() }
}

/// One reference to a `dma_fence`.
///
/// # Invariants
///
/// `ptr` points at a live fence on which this value owns one reference.
pub(crate) struct Fence {
    ptr: NonNull<bindings::dma_fence>,
}

// SAFETY: `dma_fence` reference counting and signalling are thread safe.
unsafe impl Send for Fence {}
// SAFETY: All operations through `&Fence` are thread safe in C.
unsafe impl Sync for Fence {}

/// How a wait on a fence ended.
pub(crate) enum WaitResult {
    /// The fence signalled.
    Signalled,
    /// The timeout passed first.
    TimedOut,
}

impl Fence {
    /// An unsignalled fence of this driver with sequence number `seqno` on
    /// `timeline`.
    pub(crate) fn new(timeline: u64, seqno: u64) -> Result<Self> {
        // SAFETY: No preconditions; the new fence comes with one reference.
        let ptr = unsafe { vgsched_fence_create(timeline, seqno) };
        // INVARIANT: The reference of the creation is ours.
        Ok(Self {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
        })
    }

    /// The fence of the `sync_file` behind descriptor `fd` of the calling
    /// process; `EINVAL` if `fd` is not a sync_file.
    pub(crate) fn from_sync_file(fd: i32) -> Result<Self> {
        // SAFETY: No preconditions; a non-NULL result carries a reference.
        let ptr = unsafe { vgsched_sync_file_fence(fd) };
        // INVARIANT: `sync_file_get_fence()` gave us a reference.
        Ok(Self {
            ptr: NonNull::new(ptr).ok_or(EINVAL)?,
        })
    }

    /// Signals the fence, with `error` (a negative errno) unless it is 0.
    /// Signalling twice is harmless (the second call does nothing).
    pub(crate) fn signal(&self, error: i32) {
        // SAFETY: By the type invariant the fence is live.
        unsafe { vgsched_fence_signal(self.ptr.as_ptr(), error) }
    }

    /// 0 while pending, 1 when signalled without error, else the error.
    pub(crate) fn status(&self) -> i32 {
        // SAFETY: By the type invariant the fence is live.
        unsafe { vgsched_fence_status(self.ptr.as_ptr()) }
    }

    /// When it signalled, on `CLOCK_MONOTONIC` (`None` while pending).
    pub(crate) fn signalled_at_ns(&self) -> Option<u64> {
        // SAFETY: By the type invariant the fence is live.
        let at = unsafe { vgsched_fence_signalled_at(self.ptr.as_ptr()) };
        u64::try_from(at).ok()
    }

    /// Waits, interruptibly, at most `timeout_ns` for the fence to signal.
    pub(crate) fn wait(&self, timeout_ns: u64) -> Result<WaitResult> {
        // SAFETY: By the type invariant the fence is live; we may sleep here.
        let ret = unsafe { vgsched_fence_wait(self.ptr.as_ptr(), timeout_ns) };
        Self::wait_result(ret)
    }

    /// Waits, interruptibly, for the fence to signal until `deadline_ns`
    /// on `CLOCK_MONOTONIC`; a deadline already past only checks it.
    pub(crate) fn wait_until(&self, deadline_ns: u64) -> Result<WaitResult> {
        // SAFETY: By the type invariant the fence is live; we may sleep here.
        let ret = unsafe { vgsched_fence_wait_until(self.ptr.as_ptr(), deadline_ns) };
        Self::wait_result(ret)
    }

    /// What `dma_fence_wait_timeout()`'s return value says.
    fn wait_result(ret: c_long) -> Result<WaitResult> {
        match ret {
            0 => Ok(WaitResult::TimedOut),
            r if r > 0 => Ok(WaitResult::Signalled),
            r => Err(Error::from_errno(
                i32::try_from(r).unwrap_or(EINVAL.to_errno()),
            )),
        }
    }

    /// Reserves a file descriptor holding a new `sync_file` of this fence.
    pub(crate) fn reserve_sync_file(&self) -> Result<OutFenceFd> {
        let mut file = core::ptr::null_mut();
        // SAFETY: The fence is live; `file` is a valid place for the result.
        let fd = unsafe { vgsched_sync_file_reserve(self.ptr.as_ptr(), &mut file) };
        if fd < 0 {
            return Err(Error::from_errno(fd));
        }
        // INVARIANT: Success gives an unused fd and a sync_file's file.
        Ok(OutFenceFd { fd, file })
    }

    /// Calls `func(data)` once, from any context, when the fence signals
    /// (not at all if it already has: check [`Fence::status`] after arming).
    ///
    /// # Safety
    ///
    /// `func(data)` must be safe to call from interrupt context until the
    /// returned waiter is dropped.
    pub(crate) unsafe fn add_waiter(
        &self,
        func: unsafe extern "C" fn(*mut c_void),
        data: *mut c_void,
    ) -> Result<Waiter> {
        // SAFETY: The fence is live and the caller vouches for `func` and `data`.
        let raw = unsafe { vgsched_fence_waiter_add(self.ptr.as_ptr(), func, data) };
        // INVARIANT: As returned by `vgsched_fence_waiter_add`.
        Ok(Waiter {
            raw: NonNull::new(raw).ok_or(ENOMEM)?,
        })
    }
}

impl Clone for Fence {
    fn clone(&self) -> Self {
        // SAFETY: The fence is live; this takes another reference.
        let ptr = unsafe { vgsched_fence_get(self.ptr.as_ptr()) };
        // INVARIANT: `dma_fence_get()` returns its argument with a new reference.
        Self {
            ptr: NonNull::new(ptr).unwrap_or(self.ptr),
        }
    }
}

impl Drop for Fence {
    fn drop(&mut self) {
        // SAFETY: We own one reference (type invariant) and give it back.
        unsafe { vgsched_fence_put(self.ptr.as_ptr()) }
    }
}

/// A reserved file descriptor for a `sync_file`, not yet visible to user
/// space. Dropping it releases both; [`OutFenceFd::install`] publishes it.
///
/// # Invariants
///
/// `fd` is reserved for the current process and `file` is the sync_file's
/// file with one reference owned here.
pub(crate) struct OutFenceFd {
    fd: i32,
    file: *mut RawFile,
}

impl OutFenceFd {
    /// The descriptor number.
    pub(crate) fn fd(&self) -> i32 {
        self.fd
    }

    /// Makes the descriptor visible to the process; cannot fail.
    pub(crate) fn install(self) {
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: By the type invariant; ownership of both moves to the fd table.
        unsafe { vgsched_sync_file_install(this.fd, this.file) }
    }
}

impl Drop for OutFenceFd {
    fn drop(&mut self) {
        // SAFETY: By the type invariant; nothing was installed.
        unsafe { vgsched_sync_file_abort(self.fd, self.file) }
    }
}

/// A callback armed on a fence by [`Fence::add_waiter`].
///
/// # Invariants
///
/// `raw` was returned by `vgsched_fence_waiter_add` and is freed only here.
pub(crate) struct Waiter {
    raw: NonNull<RawWaiter>,
}

// SAFETY: The waiter is only touched through C calls that take the fence lock.
unsafe impl Send for Waiter {}
// SAFETY: `&Waiter` gives no access at all.
unsafe impl Sync for Waiter {}

impl Drop for Waiter {
    fn drop(&mut self) {
        // SAFETY: By the type invariant, freed exactly once. Freeing removes
        // the callback and waits out a run of it already in progress, so
        // `data` is never used after this returns.
        unsafe { vgsched_fence_waiter_free(self.raw.as_ptr()) };
    }
}

/// How a job takes part in the implicit synchronisation of one bound
/// object (`resv.c`'s `VGSCHED_RESV_*`, the same numbers).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Usage {
    /// It reads the object: it waits for the writers, and its fence joins
    /// the object as a reader (`DMA_RESV_USAGE_READ`), which writers wait
    /// for.
    Read = 0,
    /// It may store to the object: it waits for every fence, and its fence
    /// joins as a writer (`DMA_RESV_USAGE_WRITE`).
    Write = 1,
    /// It reads a shared object its file may only read: it waits for the
    /// writers, and its fence joins as bookkeeping
    /// (`DMA_RESV_USAGE_BOOKKEEP`), which no writer waits for, so a holder
    /// that may only read never delays the object's writers. Its job reads
    /// the object's device copy as it is while it runs.
    ReadOnlyHolder = 2,
}

/// Locks the reservations of the objects of `objects` (`usage[i]`: how the
/// job uses binding slot `i`), reserves a fence slot in each, and calls
/// `queue` with the one fence the job must wait for: the fences already
/// there (all but bookkeeping for an object it writes, the writers' for one
/// it only reads) but those of fence context `own_context` (its own
/// context's); `None` when there is nothing to wait for. If `queue` queues
/// the job and returns its fence, that fence joins every object (as
/// [`Usage`] says) before the locks go, so no other
/// submission slips between the fences the job waits for and its own; if
/// `queue` fails, the locks just go. Locking may be interrupted (`EINTR`,
/// `ERESTARTSYS`). It allocates no lock set (its storage is on this
/// task's stack); a reservation may grow its fence list, and when there
/// are fences to wait for, gathering them into one allocates.
///
/// `queue` must not take a reservation lock of these objects (a vmap, a
/// vunmap): they are held by this task.
pub(crate) fn with_resv_locked<T>(
    objects: &Bindings,
    usage: &[Usage],
    own_context: u64,
    queue: impl FnOnce(Option<Fence>) -> Result<(T, Fence)>,
) -> Result<T> {
    let count = objects.len();
    if count > isa::MAX_BINDINGS || usage.len() != count {
        return Err(EINVAL);
    }
    let mut objs = [core::ptr::null_mut(); isa::MAX_BINDINGS];
    for (obj, map) in objs.iter_mut().zip(objects.iter()) {
        *obj = map.owner().as_raw().cast();
    }
    let mut set = RawResvSet {
        _storage: [MaybeUninit::uninit(); RESV_SET_BYTES],
    };
    let mut wait = core::ptr::null_mut();
    // SAFETY: `set` is storage of the size and alignment `resv.c` asks
    // for, and stays in place until the set is ended below; `objs` holds
    // `count` live GEM objects (referenced by `objects` for this whole
    // call), `usage` as many values, and `wait` is a valid place for the
    // result.
    to_result(unsafe {
        vgsched_resv_lock(
            &mut set,
            objs.as_mut_ptr(),
            usage.as_ptr(),
            count as c_uint,
            own_context,
            &mut wait,
        )
    })?;
    // INVARIANT: On success `wait` is null or carries a reference for us.
    let deps = NonNull::new(wait).map(|ptr| Fence { ptr });
    match queue(deps) {
        Ok((value, fence)) => {
            // SAFETY: The set was locked above and is ended here, once;
            // its fence slots were reserved, and `fence` is live.
            unsafe { vgsched_resv_publish(&mut set, fence.ptr.as_ptr()) };
            Ok(value)
        }
        Err(e) => {
            // SAFETY: The set was locked above and is ended here, once.
            unsafe { vgsched_resv_unlock(&mut set) };
            Err(e)
        }
    }
}
