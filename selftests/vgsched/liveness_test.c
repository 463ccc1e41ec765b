// SPDX-License-Identifier: GPL-2.0
/*
 * Liveness across clients: another client's long job, or a big job that
 * waits for device memory, keeps a small job off the device for a bounded
 * time only (Documentation/design.rst, Liveness). The module is loaded
 * with a 1 s job timeout (the execution gate's hold bound); device memory
 * is the default 64 MiB, the sub-task threshold the default 32 MiB.
 *  - a_small_job_runs_beside_a_long_one_over_the_threshold: a job over a
 *    36 MiB object whose 100000 work-groups of 100 ms run four at a time
 *    (each takes all of a module's shared memory: hours of modeled time)
 *    is running when another client submits a 4 KiB job at the same
 *    level: the execution gate holds it back (both are over the second
 *    threshold) for the job timeout, no less, and then lets it execute
 *    beside the long job; it ends with status 0 within the job timeout
 *    + 3 s, the long job still running (until the test destroys it);
 *  - a_small_job_passes_a_job_waiting_for_memory: one client's long job
 *    over 20 MiB runs and a second context of that client waits for
 *    memory with a job over 50 MiB (stage event memory_wait); another
 *    client's 4 KiB job ends with status 0 within the job timeout + 3 s,
 *    the big job still waiting; a third client's job over 16 MiB,
 *    submitted before the 4 KiB one, would take from what the waiter
 *    needs and is not prepared while it waits (and the waiter is not
 *    tried again in a loop meanwhile); once the long job's context is destroyed, the waiter is
 *    prepared first and both big jobs end with status 0, results exact;
 *  - a_wide_group_is_placed_beside_a_stream_of_narrow_ones: one client's
 *    job of 46 080 one-wave work-groups of 10-25 ms (by group, so they end
 *    one at a time) keeps the 256 wave slots nearly full for about 3 s of
 *    modeled time; another client's work-group of 64 waves needs every
 *    wave slot of a module at once, which the stream takes one by one as
 *    they free. Its head claims a module after a time
 *    slice (design.rst, Work-group dispatch); it ends with status 0,
 *    exact, while the stream has had less than half of its device time.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vgsched_programs.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)
#define MS 1000000ull
/* The job timeout the module is loaded with, and the gate's hold bound. */
#define TIMEOUT_MS 1000
/* What the bound asserted allows beyond the job timeout, for a slow host. */
#define SLACK_MS 3000
/* Work-groups of a long job, and the modeled time of each. */
#define LONG_GROUPS 100000
#define GROUP_MS 100
/* A module's shared-memory blocks (the default): one long group fills them. */
#define SHARED_BLOCKS 48
/* How long a job may take, once it may run, before a test calls it wedged. */
#define WAIT_NS (15 * VG_SECOND_NS)

/*
 * A job of vg_prog_slow_store (every thread spins @ms of modeled time,
 * then stores its global id into @out) that also binds @big (read-only,
 * unused: it counts in the job's device memory) if given.
 */
struct ljob {
	int fd;
	__u32 ctx, groups;
	__u64 client, seqno, submitted_ns;
	struct vg_buf prog, out;
	__u32 bind[2];
	struct drm_vgsched_submit s;
};

static int ljob_init(int fd, struct ljob *j, __u32 ctx, int ms, __u32 groups,
		     const struct vg_buf *big)
{
	__u64 words[16];
	unsigned int len = vg_prog_slow_store(words, LOOPS_FOR_MS(ms));
	int ret;

	memset(j, 0, sizeof(*j));
	j->fd = fd;
	j->ctx = ctx;
	j->groups = groups;
	j->client = vgsched_client_id(fd, ctx);
	ret = vg_program(fd, words, len, &j->prog) ?:
	      vg_buf_create(fd, groups * 4 < 4096 ? 4096 : groups * 4, &j->out);
	if (ret)
		return ret;
	memset(j->out.map, 0xff, j->out.size);
	j->bind[0] = j->out.handle;
	j->bind[1] = big ? big->handle : 0;
	j->s = vg_job(ctx, &j->prog, len, j->bind, big ? 2 : 1, groups, 1, 1);
	j->s.vgpr_blocks = 1;
	j->s.sgpr_blocks = 1;
	/* A long job's groups run one per module: few waves to interpret. */
	j->s.shared_mem_blocks = groups > 1 ? SHARED_BLOCKS : 0;
	j->s.binding_access[0] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
	if (big)
		j->s.binding_access[1] = DRM_VGSCHED_BINDING_READ;
	return 0;
}

