// SPDX-License-Identifier: GPL-2.0
/*
 * vgsched_peer: the kernel's own GPU scheduler (drm_sched) driving a mock
 * ring, so that make bench can run the same workloads through drm_sched
 * and through vgsched side by side (Documentation/benchmarks.rst,
 * "Side by side with drm_sched"). Test-only: it is built with the module
 * and loaded only by the guest's bench mode.
 *
 * The mock ring executes one job at a time (credit limit 1), as a GPU with
 * one hardware queue: run_job() stamps the job's start, arms an hrtimer
 * for the job's duration and returns a hardware fence that the timer
 * signals. drm_sched decides which entity's job runs next, by its
 * sched_policy module parameter (0 round robin, 1 FIFO, 2 fair), and
 * never preempts a job that runs.
 *
 * User space drives it through /dev/vgsched_peer:
 *
 *   VGSCHED_PEER_CTX_CREATE  an entity of priority 0 (high) or 1 (normal)
 *   VGSCHED_PEER_BO_CREATE   a buffer: only a reservation object, found by
 *                            its handle as a GEM object is
 *   VGSCHED_PEER_SUBMIT      a job of duration_us on it; its sequence number.
 *                            With a buffer, it takes the buffer's reservation
 *                            as a drm_sched driver's submission does for
 *                            implicit synchronisation: looks the handle up,
 *                            locks the reservation, waits for every fence
 *                            in it, as a writer does
 *                            (drm_sched_job_add_resv_dependencies()), and
 *                            adds its finished fence as a writer
 *   VGSCHED_PEER_WAIT        until a job's finished fence signals
 *   VGSCHED_PEER_QUERY       an entity's device time, its last job's
 *                            submission and start (CLOCK_MONOTONIC ns),
 *                            and drm_sched's time to queue jobs without a
 *                            buffer so far
 *
 * Entities and buffers live until the file is closed; closing flushes the
 * entities.
 */

#include <linux/dma-resv.h>
#include <linux/fs.h>
#include <linux/hrtimer.h>
#include <linux/idr.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait_bit.h>
#include <drm/gpu_scheduler.h>

#include "vgsched_peer.h"

/* Finished fences kept per entity for WAIT: the most recent ones. */
#define PEER_FENCES 64

struct peer_ring {
	struct drm_gpu_scheduler sched;
	spinlock_t fence_lock;
	u64 fence_context;
	u64 fence_seqno;
};

struct peer_ctx {
	struct drm_sched_entity entity;
	struct mutex lock;		/* submissions and the fence ring below */
	u64 next_seqno;
	struct dma_fence *finished[PEER_FENCES];
	atomic64_t runtime_ns;
	atomic64_t last_submit_ns;
	atomic64_t last_start_ns;
};

struct peer_job {
	struct drm_sched_job base;
	struct peer_ctx *ctx;
	u64 duration_ns;
	struct dma_fence hw;
	struct hrtimer timer;
};

/* A buffer of the mock: the reservation object a GEM object would have. */
struct peer_bo {
	struct kref ref;
	struct dma_resv resv;
};

struct peer_file {
	struct mutex lock;		/* the context table */
	struct idr ctxs;
	spinlock_t bo_lock;		/* the buffer table, as GEM's table_lock */
	struct idr bos;
};

static struct peer_ring *ring;

/* Jobs on the ring: their timers run this module's code. */
static atomic_t running;

/*
 * Time spent in drm_sched to queue jobs without a buffer (init, arm, push),
 * and how many.
 */
static atomic64_t sched_submit_ns, sched_submits;

static struct peer_job *to_peer_job(struct drm_sched_job *job)
{
	return container_of(job, struct peer_job, base);
}

static const char *peer_fence_driver(struct dma_fence *f)
{
	return "vgsched_peer";
}

static const char *peer_fence_timeline(struct dma_fence *f)
{
	return "mock-ring";
}

/*
 * The hardware fence is embedded in its job, and drm_sched keeps a
 * reference to it (the scheduler fence's parent) that can outlive the job's
 * free_job(): the job's memory goes with the fence's last reference.
 */
static void peer_fence_release(struct dma_fence *f)
{
	struct peer_job *job = container_of(f, struct peer_job, hw);

	kfree_rcu(job, hw.rcu);
}

