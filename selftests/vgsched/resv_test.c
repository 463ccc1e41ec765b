// SPDX-License-Identifier: GPL-2.0
/*
 * Implicit synchronisation through the bound objects' reservation objects
 * (uAPI 1.3):
 *  - an object a running job writes, exported as a dma-buf, polls busy
 *    (POLLOUT and POLLIN) and gives an unsignalled sync_file
 *    (DMA_BUF_IOCTL_EXPORT_SYNC_FILE) until the job ends, then ready;
 *  - a job that only reads an object does not hold back another reader,
 *    but holds back a writer, whose store lands only after the read;
 *  - a job that reads an object waits for the job of another context
 *    (and another file) that writes it, and sees what it wrote;
 *  - access flags are checked: a program storing to a read-only binding
 *    is refused with EACCES, a bad access value with EINVAL.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <linux/dma-buf.h>
#include <linux/sync_file.h>

#include "kselftest_harness.h"
#include "vgsched_programs.h"

#define THREADS 64
#define UNTOUCHED 0xffffffffu

FIXTURE(resv) {
	int fd;
	__u32 ctx[3];
};

FIXTURE_SETUP(resv)
{
	struct drm_vgsched_gpu_info info;

	self->fd = vgsched_open_render_node();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, vgsched_query_gpu_info(self->fd, &info));
	ASSERT_GE(info.uapi_minor, 3);
	for (int i = 0; i < 3; i++) {
		self->ctx[i] = vgsched_ctx_create(self->fd, 8);
		ASSERT_NE(0, self->ctx[i]);
	}
}

FIXTURE_TEARDOWN(resv)
{
	close(self->fd);
}

/* poll() on @fd for @events without waiting: the events that are ready. */
static short poll_now(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };

	return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

/* 1 signalled, 0 pending, <0 error of the sync_file of @dmabuf's fences for @flags. */
static int exported_fence_status(int dmabuf, __u32 flags)
{
	struct dma_buf_export_sync_file e = { .flags = flags, .fd = -1 };
	struct sync_file_info info = {};
	int ret;

	if (ioctl(dmabuf, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &e))
		return -1000;
	ret = ioctl(e.fd, SYNC_IOC_FILE_INFO, &info) ? -1000 : info.status;
	close(e.fd);
	return ret;
}

/* A copy job: after @ms of modeled time, dst[i] = src[i] for its threads. */
struct copy_job {
	struct vg_buf prog;
	unsigned int len;
	__u32 bind[2];
	struct drm_vgsched_submit s;
};

static int copy_job_init(int fd, struct copy_job *j, __u32 ctx, int ms, __u32 src, __u32 dst)
{
	__u64 words[16];
	int ret;

	memset(j, 0, sizeof(*j));
	j->len = vg_prog_slow_copy(words, LOOPS_FOR_MS(ms));
	ret = vg_program(fd, words, j->len, &j->prog);
	if (ret)
		return ret;
	j->bind[0] = src;
	j->bind[1] = dst;
	j->s = vg_job(ctx, &j->prog, j->len, j->bind, 2, 1, 1, THREADS);
	j->s.shared_mem_blocks = 0;
	j->s.binding_access[0] = DRM_VGSCHED_BINDING_READ;
	j->s.binding_access[1] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
	return 0;
}

static int words_are(const struct vg_buf *b, int ids, uint32_t value)
{
	for (int i = 0; i < THREADS; i++)
		if (((uint32_t *)b->map)[i] != (ids ? (uint32_t)i : value))
			return 0;
	return 1;
}

