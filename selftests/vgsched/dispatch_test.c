// SPDX-License-Identifier: GPL-2.0
/*
 * The work-group dispatcher through the uAPI, on the default
 * device (4 modules x 4 units; 128 vector and 64 scalar register blocks
 * and 16 wave slots per unit; 48 shared blocks per module):
 *  - a big work-group that fits nowhere does not block smaller ones
 *    (work-group dispatch matches every channel against all modules);
 *  - the lowest priority level is served while higher-priority work keeps
 *    the device full (rotation windows of the priority bands);
 *  - a blocked independent work-group is split and runs in the gaps, a
 *    dependent one waits; an independent one larger than a module runs
 *    split, a dependent one is refused;
 *  - waves are spread evenly over units by the rotated split table (wave
 *    balancing),
 *    each unit's part of a work-group is one contiguous register range.
 * Every job's results are checked too, but the fillers' (they hold until
 * their context goes).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vgsched_programs.h"

/* Default topology (Documentation/admin-guide.rst). */
#define MODULES 4
#define UNITS 4
#define VGPR 128

#define MAX_RECORDS 512

FIXTURE(dispatch) {
	int fd;
	struct drm_vgsched_gpu_info info;
	struct vg_placement *log;
};

FIXTURE_SETUP(dispatch)
{
	/* The default device, with a job timeout past any filler's need. */
	ASSERT_EQ(0, vgsched_module_unload_wait());
	ASSERT_EQ(0, vgsched_module_load("job_timeout_ms=60000"));
	self->fd = vgsched_open_render_node();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, vgsched_query_gpu_info(self->fd, &self->info));
	ASSERT_EQ(MODULES, self->info.modules);
	ASSERT_EQ(UNITS, self->info.units_per_module);
	ASSERT_EQ(VGPR, self->info.vgpr_blocks);
	self->log = calloc(MAX_RECORDS, sizeof(*self->log));
	ASSERT_NE(NULL, self->log);
}

FIXTURE_TEARDOWN(dispatch)
{
	free(self->log);
	close(self->fd);
	EXPECT_EQ(0, vgsched_module_unload_wait());
	EXPECT_EQ(0, vgsched_module_load(""));
}

/*
 * A filler job: one 4-wave work-group per module, one wave per unit, each
 * holding until the test destroys its context (@ctx), so every unit of the
 * device holds a little for as long as the test needs, however slow the
 * guest. Checks from the placement log that it covers every module.
 */
static void start_filler(struct __test_metadata *_metadata, FIXTURE_DATA(dispatch) *self,
			 struct busy_job *filler, __u32 ctx)
{
	int modules_seen = 0, n;

	ASSERT_EQ(0, hold_job_init(self->fd, filler, ctx, MODULES, UNITS, 1, 4));
	ASSERT_EQ(0, busy_submit(self->fd, filler));
	for (int tries = 0; tries < 1000; tries++) {
		n = vgsched_placements(vgsched_client_id(self->fd, ctx), ctx, self->log, MAX_RECORDS);
		ASSERT_GE(n, 0);
		if (n == MODULES)
			break;
		usleep(1000);
	}
	ASSERT_EQ(MODULES, n);
	for (int i = 0; i < n; i++)
		modules_seen |= 1 << self->log[i].module;
	ASSERT_EQ((1 << MODULES) - 1, modules_seen) TH_LOG("filler did not cover every module");
}

TEST_F(dispatch, big_group_does_not_block_smaller_ones)
{
	__u32 fill_ctx = vgsched_ctx_create(self->fd, 8);
	__u32 big_ctx = vgsched_ctx_create(self->fd, 8);
	__u32 small_ctx = vgsched_ctx_create(self->fd, 8);
	struct busy_job filler, big, small;

	ASSERT_NE(0, fill_ctx);
	ASSERT_NE(0, big_ctx);
	ASSERT_NE(0, small_ctx);
	/* A little of every unit, until the filler's context goes. */
	start_filler(_metadata, self, &filler, fill_ctx);
	/* 16 waves per unit x 8 blocks: whole units, so it fits nowhere now. */
	ASSERT_EQ(0, busy_job_init(self->fd, &big, big_ctx, 1, 1, 64, 1, 8));
	big.s.group_priority = 0;
	ASSERT_EQ(0, busy_submit(self->fd, &big));
	/* Submitted after it, at the lowest priority: still goes first. */
	ASSERT_EQ(0, busy_job_init(self->fd, &small, small_ctx, 1, 2, 2, 4, 4));
	small.s.group_priority = DRM_VGSCHED_GROUP_PRIORITIES - 1;
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, busy_submit(self->fd, &small));
		ASSERT_EQ(0, wait_ok(self->fd, small_ctx, small.s.seqno));
		ASSERT_EQ(-1, busy_job_wrong(&small));
		/* The next job must see the CPU's write, not the device copy. */
		ASSERT_EQ(0, busy_job_clear_out(self->fd, &small));
	}
	ASSERT_TRUE(still_running(self->fd, fill_ctx, filler.s.seqno))
		TH_LOG("the filler ended too early for this test to mean anything");
	ASSERT_TRUE(still_running(self->fd, big_ctx, big.s.seqno));
	/* It can only start once the filler has left. */
	ASSERT_EQ(0, vgsched_ctx_destroy(self->fd, fill_ctx));
	ASSERT_EQ(0, wait_ok(self->fd, big_ctx, big.s.seqno));
	ASSERT_EQ(-1, busy_job_wrong(&big));
	busy_job_fini(self->fd, &filler);
	busy_job_fini(self->fd, &big);
	busy_job_fini(self->fd, &small);
}

