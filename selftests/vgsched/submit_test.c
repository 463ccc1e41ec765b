// SPDX-License-Identifier: GPL-2.0
/*
 * Job submission through the uAPI: real results over buffer objects for
 * several grid shapes, two processes at once, and every bad input of
 * SUBMIT and WAIT with its errno, the device still working afterwards.
 * A context below its in-flight limit is never refused, however many
 * jobs it has submitted.
 * With the module reloaded under the grouped and the sampled resource
 * finder, needs that finder rounds past the module are refused (E2BIG)
 * instead of waiting forever, and the largest need it places runs.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vgsched_programs.h"

FIXTURE(submit) {
	int fd;
	__u32 ctx;
};

FIXTURE_SETUP(submit)
{
	self->fd = vgsched_open_render_node();
	ASSERT_GE(self->fd, 0);
	self->ctx = vgsched_ctx_create(self->fd, 8);
	ASSERT_NE(0, self->ctx);
}

FIXTURE_TEARDOWN(submit)
{
	close(self->fd);
}

/* Runs c = a + b over a grid; returns 0 when every element is right. */
static int run_vector_add(struct __test_metadata *_metadata, int fd, __u32 ctx, int fadd,
			  __u32 groups, __u32 waves, __u32 threads)
{
	const unsigned int n = groups * waves * threads;
	struct vg_buf prog, a, b, c;
	__u64 words[16];
	unsigned int len = vg_prog_vector_add(words, fadd);
	int status = 1;

	EXPECT_EQ(0, vg_program(fd, words, len, &prog));
	EXPECT_EQ(0, vg_buf_create(fd, n * 4, &a));
	EXPECT_EQ(0, vg_buf_create(fd, n * 4, &b));
	EXPECT_EQ(0, vg_buf_create(fd, n * 4, &c));
	for (unsigned int i = 0; i < n; i++) {
		if (fadd) {
			((float *)a.map)[i] = i * 0.37f - 5.5f;
			((float *)b.map)[i] = 1.0f / (i + 1);
		} else {
			((uint32_t *)a.map)[i] = i * 2654435761u;
			((uint32_t *)b.map)[i] = 0xffffff00u + i;
		}
	}
	__u32 bindings[] = { a.handle, b.handle, c.handle };
	struct drm_vgsched_submit s = vg_job(ctx, &prog, len, bindings, 3, groups, waves, threads);

	EXPECT_EQ(0, vgsched_submit(fd, &s));
	EXPECT_EQ(0, vgsched_wait(fd, ctx, s.seqno, 30 * VG_SECOND_NS, &status));
	EXPECT_EQ(0, status);
	for (unsigned int i = 0; i < n; i++) {
		if (fadd) {
			float want = ((float *)a.map)[i] + ((float *)b.map)[i];

			EXPECT_EQ(0, memcmp(&want, (float *)c.map + i, 4))
				TH_LOG("float element %u of %u", i, n);
		} else {
			uint32_t want = ((uint32_t *)a.map)[i] + ((uint32_t *)b.map)[i];

			EXPECT_EQ(want, ((uint32_t *)c.map)[i]) TH_LOG("element %u of %u", i, n);
		}
		if (_metadata->exit_code)
			break;
	}
	vg_buf_destroy(fd, &prog);
	vg_buf_destroy(fd, &a);
	vg_buf_destroy(fd, &b);
	vg_buf_destroy(fd, &c);
	return _metadata->exit_code;
}

TEST_F(submit, vector_add_over_grid_shapes)
{
	static const __u32 shapes[][3] = {
		{ 1, 1, 1 }, { 1, 1, 64 }, { 7, 3, 5 }, { 64, 4, 16 }, { 3, 64, 2 }, { 40, 2, 64 },
	};

	for (unsigned int i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		ASSERT_EQ(0, run_vector_add(_metadata, self->fd, self->ctx, 0, shapes[i][0],
					    shapes[i][1], shapes[i][2]))
			TH_LOG("grid %u x %u x %u", shapes[i][0], shapes[i][1], shapes[i][2]);
	}
}

TEST_F(submit, float_vector_add_is_bit_exact)
{
	ASSERT_EQ(0, run_vector_add(_metadata, self->fd, self->ctx, 1, 16, 2, 32));
}

