// SPDX-License-Identifier: GPL-2.0
/*
 * vgsched: job completion fences and sync_file glue.
 *
 * The Rust DRM abstractions of Linux 7.3 have no dma_fence or sync_file
 * wrappers, and several of the calls needed are static inlines Rust cannot
 * reach, so this file provides the few operations the driver needs as plain
 * functions. fence.rs wraps them in owning Rust types; nothing else calls
 * them.
 *
 * Fences use the inline lock and no release callback, so the core detaches
 * them from this module once they are signalled: the driver signals every
 * fence before its device goes away (file close cancels unfinished jobs),
 * which makes unloading safe while user space still holds sync_file fds.
 */

#include <linux/dma-fence.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/slab.h>
#include <linux/sync_file.h>

#include "fence.h"

static const char *vgsched_fence_driver_name(struct dma_fence *fence)
{
	return "vgsched";
}

static const char *vgsched_fence_timeline_name(struct dma_fence *fence)
{
	return "vgsched-context";
}

static const struct dma_fence_ops vgsched_fence_ops = {
	.get_driver_name = vgsched_fence_driver_name,
	.get_timeline_name = vgsched_fence_timeline_name,
};

u64 vgsched_fence_context_alloc(void)
{
	return dma_fence_context_alloc(1);
}

struct dma_fence *vgsched_fence_create(u64 context, u64 seqno)
{
	struct dma_fence *fence = kzalloc(sizeof(*fence), GFP_KERNEL_ACCOUNT);

	if (!fence)
		return NULL;
	dma_fence_init(fence, &vgsched_fence_ops, NULL, context, seqno);
	return fence;
}

struct dma_fence *vgsched_fence_get(struct dma_fence *fence)
{
	return dma_fence_get(fence);
}

void vgsched_fence_put(struct dma_fence *fence)
{
	dma_fence_put(fence);
}

void vgsched_fence_signal(struct dma_fence *fence, int error)
{
	if (error)
		dma_fence_set_error(fence, error);
	dma_fence_signal(fence);
}

int vgsched_fence_status(struct dma_fence *fence)
{
	return dma_fence_get_status(fence);
}

s64 vgsched_fence_signalled_at(struct dma_fence *fence)
{
	if (!test_bit(DMA_FENCE_FLAG_SIGNALED_BIT, &fence->flags))
		return -1;
	return ktime_to_ns(dma_fence_timestamp(fence));
}

long vgsched_timeout_jiffies(u64 timeout_ns)
{
	/*
	 * Rounded up, plus one tick: the current tick is already partly gone
	 * when the wait starts (as msleep() counts), so a wait never ends
	 * before the time asked for. 0 stays 0: only check.
	 */
	u64 ticks = timeout_ns ? timeout_ns / TICK_NSEC + (timeout_ns % TICK_NSEC != 0) + 1 : 0;

	return min_t(u64, ticks, MAX_SCHEDULE_TIMEOUT);
}

long vgsched_fence_wait(struct dma_fence *fence, u64 timeout_ns)
{
	/* A timeout of 0 asks whether it has signalled without waiting. */
	return dma_fence_wait_timeout(fence, true, vgsched_timeout_jiffies(timeout_ns));
}

long vgsched_fence_wait_until(struct dma_fence *fence, u64 deadline_ns)
{
	u64 now = ktime_get_ns();

	/*
	 * The time left is computed again on every call, so a wait restarted
	 * after a signal still ends by the deadline; past it, this polls.
	 */
	return vgsched_fence_wait(fence, deadline_ns > now ? deadline_ns - now : 0);
}

struct dma_fence *vgsched_sync_file_fence(int fd)
{
	return sync_file_get_fence(fd);
}

int vgsched_sync_file_reserve(struct dma_fence *fence, struct file **file)
{
	struct sync_file *sync_file;
	int fd = get_unused_fd_flags(O_CLOEXEC);

	if (fd < 0)
		return fd;
	sync_file = sync_file_create(fence);
	if (!sync_file) {
		put_unused_fd(fd);
		return -ENOMEM;
	}
	*file = sync_file->file;
	return fd;
}

void vgsched_sync_file_install(int fd, struct file *file)
{
	fd_install(fd, file);
}

void vgsched_sync_file_abort(int fd, struct file *file)
{
	put_unused_fd(fd);
	fput(file);
}

/*
 * A waiter runs a Rust callback once when a fence signals. The Rust side
 * owns it and frees it with vgsched_fence_waiter_free().
 */
struct vgsched_fence_waiter {
	struct dma_fence_cb cb;
	struct dma_fence *fence;
	void (*func)(void *data);
	void *data;
	bool armed;
};

static void vgsched_fence_waiter_fire(struct dma_fence *fence, struct dma_fence_cb *cb)
{
	struct vgsched_fence_waiter *waiter = container_of(cb, struct vgsched_fence_waiter, cb);

	waiter->func(waiter->data);
}

struct vgsched_fence_waiter *vgsched_fence_waiter_add(struct dma_fence *fence,
						      void (*func)(void *data), void *data)
{
	struct vgsched_fence_waiter *waiter = kzalloc(sizeof(*waiter), GFP_KERNEL_ACCOUNT);

	if (!waiter)
		return NULL;
	waiter->fence = dma_fence_get(fence);
	waiter->func = func;
	waiter->data = data;
	/* -ENOENT: already signalled, the callback will not run. */
	waiter->armed = !dma_fence_add_callback(fence, &waiter->cb, vgsched_fence_waiter_fire);
	return waiter;
}

void vgsched_fence_waiter_free(struct vgsched_fence_waiter *waiter)
{
	/*
	 * Removal takes the fence lock, under which callbacks run, so a
	 * callback in progress has finished when this returns.
	 */
	if (waiter->armed)
		dma_fence_remove_callback(waiter->fence, &waiter->cb);
	dma_fence_put(waiter->fence);
	kfree(waiter);
}
