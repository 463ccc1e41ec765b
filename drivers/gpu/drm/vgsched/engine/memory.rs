// SPDX-License-Identifier: GPL-2.0

//! Jobs and device memory: preparing a job (its bound objects made
//! resident and uploaded) before it may place work, and cleaning it up
//! (the objects it may have written copied back to system memory, its
//! hold on device memory released) before its fence signals.
//!
//! Both run in the engine's memory work item, on the system's unbound work
//! queue, never on the engine's own queue: they allocate and copy, which
//! the fence-signalling path must not wait for. The engine lock is taken
//! only to pick the next task and to hand its result back; the work
//! itself runs without it ([`crate::vram`]).
//!
//! A job's stages ([`Stage`]): queued, preparing (the work item has it),
//! uploading until its last copy ends in modeled time, on the device
//! (it may place work), clean-up due once its grid is finished, cleaning
//! up, cleaned up (its fence signals when the write-back ends in modeled
//! time). Each context's first job is prepared first; its second only
//! once the first is, so that a job holding device memory can always run:
//! its in-fence has signalled and every job before it holds memory too.
//! Jobs are prepared in submission order over all contexts; when the
//! oldest does not fit, nothing younger is prepared until memory comes
//! back.

use kernel::{
    drm::gem::BaseObject,
    prelude::*,
    sync::{
        Arc,
        ArcBorrow, //
    },
    workqueue, //
};

use super::{
    ContextQueue,
    Engine,
    EngineState,
    Job, //
};
use crate::{
    context::{
        monotonic_ns,
        Context, //
    },
    job::Bindings,
    vram::{
        DeviceMemory,
        Pinned, //
    }, //
};

/// How many jobs of a context may hold device memory at once: the one
/// that runs and the next one, prepared while it runs.
const PREPARE_AHEAD: usize = 2;

/// Where a job stands with device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    /// Waiting to be prepared.
    Queued,
    /// The memory work item is making its objects resident.
    Preparing,
    /// Its objects are resident; the last upload ends at this modeled
    /// time (ns).
    Uploading(u64),
    /// Its grid is finished: its objects wait to be written back.
    CleanUpDue,
    /// The memory work item is writing its objects back.
    CleaningUp,
    /// Written back; the last copy ends at this modeled time (ns), when
    /// its fence may signal.
    CleanedUp(u64),
}

impl Stage {
    /// The job may place work at `now`: its objects are on the device.
    pub(super) fn on_device(self, now: u64) -> bool {
        matches!(self, Stage::Uploading(at) if at <= now)
    }
}

/// A task of the memory work item, taken under the engine lock.
enum Task {
    Prepare {
        ctx: Arc<Context>,
        job: u64,
        bindings: Bindings,
    },
    CleanUp {
        ctx: Arc<Context>,
        job: u64,
        bindings: Bindings,
        pins: KVec<Pinned>,
    },
}

/// The job of a context that may be prepared next: its first queued job
/// among the first [`PREPARE_AHEAD`] (so the one before it holds its memory
/// already), if its in-fence has passed.
fn preparable(q: &ContextQueue) -> Option<&Job> {
    let job = q
        .jobs
        .iter()
        .take(PREPARE_AHEAD)
        .find(|j| j.stage == Stage::Queued)?;
    (job.progress.error() == 0 && in_fence_passed(job)).then_some(job)
}

/// The in-fence of a job has signalled without error (or it has none).
fn in_fence_passed(job: &Job) -> bool {
    job.in_fence_done || job.spec.in_fence.as_ref().is_none_or(|f| f.status() == 1)
}

impl Engine {
    /// Queues the memory work item (a no-op if it is already queued).
    pub(super) fn queue_memory(this: ArcBorrow<'_, Self>) {
        let _already_queued = workqueue::system_unbound().enqueue::<_, 2>(Arc::from(this));
    }

    /// Whether the memory work item has something to do now; under the
    /// engine lock, on any path (it only looks).
    pub(super) fn memory_wanted(st: &EngineState) -> bool {
        st.queues.iter().any(|q| {
            q.jobs.first().is_some_and(|j| j.stage == Stage::CleanUpDue)
                || (!st.memory_blocked && preparable(q).is_some())
        })
    }

    /// The next task: a clean-up if one is due (it gives memory back),
    /// else the oldest job that may be prepared.
    fn next_task(st: &mut EngineState) -> Option<Task> {
        for q in st.queues.iter_mut() {
            if let Some(job) = q.jobs.first_mut().filter(|j| j.stage == Stage::CleanUpDue) {
                let pins = job.device.take()?;
                job.stage = Stage::CleaningUp;
                return Some(Task::CleanUp {
                    ctx: q.ctx.clone(),
                    job: job.id,
                    bindings: job.spec.bindings.clone(),
                    pins,
                });
            }
        }
        if st.memory_blocked {
            return None;
        }
        // The oldest preparable job over all contexts: (context, job).
        let mut oldest: Option<(usize, u64)> = None;
        for (qi, q) in st.queues.iter().enumerate() {
            if let Some(job) = preparable(q) {
                if oldest.is_none_or(|(_, id)| id > job.id) {
                    oldest = Some((qi, job.id));
                }
            }
        }
        let (qi, id) = oldest?;
        let q = st.queues.get_mut(qi)?;
        let ctx = q.ctx.clone();
        let job = find_job_of(&mut q.jobs, id)?;
        job.stage = Stage::Preparing;
        Some(Task::Prepare {
            ctx,
            job: job.id,
            bindings: job.spec.bindings.clone(),
        })
    }