static int ljob_submit(struct ljob *j)
{
	int ret;

	j->s.seqno = 0;
	j->submitted_ns = vg_now_ns();
	ret = vgsched_submit(j->fd, &j->s);
	j->seqno = j->s.seqno;
	return ret;
}

/* The job's status once it ended within @timeout_ns of now, or 1000. */
static int ljob_finish(const struct ljob *j, __u64 timeout_ns)
{
	int status = 1000;

	if (vgsched_wait(j->fd, j->ctx, j->seqno, timeout_ns, &status))
		return 1000;
	return status;
}

static __u64 ljob_stage(const struct ljob *j, const char *event)
{
	return stage_at(j->client, j->ctx, j->seqno, event, j->submitted_ns);
}

/* Waits up to 10 s for @event of @j; its time, or 0. */
static __u64 ljob_wait_stage(const struct ljob *j, const char *event)
{
	__u64 t = 0;

	for (int i = 0; i < 1000 && !(t = ljob_stage(j, event)); i++)
		usleep(10000);
	return t;
}

/* Stage records of job @job (0: the context's own) of @ctx of @client named @event. */
static int stage_count(__u64 client, unsigned int ctx, __u64 job, const char *event)
{
	static struct vg_stage log[512];
	int n = vgsched_stages(log, 512), count = 0;

	for (int i = 0; i < n; i++)
		count += log[i].client == client && log[i].ctx == ctx && log[i].job == job &&
			 !strcmp(log[i].event, event);
	return count;
}

/* Every thread stored its global id. */
static int ljob_exact(const struct ljob *j)
{
	for (__u32 i = 0; i < j->groups; i++)
		if (((uint32_t *)j->out.map)[i] != i)
			return 0;
	return 1;
}

static void ljob_fini(struct ljob *j)
{
	vg_buf_destroy(j->fd, &j->prog);
	vg_buf_destroy(j->fd, &j->out);
}

FIXTURE(live) {
	int fd[3];
};

FIXTURE_SETUP(live)
{
	char params[64];

	snprintf(params, sizeof(params), "job_timeout_ms=%d", TIMEOUT_MS);
	ASSERT_EQ(0, vgsched_module_unload());
	ASSERT_EQ(0, vgsched_module_load(params));
	for (int i = 0; i < 3; i++) {
		self->fd[i] = vgsched_open_render_node();
		ASSERT_GE(self->fd[i], 0);
	}
}

/* In the parent, once the test's files and jobs are gone: the default module. */
FIXTURE_TEARDOWN_PARENT(live)
{
	int ret = vgsched_module_unload();

	for (int i = 0; i < 300 && (ret == -EBUSY || ret == -EAGAIN); i++) {
		usleep(10000);
		ret = vgsched_module_unload();
	}
	EXPECT_EQ(0, ret);
	EXPECT_EQ(0, vgsched_module_load(""));
}

/* Submits @small and checks it ends, status 0 and exact, within the bound. */
static void small_within_bound(struct __test_metadata *_metadata, struct ljob *small)
{
	__u64 took;

	ASSERT_EQ(0, ljob_submit(small));
	ASSERT_EQ(0, ljob_finish(small, (TIMEOUT_MS + SLACK_MS) * MS))
		TH_LOG("the small job did not end within the job timeout + %d ms", SLACK_MS);
	took = vg_now_ns() - small->submitted_ns;
	TH_LOG("the small job ended %llu ms after its submission", (unsigned long long)took / MS);
	EXPECT_TRUE(ljob_exact(small));
}

