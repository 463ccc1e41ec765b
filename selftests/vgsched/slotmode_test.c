// SPDX-License-Identifier: GPL-2.0
/*
 * The two ways residents share the device, and what a weight may count.
 *
 *  - in turn (slot_mode=1): the loaded contexts run one after another in
 *    the order they were loaded, each for its slice, and slot selection
 *    runs again once every one has had its turn. The placement log shows
 *    it: "round" lines between rounds, "load" and "turn" lines per
 *    context, and each context's work-groups placed only in its turn.
 *  - bounded history (weight_history=0, the default): a client that
 *    creates a fresh context every slice does not keep an older context of
 *    another client off the device, and a context that slept for long does
 *    not lock a busy one out when it wakes; under the unbounded history
 *    (weight_history=1) a context that never ran always wins and idle time
 *    counts, so both cases starve the other context (0 us measured).
 *
 * The module is reloaded for each test and the default one loaded after.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vgsched_programs.h"

#define CONTEXTS 3
#define LOG_BYTES (1 << 17)

/* One line of the placement log: a slot event, a round or a placement. */
struct log_line {
	char kind[16]; /* "round", "load", "turn", "preempt", "leave" or "place" */
	__u64 time_ns, client;
	unsigned int ctx;
};

/* Parses the placement log into @out; returns how many lines, or -errno. */
static int read_log(struct log_line *out, int max)
{
	char *buf = malloc(LOG_BYTES), *line, *save;
	int n = 0, ret;

	if (!buf)
		return -ENOMEM;
	ret = vgsched_debugfs_read("placements", buf, LOG_BYTES);
	if (ret < 0) {
		free(buf);
		return ret;
	}
	for (line = strtok_r(buf, "\n", &save); line && n < max; line = strtok_r(NULL, "\n", &save)) {
		struct log_line *l = &out[n];
		__u64 number;

		memset(l, 0, sizeof(*l));
		if (sscanf(line, "#%llu t=%llu client=%llu ctx=%u", &number, &l->time_ns, &l->client,
			   &l->ctx) == 4)
			strcpy(l->kind, "place");
		else if (sscanf(line, "#%llu t=%llu %15s client=%llu ctx=%u", &number, &l->time_ns,
				l->kind, &l->client, &l->ctx) == 5)
			;
		else if (sscanf(line, "#%llu t=%llu %15s", &number, &l->time_ns, l->kind) == 3 &&
			 !strcmp(l->kind, "round"))
			;
		else
			continue;
		n++;
	}
	free(buf);
	return n;
}

static int is(const struct log_line *l, const char *kind)
{
	return !strcmp(l->kind, kind);
}

FIXTURE(in_turn) {
	int fd;
};

FIXTURE_SETUP(in_turn)
{
	ASSERT_EQ(0, vgsched_module_unload());
	ASSERT_EQ(0, vgsched_module_load("hw_slots=2 time_slice_us=2000 preemption_us=200 slot_mode=1"));
	self->fd = vgsched_open_render_node();
	ASSERT_GE(self->fd, 0);
}

FIXTURE_TEARDOWN(in_turn)
{
	close(self->fd);
	EXPECT_EQ(0, vgsched_module_unload());
	EXPECT_EQ(0, vgsched_module_load(""));
}