TEST_F(submit, matrix_multiply)
{
	static const int sizes[] = { 1, 5, 16, 32 };

	for (unsigned int t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
		const int n = sizes[t];
		struct vg_buf prog, a, b, c;
		__u64 words[32];
		unsigned int len = vg_prog_matmul(words, n);
		int status = 1;

		ASSERT_EQ(0, vg_program(self->fd, words, len, &prog));
		ASSERT_EQ(0, vg_buf_create(self->fd, n * n * 4, &a));
		ASSERT_EQ(0, vg_buf_create(self->fd, n * n * 4, &b));
		ASSERT_EQ(0, vg_buf_create(self->fd, n * n * 4, &c));
		int32_t *A = a.map, *B = b.map, *C = c.map;

		for (int i = 0; i < n * n; i++) {
			A[i] = (i * 7) % 23 - 11;
			B[i] = (i * 13) % 17 - 8;
		}
		__u32 bindings[] = { a.handle, b.handle, c.handle };
		/* n threads per group: as one wave, or as waves of 4 when possible. */
		__u32 waves = n % 4 == 0 ? n / 4 : 1, threads = n / waves;
		struct drm_vgsched_submit s = vg_job(self->ctx, &prog, len, bindings, 3, n, waves, threads);

		ASSERT_EQ(0, vgsched_submit(self->fd, &s));
		ASSERT_EQ(0, vgsched_wait(self->fd, self->ctx, s.seqno, 30 * VG_SECOND_NS, &status));
		ASSERT_EQ(0, status);
		for (int r = 0; r < n; r++)
			for (int col = 0; col < n; col++) {
				int32_t want = 0;

				for (int k = 0; k < n; k++)
					want += A[r * n + k] * B[k * n + col];
				ASSERT_EQ(want, C[r * n + col]) TH_LOG("n=%d C[%d][%d]", n, r, col);
			}
		vg_buf_destroy(self->fd, &prog);
		vg_buf_destroy(self->fd, &a);
		vg_buf_destroy(self->fd, &b);
		vg_buf_destroy(self->fd, &c);
	}
}

TEST_F(submit, jobs_of_a_context_complete_in_order_and_are_counted)
{
	struct vg_buf prog, out;
	__u64 words[8];
	unsigned int len = vg_prog_busy_store(words, 50);
	__u64 last = 0;
	int status;

	ASSERT_EQ(0, vg_program(self->fd, words, len, &prog));
	ASSERT_EQ(0, vg_buf_create(self->fd, 4096, &out));
	for (int i = 0; i < 10; i++) {
		struct drm_vgsched_submit s = vg_job(self->ctx, &prog, len, &out.handle, 1, 4, 2, 8);

		ASSERT_EQ(0, vgsched_submit(self->fd, &s));
		ASSERT_EQ(last + 1, s.seqno);
		last = s.seqno;
	}
	/* The last one done means all are: one context runs in order. */
	ASSERT_EQ(0, vgsched_wait(self->fd, self->ctx, last, 30 * VG_SECOND_NS, &status));
	for (__u64 seq = 1; seq <= last; seq++) {
		ASSERT_EQ(0, vgsched_wait(self->fd, self->ctx, seq, 0, &status));
		ASSERT_EQ(0, status);
	}
	struct drm_vgsched_ctx_query q = { .ctx_id = self->ctx };

	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_VGSCHED_CTX_QUERY, &q));
	ASSERT_EQ(10, q.jobs_submitted);
	ASSERT_EQ(10, q.jobs_completed);
	ASSERT_EQ(DRM_VGSCHED_CTX_STATE_IDLE, q.state);
	/* 64 threads x ~150 cycles at 1 MHz, 10 times: clearly non-zero. */
	ASSERT_GT(q.runtime_ns, 100000);
	for (int i = 0; i < 64; i++) {
		ASSERT_EQ(i, ((uint32_t *)out.map)[i]);
	}
	vg_buf_destroy(self->fd, &prog);
	vg_buf_destroy(self->fd, &out);
}

/*
 * A context with fewer than DRM_VGSCHED_MAX_JOBS_IN_FLIGHT unfinished jobs
 * is never refused, however many it has submitted (its finished jobs are
 * counted out as they are dropped): eight times the limit of one-thread
 * jobs, each submitted as soon as it is the limit's width past the last
 * finished one.
 */