TEST_F_TIMEOUT(live, a_small_job_runs_beside_a_long_one_over_the_threshold, 90)
{
	struct vg_buf big;
	struct ljob longj, small;
	__u32 a = vgsched_ctx_create(self->fd[0], 8), b = vgsched_ctx_create(self->fd[1], 8);
	__u64 prepared, first;

	ASSERT_NE(0, a);
	ASSERT_NE(0, b);
	ASSERT_EQ(0, vg_buf_create(self->fd[0], 36 * MIB, &big));
	ASSERT_EQ(0, ljob_init(self->fd[0], &longj, a, GROUP_MS, LONG_GROUPS, &big));
	ASSERT_EQ(0, ljob_init(self->fd[1], &small, b, 10, 1, NULL));
	ASSERT_EQ(0, ljob_submit(&longj));
	ASSERT_NE(0, ljob_wait_stage(&longj, "first_wave")) TH_LOG("the long job never started");
	small_within_bound(_metadata, &small);
	ASSERT_TRUE(still_running(self->fd[0], a, longj.seqno))
		TH_LOG("the long job ended: the small one did not run beside it");
	/* The gate held it back for the bound, as the second threshold says. */
	prepared = ljob_stage(&small, "phase2_end");
	first = ljob_stage(&small, "first_wave");
	ASSERT_NE(0, prepared);
	ASSERT_NE(0, first);
	EXPECT_GE(first - prepared, TIMEOUT_MS * MS)
		TH_LOG("the gate let it beside a job over the threshold after %llu ms",
		       (unsigned long long)(first - prepared) / MS);
	/* Destroyed: the long job ends, cancelled. */
	ASSERT_EQ(0, vgsched_ctx_destroy(self->fd[0], a));
	ljob_fini(&longj);
	ljob_fini(&small);
	vg_buf_destroy(self->fd[0], &big);
	EXPECT_EQ(0, vgsched_ctx_destroy(self->fd[1], b));
}