TEST_F(in_turn, residents_run_one_after_another_in_load_order)
{
	struct busy_job jobs[CONTEXTS];
	struct log_line *log = calloc(4096, sizeof(*log));
	__u32 ctx[CONTEXTS];
	__u64 client;
	/* Per context: its position in load order, -1 while not resident. */
	long loaded_at[CONTEXTS];
	long loads = 0, turns = 0, rounds = 0, complete_rounds = 0, placements = 0;
	int turned[CONTEXTS] = { 0 }, ran_in_round[CONTEXTS] = { 0 };
	long last_turn_pos = -1;
	int holder = -1, n;

	ASSERT_NE(NULL, log);
	for (int i = 0; i < CONTEXTS; i++) {
		ctx[i] = vgsched_ctx_create(self->fd, 5);
		ASSERT_NE(0, ctx[i]);
		/* 4 waves each, so every turn places or restores work-groups. */
		ASSERT_EQ(0, busy_job_init(self->fd, &jobs[i], ctx[i], 80, 4, 1, 1, 1));
	}
	for (int i = 0; i < CONTEXTS; i++)
		ASSERT_EQ(0, busy_submit(self->fd, &jobs[i]));
	client = vgsched_client_id(self->fd, ctx[0]);
	/*
	 * Read the log every 20 ms until three rounds are complete and every
	 * context had two turns (or 600 ms passed): how long the first turns
	 * take depends on how fast the emulated guest runs.
	 */
	for (int tries = 0; tries < 30; tries++) {
		int done = 1;

		usleep(20 * 1000);
		n = read_log(log, 4096);
		ASSERT_GT(n, 0);
		loads = turns = rounds = complete_rounds = placements = 0;
		memset(turned, 0, sizeof(turned));
		memset(ran_in_round, 0, sizeof(ran_in_round));
		last_turn_pos = -1;
		holder = -1;
		for (int i = 0; i < CONTEXTS; i++)
			loaded_at[i] = -1;
		for (int k = 0; k < n; k++) {
			const struct log_line *l = &log[k];
			int c = -1;

			if (is(l, "round")) {
				/* A round is complete when every resident had its turn. */
				int all = rounds > 0;

				for (int i = 0; i < CONTEXTS; i++)
					if (loaded_at[i] >= 0 && !ran_in_round[i])
						all = 0;
				complete_rounds += all;
				rounds++;
				memset(ran_in_round, 0, sizeof(ran_in_round));
				last_turn_pos = -1;
				holder = -1;
				continue;
			}
			if (l->client != client)
				continue;
			for (int i = 0; i < CONTEXTS; i++)
				if (ctx[i] == l->ctx)
					c = i;
			ASSERT_GE(c, 0);
			if (is(l, "load")) {
				loaded_at[c] = loads++;
			} else if (is(l, "preempt") || is(l, "leave")) {
				loaded_at[c] = -1;
				if (holder == c)
					holder = -1;
			} else if (is(l, "turn")) {
				ASSERT_GE(loaded_at[c], 0) TH_LOG("context %d got a turn without a slot", c);
				ASSERT_EQ(0, ran_in_round[c]) TH_LOG("context %d had two turns in round %ld", c, rounds);
				/* Turns follow load order within a round. */
				ASSERT_GT(loaded_at[c], last_turn_pos) TH_LOG("turn of %d out of load order", c);
				last_turn_pos = loaded_at[c];
				ran_in_round[c] = 1;
				turned[c]++;
				turns++;
				holder = c;
			} else if (is(l, "place")) {
				/* Only the context whose turn it is places work. */
				ASSERT_EQ(holder, c) TH_LOG("context %d placed work in the turn of %d", c, holder);
				placements++;
			}
		}
		for (int i = 0; i < CONTEXTS; i++)
			done &= turned[i] >= 2;
		if (done && complete_rounds >= 3)
			break;
	}
	TH_LOG("%ld rounds (%ld complete), %ld turns, %ld loads, %ld placements", rounds,
	       complete_rounds, turns, loads, placements);
	for (int i = 0; i < CONTEXTS; i++) {
		struct drm_vgsched_ctx_query q;

		ASSERT_EQ(0, vgsched_ctx_query(self->fd, ctx[i], &q));
		TH_LOG("context %d: %d turns, slot %d, runtime %llu us, weight %llu/1000, slices %llu",
		       i, turned[i], q.slot, q.runtime_ns / 1000, q.weight_milli, q.slices);
	}
	ASSERT_GE(complete_rounds, 3);
	/* Three contexts, two slots: the one left over gets the next round. */
	for (int i = 0; i < CONTEXTS; i++) {
		ASSERT_GE(turned[i], 2) TH_LOG("context %d had %d turns", i, turned[i]);
	}
	for (int i = 0; i < CONTEXTS; i++) {
		ASSERT_EQ(0, wait_ok(self->fd, ctx[i], jobs[i].s.seqno));
		ASSERT_EQ(-1, busy_job_wrong(&jobs[i]));
		busy_job_fini(self->fd, &jobs[i]);
	}
	free(log);
}

