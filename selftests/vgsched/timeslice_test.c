// SPDX-License-Identifier: GPL-2.0
/*
 * Hardware slots and time slices (SEEDS A) through the uAPI. The module is
 * reloaded with 2 slots, t0 = 2 ms and a preemption point every 200 us, so
 * a few contexts already contend and many slices pass in little time:
 *  - a priority-0 context takes over from running lower-priority ones,
 *    which make no progress until it is idle;
 *  - with more contexts than slots, every context of the level runs;
 *  - under the proportional formula contexts with continuous work get
 *    equal shares of GPU time (within 10 %) over at least 50 slices;
 *  - a program preempted more than 100 times gives exactly the result of
 *    an unpreempted run;
 *  - the slice formula switches at run time through debugfs.
 * The default module is loaded again after each test.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vgsched_programs.h"

#define PARAMS "hw_slots=2 time_slice_us=2000 preemption_us=200"
#define SLOTS 2

FIXTURE(slots) {
	int fd;
};

FIXTURE_SETUP(slots)
{
	struct drm_vgsched_gpu_info info;

	ASSERT_EQ(0, vgsched_module_unload());
	ASSERT_EQ(0, vgsched_module_load(PARAMS));
	self->fd = vgsched_open_render_node();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, vgsched_query_gpu_info(self->fd, &info));
	ASSERT_EQ(SLOTS, info.hw_slots);
}

FIXTURE_TEARDOWN(slots)
{
	close(self->fd);
	EXPECT_EQ(0, vgsched_module_unload());
	EXPECT_EQ(0, vgsched_module_load(""));
}

static struct drm_vgsched_ctx_query query(int fd, __u32 ctx)
{
	struct drm_vgsched_ctx_query q;

	if (vgsched_ctx_query(fd, ctx, &q))
		memset(&q, 0, sizeof(q));
	return q;
}

/* Sleeps @ms milliseconds of wall time (the modeled clock is the same). */
static void sleep_ms(int ms)
{
	usleep(ms * 1000);
}

/* A one-thread job of @ms modeled time on @ctx: its context is busy throughout. */
static int start_busy(int fd, struct busy_job *j, __u32 ctx, int ms)
{
	int ret = busy_job_init(fd, j, ctx, ms, 1, 1, 1, 1);

	return ret ? ret : busy_submit(fd, j);
}

TEST_F(slots, priority_zero_takes_over_and_lower_levels_wait)
{
	struct busy_job low[2], high;
	struct vg_placement *log = calloc(512, sizeof(*log));
	__u32 lctx[2], hctx;
	__u64 submitted, first = 0, done, before[2];
	int n;

	ASSERT_NE(NULL, log);
	for (int i = 0; i < 2; i++) {
		lctx[i] = vgsched_ctx_create(self->fd, 5);
		ASSERT_NE(0, lctx[i]);
		ASSERT_EQ(0, start_busy(self->fd, &low[i], lctx[i], 300));
	}
	sleep_ms(20);
	hctx = vgsched_ctx_create(self->fd, 0);
	ASSERT_NE(0, hctx);
	ASSERT_EQ(0, busy_job_init(self->fd, &high, hctx, 100, 1, 1, 1, 1));
	submitted = vg_now_ns();
	ASSERT_EQ(0, busy_submit(self->fd, &high));
	/* Once it has run, the lower level holds no slot and stands still. */
	for (int tries = 0; tries < 1000 && query(self->fd, hctx).runtime_ns == 0; tries++)
		sleep_ms(1);
	ASSERT_TRUE(still_running(self->fd, hctx, high.s.seqno));
	for (int i = 0; i < 2; i++) {
		struct drm_vgsched_ctx_query q = query(self->fd, lctx[i]);

		EXPECT_EQ(-1, q.slot);
		EXPECT_GE(q.preemptions, 1);
		before[i] = q.runtime_ns;
		EXPECT_GT(before[i], 0);
	}
	sleep_ms(30);
	ASSERT_TRUE(still_running(self->fd, hctx, high.s.seqno)) TH_LOG("the high job ended too soon to see");
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(before[i], query(self->fd, lctx[i]).runtime_ns) TH_LOG("low context %d ran", i);
	}
	ASSERT_EQ(0, wait_ok(self->fd, hctx, high.s.seqno));
	done = vg_now_ns();
	/* No work of the lower level was placed or restored while it ran. */
	n = vgsched_placements(vgsched_client_id(self->fd, hctx), hctx, log, 512);
	ASSERT_GE(n, 1);
	first = log[0].time_ns;
	n = vgsched_placements(vgsched_client_id(self->fd, lctx[0]), 0, log, 512);
	for (int i = 0; i < n; i++) {
		EXPECT_FALSE(log[i].ctx != hctx && log[i].time_ns > first && log[i].time_ns < done)
			TH_LOG("ctx %u placed at %llu during the high job", log[i].ctx,
			       (unsigned long long)log[i].time_ns);
	}
	TH_LOG("priority-0 job first dispatched %llu us after submission",
	       (unsigned long long)(first - submitted) / 1000);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, wait_ok(self->fd, lctx[i], low[i].s.seqno));
		EXPECT_EQ(-1, busy_job_wrong(&low[i]));
		busy_job_fini(self->fd, &low[i]);
	}
	EXPECT_EQ(-1, busy_job_wrong(&high));
	busy_job_fini(self->fd, &high);
	free(log);
}

