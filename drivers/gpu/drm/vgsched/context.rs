// SPDX-License-Identifier: GPL-2.0

//! Contexts: the unit slot selection picks.
//!
//! A context belongs to one open file and has a priority in 16 levels (0 is
//! the highest), a creation time (the weight's lifetime) and a fence
//! timeline. Its runtime and the rest of its scheduling state live in the
//! engine.

use kernel::{
    bindings,
    new_mutex,
    prelude::*,
    sync::{
        atomic::{
            ordering,
            Atomic, //
        },
        Arc,
        Mutex, //
    },
    time::{
        ClockSource,
        Monotonic, //
    }, //
};

use crate::{
    engine::{
        Admission,
        JobRoom, //
    },
    fence,
    fence::Fence,
    projects::Charge,
    uapi, //
};

/// Priority levels; 0 is the highest.
pub(crate) const PRIORITY_LEVELS: u32 = uapi::DRM_VGSCHED_PRIORITY_LEVELS;
/// Priorities below this need `CAP_SYS_NICE`.
pub(crate) const PRIORITY_NORMAL_FIRST: u32 = uapi::DRM_VGSCHED_PRIORITY_NORMAL_FIRST;
/// Contexts one open file may hold.
pub(crate) const MAX_PER_FILE: usize = uapi::DRM_VGSCHED_MAX_CONTEXTS_PER_FILE as usize;

/// Current `CLOCK_MONOTONIC` time in nanoseconds.
pub(crate) fn monotonic_ns() -> u64 {
    // `ktime_get()` is never negative.
    u64::try_from(Monotonic::ktime_get()).unwrap_or(0)
}

/// Unfinished jobs one context may have.
pub(crate) const MAX_JOBS_IN_FLIGHT: u64 = uapi::DRM_VGSCHED_MAX_JOBS_IN_FLIGHT as u64;

/// What the submit and wait ioctls of a context share: its sequence numbers
/// and the fences of its recent jobs. The engine never takes this lock; what
/// the scheduler knows of a context is the engine's, under the engine lock.
pub(crate) struct Submissions {
    /// Sequence number of the last job accepted (0: none yet).
    pub(crate) last_seqno: u64,
    /// Fences of the most recent jobs, job `s` at `s % MAX_JOBS_IN_FLIGHT`.
    pub(crate) recent: [Option<Fence>; MAX_JOBS_IN_FLIGHT as usize],
    /// Waves the context's wave store in the engine has room for: it
    /// grows only in a submission, under this lock (and, to put the room
    /// in, the engine lock), so a submission that finds room here needs
    /// no engine lock.
    pub(crate) store_room: usize,
    /// Its last dropped job's storage, for the next submission.
    pub(crate) room: JobRoom,
}

impl Submissions {
    /// The fence of job `seqno`: `EINVAL` if no such job was submitted,
    /// `ENODATA` if it finished too long ago to be remembered.
    pub(crate) fn fence(&self, seqno: u64) -> Result<Fence> {
        if seqno == 0 || seqno > self.last_seqno {
            return Err(EINVAL);
        }
        if self.last_seqno - seqno >= MAX_JOBS_IN_FLIGHT {
            return Err(ENODATA);
        }
        self.recent[(seqno % MAX_JOBS_IN_FLIGHT) as usize]
            .clone()
            .ok_or(ENODATA)
    }
}

/// One GPU context: its identity. Its scheduling state (jobs, runtime, slot,
/// slices, guilt) is the engine's ([`crate::engine`]), kept once, under the
/// engine lock.
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
    /// The context, charged to the project member whose file created it
    /// (`projects.rs`) until it is destroyed or its file closed
    /// ([`Context::start_cancelling`]): what is left of it goes later, off
    /// that path, and holds nothing of the member's.
    #[pin]
    charge: Mutex<Option<Charge>>,
    /// Fence timeline of its jobs.
    pub(crate) timeline: u64,
    /// Sequence numbers and recent fences; held across a whole submission,
    /// so the jobs of a context are numbered in the order they are queued.
    #[pin]
    pub(crate) submissions: Mutex<Submissions>,
    /// Destroyed (or its file closed): its work is being cancelled, and
    /// the memory work item leaves it alone. Set once, without the engine
    /// lock, before the engine waits for that work item.
    cancelling: Atomic<bool>,
    /// Where the engine last put its record in the context list
    /// ([`Context::queue_hint`]).
    queue_hint: Atomic<usize>,
    /// What a submission checks without the engine lock: how many jobs
    /// it holds, whether it is guilty.
    pub(crate) admission: Admission,
}

