// SPDX-License-Identifier: GPL-2.0
/*
 * Slot selection and time slices through the uAPI. The module is
 * reloaded with 2 slots, t0 = 2 ms and a preemption point every 200 us, so
 * a few contexts already contend and many slices pass in little time:
 *  - a priority-0 context takes over from running lower-priority ones,
 *    which make no progress until it is idle;
 *  - with more contexts than slots, every context of the level runs;
 *  - a program preempted dozens of times gives exactly the result of
 *    an unpreempted run;
 *  - under each slice formula (module parameter slice_formula), two
 *    contexts of unequal weights get the slices that formula gives them.
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
		/*
		 * Runtime is counted as the device hands a chunk back: the
		 * chunk a low context was cut in may come back after the high
		 * job's first one. Once two readings 5 ms apart agree, it has.
		 */
		before[i] = q.runtime_ns;
		for (int tries = 0; tries < 200; tries++) {
			sleep_ms(5);
			q = query(self->fd, lctx[i]);
			if (q.runtime_ns == before[i])
				break;
			before[i] = q.runtime_ns;
		}
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
		/*
		 * The state line's count is taken under the engine lock; six
		 * queries one after another could see a slot change hands
		 * between two of them and count it twice.
		 */
		long long held = vgsched_state_number("slots: ");

		for (int i = 0; i < N; i++)
			if (!still_running(self->fd, ctx[i], job[i].s.seqno))
				finished = i;
		ASSERT_GE(held, 0);
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

/*
 * The slice formula in force, chosen by reloading the module with
 * slice_formula=0 (proportional) or 1 (literal). Two contexts share two
 * slots, so both hold a slot throughout and each gets a fresh slice
 * whenever its own ends: the GPU time each receives per slice (runtime
 * over slices, between two of its slice boundaries) is the slice the
 * formula gives it for the pair's weights (rust/vgsched-core/src/slice.rs,
 * clamped to t0 / 4 .. 8 x t0 by slots.rs), plus the delay of the
 * engine's wake-up at the slice's end. One context ran for a few ms and
 * then idled for seconds, so its weight, lifetime / runtime, is several
 * times that of the other, which has run since it was created:
 *  - proportional, tc = t0 x n x wc / wz: the heavier context gets the
 *    longer slice, by about the ratio of the weights;
 *  - literal, tc = t0 x wz / wc: the lighter one gets the longer slice.
 * The expected ratio is computed from the weights CTX_QUERY reports at
 * both ends of the window; the test first checks that neither equal
 * slices (a round robin) nor the other formula would fall within its
 * bounds, so it fails whenever the formula in force is not the one
 * configured.
 */
#define FORMULA_T0_US 10000
/* How late a slice may end: the engine acts at its next wake-up (4 ms ticks in the guest). */
#define FORMULA_LATE_US 8000

FIXTURE(formula) {
	int fd;
};

FIXTURE_VARIANT(formula) {
	int slice_formula;
};

FIXTURE_VARIANT_ADD(formula, proportional) {
	.slice_formula = 0,
};

FIXTURE_VARIANT_ADD(formula, literal) {
	.slice_formula = 1,
};

FIXTURE_SETUP(formula)
{
	char params[128];

	/* The unbounded history: idle time counts (weight_history=1). */
	snprintf(params, sizeof(params),
		 "hw_slots=2 time_slice_us=%d preemption_us=200 slice_formula=%d weight_history=1",
		 FORMULA_T0_US, variant->slice_formula);
	ASSERT_EQ(0, vgsched_module_unload());
	ASSERT_EQ(0, vgsched_module_load(params)) TH_LOG("%s", params);
	self->fd = vgsched_open_render_node();
	ASSERT_GE(self->fd, 0);
}

FIXTURE_TEARDOWN(formula)
{
	close(self->fd);
	EXPECT_EQ(0, vgsched_module_unload());
	EXPECT_EQ(0, vgsched_module_load(""));
}

