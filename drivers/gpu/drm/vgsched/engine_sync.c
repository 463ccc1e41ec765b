// SPDX-License-Identifier: GPL-2.0
/*
 * vgsched: the engine's work queue and the fence-signalling annotations.
 *
 * Linux 7.3's Rust workqueue binding offers only the system queues and has
 * no dma_fence binding at all, so the engine (engine.rs) reaches these
 * through plain functions on public API:
 *
 *  - vgsched_engine_wq_alloc() gives the engine an ordered queue of its
 *    own. The engine's work item signals job fences, so, like the queues
 *    of drm_sched, it has WQ_MEM_RECLAIM: memory reclaim may wait for a
 *    fence, and the work that signals it must then still make progress.
 *    Ordered, so the engine's steps never run concurrently with each other.
 *    WQ_HIGHPRI: a step is due when modeled hardware finishes something
 *    (a wave ends, a save completes), and the device's next dispatch waits
 *    for it; its workers run at high priority so other work on the CPU
 *    delays it less.
 *
 *  - vgsched_memory_wq_alloc() gives the engine a second queue, for its
 *    memory work item (phase 1, phase 2, write-backs, reclaims). (The
 *    clean-up work item, which drops signalled jobs, runs on the system's
 *    unbound queue: no fence waits for it.) A job's fence waits for its phase 2 and its
 *    write-back, so this queue has WQ_MEM_RECLAIM as well (a rescuer keeps
 *    it going when no worker can be created); unbound, since copies are
 *    long and need no particular CPU; WQ_HIGHPRI like the engine's queue,
 *    since a preempting job's preparation is on its way to the device.
 *
 *  - vgsched_gpu_wq_alloc() gives the wave executor (gpu/exec.rs), the
 *    modeled device's execution units, a queue of its own: ordered (one
 *    interpreter at a time), unbound (interpretation is long and needs no
 *    particular CPU), WQ_MEM_RECLAIM (a job's fence waits for its waves'
 *    interpretation). Not WQ_HIGHPRI: it is the device's work, not the
 *    scheduler's, and must not preempt the clients that submit to it.
 *
 *  - vgsched_gpu_yield() lets the wave executor give its CPU up between two
 *    pieces of interpretation when the CPU's scheduler wants to run another
 *    task there. The modeled device computes on the guest's CPUs, where a
 *    real one computes beside them; it must not keep the scheduler's work
 *    items, or the clients that submit to it, off a CPU. Under lazy
 *    preemption (CONFIG_PREEMPT_LAZY, the guest kernel's model) a fair
 *    task woken on a CPU that runs a kernel thread only sets
 *    TIF_NEED_RESCHED_LAZY, honoured when the thread's slice ends (the
 *    high-resolution tick), at the next tick (4 ms at HZ=250) or on the
 *    way back to user space, which a kworker never takes; and
 *    cond_resched() is empty in a preemptible kernel. So the executor tests
 *    both flags itself, as the entry code does before it returns to user
 *    space or enters a guest, and calls schedule() while runnable, which
 *    leaves it on the run queue.
 *
 *  - vgsched_fence_begin_signalling() / vgsched_fence_end_signalling()
 *    mark the engine's signalling critical sections
 *    (dma_fence_begin_signalling() in drivers/dma-buf/dma-fence.c): with
 *    lockdep on, any allocation that may enter reclaim, or any lock taken
 *    elsewhere around one, inside such a section is reported.
 */

#include <linux/dma-fence.h>
#include <linux/kernel.h>
#include <linux/sched.h>
#include <linux/thread_info.h>
#include <linux/workqueue.h>

#include "engine_sync.h"

struct workqueue_struct *vgsched_engine_wq_alloc(void)
{
	return alloc_ordered_workqueue("vgsched-engine", WQ_MEM_RECLAIM | WQ_HIGHPRI);
}

struct workqueue_struct *vgsched_memory_wq_alloc(void)
{
	return alloc_workqueue("vgsched-memory", WQ_MEM_RECLAIM | WQ_UNBOUND | WQ_HIGHPRI, 0);
}

struct workqueue_struct *vgsched_gpu_wq_alloc(void)
{
	return alloc_ordered_workqueue("vgsched-gpu", WQ_MEM_RECLAIM);
}

void vgsched_engine_wq_destroy(struct workqueue_struct *wq)
{
	destroy_workqueue(wq);
}

bool vgsched_gpu_yield(void)
{
	might_sleep();
	if (!test_thread_flag(TIF_NEED_RESCHED) && !test_thread_flag(TIF_NEED_RESCHED_LAZY))
		return false;
	schedule();
	return true;
}

bool vgsched_fence_begin_signalling(void)
{
	return dma_fence_begin_signalling();
}

void vgsched_fence_end_signalling(bool cookie)
{
	dma_fence_end_signalling(cookie);
}