impl Context {
    /// Creates a context, checking that the caller may use `priority`.
    pub(crate) fn new(
        priority: u32,
        client: u64,
        id: u32,
        charge: Option<Charge>,
    ) -> Result<Arc<Self>> {
        if priority >= PRIORITY_LEVELS {
            return Err(EINVAL);
        }
        if priority < PRIORITY_NORMAL_FIRST {
            // SAFETY: `capable()` only reads the current task's credentials.
            let nice = unsafe { bindings::capable(bindings::CAP_SYS_NICE as i32) };
            if !nice {
                return Err(EPERM);
            }
        }
        // INVARIANT: checked above.
        Arc::pin_init(
            try_pin_init!(Self {
                id,
                client,
                priority,
                created_ns: monotonic_ns(),
                charge <- new_mutex!(charge),
                timeline: fence::new_timeline(),
                submissions <- new_mutex!(Submissions {
                    last_seqno: 0,
                    recent: [const { None }; MAX_JOBS_IN_FLIGHT as usize],
                    store_room: 0,
                    room: JobRoom::default(),
                }),
                cancelling: Atomic::new(false),
                queue_hint: Atomic::new(usize::MAX),
                admission: Admission::new(),
            }),
            GFP_KERNEL_ACCOUNT,
        )
    }

    /// Marks it as being cancelled ([`Context::cancelling`]) and gives its
    /// charge back: a destroyed context counts no more, whenever its
    /// record and jobs are dropped.
    pub(crate) fn start_cancelling(&self) {
        self.cancelling.store(true, ordering::Release);
        let charge = self.charge.lock().take();
        drop(charge);
    }

    /// Its work is being cancelled: nothing new of it is prepared.
    pub(crate) fn cancelling(&self) -> bool {
        self.cancelling.load(ordering::Acquire)
    }

    /// Where the engine last put its record in its context list
    /// (`usize::MAX` while it has none): a hint, written and read only
    /// under the engine lock and checked against the record found there
    /// at each use (`engine/queue.rs`, `queue_index`), so that finding a
    /// context's record is O(1).
    pub(crate) fn queue_hint(&self) -> usize {
        self.queue_hint.load(ordering::Relaxed)
    }

    /// Sets [`Context::queue_hint`]; under the engine lock.
    pub(crate) fn set_queue_hint(&self, index: usize) {
        self.queue_hint.store(index, ordering::Relaxed);
    }
}

/// The contexts of one file, by id (`index + 1`, so 0 is never valid).
pub(crate) struct ContextTable {
    slots: [Option<Arc<Context>>; MAX_PER_FILE],
}

impl ContextTable {
    /// An empty table.
    pub(crate) const fn new() -> Self {
        Self {
            slots: [const { None }; MAX_PER_FILE],
        }
    }

    /// Creates a context under the lowest free id; `ENOSPC` when full.
    pub(crate) fn create(
        &mut self,
        priority: u32,
        client: u64,
        charge: Option<Charge>,
    ) -> Result<Arc<Context>> {
        let index = self.slots.iter().position(Option::is_none).ok_or(ENOSPC)?;
        let ctx = Context::new(priority, client, index as u32 + 1, charge)?;
        self.slots[index] = Some(ctx.clone());
        Ok(ctx)
    }

    /// The contexts, in id order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<Context>> {
        self.slots.iter().flatten()
    }

    /// Removes every context, for the file's release.
    pub(crate) fn take_slots(&mut self) -> [Option<Arc<Context>>; MAX_PER_FILE] {
        core::mem::replace(&mut self.slots, [const { None }; MAX_PER_FILE])
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
