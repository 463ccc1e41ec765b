// SPDX-License-Identifier: GPL-2.0

//! The engine's own work queue, its fence-signalling critical sections and
//! the measurement of how long the engine lock is held.
//!
//! The work queue and the annotations come from `engine_sync.c` (7.3 has
//! no Rust binding for `alloc_workqueue()` or `dma_fence`).

use core::{
    panic::Location,
    ptr::NonNull, //
};

use kernel::{
    bindings,
    prelude::*,
    sync::{
        atomic::{
            ordering,
            Atomic, //
        },
        MutexGuard, //
    },
    time::{
        Instant,
        Monotonic, //
    },
    workqueue::Queue, //
};

extern "C" {
    fn vgsched_engine_wq_alloc() -> *mut bindings::workqueue_struct;
    fn vgsched_memory_wq_alloc() -> *mut bindings::workqueue_struct;
    fn vgsched_gpu_wq_alloc() -> *mut bindings::workqueue_struct;
    fn vgsched_engine_wq_destroy(wq: *mut bindings::workqueue_struct);
    fn vgsched_gpu_yield() -> bool;
    fn vgsched_fence_begin_signalling() -> bool;
    fn vgsched_fence_end_signalling(cookie: bool);
}

/// A work queue with `WQ_MEM_RECLAIM`, owned by the engine: the engine's
/// (ordered), the memory work item's (unbound) or the wave executor's
/// (ordered, unbound).
///
/// # Invariants
///
/// `ptr` is a live work queue, destroyed only when this value drops.
pub(crate) struct OwnedQueue {
    ptr: NonNull<bindings::workqueue_struct>,
}

// SAFETY: A work queue may be used and destroyed from any thread.
unsafe impl Send for OwnedQueue {}
// SAFETY: Queueing work is thread safe.
unsafe impl Sync for OwnedQueue {}

impl OwnedQueue {
    /// Allocates the engine's queue.
    pub(super) fn engine() -> Result<Self> {
        // SAFETY: No preconditions; the name is a string literal in C.
        Self::adopt(unsafe { vgsched_engine_wq_alloc() })
    }

    /// Allocates the queue of the memory work item.
    pub(super) fn memory() -> Result<Self> {
        // SAFETY: No preconditions; the name is a string literal in C.
        Self::adopt(unsafe { vgsched_memory_wq_alloc() })
    }

    /// Allocates the queue of the wave executor ([`crate::gpu::exec`]).
    pub(crate) fn gpu() -> Result<Self> {
        // SAFETY: No preconditions; the name is a string literal in C.
        Self::adopt(unsafe { vgsched_gpu_wq_alloc() })
    }

    /// Owns `ptr`, a queue just allocated (null if that failed).
    fn adopt(ptr: *mut bindings::workqueue_struct) -> Result<Self> {
        // INVARIANT: a non-null result is a live queue, now ours.
        Ok(Self {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
        })
    }

    /// The queue, to enqueue work items on.
    pub(crate) fn queue(&self) -> &Queue {
        // SAFETY: `ptr` is live for as long as `self` (type invariant).
        unsafe { Queue::from_raw(self.ptr.as_ptr()) }
    }
}

impl Drop for OwnedQueue {
    fn drop(&mut self) {
        // SAFETY: `ptr` is live and nothing uses it after this (type
        // invariant); destroying drains the work still queued on it.
        unsafe { vgsched_engine_wq_destroy(self.ptr.as_ptr()) };
    }
}

/// Gives the CPU up if its scheduler wants to run another task here (a
/// reschedule is pending, lazily or not); returns whether it did. Only
/// for a work item that holds no lock and may sleep: the wave executor
/// between two pieces (`engine_sync.c` says why it is needed).
pub(crate) fn yield_if_wanted() -> bool {
    // SAFETY: No preconditions beyond the caller's (may sleep, no lock
    // held), which this function's contract states.
    unsafe { vgsched_gpu_yield() }
}

/// A fence-signalling critical section, from creation to drop: nothing in
/// it may allocate memory that can enter reclaim, or take a lock that is
/// held elsewhere around such an allocation (lockdep checks both).
pub(crate) struct Signalling {
    cookie: bool,
}

impl Signalling {
    /// Begins a section.
    pub(crate) fn begin() -> Self {
        // SAFETY: No preconditions.
        let cookie = unsafe { vgsched_fence_begin_signalling() };
        Self { cookie }
    }
}

impl Drop for Signalling {
    fn drop(&mut self) {
        // SAFETY: `cookie` came from the matching begin, on this thread.
        unsafe { vgsched_fence_end_signalling(self.cookie) };
    }
}

