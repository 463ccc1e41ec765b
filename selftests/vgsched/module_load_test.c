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
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/sync_file.h>

#include "kselftest_harness.h"
#include "vgsched_programs.h"

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

	ASSERT_EQ(0, vgsched_module_load(""));
	fd = vgsched_open_render_node();
	ASSERT_GE(fd, 0);
	EXPECT_EQ(0, vgsched_query_gpu_info(fd, &info));
	/* An open file pins the module: rmmod is refused, nothing is torn down. */
	EXPECT_EQ(-EWOULDBLOCK, vgsched_module_unload());
	EXPECT_EQ(0, vgsched_query_gpu_info(fd, &info));
	close(fd);
	ASSERT_EQ(0, vgsched_module_unload());
	EXPECT_EQ(-1, vgsched_open_render_node());
}

TEST(parameters_reach_the_device)
{
	struct drm_vgsched_gpu_info info;
	int fd;

	ASSERT_EQ(0, vgsched_module_load("modules=16 units_per_module=2 hw_slots=3 time_slice_us=500 "
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
	EXPECT_EQ(1000, info.clock_khz);
	EXPECT_EQ(2000, info.job_timeout_ms);
	close(fd);
	ASSERT_EQ(0, vgsched_module_unload());
	ASSERT_EQ(0, vgsched_module_load("clock_khz=250000 job_timeout_ms=60000"));
	fd = vgsched_open_render_node();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, vgsched_query_gpu_info(fd, &info));
	EXPECT_EQ(250000, info.clock_khz);
	EXPECT_EQ(60000, info.job_timeout_ms);
	close(fd);
	ASSERT_EQ(0, vgsched_module_unload());
}

/*
 * Every other dispatcher setting (C9 choice, grouped or sampled finder,
 * short windows, eager splitting) and the literal slice formula with one
 * slot still run jobs right, and debugfs says which settings are in force.
 */
TEST(dispatcher_settings_take_effect_and_jobs_stay_right)
{
	static const struct { const char *params, *shown; } cases[] = {
		{ "module_choice=1 finder=1", "module choice FreeResources, finder Grouped { group: 4 }" },
		{ "module_choice=2 finder=2 rotation_period_cycles=15 split_after_rounds=1 power_window_cycles=16",
		  "module choice Mixed { power_weight: 1, free_weight: 1 }, finder Sampled, rotation period 15 cycles" },
		{ "slice_formula=1 preemption_us=500 hw_slots=1",
		  "slots: 0 of 1 held, formula literal, t0 10000 us (slices 2500..=80000 us), preemption point every 500 us" },
	};
	static char state[1 << 16];
	__u64 words[16];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vg_buf prog, out;
		unsigned int len = vg_prog_busy_store(words, 50);
		int fd, status = 1;
		__u32 ctx;

		ASSERT_EQ(0, vgsched_module_load(cases[i].params)) TH_LOG("%s", cases[i].params);
		fd = vgsched_open_render_node();
		ASSERT_GE(fd, 0);
		ASSERT_EQ(0, vgsched_debugfs_read("state", state, sizeof(state)));
		EXPECT_NE(NULL, strstr(state, cases[i].shown)) TH_LOG("%s", state);
		ctx = vgsched_ctx_create(fd, 8);
		ASSERT_NE(0, ctx);
		ASSERT_EQ(0, vg_program(fd, words, len, &prog));
		ASSERT_EQ(0, vg_buf_create(fd, 4096, &out));
		/* Independent groups bigger than a module: split at once. */
		struct drm_vgsched_submit s = vg_job(ctx, &prog, len, &out.handle, 1, 8, 64, 2);

		s.vgpr_blocks = 40;
		s.flags = DRM_VGSCHED_SUBMIT_INDEPENDENT;
		ASSERT_EQ(0, vgsched_submit(fd, &s));
		ASSERT_EQ(0, vgsched_wait(fd, ctx, s.seqno, 60 * VG_SECOND_NS, &status));
		ASSERT_EQ(0, status);
		for (int t = 0; t < 8 * 64 * 2; t++) {
			ASSERT_EQ(t, ((__u32 *)out.map)[t]);
		}
		vg_buf_destroy(fd, &prog);
		vg_buf_destroy(fd, &out);
		close(fd);
		ASSERT_EQ(0, vgsched_module_unload());
	}
}

TEST(rmmod_right_after_killing_a_process_mid_job)
{
	pid_t pid;

	ASSERT_EQ(0, vgsched_module_load("job_timeout_ms=60000"));
	pid = vg_spawn_endless_child();
	ASSERT_GT(pid, 0);
	/* The job would run for a minute; the process dies now. */
	usleep(100 * 1000);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	ASSERT_EQ(0, vgsched_module_unload());
}

TEST(rmmod_with_a_sync_file_of_a_cancelled_job_still_open)
{
	struct sync_file_info info = {};
	int fd, fence_fd;

	ASSERT_EQ(0, vgsched_module_load("job_timeout_ms=60000"));
	ASSERT_EQ(0, vg_submit_endless(&fd, &fence_fd));
	/* Closing the device cancels its jobs; the fence outlives the module. */
	close(fd);
	ASSERT_EQ(0, vgsched_module_unload());
	ASSERT_EQ(0, ioctl(fence_fd, SYNC_IOC_FILE_INFO, &info));
	EXPECT_EQ(-ECANCELED, info.status);
	close(fence_fd);
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
		{ "clock_khz=0", "invalid parameter clock_khz=0 (must be 1..=1000000)" },
		{ "job_timeout_ms=9", "invalid parameter job_timeout_ms=9 (must be 10..=60000)" },
		{ "module_choice=3", "invalid parameter module_choice=3 (must be 0..=2)" },
		{ "finder=3", "invalid parameter finder=3 (must be 0..=2)" },
		{ "rotation_period_cycles=14", "invalid parameter rotation_period_cycles=14" },
		{ "split_after_rounds=0", "invalid parameter split_after_rounds=0" },
		{ "power_window_cycles=15", "invalid parameter power_window_cycles=15" },
		{ "slice_formula=2", "invalid parameter slice_formula=2 (must be 0..=1)" },
		{ "preemption_us=99", "invalid parameter preemption_us=99 (must be 100..=1000000)" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, vgsched_module_load(bad[i].param)) TH_LOG("%s", bad[i].param);
		EXPECT_TRUE(kmsg_contains(bad[i].log)) TH_LOG("no log line '%s'", bad[i].log);
		EXPECT_EQ(-1, vgsched_open_render_node()) TH_LOG("%s left a device", bad[i].param);
	}
}

TEST_HARNESS_MAIN