/*
 * The slice of a loaded context of weight @wc among @n loaded contexts
 * whose weights sum to @wz (any common unit), clamped as the slot policy
 * clamps it.
 */
static double formula_slice(int literal, double t0, int n, double wc, double wz)
{
	double tc = literal ? t0 * wz / wc : t0 * n * wc / wz;

	if (tc > 8 * t0)
		tc = 8 * t0;
	if (tc < t0 / 4)
		tc = t0 / 4;
	return tc;
}

/*
 * Bounds of the GPU time per slice of the heavier context over that of the
 * lighter one, for weights (x 1000) anywhere between those of @a and @b:
 * each slice as the formula gives it, up to @late ns longer.
 */
static void formula_bounds(int literal, double t0, double late, const __u64 heavy[2], const __u64 light[2],
			   double *lo, double *hi)
{
	double hmin = 1e30, hmax = 0, lmin = 1e30, lmax = 0;

	/* Each slice is monotonic in each weight: the corners bound it. */
	for (int i = 0; i < 2; i++) {
		for (int j = 0; j < 2; j++) {
			double wh = heavy[i], wl = light[j];
			double h = formula_slice(literal, t0, 2, wh, wh + wl);
			double l = formula_slice(literal, t0, 2, wl, wh + wl);

			hmin = h < hmin ? h : hmin;
			hmax = h > hmax ? h : hmax;
			lmin = l < lmin ? l : lmin;
			lmax = l > lmax ? l : lmax;
		}
	}
	*lo = hmin / (lmax + late);
	*hi = (hmax + late) / lmin;
}

/* CTX_QUERY snapshots of one context at two of its slice boundaries. */
struct slice_window {
	struct drm_vgsched_ctx_query first, last, prev;
	int started;
};

/* Takes a snapshot of @ctx; the first and latest at a new slice are kept. */
static void window_sample(int fd, __u32 ctx, struct slice_window *w)
{
	struct drm_vgsched_ctx_query q = query(fd, ctx);

	if (w->started == 0 && w->prev.slices && q.slices != w->prev.slices) {
		w->first = q;
		w->last = q;
		w->started = 1;
	} else if (w->started && q.slices != w->prev.slices) {
		w->last = q;
	}
	w->prev = q;
}

static __u64 window_slices(const struct slice_window *w)
{
	return w->started ? w->last.slices - w->first.slices : 0;
}

/* GPU time per slice over the window, in ns. */
static double window_per_slice(const struct slice_window *w)
{
	return (double)(w->last.runtime_ns - w->first.runtime_ns) / (double)window_slices(w);
}

