// SPDX-License-Identifier: GPL-2.0
/*
 * Pipelined context switching (uAPI 1.4), read from the stage log
 * (debugfs stages): a task is a context's turn on the device, phase 1 its
 * environment initialisation (ctx_init_us, ctx_state_kib), a sub-task one
 * job, phase 2 the job's device memory and uploads, then its waves, then
 * its clean-up.
 *  - pipelined, one slot: the next context's phase 1 overlaps the current
 *    task's execution (early phase 1); the next task's first phase 2
 *    starts at the progress point and still overlaps the current execution;
 *    a context's next job is prepared while one runs and the finished one
 *    is cleaned up alongside (prepare-ahead);
 *  - phase 1 stops at the first threshold and resumes after clean-up (the
 *    phase-1 threshold), and the contexts initialised ahead of their
 *    load go in their order up to it; a marked sub-task holds the next
 *    phase 2 back (the progress point);
 *  - two slots: the next task's first job starts at once when both jobs'
 *    memory fits under the second threshold, else waits for the current
 *    one (the execution gate, both branches);
 *  - sequential: nothing overlaps;
 *  - the run-time parameters refuse values out of range with EINVAL.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vgsched_programs.h"

#define MS 1000000ull
/* Phase 1 of every context: 20 ms and 256 KiB. */
#define INIT_NS (20 * MS)
#define COMMON "time_slice_us=1000000 ctx_init_us=20000 ctx_state_kib=256 vram_mib=16"
/*
 * How long a job runs where an assertion needs the engine to act while it
 * does: longer than a slowed guest stands still at a time (a host that
 * gives QEMU half a CPU in 100 ms periods stops it for up to 50 ms while
 * modeled time, the guest's clock, goes on).
 */
#define RUN_MS 100

/* Waits up to 5 s for a stage record. */
static __u64 wait_stage(__u64 client, unsigned int ctx, __u64 seqno, const char *event)
{
	__u64 t = 0;

	for (int i = 0; i < 500 && !(t = stage_at(client, ctx, seqno, event, 0)); i++)
		usleep(10000);
	return t;
}

/*
 * One context's queue of busy jobs. With one slot the current task runs
 * at priority 8 and the next at 9, so the next never takes the slot while
 * the current one has work: the switch comes when its work is done. With
 * two slots both run at 8, so both are loaded at once.
 */
struct app {
	__u32 ctx;
	__u64 client;
	struct busy_job job[4];
	__u64 seqno[4];
	int n;
};

/*
 * @n jobs of @ms each at priority @prio; job @big (or -1) also asks for a
 * 2 MiB scratch area.
 */
static int app_init(int fd, struct app *a, __u32 prio, int n, int ms, int big)
{
	memset(a, 0, sizeof(*a));
	a->ctx = vgsched_ctx_create(fd, prio);
	if (!a->ctx)
		return -1;
	a->client = vgsched_client_id(fd, a->ctx);
	a->n = n;
	for (int i = 0; i < n; i++) {
		if (busy_job_init(fd, &a->job[i], a->ctx, ms, 1, 1, 4, 1))
			return -1;
		if (i == big)
			a->job[i].s.scratch_bytes = 2 << 20;
	}
	return 0;
}

static int app_submit(int fd, struct app *a)
{
	for (int i = 0; i < a->n; i++) {
		if (busy_submit(fd, &a->job[i]))
			return -1;
		a->seqno[i] = a->job[i].s.seqno;
	}
	return 0;
}

static int app_wait(int fd, struct app *a)
{
	for (int i = 0; i < a->n; i++) {
		int status = wait_ok(fd, a->ctx, a->seqno[i]), wrong = busy_job_wrong(&a->job[i]);

		if (status || wrong != -1) {
			static char dbg[65536];

			fprintf(stderr, "# context %u job %d: status %d, first wrong word %d = %x\n",
				a->ctx, i, status, wrong, ((uint32_t *)a->job[i].out.map)[0]);
			vgsched_debugfs_read("stages", dbg, sizeof(dbg));
			fprintf(stderr, "%s", dbg);
			return -1;
		}
	}
	return 0;
}

static void app_fini(int fd, struct app *a)
{
	for (int i = 0; i < a->n; i++)
		busy_job_fini(fd, &a->job[i]);
}

/*
 * Submits @a's jobs, and once its first has started, those of the @n
 * applications in @next; waits for all and checks their results. 0 or -1.
 */
