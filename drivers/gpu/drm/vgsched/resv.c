// SPDX-License-Identifier: GPL-2.0
/*
 * vgsched: implicit synchronisation through the bound objects'
 * reservation objects (dma_resv), for DRM_IOCTL_VGSCHED_SUBMIT.
 *
 * The Rust DRM abstractions of Linux 7.3 lock a reservation object only
 * one at a time, without a ww acquire context, so the few steps a
 * submission needs are here, on public API only (ww_mutex through
 * dma_resv_lock(), dma_resv, dma_fence_unwrap), as the convention of
 * panfrost and v3d asks:
 *
 *  1. vgsched_resv_lock() locks every bound object's reservation with one
 *     ww acquire context (none for a single object; backing off and
 *     taking the contended lock first on -EDEADLK, as drm_exec does, but
 *     without drm_exec's allocated object array: a job binds at most
 *     VGSCHED_RESV_MAX_OBJECTS), reserves
 *     one fence slot in each, and folds the fences the job must
 *     wait for into one: for an object the job writes, every unsignalled
 *     fence there (readers and writers); for one it only reads, the
 *     writers'. Fences of
 *     the job's own context are left out: its jobs run in submission order
 *     on the same device copies anyway, so waiting for them would only hold
 *     its next job's preparation back (as drm_sched skips an entity's own
 *     fences). These are dependencies for ordering only: their errors are
 *     not the job's (uapi.rst), unlike the caller's explicit in-fence,
 *     which the engine waits for on its own.
 *  2. The caller queues the job with that fence as its dependency.
 *  3. vgsched_resv_publish() adds the job's fence to every object
 *     (DMA_RESV_USAGE_WRITE where it writes, DMA_RESV_USAGE_READ where it
 *     only reads, DMA_RESV_USAGE_BOOKKEEP where it reads a shared object
 *     its file may only read, so that such a holder never holds the
 *     object's writers back) and unlocks; it cannot fail, the slots are
 *     reserved.
 *     vgsched_resv_unlock() unlocks without adding anything when queueing
 *     failed.
 *
 * Contract with the Rust side (fence.rs): the set lives in storage of
 * VGSCHED_RESV_SET_BYTES the caller provides and does not move from step
 * 1 to step 3 (the ww acquire context is linked to the locks it holds);
 * the objects stay referenced by the caller meanwhile, nothing else of the
 * driver takes their reservation locks in between on this thread (in
 * particular no vmap or vunmap), and exactly one of publish and unlock
 * ends a set that vgsched_resv_lock() returned 0 for.
 * Nothing here runs on a fence-signalling path.
 */

#include <drm/drm_gem.h>
#include <linux/dma-fence-unwrap.h>
#include <linux/dma-resv.h>
#include <linux/slab.h>

#include "fence.h"

/* As isa.rs's MAX_BINDINGS: most objects one job binds. */
#define VGSCHED_RESV_MAX_OBJECTS	8

struct vgsched_resv_set {
	struct ww_acquire_ctx ctx;
	/* ctx is in use: more than one object (one needs no acquire context). */
	bool ww;
	unsigned int count;
	struct drm_gem_object *objs[VGSCHED_RESV_MAX_OBJECTS];
	bool writes[VGSCHED_RESV_MAX_OBJECTS];
	/* Only read by a holder that may not write it: its fence is bookkeeping. */
	bool bookkeep[VGSCHED_RESV_MAX_OBJECTS];
	bool locked[VGSCHED_RESV_MAX_OBJECTS];
};

static_assert(sizeof(struct vgsched_resv_set) <= VGSCHED_RESV_SET_BYTES);
static_assert(__alignof__(struct vgsched_resv_set) <= 8);

static void vgsched_resv_unlock_all(struct vgsched_resv_set *set)
{
	unsigned int i;

	for (i = 0; i < set->count; i++) {
		if (set->locked[i])
			dma_resv_unlock(set->objs[i]->resv);
		set->locked[i] = false;
	}
}

