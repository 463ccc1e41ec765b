// SPDX-License-Identifier: GPL-2.0

//! Jobs handed from `SUBMIT` to the engine without the engine lock.
//!
//! A submission used to take the engine lock to put its job in its
//! context's record, and so waited behind whatever engine step held it.
//! Now it checks what it must against its context's [`Admission`] (kept
//! by the engine as the context's jobs move, read without the lock) and
//! pushes the job onto the engine's [`Inbox`], a lock-free list as the
//! kernel's `llist` (any number of pushers, a taker takes everything at
//! once, so no ABA problem can arise). Whoever takes the engine lock
//! takes the inbox first (`Engine::lock`): every holder of the lock sees
//! every job submitted before it, in submission order, as if the
//! submission had taken the lock itself.

use core::ptr;

use kernel::{
    prelude::*,
    sync::atomic::{
        ordering,
        Atomic, //
    },
    warn_on, //
};

use super::job::Job;

/// The link of a job in an [`Inbox`]: the job pushed before it.
///
/// # Invariants
///
/// Null whenever its job is not in a chain ([`Taken`] clears it as it
/// hands a job out); in a chain, null or the next job of that chain (a
/// pointer from [`KBox::into_raw`]), owned by the chain's owner (the inbox
/// or a [`Taken`]) and followed only by it.
pub(super) struct Link(*mut Job);

impl Link {
    /// No job.
    pub(super) const NONE: Self = Self(ptr::null_mut());
}

// SAFETY: A link that is not null belongs to a chain and is followed only
// by that chain's owner, which owns the jobs behind it (type invariant):
// moving a job to another thread moves no access to another job with it,
// outside a chain a link is null, and every other field of `Job` is `Send`
// (checked below).
unsafe impl Send for Link {}

/// `Job` is `Send` by its fields: the engine lock moves it between threads.
const _: () = {
    const fn send<T: Send>() {}
    send::<Job>();
};

/// A lock-free list of jobs: pushed one at a time from any context, taken
/// all at once.
///
/// # Invariants
///
/// `head` is null or the most recently pushed job of a chain of jobs,
/// each from [`KBox::into_raw`], linked through their [`Link`]s to the
/// first pushed, whose link is null. The chain is owned by the inbox.
pub(super) struct Inbox {
    head: Atomic<*mut Job>,
}

impl Inbox {
    /// An empty inbox.
    pub(super) fn new() -> Self {
        Self {
            head: Atomic::new(ptr::null_mut()),
        }
    }

    /// Adds `job`. Fully ordered: a flag read after it by the pusher and
    /// written before [`Inbox::take`] by a taker cannot be missed by both
    /// (the pusher sees the flag, or the taker the job).
    pub(super) fn push(&self, job: KBox<Job>) {
        let new = KBox::into_raw(job);
        let mut old = self.head.load(ordering::Relaxed);
        loop {
            // SAFETY: `new` is from `KBox::into_raw` and not shared until
            // the exchange below succeeds.
            unsafe { (*new).link = Link(old) };
            match self.head.cmpxchg(old, new, ordering::Full) {
                // INVARIANT: `new` heads the chain, linked to the old head.
                Ok(_) => return,
                Err(now) => old = now,
            }
        }
    }

    /// Whether it holds no job (a hint: a push may come at any time).
    pub(super) fn is_empty(&self) -> bool {
        self.head.load(ordering::Relaxed).is_null()
    }

    /// Takes every job, to be returned oldest first. Fully ordered, as
    /// [`Inbox::push`].
    pub(super) fn take(&self) -> Taken {
        let mut p = self.head.xchg(ptr::null_mut(), ordering::Full);
        // The chain runs newest to oldest: reversed in place.
        let mut oldest_first = ptr::null_mut();
        while !p.is_null() {
            // SAFETY: `p` is a job of the chain taken above, now owned
            // here (type invariant).
            let job = unsafe { &mut *p };
            let next = core::mem::replace(&mut job.link, Link(oldest_first)).0;
            oldest_first = p;
            p = next;
        }
        // INVARIANT: the chain taken, reversed: each job links to the one
        // pushed after it.
        Taken { next: oldest_first }
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        drop(self.take());
    }
}