static const struct dma_fence_ops peer_fence_ops = {
	.get_driver_name = peer_fence_driver,
	.get_timeline_name = peer_fence_timeline,
	.release = peer_fence_release,
};

/* The job's time on the mock ring is over: its hardware fence signals. */
static enum hrtimer_restart peer_job_done(struct hrtimer *t)
{
	struct peer_job *job = container_of(t, struct peer_job, timer);

	atomic64_add(job->duration_ns, &job->ctx->runtime_ns);
	dma_fence_signal(&job->hw);
	dma_fence_put(&job->hw);
	if (atomic_dec_and_test(&running))
		wake_up_var(&running);
	return HRTIMER_NORESTART;
}

static struct dma_fence *peer_run_job(struct drm_sched_job *sched_job)
{
	struct peer_job *job = to_peer_job(sched_job);

	dma_fence_init(&job->hw, &peer_fence_ops, &ring->fence_lock, ring->fence_context,
		       ++ring->fence_seqno);
	atomic64_set(&job->ctx->last_start_ns, ktime_get_ns());
	/* One reference for the timer, one returned to drm_sched. */
	dma_fence_get(&job->hw);
	atomic_inc(&running);
	hrtimer_setup(&job->timer, peer_job_done, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	hrtimer_start(&job->timer, ns_to_ktime(job->duration_ns), HRTIMER_MODE_REL);
	return &job->hw;
}

static enum drm_gpu_sched_stat peer_timedout_job(struct drm_sched_job *sched_job)
{
	/* No timeout is set: the mock ring never hangs. */
	return DRM_GPU_SCHED_STAT_NO_HANG;
}

static void peer_free_job(struct drm_sched_job *sched_job)
{
	struct peer_job *job = to_peer_job(sched_job);

	drm_sched_job_cleanup(sched_job);
	/* A job that never ran has no hardware fence to free it. */
	if (!job->hw.ops)
		kfree(job);
}

static const struct drm_sched_backend_ops peer_ops = {
	.run_job = peer_run_job,
	.timedout_job = peer_timedout_job,
	.free_job = peer_free_job,
};

static void peer_bo_free(struct kref *ref)
{
	struct peer_bo *bo = container_of(ref, struct peer_bo, ref);

	dma_resv_fini(&bo->resv);
	kfree(bo);
}

static int peer_open(struct inode *inode, struct file *filp)
{
	struct peer_file *pf = kzalloc(sizeof(*pf), GFP_KERNEL);

	if (!pf)
		return -ENOMEM;
	mutex_init(&pf->lock);
	idr_init(&pf->ctxs);
	spin_lock_init(&pf->bo_lock);
	idr_init(&pf->bos);
	filp->private_data = pf;
	return 0;
}

static void peer_ctx_free(struct peer_ctx *ctx)
{
	drm_sched_entity_destroy(&ctx->entity);
	for (int i = 0; i < PEER_FENCES; i++)
		dma_fence_put(ctx->finished[i]);
	kfree(ctx);
}

static int peer_release(struct inode *inode, struct file *filp)
{
	struct peer_file *pf = filp->private_data;
	struct peer_ctx *ctx;
	struct peer_bo *bo;
	int id;

	idr_for_each_entry(&pf->ctxs, ctx, id)
		peer_ctx_free(ctx);
	idr_destroy(&pf->ctxs);
	idr_for_each_entry(&pf->bos, bo, id)
		kref_put(&bo->ref, peer_bo_free);
	idr_destroy(&pf->bos);
	kfree(pf);
	return 0;
}

static int peer_ctx_create(struct peer_file *pf, struct vgsched_peer_ctx_create *args)
{
	struct drm_gpu_scheduler *list[] = { &ring->sched };
	struct peer_ctx *ctx;
	int ret;

	if (args->priority > 1 || args->pad)
		return -EINVAL;
	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	mutex_init(&ctx->lock);
	ret = drm_sched_entity_init(&ctx->entity,
				   args->priority ? DRM_SCHED_PRIORITY_NORMAL : DRM_SCHED_PRIORITY_HIGH,
				   list, 1, NULL);
	if (ret) {
		kfree(ctx);
		return ret;
	}
	mutex_lock(&pf->lock);
	ret = idr_alloc(&pf->ctxs, ctx, 1, 0, GFP_KERNEL);
	mutex_unlock(&pf->lock);
	if (ret < 0) {
		peer_ctx_free(ctx);
		return ret;
	}
	args->ctx_id = ret;
	return 0;
}

static int peer_bo_create(struct peer_file *pf, struct vgsched_peer_bo_create *args)
{
	struct peer_bo *bo;
	int ret;

	if (args->pad)
		return -EINVAL;
	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return -ENOMEM;
	kref_init(&bo->ref);
	dma_resv_init(&bo->resv);
	idr_preload(GFP_KERNEL);
	spin_lock(&pf->bo_lock);
	ret = idr_alloc(&pf->bos, bo, 1, 0, GFP_NOWAIT);
	spin_unlock(&pf->bo_lock);
	idr_preload_end();
	if (ret < 0) {
		kref_put(&bo->ref, peer_bo_free);
		return ret;
	}
	args->handle = ret;
	return 0;
}

/* A reference to the buffer of @handle, as drm_gem_object_lookup() gives. */
static struct peer_bo *peer_bo_get(struct peer_file *pf, u32 handle)
{
	struct peer_bo *bo;