/* Groups placed so far of job @seqno of context @ctx, from the state dump. */
static int groups_placed(__u64 client, __u32 ctx, __u64 seqno)
{
	static char state[1 << 16];
	char key[96], *at;
	unsigned int placed;

	if (vgsched_debugfs_read("state", state, sizeof(state)))
		return -1;
	snprintf(key, sizeof(key), "context client %llu id %u ", (unsigned long long)client, ctx);
	at = strstr(state, key);
	if (!at)
		return -2;	/* no longer queued: finished */
	snprintf(key, sizeof(key), "job seqno %llu: groups ", (unsigned long long)seqno);
	at = strstr(at, key);
	if (!at || sscanf(at + strlen(key), "%u/", &placed) != 1)
		return -1;
	return placed;
}

TEST_F(dispatch, lowest_priority_is_served_while_high_priority_work_keeps_coming)
{
	__u32 hi[2] = { vgsched_ctx_create(self->fd, 8), vgsched_ctx_create(self->fd, 8) };
	__u32 lo = vgsched_ctx_create(self->fd, 8);
	struct busy_job hi_job[2], lo_job;
	const __u32 groups = 300;
	int placed[2];

	ASSERT_NE(0, lo);
	/*
	 * Each high-priority work-group: 4 waves of 32 vector blocks, one per
	 * unit, 6 ms each; 16 of them fill the device, so 2 x 300 keep it
	 * full for about 225 ms of modeled time.
	 */
	for (int i = 0; i < 2; i++) {
		ASSERT_NE(0, hi[i]);
		ASSERT_EQ(0, busy_job_init(self->fd, &hi_job[i], hi[i], 6, groups, UNITS, 1, 32));
		hi_job[i].s.group_priority = 0;
		ASSERT_EQ(0, busy_submit(self->fd, &hi_job[i]));
	}
	ASSERT_EQ(0, busy_job_init(self->fd, &lo_job, lo, 1, 1, 1, 8, 32));
	lo_job.s.group_priority = DRM_VGSCHED_GROUP_PRIORITIES - 1;
	/* The device is full of high-priority work: 16 groups placed (up to 10 s). */
	for (int tries = 0;; tries++) {
		int p0 = groups_placed(vgsched_client_id(self->fd, hi[0]), hi[0], hi_job[0].s.seqno);
		int p1 = groups_placed(vgsched_client_id(self->fd, hi[1]), hi[1], hi_job[1].s.seqno);

		ASSERT_TRUE(p0 >= 0 && p1 >= 0) TH_LOG("a high-priority job ended before the device filled");
		if (p0 + p1 >= 16)
			break;
		ASSERT_LT(tries, 10000);
		usleep(1000);
	}
	__u64 submitted = vg_now_ns();

	ASSERT_EQ(0, busy_submit(self->fd, &lo_job));
	ASSERT_EQ(0, wait_ok(self->fd, lo, lo_job.s.seqno));
	for (int i = 0; i < 2; i++)
		placed[i] = groups_placed(vgsched_client_id(self->fd, hi[i]), hi[i], hi_job[i].s.seqno);
	ASSERT_EQ(-1, busy_job_wrong(&lo_job));
	/* Served before the high-priority channels ran out of work. */
	ASSERT_TRUE((placed[0] >= 0 && placed[0] < (int)groups) ||
		    (placed[1] >= 0 && placed[1] < (int)groups))
		TH_LOG("high-priority groups placed when the low one finished: %d, %d", placed[0], placed[1]);
	int n = vgsched_placements(vgsched_client_id(self->fd, lo), lo, self->log, MAX_RECORDS);

	ASSERT_EQ(1, n);
	ASSERT_EQ(DRM_VGSCHED_GROUP_PRIORITIES - 1, self->log[0].band);
	TH_LOG("low priority dispatched %.1f ms after submission (rotation period 15 ms); high-priority groups placed then: %d and %d of %u",
	       (self->log[0].time_ns - submitted) / 1e6, placed[0], placed[1], groups);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, wait_ok(self->fd, hi[i], hi_job[i].s.seqno));
		ASSERT_EQ(-1, busy_job_wrong(&hi_job[i]));
		busy_job_fini(self->fd, &hi_job[i]);
	}
	busy_job_fini(self->fd, &lo_job);
}