static int after_first_wave(int fd, struct app *a, struct app **next, int n)
{
	if (app_submit(fd, a) || !wait_stage(a->client, a->ctx, a->seqno[0], "first_wave"))
		return -1;
	for (int i = 0; i < n; i++)
		if (app_submit(fd, next[i]))
			return -1;
	if (app_wait(fd, a))
		return -1;
	for (int i = 0; i < n; i++)
		if (app_wait(fd, next[i]))
			return -1;
	return 0;
}

/* The time of @event of job @i of @a (i < 0: the context's own). */
static __u64 at(const struct app *a, int i, const char *event)
{
	return stage_at(a->client, a->ctx, i < 0 ? 0 : a->seqno[i], event, 0);
}

FIXTURE(pipe) {
	int fd;
};

FIXTURE_VARIANT(pipe) {
	const char *params;
	int sequential;
	int slots;
};

FIXTURE_VARIANT_ADD(pipe, pipelined) {
	.params = "hw_slots=1 " COMMON,
	.slots = 1,
};

FIXTURE_VARIANT_ADD(pipe, sequential) {
	.params = "hw_slots=1 pipeline_mode=1 " COMMON,
	.sequential = 1,
	.slots = 1,
};

FIXTURE_VARIANT_ADD(pipe, two_slots) {
	.params = "hw_slots=2 " COMMON,
	.slots = 2,
};

FIXTURE_SETUP(pipe)
{
	ASSERT_EQ(0, vgsched_module_unload());
	ASSERT_EQ(0, vgsched_module_load(variant->params));
	self->fd = vgsched_open_render_node();
	ASSERT_GE(self->fd, 0);
}

FIXTURE_TEARDOWN(pipe)
{
	close(self->fd);
	EXPECT_EQ(0, vgsched_module_unload());
	EXPECT_EQ(0, vgsched_module_load(""));
}

/*
 * A runs three jobs of RUN_MS; B submits one once A's first has started.
 * Pipelined: B's phase 1 runs while A executes (early phase 1), its first
 * phase 2 starts once fewer than 2 of A's jobs are unrun and before A's
 * last ends (the progress point), A's next job is prepared while one runs
 * and the finished one cleaned up alongside (prepare-ahead). Sequential:
 * each stage starts after the one before it ended.
 */
TEST_F(pipe, the_next_task_is_prepared_while_the_current_one_runs)
{
	struct app a, b;

	if (variant->slots != 1)
		SKIP(return, "one slot");
	ASSERT_EQ(0, app_init(self->fd, &a, 8, 3, RUN_MS, -1));
	ASSERT_EQ(0, app_init(self->fd, &b, 9, 1, 10, -1));
	ASSERT_EQ(0, after_first_wave(self->fd, &a, (struct app *[]){ &b }, 1));

	__u64 b_p1 = at(&b, -1, "phase1_start"), b_p1_end = at(&b, -1, "phase1_end");
	__u64 b_p2 = at(&b, 0, "phase2_start"), b_first = at(&b, 0, "first_wave");
	__u64 a_last = at(&a, 2, "last_wave"), a_end = at(&a, 2, "cleanup_end");

	ASSERT_NE(0, b_p1);
	ASSERT_NE(0, b_p2);
	ASSERT_NE(0, a_end);
	EXPECT_GE(b_p1_end - b_p1, INIT_NS);
	EXPECT_GE(b_p2, b_p1_end) TH_LOG("phase 2 before phase 1 ended");
	EXPECT_GE(b_first, b_p2);
	TH_LOG("switch gap (A's last wave to B's first): %llu us",
	       (unsigned long long)(b_first - a_last) / 1000);
	/* CTX_QUERY reports the same times. */
	struct drm_vgsched_ctx_query q;

	ASSERT_EQ(0, vgsched_ctx_query(self->fd, b.ctx, &q));
	EXPECT_EQ(b_p1, q.phase1_start_ns);
	EXPECT_EQ(b_p1_end, q.phase1_end_ns);
	EXPECT_EQ(b.seqno[0], q.last_job_seqno);
	EXPECT_EQ(b_p2, q.phase2_start_ns);
	EXPECT_EQ(b_first, q.first_wave_ns);
	EXPECT_EQ(at(&b, 0, "cleanup_end"), q.cleanup_end_ns);
	EXPECT_LE(q.first_wave_ns, q.last_wave_ns);
	if (variant->sequential) {
		for (int i = 1; i < 3; i++) {
			EXPECT_GE(at(&a, i, "phase2_start"), at(&a, i - 1, "cleanup_end"))
				TH_LOG("job %d prepared before job %d was cleaned up", i, i - 1);
		}
		EXPECT_GE(b_p1, a_end) TH_LOG("B's phase 1 overlapped A");
	} else {
		/* Early phase 1. */
		EXPECT_LT(b_p1, a_last) TH_LOG("B's phase 1 did not overlap A's execution");
		/*
		 * The progress point: after A's second job started (one left
		 * unrun), before A's end.
		 */
		EXPECT_GE(b_p2, at(&a, 1, "first_wave"));
		EXPECT_LT(b_p2, a_last) TH_LOG("B's phase 2 did not overlap A's execution");
		/*
		 * Prepare-ahead: the next job is prepared while one runs, and runs
		 * while the one before it is cleaned up.
		 */
		for (int i = 1; i < 3; i++) {
			EXPECT_LT(at(&a, i, "phase2_start"), at(&a, i - 1, "last_wave"));
			EXPECT_LE(at(&a, i, "first_wave"), at(&a, i - 1, "cleanup_start"));
		}
	}
	app_fini(self->fd, &a);
	app_fini(self->fd, &b);
}

