// SPDX-License-Identifier: GPL-2.0
/*
 * Contexts through the uAPI: create with a priority, query, destroy; the
 * priority permission rule and the per-file limit.
 */
#include <errno.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vgsched_test_util.h"

FIXTURE(ctx) {
	int fd;
};

FIXTURE_SETUP(ctx)
{
	self->fd = vgsched_open_render_node();
	ASSERT_GE(self->fd, 0);
}

FIXTURE_TEARDOWN(ctx)
{
	close(self->fd);
}

TEST_F(ctx, create_query_destroy)
{
	__u64 before = vg_now_ns(), after;
	__u32 id = vgsched_ctx_create(self->fd, 11);
	struct drm_vgsched_ctx_query q = { .ctx_id = id };

	after = vg_now_ns();
	ASSERT_NE(0, id);
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_VGSCHED_CTX_QUERY, &q));
	EXPECT_EQ(11, q.priority);
	EXPECT_GE(q.created_ns, before);
	EXPECT_LE(q.created_ns, after);
	EXPECT_EQ(0, q.runtime_ns);
	EXPECT_EQ(DRM_VGSCHED_CTX_STATE_IDLE, q.state);
	EXPECT_EQ(0, q.jobs_submitted);
	ASSERT_EQ(0, vgsched_ctx_destroy(self->fd, id));
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_VGSCHED_CTX_QUERY, &q));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-ENOENT, vgsched_ctx_destroy(self->fd, id));
}

TEST_F(ctx, ids_are_distinct_and_never_zero)
{
	__u32 a = vgsched_ctx_create(self->fd, 8);
	__u32 b = vgsched_ctx_create(self->fd, 15);

	ASSERT_NE(0, a);
	ASSERT_NE(0, b);
	EXPECT_NE(a, b);
}

TEST_F(ctx, every_priority_level_is_accepted_with_cap_sys_nice)
{
	for (__u32 prio = 0; prio < DRM_VGSCHED_PRIORITY_LEVELS; prio++) {
		__u32 id = vgsched_ctx_create(self->fd, prio);
		struct drm_vgsched_ctx_query q = { .ctx_id = id };

		ASSERT_NE(0, id) TH_LOG("priority %u: errno %d", prio, errno);
		ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_VGSCHED_CTX_QUERY, &q));
		EXPECT_EQ(prio, q.priority);
		EXPECT_EQ(0, vgsched_ctx_destroy(self->fd, id));
	}
}

TEST_F(ctx, priority_out_of_range_is_einval)
{
	EXPECT_EQ(0, vgsched_ctx_create(self->fd, DRM_VGSCHED_PRIORITY_LEVELS));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, vgsched_ctx_create(self->fd, ~0u));
	EXPECT_EQ(EINVAL, errno);
}

/* Without CAP_SYS_NICE only the normal band is allowed, as in panthor/xe. */
TEST_F(ctx, high_priority_without_cap_sys_nice_is_eperm)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {};

	ASSERT_EQ(0, syscall(SYS_capget, &hdr, data));
	data[0].effective &= ~(1u << CAP_SYS_NICE);
	ASSERT_EQ(0, syscall(SYS_capset, &hdr, data));

	EXPECT_EQ(0, vgsched_ctx_create(self->fd, 0));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(0, vgsched_ctx_create(self->fd, DRM_VGSCHED_PRIORITY_NORMAL_FIRST - 1));
	EXPECT_EQ(EPERM, errno);
	EXPECT_NE(0, vgsched_ctx_create(self->fd, DRM_VGSCHED_PRIORITY_NORMAL_FIRST));
}

TEST_F(ctx, per_file_limit_is_enospc_and_frees_on_destroy)
{
	__u32 ids[DRM_VGSCHED_MAX_CONTEXTS_PER_FILE];
	int other;

	for (int i = 0; i < DRM_VGSCHED_MAX_CONTEXTS_PER_FILE; i++) {
		ids[i] = vgsched_ctx_create(self->fd, 12);
		ASSERT_NE(0, ids[i]) TH_LOG("context %d: errno %d", i, errno);
	}
	EXPECT_EQ(0, vgsched_ctx_create(self->fd, 12));
	EXPECT_EQ(ENOSPC, errno);
	/* The limit is per file: another client is unaffected. */
	other = vgsched_open_render_node();
	ASSERT_GE(other, 0);
	EXPECT_NE(0, vgsched_ctx_create(other, 12));
	close(other);
	/* Destroying one makes room for one. */
	ASSERT_EQ(0, vgsched_ctx_destroy(self->fd, ids[7]));
	EXPECT_NE(0, vgsched_ctx_create(self->fd, 12));
	EXPECT_EQ(0, vgsched_ctx_create(self->fd, 12));
	EXPECT_EQ(ENOSPC, errno);
}

TEST_F(ctx, bad_flags_padding_and_ids)
{
	struct drm_vgsched_ctx_create c = { .priority = 9, .flags = DRM_VGSCHED_CREATE_WAIT << 1 };
	struct drm_vgsched_ctx_destroy d = { .ctx_id = 1, .pad = 1 };
	struct drm_vgsched_ctx_query q = { .ctx_id = 0 };
	__u32 id = vgsched_ctx_create(self->fd, 9);

	ASSERT_NE(0, id);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_VGSCHED_CTX_CREATE, &c));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, c.ctx_id);
	c.flags = 0;
	c.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_VGSCHED_CTX_CREATE, &c));
	EXPECT_EQ(EINVAL, errno);
	d.ctx_id = id;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_VGSCHED_CTX_DESTROY, &d));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_VGSCHED_CTX_QUERY, &q));
	EXPECT_EQ(ENOENT, errno);
	q.ctx_id = DRM_VGSCHED_MAX_CONTEXTS_PER_FILE + 1;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_VGSCHED_CTX_QUERY, &q));
	EXPECT_EQ(ENOENT, errno);
	q.ctx_id = id;
	q.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_VGSCHED_CTX_QUERY, &q));
	EXPECT_EQ(EINVAL, errno);
	/* The failed destroy changed nothing: the context is still there. */
	q.pad = 0;
	EXPECT_EQ(0, ioctl(self->fd, DRM_IOCTL_VGSCHED_CTX_QUERY, &q));
}

/* Contexts are per file. */
TEST_F(ctx, ids_are_private_to_their_file)
{
	__u32 id = vgsched_ctx_create(self->fd, 9);
	int other = vgsched_open_render_node();

	ASSERT_NE(0, id);
	ASSERT_GE(other, 0);
	EXPECT_EQ(-ENOENT, vgsched_ctx_destroy(other, id));
	close(other);
	EXPECT_EQ(0, vgsched_ctx_destroy(self->fd, id));
}

TEST_HARNESS_MAIN
