// SPDX-License-Identifier: GPL-2.0
/*
 * vgsched: implicit synchronisation through the bound objects'
 * reservation objects (dma_resv), for DRM_IOCTL_VGSCHED_SUBMIT.
 *
 * The Rust DRM abstractions of Linux 7.3 lock a reservation object only
 * one at a time, without a ww acquire context, so the few steps a
 * submission needs are here, on public API only (drm_exec, dma_resv,
 * dma_fence_unwrap), as the convention of panfrost and v3d asks:
 *
 *  1. vgsched_resv_lock() locks every bound object's reservation with one
 *     ww acquire context (drm_exec backs off and retries on contention),
 *     reserves one fence slot in each, and folds the fences the job must
 *     wait for into one: for an object the job writes, every fence there
 *     (readers and writers); for one it only reads, the writers'. Fences of
 *     the job's own context are left out: its jobs run in submission order
 *     on the same device copies anyway, so waiting for them would only hold
 *     its next job's preparation back (as drm_sched skips an entity's own
 *     fences). These are dependencies for ordering only: their errors are
 *     not the job's (uapi.rst), unlike the caller's explicit in-fence,
 *     which the engine waits for on its own.
 *  2. The caller queues the job with that fence as its dependency.
 *  3. vgsched_resv_publish() adds the job's fence to every object
 *     (DMA_RESV_USAGE_WRITE where it writes, DMA_RESV_USAGE_READ where it
 *     only reads) and unlocks; it cannot fail, the slots are reserved.
 *     vgsched_resv_unlock() unlocks without adding anything when queueing
 *     failed.
 *
 * Contract with the Rust side (fence.rs): the objects stay referenced by
 * the caller from step 1 to step 3, nothing else of the driver takes their
 * reservation locks in between on this thread (in particular no vmap or
 * vunmap), and the set is freed by exactly one of publish and unlock.
 * Nothing here runs on a fence-signalling path.
 */

#include <drm/drm_exec.h>
#include <drm/drm_gem.h>
#include <linux/dma-fence-unwrap.h>
#include <linux/dma-resv.h>
#include <linux/slab.h>

#include "fence.h"

/* As isa.rs's MAX_BINDINGS: most objects one job binds. */
#define VGSCHED_RESV_MAX_OBJECTS	8

struct vgsched_resv_set {
	struct drm_exec exec;
	unsigned int count;
	struct drm_gem_object *objs[VGSCHED_RESV_MAX_OBJECTS];
	bool writes[VGSCHED_RESV_MAX_OBJECTS];
};

/* Takes each distinct object once; an object bound twice is written if either binding writes it. */
static void vgsched_resv_dedup(struct vgsched_resv_set *set, struct drm_gem_object **objs,
			       const bool *writes, unsigned int count)
{
	unsigned int i, j;

	for (i = 0; i < count; i++) {
		for (j = 0; j < set->count; j++)
			if (set->objs[j] == objs[i])
				break;
		if (j == set->count) {
			set->objs[j] = objs[i];
			set->writes[j] = false;
			set->count++;
		}
		set->writes[j] |= writes[i];
	}
}

/*
 * Fences the job must wait for, but those of fence context @own, as one
 * fence (NULL: none), or an ERR_PTR. The reservations are locked, so their
 * fences stay put while they are counted and gathered.
 */
static struct dma_fence *vgsched_resv_gather(struct vgsched_resv_set *set, u64 own)
{
	struct dma_fence_unwrap *cursors = NULL;
	struct dma_fence **fences = NULL;
	struct dma_fence *merged = NULL;
	struct dma_resv_iter iter;
	struct dma_fence *fence;
	unsigned int i, n = 0, max = 0;

	for (i = 0; i < set->count; i++)
		dma_resv_for_each_fence(&iter, set->objs[i]->resv,
					dma_resv_usage_rw(set->writes[i]), fence)
			max += fence->context != own;
	if (!max)
		return NULL;
	fences = kmalloc_array(max, sizeof(*fences), GFP_KERNEL_ACCOUNT);
	cursors = kmalloc_array(max, sizeof(*cursors), GFP_KERNEL_ACCOUNT);
	if (!fences || !cursors) {
		merged = ERR_PTR(-ENOMEM);
		goto out;
	}
	for (i = 0; i < set->count; i++)
		/* A writer waits for readers and writers, a reader for the writers. */
		dma_resv_for_each_fence(&iter, set->objs[i]->resv,
					dma_resv_usage_rw(set->writes[i]), fence)
			if (fence->context != own && n < max)
				fences[n++] = fence;
	/* Takes its own references to the fences it keeps. */
	merged = __dma_fence_unwrap_merge(n, fences, cursors);
	if (!merged)
		merged = ERR_PTR(-ENOMEM);
out:
	kfree(cursors);
	kfree(fences);
	return merged;
}

struct vgsched_resv_set *vgsched_resv_lock(struct drm_gem_object **objs, const bool *writes,
					   unsigned int count, u64 own_context,
					   struct dma_fence **wait)
{
	struct vgsched_resv_set *set;
	struct drm_gem_object *obj;
	struct dma_fence *fence;
	unsigned int i;
	int ret = 0;

	if (count > VGSCHED_RESV_MAX_OBJECTS)
		return ERR_PTR(-EINVAL);
	set = kzalloc(sizeof(*set), GFP_KERNEL_ACCOUNT);
	if (!set)
		return ERR_PTR(-ENOMEM);
	vgsched_resv_dedup(set, objs, writes, count);

	drm_exec_init(&set->exec, DRM_EXEC_INTERRUPTIBLE_WAIT, set->count);
	drm_exec_until_all_locked(&set->exec) {
		for (i = 0; i < set->count; i++) {
			obj = set->objs[i];
			ret = drm_exec_prepare_obj(&set->exec, obj, 1);
			drm_exec_retry_on_contention(&set->exec);
			if (ret)
				goto fail;
		}
	}

	fence = vgsched_resv_gather(set, own_context);
	if (IS_ERR(fence)) {
		ret = PTR_ERR(fence);
		goto fail;
	}
	*wait = fence;
	return set;

fail:
	drm_exec_fini(&set->exec);
	kfree(set);
	return ERR_PTR(ret);
}

void vgsched_resv_publish(struct vgsched_resv_set *set, struct dma_fence *fence)
{
	unsigned int i;

	for (i = 0; i < set->count; i++)
		dma_resv_add_fence(set->objs[i]->resv, fence,
				   set->writes[i] ? DMA_RESV_USAGE_WRITE : DMA_RESV_USAGE_READ);
	vgsched_resv_unlock(set);
}

void vgsched_resv_unlock(struct vgsched_resv_set *set)
{
	drm_exec_fini(&set->exec);
	kfree(set);
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
