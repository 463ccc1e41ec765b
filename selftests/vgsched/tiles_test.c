// SPDX-License-Identifier: GPL-2.0
/*
 * Tiles and power-aware placement (uAPI 1.6):
 *  - a job asking for k tiles gets k idle tiles of one node, chosen by the
 *    placement rules (nodes with fewer than k idle tiles dropped, the
 *    nearly full nodes first, then the lowest power, a wholly idle node
 *    with its standby added), holds them until it ends, and its
 *    work-groups run only on their modules; a job that finds no node with
 *    k idle tiles waits; placement_policy=1 spreads instead;
 *  - results stay exact on every topology tried;
 *  - idle tiles go to the low-power state after tile_idle_delay_us, a node
 *    whose tiles all sleep drops its standby, and a job landing on a
 *    sleeping tile starts tile_wake_us later;
 *  - hwmon's energy counters only grow, equal the integral of the modeled
 *    power states (debugfs tiles) within rounding, and grow at the power
 *    hwmon reports;
 *  - more tiles than a node has, or a non-zero pad, are refused.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "vgsched_programs.h"

/* Waits up to 10 s for job @seqno of context @ctx to get its tiles; 0 or -1. */
static int job_tiles_wait(int fd, __u32 ctx, __u64 seqno, struct vg_tiles *out)
{
	for (int i = 0; i < 2000; i++) {
		if (!job_tiles(fd, ctx, seqno, out))
			return 0;
		usleep(5000);
	}
	return -1;
}

/* Whether every work-group of job @seqno ran on a module of @mask's tiles. */
static int groups_on_tiles(int fd, __u32 ctx, __u64 seqno, unsigned int mask,
			   unsigned int modules_per_tile, int *count)
{
	static struct vg_placement p[512];
	int n = vgsched_placements(vgsched_client_id(fd, ctx), ctx, p, 512);

	*count = 0;
	for (int i = 0; i < n; i++) {
		if (p[i].job != seqno)
			continue;
		(*count)++;
		if (!(mask >> (p[i].module / modules_per_tile) & 1))
			return 0;
	}
	return n >= 0;
}

/* A busy job of @groups one-wave work-groups of @ms on context @ctx asking for @k tiles. */
static int tile_job(int fd, struct busy_job *j, __u32 ctx, int ms, __u32 groups, __u32 k)
{
	int ret = busy_job_init(fd, j, ctx, ms, groups, 1, 4, 1);

	j->s.tiles = k;
	return ret ? ret : busy_submit(fd, j);
}

/*
 * Like tile_job, but the job's threads loop until the test ends it (by
 * destroying its context; the job timeout, the longest the module allows,
 * would after 60 s of modeled time, which a held job's cheap passes keep
 * close to the wall clock): a job that holds its tiles for as long as the
 * test needs, however slowly the guest interprets the others.
 * One thread a wave and four slow loads a pass, so holding costs little
 * interpretation: what the guest interprets goes to the other jobs.
 */
static int hold_job(int fd, struct busy_job *j, __u32 ctx, __u32 groups, __u32 k)
{
	int ret = hold_job_init(fd, j, ctx, groups, 1, 1, 1);

	if (ret)
		return ret;
	j->s.tiles = k;
	return busy_submit(fd, j);
}

FIXTURE(tiles) {
	int fd;
	__u32 ctx[4];
	struct drm_vgsched_tiles_info info;
	struct drm_vgsched_power_info power;
};

FIXTURE_VARIANT(tiles) {
	const char *params;
};

/*
 * Two nodes of four tiles over 8 modules: node 0 of types 0, 1, 0, 1
 * (100 W and 60 W), node 1 of type 0; standby 25 W and 20 W. Wholly idle,
 * node 0 orders by 320 + 25 = 345 W, node 1 by 400 + 20 = 420 W.
 */
FIXTURE_VARIANT_ADD(tiles, two_nodes) {
	.params = "modules=8 nodes=2 tiles_per_node=4 tile_type=0,1,0,1,0,0,0,0 "
		  "type_power_mw=100000,60000 node_standby_mw=25000,20000 "
		  "tile_idle_delay_us=30000 tile_wake_us=5000 tile_idle_mw=20000 tile_sleep_mw=2000 "
		  "job_timeout_ms=60000",
};