/*
 * Locks every object of @set, two or more under one acquire context (one
 * alone as a plain mutex): on -EDEADLK it lets every lock go, sleeps on the contended one and starts over with that one
 * held, so two submissions locking the same objects in different orders
 * never deadlock. Then reserves one fence slot in each (may allocate).
 */
static int vgsched_resv_lock_all(struct vgsched_resv_set *set)
{
	unsigned int i;
	int contended = -1, ret;

	/*
	 * One object (the usual job) needs no acquire context: nothing else is
	 * held, so its lock is taken as a plain mutex, and the context's
	 * setup and lockdep tracking are saved.
	 */
	if (set->count <= 1) {
		if (set->count) {
			ret = dma_resv_lock_interruptible(set->objs[0]->resv, NULL);
			if (ret)
				return ret;
			set->locked[0] = true;
			ret = dma_resv_reserve_fences(set->objs[0]->resv, 1);
			if (ret) {
				vgsched_resv_unlock_all(set);
				return ret;
			}
		}
		return 0;
	}
	set->ww = true;
	ww_acquire_init(&set->ctx, &reservation_ww_class);
retry:
	for (i = 0; i < set->count; i++) {
		if ((int)i == contended)
			continue;
		ret = dma_resv_lock_interruptible(set->objs[i]->resv, &set->ctx);
		if (ret == -EDEADLK) {
			vgsched_resv_unlock_all(set);
			contended = i;
			ret = dma_resv_lock_slow_interruptible(set->objs[i]->resv, &set->ctx);
			if (ret)
				goto fail;
			set->locked[i] = true;
			goto retry;
		}
		if (ret)
			goto fail;
		set->locked[i] = true;
	}
	ww_acquire_done(&set->ctx);
	for (i = 0; i < set->count; i++) {
		ret = dma_resv_reserve_fences(set->objs[i]->resv, 1);
		if (ret)
			goto fail;
	}
	return 0;
fail:
	vgsched_resv_unlock_all(set);
	ww_acquire_fini(&set->ctx);
	set->ww = false;
	return ret;
}

/*
 * Takes each distinct object once; an object bound twice is written if
 * either binding writes it, and bookkeeping only if every binding is.
 */
static void vgsched_resv_dedup(struct vgsched_resv_set *set, struct drm_gem_object **objs,
			       const u8 *usage, unsigned int count)
{
	unsigned int i, j;

	for (i = 0; i < count; i++) {
		for (j = 0; j < set->count; j++)
			if (set->objs[j] == objs[i])
				break;
		if (j == set->count) {
			set->objs[j] = objs[i];
			set->writes[j] = false;
			set->bookkeep[j] = true;
			set->count++;
		}
		set->writes[j] |= usage[i] == VGSCHED_RESV_WRITE;
		set->bookkeep[j] &= usage[i] == VGSCHED_RESV_READ_ONLY_HOLDER;
	}
}

/* Fences gathered in place before the gathering allocates. */
#define VGSCHED_RESV_GATHER_INLINE	8

/*
 * Whether the job waits for @fence, found in a reservation locked in @set:
 * not if it is of the job's own fence context @own, nor if it has signalled.
 */
static bool vgsched_resv_waits_for(struct dma_fence *fence, u64 own)
{
	return fence->context != own && !dma_fence_is_signaled(fence);
}

/*
 * Fences the job must wait for (vgsched_resv_waits_for()), as one fence
 * (NULL: none), or an ERR_PTR. The reservations are locked, so no fence is
 * added or removed while they are counted and gathered (one may signal
 * meanwhile: the gathered ones are at most the counted ones). Nothing is
 * allocated for one fence (its reference is returned) nor for the lists of
 * up to VGSCHED_RESV_GATHER_INLINE; merging two or more allocates the
 * merged fence, as dma_fence_unwrap_merge() does.
 */
static struct dma_fence *vgsched_resv_gather(struct vgsched_resv_set *set, u64 own)
{
	struct dma_fence_unwrap inline_cursors[VGSCHED_RESV_GATHER_INLINE];
	struct dma_fence *inline_fences[VGSCHED_RESV_GATHER_INLINE];
	struct dma_fence_unwrap *cursors = inline_cursors;
	struct dma_fence **fences = inline_fences;
	struct dma_fence *merged = NULL;
	struct dma_resv_iter iter;
	struct dma_fence *fence;
	unsigned int i, n = 0, max = 0;