TEST_F(formula, slices_follow_the_weights_as_the_formula_says)
{
	/* Slices of each context in its window; slack on the bounds. */
	enum { IDLE_MS = 3000, JOB_MS = 1500, WINDOW_SLICES = 5 };
	const double t0 = FORMULA_T0_US * 1000.0, late = FORMULA_LATE_US * 1000.0, slack = 1.25;
	const int literal = variant->slice_formula;
	struct busy_job warm, heavy_job, light_job;
	struct slice_window hw = {}, lw = {};
	__u32 heavy = vgsched_ctx_create(self->fd, 8), light;
	double lo, hi, other_lo, other_hi, got;
	__u64 deadline, hweights[2], lweights[2];

	ASSERT_NE(0, heavy);
	/* A short run gives it a finite weight; idling then makes it large. */
	ASSERT_EQ(0, start_busy(self->fd, &warm, heavy, 5));
	ASSERT_EQ(0, wait_ok(self->fd, heavy, warm.s.seqno));
	busy_job_fini(self->fd, &warm);
	sleep_ms(IDLE_MS);
	light = vgsched_ctx_create(self->fd, 8);
	ASSERT_NE(0, light);
	ASSERT_EQ(0, start_busy(self->fd, &light_job, light, JOB_MS));
	ASSERT_EQ(0, start_busy(self->fd, &heavy_job, heavy, JOB_MS));
	/* The newcomer's first slice is computed from a stand-in weight. */
	sleep_ms(3 * FORMULA_T0_US / 1000);
	deadline = vg_now_ns() + 2 * VG_SECOND_NS;
	do {
		sleep_ms(1);
		window_sample(self->fd, heavy, &hw);
		window_sample(self->fd, light, &lw);
	} while ((window_slices(&hw) < WINDOW_SLICES || window_slices(&lw) < WINDOW_SLICES) &&
		 vg_now_ns() < deadline);
	ASSERT_TRUE(still_running(self->fd, heavy, heavy_job.s.seqno)) TH_LOG("the window outlived the jobs");
	ASSERT_TRUE(still_running(self->fd, light, light_job.s.seqno)) TH_LOG("the window outlived the jobs");
	ASSERT_GE(window_slices(&hw), WINDOW_SLICES);
	ASSERT_GE(window_slices(&lw), WINDOW_SLICES);
	/* Both held their slot all along. */
	EXPECT_EQ(hw.first.preemptions, hw.last.preemptions);
	EXPECT_EQ(lw.first.preemptions, lw.last.preemptions);

	hweights[0] = hw.first.weight_milli;
	hweights[1] = hw.last.weight_milli;
	lweights[0] = lw.first.weight_milli;
	lweights[1] = lw.last.weight_milli;
	formula_bounds(literal, t0, late, hweights, lweights, &lo, &hi);
	formula_bounds(!literal, t0, late, hweights, lweights, &other_lo, &other_hi);
	lo /= slack;
	hi *= slack;
	got = window_per_slice(&hw) / window_per_slice(&lw);
	TH_LOG("weights x1000: heavy %llu -> %llu, light %llu -> %llu", (unsigned long long)hweights[0],
	       (unsigned long long)hweights[1], (unsigned long long)lweights[0], (unsigned long long)lweights[1]);
	TH_LOG("per slice: heavy %.0f us (%llu slices), light %.0f us (%llu slices)", window_per_slice(&hw) / 1000,
	       (unsigned long long)window_slices(&hw), window_per_slice(&lw) / 1000,
	       (unsigned long long)window_slices(&lw));
	TH_LOG("heavy / light slice: %.2f; %s formula allows %.2f..%.2f, the other %.2f..%.2f", got,
	       literal ? "literal" : "proportional", lo, hi, other_lo, other_hi);
	/* The weights differ enough for the test to tell the cases apart. */
	ASSERT_TRUE(1.0 < lo || 1.0 > hi) TH_LOG("equal slices would pass");
	ASSERT_TRUE(other_hi < lo || other_lo > hi) TH_LOG("the other formula would pass");
	EXPECT_GE(got, lo);
	EXPECT_LE(got, hi);

	busy_job_fini(self->fd, &heavy_job);
	busy_job_fini(self->fd, &light_job);
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

/*
 * Two rival contexts of one file, each kept with two short jobs queued for
 * as long as a job of another file runs: busy throughout, however the
 * guest's speed stretches that job.
 */
struct rivals {
	int fd;
	__u32 ctx[2];
	struct busy_job job[2][2];
};

static int rivals_start(struct rivals *r, int ms)
{
	r->fd = vgsched_open_render_node();
	if (r->fd < 0)
		return -1;
	for (int i = 0; i < 2; i++) {
		r->ctx[i] = vgsched_ctx_create(r->fd, 8);
		if (!r->ctx[i])
			return -1;
		for (int k = 0; k < 2; k++)
			if (start_busy(r->fd, &r->job[i][k], r->ctx[i], ms))
				return -1;
	}
	return 0;
}

/* Queues again every rival job that has ended (exact); 0 or -1. */
static int rivals_feed(struct rivals *r)
{
	for (int i = 0; i < 2; i++) {
		for (int k = 0; k < 2; k++) {
			struct busy_job *j = &r->job[i][k];

			if (still_running(r->fd, r->ctx[i], j->s.seqno))
				continue;
			if (wait_ok(r->fd, r->ctx[i], j->s.seqno) || busy_job_wrong(j) != -1)
				return -1;
			if (busy_job_clear_out(r->fd, j) || busy_submit(r->fd, j))
				return -1;
		}
	}
	return 0;
}

/* Closing the rivals' file mid-job cancels them, saved state and all. */
static void rivals_stop(struct rivals *r)
{
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 2; k++)
			busy_job_fini(r->fd, &r->job[i][k]);
	close(r->fd);
}