/* Four nodes of two tiles of two modules each. */
FIXTURE_VARIANT_ADD(tiles, four_nodes) {
	.params = "modules=16 nodes=4 tiles_per_node=2 tile_type=1,0,0,1,1,1,0,0 "
		  "type_power_mw=90000,50000 tile_idle_delay_us=30000 tile_wake_us=5000 "
		  "job_timeout_ms=60000",
};

FIXTURE_SETUP(tiles)
{
	struct drm_vgsched_gpu_info gpu;

	ASSERT_EQ(0, vgsched_module_unload());
	ASSERT_EQ(0, vgsched_module_load(variant->params));
	self->fd = vgsched_open_render_node();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, vgsched_query_gpu_info(self->fd, &gpu));
	ASSERT_GE(gpu.uapi_minor, 6);
	ASSERT_EQ(0, vgsched_dev_query(self->fd, DRM_VGSCHED_DEV_QUERY_TILES, &self->info,
				       sizeof(self->info)));
	ASSERT_EQ(0, vgsched_dev_query(self->fd, DRM_VGSCHED_DEV_QUERY_POWER, &self->power,
				       sizeof(self->power)));
	for (int i = 0; i < 4; i++) {
		self->ctx[i] = vgsched_ctx_create(self->fd, 8);
		ASSERT_NE(0, self->ctx[i]);
	}
}

FIXTURE_TEARDOWN(tiles)
{
	close(self->fd);
	EXPECT_EQ(0, vgsched_module_unload());
	EXPECT_EQ(0, vgsched_module_load(""));
}

/*
 * k = 3, then 1, then 2 on the two-node device; a job of 4 waits until a
 * node is wholly idle again. The first two jobs hold their tiles until the
 * test ends them, so the node they fill stays full whatever the timing.
 */
TEST_F(tiles, jobs_land_where_the_rules_say)
{
	struct busy_job a, b, c, d;
	struct vg_tiles r;
	int groups;

	if (self->info.nodes != 2)
		SKIP(return, "needs the two-node device");
	ASSERT_EQ(0, hold_job(self->fd, &a, self->ctx[0], 6, 3));
	ASSERT_EQ(0, job_tiles_wait(self->fd, self->ctx[0], 1, &r));
	/* Both wholly idle: node 0 (345 W) before node 1 (420 W); its two 60 W tiles and tile 0. */
	EXPECT_EQ(0, r.node);
	EXPECT_EQ(0xb, r.mask);
	EXPECT_STREQ("0:4:345000,1:4:420000", r.order);
	EXPECT_STREQ("power", r.policy);
	ASSERT_EQ(0, hold_job(self->fd, &b, self->ctx[1], 2, 1));
	ASSERT_EQ(0, job_tiles_wait(self->fd, self->ctx[1], 1, &r));
	/* One idle tile on node 0 against four on node 1: the nearly full node first. */
	EXPECT_EQ(0, r.node);
	EXPECT_EQ(0x4, r.mask);
	EXPECT_STREQ("0:1:100000,1:4:420000", r.order);
	ASSERT_EQ(0, tile_job(self->fd, &c, self->ctx[2], 100, 4, 2));
	ASSERT_EQ(0, job_tiles_wait(self->fd, self->ctx[2], 1, &r));
	/* Node 0 is full: dropped. */
	EXPECT_EQ(1, r.node);
	EXPECT_EQ(0x30, r.mask);
	EXPECT_STREQ("1:4:420000", r.order);
	ASSERT_EQ(0, tile_job(self->fd, &d, self->ctx[3], 20, 4, 4));
	ASSERT_EQ(0, wait_ok(self->fd, self->ctx[3], 1));
	ASSERT_EQ(0, job_tiles(self->fd, self->ctx[3], 1, &r));
	/* No node had four idle tiles until c ended: then node 1, while a and b still hold node 0. */
	EXPECT_EQ(1, r.node);
	EXPECT_EQ(0xf0, r.mask);
	ASSERT_EQ(0, wait_ok(self->fd, self->ctx[2], 1));
	ASSERT_TRUE(still_running(self->fd, self->ctx[0], 1));
	ASSERT_TRUE(still_running(self->fd, self->ctx[1], 1));
	struct busy_job *jobs[] = { &a, &b, &c, &d };
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(0, job_tiles(self->fd, self->ctx[i], 1, &r));
		EXPECT_TRUE(groups_on_tiles(self->fd, self->ctx[i], 1, r.mask,
					    self->info.modules_per_tile, &groups))
			TH_LOG("job %d ran a work-group off its tiles", i);
		/* Every group of a and b fits at once: all of them were placed. */
		EXPECT_EQ(jobs[i]->s.groups, groups);
		/* The held jobs end with their contexts; c and d are exact. */
		if (i < 2) {
			EXPECT_EQ(0, vgsched_ctx_destroy(self->fd, self->ctx[i]));
		} else {
			EXPECT_EQ(-1, busy_job_wrong(jobs[i]));
		}
		busy_job_fini(self->fd, jobs[i]);
	}
}