/*
 * The first threshold at two state areas. A runs; B's phase 1 starts
 * ahead of its load (A's and B's: 512 KiB, the threshold); C's, the third,
 * waits until A's task is cleaned up, and then starts, still ahead of its
 * own load (while B runs). B at priority 9 and C at 10 run after A, in
 * that order.
 */
TEST_F(pipe, phase1_stops_at_the_first_threshold)
{
	struct app a, b, c;

	if (variant->sequential || variant->slots != 1)
		SKIP(return, "pipelined, one slot");
	ASSERT_EQ(0, vgsched_param_write("phase1_threshold_kib", "512"));
	ASSERT_EQ(0, app_init(self->fd, &a, 8, 2, RUN_MS, -1));
	ASSERT_EQ(0, app_init(self->fd, &b, 9, 1, RUN_MS, -1));
	ASSERT_EQ(0, app_init(self->fd, &c, 10, 1, 10, -1));
	ASSERT_EQ(0, after_first_wave(self->fd, &a, (struct app *[]){ &b, &c }, 2));

	__u64 a_done = at(&a, -1, "task_cleanup");
	__u64 b_p1 = at(&b, -1, "phase1_start"), c_p1 = at(&c, -1, "phase1_start");

	ASSERT_NE(0, a_done);
	ASSERT_NE(0, b_p1);
	ASSERT_NE(0, c_p1);
	EXPECT_LT(b_p1, at(&a, 1, "last_wave")) TH_LOG("under the threshold, B waited");
	EXPECT_GE(c_p1, a_done) TH_LOG("C's phase 1 started at the threshold");
	EXPECT_LT(c_p1, at(&b, 0, "last_wave")) TH_LOG("C's phase 1 did not resume ahead of it");
	app_fini(self->fd, &a);
	app_fini(self->fd, &b);
	app_fini(self->fd, &c);
}

/*
 * The first threshold at four state areas, five contexts waiting behind A
 * at levels 9 to 13: B, C and D (with A's, four areas) are initialised
 * ahead of their load while A runs, in their order (level first), and E
 * and F, past the threshold, only once A's task is cleaned up; all six
 * compute their results. However many of them one choice of the memory
 * work item initialises at once, none goes past the threshold or out of
 * turn.
 */
TEST_F(pipe, phase1_ahead_goes_in_order_up_to_the_threshold)
{
	struct app a, w[5];

	if (variant->sequential || variant->slots != 1)
		SKIP(return, "pipelined, one slot");
	ASSERT_EQ(0, vgsched_param_write("phase1_threshold_kib", "1024"));
	ASSERT_EQ(0, app_init(self->fd, &a, 8, 2, RUN_MS, -1));
	for (int i = 0; i < 5; i++)
		ASSERT_EQ(0, app_init(self->fd, &w[i], 9 + i, 1, 10, -1));
	/* All queued at once: one survey of the memory work item can see them. */
	ASSERT_EQ(0, app_submit(self->fd, &a));
	for (int i = 0; i < 5; i++)
		ASSERT_EQ(0, app_submit(self->fd, &w[i]));
	ASSERT_EQ(0, app_wait(self->fd, &a));
	for (int i = 0; i < 5; i++)
		ASSERT_EQ(0, app_wait(self->fd, &w[i]));

	__u64 a_done = at(&a, -1, "task_cleanup"), a_last = at(&a, 1, "last_wave");
	__u64 p1[5];

	ASSERT_NE(0, a_done);
	for (int i = 0; i < 5; i++) {
		p1[i] = at(&w[i], -1, "phase1_start");
		ASSERT_NE(0, p1[i]) TH_LOG("context %d was never initialised", i);
	}
	for (int i = 0; i < 3; i++) {
		EXPECT_LT(p1[i], a_last) TH_LOG("under the threshold, context %d waited", i);
	}
	for (int i = 1; i < 3; i++) {
		EXPECT_LE(p1[i - 1], p1[i]) TH_LOG("context %d initialised before %d", i, i - 1);
	}
	for (int i = 3; i < 5; i++) {
		EXPECT_GE(p1[i], a_done) TH_LOG("context %d initialised past the threshold", i);
	}
	app_fini(self->fd, &a);
	for (int i = 0; i < 5; i++)
		app_fini(self->fd, &w[i]);
}

