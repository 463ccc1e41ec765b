// SPDX-License-Identifier: GPL-2.0

//! Cancellation: a destroyed context, or a closed file's contexts, taken
//! off the device and out of the context list, their fences signalled,
//! their records handed to the clean-up work item.

use kernel::{
    alloc::kvec::PushError,
    prelude::*,
    sync::{
        Arc,
        ArcBorrow, //
    },
    warn_on, //
};

use crate::context::{
    monotonic_ns,
    Context, //
};

use super::{
    queue::{
        queue_index,
        ContextQueue, //
    },
    sync::Signalling,
    Engine,
    EngineState,
    RunningGroup,
    MAX_BURIED, //
};

impl Engine {
    /// Cancels every unfinished job of `ctx` at once and forgets the
    /// context: queued jobs never run, running work-groups are taken off
    /// the device, and all their fences signal `-ECANCELED`. Used when a
    /// context is destroyed, so nothing of it outlives it. Returns the
    /// context's runtime.
    pub(crate) fn cancel_context(this: ArcBorrow<'_, Self>, ctx: &Arc<Context>) -> u64 {
        Self::cancel_contexts(this, core::iter::once(ctx))
    }

    /// [`Engine::cancel_context`] for several contexts at once (a file's,
    /// when it is closed): one hold of the engine lock that takes all of
    /// them out of the context list in one pass, and one engine step. That
    /// hold may be preceded by a wait for the memory work item (if its
    /// task in hand is an upload or a write-back of one of them) and by
    /// waits for the wave executor (while it interprets a lease of one of
    /// their waves, recalled; [`Engine::recall_leases`]), each with the
    /// lock released. Returns their runtime.
    pub(crate) fn cancel_contexts<'a>(
        this: ArcBorrow<'_, Self>,
        ctxs: impl Iterator<Item = &'a Arc<Context>> + Clone,
    ) -> u64 {
        let wanted = ctxs.clone().count();
        if wanted == 0 {
            return 0;
        }
        // The batch's addresses, sorted, and where the removed records and
        // their indices go, allocated before the lock; without them, the
        // records leave one at a time.
        let (Ok(mut batch), Ok(removed), Ok(indices)) = (
            KVVec::with_capacity(wanted, GFP_KERNEL_ACCOUNT),
            KVVec::with_capacity(wanted, GFP_KERNEL_ACCOUNT),
            KVVec::with_capacity(wanted, GFP_KERNEL_ACCOUNT),
        ) else {
            return ctxs.fold(0u64, |r, ctx| {
                r.saturating_add(Self::cancel_unbatched(this, ctx))
            });
        };
        for ctx in ctxs.clone() {
            // Room for all of them was allocated above.
            let _unexpected = batch.push_within_capacity(Arc::as_ptr(ctx) as usize);
        }
        batch.sort_unstable();
        // O(log n) per record or group looked at under the lock.
        let of_batch =
            |ctx: &Arc<Context>| batch.binary_search(&(Arc::as_ptr(ctx) as usize)).is_ok();
        // The memory work item takes nothing more of them (no engine lock:
        // the mark is the context's own), and finishes what it has of
        // them, if anything (a write-back must end before the job's fence
        // signals and the CPU may touch the object).
        for ctx in ctxs {
            ctx.start_cancelling();
        }
        let removed = loop {
            let signalling = Signalling::begin();
            let mut st = this.lock();
            if this
                .memory_work_on()
                .is_some_and(|c| batch.binary_search(&c).is_ok())
            {
                // Not inside a signalling section: the wait is for the
                // memory work item as a whole.
                drop(st);
                drop(signalling);
                this.wait_for_memory_work();
                continue;
            }
            // The executor hands their waves' leases back first: it reads
            // their jobs' memory while it has them.
            if !this.recall_leases(&mut st, of_batch) {
                drop(st);
                drop(signalling);
                this.wait_for_gpu();
                continue;
            }
            // The same test for work-groups and records.
            this.take_off_device(&mut st, of_batch);
            let mut removed = Self::remove_queues(&mut st, removed, indices, |q| of_batch(&q.ctx));
            let mut released = false;
            for q in removed.iter_mut() {
                released |= st.cancel_jobs(q);
            }
            // Their device memory is back now: another context's job
            // waiting for it does not wait for the clean-up work item. The
            // step kicked below queues the memory work item if that lets
            // it go on.
            if released {
                st.released();
            }
            break removed;
        };
        let runtime = removed
            .iter()
            .fold(0u64, |r, q| r.saturating_add(q.runtime_ns()));
        drop(batch);
        Self::bury(this, removed);
        Self::kick(this);
        runtime
    }

    /// Hands the records of cancelled contexts, their fences signalled and
    /// their device memory given back ([`EngineState::cancel_jobs`]), to
    /// the clean-up work item, which drops them (their jobs' buffer
    /// mappings, waiters and fences, their wave stores) off the closing
    /// path, as drm_sched frees a killed entity's jobs from its own work
    /// item. A batch that would take the records waiting past
    /// [`MAX_BURIED`], or that finds the engine shut down or no room, is
    /// dropped here, outside the engine lock.
    fn bury(this: ArcBorrow<'_, Self>, removed: KVVec<KBox<ContextQueue>>) {
        if removed.is_empty() {
            return;
        }
        let removed = match &mut *this.buried.lock() {
            Some(buried)
                if buried.iter().map(|l| l.len()).sum::<usize>() + removed.len() <= MAX_BURIED =>
            {
                match buried.reserve(1, GFP_KERNEL) {
                    Ok(()) => buried.push_within_capacity(removed).err().map(|e| e.0),
                    Err(_) => Some(removed),
                }
            }
            _ => Some(removed),
        };
        match removed {
            Some(removed) => drop(removed),
            None => Self::queue_cleanup(this),
        }
    }

    /// [`Engine::cancel_contexts`] for one context, with nothing allocated:
    /// its record leaves the list on its own (moving every record behind
    /// it), for when the batch's storage could not be had.
    fn cancel_unbatched(this: ArcBorrow<'_, Self>, ctx: &Arc<Context>) -> u64 {
        ctx.start_cancelling();
        this.wait_for_memory_work();
        let queue = loop {
            let signalling = Signalling::begin();
            let mut st = this.lock();
            if !this.recall_leases(&mut st, |c| Arc::ptr_eq(c, ctx)) {
                drop(st);
                drop(signalling);
                this.wait_for_gpu();
                continue;
            }
            this.take_off_device(&mut st, |c| Arc::ptr_eq(c, ctx));
            let Some(i) = queue_index(&st.queues, ctx) else {
                return 0;
            };
            let Ok(mut queue) = st.queues.remove(i) else {
                return 0;
            };
            queue.place_at(usize::MAX);
            for (j, q) in st.queues.iter().enumerate().skip(i) {
                q.place_at(j);
            }
            for g in st.groups.iter_mut().flatten().filter(|g| g.queue > i) {
                g.queue -= 1;
            }
            st.working.remove_shifted(&[i]);
            st.collecting.remove_shifted(&[i]);
            st.slots.contexts_removed();
            st.cancel_jobs(&mut queue);
            break queue;
        };
        let runtime = queue.runtime_ns();
        drop(queue);
        Self::memory_released(this);
        Self::kick(this);
        runtime
    }

    /// Moves the records `remove` picks from the context list to
    /// `removed` in one pass that keeps the others in order, and fixes up
    /// the running groups' indices: no group of a removed record may be
    /// left. `removed` and `indices` have room for every record `remove`
    /// picks; past that room a record stays (never dropped here, under
    /// the lock, with its fences unsignalled). The ordered slot decision
    /// looks at every context again before its next use
    /// ([`SlotSelection::contexts_removed`](super::slots::SlotSelection::contexts_removed)).
    fn remove_queues(
        st: &mut EngineState,
        mut removed: KVVec<KBox<ContextQueue>>,
        mut indices: KVVec<usize>,
        remove: impl Fn(&ContextQueue) -> bool,
    ) -> KVVec<KBox<ContextQueue>> {
        // A stable partition: each kept record slides down over the
        // removed ones before it, which gather at the end.
        let room = removed.capacity().min(indices.capacity());
        let mut kept = 0;
        for i in 0..st.queues.len() {
            let take = indices.len() < room
                && st.queues.get(i).is_some_and(|q| remove(q))
                && indices.push_within_capacity(i).is_ok();
            if take {
                continue;
            }
            if kept != i {
                st.queues.swap(kept, i);
                if let Some(q) = st.queues.get(kept) {
                    q.place_at(kept);
                }
            }
            kept += 1;
        }
        // Taken from the end: at most `room` of them.
        while st.queues.len() > kept {
            let Some(q) = st.queues.pop() else {
                break;
            };
            // Out of the list: no hint may point into it.
            q.place_at(usize::MAX);
            if let Err(PushError(q)) = removed.push_within_capacity(q) {
                // Cannot happen: no more than `room` records were taken.
                // Not dropped under the lock with its fences unsignalled;
                // kept at the end, where no running group refers to it.
                warn_on!(true);
                let _unexpected = st.queues.push_within_capacity(q);
            }
        }
        // A kept record moved down by the number removed before it.
        for g in st.groups.iter_mut().flatten() {
            g.queue -= indices.partition_point(|&i| i < g.queue);
        }
        // The working set's positions move the same way, and the
        // collection's.
        st.working.remove_shifted(&indices);
        st.collecting.remove_shifted(&indices);
        st.slots.contexts_removed();
        removed
    }

    /// Takes every wave and work-group of the contexts `of` picks off the
    /// device, giving their ranges back.
    fn take_off_device(&self, st: &mut EngineState, of: impl Fn(&Arc<Context>) -> bool) {
        let now_cycle = self.topology.ns_to_cycles(monotonic_ns());
        let EngineState {
            groups,
            waves,
            resources,
            modules,
            rewinds,
            ..
        } = st;
        let Some(mut occ) = self.occupancy(resources) else {
            return;
        };
        let of_ctx = |g: &Option<RunningGroup>| g.as_ref().is_some_and(|g| of(&g.ctx));
        waves.retain(|w| {
            let Some(g) = groups.get(w.slot).and_then(Option::as_ref) else {
                return true;
            };
            if !of(&g.ctx) {
                return true;
            }
            occ.release_wave(g.module, &w.place, &g.needs.wave);
            // Cut short now: it issued nothing after this.
            if let Some(ms) = modules.get_mut(g.module as usize) {
                ms.power.stop(now_cycle, now_cycle, w.power_token);
            }
            if let Some(r) = w.rewind.take() {
                // Room for every wave slot's.
                let _unexpected = rewinds.push_within_capacity(r);
            }
            false
        });
        for slot in groups.iter_mut().filter(|g| of_ctx(g)) {
            if let Some(g) = slot.take() {
                occ.release_shared(g.module, g.shared_start, g.needs.shared);
            }
        }
    }
}