	for (i = 0; i < set->count; i++)
		/* A writer waits for readers and writers, a reader for the writers. */
		dma_resv_for_each_fence(&iter, set->objs[i]->resv,
					dma_resv_usage_rw(set->writes[i]), fence)
			max += vgsched_resv_waits_for(fence, own);
	if (!max)
		return NULL;
	if (max > VGSCHED_RESV_GATHER_INLINE) {
		fences = kmalloc_array(max, sizeof(*fences), GFP_KERNEL_ACCOUNT);
		cursors = kmalloc_array(max, sizeof(*cursors), GFP_KERNEL_ACCOUNT);
		if (!fences || !cursors) {
			merged = ERR_PTR(-ENOMEM);
			goto out;
		}
	}
	for (i = 0; i < set->count; i++)
		dma_resv_for_each_fence(&iter, set->objs[i]->resv,
					dma_resv_usage_rw(set->writes[i]), fence)
			if (n < max && vgsched_resv_waits_for(fence, own))
				fences[n++] = fence;
	if (n == 0)
		goto out;
	if (n == 1) {
		merged = dma_fence_get(fences[0]);
		goto out;
	}
	/* Takes its own references to the fences it keeps. */
	merged = __dma_fence_unwrap_merge(n, fences, cursors);
	if (!merged)
		merged = ERR_PTR(-ENOMEM);
out:
	if (fences != inline_fences)
		kfree(fences);
	if (cursors != inline_cursors)
		kfree(cursors);
	return merged;
}

int vgsched_resv_lock(struct vgsched_resv_set *set, struct drm_gem_object **objs,
		      const u8 *usage, unsigned int count, u64 own_context,
		      struct dma_fence **wait)
{
	struct dma_fence *fence;
	int ret;

	if (count > VGSCHED_RESV_MAX_OBJECTS)
		return -EINVAL;
	memset(set, 0, sizeof(*set));
	vgsched_resv_dedup(set, objs, usage, count);
	ret = vgsched_resv_lock_all(set);
	if (ret)
		return ret;
	fence = vgsched_resv_gather(set, own_context);
	if (IS_ERR(fence)) {
		vgsched_resv_unlock(set);
		return PTR_ERR(fence);
	}
	*wait = fence;
	return 0;
}

void vgsched_resv_publish(struct vgsched_resv_set *set, struct dma_fence *fence)
{
	enum dma_resv_usage usage;
	unsigned int i;

	for (i = 0; i < set->count; i++) {
		usage = set->writes[i] ? DMA_RESV_USAGE_WRITE :
			set->bookkeep[i] ? DMA_RESV_USAGE_BOOKKEEP : DMA_RESV_USAGE_READ;
		dma_resv_add_fence(set->objs[i]->resv, fence, usage);
	}
	vgsched_resv_unlock(set);
}

void vgsched_resv_unlock(struct vgsched_resv_set *set)
{
	vgsched_resv_unlock_all(set);
	if (set->ww)
		ww_acquire_fini(&set->ctx);
}

/*
 * For DRM_IOCTL_VGSCHED_BO_CPU_PREP: waits, interruptibly, until the jobs
 * using @obj are done before the CPU touches it: with @write every fence
 * of its reservation (readers and writers), else only the writers'. A
 * @timeout_ns of 0 only checks. Returns as dma_resv_wait_timeout(): > 0
 * done, 0 timed out, < 0 an error.
 */
long vgsched_resv_wait(struct drm_gem_object *obj, bool write, u64 timeout_ns)
{
	enum dma_resv_usage usage = write ? DMA_RESV_USAGE_READ : DMA_RESV_USAGE_WRITE;

	if (!timeout_ns)
		return dma_resv_test_signaled(obj->resv, usage);
	return dma_resv_wait_timeout(obj->resv, usage, true, vgsched_timeout_jiffies(timeout_ns));
}
