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
 * The tiles: one node of one tile owning every module by default; nodes,
 * tiles, types and powers from the parameters otherwise.
 */
TEST(tile_topology_reaches_dev_query)
{
	struct drm_vgsched_power_info p;
	struct drm_vgsched_tiles_info t;
	int fd;

	ASSERT_EQ(0, vgsched_module_load(""));
	fd = vgsched_open_render_node();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, vgsched_dev_query(fd, DRM_VGSCHED_DEV_QUERY_TILES, &t, sizeof(t)));
	EXPECT_EQ(1, t.nodes);
	EXPECT_EQ(1, t.tiles_per_node);
	EXPECT_EQ(1, t.types);
	EXPECT_EQ(4, t.modules_per_tile);
	EXPECT_EQ(150000, t.type_power_mw[0]);
	EXPECT_EQ(25000, t.node_standby_mw[0]);
	ASSERT_EQ(0, vgsched_dev_query(fd, DRM_VGSCHED_DEV_QUERY_POWER, &p, sizeof(p)));
	EXPECT_EQ(30000, p.idle_mw);
	EXPECT_EQ(3000, p.sleep_mw);
	EXPECT_EQ(5000, p.idle_delay_us);
	EXPECT_EQ(500, p.wake_us);
	/* A uAPI 1.5 program's structure, the same size as before. */
	EXPECT_EQ(144, sizeof(t));
	close(fd);
	ASSERT_EQ(0, vgsched_module_unload());
	ASSERT_EQ(0, vgsched_module_load("modules=8 nodes=2 tiles_per_node=2 tile_type=0,1,1,1 "
					 "type_power_mw=100000,60000 node_standby_mw=25000,20000"));
	fd = vgsched_open_render_node();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, vgsched_dev_query(fd, DRM_VGSCHED_DEV_QUERY_TILES, &t, sizeof(t)));
	EXPECT_EQ(2, t.nodes);
	EXPECT_EQ(2, t.tiles_per_node);
	EXPECT_EQ(2, t.types);
	EXPECT_EQ(2, t.modules_per_tile);
	EXPECT_EQ(60000, t.type_power_mw[1]);
	EXPECT_EQ(20000, t.node_standby_mw[1]);
	EXPECT_EQ(0, t.tile_type[0]);
	EXPECT_EQ(1, t.tile_type[3]);
	close(fd);
	ASSERT_EQ(0, vgsched_module_unload());
}

/* The text of module parameter @name in sysfs, without its newline, in @buf. */
static int param_text(const char *name, char *buf, size_t size)
{
	char path[128];
	size_t n;
	int ret;

	snprintf(path, sizeof(path), "/sys/module/vgsched/parameters/%s", name);
	ret = vg_read_file(path, buf, size);
	n = ret ? 0 : strlen(buf);
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	return ret;
}

/*
 * The tile lists in sysfs show what the device uses: the defaults filled
 * in for those left out, the given ones as given.
 */
TEST(tile_lists_in_sysfs_show_the_values_in_force)
{
	static const struct { const char *load, *tile_type, *type_power_mw, *node_standby_mw; } cases[] = {
		{ "", "0", "150000", "25000" },
		{ "modules=8 nodes=2 tiles_per_node=2", "0,0,0,0", "150000", "25000,25000" },
		{ "modules=8 nodes=2 tiles_per_node=2 tile_type=0,1,1,1 type_power_mw=100000,60000 "
		  "node_standby_mw=25000,20000", "0,1,1,1", "100000,60000", "25000,20000" },
	};
	char text[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ASSERT_EQ(0, vgsched_module_load(cases[i].load)) TH_LOG("'%s'", cases[i].load);
		ASSERT_EQ(0, param_text("tile_type", text, sizeof(text)));
		EXPECT_STREQ(cases[i].tile_type, text) TH_LOG("'%s'", cases[i].load);
		ASSERT_EQ(0, param_text("type_power_mw", text, sizeof(text)));
		EXPECT_STREQ(cases[i].type_power_mw, text) TH_LOG("'%s'", cases[i].load);
		ASSERT_EQ(0, param_text("node_standby_mw", text, sizeof(text)));
		EXPECT_STREQ(cases[i].node_standby_mw, text) TH_LOG("'%s'", cases[i].load);
		ASSERT_EQ(0, vgsched_module_unload());
	}
}