TEST_F(slots, more_contexts_than_slots_all_progress)
{
	enum { N = 6 };
	struct busy_job job[N];
	__u32 ctx[N];
	int finished = -1;

	for (int i = 0; i < N; i++) {
		ctx[i] = vgsched_ctx_create(self->fd, 8);
		ASSERT_NE(0, ctx[i]);
		ASSERT_EQ(0, start_busy(self->fd, &job[i], ctx[i], 60));
	}
	/* Plain FIFO would leave 4 contexts without a turn until 2 finish. */
	while (finished < 0) {
		int held = 0;

		for (int i = 0; i < N; i++) {
			held += query(self->fd, ctx[i]).slot >= 0;
			if (!still_running(self->fd, ctx[i], job[i].s.seqno))
				finished = i;
		}
		ASSERT_LE(held, SLOTS);
		sleep_ms(2);
	}
	for (int i = 0; i < N; i++) {
		struct drm_vgsched_ctx_query q = query(self->fd, ctx[i]);

		EXPECT_GT(q.runtime_ns, 0) TH_LOG("context %d never ran before context %d finished", i, finished);
		EXPECT_GE(q.slices, 1);
	}
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(0, wait_ok(self->fd, ctx[i], job[i].s.seqno));
		EXPECT_EQ(-1, busy_job_wrong(&job[i]));
		busy_job_fini(self->fd, &job[i]);
	}
}

TEST_F(slots, proportional_shares_are_equal_over_fifty_slices)
{
	enum { N = 4, WINDOW_SLICES = 300 };
	struct busy_job job[N];
	struct drm_vgsched_ctx_query a[N], b[N];
	__u32 ctx[N];
	__u64 slices = 0, start_slices = 0, total = 0;

	for (int i = 0; i < N; i++) {
		ctx[i] = vgsched_ctx_create(self->fd, 8);
		ASSERT_NE(0, ctx[i]);
		ASSERT_EQ(0, start_busy(self->fd, &job[i], ctx[i], 800));
	}
	sleep_ms(20);
	for (int i = 0; i < N; i++) {
		a[i] = query(self->fd, ctx[i]);
		start_slices += a[i].slices;
	}
	while (slices < start_slices + WINDOW_SLICES) {
		sleep_ms(5);
		slices = 0;
		for (int i = 0; i < N; i++) {
			b[i] = query(self->fd, ctx[i]);
			slices += b[i].slices;
		}
	}
	for (int i = 0; i < N; i++) {
		ASSERT_TRUE(still_running(self->fd, ctx[i], job[i].s.seqno)) TH_LOG("window outlived job %d", i);
		total += b[i].runtime_ns - a[i].runtime_ns;
	}
	for (int i = 0; i < N; i++) {
		__u64 got = b[i].runtime_ns - a[i].runtime_ns;

		TH_LOG("context %d: %llu us of %llu us, %llu slices", i, (unsigned long long)got / 1000,
		       (unsigned long long)total / 1000, (unsigned long long)(b[i].slices - a[i].slices));
		EXPECT_GE(got * N * 10, total * 9);
		EXPECT_LE(got * N * 10, total * 11);
	}
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(0, wait_ok(self->fd, ctx[i], job[i].s.seqno));
		busy_job_fini(self->fd, &job[i]);
	}
}