TEST_F(submit, a_context_below_its_limit_is_never_refused)
{
	const int max = DRM_VGSCHED_MAX_JOBS_IN_FLIGHT, jobs = 8 * max;
	struct drm_vgsched_ctx_query q = { .ctx_id = self->ctx };
	struct vg_buf prog, out;
	__u64 words[8];
	unsigned int len = vg_prog_busy_store(words, 1);
	int status;

	ASSERT_EQ(0, vg_program(self->fd, words, len, &prog));
	ASSERT_EQ(0, vg_buf_create(self->fd, 4096, &out));
	for (int i = 0; i < jobs; i++) {
		struct drm_vgsched_submit s = vg_job(self->ctx, &prog, len, &out.handle, 1, 1, 1, 1);

		/*
		 * Jobs 1 .. i - max + 1 finished: max - 1 unfinished, the most a
		 * submission may find (a job counts as finished once its fence
		 * has signalled).
		 */
		if (i >= max) {
			ASSERT_EQ(0, vgsched_wait(self->fd, self->ctx, i - max + 1, 30 * VG_SECOND_NS,
						  &status));
			ASSERT_EQ(0, status);
		}
		ASSERT_EQ(0, vgsched_submit(self->fd, &s)) TH_LOG("job %d", i + 1);
		ASSERT_EQ(i + 1, s.seqno);
	}
	ASSERT_EQ(0, vgsched_wait(self->fd, self->ctx, jobs, 30 * VG_SECOND_NS, &status));
	ASSERT_EQ(0, status);
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_VGSCHED_CTX_QUERY, &q));
	ASSERT_EQ(jobs, q.jobs_submitted);
	ASSERT_EQ(jobs, q.jobs_completed);
	vg_buf_destroy(self->fd, &prog);
	vg_buf_destroy(self->fd, &out);
}

TEST(two_processes_at_once)
{
	pid_t pids[2];

	for (int p = 0; p < 2; p++) {
		pids[p] = fork();
		ASSERT_GE(pids[p], 0);
		if (pids[p] == 0) {
			int fd = vgsched_open_render_node();
			__u32 ctx = vgsched_ctx_create(fd, 8);
			int bad = fd < 0 || !ctx;

			for (int round = 0; round < 5 && !bad; round++)
				bad = run_vector_add(_metadata, fd, ctx, p, 8 + p, 2, 32);
			_exit(bad ? 1 : 0);
		}
	}
	for (int p = 0; p < 2; p++) {
		int wstatus;

		ASSERT_EQ(pids[p], waitpid(pids[p], &wstatus, 0));
		ASSERT_TRUE(WIFEXITED(wstatus));
		ASSERT_EQ(0, WEXITSTATUS(wstatus)) TH_LOG("process %d got wrong results", p);
	}
}