TEST_F(dispatch, blocked_independent_group_is_split_dependent_one_waits)
{
	__u32 fill_ctx = vgsched_ctx_create(self->fd, 8);
	__u32 ind_ctx = vgsched_ctx_create(self->fd, 8);
	__u32 dep_ctx = vgsched_ctx_create(self->fd, 8);
	struct busy_job filler, ind, dep;
	int n;

	start_filler(_metadata, self, &filler, fill_ctx);
	/* Whole units of registers: blocked while the filler holds a bit of each. */
	ASSERT_EQ(0, busy_job_init(self->fd, &dep, dep_ctx, 1, 1, 64, 2, 8));
	ASSERT_EQ(0, busy_submit(self->fd, &dep));
	ASSERT_EQ(0, busy_job_init(self->fd, &ind, ind_ctx, 1, 1, 64, 2, 8));
	ind.s.flags = DRM_VGSCHED_SUBMIT_INDEPENDENT;
	ASSERT_EQ(0, busy_submit(self->fd, &ind));

	ASSERT_EQ(0, wait_ok(self->fd, ind_ctx, ind.s.seqno));
	ASSERT_EQ(-1, busy_job_wrong(&ind));
	ASSERT_TRUE(still_running(self->fd, fill_ctx, filler.s.seqno))
		TH_LOG("the filler ended too early for this test to mean anything");
	ASSERT_TRUE(still_running(self->fd, dep_ctx, dep.s.seqno));
	/* It ran as 64 one-wave pieces of the lowest band. */
	n = vgsched_placements(vgsched_client_id(self->fd, ind_ctx), ind_ctx, self->log, MAX_RECORDS);
	ASSERT_EQ(64, n);
	for (int i = 0; i < n; i++) {
		ASSERT_EQ(1, self->log[i].waves);
		ASSERT_EQ(i, self->log[i].first_wave);
		ASSERT_EQ(DRM_VGSCHED_GROUP_PRIORITIES - 1, self->log[i].band);
	}

	/* It runs whole once the filler has left. */
	ASSERT_EQ(0, vgsched_ctx_destroy(self->fd, fill_ctx));
	ASSERT_EQ(0, wait_ok(self->fd, dep_ctx, dep.s.seqno));
	ASSERT_EQ(-1, busy_job_wrong(&dep));
	n = vgsched_placements(vgsched_client_id(self->fd, dep_ctx), dep_ctx, self->log, MAX_RECORDS);
	ASSERT_EQ(1, n);
	ASSERT_EQ(64, self->log[0].waves);
	busy_job_fini(self->fd, &filler);
	busy_job_fini(self->fd, &ind);
	busy_job_fini(self->fd, &dep);
}

TEST_F(dispatch, independent_group_larger_than_a_module_runs_split)
{
	__u32 ctx = vgsched_ctx_create(self->fd, 8);
	struct busy_job j;

	/* 64 waves x 64 blocks: four times what a module has. */
	ASSERT_EQ(0, busy_job_init(self->fd, &j, ctx, 1, 2, 64, 3, 64));
	ASSERT_EQ(-E2BIG, busy_submit(self->fd, &j));
	j.s.flags = DRM_VGSCHED_SUBMIT_INDEPENDENT;
	ASSERT_EQ(0, busy_submit(self->fd, &j));
	ASSERT_EQ(0, wait_ok(self->fd, ctx, j.s.seqno));
	ASSERT_EQ(-1, busy_job_wrong(&j));
	ASSERT_EQ(128, vgsched_placements(vgsched_client_id(self->fd, ctx), ctx, self->log, MAX_RECORDS));
	busy_job_fini(self->fd, &j);
}

