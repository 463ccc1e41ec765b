// SPDX-License-Identifier: GPL-2.0
/*
 * DRM client usage statistics in /proc/self/fdinfo/FD of the render node
 * (Documentation/gpu/drm-usage-stats.rst): the core's drm-driver and
 * drm-client-id keys, the latter equal to the client_id CTX_QUERY reports
 * and distinct per open file, and drm-engine-gpu, the GPU time of the
 * file's contexts, equal to their runtime_ns and kept after a destroy.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vgsched_programs.h"

static __u64 ctx_runtime_ns(int fd, __u32 ctx)
{
	struct drm_vgsched_ctx_query q = { .ctx_id = ctx };

	return ioctl(fd, DRM_IOCTL_VGSCHED_CTX_QUERY, &q) ? ~0ull : q.runtime_ns;
}

/* Runs an integer vector add of 4 x 32 threads on @ctx; 0 when it succeeded. */
static int run_job(struct __test_metadata *_metadata, int fd, __u32 ctx)
{
	const unsigned int groups = 4, threads = 32, n = groups * threads;
	struct vg_buf prog, a, b, c;
	__u64 words[16];
	unsigned int len = vg_prog_vector_add(words, 0);
	int status = 1;

	EXPECT_EQ(0, vg_program(fd, words, len, &prog));
	EXPECT_EQ(0, vg_buf_create(fd, n * 4, &a));
	EXPECT_EQ(0, vg_buf_create(fd, n * 4, &b));
	EXPECT_EQ(0, vg_buf_create(fd, n * 4, &c));
	for (unsigned int i = 0; !_metadata->exit_code && i < n; i++) {
		((uint32_t *)a.map)[i] = i;
		((uint32_t *)b.map)[i] = 3 * i;
	}
	__u32 bindings[] = { a.handle, b.handle, c.handle };
	struct drm_vgsched_submit s = vg_job(ctx, &prog, len, bindings, 3, groups, 1, threads);

	EXPECT_EQ(0, vgsched_submit(fd, &s));
	EXPECT_EQ(0, vgsched_wait(fd, ctx, s.seqno, 30 * VG_SECOND_NS, &status));
	EXPECT_EQ(0, status);
	for (unsigned int i = 0; !_metadata->exit_code && i < n; i++) {
		EXPECT_EQ(4 * i, ((uint32_t *)c.map)[i]) TH_LOG("element %u", i);
	}
	vg_buf_destroy(fd, &prog);
	vg_buf_destroy(fd, &a);
	vg_buf_destroy(fd, &b);
	vg_buf_destroy(fd, &c);
	return _metadata->exit_code;
}

FIXTURE(fdinfo) {
	int fd;
	__u32 ctx;
};

FIXTURE_SETUP(fdinfo)
{
	self->fd = vgsched_open_render_node();
	ASSERT_GE(self->fd, 0);
	self->ctx = vgsched_ctx_create(self->fd, 8);
	ASSERT_NE(0, self->ctx);
}

FIXTURE_TEARDOWN(fdinfo)
{
	close(self->fd);
}

TEST_F(fdinfo, standard_keys_and_client_id)
{
	char val[128];
	__u64 id;

	ASSERT_EQ(0, vg_fdinfo_value(self->fd, "drm-driver", val, sizeof(val)));
	EXPECT_STREQ("vgsched", val);
	ASSERT_EQ(0, vg_fdinfo_u64(self->fd, "drm-client-id", &id));
	EXPECT_NE(0, id);
	/* The driver numbers its clients as the DRM core does. */
	EXPECT_EQ(id, vgsched_client_id(self->fd, self->ctx));
	/* GEM memory of the file, by the core's helper. */
	EXPECT_EQ(0, vg_fdinfo_value(self->fd, "drm-total-memory", val, sizeof(val)));
	EXPECT_EQ(0, vg_fdinfo_value(self->fd, "drm-shared-memory", val, sizeof(val)));
}

TEST_F(fdinfo, engine_time_is_the_contexts_runtime)
{
	char val[128];
	__u64 ns, runtime;

	ASSERT_EQ(0, vg_fdinfo_value(self->fd, "drm-engine-gpu", val, sizeof(val)));
	EXPECT_TRUE(strstr(val, " ns") != NULL) TH_LOG("value '%s' has no unit", val);
	ASSERT_EQ(0, vg_fdinfo_u64(self->fd, "drm-engine-gpu", &ns));
	EXPECT_EQ(0, ns);

	ASSERT_EQ(0, run_job(_metadata, self->fd, self->ctx));
	ASSERT_EQ(0, vg_fdinfo_u64(self->fd, "drm-engine-gpu", &ns));
	runtime = ctx_runtime_ns(self->fd, self->ctx);
	TH_LOG("drm-engine-gpu %llu ns, runtime_ns %llu", ns, runtime);
	EXPECT_GT(ns, 0);
	/* The only context of the file: the totals agree exactly. */
	EXPECT_EQ(runtime, ns);
}

TEST_F(fdinfo, engine_time_sums_contexts_and_keeps_destroyed_ones)
{
	__u32 second = vgsched_ctx_create(self->fd, 12);
	__u64 ns, first_ns, second_ns;

	ASSERT_NE(0, second);
	ASSERT_EQ(0, run_job(_metadata, self->fd, self->ctx));
	ASSERT_EQ(0, run_job(_metadata, self->fd, second));
	first_ns = ctx_runtime_ns(self->fd, self->ctx);
	second_ns = ctx_runtime_ns(self->fd, second);
	ASSERT_GT(first_ns, 0);
	ASSERT_GT(second_ns, 0);
	ASSERT_EQ(0, vg_fdinfo_u64(self->fd, "drm-engine-gpu", &ns));
	EXPECT_EQ(first_ns + second_ns, ns);

	/* A client's GPU time does not shrink when one of its contexts goes. */
	ASSERT_EQ(0, vgsched_ctx_destroy(self->fd, second));
	ASSERT_EQ(0, vg_fdinfo_u64(self->fd, "drm-engine-gpu", &ns));
	EXPECT_EQ(first_ns + second_ns, ns);
}

TEST_F(fdinfo, each_open_file_is_its_own_client)
{
	int other = vgsched_open_render_node(), dup_fd = dup(self->fd);
	__u64 id, other_id, dup_id, ns;
	__u32 other_ctx;

	ASSERT_GE(other, 0);
	ASSERT_GE(dup_fd, 0);
	other_ctx = vgsched_ctx_create(other, 8);
	ASSERT_NE(0, other_ctx);
	ASSERT_EQ(0, vg_fdinfo_u64(self->fd, "drm-client-id", &id));
	ASSERT_EQ(0, vg_fdinfo_u64(other, "drm-client-id", &other_id));
	ASSERT_EQ(0, vg_fdinfo_u64(dup_fd, "drm-client-id", &dup_id));
	EXPECT_NE(id, other_id);
	EXPECT_EQ(other_id, vgsched_client_id(other, other_ctx));
	/* A duplicated descriptor is the same file, so the same client. */
	EXPECT_EQ(id, dup_id);

	/* One file's work is not counted for another. */
	ASSERT_EQ(0, run_job(_metadata, other, other_ctx));
	ASSERT_EQ(0, vg_fdinfo_u64(self->fd, "drm-engine-gpu", &ns));
	EXPECT_EQ(0, ns);
	ASSERT_EQ(0, vg_fdinfo_u64(other, "drm-engine-gpu", &ns));
	EXPECT_EQ(ctx_runtime_ns(other, other_ctx), ns);
	close(dup_fd);
	close(other);
}

TEST_HARNESS_MAIN