FIXTURE(one_slot) {
	int fd;
};

FIXTURE_VARIANT(one_slot) {
	const char *params;
};

FIXTURE_VARIANT_ADD(one_slot, side_by_side) {
	.params = "hw_slots=1 time_slice_us=2000 preemption_us=200",
};

FIXTURE_VARIANT_ADD(one_slot, in_turn) {
	.params = "hw_slots=1 time_slice_us=2000 preemption_us=200 slot_mode=1",
};

FIXTURE_SETUP(one_slot)
{
	ASSERT_EQ(0, vgsched_module_unload());
	ASSERT_EQ(0, vgsched_module_load(variant->params));
	self->fd = vgsched_open_render_node();
	ASSERT_GE(self->fd, 0);
}

FIXTURE_TEARDOWN(one_slot)
{
	close(self->fd);
	EXPECT_EQ(0, vgsched_module_unload());
	EXPECT_EQ(0, vgsched_module_load(""));
}

/*
 * Another client creates a fresh context with work every slice (2 ms);
 * the older context of this client must still get GPU time.
 */
TEST_F(one_slot, fresh_context_every_slice_does_not_starve_an_older_one)
{
	struct busy_job old;
	struct drm_vgsched_ctx_query q;
	__u32 octx;
	__u64 before, after;
	pid_t abuser;
	int status;

	octx = vgsched_ctx_create(self->fd, 5);
	ASSERT_NE(0, octx);
	ASSERT_EQ(0, busy_job_init(self->fd, &old, octx, 2000, 1, 1, 1, 1));
	ASSERT_EQ(0, busy_submit(self->fd, &old));
	/* It runs alone for a while: it has a history. */
	usleep(20 * 1000);
	abuser = fork();
	ASSERT_GE(abuser, 0);
	if (abuser == 0) {
		int fd = vgsched_open_render_node();
		struct busy_job j;

		if (fd < 0)
			_exit(1);
		for (int i = 0; i < 150; i++) {
			__u32 c = vgsched_ctx_create(fd, 5);

			if (!c || busy_job_init(fd, &j, c, 50, 1, 1, 1, 1) || busy_submit(fd, &j))
				_exit(2);
			usleep(2000);
		}
		_exit(0);
	}
	/* Once the abuse has begun, measure over the next 200 ms. */
	usleep(20 * 1000);
	ASSERT_EQ(0, vgsched_ctx_query(self->fd, octx, &q));
	before = q.runtime_ns;
	usleep(200 * 1000);
	ASSERT_EQ(0, vgsched_ctx_query(self->fd, octx, &q));
	after = q.runtime_ns;
	kill(abuser, SIGKILL);
	ASSERT_EQ(abuser, waitpid(abuser, &status, 0));
	TH_LOG("the older context ran %llu us of 200 ms while fresh contexts arrived",
	       (after - before) / 1000);
	/* Bounded rounds: at least one slice of 2 ms in 200 ms. */
	ASSERT_GE(after - before, 2000000ULL);
	ASSERT_EQ(0, vgsched_ctx_destroy(self->fd, octx));
	busy_job_fini(self->fd, &old);
}

/*
 * A context that ran 10 ms and then slept for 1.5 s wakes with work while
 * another has run all along: the busy one must get GPU time again within a
 * few slices. Under the unbounded history the sleeper's weight (lifetime ÷
 * runtime, about 150 against about 1) would lock it out for about 1.5 s.
 */
