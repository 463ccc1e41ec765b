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
 *  - slot selection as its source document writes it (slot_mode=1
 *    weight_history=1 slice_formula=1: residents in turn, unbounded
 *    weights, the literal slice t0 x wz / wc) on the document's worked
 *    examples with their 4-bit priority values: of 11 contexts (5 at
 *    value 2, 6 at value 4) and of 7 (2 at 1, 4 at 3, 1 at 9) only the
 *    highest level is ever a candidate, and of 3 contexts all at value 5
 *    all three are loaded and share the device in load order.
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
	long slice_us; /* a load's or a turn's slice_us=, or -1 */
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
		l->slice_us = strstr(line, " slice_us=") ? atol(strstr(line, " slice_us=") + 10) : -1;
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
	/* The killed abuser's file may still be being released. */
	EXPECT_EQ(0, vgsched_module_unload_wait());
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
 * the next preemption point (20 ms apart here: a chunk of the wave's
 * interpretation between two points stores fewer words than the engine's
 * undo log holds, so it can be taken back); with preempt_at_once=0 it
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
	.params = "modules=1 units_per_module=1 preemption_us=20000 time_slice_us=1000000",
	.at_once = 1,
};

FIXTURE_VARIANT_ADD(preempt, at_point) {
	.params = "modules=1 units_per_module=1 preemption_us=20000 time_slice_us=1000000 preempt_at_once=0",
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

/* The time of the first placement of a work-group of context @ctx in the log, or 0. */
static __u64 first_placement(struct log_line *log, unsigned int ctx)
{
	int n = read_log(log, 4096);

	for (int i = 0; i < n; i++)
		if (log[i].ctx == ctx && is(&log[i], "place"))
			return log[i].time_ns;
	return 0;
}

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
	/* The low wave is on the device (up to 10 s). */
	for (int tries = 0; !first_placement(log, lctx); tries++) {
		ASSERT_LT(tries, 10000);
		usleep(1000);
	}
	/* Just after a preemption point (CLOCK_MONOTONIC, the engine's clock). */
	while (vg_now_ns() % POINT_NS > 2000000 || vg_now_ns() % POINT_NS < 1000000)
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
	 * when the decision came later than 10 ms before the point, an
	 * engine step late by 8 ms would miss it, so its timing proves
	 * nothing and only the count below is checked). Stopped at once counts the wave
	 * however the engine's steps fell: due at a point before the
	 * decision, its chunk not begun, or under way, or ahead.
	 */
	point = (preempted / POINT_NS + 1) * POINT_NS;
	TH_LOG("decision %llu us before the next point", (point - preempted) / 1000);
	if (variant->at_once) {
		if (point - preempted > 10000000ULL)
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

/*
 * Slot selection as its source document writes it: residents in turn,
 * weights counting all time since creation, the literal slice
 * tc = t0 x wz / wc; L = 4 slots, t0 = 2 ms.
 *
 * Each example creates its contexts (in an interleaved order, so that
 * creation order alone does not explain the choice) and queues a short job
 * on each while a priority-0 context holds the device with an endless job;
 * destroying that context lets the first selection look at all of them at
 * once, as the document's pool does. The placement log then shows every
 * selection (a "round" line, its "load" lines, then the turns).
 */
#define DOC_SLOTS 4
#define DOC_T0_US 2000
#define DOC_MAX 11
#define DOC_LOG 4096

FIXTURE(as_written) {
	int fd;
};

FIXTURE_SETUP(as_written)
{
	ASSERT_EQ(0, vgsched_module_unload());
	ASSERT_EQ(0, vgsched_module_load("hw_slots=4 time_slice_us=2000 preemption_us=200 "
					 "slot_mode=1 weight_history=1 slice_formula=1"));
	self->fd = vgsched_open_render_node();
	ASSERT_GE(self->fd, 0);
}

FIXTURE_TEARDOWN(as_written)
{
	close(self->fd);
	EXPECT_EQ(0, vgsched_module_unload());
	EXPECT_EQ(0, vgsched_module_load(""));
}

/* One worked example: its contexts' priorities, in creation order. */
struct example {
	int n;
	__u32 prio[DOC_MAX];
	__u32 ctx[DOC_MAX];
	struct busy_job job[DOC_MAX];
	/* The log from the first selection of the example's contexts on. */
	struct log_line log[DOC_LOG];
	int lines;
};

/* Which of the example's contexts line @l is about, or -1. */
static int who(const struct example *ex, const struct log_line *l, __u64 client)
{
	if (l->client != client)
		return -1;
	for (int i = 0; i < ex->n; i++)
		if (ex->ctx[i] == l->ctx)
			return i;
	return -1;
}

/*
 * Runs @ex: every context gets a job of @ms modeled ms, queued behind the
 * priority-0 holder, which is then destroyed; waits for every job and
 * checks its result. Keeps in ex->log the lines from the "round" of the
 * first selection of an example context on. 0, or -1 with a message.
 */
static int run_example(struct __test_metadata *_metadata, int fd, struct example *ex, int ms)
{
	struct log_line *all = calloc(DOC_LOG, sizeof(*all));
	struct vg_buf prog, out;
	__u64 words[4], client;
	__u32 holder;
	int n, first = -1;

	if (!all)
		return -1;
	holder = vgsched_ctx_create(fd, 0);
	if (!holder || vg_program(fd, words, vg_prog_endless(words), &prog) ||
	    vg_buf_create(fd, 4096, &out))
		return -1;
	struct drm_vgsched_submit s = vg_job(holder, &prog, 1, &out.handle, 1, 1, 1, 1);

	if (vgsched_submit(fd, &s))
		return -1;
	for (int i = 0; i < ex->n; i++) {
		ex->ctx[i] = vgsched_ctx_create(fd, ex->prio[i]);
		if (!ex->ctx[i] || busy_job_init(fd, &ex->job[i], ex->ctx[i], ms, 1, 1, 1, 1))
			return -1;
	}
	for (int i = 0; i < ex->n; i++)
		if (busy_submit(fd, &ex->job[i]))
			return -1;
	if (!still_running(fd, holder, s.seqno)) {
		TH_LOG("the priority-0 holder is not running");
		return -1;
	}
	if (vgsched_ctx_destroy(fd, holder))
		return -1;
	for (int i = 0; i < ex->n; i++) {
		if (wait_ok(fd, ex->ctx[i], ex->job[i].s.seqno) || busy_job_wrong(&ex->job[i]) != -1) {
			TH_LOG("the job of context %d (priority %u) failed", i, ex->prio[i]);
			return -1;
		}
	}
	client = vgsched_client_id(fd, ex->ctx[0]);
	n = read_log(all, DOC_LOG);
	for (int k = 0; k < n && first < 0; k++)
		if (who(ex, &all[k], client) >= 0)
			first = k;
	/* The round line before the first load; older lines must remain. */
	while (first > 0 && !is(&all[first], "round"))
		first--;
	if (first <= 0 || !is(&all[first + 1], "load")) {
		TH_LOG("the log does not hold the first selection (%d lines)", n);
		return -1;
	}
	ex->lines = 0;
	/* Rounds and the example's lines, with ctx rewritten as its index. */
	for (int k = first; k < n; k++) {
		int i = who(ex, &all[k], client);

		if (!is(&all[k], "round") && i < 0)
			continue;
		ex->log[ex->lines] = all[k];
		ex->log[ex->lines++].ctx = i;
	}
	for (int i = 0; i < ex->n; i++)
		busy_job_fini(fd, &ex->job[i]);
	vg_buf_destroy(fd, &prog);
	vg_buf_destroy(fd, &out);
	free(all);
	return 0;
}

/*
 * Selection @r (0 for the first): writes the example indices it loaded to
 * @loaded and returns how many, or -1 if the log has no such selection. A
 * selection is a "round" line, the residents it evicts, then its loads;
 * the first turn ends it.
 */
static int selection(const struct example *ex, int r, int *loaded)
{
	int k = 0, count = 0;

	for (int rounds = -1; k < ex->lines; k++)
		if (is(&ex->log[k], "round") && ++rounds == r)
			break;
	if (k == ex->lines)
		return -1;
	for (k++; k < ex->lines && !is(&ex->log[k], "turn") && !is(&ex->log[k], "round"); k++)
		if (is(&ex->log[k], "load"))
			loaded[count++] = ex->log[k].ctx;
	return count;
}

/* Index in the log of the first (@last: last) line about a context of priority @prio. */
static int line_of(const struct example *ex, __u32 prio, int last)
{
	int found = -1;

	for (int k = 0; k < ex->lines; k++) {
		if (is(&ex->log[k], "round") || ex->prio[ex->log[k].ctx] != prio)
			continue;
		found = k;
		if (!last)
			break;
	}
	return found;
}

/*
 * The first round's turns: none of them is clamped, since equal weights
 * (none of the loaded contexts ran yet) give each n x t0 under the literal
 * formula, n the number loaded (proportional would give t0).
 */
static int first_turns_are_n_t0(struct __test_metadata *_metadata, const struct example *ex, int n)
{
	int turns = 0;

	for (int k = 1; k < ex->lines && !is(&ex->log[k], "round"); k++) {
		if (!is(&ex->log[k], "turn"))
			continue;
		if (ex->log[k].slice_us != (long)n * DOC_T0_US) {
			TH_LOG("a first-round turn of %ld us, not %d x t0", ex->log[k].slice_us, n);
			return -1;
		}
		turns++;
	}
	return turns == n ? 0 : -1;
}

/* The document's 11 contexts: 5 at the third priority (value 2), 6 at the fifth (value 4). */
TEST_F(as_written, eleven_contexts_only_the_third_priority_is_a_candidate)
{
	static const __u32 prio[] = { 4, 2, 4, 2, 4, 2, 4, 2, 4, 2, 4 };
	struct example *ex = calloc(1, sizeof(*ex));
	int loaded[DOC_MAX], got, fifth = 0;

	ASSERT_NE(NULL, ex);
	ex->n = 11;
	memcpy(ex->prio, prio, sizeof(prio));
	ASSERT_EQ(0, run_example(_metadata, self->fd, ex, 12));
	/*
	 * a = 5 candidates > L = 4: the four of the largest weight, all
	 * infinite (none ran), hence the oldest: contexts 1, 3, 5 and 7.
	 */
	got = selection(ex, 0, loaded);
	ASSERT_EQ(DOC_SLOTS, got);
	for (int i = 0; i < got; i++) {
		ASSERT_EQ(1 + 2 * i, loaded[i]) TH_LOG("first selection loaded context %d", loaded[i]);
	}
	ASSERT_EQ(0, first_turns_are_n_t0(_metadata, ex, DOC_SLOTS));
	/*
	 * Their 12 ms jobs outlast their 4 x t0 turns, so they still have
	 * work when the round is over; yet only the remaining a - L = 1 is a
	 * candidate: context 9 alone, three slots left free. (Reading the
	 * round's end as a new selection over all five would load four.)
	 */
	got = selection(ex, 1, loaded);
	ASSERT_EQ(1, got);
	ASSERT_EQ(9, loaded[0]);
	/*
	 * Then a new pass: all five have work and are candidates again, and
	 * four hold the slots: three loaded beside context 9 if it ranks among
	 * them (it ran least) and keeps its slot, four otherwise.
	 */
	got = selection(ex, 2, loaded);
	ASSERT_GE(got, DOC_SLOTS - 1);
	ASSERT_LE(got, DOC_SLOTS);
	for (int i = 0; i < got; i++) {
		ASSERT_EQ(2, ex->prio[loaded[i]]);
		ASSERT_NE(9, loaded[i]);
	}
	fifth = got == DOC_SLOTS - 1;
	TH_LOG("the second pass kept context 9 in its slot: %s", fifth ? "yes" : "no");
	/* Strict priority: the fifth level's contexts appear only once the third's are done. */
	ASSERT_GT(line_of(ex, 4, 0), line_of(ex, 2, 1));
	TH_LOG("%d log lines; the fifth level first at line %d, the third last at %d", ex->lines,
	       line_of(ex, 4, 0), line_of(ex, 2, 1));
	free(ex);
}

/* The document's 7 contexts: 2 at the second priority (1), 4 at the fourth (3), 1 at the tenth (9). */
TEST_F(as_written, seven_contexts_one_level_at_a_time)
{
	static const __u32 prio[] = { 3, 9, 1, 3, 3, 1, 3 };
	struct example *ex = calloc(1, sizeof(*ex));
	int loaded[DOC_MAX], got, r;

	ASSERT_NE(NULL, ex);
	ex->n = 7;
	memcpy(ex->prio, prio, sizeof(prio));
	ASSERT_EQ(0, run_example(_metadata, self->fd, ex, 12));
	/* a = 2 <= L: both loaded, and nothing else although two slots stay free. */
	got = selection(ex, 0, loaded);
	ASSERT_EQ(2, got);
	ASSERT_EQ(2, loaded[0]);
	ASSERT_EQ(5, loaded[1]);
	ASSERT_EQ(0, first_turns_are_n_t0(_metadata, ex, 2));
	/* Level 3 once level 1 is done; level 9 once level 3 is. */
	ASSERT_GT(line_of(ex, 3, 0), line_of(ex, 1, 1));
	ASSERT_GT(line_of(ex, 9, 0), line_of(ex, 3, 1));
	/* The selection that first takes level 3 loads all four (a = 4 <= L). */
	for (r = 1; (got = selection(ex, r, loaded)) >= 0; r++)
		if (got > 0 && ex->prio[loaded[0]] == 3)
			break;
	ASSERT_EQ(4, got);
	for (int i = 0; i < got; i++)
		ASSERT_EQ(3, ex->prio[loaded[i]]);
	free(ex);
}

/*
 * The document's 3 contexts, all at the sixth priority (value 5): all three
 * are candidates and all are loaded; they run one after another in load
 * order, 3 x t0 each in the first round (the formula as written, equal
 * weights), and every slice of the run lies in [t0 / 4, 8 x t0]. After the
 * first round the weights come from each context's measured history, so
 * how far they drift apart depends on the host's speed, and a slice may
 * reach a bound (the configuration keeps the clamp: design.rst's table).
 */
TEST_F(as_written, three_contexts_at_the_sixth_priority_share_in_turn)
{
	static const __u32 prio[] = { 5, 5, 5 };
	struct example *ex = calloc(1, sizeof(*ex));
	int loaded[DOC_MAX], got, turns[3] = { 0 };

	ASSERT_NE(NULL, ex);
	ex->n = 3;
	memcpy(ex->prio, prio, sizeof(prio));
	ASSERT_EQ(0, run_example(_metadata, self->fd, ex, 20));
	got = selection(ex, 0, loaded);
	ASSERT_EQ(3, got);
	for (int i = 0; i < got; i++)
		ASSERT_EQ(i, loaded[i]);
	ASSERT_EQ(0, first_turns_are_n_t0(_metadata, ex, 3));
	for (int k = 0; k < ex->lines; k++) {
		const struct log_line *l = &ex->log[k];

		if (l->slice_us < 0 || l->ctx >= 3)
			continue;
		ASSERT_GE(l->slice_us, DOC_T0_US / 4) TH_LOG("line %d: slice below the clamp", k);
		ASSERT_LE(l->slice_us, 8 * DOC_T0_US) TH_LOG("line %d: slice above the clamp", k);
		turns[l->ctx] += is(l, "turn");
	}
	TH_LOG("turns: %d, %d, %d", turns[0], turns[1], turns[2]);
	if (turns[0] < 2 || turns[1] < 2 || turns[2] < 2)
		for (int k = 0; k < ex->lines; k++)
			TH_LOG("%llu %s ctx %d slice %ld", (unsigned long long)ex->log[k].time_ns / 1000,
			       ex->log[k].kind, (int)ex->log[k].ctx, ex->log[k].slice_us);
	for (int i = 0; i < 3; i++)
		ASSERT_GE(turns[i], 2);
	free(ex);
}

TEST_HARNESS_MAIN