/*
 * Device memory of vram_mib MiB, all of it free, handed out by the GPU
 * buddy allocator in 4 KiB chunks (debugfs vram), for the default and for
 * a small setting.
 */
TEST(device_memory_size_follows_vram_mib)
{
	static const struct {
		const char *params;
		unsigned long long bytes;
	} cases[] = { { "", 64ull << 20 }, { "vram_mib=8", 8ull << 20 } };
	char buf[256], want[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ASSERT_EQ(0, vgsched_module_load(cases[i].params));
		ASSERT_EQ(0, vgsched_debugfs_read("vram", buf, sizeof(buf)));
		snprintf(want, sizeof(want), "size %llu bytes\nfree %llu bytes\nchunk 4096 bytes\n",
			 cases[i].bytes, cases[i].bytes);
		EXPECT_EQ(0, strncmp(buf, want, strlen(want))) TH_LOG("%s: %s", cases[i].params, buf);
		ASSERT_EQ(0, vgsched_module_unload());
	}
}

/*
 * Jobs run right under the other dispatcher settings (short rotation
 * windows, eager splitting, a short power window, the other module choices
 * and finders): independent work-groups bigger than a module are split and
 * every thread's result is checked. What each setting decides is checked
 * by the two tests after this one.
 */
TEST(jobs_stay_right_under_every_dispatcher_setting)
{
	static const char *const params[] = {
		"module_choice=1 finder=1",
		"module_choice=2 finder=2 rotation_period_cycles=15 split_after_rounds=1 power_window_cycles=16",
	};
	__u64 words[16];

	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
		struct vg_buf prog, out;
		unsigned int len = vg_prog_busy_store(words, 50);
		int fd, status = 1;
		__u32 ctx;

		ASSERT_EQ(0, vgsched_module_load(params[i])) TH_LOG("%s", params[i]);
		fd = vgsched_open_render_node();
		ASSERT_GE(fd, 0);
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

/*
 * backend=1 puts the scheduler over the mock device, for measuring it alone:
 * jobs are accepted, placed and signalled as on the virtual GPU, with
 * status 0, but nothing is interpreted, so their buffer is never written;
 * the state file names the device. Loaded again without it, the same job
 * writes its buffer.
 */
TEST(mock_backend_schedules_jobs_that_compute_nothing)
{
	static const char *const params[] = { "backend=1", "backend=0" };
	static char state[1 << 16];
	__u64 words[16];

	for (int mock = 1; mock >= 0; mock--) {
		unsigned int len = vg_prog_busy_store(words, 50);
		struct vg_buf prog, out;
		int fd, status = 1;
		__u32 ctx;

		ASSERT_EQ(0, vgsched_module_load(params[1 - mock]));
		ASSERT_EQ(0, vgsched_debugfs_read("state", state, sizeof(state)));
		EXPECT_EQ(mock, strstr(state, "\ndevice: mock (backend=1)\n") != NULL);
		EXPECT_EQ(!mock, strstr(state, "\ndevice: virtual GPU\n") != NULL);
		fd = vgsched_open_render_node();
		ASSERT_GE(fd, 0);
		ctx = vgsched_ctx_create(fd, 8);
		ASSERT_NE(0, ctx);
		ASSERT_EQ(0, vg_program(fd, words, len, &prog));
		ASSERT_EQ(0, vg_buf_create(fd, 4096, &out));
		struct drm_vgsched_submit s = vg_job(ctx, &prog, len, &out.handle, 1, 4, 1, 32);

		for (int t = 0; t < 4 * 32; t++)
			((__u32 *)out.map)[t] = 0xdead;
		for (int j = 0; j < 8; j++) {
			ASSERT_EQ(0, vgsched_submit(fd, &s));
			ASSERT_EQ(0, vgsched_wait(fd, ctx, s.seqno, 60 * VG_SECOND_NS, &status));
			ASSERT_EQ(0, status);
		}
		for (int t = 0; t < 4 * 32; t++) {
			ASSERT_EQ(mock ? 0xdead : t, ((__u32 *)out.map)[t]) TH_LOG("thread %d", t);
		}
		vg_buf_destroy(fd, &prog);
		vg_buf_destroy(fd, &out);
		close(fd);
		ASSERT_EQ(0, vgsched_module_unload());
	}
}

/* Waits until @ctx of @fd has @want placements and copies them to @log; returns how many. */
static int placed(int fd, __u32 ctx, struct vg_placement *log, int max, int want)
{
	int n = -1;

	for (int tries = 0; tries < 2000; tries++) {
		n = vgsched_placements(vgsched_client_id(fd, ctx), ctx, log, max);
		if (n < 0 || n >= want)
			break;
		usleep(1000);
	}
	return n;
}

/* Shared-memory blocks and count of the finder test's work-groups. */
#define FINDER_SHARED 3
#define FINDER_GROUPS 16

/*
 * The resource finder decides which ranges a work-group gets. On one
 * module of 48 shared-memory blocks, 16 one-wave work-groups each needing
 * 3 blocks (and 1 vector register block) are submitted at once:
 *  - exact (finder=0): all 16 fit side by side, at blocks 0, 3, ..., 45;
 *  - grouped (finder=1, groups of 4 blocks): a need is rounded up to whole
 *    aligned groups, so only 12 fit at once, at 0, 4, ..., 44, and every
 *    shared and register range starts at a multiple of 4;
 *  - sampled (finder=2): a need is searched as the next power of two, 4
 *    blocks, at the lowest start: 15 fit at once, at 0, 3, ..., 42, and
 *    the 3 blocks left at 45 are never used.
 * Each finder's expectations fail under the other two.
 */
TEST(finder_setting_decides_the_ranges)
{
	struct vg_placement *log = calloc(64, sizeof(*log));

	ASSERT_NE(NULL, log);
	for (int finder = 0; finder <= 2; finder++) {
		char params[64];
		struct busy_job job;
		unsigned int at_once = finder == 0 ? 16 : finder == 1 ? 12 : 15;
		unsigned int step = finder == 1 ? 4 : FINDER_SHARED;
		__u32 seen = 0;
		int fd, n;
		__u32 ctx;

		snprintf(params, sizeof(params), "modules=1 finder=%d", finder);
		ASSERT_EQ(0, vgsched_module_load(params)) TH_LOG("%s", params);
		fd = vgsched_open_render_node();
		ASSERT_GE(fd, 0);
		ctx = vgsched_ctx_create(fd, 8);
		ASSERT_NE(0, ctx);
		ASSERT_EQ(0, busy_job_init(fd, &job, ctx, 200, FINDER_GROUPS, 1, 1, 1));
		job.s.shared_mem_blocks = FINDER_SHARED;
		ASSERT_EQ(0, busy_submit(fd, &job));
		ASSERT_EQ(0, wait_ok(fd, ctx, job.s.seqno));
		EXPECT_EQ(-1, busy_job_wrong(&job));
		n = placed(fd, ctx, log, 64, FINDER_GROUPS);
		ASSERT_EQ(FINDER_GROUPS, n) TH_LOG("finder=%d", finder);
		for (int i = 0; i < n; i++) {
			const struct vg_placement *p = &log[i];

			TH_LOG("finder=%d: group %u at t=%llu shared %u+%u vgpr %u:%u", finder, p->group,
			       (unsigned long long)p->time_ns, p->shared_start, p->shared_len,
			       p->wave[0].unit, p->wave[0].vgpr);
			EXPECT_EQ(0, p->shared_start % step) TH_LOG("finder=%d group %u", finder, p->group);
			if (finder == 1) {
				EXPECT_EQ(0, p->wave[0].vgpr % 4) TH_LOG("group %u", p->group);
				EXPECT_EQ(0, p->wave[0].sgpr % 4) TH_LOG("group %u", p->group);
			}
			if (finder == 2)
				EXPECT_GT(45, p->shared_start) TH_LOG("group %u", p->group);
			/* The first placements all went in at once, side by side. */
			if (i < (int)at_once)
				seen |= 1u << (p->shared_start / step);
		}
		EXPECT_EQ((1u << at_once) - 1, seen) TH_LOG("finder=%d: ranges of the first %u groups", finder,
							      at_once);
		busy_job_fini(fd, &job);
		close(fd);
		ASSERT_EQ(0, vgsched_module_unload());
	}
	free(log);
}

/*
 * One module-choice scenario on two modules: a job of 8 threads starts on
 * module 0, then a job of 4 threads in total with the given resources on
 * module 1 (less power, fewer free resources), and once the power windows
 * have filled a one-thread probe is placed. Returns the probe's module.
 */
static int choice_probe(struct __test_metadata *_metadata, __u32 r_waves, __u32 r_threads, __u32 r_vgpr,
			__u32 r_sgpr, __u32 r_shared)
{
	struct vg_placement log[4];
	struct busy_job p = {}, r = {}, t = {};
	int fd = vgsched_open_render_node(), module = -1;
	__u32 pctx, rctx, tctx;

	if (fd < 0)
		return -1;
	pctx = vgsched_ctx_create(fd, 8);
	rctx = vgsched_ctx_create(fd, 8);
	tctx = vgsched_ctx_create(fd, 8);
	if (!pctx || !rctx || !tctx)
		goto out;
	/* The same program throughout: power follows the thread count. */
	if (busy_job_init(fd, &p, pctx, 400, 1, 1, 8, 1) || busy_submit(fd, &p))
		goto out;
	EXPECT_EQ(1, placed(fd, pctx, log, 4, 1));
	EXPECT_EQ(0, log[0].module) TH_LOG("the first job goes to the lowest idle module");
	if (busy_job_init(fd, &r, rctx, 400, 1, r_waves, r_threads, r_vgpr))
		goto out;
	r.s.sgpr_blocks = r_sgpr;
	r.s.shared_mem_blocks = r_shared;
	if (busy_submit(fd, &r))
		goto out;
	EXPECT_EQ(1, placed(fd, rctx, log, 4, 1));
	EXPECT_EQ(1, log[0].module) TH_LOG("the second job goes to the idle module");
	/* Many power windows (1024 cycles, about 1 ms) later. */
	usleep(30 * 1000);
	EXPECT_TRUE(still_running(fd, pctx, p.s.seqno));
	EXPECT_TRUE(still_running(fd, rctx, r.s.seqno));
	if (busy_job_init(fd, &t, tctx, 1, 1, 1, 1, 1) || busy_submit(fd, &t))
		goto out;
	EXPECT_EQ(0, wait_ok(fd, tctx, t.s.seqno));
	EXPECT_EQ(-1, busy_job_wrong(&t));
	if (placed(fd, tctx, log, 4, 1) == 1)
		module = log[0].module;
out:
	/* Closing the file (mappings gone) cancels the two long jobs. */
	busy_job_fini(fd, &p);
	busy_job_fini(fd, &r);
	busy_job_fini(fd, &t);
	close(fd);
	return module;
}

/*
 * The module-choice setting decides the module. Module 0 runs 8 threads
 * with almost all its resources free; module 1 runs half that power and
 * holds either a moderate share of its resources (first scenario: its
 * normalised free score is about 0.8 of module 0's) or nearly all of them
 * (second: about 0.3). The probe goes to
 *  - recent power (module_choice=0): module 1 both times, the lower power;
 *  - free resources (module_choice=1): module 0 both times, more free;
 *  - both, equally weighted (module_choice=2): the smaller normalised
 *    power - free, 0.5 - 0.8 < 0 on module 1, then 0.5 - 0.3 > 0, so
 *    module 1 and then module 0 (module 0 scores 1 - 1 = 0 both times).
 * Each setting's pair of answers differs from the other two settings'.
 */
TEST(module_choice_setting_decides_the_module)
{
	static const int expected[3][2] = { { 1, 1 }, { 0, 0 }, { 1, 0 } };

	for (int choice = 0; choice <= 2; choice++) {
		char params[64];
		int got[2];

		snprintf(params, sizeof(params), "modules=2 hw_slots=4 module_choice=%d", choice);
		ASSERT_EQ(0, vgsched_module_load(params)) TH_LOG("%s", params);
		/* One wave of 4 threads: 100 of 128 vector, 40 of 64 scalar, 24 of 48 shared blocks. */
		got[0] = choice_probe(_metadata, 1, 4, 100, 40, 24);
		/* Four waves of 1 thread, one per unit: 120, 60 of each unit's registers, 44 shared. */
		got[1] = choice_probe(_metadata, 4, 1, 120, 60, 44);
		TH_LOG("module_choice=%d: probes on modules %d and %d", choice, got[0], got[1]);
		EXPECT_EQ(expected[choice][0], got[0]) TH_LOG("module_choice=%d, moderate use", choice);
		EXPECT_EQ(expected[choice][1], got[1]) TH_LOG("module_choice=%d, heavy use", choice);
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

/*
 * Unloading while the engine's other work items run: jobs over a 16 MiB
 * object (its upload keeps the memory work item busy) queue and finish
 * (the clean-up work item drops them) as the file closes and the module
 * goes, at a different moment each round. The module unloads, and the
 * run's log check finds no warning, use-after-free or leak: no work item
 * runs, or queues another, once the device is gone.
 */
TEST(rmmod_while_memory_and_clean_up_work_run)
{
	for (int round = 0; round < 4; round++) {
		struct vg_buf prog, out, big;
		__u64 words[16];
		unsigned int len = vg_prog_slow_store(words, 1);
		struct drm_vgsched_submit s;
		__u32 binding[2];
		int fd;
		__u32 ctx;

		ASSERT_EQ(0, vgsched_module_load(""));
		fd = vgsched_open_render_node();
		ASSERT_LE(0, fd);
		ctx = vgsched_ctx_create(fd, 8);
		ASSERT_NE(0, ctx);
		ASSERT_EQ(0, vg_program(fd, words, len, &prog));
		ASSERT_EQ(0, vg_buf_create(fd, 4096, &out));
		ASSERT_EQ(0, vg_buf_create(fd, 16 << 20, &big));
		binding[0] = out.handle;
		binding[1] = big.handle;
		for (int i = 0; i < 8; i++) {
			/* The CPU rewrote the big object: every job uploads it again. */
			((uint32_t *)big.map)[i * 1024] = i;
			s = vg_job(ctx, &prog, len, binding, 2, 1, 1, 64);
			s.vgpr_blocks = 1;
			s.sgpr_blocks = 1;
			s.shared_mem_blocks = 0;
			ASSERT_EQ(0, vgsched_submit(fd, &s)) TH_LOG("round %d job %d", round, i);
		}
		usleep(round * 15000);
		vg_buf_destroy(fd, &prog);
		vg_buf_destroy(fd, &out);
		vg_buf_destroy(fd, &big);
		close(fd);
		ASSERT_EQ(0, vgsched_module_unload()) TH_LOG("round %d", round);
	}
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
		{ "finder=4", "invalid parameter finder=4 (must be 0..=3)" },
		{ "rotation_period_cycles=14", "invalid parameter rotation_period_cycles=14" },
		{ "split_after_rounds=0", "invalid parameter split_after_rounds=0" },
		{ "power_window_cycles=15", "invalid parameter power_window_cycles=15" },
		{ "slice_formula=2", "invalid parameter slice_formula=2 (must be 0..=1)" },
		{ "preemption_us=99", "invalid parameter preemption_us=99 (must be 100..=1000000)" },
		{ "preempt_at_once=2", "invalid parameter preempt_at_once=2 (must be 0..=1)" },
		{ "backend=2", "invalid parameter backend=2 (must be 0..=1)" },
		{ "vram_mib=0", "invalid parameter vram_mib=0 (must be 1..=1024)" },
		{ "vram_mib=1025", "invalid parameter vram_mib=1025 (must be 1..=1024)" },
		{ "vram_bandwidth_mbps=0", "invalid parameter vram_bandwidth_mbps=0 (must be 1..=1000000)" },
		{ "ctx_state_kib=65537", "invalid parameter ctx_state_kib=65537 (must be 0..=65536)" },
		{ "ctx_init_us=10000001", "invalid parameter ctx_init_us=10000001 (must be 0..=10000000)" },
		{ "pipeline_mode=2", "invalid parameter pipeline_mode=2 (must be 0..=1)" },
		{ "phase1_threshold_kib=0", "invalid parameter phase1_threshold_kib=0 (must be 1..=1048576)" },
		{ "progress_point=65", "invalid parameter progress_point=65 (must be 1..=64)" },
		{ "nodes=0", "invalid parameter nodes=0 (must be 1..=16)" },
		{ "nodes=3", "invalid tiles: 3 tiles do not share 4 modules evenly" },
		{ "nodes=2 tile_type=0,2 type_power_mw=1,2",
		  "invalid parameter tile_type: tile 1 has type 2, which type_power_mw lacks" },
		{ "type_power_mw=0", "invalid parameter type_power_mw: entry 0 is 0 (must be 1..=10000000)" },
		{ "node_standby_mw=10000001",
		  "invalid parameter node_standby_mw: entry 0 is 10000001 (must be 1..=10000000)" },
		{ "node_standby_mw=5,6", "invalid parameter node_standby_mw: 2 entries, not 1" },
		{ "type_power_mw=40000 tile_idle_mw=40001",
		  "invalid parameter tile_idle_mw=40001 (must be 0..=40000)" },
		{ "tile_idle_mw=1000 tile_sleep_mw=1001",
		  "invalid parameter tile_sleep_mw=1001 (must be 0..=1000)" },
		{ "tile_idle_delay_us=10000001",
		  "invalid parameter tile_idle_delay_us=10000001 (must be 0..=10000000)" },
		{ "tile_wake_us=1000001", "invalid parameter tile_wake_us=1000001 (must be 0..=1000000)" },
		{ "placement_policy=2", "invalid parameter placement_policy=2 (must be 0..=1)" },
		{ "pool_contexts=0", "invalid parameter pool_contexts=0 (must be 1..=1000000)" },
		{ "pool_bo_mib=1048577", "invalid parameter pool_bo_mib=1048577 (must be 1..=1048576)" },
		{ "tile_enrolment=2", "invalid parameter tile_enrolment=2 (must be 0..=1)" },
		/* Past 32 bits: out of range as given, not a parser's ERANGE. */
		{ "nodes=4294967296", "invalid parameter nodes=4294967296 (must be 1..=16)" },
		{ "tile_wake_us=4294967296",
		  "invalid parameter tile_wake_us=4294967296 (must be 0..=1000000)" },
		{ "placement_policy=4294967296",
		  "invalid parameter placement_policy=4294967296 (must be 0..=1)" },
		{ "modules=4294967296", "invalid parameter modules=4294967296 (must be 1..=64)" },
		{ "preemption_us=4294967296",
		  "invalid parameter preemption_us=4294967296 (must be 100..=1000000)" },
		{ "finder=4294967296", "invalid parameter finder=4294967296 (must be 0..=3)" },
		{ "vram_mib=4294967296", "invalid parameter vram_mib=4294967296 (must be 1..=1024)" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, vgsched_module_load(bad[i].param)) TH_LOG("%s", bad[i].param);
		EXPECT_TRUE(kmsg_contains(bad[i].log)) TH_LOG("no log line '%s'", bad[i].log);
		EXPECT_EQ(-1, vgsched_open_render_node()) TH_LOG("%s left a device", bad[i].param);
	}
	/* The same for a write to a loaded module's parameter: refused, the value kept. */
	ASSERT_EQ(0, vgsched_module_load(""));
	EXPECT_EQ(-EINVAL, vgsched_param_write("placement_policy", "4294967296"));
	EXPECT_TRUE(kmsg_contains("invalid parameter placement_policy=4294967296 (must be 0..=1)"));
	EXPECT_EQ(0, vgsched_param_read("placement_policy"));
	ASSERT_EQ(0, vgsched_module_unload());
}

TEST_HARNESS_MAIN