TEST_F(submit, bad_input_gets_precise_errno_and_changes_nothing)
{
	struct vg_buf prog, small, data;
	__u64 words[8];
	unsigned int len = vg_prog_vector_add(words, 0);
	int status = 1;

	ASSERT_EQ(0, vg_program(self->fd, words, len, &prog));
	ASSERT_EQ(0, vg_buf_create(self->fd, 4096, &data));
	ASSERT_EQ(0, vg_buf_create(self->fd, 8, &small));
	__u32 b3[] = { data.handle, data.handle, data.handle };
	const struct drm_vgsched_submit good = vg_job(self->ctx, &prog, len, b3, 3, 2, 2, 8);
	struct drm_vgsched_submit s;

#define BAD(field_change, err) do { \
		s = good; field_change; \
		ASSERT_EQ(-(err), vgsched_submit(self->fd, &s)) TH_LOG("%s", #field_change); \
		ASSERT_EQ(0, s.seqno) TH_LOG("%s wrote a seqno", #field_change); \
	} while (0)

	BAD(s.ctx_id = 999, ENOENT);
	BAD(s.ctx_id = 0, ENOENT);
	BAD(s.flags = 1u << 7, EINVAL);
	BAD(s.group_priority = DRM_VGSCHED_GROUP_PRIORITIES, EINVAL);
	BAD(s.program_handle = 0xdead, ENOENT);
	BAD(s.program_instrs = 0, EINVAL);
	BAD(s.program_instrs = 4096 / 8 + 1, EINVAL);		/* past the object's end */
	BAD(s.program_handle = small.handle; s.program_instrs = 4096 / 8 + 1, EINVAL);
	BAD(s.binding_count = 9, EINVAL);
	BAD(s.binding_count = 2, EINVAL);		/* program uses binding 2 */
	BAD(s.bindings = 8, EFAULT);
	__u32 unknown[] = { data.handle, 0xbeef, data.handle };

	BAD(s.bindings = (__u64)(unsigned long)unknown, ENOENT);
	BAD(s.groups = 0, EINVAL);
	BAD(s.waves_per_group = 0, EINVAL);
	BAD(s.threads_per_wave = 0, EINVAL);
	BAD(s.threads_per_wave = 65, E2BIG);
	BAD(s.waves_per_group = 65, E2BIG);
	BAD(s.groups = 0x2000000; s.waves_per_group = 64; s.threads_per_wave = 64, E2BIG);
	BAD(s.vgpr_blocks = 100000, E2BIG);
	BAD(s.sgpr_blocks = 100000, E2BIG);
	BAD(s.shared_mem_blocks = 100000, E2BIG);
	BAD(s.flags = DRM_VGSCHED_SUBMIT_IN_FENCE; s.in_fence_fd = self->fd, EINVAL);
	BAD(s.flags = DRM_VGSCHED_SUBMIT_IN_FENCE; s.in_fence_fd = -1, EINVAL);

	/* Malformed programs: unknown opcode, bad register, bad branch, no end. */
	static const __u64 malformed[][2] = {
		{ 0xff, 0 },
		{ (__u64)DRM_VGSCHED_OP_MOVI | 16 << 8, DRM_VGSCHED_OP_END },
		{ (__u64)DRM_VGSCHED_OP_BR | (__u64)5 << 32, DRM_VGSCHED_OP_END },
		{ DRM_VGSCHED_OP_END, DRM_VGSCHED_OP_MOVI },
		{ (__u64)DRM_VGSCHED_OP_END | 1 << 8, DRM_VGSCHED_OP_END },
	};
	for (unsigned int i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
		struct vg_buf bad;

		ASSERT_EQ(0, vg_program(self->fd, malformed[i], 2, &bad));
		s = good;
		s.program_handle = bad.handle;
		s.program_instrs = 2;
		ASSERT_EQ(-EINVAL, vgsched_submit(self->fd, &s)) TH_LOG("malformed program %u", i);
		vg_buf_destroy(self->fd, &bad);
	}
#undef BAD

	/* WAIT's bad input. */
	struct drm_vgsched_wait w = { .ctx_id = self->ctx, .seqno = 1 };

	ASSERT_EQ(-EINVAL, vgsched_wait(self->fd, self->ctx, 1, 0, NULL)) TH_LOG("nothing submitted");
	ASSERT_EQ(-EINVAL, vgsched_wait(self->fd, self->ctx, 0, 0, NULL));
	ASSERT_EQ(-ENOENT, vgsched_wait(self->fd, 999, 1, 0, NULL));
	w.flags = 1u << 5;
	ASSERT_EQ(-1, ioctl(self->fd, DRM_IOCTL_VGSCHED_WAIT, &w));
	ASSERT_EQ(EINVAL, errno);
	w.flags = 0;
	w.pad = 1;
	ASSERT_EQ(-1, ioctl(self->fd, DRM_IOCTL_VGSCHED_WAIT, &w));
	ASSERT_EQ(EINVAL, errno);

	/* Nothing was queued by any of it, and the device still works. */
	struct drm_vgsched_ctx_query q = { .ctx_id = self->ctx };

	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_VGSCHED_CTX_QUERY, &q));
	ASSERT_EQ(0, q.jobs_submitted);
	s = good;
	ASSERT_EQ(0, vgsched_submit(self->fd, &s));
	ASSERT_EQ(1, s.seqno);
	ASSERT_EQ(0, vgsched_wait(self->fd, self->ctx, 1, 30 * VG_SECOND_NS, &status));
	ASSERT_EQ(0, status);
	vg_buf_destroy(self->fd, &prog);
	vg_buf_destroy(self->fd, &small);
	vg_buf_destroy(self->fd, &data);
}

TEST_F(submit, out_of_bounds_access_faults_only_that_job)
{
	struct vg_buf prog, a, b, c;
	__u64 words[8];
	unsigned int len = vg_prog_vector_add(words, 0);
	int status = 0;

	ASSERT_EQ(0, vg_program(self->fd, words, len, &prog));
	ASSERT_EQ(0, vg_buf_create(self->fd, 4096, &a));
	ASSERT_EQ(0, vg_buf_create(self->fd, 4096, &b));
	ASSERT_EQ(0, vg_buf_create(self->fd, 4096, &c));
	__u32 bindings[] = { a.handle, b.handle, c.handle };
	/* 2048 threads over 1024-word buffers. */
	struct drm_vgsched_submit s = vg_job(self->ctx, &prog, len, bindings, 3, 32, 1, 64);
	ASSERT_EQ(0, vgsched_submit(self->fd, &s));
	ASSERT_EQ(0, vgsched_wait(self->fd, self->ctx, s.seqno, 30 * VG_SECOND_NS, &status));
	ASSERT_EQ(-EFAULT, status);

	struct drm_vgsched_ctx_query q = { .ctx_id = self->ctx };

	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_VGSCHED_CTX_QUERY, &q));
	ASSERT_NE(DRM_VGSCHED_CTX_STATE_GUILTY, q.state);
	/* The same context's next job runs normally. */
	s = vg_job(self->ctx, &prog, len, bindings, 3, 16, 1, 64);
	ASSERT_EQ(0, vgsched_submit(self->fd, &s));
	ASSERT_EQ(0, vgsched_wait(self->fd, self->ctx, s.seqno, 30 * VG_SECOND_NS, &status));
	ASSERT_EQ(0, status);
	vg_buf_destroy(self->fd, &prog);
	vg_buf_destroy(self->fd, &a);
	vg_buf_destroy(self->fd, &b);
	vg_buf_destroy(self->fd, &c);
}