	spin_lock(&pf->bo_lock);
	bo = idr_find(&pf->bos, handle);
	if (bo)
		kref_get(&bo->ref);
	spin_unlock(&pf->bo_lock);
	return bo;
}

static struct peer_ctx *peer_ctx_get(struct peer_file *pf, u32 id)
{
	struct peer_ctx *ctx;

	mutex_lock(&pf->lock);
	ctx = idr_find(&pf->ctxs, id);
	mutex_unlock(&pf->lock);
	return ctx;
}

static int peer_submit(struct peer_file *pf, struct vgsched_peer_submit *args)
{
	struct peer_ctx *ctx = peer_ctx_get(pf, args->ctx_id);
	struct peer_bo *bo = NULL;
	struct peer_job *job;
	struct dma_fence **slot;
	u64 start;
	int ret;

	if (!ctx)
		return -ENOENT;
	if (args->duration_us > USEC_PER_SEC * 10)
		return -EINVAL;
	if (args->bo_handle) {
		bo = peer_bo_get(pf, args->bo_handle);
		if (!bo)
			return -ENOENT;
	}
	job = kzalloc(sizeof(*job), GFP_KERNEL);
	if (!job) {
		ret = -ENOMEM;
		goto put_bo;
	}
	job->ctx = ctx;
	job->duration_ns = args->duration_us * NSEC_PER_USEC;
	start = ktime_get_ns();
	ret = drm_sched_job_init(&job->base, &ctx->entity, 1, ctx, 0);
	if (ret)
		goto free_job;
	if (bo) {
		ret = dma_resv_lock_interruptible(&bo->resv, NULL);
		if (ret)
			goto cleanup_job;
		ret = dma_resv_reserve_fences(&bo->resv, 1);
		if (!ret)
			ret = drm_sched_job_add_resv_dependencies(&job->base, &bo->resv,
								  dma_resv_usage_rw(true));
		if (ret) {
			dma_resv_unlock(&bo->resv);
			goto cleanup_job;
		}
	}
	mutex_lock(&ctx->lock);
	drm_sched_job_arm(&job->base);
	if (bo)
		dma_resv_add_fence(&bo->resv, &job->base.s_fence->finished, DMA_RESV_USAGE_WRITE);
	args->seqno = ++ctx->next_seqno;
	slot = &ctx->finished[args->seqno % PEER_FENCES];
	dma_fence_put(*slot);
	*slot = dma_fence_get(&job->base.s_fence->finished);
	atomic64_set(&ctx->last_submit_ns, ktime_get_ns());
	drm_sched_entity_push_job(&job->base);
	mutex_unlock(&ctx->lock);
	if (bo) {
		dma_resv_unlock(&bo->resv);
		kref_put(&bo->ref, peer_bo_free);
		return 0;
	}
	atomic64_add(ktime_get_ns() - start, &sched_submit_ns);
	atomic64_inc(&sched_submits);
	return 0;

cleanup_job:
	drm_sched_job_cleanup(&job->base);
free_job:
	kfree(job);
put_bo:
	if (bo)
		kref_put(&bo->ref, peer_bo_free);
	return ret;
}

static int peer_wait(struct peer_file *pf, struct vgsched_peer_wait *args)
{
	struct peer_ctx *ctx = peer_ctx_get(pf, args->ctx_id);
	struct dma_fence *fence;
	long ret;

	if (!ctx)
		return -ENOENT;
	mutex_lock(&ctx->lock);
	if (!args->seqno || args->seqno > ctx->next_seqno ||
	    args->seqno + PEER_FENCES <= ctx->next_seqno) {
		mutex_unlock(&ctx->lock);
		return -EINVAL;
	}
	fence = dma_fence_get(ctx->finished[args->seqno % PEER_FENCES]);
	mutex_unlock(&ctx->lock);
	ret = dma_fence_wait_timeout(fence, true, nsecs_to_jiffies(args->timeout_ns) + 1);
	dma_fence_put(fence);
	if (ret < 0)
		return ret;
	return ret ? 0 : -ETIMEDOUT;
}

static int peer_query(struct peer_file *pf, struct vgsched_peer_query *args)
{
	struct peer_ctx *ctx = peer_ctx_get(pf, args->ctx_id);

	if (!ctx)
		return -ENOENT;
	args->runtime_ns = atomic64_read(&ctx->runtime_ns);
	args->last_submit_ns = atomic64_read(&ctx->last_submit_ns);
	args->last_start_ns = atomic64_read(&ctx->last_start_ns);
	args->sched_submit_ns = atomic64_read(&sched_submit_ns);
	args->sched_submits = atomic64_read(&sched_submits);
	return 0;
}

static long peer_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct peer_file *pf = filp->private_data;
	union {
		struct vgsched_peer_ctx_create create;
		struct vgsched_peer_submit submit;
		struct vgsched_peer_wait wait;
		struct vgsched_peer_query query;
		struct vgsched_peer_bo_create bo_create;
	} a;
	unsigned int size = _IOC_SIZE(cmd);
	int ret;