#define I(op, rd, ra, rb, imm) vg_instr(DRM_VGSCHED_OP_##op, rd, ra, rb, imm)
#define MIX_MUL 1103515245u
/* Few threads: interpreting them must keep up with the modeled clock under TCG. */
#define MIX_THREADS 8
#define MIX_ADD 12345u

/*
 * Every thread keeps state in registers and memory over @loops iterations
 * (40 cycles each): x = x * MIX_MUL + MIX_ADD, acc ^= x >> 7, mem[id] += x;
 * then out[id] = acc. Bindings: mem, out.
 */
static unsigned int prog_mix(__u64 *p, int loops)
{
	unsigned int n = 0;

	p[n++] = I(SREG, 0, 0, 0, DRM_VGSCHED_SREG_GLOBAL_ID);
	p[n++] = I(MOV, 1, 0, 0, 0);
	p[n++] = I(MOVI, 2, 0, 0, 0);
	p[n++] = I(MOVI, 3, 0, 0, loops);
	p[n++] = I(MOVI, 4, 0, 0, (int)MIX_MUL);
	p[n++] = I(MOVI, 5, 0, 0, 7);
	p[n++] = I(MUL, 1, 1, 4, 0);				/* 6: loop */
	p[n++] = I(ADDI, 1, 1, 0, MIX_ADD);
	p[n++] = I(SHR, 6, 1, 5, 0);
	p[n++] = I(XOR, 2, 2, 6, 0);
	p[n++] = I(LD, 7, 0, 0, 0);
	p[n++] = I(ADD, 7, 7, 1, 0);
	p[n++] = I(ST, 7, 0, 0, 0);
	p[n++] = I(ADDI, 3, 3, 0, -1);
	p[n++] = I(BRNZ, 0, 3, 0, 6);
	p[n++] = I(ST, 2, 0, 1, 0);
	p[n++] = I(END, 0, 0, 0, 0);
	return n;
}

#undef I

/* Runs prog_mix on @ctx of @fd over one group of 2 waves of 4 threads into @mem/@out. */
static int run_mix(int fd, __u32 ctx, int loops, struct vg_buf *mem, struct vg_buf *out,
		   __u64 *seqno)
{
	__u64 words[32];
	unsigned int len = prog_mix(words, loops);
	struct vg_buf prog;
	__u32 bind[2] = { mem->handle, out->handle };
	struct drm_vgsched_submit s;
	int ret = vg_program(fd, words, len, &prog);

	if (ret)
		return ret;
	memset(mem->map, 0, 64 * 4);
	memset(out->map, 0, 64 * 4);
	s = vg_job(ctx, &prog, len, bind, 2, 1, 2, MIX_THREADS / 2);
	ret = vgsched_submit(fd, &s);
	*seqno = s.seqno;
	if (!ret)
		ret = wait_ok(fd, ctx, s.seqno);
	vg_buf_destroy(fd, &prog);
	return ret;
}