/* With placement_policy=1 two one-tile jobs go to different nodes; with power, to the same. */
TEST_F(tiles, spread_balances_where_power_fills)
{
	struct busy_job j[2];
	struct vg_tiles r[2];

	for (int policy = 0; policy < 2; policy++) {
		ASSERT_EQ(0, vgsched_param_write("placement_policy", policy ? "1" : "0"));
		for (int i = 0; i < 2; i++) {
			ASSERT_EQ(0, tile_job(self->fd, &j[i], self->ctx[i], 1000, 1, 1));
			ASSERT_EQ(0, job_tiles_wait(self->fd, self->ctx[i], j[i].s.seqno, &r[i]));
		}
		for (int i = 0; i < 2; i++) {
			ASSERT_EQ(0, wait_ok(self->fd, self->ctx[i], j[i].s.seqno));
			EXPECT_EQ(-1, busy_job_wrong(&j[i]));
			busy_job_fini(self->fd, &j[i]);
		}
		EXPECT_STREQ(policy ? "spread" : "power", r[1].policy);
		if (policy) {
			EXPECT_NE(r[0].node, r[1].node);
		} else {
			EXPECT_EQ(r[0].node, r[1].node);
		}
	}
	EXPECT_EQ(-EINVAL, vgsched_param_write("placement_policy", "2"));
	EXPECT_EQ(1, vgsched_param_read("placement_policy"));
}

/* Jobs of every size the device can take, from four contexts at once: exact results, on their tiles. */
TEST_F(tiles, results_stay_exact_and_on_their_tiles)
{
	unsigned int per_node = self->info.tiles_per_node;
	struct busy_job j[4][3];
	struct vg_tiles r;
	int groups;

	for (int round = 0; round < 3; round++)
		for (int c = 0; c < 4; c++) {
			__u32 k = 1 + (c + round) % per_node;

			ASSERT_EQ(0, tile_job(self->fd, &j[c][round], self->ctx[c], 10 + 5 * c,
					      k * self->info.modules_per_tile * 2, k));
		}
	for (int round = 0; round < 3; round++)
		for (int c = 0; c < 4; c++) {
			struct busy_job *b = &j[c][round];

			ASSERT_EQ(0, wait_ok(self->fd, self->ctx[c], b->s.seqno));
			EXPECT_EQ(-1, busy_job_wrong(b));
			ASSERT_EQ(0, job_tiles(self->fd, self->ctx[c], b->s.seqno, &r));
			EXPECT_EQ(b->s.tiles, __builtin_popcount(r.mask));
			EXPECT_EQ(0, r.mask & ~(((1u << per_node) - 1) << (r.node * per_node)))
				TH_LOG("tiles of another node");
			EXPECT_TRUE(groups_on_tiles(self->fd, self->ctx[c], b->s.seqno, r.mask,
						    self->info.modules_per_tile, &groups));
			EXPECT_EQ(b->s.groups, groups);
			busy_job_fini(self->fd, b);
		}
}

/*
 * Once the idle delay has passed every tile and node sleeps; a job landing
 * on a sleeping tile starts tile_wake_us later, and only its tile wakes.
 */