/// Jobs taken from an [`Inbox`], oldest first; those not iterated over
/// are dropped with it.
///
/// # Invariants
///
/// `next` is null or the first of a chain of jobs from [`KBox::into_raw`]
/// owned by this value.
pub(super) struct Taken {
    next: *mut Job,
}

impl Iterator for Taken {
    type Item = KBox<Job>;

    fn next(&mut self) -> Option<KBox<Job>> {
        if self.next.is_null() {
            return None;
        }
        // SAFETY: `next` heads the chain this value owns (type invariant),
        // a pointer from `KBox::into_raw`; ownership passes to the box.
        let mut job = unsafe { KBox::from_raw(self.next) };
        // INVARIANT: the rest of the chain.
        self.next = core::mem::replace(&mut job.link, Link::NONE).0;
        Some(job)
    }
}

impl Drop for Taken {
    fn drop(&mut self) {
        self.for_each(drop);
    }
}

/// What `SUBMIT` checks of a context without the engine lock, kept by the
/// engine as the context's jobs move.
pub(crate) struct Admission {
    /// The context's jobs: those held (in the inbox, queued, running, or
    /// signalled and not dropped yet) in the upper half, those of them
    /// signalled in the lower half: one word, so one load sees both as
    /// they were at one time.
    counts: Atomic<u64>,
    /// A job of it hung: new work is refused (`ECANCELED`). Set once,
    /// under the engine lock.
    guilty: Atomic<bool>,
}

/// One held job in [`Admission::counts`].
const HELD: u64 = 1 << 32;

/// The counts of an [`Admission`] at one time.
pub(crate) struct JobCounts {
    /// Jobs held: unsignalled, or signalled and not dropped yet.
    pub(crate) held: u32,
    /// Of them, the signalled ones.
    pub(crate) signalled: u32,
}

impl JobCounts {
    /// Jobs not signalled yet.
    pub(crate) fn unsignalled(&self) -> u32 {
        self.held.saturating_sub(self.signalled)
    }
}

impl Admission {
    /// No job, not guilty.
    pub(crate) fn new() -> Self {
        Self {
            counts: Atomic::new(0),
            guilty: Atomic::new(false),
        }
    }

    /// The counts now. Between two submissions on the context (which
    /// are serialised by its submissions lock) they only go down: a
    /// submission that checked them stays within its limits.
    pub(crate) fn counts(&self) -> JobCounts {
        let c = self.counts.load(ordering::Acquire);
        JobCounts {
            held: (c >> 32) as u32,
            signalled: c as u32,
        }
    }

    /// A job was accepted (before it is pushed).
    pub(super) fn accepted(&self) {
        self.counts.add(HELD, ordering::Relaxed);
    }

    /// A job signalled and waits to be dropped; under the engine lock.
    pub(super) fn signalled(&self) {
        self.counts.add(1, ordering::Relaxed);
    }

    /// `n` signalled jobs were taken to be dropped; under the engine lock.
    /// Release, as every decrement: a submission that reads the lower
    /// count (Acquire) after the jobs were dropped finds room.
    pub(super) fn dropped(&self, n: usize) {
        let n = n as u64;
        let before = self.counts.fetch_sub(n * HELD + n, ordering::Release);
        // More dropped than held or signalled: a count was missed.
        warn_on!(before >> 32 < n || (before & u64::from(u32::MAX)) < n);
    }

    /// An accepted job never reached its context's record (it could not
    /// be queued, which a submission's check rules out); under the engine
    /// lock.
    pub(super) fn withdrawn(&self) {
        let before = self.counts.fetch_sub(HELD, ordering::Release);
        warn_on!(before >> 32 == 0);
    }

    /// A job of it hung.
    pub(crate) fn guilty(&self) -> bool {
        self.guilty.load(ordering::Acquire)
    }

    /// Marks it guilty; under the engine lock.
    pub(super) fn set_guilty(&self) {
        self.guilty.store(true, ordering::Release);
    }
}