TEST_F(slots, preempted_over_a_hundred_times_the_result_is_unchanged)
{
	enum { LOOPS = 25000, MIX_MS = LOOPS * 40 / 1000 };
	struct vg_buf mem[2], out[2];
	struct busy_job rival[2];
	struct drm_vgsched_ctx_query q;
	__u32 ctx = vgsched_ctx_create(self->fd, 8), rctx[2];
	int rivals = vgsched_open_render_node();
	__u64 seqno;

	ASSERT_NE(0, ctx);
	ASSERT_GE(rivals, 0);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, vg_buf_create(self->fd, 64 * 4, &mem[i]));
		ASSERT_EQ(0, vg_buf_create(self->fd, 64 * 4, &out[i]));
	}
	/* Alone: it keeps its slot, slice after slice. */
	ASSERT_EQ(0, run_mix(self->fd, ctx, LOOPS, &mem[0], &out[0], &seqno));
	q = query(self->fd, ctx);
	EXPECT_EQ(0, q.preemptions);
	/* Against two rivals on two slots: it keeps losing its slot. */
	for (int i = 0; i < 2; i++) {
		rctx[i] = vgsched_ctx_create(rivals, 8);
		ASSERT_NE(0, rctx[i]);
		ASSERT_EQ(0, start_busy(rivals, &rival[i], rctx[i], 4 * MIX_MS));
	}
	ASSERT_EQ(0, run_mix(self->fd, ctx, LOOPS, &mem[1], &out[1], &seqno));
	q = query(self->fd, ctx);
	TH_LOG("preempted %llu times, %llu slices, %llu us saving and restoring",
	       (unsigned long long)q.preemptions, (unsigned long long)q.slices,
	       (unsigned long long)q.switch_ns / 1000);
	EXPECT_GT(q.preemptions, 100);
	EXPECT_GT(q.switch_ns, 0);
	for (int t = 0; t < MIX_THREADS; t++) {
		uint32_t x = t, acc = 0, sum = 0;

		for (int k = 0; k < LOOPS; k++) {
			x = x * MIX_MUL + MIX_ADD;
			acc ^= x >> 7;
			sum += x;
		}
		ASSERT_EQ(acc, ((uint32_t *)out[1].map)[t]) TH_LOG("thread %d", t);
		ASSERT_EQ(sum, ((uint32_t *)mem[1].map)[t]) TH_LOG("thread %d", t);
	}
	EXPECT_EQ(0, memcmp(out[0].map, out[1].map, 64 * 4));
	EXPECT_EQ(0, memcmp(mem[0].map, mem[1].map, 64 * 4));
	/* Closing the rivals' file mid-job cancels them, saved state and all. */
	for (int i = 0; i < 2; i++)
		busy_job_fini(rivals, &rival[i]);
	close(rivals);
	for (int i = 0; i < 2; i++) {
		vg_buf_destroy(self->fd, &mem[i]);
		vg_buf_destroy(self->fd, &out[i]);
	}
}

TEST_F(slots, slice_formula_switches_at_run_time)
{
	static char buf[1 << 16];
	const char *path = "/sys/kernel/debug/vgsched/slice_formula";
	int fd;

	ASSERT_EQ(0, vgsched_debugfs_read("slice_formula", buf, sizeof(buf)));
	EXPECT_STREQ("proportional\n", buf);
	fd = open(path, O_WRONLY);
	ASSERT_GE(fd, 0);
	EXPECT_EQ(-1, write(fd, "fair\n", 5));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(8, write(fd, "literal\n", 8));
	close(fd);
	ASSERT_EQ(0, vgsched_debugfs_read("slice_formula", buf, sizeof(buf)));
	EXPECT_STREQ("literal\n", buf);
	ASSERT_EQ(0, vgsched_debugfs_read("state", buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "slots: 0 of 2 held, formula literal, t0 2000 us")) TH_LOG("%s", buf);
	/* A context shows up in the contexts file with its priority. */
	__u32 ctx = vgsched_ctx_create(self->fd, 9);
	char line[128];

	ASSERT_NE(0, ctx);
	ASSERT_EQ(0, vgsched_debugfs_read("contexts", buf, sizeof(buf)));
	snprintf(line, sizeof(line), "\n%llu %u 9 ", (unsigned long long)vgsched_client_id(self->fd, ctx), ctx);
	EXPECT_NE(NULL, strstr(buf, line)) TH_LOG("%s", buf);
}

TEST_HARNESS_MAIN