TEST_F(resv, exported_buffer_polls_busy_while_a_job_writes_it)
{
	struct busy_job w;
	int dmabuf;

	ASSERT_EQ(0, busy_job_init(self->fd, &w, self->ctx[0], 1000, 1, 1, THREADS, 1));
	dmabuf = vg_prime_export(self->fd, w.out.handle);
	ASSERT_GE(dmabuf, 0);
	/* Nothing uses it yet: ready for reading and writing. */
	ASSERT_EQ(POLLOUT, poll_now(dmabuf, POLLOUT));
	ASSERT_EQ(1, exported_fence_status(dmabuf, DMA_BUF_SYNC_WRITE));

	ASSERT_EQ(0, busy_submit(self->fd, &w));
	ASSERT_TRUE(still_running(self->fd, self->ctx[0], w.s.seqno));
	/* A writer: neither another writer nor a reader may touch it. */
	ASSERT_EQ(0, poll_now(dmabuf, POLLOUT)) TH_LOG("the job's fence is not in the dma-buf");
	ASSERT_EQ(0, poll_now(dmabuf, POLLIN));
	ASSERT_EQ(0, exported_fence_status(dmabuf, DMA_BUF_SYNC_WRITE));
	ASSERT_EQ(0, exported_fence_status(dmabuf, DMA_BUF_SYNC_READ));

	/* poll() waits for the job like WAIT does. */
	struct pollfd p = { .fd = dmabuf, .events = POLLOUT };

	ASSERT_EQ(1, poll(&p, 1, 30000));
	ASSERT_EQ(0, wait_ok(self->fd, self->ctx[0], w.s.seqno));
	ASSERT_EQ(-1, busy_job_wrong(&w));
	ASSERT_EQ(POLLOUT | POLLIN, poll_now(dmabuf, POLLOUT | POLLIN));
	ASSERT_EQ(1, exported_fence_status(dmabuf, DMA_BUF_SYNC_WRITE));
	close(dmabuf);
	busy_job_fini(self->fd, &w);
}

TEST_F(resv, a_reader_does_not_block_a_reader_but_blocks_a_writer)
{
	struct vg_buf x, y1, y2;
	struct copy_job r1, r2;
	struct busy_job w;

	ASSERT_EQ(0, vg_buf_create(self->fd, 4096, &x));
	ASSERT_EQ(0, vg_buf_create(self->fd, 4096, &y1));
	ASSERT_EQ(0, vg_buf_create(self->fd, 4096, &y2));
	memset(x.map, 0xff, 4096);
	memset(y1.map, 0, 4096);
	memset(y2.map, 0, 4096);
	/* R1 reads x at the end of 1.5 s, R2 at once; W writes x at once. */
	ASSERT_EQ(0, copy_job_init(self->fd, &r1, self->ctx[0], 1500, x.handle, y1.handle));
	ASSERT_EQ(0, copy_job_init(self->fd, &r2, self->ctx[1], 1, x.handle, y2.handle));
	ASSERT_EQ(0, busy_job_init(self->fd, &w, self->ctx[2], 1, 1, 1, THREADS, 1));
	w.binding = x.handle;

	ASSERT_EQ(0, vgsched_submit(self->fd, &r1.s));
	ASSERT_EQ(0, vgsched_submit(self->fd, &r2.s));
	ASSERT_EQ(0, vgsched_submit(self->fd, &w.s));

	/* The second reader finishes while the first still runs. */
	ASSERT_EQ(0, wait_ok(self->fd, self->ctx[1], r2.s.seqno));
	ASSERT_TRUE(still_running(self->fd, self->ctx[0], r1.s.seqno))
		TH_LOG("a reader waited for another reader");
	ASSERT_TRUE(words_are(&y2, 0, UNTOUCHED));

	/* The writer ends after the first reader, which saw x untouched. */
	ASSERT_EQ(0, wait_ok(self->fd, self->ctx[2], w.s.seqno));
	ASSERT_EQ(0, vgsched_wait(self->fd, self->ctx[0], r1.s.seqno, 0, NULL))
		TH_LOG("the writer finished before the reader");
	ASSERT_TRUE(words_are(&y1, 0, UNTOUCHED)) TH_LOG("the writer stored before the reader read");
	ASSERT_TRUE(words_are(&x, 1, 0));

	vg_buf_destroy(self->fd, &r1.prog);
	vg_buf_destroy(self->fd, &r2.prog);
	vg_buf_destroy(self->fd, &w.prog);
	vg_buf_destroy(self->fd, &w.out);
	vg_buf_destroy(self->fd, &x);
	vg_buf_destroy(self->fd, &y1);
	vg_buf_destroy(self->fd, &y2);
}