TEST_F(tiles, idle_tiles_sleep_and_waking_costs_the_latency)
{
	static struct vg_placement p[64];
	struct busy_job j;
	struct vg_tiles r;
	char tile[16];
	int n;

	usleep(2 * self->power.idle_delay_us);
	for (unsigned int t = 0; t < self->info.nodes * self->info.tiles_per_node; t++) {
		snprintf(tile, sizeof(tile), "tile %u", t);
		EXPECT_TRUE(tiles_in_state(tile, "asleep")) TH_LOG("%s is awake", tile);
	}
	EXPECT_TRUE(tiles_in_state("node 0", "asleep"));
	EXPECT_EQ(0, hwmon_number("power1_input") -
		     1000LL * self->power.sleep_mw * self->info.nodes * self->info.tiles_per_node)
		TH_LOG("a sleeping device draws its tiles' sleep power, no standby");
	ASSERT_EQ(0, tile_job(self->fd, &j, self->ctx[0], 500, 1, 1));
	ASSERT_EQ(0, job_tiles_wait(self->fd, self->ctx[0], 1, &r));
	/* While its job runs, the woken tile is busy, not asleep. */
	snprintf(tile, sizeof(tile), "tile %u", __builtin_ctz(r.mask));
	EXPECT_TRUE(tiles_in_state(tile, "busy"));
	EXPECT_FALSE(tiles_in_state(tile, "asleep"));
	ASSERT_EQ(0, wait_ok(self->fd, self->ctx[0], 1));
	EXPECT_EQ(1, r.woken);
	EXPECT_EQ(r.t + 1000ull * self->power.wake_us, r.start);
	n = vgsched_placements(vgsched_client_id(self->fd, self->ctx[0]), self->ctx[0], p, 64);
	ASSERT_EQ(1, n);
	EXPECT_GE(p[0].time_ns, r.start) TH_LOG("the work-group started before its tile woke");
	ASSERT_EQ(0, tiles_read());
	EXPECT_EQ(1, tiles_field(tile, "wakes"));
	EXPECT_EQ(-1, busy_job_wrong(&j));
	busy_job_fini(self->fd, &j);
}

/*
 * hwmon: labelled channels, readings root's only; the energy only grows and is, per tile, the
 * integral of the power of its states; the device's is the sum of its
 * nodes'; asleep, it grows at the power hwmon reports.
 */