TEST_F(dispatch, waves_are_balanced_over_units_by_the_rotated_split_table)
{
	__u32 ctx = vgsched_ctx_create(self->fd, 8);
	/* Waves per unit so far, and where the next work-group starts, per module. */
	int per_unit[MODULES][UNITS] = { 0 }, next_start[MODULES] = { 0 };
	struct busy_job j;
	int n;

	static char state[1 << 16];

	/* Earlier work moved the modules' pointers: start from where they are. */
	ASSERT_EQ(0, vgsched_debugfs_read("state", state, sizeof(state)));
	for (int m = 0; m < MODULES; m++) {
		char key[32], *at;

		snprintf(key, sizeof(key), "module %d: ", m);
		at = strstr(state, key);
		ASSERT_NE(NULL, at);
		at = strstr(at, "pointer ");
		ASSERT_NE(NULL, at);
		ASSERT_EQ(1, sscanf(at, "pointer %d", &next_start[m]));
	}
	/* 3 waves per group: never a multiple of the 4 units. */
	ASSERT_EQ(0, busy_job_init(self->fd, &j, ctx, 2, 40, 3, 2, 4));
	ASSERT_EQ(0, busy_submit(self->fd, &j));
	ASSERT_EQ(0, wait_ok(self->fd, ctx, j.s.seqno));
	ASSERT_EQ(-1, busy_job_wrong(&j));
	n = vgsched_placements(vgsched_client_id(self->fd, ctx), ctx, self->log, MAX_RECORDS);
	ASSERT_EQ(40, n);
	for (int i = 0; i < n; i++) {
		struct vg_placement *p = &self->log[i];
		int lo = 1 << 30, hi = 0;

		ASSERT_EQ(3, p->waves);
		/* Wave balancing: the combination starts where the module's pointer says. */
		ASSERT_EQ(next_start[p->module], p->wave[0].unit) TH_LOG("record %d", i);
		for (unsigned int w = 0; w < p->waves; w++) {
			/* Consecutive units, one wave each (3 < 4 units). */
			ASSERT_EQ((p->wave[0].unit + w) % UNITS, p->wave[w].unit);
			ASSERT_EQ(4, p->wave[w].vgpr_len);
			per_unit[p->module][p->wave[w].unit]++;
		}
		next_start[p->module] = (next_start[p->module] + 3) % UNITS;
		for (int u = 0; u < UNITS; u++) {
			lo = per_unit[p->module][u] < lo ? per_unit[p->module][u] : lo;
			hi = per_unit[p->module][u] > hi ? per_unit[p->module][u] : hi;
		}
		ASSERT_LE(hi - lo, 1) TH_LOG("module %u unbalanced after record %d", p->module, i);
	}
	busy_job_fini(self->fd, &j);
}

TEST_F(dispatch, a_unit_holds_one_contiguous_range_per_group)
{
	__u32 ctx = vgsched_ctx_create(self->fd, 8);
	struct busy_job j;
	int n;

	/* 8 waves over 4 units: two per unit, in adjacent ranges. */
	ASSERT_EQ(0, busy_job_init(self->fd, &j, ctx, 1, 4, 8, 1, 6));
	ASSERT_EQ(0, busy_submit(self->fd, &j));
	ASSERT_EQ(0, wait_ok(self->fd, ctx, j.s.seqno));
	ASSERT_EQ(-1, busy_job_wrong(&j));
	n = vgsched_placements(vgsched_client_id(self->fd, ctx), ctx, self->log, MAX_RECORDS);
	ASSERT_EQ(4, n);
	for (int i = 0; i < n; i++) {
		struct vg_placement *p = &self->log[i];

		for (unsigned int w = 0; w + 1 < p->waves; w += 2) {
			ASSERT_EQ(p->wave[w].unit, p->wave[w + 1].unit);
			ASSERT_EQ(p->wave[w].vgpr + 6, p->wave[w + 1].vgpr);
			ASSERT_EQ(p->wave[w].sgpr + 1, p->wave[w + 1].sgpr);
		}
	}
	busy_job_fini(self->fd, &j);
}

TEST_F(dispatch, bad_group_priority_is_refused)
{
	__u32 ctx = vgsched_ctx_create(self->fd, 8);
	struct drm_vgsched_ctx_query q = { .ctx_id = ctx };
	struct busy_job j;

	ASSERT_EQ(0, busy_job_init(self->fd, &j, ctx, 1, 1, 1, 1, 1));
	j.s.group_priority = DRM_VGSCHED_GROUP_PRIORITIES;
	ASSERT_EQ(-EINVAL, busy_submit(self->fd, &j));
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_VGSCHED_CTX_QUERY, &q));
	ASSERT_EQ(0, q.jobs_submitted);
	busy_job_fini(self->fd, &j);
}

TEST_HARNESS_MAIN