/// How long the engine lock has been held since load: the longest hold,
/// the number of holds and their total time.
pub(super) struct HoldMeter {
    max_ns: Atomic<u64>,
    /// Where the longest hold was taken: a `&'static Location`, or 0.
    max_at: Atomic<usize>,
    holds: Atomic<u64>,
    total_ns: Atomic<u64>,
    /// Holds longer than [`SLOW_HOLD_NS`].
    slow: Atomic<u64>,
}

/// A hold longer than this counts as slow: the goal every hold meets.
pub(super) const SLOW_HOLD_NS: u64 = 1_000_000;

impl HoldMeter {
    /// Nothing measured yet.
    pub(super) fn new() -> Self {
        Self {
            max_ns: Atomic::new(0),
            max_at: Atomic::new(0),
            holds: Atomic::new(0),
            total_ns: Atomic::new(0),
            slow: Atomic::new(0),
        }
    }

    /// Forgets the longest hold: the next hold is the longest so far. The
    /// caller holds the lock, as every writer does ([`Held`]'s drop).
    pub(super) fn reset_max(&self) {
        self.max_ns.store(0, ordering::Relaxed);
        self.max_at.store(0, ordering::Relaxed);
    }

    /// The longest hold so far, in nanoseconds.
    pub(super) fn max_ns(&self) -> u64 {
        self.max_ns.load(ordering::Relaxed)
    }

    /// Where the longest hold so far was taken.
    pub(super) fn max_at(&self) -> Option<&'static Location<'static>> {
        let at = self.max_at.load(ordering::Relaxed) as *const Location<'static>;
        // SAFETY: `max_at` is 0 or the address of a `&'static Location`
        // stored by `Held::drop`.
        unsafe { at.as_ref() }
    }

    /// The holds so far, their total time in nanoseconds, and how many
    /// were slow (longer than [`SLOW_HOLD_NS`]).
    pub(super) fn holds(&self) -> (u64, u64, u64) {
        (
            self.holds.load(ordering::Relaxed),
            self.total_ns.load(ordering::Relaxed),
            self.slow.load(ordering::Relaxed),
        )
    }
}

/// Time the engine spends queueing jobs ([`super::Engine::submit`]: the
/// job's fence, its preallocated state, the queue): the scheduler's own part
/// of a submission, which `make bench` compares with drm_sched's.
pub(super) struct SubmitMeter {
    calls: Atomic<u64>,
    total_ns: Atomic<u64>,
}

impl SubmitMeter {
    /// Nothing measured yet.
    pub(super) fn new() -> Self {
        Self {
            calls: Atomic::new(0),
            total_ns: Atomic::new(0),
        }
    }

    /// Counts one submission that took `ns`.
    pub(super) fn add(&self, ns: u64) {
        self.calls.fetch_add(1, ordering::Relaxed);
        self.total_ns.fetch_add(ns, ordering::Relaxed);
    }

    /// Submissions so far and their total time in nanoseconds.
    pub(super) fn totals(&self) -> (u64, u64) {
        (
            self.calls.load(ordering::Relaxed),
            self.total_ns.load(ordering::Relaxed),
        )
    }
}

/// A held engine lock that records how long it was held when it drops.
pub(super) struct Held<'a, T> {
    guard: MutexGuard<'a, T>,
    since: Instant<Monotonic>,
    meter: &'a HoldMeter,
    at: &'static Location<'static>,
}

impl<'a, T> Held<'a, T> {
    /// Starts timing `guard`, just taken.
    pub(super) fn new(
        guard: MutexGuard<'a, T>,
        meter: &'a HoldMeter,
        at: &'static Location<'static>,
    ) -> Self {
        Self {
            guard,
            since: Instant::now(),
            meter,
            at,
        }
    }
}

impl<T> core::ops::Deref for Held<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T: Unpin> core::ops::DerefMut for Held<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

impl<T> Drop for Held<'_, T> {
    fn drop(&mut self) {
        let held = u64::try_from(self.since.elapsed().as_nanos()).unwrap_or(0);
        // Every writer still holds the lock here (the guard drops after
        // this), so a plain read and write cannot lose a larger value.
        let m = self.meter;
        if held > m.max_ns.load(ordering::Relaxed) {
            m.max_ns.store(held, ordering::Relaxed);
            m.max_at
                .store(core::ptr::from_ref(self.at) as usize, ordering::Relaxed);
        }
        m.holds.store(
            m.holds.load(ordering::Relaxed).wrapping_add(1),
            ordering::Relaxed,
        );
        let total = m.total_ns.load(ordering::Relaxed).saturating_add(held);
        m.total_ns.store(total, ordering::Relaxed);
        if held > SLOW_HOLD_NS {
            m.slow.store(
                m.slow.load(ordering::Relaxed).wrapping_add(1),
                ordering::Relaxed,
            );
        }
    }
}
