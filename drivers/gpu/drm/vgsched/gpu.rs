// SPDX-License-Identifier: GPL-2.0

//! The virtual GPU's hardware, beside the scheduler that drives it.
//!
//! A real GPU executes on its own: the driver hands it work and learns of
//! the results from interrupts, and the CPU time of execution is not the
//! driver's. This module is where the modeled device does the same. The
//! engine (the scheduler) hands a device a wave's chunk, from one
//! preemption point to the next, as a [`Lease`](exec::Lease), and takes it
//! back, with what the chunk did, when the device hands it back and raises
//! its interrupt (queues the engine's step).
//!
//! The scheduler is written against one interface, [`Backend`], as a
//! driver is against a firmware's command interface; two devices
//! implement it: the wave executor ([`exec`], the virtual GPU, which
//! interprets the chunks on its own work queue, under its own lock), and
//! the mock ([`mock`], which does not interpret: a chunk runs for the
//! job's given duration and is handed back when an hrtimer fires), over
//! which the KUnit suites run the scheduler and which the module runs over
//! when loaded with `backend=1` (the scheduler alone, for benchmarks). The
//! engine holds one of the two in a [`Gpu`]; which one is chosen when the
//! engine is created.

pub(crate) mod exec;
pub(crate) mod mock;

use kernel::{
    prelude::*,
    workqueue::Queue, //
};

use crate::vgsched_core::exec::CycleCosts;
use exec::{
    ExecStats,
    Executor,
    Lease,
    Recall, //
};
use mock::MockExecutor;

/// The command interface of a device that executes waves' chunks, as the
/// scheduler sees it. Every command is cheap and bounded (a few list moves
/// under the device's own spinlock), allocates nothing and never takes the
/// engine lock. [`Backend::submit`], [`Backend::cut`], [`Backend::recall`]
/// and [`Backend::take_done`] are given under the engine lock, on the
/// engine's signalling path; [`Backend::close`] and [`Backend::drain`] at
/// shut-down without it; [`Backend::run`] on the device's own work item;
/// [`Backend::queue`], [`Backend::costs`], [`Backend::stats`] and
/// [`Backend::reset_maxima`] from wherever the engine needs them
/// (queueing the work item, `GET_INFO`, debugfs), without the engine lock
/// or under it. One lease per wave slot is out at most, and the device has
/// room for all of them.
///
/// The events: a lease handed back (its chunk complete at its horizon, its
/// wave ended, or the lease recalled) is in the device's done list, for
/// [`Backend::take_done`]; the device raises its interrupt by calling the
/// `handed_back` of [`Backend::run`], which queues the engine's step.
pub(crate) trait Backend {
    /// Hands `lease` to the device; returns the id it is known by from
    /// then on. Engine lock held (the step). May not block or allocate.
    /// Fails, handing the lease back, only if the device has no room
    /// (which one lease per wave slot rules out). Event: the lease is
    /// handed back later, once its chunk is complete; the caller queues
    /// the device's work item (the engine's `kick_gpu`).
    #[expect(clippy::result_large_err)]
    fn submit(&self, lease: Lease) -> Result<u64, Lease>;

    /// Brings the horizon of lease `id` down to `until` cycles: its wave's
    /// context lost its slot and is preempted at once. Engine lock held.
    /// Does nothing to a lease interpreted past `until` already or handed
    /// back. Event: none of its own; the lease comes back as it would,
    /// complete at the lower horizon.
    fn cut(&self, id: u64, until: u64);

    /// Asks for lease `id` back as it is, complete or not: its context is
    /// being cancelled, or the device shut down. Engine lock held.
    /// Event: the lease is in the done list ([`Recall::Back`]), or will
    /// be once the work item's current piece stops ([`Recall::InHand`]:
    /// the caller releases the engine lock, waits for the work item,
    /// and asks again).
    fn recall(&self, id: u64) -> Recall;

    /// Takes the next lease handed back, if any, unless the device
    /// computed it after `before` (its `done_ns`): a step that began
    /// before that leaves it to the step its hand-back queued, so no end
    /// is put before the device computed it. Engine lock held.
    fn take_done(&self, before: u64) -> Option<Lease>;