TEST_F(one_slot, a_long_idle_context_shares_on_waking)
{
	struct busy_job warm, busy, late;
	struct drm_vgsched_ctx_query q;
	__u32 sleeper = vgsched_ctx_create(self->fd, 5), worker = vgsched_ctx_create(self->fd, 5);
	__u64 before, after;

	ASSERT_NE(0, sleeper);
	ASSERT_NE(0, worker);
	ASSERT_EQ(0, busy_job_init(self->fd, &warm, sleeper, 10, 1, 1, 1, 1));
	ASSERT_EQ(0, busy_submit(self->fd, &warm));
	ASSERT_EQ(0, wait_ok(self->fd, sleeper, warm.s.seqno));
	ASSERT_EQ(0, busy_job_init(self->fd, &busy, worker, 2500, 1, 1, 1, 1));
	ASSERT_EQ(0, busy_submit(self->fd, &busy));
	usleep(1500 * 1000);
	ASSERT_EQ(0, busy_job_init(self->fd, &late, sleeper, 1000, 1, 1, 1, 1));
	ASSERT_EQ(0, busy_submit(self->fd, &late));
	/* Once the sleeper has run, the worker must run again soon. */
	for (int tries = 0; tries < 1000; tries++) {
		ASSERT_EQ(0, vgsched_ctx_query(self->fd, sleeper, &q));
		if (q.runtime_ns > 12 * 1000 * 1000)
			break;
		usleep(1000);
	}
	ASSERT_EQ(0, vgsched_ctx_query(self->fd, worker, &q));
	before = q.runtime_ns;
	usleep(100 * 1000);
	ASSERT_EQ(0, vgsched_ctx_query(self->fd, worker, &q));
	after = q.runtime_ns;
	TH_LOG("the busy context ran %llu us of the 100 ms after the sleeper woke",
	       (after - before) / 1000);
	/* At least two 2 ms slices in 100 ms. */
	ASSERT_GE(after - before, 4000000ULL);
	ASSERT_TRUE(still_running(self->fd, sleeper, late.s.seqno)) TH_LOG("the sleeper's job ended too soon");
	ASSERT_EQ(0, vgsched_ctx_destroy(self->fd, sleeper));
	ASSERT_EQ(0, vgsched_ctx_destroy(self->fd, worker));
	busy_job_fini(self->fd, &warm);
	busy_job_fini(self->fd, &busy);
	busy_job_fini(self->fd, &late);
}

/*
 * Preemption at once: a priority-5 wave holding every vector register of
 * the only unit is stopped where it is when a priority-0 job arrives, so
 * the high job waits only for its state to be saved (about 2 ms), not for
 * the next preemption point (20 ms apart here); with preempt_at_once=0 it
 * waits for the point. Either way the stopped wave, which reads back what
 * it wrote, ends with exactly the count it was given.
 */
FIXTURE(preempt) {
	int fd;
};

FIXTURE_VARIANT(preempt) {
	const char *params;
	int at_once;
};

FIXTURE_VARIANT_ADD(preempt, at_once) {
	.params = "modules=1 units_per_module=1 preemption_us=20000",
	.at_once = 1,
};

FIXTURE_VARIANT_ADD(preempt, at_point) {
	.params = "modules=1 units_per_module=1 preemption_us=20000 preempt_at_once=0",
	.at_once = 0,
};

FIXTURE_SETUP(preempt)
{
	ASSERT_EQ(0, vgsched_module_unload());
	ASSERT_EQ(0, vgsched_module_load(variant->params));
	self->fd = vgsched_open_render_node();
	ASSERT_GE(self->fd, 0);
}

FIXTURE_TEARDOWN(preempt)
{
	close(self->fd);
	EXPECT_EQ(0, vgsched_module_unload());
	EXPECT_EQ(0, vgsched_module_load(""));
}

/* The preemption_us of both variants, in ns. */
#define POINT_NS 20000000ULL

