// SPDX-License-Identifier: GPL-2.0
/*
 * Loading and unloading the module with finit_module(2)/delete_module(2),
 * as insmod and rmmod do. Runs before the module is loaded for the other
 * tests; the path of vgsched.ko comes from $VGSCHED_KO.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vgsched_test_util.h"

static int load(const char *params)
{
	const char *ko = getenv("VGSCHED_KO");
	int fd, ret;

	if (!ko)
		return -ENOENT;
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

static int unload(void)
{
	return syscall(SYS_delete_module, "vgsched", O_NONBLOCK) ? -errno : 0;
}

/* True if the kernel log holds @needle (read from /dev/kmsg, non-blocking). */
static bool kmsg_contains(const char *needle)
{
	char rec[1024];
	bool found = false;
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	ssize_t n;

	if (fd < 0)
		return false;
	while ((n = read(fd, rec, sizeof(rec) - 1)) > 0 || (n < 0 && errno == EPIPE)) {
		if (n <= 0)
			continue;
		rec[n] = 0;
		if (strstr(rec, needle))
			found = true;
	}
	close(fd);
	return found;
}

TEST(load_create_render_node_and_unload)
{
	struct drm_vgsched_gpu_info info;
	int fd;

	ASSERT_EQ(0, load(""));
	fd = vgsched_open_render_node();
	ASSERT_GE(fd, 0);
	EXPECT_EQ(0, vgsched_query_gpu_info(fd, &info));
	/* An open file pins the module: rmmod is refused, nothing is torn down. */
	EXPECT_EQ(-EWOULDBLOCK, unload());
	EXPECT_EQ(0, vgsched_query_gpu_info(fd, &info));
	close(fd);
	ASSERT_EQ(0, unload());
	EXPECT_EQ(-1, vgsched_open_render_node());
}

TEST(parameters_reach_the_device)
{
	struct drm_vgsched_gpu_info info;
	int fd;

	ASSERT_EQ(0, load("modules=16 units_per_module=2 hw_slots=3 time_slice_us=500 "
			  "vgpr_blocks=4096 sgpr_blocks=32 wave_slots=8 shared_mem_blocks=64"));
	fd = vgsched_open_render_node();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, vgsched_query_gpu_info(fd, &info));
	EXPECT_EQ(16, info.modules);
	EXPECT_EQ(2, info.units_per_module);
	EXPECT_EQ(3, info.hw_slots);
	EXPECT_EQ(500, info.time_slice_us);
	EXPECT_EQ(4096, info.vgpr_blocks);
	EXPECT_EQ(32, info.sgpr_blocks);
	EXPECT_EQ(8, info.wave_slots);
	EXPECT_EQ(64, info.shared_mem_blocks);
	close(fd);
	ASSERT_EQ(0, unload());
}

TEST(invalid_parameters_fail_with_einval_and_a_log_line)
{
	static const struct { const char *param, *log; } bad[] = {
		{ "modules=0", "invalid parameter modules=0 (must be 1..=64)" },
		{ "modules=65", "invalid parameter modules=65" },
		{ "units_per_module=17", "invalid parameter units_per_module=17" },
		{ "hw_slots=0", "invalid parameter hw_slots=0" },
		{ "time_slice_us=99", "invalid parameter time_slice_us=99" },
		{ "vgpr_blocks=4097", "invalid parameter vgpr_blocks=4097" },
		{ "sgpr_blocks=0", "invalid parameter sgpr_blocks=0" },
		{ "wave_slots=65", "invalid parameter wave_slots=65" },
		{ "shared_mem_blocks=0", "invalid parameter shared_mem_blocks=0" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, load(bad[i].param)) TH_LOG("%s", bad[i].param);
		EXPECT_TRUE(kmsg_contains(bad[i].log)) TH_LOG("no log line '%s'", bad[i].log);
		EXPECT_EQ(-1, vgsched_open_render_node()) TH_LOG("%s left a device", bad[i].param);
	}
}

TEST_HARNESS_MAIN
