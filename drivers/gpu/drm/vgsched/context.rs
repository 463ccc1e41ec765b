// SPDX-License-Identifier: GPL-2.0

//! Contexts: the unit the scheduler picks (SEEDS A's "task").
//!
//! A context belongs to one open file, has a priority in 16 levels (0 is
//! the highest) and keeps the accounting the scheduler's weights need:
//! creation time and accumulated GPU runtime.

use kernel::{bindings, prelude::*, sync::Arc};

use crate::uapi;

/// Priority levels; 0 is the highest.
pub(crate) const PRIORITY_LEVELS: u32 = uapi::DRM_VGSCHED_PRIORITY_LEVELS;
/// Priorities below this need `CAP_SYS_NICE`.
pub(crate) const PRIORITY_NORMAL_FIRST: u32 = uapi::DRM_VGSCHED_PRIORITY_NORMAL_FIRST;
/// Contexts one open file may hold.
pub(crate) const MAX_PER_FILE: usize = uapi::DRM_VGSCHED_MAX_CONTEXTS_PER_FILE as usize;

/// Current `CLOCK_MONOTONIC` time in nanoseconds.
pub(crate) fn monotonic_ns() -> u64 {
    // SAFETY: `ktime_get()` has no preconditions.
    let now = unsafe { bindings::ktime_get() };
    now as u64
}

/// One GPU context.
///
/// # Invariants
///
/// `priority < PRIORITY_LEVELS`.
pub(crate) struct Context {
    /// Priority, 0 (highest) to 15.
    pub(crate) priority: u32,
    /// Creation time, `CLOCK_MONOTONIC` nanoseconds.
    pub(crate) created_ns: u64,
}

impl Context {
    /// Creates a context, checking that the caller may use `priority`.
    pub(crate) fn new(priority: u32) -> Result<Arc<Self>> {
        if priority >= PRIORITY_LEVELS {
            return Err(EINVAL);
        }
        // SAFETY: `capable()` only reads the current task's credentials.
        if priority < PRIORITY_NORMAL_FIRST && !unsafe { bindings::capable(bindings::CAP_SYS_NICE as i32) } {
            return Err(EPERM);
        }
        // INVARIANT: checked above.
        Ok(Arc::new(Self { priority, created_ns: monotonic_ns() }, GFP_KERNEL)?)
    }

    /// The answer to `DRM_IOCTL_VGSCHED_CTX_QUERY`.
    pub(crate) fn query(&self, args: &mut uapi::drm_vgsched_ctx_query) {
        args.created_ns = self.created_ns;
        // No job has run yet: submission arrives with the execution engine.
        args.runtime_ns = 0;
        args.priority = self.priority;
        args.state = uapi::DRM_VGSCHED_CTX_STATE_IDLE;
        args.jobs_submitted = 0;
        args.jobs_completed = 0;
    }
}

/// The contexts of one file, by id (`index + 1`, so 0 is never valid).
pub(crate) struct ContextTable {
    slots: [Option<Arc<Context>>; MAX_PER_FILE],
}

impl ContextTable {
    /// An empty table.
    pub(crate) const fn new() -> Self {
        Self { slots: [const { None }; MAX_PER_FILE] }
    }

    /// Stores `ctx` under the lowest free id; `ENOSPC` when full.
    pub(crate) fn insert(&mut self, ctx: Arc<Context>) -> Result<u32> {
        let index = self.slots.iter().position(Option::is_none).ok_or(ENOSPC)?;
        self.slots[index] = Some(ctx);
        Ok(index as u32 + 1)
    }

    fn slot(&mut self, id: u32) -> Result<&mut Option<Arc<Context>>> {
        let index = (id as usize).checked_sub(1).ok_or(ENOENT)?;
        match self.slots.get_mut(index) {
            Some(slot @ Some(_)) => Ok(slot),
            _ => Err(ENOENT),
        }
    }

    /// The context with this id; `ENOENT` if there is none.
    pub(crate) fn get(&mut self, id: u32) -> Result<Arc<Context>> {
        self.slot(id)?.clone().ok_or(ENOENT)
    }

    /// Removes the context with this id; `ENOENT` if there is none.
    pub(crate) fn remove(&mut self, id: u32) -> Result<Arc<Context>> {
        self.slot(id)?.take().ok_or(ENOENT)
    }
}