TEST_F_TIMEOUT(live, a_small_job_passes_a_job_waiting_for_memory, 90)
{
	struct vg_buf twenty, fifty, sixteen;
	struct ljob longj, waiter, small, medium;
	__u32 a1 = vgsched_ctx_create(self->fd[0], 8), a2 = vgsched_ctx_create(self->fd[0], 8);
	__u32 b = vgsched_ctx_create(self->fd[1], 8), c = vgsched_ctx_create(self->fd[2], 8);

	ASSERT_NE(0, a1);
	ASSERT_NE(0, a2);
	ASSERT_NE(0, b);
	ASSERT_NE(0, c);
	ASSERT_EQ(0, vg_buf_create(self->fd[0], 20 * MIB, &twenty));
	ASSERT_EQ(0, vg_buf_create(self->fd[0], 50 * MIB, &fifty));
	ASSERT_EQ(0, vg_buf_create(self->fd[2], 16 * MIB, &sixteen));
	ASSERT_EQ(0, ljob_init(self->fd[0], &longj, a1, GROUP_MS, LONG_GROUPS, &twenty));
	ASSERT_EQ(0, ljob_init(self->fd[0], &waiter, a2, 10, 1, &fifty));
	ASSERT_EQ(0, ljob_init(self->fd[1], &small, b, 10, 1, NULL));
	ASSERT_EQ(0, ljob_init(self->fd[2], &medium, c, 10, 1, &sixteen));
	ASSERT_EQ(0, ljob_submit(&longj));
	ASSERT_NE(0, ljob_wait_stage(&longj, "first_wave")) TH_LOG("the long job never started");
	ASSERT_EQ(0, ljob_submit(&waiter));
	ASSERT_NE(0, ljob_wait_stage(&waiter, "memory_wait"))
		TH_LOG("the job over 50 MiB never waited for memory");
	/*
	 * The 16 MiB job, submitted first, would take from what the waiter
	 * needs: it waits behind the waiter. The small job comes after it
	 * and passes both (the memory work item takes the 16 MiB one first
	 * if it may: the older job).
	 */
	ASSERT_EQ(0, ljob_submit(&medium));
	small_within_bound(_metadata, &small);
	EXPECT_EQ(0, ljob_stage(&medium, "phase2_start"))
		TH_LOG("the 16 MiB job was prepared beside the waiter's need");
	ASSERT_EQ(0, ljob_stage(&waiter, "phase2_start")) TH_LOG("the big job did not wait");
	ASSERT_TRUE(still_running(self->fd[0], a1, longj.seqno)) TH_LOG("the long job ended");
	/*
	 * The waiter is tried again only when memory comes back (a handful of
	 * times here), and the 16 MiB job's context is not initialised and
	 * given back for it over and over: no busy loop of the memory work.
	 */
	usleep(200000);
	int tries = stage_count(waiter.client, a2, waiter.seqno, "memory_wait");
	int returned = stage_count(medium.client, c, 0, "task_cleanup");

	TH_LOG("the waiter tried %d times, the 16 MiB job's context gave its area back %d times",
	       tries, returned);
	EXPECT_LE(tries, 16);
	EXPECT_LE(returned, 4);
	/* The long job's memory comes back: the waiter has the first claim on it. */
	ASSERT_EQ(0, vgsched_ctx_destroy(self->fd[0], a1));
	ASSERT_EQ(0, ljob_finish(&waiter, WAIT_NS)) TH_LOG("the waiter never ran");
	ASSERT_EQ(0, ljob_finish(&medium, WAIT_NS)) TH_LOG("the 16 MiB job never ran");
	EXPECT_TRUE(ljob_exact(&waiter));
	EXPECT_TRUE(ljob_exact(&medium));
	EXPECT_LT(ljob_stage(&waiter, "phase2_start"), ljob_stage(&medium, "phase2_start"))
		TH_LOG("the 16 MiB job took the released memory first");
	ljob_fini(&longj);
	ljob_fini(&waiter);
	ljob_fini(&small);
	ljob_fini(&medium);
	vg_buf_destroy(self->fd[0], &twenty);
	vg_buf_destroy(self->fd[0], &fifty);
	vg_buf_destroy(self->fd[2], &sixteen);
	EXPECT_EQ(0, vgsched_ctx_destroy(self->fd[0], a2));
	EXPECT_EQ(0, vgsched_ctx_destroy(self->fd[1], b));
	EXPECT_EQ(0, vgsched_ctx_destroy(self->fd[2], c));
}

/* Work-groups of the narrow stream: 180 rounds of the 256 wave slots. */
#define NARROW_GROUPS (256 * 180)
/* Waves of the wide work-group: every wave slot of a module. */
#define WIDE_WAVES 64

/*
 * Every thread loops 10 + (group id mod 16) ms of modeled time (the slow
 * loop of vg_prog_slow_store), then stores its global id into binding 0.
 */
