// SPDX-License-Identifier: GPL-2.0
/*
 * The vgsched render node and its query ioctl, through the uAPI only.
 * The module is loaded by the guest's init with its default parameters.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vgsched_test_util.h"

FIXTURE(render_node) {
	int fd;
};

FIXTURE_SETUP(render_node)
{
	self->fd = vgsched_open_render_node();
	ASSERT_GE(self->fd, 0) TH_LOG("no render node with driver name vgsched");
}

FIXTURE_TEARDOWN(render_node)
{
	close(self->fd);
}

/* The node is a character device of the DRM major, in the render range. */
TEST_F(render_node, is_a_drm_render_node)
{
	struct stat st;

	ASSERT_EQ(0, fstat(self->fd, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(226, major(st.st_rdev));
	EXPECT_GE(minor(st.st_rdev), 128);
}

TEST_F(render_node, version_names_the_driver)
{
	char name[32] = {}, desc[64] = {};
	struct drm_version v = {
		.name = name, .name_len = sizeof(name) - 1,
		.desc = desc, .desc_len = sizeof(desc) - 1,
	};

	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_VERSION, &v));
	EXPECT_STREQ("vgsched", name);
	EXPECT_EQ(1, v.version_major);
	EXPECT_STREQ("Scheduling virtual GPU", desc);
}

/* Default module parameters, as documented in the admin guide. */
TEST_F(render_node, gpu_info_reports_default_topology)
{
	struct drm_vgsched_gpu_info info;

	memset(&info, 0xa5, sizeof(info));
	ASSERT_EQ(0, vgsched_query_gpu_info(self->fd, &info));
	EXPECT_EQ(DRM_VGSCHED_UAPI_MAJOR, info.uapi_major);
	EXPECT_EQ(DRM_VGSCHED_UAPI_MINOR, info.uapi_minor);
	EXPECT_EQ(4, info.modules);
	EXPECT_EQ(4, info.units_per_module);
	EXPECT_EQ(8, info.hw_slots);
	EXPECT_EQ(10000, info.time_slice_us);
	EXPECT_EQ(128, info.vgpr_blocks);
	EXPECT_EQ(64, info.sgpr_blocks);
	EXPECT_EQ(16, info.wave_slots);
	EXPECT_EQ(48, info.shared_mem_blocks);
}

TEST_F(render_node, query_with_null_pointer_returns_size)
{
	struct drm_vgsched_dev_query q = { .type = DRM_VGSCHED_DEV_QUERY_GPU_INFO };

	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_VGSCHED_DEV_QUERY, &q));
	EXPECT_EQ(sizeof(struct drm_vgsched_gpu_info), q.size);
}

TEST_F(render_node, query_with_short_buffer_is_einval)
{
	struct drm_vgsched_gpu_info info;
	struct drm_vgsched_dev_query q = {
		.type = DRM_VGSCHED_DEV_QUERY_GPU_INFO,
		.size = sizeof(info) - 1,
		.pointer = (__u64)(unsigned long)&info,
	};

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_VGSCHED_DEV_QUERY, &q));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(sizeof(info) - 1, q.size) TH_LOG("a failed query must not change its argument");
}

TEST_F(render_node, query_to_bad_pointer_is_efault)
{
	struct drm_vgsched_dev_query q = {
		.type = DRM_VGSCHED_DEV_QUERY_GPU_INFO,
		.size = sizeof(struct drm_vgsched_gpu_info),
		.pointer = 8, /* the first page is never mapped */
	};

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_VGSCHED_DEV_QUERY, &q));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(render_node, unknown_query_type_is_einval)
{
	struct drm_vgsched_dev_query q = { .type = 0x7fff };

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_VGSCHED_DEV_QUERY, &q));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, q.size);
}

TEST_F(render_node, nonzero_padding_is_einval)
{
	struct drm_vgsched_dev_query q = { .type = DRM_VGSCHED_DEV_QUERY_GPU_INFO, .pad = 1 };

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_VGSCHED_DEV_QUERY, &q));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, q.size);
}

TEST_F(render_node, unknown_flags_are_einval)
{
	for (int bit = 0; bit < 32; bit++) {
		struct drm_vgsched_dev_query q = {
			.type = DRM_VGSCHED_DEV_QUERY_GPU_INFO,
			.flags = 1u << bit,
		};

		EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_VGSCHED_DEV_QUERY, &q)) TH_LOG("flag bit %d", bit);
		EXPECT_EQ(EINVAL, errno);
	}
}

/*
 * Driver ioctl numbers the driver does not define: the DRM core rejects
 * everything past the table, up to DRM_COMMAND_END.
 */
TEST_F(render_node, unknown_ioctl_number_is_einval)
{
	struct drm_vgsched_dev_query q = {};
	unsigned int nr;

	for (nr = 0x20; nr < DRM_COMMAND_END - DRM_COMMAND_BASE; nr++) {
		unsigned long cmd = DRM_IOWR(DRM_COMMAND_BASE + nr, struct drm_vgsched_dev_query);

		EXPECT_EQ(-1, ioctl(self->fd, cmd, &q)) TH_LOG("ioctl nr %#x", DRM_COMMAND_BASE + nr);
		EXPECT_EQ(EINVAL, errno);
	}
}

/* Several clients at once each get a working file. */
TEST(many_opens_are_independent)
{
	int fds[16];
	int i;

	for (i = 0; i < 16; i++) {
		struct drm_vgsched_gpu_info info;

		fds[i] = vgsched_open_render_node();
		ASSERT_GE(fds[i], 0);
		ASSERT_EQ(0, vgsched_query_gpu_info(fds[i], &info));
	}
	for (i = 0; i < 16; i++)
		close(fds[i]);
}

TEST_HARNESS_MAIN