TEST_F(tiles, hwmon_energy_is_the_integral_of_the_power_states)
{
	unsigned int tiles = self->info.nodes * self->info.tiles_per_node;
	long long last = -1, e0, e1, power, node_sum[16] = { 0 }, device_sum = 0;
	char dir[300], path[400], label[16] = "", tile[16], attr[32];
	struct busy_job j;
	__u64 t0, t1;
	FILE *f;

	ASSERT_EQ(0, hwmon_dir(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/energy%u_label", dir, 2 + self->info.nodes);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(label, sizeof(label), f));
	fclose(f);
	EXPECT_STREQ("tile0\n", label);
	/* Readings are root's only, labels everyone's. */
	struct stat sb;

	snprintf(path, sizeof(path), "%s/energy%u_input", dir, 2 + self->info.nodes);
	ASSERT_EQ(0, stat(path, &sb));
	EXPECT_EQ(0400, sb.st_mode & 0777);
	snprintf(path, sizeof(path), "%s/energy%u_label", dir, 2 + self->info.nodes);
	ASSERT_EQ(0, stat(path, &sb));
	EXPECT_EQ(0444, sb.st_mode & 0777);
	ASSERT_EQ(0, tile_job(self->fd, &j, self->ctx[0], 60, 2, 2));
	for (int i = 0; i < 20; i++) {
		long long e = hwmon_number("energy1_input");

		ASSERT_GE(e, 0) TH_LOG("energy1_input unreadable");
		EXPECT_GE(e, last) TH_LOG("the energy counter went back");
		last = e;
		usleep(5000);
	}
	ASSERT_EQ(0, wait_ok(self->fd, self->ctx[0], 1));
	busy_job_fini(self->fd, &j);
	ASSERT_EQ(0, tiles_read());
	for (unsigned int t = 0; t < tiles; t++) {
		long long busy, idle, asleep, energy, mw;

		snprintf(tile, sizeof(tile), "tile %u", t);
		busy = tiles_field(tile, "busy_ns");
		idle = tiles_field(tile, "idle_ns");
		asleep = tiles_field(tile, "asleep_ns");
		energy = tiles_field(tile, "energy_uj");
		mw = tiles_field(tile, "busy_mw");
		/* mW x ns = pJ; rounding to whole uJ. */
		long long pj = mw * busy + (long long)self->power.idle_mw * idle +
			       (long long)self->power.sleep_mw * asleep;
		EXPECT_LE(llabs(pj / 1000000 - energy), 1) TH_LOG("%s: %lld uJ, integral %lld", tile, energy, pj / 1000000);
		snprintf(attr, sizeof(attr), "energy%u_input", 2 + self->info.nodes + t);
		EXPECT_LE(energy, hwmon_number(attr));
		node_sum[t / self->info.tiles_per_node] += energy;
	}
	/* A node's energy is its standby's and its tiles'; the device's, its nodes'. */
	for (unsigned int n = 0; n < self->info.nodes; n++) {
		char node[16];

		snprintf(node, sizeof(node), "node %u", n);
		device_sum += tiles_field(node, "energy_uj");
		EXPECT_LE(llabs(tiles_field(node, "energy_uj") - tiles_field(node, "standby_uj") -
				node_sum[n]), self->info.tiles_per_node + 1);
	}
	EXPECT_LE(llabs(tiles_field("device", "energy_uj") - device_sum), self->info.nodes);
	/* Asleep, nothing changes state: energy grows at the power reported. */
	usleep(2 * self->power.idle_delay_us);
	power = hwmon_number("power1_input");
	t0 = vg_now_ns();
	e0 = hwmon_number("energy1_input");
	usleep(300000);
	e1 = hwmon_number("energy1_input");
	t1 = vg_now_ns();
	/* uW x ns / 1e9 = uJ; the reads lie within [t0, t1], 300 ms or more apart. */
	EXPECT_LE(e1 - e0, power * (long long)(t1 - t0) / 1000000000 + 1);
	EXPECT_GE(e1 - e0, power * 300000000LL / 1000000000 - 1);
	EXPECT_EQ(power, 1000LL * self->power.sleep_mw * tiles);
}

/*
 * A job holding every tile of a node gives them back when its context is
 * destroyed mid-run: a job of as many tiles on another context runs.
 */
TEST_F(tiles, a_destroyed_context_gives_its_tiles_back)
{
	unsigned int per_node = self->info.tiles_per_node, nodes = self->info.nodes;
	struct busy_job j[4];
	struct vg_tiles r;
	__u32 fresh;

	ASSERT_LE(nodes, 4);
	/* Every node busy with a job of all its tiles, held until destroyed. */
	for (unsigned int n = 0; n < nodes; n++) {
		ASSERT_EQ(0, hold_job(self->fd, &j[n], self->ctx[n], per_node, per_node));
		ASSERT_EQ(0, job_tiles_wait(self->fd, self->ctx[n], 1, &r));
	}
	for (unsigned int n = 0; n < nodes; n++) {
		ASSERT_EQ(0, vgsched_ctx_destroy(self->fd, self->ctx[n]));
		busy_job_fini(self->fd, &j[n]);
	}
	fresh = vgsched_ctx_create(self->fd, 8);
	ASSERT_NE(0, fresh);
	ASSERT_EQ(0, tile_job(self->fd, &j[0], fresh, 10, per_node, per_node));
	ASSERT_EQ(0, wait_ok(self->fd, fresh, 1));
	EXPECT_EQ(-1, busy_job_wrong(&j[0]));
	busy_job_fini(self->fd, &j[0]);
}

/* More tiles than a node has: E2BIG; pad: EINVAL; nothing queued. */
TEST_F(tiles, bad_tile_counts_are_refused)
{
	struct busy_job j;

	ASSERT_EQ(0, busy_job_init(self->fd, &j, self->ctx[0], 1, 1, 1, 4, 1));
	j.s.tiles = self->info.tiles_per_node + 1;
	EXPECT_EQ(-E2BIG, busy_submit(self->fd, &j));
	j.s.tiles = 33;
	EXPECT_EQ(-E2BIG, busy_submit(self->fd, &j));
	j.s.tiles = 1;
	j.s.pad = 1;
	EXPECT_EQ(-EINVAL, busy_submit(self->fd, &j));
	j.s.pad = 0;
	ASSERT_EQ(0, busy_submit(self->fd, &j));
	EXPECT_EQ(1, j.s.seqno) TH_LOG("a refused job took a sequence number");
	ASSERT_EQ(0, wait_ok(self->fd, self->ctx[0], 1));
	busy_job_fini(self->fd, &j);
}

/*
 * The default device has one tile, shared: two contexts' jobs run side by
 * side on it as before tiles, and a job of two tiles can never run.
 */
TEST(one_tile_is_shared)
{
	static struct vg_placement p[2][8];
	struct busy_job j[2];
	__u32 ctx[2];
	int fd;

	ASSERT_EQ(0, vgsched_module_unload());
	/* The default device, with a job timeout far past the held job's need. */
	ASSERT_EQ(0, vgsched_module_load("job_timeout_ms=60000"));
	fd = vgsched_open_render_node();
	ASSERT_GE(fd, 0);
	for (int i = 0; i < 2; i++) {
		ctx[i] = vgsched_ctx_create(fd, 8);
		ASSERT_NE(0, ctx[i]);
	}
	ASSERT_EQ(0, busy_job_init(fd, &j[0], ctx[0], 1, 1, 1, 4, 1));
	j[0].s.tiles = 2;
	EXPECT_EQ(-E2BIG, busy_submit(fd, &j[0]));
	busy_job_fini(fd, &j[0]);
	/* The first holds the tile until the test ends it; the second runs meanwhile. */
	ASSERT_EQ(0, hold_job(fd, &j[0], ctx[0], 1, 1));
	for (int tries = 0; vgsched_placements(vgsched_client_id(fd, ctx[0]), ctx[0], p[0], 8) < 1;
	     tries++) {
		ASSERT_LT(tries, 2000) TH_LOG("the first job never started");
		usleep(5000);
	}
	ASSERT_EQ(0, tile_job(fd, &j[1], ctx[1], 20, 1, 1));
	ASSERT_EQ(0, wait_ok(fd, ctx[1], 1));
	EXPECT_EQ(-1, busy_job_wrong(&j[1]));
	/* The second started and ended while the first still held the tile. */
	ASSERT_TRUE(still_running(fd, ctx[0], 1));
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(1, vgsched_placements(vgsched_client_id(fd, ctx[i]), ctx[i], p[i], 8));
		EXPECT_EQ(0, tile_records(vgsched_client_id(fd, ctx[i]), ctx[i], &(struct vg_tiles){}, 1))
			TH_LOG("one shared tile is no placement decision");
	}
	EXPECT_EQ(0, vgsched_ctx_destroy(fd, ctx[0]));
	for (int i = 0; i < 2; i++)
		busy_job_fini(fd, &j[i]);
	close(fd);
	EXPECT_EQ(0, vgsched_module_unload());
	EXPECT_EQ(0, vgsched_module_load(""));
}

/*
 * One slot, one node of two tiles: a low-priority job holding both tiles is
 * preempted by a high-priority job of one tile, which gets a tile once the
 * low one's work is off the device; both finish, results exact.
 */
TEST(a_preempted_job_gives_its_tiles_back)
{
	struct drm_vgsched_ctx_query q;
	struct busy_job low, high;
	__u32 lo, hi;
	int fd;

	ASSERT_EQ(0, vgsched_module_unload());
	ASSERT_EQ(0, vgsched_module_load("hw_slots=1 modules=2 nodes=1 tiles_per_node=2 job_timeout_ms=60000"));
	fd = vgsched_open_render_node();
	ASSERT_GE(fd, 0);
	lo = vgsched_ctx_create(fd, 12);
	hi = vgsched_ctx_create(fd, 2);
	ASSERT_NE(0, lo);
	ASSERT_NE(0, hi);
	ASSERT_EQ(0, tile_job(fd, &low, lo, 2000, 2, 2));
	/* The low job holds both tiles (its placement) before the high one comes. */
	ASSERT_EQ(0, job_tiles_wait(fd, lo, 1, &(struct vg_tiles){}));
	ASSERT_EQ(0, tile_job(fd, &high, hi, 20, 1, 1));
	ASSERT_EQ(0, wait_ok(fd, hi, 1));
	ASSERT_EQ(0, vgsched_ctx_query(fd, lo, &q));
	EXPECT_EQ(0, q.jobs_completed) TH_LOG("the low job ended first: nothing was preempted");
	EXPECT_GE(q.preemptions, 1);
	ASSERT_EQ(0, wait_ok(fd, lo, 1));
	EXPECT_EQ(-1, busy_job_wrong(&high));
	EXPECT_EQ(-1, busy_job_wrong(&low));
	busy_job_fini(fd, &high);
	busy_job_fini(fd, &low);
	close(fd);
	EXPECT_EQ(0, vgsched_module_unload());
	EXPECT_EQ(0, vgsched_module_load(""));
}

TEST_HARNESS_MAIN
