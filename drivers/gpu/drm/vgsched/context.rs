// SPDX-License-Identifier: GPL-2.0

//! Contexts: the unit the scheduler picks (SEEDS A's "task").
//!
//! A context belongs to one open file, has a priority in 16 levels (0 is
//! the highest) and keeps the accounting the scheduler's weights need:
//! creation time and accumulated GPU runtime.

use kernel::{
    bindings, new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

use crate::{fence, fence::Fence, uapi, vgsched_core::pool::Weight};

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

/// Unfinished jobs one context may have.
pub(crate) const MAX_JOBS_IN_FLIGHT: u64 = uapi::DRM_VGSCHED_MAX_JOBS_IN_FLIGHT as u64;

/// Job accounting of a context, shared by the submit and wait ioctls and
/// the engine (which takes its own lock first).
pub(crate) struct ContextState {
    /// Sequence number of the last job accepted (0: none yet).
    pub(crate) last_seqno: u64,
    /// Fences of the most recent jobs, job `s` at `s % MAX_JOBS_IN_FLIGHT`.
    pub(crate) recent: [Option<Fence>; MAX_JOBS_IN_FLIGHT as usize],
    /// Jobs finished so far, with or without error.
    pub(crate) jobs_completed: u64,
    /// A job of this context hung: new work is refused.
    pub(crate) guilty: bool,
    /// Destroyed (or its file closed): a submission racing with that is
    /// refused, so no job outlives its context.
    pub(crate) closed: bool,
    /// Modeled time the context's waves occupied the device.
    pub(crate) runtime_ns: u64,
    /// End of the latest interval counted in `runtime_ns`.
    pub(crate) busy_until_ns: u64,
    /// The hardware slot it holds (SEEDS A), if any.
    pub(crate) slot: Option<u32>,
    /// Time slices received: loads into a slot and renewals.
    pub(crate) slices: u64,
    /// Times it lost its slot with work left.
    pub(crate) preemptions: u64,
    /// Modeled time spent saving and restoring its waves.
    pub(crate) switch_ns: u64,
}

impl ContextState {
    /// Jobs accepted but not finished.
    pub(crate) fn in_flight(&self) -> u64 {
        self.last_seqno - self.jobs_completed
    }

    /// The fence of job `seqno`: `EINVAL` if no such job was submitted,
    /// `ENODATA` if it finished too long ago to be remembered.
    pub(crate) fn fence(&self, seqno: u64) -> Result<Fence> {
        if seqno == 0 || seqno > self.last_seqno {
            return Err(EINVAL);
        }
        if self.last_seqno - seqno >= MAX_JOBS_IN_FLIGHT {
            return Err(ENODATA);
        }
        self.recent[(seqno % MAX_JOBS_IN_FLIGHT) as usize].clone().ok_or(ENODATA)
    }

    /// Counts modeled device time `[start, end)` of one of the context's
    /// work-groups. Starts never go backwards, so adding what lies past the
    /// last counted end measures the union of overlapping work-groups.
    pub(crate) fn account(&mut self, start_ns: u64, end_ns: u64) {
        let from = start_ns.max(self.busy_until_ns);
        if end_ns > from {
            self.runtime_ns += end_ns - from;
            self.busy_until_ns = end_ns;
        }
    }
}

/// One GPU context.
///
/// # Invariants
///
/// `priority < PRIORITY_LEVELS`.
#[pin_data]
pub(crate) struct Context {
    /// Id within its file, as user space names it.
    pub(crate) id: u32,
    /// DRM client id of the file that owns it (fdinfo's `drm-client-id`).
    pub(crate) client: u64,
    /// Priority, 0 (highest) to 15.
    pub(crate) priority: u32,
    /// Creation time, `CLOCK_MONOTONIC` nanoseconds.
    pub(crate) created_ns: u64,
    /// Fence timeline of its jobs.
    pub(crate) timeline: u64,
    /// Job accounting.
    #[pin]
    pub(crate) state: Mutex<ContextState>,
}

impl Context {
    /// Creates a context, checking that the caller may use `priority`.
    pub(crate) fn new(priority: u32, client: u64, id: u32) -> Result<Arc<Self>> {
        if priority >= PRIORITY_LEVELS {
            return Err(EINVAL);
        }
        // SAFETY: `capable()` only reads the current task's credentials.
        if priority < PRIORITY_NORMAL_FIRST && !unsafe { bindings::capable(bindings::CAP_SYS_NICE as i32) } {
            return Err(EPERM);
        }
        // INVARIANT: checked above.
        Arc::pin_init(
            try_pin_init!(Self {
                id,
                client,
                priority,
                created_ns: monotonic_ns(),
                timeline: fence::new_timeline(),
                state <- new_mutex!(ContextState {
                    last_seqno: 0,
                    recent: [const { None }; MAX_JOBS_IN_FLIGHT as usize],
                    jobs_completed: 0,
                    guilty: false,
                    closed: false,
                    runtime_ns: 0,
                    busy_until_ns: 0,
                    slot: None,
                    slices: 0,
                    preemptions: 0,
                    switch_ns: 0,
                }),
            }),
            GFP_KERNEL,
        )
    }

    /// The answer to `DRM_IOCTL_VGSCHED_CTX_QUERY`.
    pub(crate) fn query(&self, args: &mut uapi::drm_vgsched_ctx_query) {
        let state = self.state.lock();
        args.created_ns = self.created_ns;
        args.runtime_ns = state.runtime_ns;
        args.priority = self.priority;
        args.state = if state.guilty {
            uapi::DRM_VGSCHED_CTX_STATE_GUILTY
        } else if state.in_flight() > 0 {
            uapi::DRM_VGSCHED_CTX_STATE_ACTIVE
        } else {
            uapi::DRM_VGSCHED_CTX_STATE_IDLE
        };
        args.jobs_submitted = state.last_seqno;
        args.jobs_completed = state.jobs_completed;
        args.client_id = self.client;
        let now = monotonic_ns();
        args.lifetime_ns = now.saturating_sub(self.created_ns);
        args.weight_milli = Weight::new(now, self.created_ns, state.runtime_ns).milli();
        args.slices = state.slices;
        args.preemptions = state.preemptions;
        args.switch_ns = state.switch_ns;
        args.slot = state.slot.map_or(-1, |s| s as i32);
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

    /// Creates a context under the lowest free id; `ENOSPC` when full.
    pub(crate) fn create(&mut self, priority: u32, client: u64) -> Result<Arc<Context>> {
        let index = self.slots.iter().position(Option::is_none).ok_or(ENOSPC)?;
        let ctx = Context::new(priority, client, index as u32 + 1)?;
        self.slots[index] = Some(ctx.clone());
        Ok(ctx)
    }

    /// The contexts, in id order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<Context>> {
        self.slots.iter().flatten()
    }

    /// Removes every context, for the file's release.
    pub(crate) fn take_all(&mut self) -> impl Iterator<Item = Arc<Context>> + '_ {
        self.slots.iter_mut().filter_map(Option::take)
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