	if (size > sizeof(a) || copy_from_user(&a, (void __user *)arg, size))
		return -EFAULT;
	switch (cmd) {
	case VGSCHED_PEER_CTX_CREATE:
		ret = peer_ctx_create(pf, &a.create);
		break;
	case VGSCHED_PEER_SUBMIT:
		ret = peer_submit(pf, &a.submit);
		break;
	case VGSCHED_PEER_WAIT:
		ret = peer_wait(pf, &a.wait);
		break;
	case VGSCHED_PEER_QUERY:
		ret = peer_query(pf, &a.query);
		break;
	case VGSCHED_PEER_BO_CREATE:
		ret = peer_bo_create(pf, &a.bo_create);
		break;
	default:
		return -ENOTTY;
	}
	if (!ret && copy_to_user((void __user *)arg, &a, size))
		return -EFAULT;
	return ret;
}

static const struct file_operations peer_fops = {
	.owner = THIS_MODULE,
	.open = peer_open,
	.release = peer_release,
	.unlocked_ioctl = peer_ioctl,
};

static struct miscdevice peer_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "vgsched_peer",
	.fops = &peer_fops,
};

static int __init peer_init(void)
{
	struct drm_sched_init_args args = {
		.ops = &peer_ops,
		.num_rqs = DRM_SCHED_PRIORITY_COUNT,
		.credit_limit = 1,
		.timeout = MAX_SCHEDULE_TIMEOUT,
		.name = "vgsched_peer",
	};
	int ret;

	ring = kzalloc(sizeof(*ring), GFP_KERNEL);
	if (!ring)
		return -ENOMEM;
	spin_lock_init(&ring->fence_lock);
	ring->fence_context = dma_fence_context_alloc(1);
	ret = drm_sched_init(&ring->sched, &args);
	if (ret)
		goto free;
	ret = misc_register(&peer_misc);
	if (ret)
		goto fini;
	return 0;
fini:
	drm_sched_fini(&ring->sched);
free:
	kfree(ring);
	return ret;
}

static void __exit peer_exit(void)
{
	misc_deregister(&peer_misc);
	/* Every file is closed: no new job; let the ring's timers run out. */
	wait_var_event(&running, !atomic_read(&running));
	drm_sched_fini(&ring->sched);
	kfree(ring);
}

module_init(peer_init);
module_exit(peer_exit);
MODULE_DESCRIPTION("drm_sched on a mock ring, for side-by-side benchmarks with vgsched");
MODULE_LICENSE("GPL");
