/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vgsched: the C fence helpers fence.rs declares (see fence.c).
 */
#ifndef _VGSCHED_FENCE_H_
#define _VGSCHED_FENCE_H_

#include <linux/types.h>

struct dma_fence;
struct drm_gem_object;
struct file;
struct vgsched_resv_set;
struct vgsched_fence_waiter;

u64 vgsched_fence_context_alloc(void);
struct dma_fence *vgsched_fence_create(u64 context, u64 seqno);
struct dma_fence *vgsched_fence_get(struct dma_fence *fence);
void vgsched_fence_put(struct dma_fence *fence);
void vgsched_fence_signal(struct dma_fence *fence, int error);
int vgsched_fence_status(struct dma_fence *fence);
s64 vgsched_fence_signalled_at(struct dma_fence *fence);
long vgsched_fence_wait(struct dma_fence *fence, u64 timeout_ns);
long vgsched_fence_wait_until(struct dma_fence *fence, u64 deadline_ns);
struct dma_fence *vgsched_sync_file_fence(int fd);
int vgsched_sync_file_reserve(struct dma_fence *fence, struct file **file);
void vgsched_sync_file_install(int fd, struct file *file);
void vgsched_sync_file_abort(int fd, struct file *file);
struct vgsched_fence_waiter *vgsched_fence_waiter_add(struct dma_fence *fence,
						      void (*func)(void *data), void *data);
void vgsched_fence_waiter_free(struct vgsched_fence_waiter *waiter);

/*
 * Implicit synchronisation of a submission (resv.c). The caller provides
 * the set's storage: VGSCHED_RESV_SET_BYTES, 8-byte aligned (fence.rs's
 * RESV_SET_BYTES is the same number; resv.c checks the set fits).
 */
#define VGSCHED_RESV_SET_BYTES 512
/* How a job uses one bound object (fence.rs's Usage, the same numbers). */
#define VGSCHED_RESV_READ	0
#define VGSCHED_RESV_WRITE	1
#define VGSCHED_RESV_READ_ONLY_HOLDER	2
int vgsched_resv_lock(struct vgsched_resv_set *set, struct drm_gem_object **objs,
		      const u8 *usage, unsigned int count, u64 own_context,
		      struct dma_fence **wait);
void vgsched_resv_publish(struct vgsched_resv_set *set, struct dma_fence *fence);
void vgsched_resv_unlock(struct vgsched_resv_set *set);
long vgsched_resv_wait(struct drm_gem_object *obj, bool write, u64 timeout_ns);
/* A timeout in ns as the jiffies a wait takes, never ending early (fence.c). */
long vgsched_timeout_jiffies(u64 timeout_ns);

#endif /* _VGSCHED_FENCE_H_ */