/* The writer and the reader use different files: the object is shared through PRIME. */
TEST_F(resv, a_reader_of_another_context_waits_for_the_writer)
{
	int other = vgsched_open_render_node();
	__u32 other_ctx = other < 0 ? 0 : vgsched_ctx_create(other, 8);
	struct copy_job r;
	struct busy_job w;
	struct vg_buf y;
	__u32 x_there;
	int dmabuf;

	ASSERT_NE(0, other_ctx);
	/* W writes x[i] = i after 1 s; R, on the other file, copies x to y at once. */
	ASSERT_EQ(0, busy_job_init(self->fd, &w, self->ctx[0], 1000, 1, 1, THREADS, 1));
	dmabuf = vg_prime_export(self->fd, w.out.handle);
	ASSERT_GE(dmabuf, 0);
	x_there = vg_prime_import(other, dmabuf);
	ASSERT_NE(0, x_there);
	ASSERT_EQ(0, vg_buf_create(other, 4096, &y));
	ASSERT_EQ(0, copy_job_init(other, &r, other_ctx, 1, x_there, y.handle));

	ASSERT_EQ(0, busy_submit(self->fd, &w));
	ASSERT_EQ(0, vgsched_submit(other, &r.s));
	ASSERT_EQ(0, wait_ok(other, other_ctx, r.s.seqno));
	ASSERT_EQ(0, vgsched_wait(self->fd, self->ctx[0], w.s.seqno, 0, NULL))
		TH_LOG("the reader finished before the writer");
	ASSERT_TRUE(words_are(&y, 1, 0)) TH_LOG("the reader did not see what the writer stored");

	vg_buf_destroy(other, &r.prog);
	vg_buf_destroy(other, &y);
	close(dmabuf);
	close(other);
	busy_job_fini(self->fd, &w);
}

TEST_F(resv, access_flags_are_checked)
{
	struct drm_vgsched_ctx_query q;
	struct busy_job w;
	struct copy_job r;
	int status = 1;

	ASSERT_EQ(0, busy_job_init(self->fd, &w, self->ctx[0], 1, 1, 1, THREADS, 1));
	/* The program stores to binding 0. */
	w.s.binding_access[0] = DRM_VGSCHED_BINDING_READ;
	ASSERT_EQ(-EACCES, busy_submit(self->fd, &w));
	ASSERT_EQ(0, w.s.seqno);
	w.s.binding_access[0] = DRM_VGSCHED_BINDING_WRITE;
	ASSERT_EQ(-EINVAL, busy_submit(self->fd, &w)) TH_LOG("write-only is not a mode");
	w.s.binding_access[0] = 1u << 2;
	ASSERT_EQ(-EINVAL, busy_submit(self->fd, &w)) TH_LOG("unknown access bit");
	w.s.binding_access[0] = 0;
	w.s.binding_access[1] = DRM_VGSCHED_BINDING_READ;
	ASSERT_EQ(-EINVAL, busy_submit(self->fd, &w)) TH_LOG("access of a slot past binding_count");
	ASSERT_EQ(0, vgsched_ctx_query(self->fd, self->ctx[0], &q));
	ASSERT_EQ(0, q.jobs_submitted);

	/* 0 is read-write, as before uAPI 1.3; so is READ | WRITE. */
	w.s.binding_access[1] = 0;
	ASSERT_EQ(0, busy_submit(self->fd, &w));
	ASSERT_EQ(0, wait_ok(self->fd, self->ctx[0], w.s.seqno));
	w.s.binding_access[0] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
	ASSERT_EQ(0, busy_submit(self->fd, &w));
	ASSERT_EQ(0, vgsched_wait(self->fd, self->ctx[0], w.s.seqno, 30 * VG_SECOND_NS, &status));
	ASSERT_EQ(0, status);

	/* A program that stores only to its read-write slot is accepted with a read-only one. */
	ASSERT_EQ(0, copy_job_init(self->fd, &r, self->ctx[1], 1, w.out.handle, w.prog.handle));
	r.s.binding_access[1] = DRM_VGSCHED_BINDING_READ;
	ASSERT_EQ(-EACCES, vgsched_submit(self->fd, &r.s));
	r.s.binding_access[1] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
	r.bind[1] = w.out.handle;
	ASSERT_EQ(0, vgsched_submit(self->fd, &r.s));
	ASSERT_EQ(0, wait_ok(self->fd, self->ctx[1], r.s.seqno));
	vg_buf_destroy(self->fd, &r.prog);
	busy_job_fini(self->fd, &w);
}

TEST_HARNESS_MAIN