/*
 * Under module parameters @params, SUBMIT refuses with E2BIG each need of
 * @refused (shared-memory blocks of a work-group, or vector register
 * blocks of its one wave with @vgpr) and accepts and runs @largest right.
 */
static void finder_limits(struct __test_metadata *_metadata, const char *params, int vgpr,
			  const __u32 *refused, int nrefused, __u32 largest)
{
	struct vg_buf prog, out;
	__u64 words[8];
	unsigned int len = vg_prog_busy_store(words, 3);
	struct drm_vgsched_ctx_query q;
	int fd, status = 1;
	__u32 ctx;

	ASSERT_EQ(0, vgsched_module_unload());
	ASSERT_EQ(0, vgsched_module_load(params)) TH_LOG("%s", params);
	fd = vgsched_open_render_node();
	ASSERT_GE(fd, 0);
	ctx = vgsched_ctx_create(fd, 8);
	ASSERT_NE(0, ctx);
	ASSERT_EQ(0, vg_program(fd, words, len, &prog));
	ASSERT_EQ(0, vg_buf_create(fd, 4096, &out));
	memset(out.map, 0xff, 4096);
	struct drm_vgsched_submit s = vg_job(ctx, &prog, len, &out.handle, 1, 2, 1, 64);

	for (int i = 0; i < nrefused; i++) {
		s.seqno = 0;
		if (vgpr)
			s.vgpr_blocks = refused[i];
		else
			s.shared_mem_blocks = refused[i];
		EXPECT_EQ(-E2BIG, vgsched_submit(fd, &s)) TH_LOG("%s: need %u accepted", params, refused[i]);
	}
	ASSERT_EQ(0, vgsched_ctx_query(fd, ctx, &q));
	ASSERT_EQ(0, q.jobs_submitted);
	s.seqno = 0;
	if (vgpr)
		s.vgpr_blocks = largest;
	else
		s.shared_mem_blocks = largest;
	ASSERT_EQ(0, vgsched_submit(fd, &s));
	ASSERT_EQ(0, vgsched_wait(fd, ctx, s.seqno, 30 * VG_SECOND_NS, &status));
	ASSERT_EQ(0, status);
	for (int t = 0; t < 2 * 64; t++) {
		ASSERT_EQ(t, ((__u32 *)out.map)[t]);
	}
	vg_buf_destroy(fd, &prog);
	vg_buf_destroy(fd, &out);
	close(fd);
	ASSERT_EQ(0, vgsched_module_unload());
	ASSERT_EQ(0, vgsched_module_load(""));
}

/* Sampled: a need of 33 to 48 blocks looks for 64 on the 48-block module. */
TEST(sampled_finder_refuses_needs_it_rounds_past_the_module)
{
	__u32 refused[16];

	for (int i = 0; i < 16; i++)
		refused[i] = 33 + i;
	finder_limits(_metadata, "finder=2", 0, refused, 16, 32);
}

/* Grouped by 4: on a 50-block module 49 and 50 round to 52 of 48 usable. */
TEST(grouped_finder_refuses_needs_it_rounds_past_the_module)
{
	static const __u32 refused[] = { 49, 50 };

	finder_limits(_metadata, "finder=1 shared_mem_blocks=50", 0, refused, 2, 48);
}

/* Grouped by 4: one wave of 125 or 126 of a unit's 126 register blocks. */
TEST(grouped_finder_refuses_registers_it_rounds_past_the_unit)
{
	static const __u32 refused[] = { 125, 126 };

	finder_limits(_metadata, "finder=1 vgpr_blocks=126", 1, refused, 2, 124);
}

/*
 * Packed (exact): a unit's 64 vector and 48 scalar register maps are
 * searched in one 128-bit pass; a wave of all 64 vector blocks fits (the
 * exact answer), 65 never can.
 */
TEST(packed_finder_places_exactly)
{
	static const __u32 refused[] = { 65 };

	finder_limits(_metadata, "finder=3 vgpr_blocks=64 sgpr_blocks=48", 1, refused, 1, 64);
}

TEST_HARNESS_MAIN