TEST_F(preempt, a_higher_level_waits_for_the_save_not_the_point)
{
	const int loops = 300 * 1000 / VG_COUNT_LOOP_CYCLES;
	struct drm_vgsched_gpu_info info;
	struct log_line *log = calloc(4096, sizeof(*log));
	struct vg_buf prog, out;
	struct busy_job high;
	struct drm_vgsched_submit s;
	__u64 words[32], submitted = 0, preempted = 0, placed = 0, point;
	__u32 lctx, hctx, binding;
	unsigned int len;
	int n;

	ASSERT_NE(NULL, log);
	ASSERT_EQ(0, vgsched_query_gpu_info(self->fd, &info));
	lctx = vgsched_ctx_create(self->fd, 5);
	hctx = vgsched_ctx_create(self->fd, 0);
	ASSERT_NE(0, lctx);
	ASSERT_NE(0, hctx);
	/* One thread, every vector register of the unit, about 300 ms. */
	len = vg_prog_slow_count(words, loops);
	ASSERT_EQ(0, vg_program(self->fd, words, len, &prog));
	ASSERT_EQ(0, vg_buf_create(self->fd, 64, &out));
	memset(out.map, 0, 64);
	((uint32_t *)out.map)[0] = 7;
	binding = out.handle;
	s = vg_job(lctx, &prog, len, &binding, 1, 1, 1, 1);
	s.vgpr_blocks = info.vgpr_blocks;
	s.sgpr_blocks = 1;
	s.shared_mem_blocks = 0;
	ASSERT_EQ(0, vgsched_submit(self->fd, &s));
	usleep(50 * 1000);
	/* Just after a preemption point (CLOCK_MONOTONIC, the engine's clock). */
	while (vg_now_ns() % 20000000 > 2000000 || vg_now_ns() % 20000000 < 1000000)
		usleep(200);
	ASSERT_EQ(0, busy_job_init(self->fd, &high, hctx, 1, 1, 1, 1, 1));
	submitted = vg_now_ns();
	ASSERT_EQ(0, busy_submit(self->fd, &high));
	ASSERT_EQ(0, vgsched_wait(self->fd, hctx, high.s.seqno, 10 * VG_SECOND_NS, NULL));
	n = read_log(log, 4096);
	ASSERT_GT(n, 0);
	for (int i = 0; i < n; i++) {
		if (log[i].ctx == lctx && is(&log[i], "preempt") && log[i].time_ns >= submitted && !preempted)
			preempted = log[i].time_ns;
		if (log[i].ctx == hctx && is(&log[i], "place") && !placed)
			placed = log[i].time_ns;
	}
	ASSERT_NE(0, preempted);
	ASSERT_NE(0, placed);
	TH_LOG("decision to the high job's placement: %llu us (stopped at once: %lld waves)",
	       (placed - preempted) / 1000, vgsched_state_number("stopped at once "));
	/*
	 * Preemption points lie on multiples of preemption_us of the
	 * engine's clock (CLOCK_MONOTONIC). At the point, the high job is
	 * placed only once the low wave reached the first point after the
	 * decision; at once, before that point (the save takes about 2 ms;
	 * when the decision came later than 4 ms before the point, its
	 * timing proves nothing and only the count below is checked).
	 */
	point = (preempted / POINT_NS + 1) * POINT_NS;
	TH_LOG("decision %llu us before the next point", (point - preempted) / 1000);
	if (variant->at_once) {
		if (point - preempted > 4000000ULL)
			EXPECT_LT(placed, point);
		EXPECT_EQ(1, vgsched_state_number("stopped at once "));
	} else {
		EXPECT_GE(placed, point);
		EXPECT_EQ(0, vgsched_state_number("stopped at once "));
	}
	ASSERT_EQ(0, vgsched_wait(self->fd, lctx, s.seqno, 60 * VG_SECOND_NS, NULL));
	EXPECT_EQ(7 + loops, ((uint32_t *)out.map)[0]);
	busy_job_fini(self->fd, &high);
	vg_buf_destroy(self->fd, &prog);
	vg_buf_destroy(self->fd, &out);
	free(log);
}

TEST_HARNESS_MAIN