/*
 * The second threshold at 1 MiB: A's last job needs 2 MiB of scratch, so
 * it is marked at the progress point and B's first phase 2 waits for it.
 */
TEST_F(pipe, a_marked_job_holds_the_next_phase2_back)
{
	struct app a, b;

	if (variant->sequential || variant->slots != 1)
		SKIP(return, "pipelined, one slot");
	ASSERT_EQ(0, vgsched_param_write("subtask_threshold_kib", "1024"));
	ASSERT_EQ(0, app_init(self->fd, &a, 8, 2, 40, 1));
	ASSERT_EQ(0, app_init(self->fd, &b, 9, 1, 10, -1));
	ASSERT_EQ(0, after_first_wave(self->fd, &a, (struct app *[]){ &b }, 1));
	EXPECT_GE(at(&b, 0, "phase2_start"), at(&a, 1, "last_wave"))
		TH_LOG("B's phase 2 started while the marked job ran");
	app_fini(self->fd, &a);
	app_fini(self->fd, &b);
}

/*
 * Two slots, second threshold 1 MiB: B's first job starts beside A's
 * running one when both fit (4 KiB + 4 KiB), and waits for A's to end when
 * they do not (B asks 2 MiB of scratch). A runs 200 ms, so B's 20 ms of
 * phase 1 and its preparation end well within it on a slow guest too.
 */
TEST_F(pipe, the_next_task_starts_beside_the_current_one_only_if_both_fit)
{
	struct app a, b, c;

	if (variant->slots != 2)
		SKIP(return, "two slots");
	ASSERT_EQ(0, vgsched_param_write("subtask_threshold_kib", "1024"));
	ASSERT_EQ(0, app_init(self->fd, &a, 8, 1, 200, -1));
	ASSERT_EQ(0, app_init(self->fd, &b, 8, 1, 10, -1));
	ASSERT_EQ(0, after_first_wave(self->fd, &a, (struct app *[]){ &b }, 1));
	EXPECT_LT(at(&b, 0, "first_wave"), at(&a, 0, "last_wave"))
		TH_LOG("both fit under the threshold, yet B waited");

	ASSERT_EQ(0, app_init(self->fd, &c, 8, 1, 10, 0));
	ASSERT_EQ(0, after_first_wave(self->fd, &a, (struct app *[]){ &c }, 1));
	EXPECT_GE(at(&c, 0, "first_wave"), at(&a, 0, "last_wave"))
		TH_LOG("above the threshold, yet C started beside A");
	app_fini(self->fd, &a);
	app_fini(self->fd, &b);
	app_fini(self->fd, &c);
}

/* Out of range: EINVAL, the value unchanged; in range: taken. */
TEST_F(pipe, run_time_parameters_are_checked)
{
	static const struct {
		const char *name, *bad;
	} cases[] = {
		{ "pipeline_mode", "2" },	   { "phase1_threshold_kib", "0" },
		{ "phase1_threshold_kib", "1048577" }, { "subtask_threshold_kib", "0" },
		{ "progress_point", "0" },	   { "progress_point", "65" },
		{ "progress_point", "x" },
	};

	if (variant->sequential || variant->slots != 1)
		SKIP(return, "once is enough");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		long long before = vgsched_param_read(cases[i].name);

		EXPECT_EQ(-EINVAL, vgsched_param_write(cases[i].name, cases[i].bad)) TH_LOG("%s", cases[i].name);
		EXPECT_EQ(before, vgsched_param_read(cases[i].name));
	}
	ASSERT_EQ(0, vgsched_param_write("progress_point", "5"));
	EXPECT_EQ(5, vgsched_param_read("progress_point"));
	ASSERT_EQ(0, vgsched_param_write("pipeline_mode", "1"));
	EXPECT_EQ(1, vgsched_param_read("pipeline_mode"));
}

TEST_HARNESS_MAIN