    /// The memory work item: runs tasks until none is left.
    pub(super) fn memory_work(this: ArcBorrow<'_, Self>) {
        loop {
            let task = {
                let mut st = this.lock();
                if st.shut_down {
                    return;
                }
                Self::next_task(&mut st)
            };
            let Some(task) = task else {
                return;
            };
            match task {
                Task::Prepare { ctx, job, bindings } => Self::prepare(this, &ctx, job, &bindings),
                Task::CleanUp {
                    ctx,
                    job,
                    bindings,
                    pins,
                } => Self::clean_up_job(this, &ctx, job, &bindings, pins),
            }
            Self::kick(this);
        }
    }

    /// Makes a job's objects resident; on `ENOSPC` the job waits, queued,
    /// and nothing younger is prepared until memory is given back.
    fn prepare(this: ArcBorrow<'_, Self>, ctx: &Arc<Context>, id: u64, bindings: &Bindings) {
        let now = monotonic_ns();
        let taken = Self::take_all(&this.memory, bindings, now);
        let mut unused = None;
        {
            let mut st = this.lock();
            let blocked = matches!(taken, Err(e) if e == ENOSPC);
            st.memory_blocked |= blocked;
            match st.queue_mut(ctx).and_then(|q| find_job_of(&mut q.jobs, id)) {
                Some(job) => match taken {
                    Ok((pins, ready)) => {
                        job.device = Some(pins);
                        job.stage = Stage::Uploading(ready);
                    }
                    Err(_) if blocked => job.stage = Stage::Queued,
                    Err(e) => {
                        // Cannot be made resident (out of kernel memory):
                        // it fails, as a submission that could not be
                        // allocated would.
                        job.stage = Stage::Queued;
                        job.progress.fail(e.to_errno());
                    }
                },
                // Cancelled meanwhile: its hold goes, outside the lock.
                None => unused = taken.ok(),
            }
        }
        drop(unused);
    }

    /// Takes every binding of a job (in slot order); all or nothing.
    /// Returns the holds and when the last upload ends.
    fn take_all(
        memory: &Arc<DeviceMemory>,
        bindings: &Bindings,
        now: u64,
    ) -> Result<(KVec<Pinned>, u64)> {
        let mut pins = KVec::with_capacity(bindings.len(), GFP_KERNEL)?;
        let mut ready = now;
        for map in bindings.iter() {
            let (pin, at) = DeviceMemory::take(memory, map, now)?;
            pins.push(pin, GFP_KERNEL)?;
            ready = ready.max(at);
        }
        Ok((pins, ready))
    }

    /// Writes back the objects a finished job has stored to, releases
    /// its hold on device memory, and lets its fence signal when the copy
    /// ends in modeled time.
    fn clean_up_job(
        this: ArcBorrow<'_, Self>,
        ctx: &Arc<Context>,
        id: u64,
        bindings: &Bindings,
        mut pins: KVec<Pinned>,
    ) {
        let now = monotonic_ns();
        let mut done = now;
        let mut error = 0;
        for (pin, map) in pins.iter_mut().zip(bindings.iter()) {
            if pin.stored() {
                match this.memory.write_back(pin, map, now) {
                    Ok(at) => done = done.max(at),
                    Err(e) => error = e.to_errno(),
                }
            }
        }
        // Released before the fence can signal: the next job finds the
        // memory free.
        drop(pins);
        let mut st = this.lock();
        st.memory_blocked = false;
        if let Some(job) = st.queue_mut(ctx).and_then(|q| find_job_of(&mut q.jobs, id)) {
            if error != 0 {
                job.progress.fail(error);
            }
            job.stage = Stage::CleanedUp(done);
        }
    }

    /// Memory came back outside the memory work item (a job dropped, an
    /// object forgotten): prepare again what waited for it.
    pub(crate) fn memory_released(this: ArcBorrow<'_, Self>) {
        let wanted = {
            let mut st = this.lock();
            st.memory_blocked = false;
            Self::memory_wanted(&st)
        };
        if wanted {
            Self::queue_memory(this);
        }
    }

    /// Device memory a job needs at once; `E2BIG` if it can never have it.
    pub(super) fn check_footprint(&self, bindings: &Bindings) -> Result {
        let distinct = bindings.iter().enumerate().filter_map(|(i, map)| {
            let id = map.owner().id;
            let first = !bindings.iter().take(i).any(|m| m.owner().id == id);
            first.then(|| map.owner().size() as u64)
        });
        match crate::vgsched_core::device_memory::footprint(distinct) {
            Some(bytes) if bytes <= self.memory.size() => Ok(()),
            _ => Err(E2BIG),
        }
    }
}

/// The job numbered `id` in one context's list.
fn find_job_of(jobs: &mut KVec<Job>, id: u64) -> Option<&mut Job> {
    jobs.iter_mut().find(|j| j.id == id)
}