/*
 * Runs prog_mix on @ctx of @fd over one group of 2 waves of 4 threads into
 * @mem/@out, feeding @r (if any) until it ends.
 */
static int run_mix(int fd, __u32 ctx, int loops, struct vg_buf *mem, struct vg_buf *out,
		   __u64 *seqno, struct rivals *r)
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
	while (!ret && r && still_running(fd, ctx, s.seqno)) {
		ret = rivals_feed(r);
		sleep_ms(1);
	}
	if (!ret)
		ret = wait_ok(fd, ctx, s.seqno);
	vg_buf_destroy(fd, &prog);
	return ret;
}

TEST_F_TIMEOUT(slots, preempted_dozens_of_times_the_result_is_unchanged, 120)
{
	enum { LOOPS = 25000, MIX_MS = LOOPS * 40 / 1000 };
	struct vg_buf mem[2], out[2];
	struct rivals rivals;
	struct drm_vgsched_ctx_query q;
	__u32 ctx = vgsched_ctx_create(self->fd, 8);
	__u64 seqno;

	ASSERT_NE(0, ctx);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, vg_buf_create(self->fd, 64 * 4, &mem[i]));
		ASSERT_EQ(0, vg_buf_create(self->fd, 64 * 4, &out[i]));
	}
	/* Alone: it keeps its slot, slice after slice. */
	ASSERT_EQ(0, run_mix(self->fd, ctx, LOOPS, &mem[0], &out[0], &seqno, NULL));
	q = query(self->fd, ctx);
	EXPECT_EQ(0, q.preemptions);
	/*
	 * Against two rivals busy throughout on two slots: it keeps losing its
	 * slot, every run exact. How often one run loses it depends on the
	 * host's speed and on the runtime the rivals gathered meanwhile (a
	 * context that has run less than its rivals at a slice's end keeps its
	 * slot, as slot selection means it to): every run loses it at least
	 * once, and it runs again until it has been preempted more than 40
	 * times in all.
	 */
	ASSERT_EQ(0, rivals_start(&rivals, MIX_MS / 4));
	for (int run = 0; run < 8 && query(self->fd, ctx).preemptions <= 40; run++) {
		__u64 before = query(self->fd, ctx).preemptions;

		ASSERT_EQ(0, run_mix(self->fd, ctx, LOOPS, &mem[1], &out[1], &seqno, &rivals));
		q = query(self->fd, ctx);
		EXPECT_GT(q.preemptions - before, 0) TH_LOG("run %d", run);
		TH_LOG("run %d: preempted %llu times in all, %llu slices, %llu us saving and restoring",
		       run, (unsigned long long)q.preemptions, (unsigned long long)q.slices,
		       (unsigned long long)q.switch_ns / 1000);
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
	}
	EXPECT_GT(query(self->fd, ctx).preemptions, 40);
	EXPECT_EQ(0, memcmp(out[0].map, out[1].map, 64 * 4));
	EXPECT_EQ(0, memcmp(mem[0].map, mem[1].map, 64 * 4));
	rivals_stop(&rivals);
	for (int i = 0; i < 2; i++) {
		vg_buf_destroy(self->fd, &mem[i]);
		vg_buf_destroy(self->fd, &out[i]);
	}
}

TEST_HARNESS_MAIN