static unsigned int prog_staggered(__u64 *p)
{
	unsigned int n = 0;

	p[n++] = vg_instr(DRM_VGSCHED_OP_SREG, 1, 0, 0, DRM_VGSCHED_SREG_GROUP_ID);
	p[n++] = vg_instr(DRM_VGSCHED_OP_MOVI, 2, 0, 0, 15);
	p[n++] = vg_instr(DRM_VGSCHED_OP_AND, 1, 1, 2, 0);
	p[n++] = vg_instr(DRM_VGSCHED_OP_MOVI, 3, 0, 0, LOOPS_FOR_MS(1));
	p[n++] = vg_instr(DRM_VGSCHED_OP_MUL, 1, 1, 3, 0);
	p[n++] = vg_instr(DRM_VGSCHED_OP_ADDI, 0, 1, 0, LOOPS_FOR_MS(10));
	for (int i = 0; i < 4; i++)
		p[n++] = vg_instr(DRM_VGSCHED_OP_LD, 2, 4, 0, 0);			/* 6-9: loop */
	p[n++] = vg_instr(DRM_VGSCHED_OP_ADDI, 0, 0, 0, -1);
	p[n++] = vg_instr(DRM_VGSCHED_OP_BRNZ, 0, 0, 0, 6);
	p[n++] = vg_instr(DRM_VGSCHED_OP_SREG, 1, 0, 0, DRM_VGSCHED_SREG_GLOBAL_ID);
	p[n++] = vg_instr(DRM_VGSCHED_OP_ST, 1, 1, 0, 0);
	p[n++] = vg_instr(DRM_VGSCHED_OP_END, 0, 0, 0, 0);
	return n;
}

TEST_F_TIMEOUT(live, a_wide_group_is_placed_beside_a_stream_of_narrow_ones, 120)
{
	__u32 a = vgsched_ctx_create(self->fd[0], 8), b = vgsched_ctx_create(self->fd[1], 8);
	struct drm_vgsched_ctx_query q;
	struct vg_buf prog, out;
	struct ljob wide;
	__u64 words[32];
	unsigned int len = prog_staggered(words);
	long long claims;

	ASSERT_NE(0, a);
	ASSERT_NE(0, b);
	ASSERT_EQ(0, vg_program(self->fd[0], words, len, &prog));
	ASSERT_EQ(0, vg_buf_create(self->fd[0], NARROW_GROUPS * 4, &out));
	struct drm_vgsched_submit narrow = vg_job(a, &prog, len, &out.handle, 1, NARROW_GROUPS, 1, 1);

	narrow.vgpr_blocks = 1;
	narrow.sgpr_blocks = 1;
	narrow.shared_mem_blocks = 0;
	ASSERT_EQ(0, vgsched_submit(self->fd[0], &narrow));
	/* The wide group: 64 one-thread waves, 1 ms: a whole module. */
	ASSERT_EQ(0, ljob_init(self->fd[1], &wide, b, 1, 1, NULL));
	wide.s.waves_per_group = WIDE_WAVES;
	/* Once the stream has filled the device and its groups end one by one. */
	usleep(200000);
	TH_LOG("waves on the device before: %lld", vgsched_state_number(", waves: "));
	ASSERT_EQ(0, ljob_submit(&wide));
	ASSERT_EQ(0, ljob_finish(&wide, 60 * VG_SECOND_NS)) TH_LOG("the wide group never ran");
	ASSERT_EQ(0, vgsched_ctx_query(self->fd[0], a, &q));
	TH_LOG("the wide group ended %llu ms after its submission, the stream had run %llu ms",
	       (unsigned long long)(vg_now_ns() - wide.submitted_ns) / MS,
	       (unsigned long long)q.runtime_ns / MS);
	for (__u32 i = 0; i < WIDE_WAVES; i++)
		EXPECT_EQ(i, ((uint32_t *)wide.out.map)[i]);
	ASSERT_TRUE(still_running(self->fd[0], a, narrow.seqno)) TH_LOG("the stream ended first");
	/* About 3 s of device time in all: the wide group did not wait for its end. */
	EXPECT_LT(q.runtime_ns, 1500 * MS);
	claims = vgsched_state_number(", modules claimed ");
	EXPECT_GE(claims, 1);
	ASSERT_EQ(0, vgsched_ctx_destroy(self->fd[0], a));
	ljob_fini(&wide);
	vg_buf_destroy(self->fd[0], &prog);
	vg_buf_destroy(self->fd[0], &out);
	EXPECT_EQ(0, vgsched_ctx_destroy(self->fd[1], b));
}

TEST_HARNESS_MAIN