    /// Stops the device for good: nothing is interpreted or handed back
    /// from its next piece on, and it raises no more interrupts. Process
    /// context, without the engine lock (the engine's `shut_down`, which
    /// then waits for the work item). A lease still out is dropped by
    /// [`Backend::drain`] afterwards.
    fn close(&self);

    /// The device's work item, on [`Backend::queue`]: one round of its
    /// work; calls `handed_back` (the interrupt) after each lease that
    /// goes to the done list. Returns whether work is left for another
    /// round (the caller queues the work item again). The signalling
    /// path: allocates nothing, never takes the engine lock; a device
    /// that computes on the CPU gives it up between two pieces of work,
    /// holding no lock, when another task is wanted there
    /// ([`crate::engine::sync::yield_if_wanted`]).
    fn run(&self, handed_back: impl FnMut()) -> bool;

    /// The queue the device's work item runs on.
    fn queue(&self) -> &Queue;

    /// The cycle cost per instruction class (`GET_INFO` reports it).
    fn costs(&self) -> &CycleCosts;

    /// What the device has done since load (debugfs).
    fn stats(&self) -> ExecStats;

    /// Forgets the longest piece of work and the longest wait of a cut or
    /// a recall measured in [`Backend::stats`] (a debugfs write, with the
    /// engine's lock-hold measurement).
    fn reset_maxima(&self);

    /// Drops every lease still queued or handed back. The engine's
    /// shut-down, with no lock held, once the device is closed and its work
    /// item has stopped: afterwards no lease points to a job.
    fn drain(&self);
}

/// The device an engine drives: the virtual GPU or the mock. Dispatch is
/// a `match`, no trait object; the engine calls it as a [`Backend`].
pub(crate) enum Gpu {
    /// The wave executor: chunks are interpreted.
    Virtual(Pin<KBox<Executor>>),
    /// The mock: chunks run for a given duration (KUnit, `backend=1`).
    Mock(Pin<KBox<MockExecutor>>),
}

impl Gpu {
    /// The mock, if this is it.
    pub(crate) fn mock(&self) -> Option<&MockExecutor> {
        match self {
            Self::Virtual(_) => None,
            Self::Mock(m) => Some(m),
        }
    }
}

impl Backend for Gpu {
    fn submit(&self, lease: Lease) -> Result<u64, Lease> {
        match self {
            Self::Virtual(x) => x.submit(lease),
            Self::Mock(m) => m.submit(lease),
        }
    }

    fn cut(&self, id: u64, until: u64) {
        match self {
            Self::Virtual(x) => x.cut(id, until),
            Self::Mock(m) => m.cut(id, until),
        }
    }

    fn recall(&self, id: u64) -> Recall {
        match self {
            Self::Virtual(x) => x.recall(id),
            Self::Mock(m) => m.recall(id),
        }
    }

    fn take_done(&self, before: u64) -> Option<Lease> {
        match self {
            Self::Virtual(x) => x.take_done(before),
            Self::Mock(m) => m.take_done(before),
        }
    }

    fn close(&self) {
        match self {
            Self::Virtual(x) => x.close(),
            Self::Mock(m) => m.close(),
        }
    }

    fn run(&self, handed_back: impl FnMut()) -> bool {
        match self {
            Self::Virtual(x) => x.run(handed_back),
            Self::Mock(m) => m.run(handed_back),
        }
    }

    fn queue(&self) -> &Queue {
        match self {
            Self::Virtual(x) => x.queue(),
            Self::Mock(m) => m.queue(),
        }
    }

    fn costs(&self) -> &CycleCosts {
        match self {
            Self::Virtual(x) => x.costs(),
            Self::Mock(m) => m.costs(),
        }
    }

    fn stats(&self) -> ExecStats {
        match self {
            Self::Virtual(x) => x.stats(),
            Self::Mock(m) => m.stats(),
        }
    }

    fn reset_maxima(&self) {
        match self {
            Self::Virtual(x) => x.reset_maxima(),
            Self::Mock(m) => m.reset_maxima(),
        }
    }

    fn drain(&self) {
        match self {
            Self::Virtual(x) => x.drain(),
            Self::Mock(m) => m.drain(),
        }
    }
}
