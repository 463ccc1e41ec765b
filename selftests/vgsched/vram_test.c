// SPDX-License-Identifier: GPL-2.0
/*
 * Device memory (uAPI 1.4): jobs run on device copies of their buffer
 * objects, managed by the GPU buddy allocator.
 *  - results stay exact when device memory is smaller than the working
 *    set of all contexts: objects are evicted, least recently used first,
 *    and uploaded again, and a job that finds no room waits;
 *  - what the CPU writes through mmap() after DRM_VGSCHED_CPU_PREP_WRITE
 *    reaches the next job, and a job's results are in the mapping once its
 *    fence has signalled (written back), the rest of the object intact;
 *  - an object already resident is not uploaded again; uploads and
 *    write-backs take their modeled time at vram_bandwidth_mbps;
 *  - a job whose objects can never fit together is refused with E2BIG;
 *  - BO_CPU_PREP checks its input and says EBUSY while a job uses the
 *    object;
 *  - fdinfo's drm-total-vram and drm-resident-vram follow the file's
 *    objects into device memory and out of it;
 *  - closing the file or killing the process mid-job gives every byte of
 *    device memory back.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vgsched_programs.h"

/* Threads of the vector-add jobs: 16 groups of 64. */
#define GROUPS 16
#define THREADS 64
#define N (GROUPS * THREADS)

/* c = a + b over N threads, on buffer objects of @bytes each. */
struct add_job {
	struct vg_buf prog, a, b, c;
	__u32 bind[3];
	unsigned int len;
	struct drm_vgsched_submit s;
};

static int add_job_init(int fd, struct add_job *j, __u32 ctx, size_t bytes)
{
	__u64 words[16];
	int ret;

	memset(j, 0, sizeof(*j));
	j->len = vg_prog_vector_add(words, 0);
	ret = vg_program(fd, words, j->len, &j->prog);
	ret = ret ?: vg_buf_create(fd, bytes, &j->a);
	ret = ret ?: vg_buf_create(fd, bytes, &j->b);
	ret = ret ?: vg_buf_create(fd, bytes, &j->c);
	if (ret)
		return ret;
	j->bind[0] = j->a.handle;
	j->bind[1] = j->b.handle;
	j->bind[2] = j->c.handle;
	j->s = vg_job(ctx, &j->prog, j->len, j->bind, 3, GROUPS, 1, THREADS);
	j->s.binding_access[0] = DRM_VGSCHED_BINDING_READ;
	j->s.binding_access[1] = DRM_VGSCHED_BINDING_READ;
	j->s.binding_access[2] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
	return 0;
}

/* Inputs of round @round: a[i] = i * 3 + round, b[i] = round * 1000; c poisoned. */
static void add_job_fill(struct add_job *j, uint32_t round)
{
	uint32_t *a = j->a.map, *b = j->b.map, *c = j->c.map;
	size_t words = j->c.size / 4;

	for (int i = 0; i < N; i++) {
		a[i] = i * 3 + round;
		b[i] = round * 1000;
		c[i] = 0xdeadbeef;
	}
	/* A word no thread touches: a write-back must keep it. */
	c[words - 1] = 0x5eed0000 + round;
}

/* Index of the first wrong word of round @round's result, or -1. */
static int add_job_wrong(const struct add_job *j, uint32_t round)
{
	const uint32_t *c = j->c.map;

	for (int i = 0; i < N; i++)
		if (c[i] != i * 3 + round + round * 1000)
			return i;
	if (c[j->c.size / 4 - 1] != 0x5eed0000 + round)
		return (int)(j->c.size / 4 - 1);
	return -1;
}

static int add_job_submit(int fd, struct add_job *j)
{
	j->s.seqno = 0;
	return vgsched_submit(fd, &j->s);
}

/* The CPU is about to write every input of @j again. */
static int add_job_prep_write(int fd, struct add_job *j)
{
	const __u32 w = DRM_VGSCHED_CPU_PREP_WRITE;

	return vgsched_bo_cpu_prep(fd, j->a.handle, w, VG_SECOND_NS) ?:
	       vgsched_bo_cpu_prep(fd, j->b.handle, w, VG_SECOND_NS) ?:
	       vgsched_bo_cpu_prep(fd, j->c.handle, w, VG_SECOND_NS);
}

static void add_job_fini(int fd, struct add_job *j)
{
	vg_buf_destroy(fd, &j->prog);
	vg_buf_destroy(fd, &j->a);
	vg_buf_destroy(fd, &j->b);
	vg_buf_destroy(fd, &j->c);
}

FIXTURE(vram) {
	int fd;
	__u32 ctx[3];
};

FIXTURE_VARIANT(vram) {
	const char *params;
};

/*
 * 1 MiB of device memory, two slots: a job may have 1 MiB less its own
 * context's state area of 64 KiB, 960 KiB; three objects of 256 KiB fit,
 * six do not.
 */
FIXTURE_VARIANT_ADD(vram, small) {
	.params = "vram_mib=1 hw_slots=2",
};

/* 100 MB/s: 1 MiB takes 10.49 ms each way. */
FIXTURE_VARIANT_ADD(vram, slow_copies) {
	.params = "vram_mib=4 vram_bandwidth_mbps=100",
};

FIXTURE_SETUP(vram)
{
	struct drm_vgsched_gpu_info info;

	ASSERT_EQ(0, vgsched_module_unload());
	ASSERT_EQ(0, vgsched_module_load(variant->params));
	self->fd = vgsched_open_render_node();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, vgsched_query_gpu_info(self->fd, &info));
	ASSERT_GE(info.uapi_minor, 4);
	for (int i = 0; i < 3; i++) {
		self->ctx[i] = vgsched_ctx_create(self->fd, 8);
		ASSERT_NE(0, self->ctx[i]);
	}
}

FIXTURE_TEARDOWN(vram)
{
	close(self->fd);
	EXPECT_TRUE(vram_all_free()) TH_LOG("device memory not given back on close");
	EXPECT_EQ(0, vgsched_module_unload());
	EXPECT_EQ(0, vgsched_module_load(""));
}

/*
 * Three contexts take turns, each on its own three 256 KiB objects: 2.25
 * MiB of objects through 1 MiB of device memory. All three jobs of a round
 * are queued at once, so the second waits for room the first gives back.
 */
TEST_F(vram, results_stay_exact_when_objects_are_evicted)
{
	struct add_job j[3];
	long long evictions;

	if (strcmp(variant->params, "vram_mib=1 hw_slots=2"))
		SKIP(return, "needs the small device");
	for (int k = 0; k < 3; k++)
		ASSERT_EQ(0, add_job_init(self->fd, &j[k], self->ctx[k], 256 << 10));
	evictions = vram_number("evictions");
	for (uint32_t round = 1; round <= 4; round++) {
		for (int k = 0; k < 3; k++) {
			ASSERT_EQ(0, add_job_prep_write(self->fd, &j[k]));
			add_job_fill(&j[k], round * 10 + k);
		}
		for (int k = 0; k < 3; k++)
			ASSERT_EQ(0, add_job_submit(self->fd, &j[k]));
		for (int k = 0; k < 3; k++) {
			ASSERT_EQ(0, wait_ok(self->fd, self->ctx[k], j[k].s.seqno));
			ASSERT_EQ(-1, add_job_wrong(&j[k], round * 10 + k))
				TH_LOG("round %u, context %d", round, k);
		}
	}
	EXPECT_GE(vram_number("evictions") - evictions, 3)
		TH_LOG("nothing was evicted: the test proves nothing");
	for (int k = 0; k < 3; k++)
		add_job_fini(self->fd, &j[k]);
}

/*
 * The same object runs through two jobs: the second sees what the CPU
 * wrote after CPU_PREP_WRITE; only the pages the CPU wrote are uploaded
 * again, and an input read-only in both and left alone not at all.
 */
TEST_F(vram, the_next_job_sees_what_the_cpu_wrote)
{
	struct add_job j;
	long long uploaded;

	ASSERT_EQ(0, add_job_init(self->fd, &j, self->ctx[0], 64 << 10));
	add_job_fill(&j, 1);
	ASSERT_EQ(0, add_job_submit(self->fd, &j));
	ASSERT_EQ(0, wait_ok(self->fd, self->ctx[0], j.s.seqno));
	ASSERT_EQ(-1, add_job_wrong(&j, 1));
	/* Only a changes: b stays resident as it is. */
	ASSERT_EQ(0, vgsched_bo_cpu_prep(self->fd, j.a.handle, DRM_VGSCHED_CPU_PREP_WRITE, 0));
	for (int i = 0; i < N; i++)
		((uint32_t *)j.a.map)[i] = 7 * i;
	uploaded = vram_number("uploaded");
	ASSERT_EQ(0, add_job_submit(self->fd, &j));
	ASSERT_EQ(0, wait_ok(self->fd, self->ctx[0], j.s.seqno));
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(7 * i + 1000, ((uint32_t *)j.c.map)[i]) TH_LOG("word %d", i);
	}
	EXPECT_LE(N * 4, vram_number("uploaded") - uploaded)
		TH_LOG("a's pages the CPU wrote are uploaded again");
	EXPECT_GE(64 << 10, vram_number("uploaded") - uploaded)
		TH_LOG("only a, the object the CPU wrote, is uploaded again");
	add_job_fini(self->fd, &j);
}

/*
 * At 100 MB/s a 1 MiB object the job writes takes 10.49 ms up before it
 * runs, and the one page it stores to 41 us back before its fence signals;
 * run again, resident, only that write-back.
 */
TEST_F(vram, copies_take_their_modeled_time)
{
	const __u64 copy_ns = (1ull << 20) * 1000 / 100, page_ns = 4096ull * 1000 / 100;
	struct busy_job w;
	__u64 t0, first, second;

	if (strcmp(variant->params, "vram_mib=4 vram_bandwidth_mbps=100"))
		SKIP(return, "needs the slow copies");
	ASSERT_EQ(0, busy_job_init(self->fd, &w, self->ctx[0], 1, 1, 1, THREADS, 1));
	/* The object grows to 1 MiB; the job writes its first words. */
	vg_buf_destroy(self->fd, &w.out);
	ASSERT_EQ(0, vg_buf_create(self->fd, 1 << 20, &w.out));
	w.binding = w.out.handle;
	t0 = vg_now_ns();
	ASSERT_EQ(0, busy_submit(self->fd, &w));
	ASSERT_EQ(0, wait_ok(self->fd, self->ctx[0], w.s.seqno));
	first = vg_now_ns() - t0;
	ASSERT_EQ(-1, busy_job_wrong(&w));
	EXPECT_GE(first, copy_ns + page_ns) TH_LOG("upload and write-back took %llu ns", first);
	t0 = vg_now_ns();
	ASSERT_EQ(0, busy_submit(self->fd, &w));
	ASSERT_EQ(0, wait_ok(self->fd, self->ctx[0], w.s.seqno));
	second = vg_now_ns() - t0;
	EXPECT_GE(second, page_ns) TH_LOG("write-back took %llu ns", second);
	EXPECT_EQ(1 << 20, vram_number("uploaded")) TH_LOG("the resident object was uploaded again");
	/* Each job wrote back the one page it stored to, not the object. */
	EXPECT_EQ(2 * 4096, vram_number("written_back"));
	busy_job_fini(self->fd, &w);
}

/*
 * One process's job writes an object (x[i] = i, after 200 ms); another
 * process, with its own file, imports it and adds it to its own b in a
 * job that waits for the writer through the object's reservation. A third
 * context of the first process meanwhile runs jobs over 768 KiB, so the
 * objects are evicted and uploaded again between the two. The reader sees
 * exactly what the writer stored.
 */
TEST_F(vram, another_process_reads_what_a_job_wrote_in_fence_order)
{
	struct busy_job w;
	struct add_job big;
	int dmabuf, pipefd[2], status;
	pid_t child;

	if (strcmp(variant->params, "vram_mib=1 hw_slots=2"))
		SKIP(return, "needs the small device");
	ASSERT_EQ(0, busy_job_init(self->fd, &w, self->ctx[0], 200, 1, 1, 64, 1));
	dmabuf = vg_prime_export(self->fd, w.out.handle);
	ASSERT_GE(dmabuf, 0);
	ASSERT_EQ(0, add_job_init(self->fd, &big, self->ctx[1], 256 << 10));
	ASSERT_EQ(0, pipe(pipefd));
	ASSERT_EQ(0, busy_submit(self->fd, &w));
	child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		/* The reader: c = x + b over x's 64 words. */
		int fd = vgsched_open_render_node(), ok = 1;
		__u32 ctx = fd < 0 ? 0 : vgsched_ctx_create(fd, 8);
		struct add_job r;

		if (!ctx || add_job_init(fd, &r, ctx, 4096))
			_exit(2);
		r.bind[0] = vg_prime_import(fd, dmabuf);
		r.s.threads_per_wave = 64;
		r.s.groups = 1;
		for (int i = 0; i < 64; i++)
			((uint32_t *)r.b.map)[i] = 1000;
		if (!r.bind[0] || add_job_submit(fd, &r) || write(pipefd[1], "s", 1) != 1 ||
		    wait_ok(fd, ctx, r.s.seqno))
			_exit(3);
		for (int i = 0; i < 64; i++)
			ok &= ((uint32_t *)r.c.map)[i] == (uint32_t)i + 1000;
		_exit(ok ? 0 : 1);
	}
	char c;

	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	/* Pressure while the reader waits for the writer. */
	for (uint32_t round = 1; round <= 3; round++) {
		ASSERT_EQ(0, add_job_prep_write(self->fd, &big));
		add_job_fill(&big, round);
		ASSERT_EQ(0, add_job_submit(self->fd, &big));
		ASSERT_EQ(0, wait_ok(self->fd, self->ctx[1], big.s.seqno));
		ASSERT_EQ(-1, add_job_wrong(&big, round));
	}
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("the reader saw other words (exit %d)", WEXITSTATUS(status));
	ASSERT_EQ(0, wait_ok(self->fd, self->ctx[0], w.s.seqno));
	close(dmabuf);
	close(pipefd[0]);
	close(pipefd[1]);
	busy_job_fini(self->fd, &w);
	add_job_fini(self->fd, &big);
}

/* fdinfo's device-memory keys follow the file's objects. */
TEST_F(vram, fdinfo_shows_the_device_region)
{
	struct add_job j;
	long long total;

	ASSERT_EQ(0, add_job_init(self->fd, &j, self->ctx[0], 64 << 10));
	total = fdinfo_kib(self->fd, "drm-total-vram");
	/* Three objects of 64 KiB and the program's page. */
	EXPECT_EQ(3 * 64 + 4, total);
	EXPECT_EQ(0, fdinfo_kib(self->fd, "drm-resident-vram"));
	add_job_fill(&j, 3);
	ASSERT_EQ(0, add_job_submit(self->fd, &j));
	ASSERT_EQ(0, wait_ok(self->fd, self->ctx[0], j.s.seqno));
	EXPECT_EQ(3 * 64, fdinfo_kib(self->fd, "drm-resident-vram"));
	ASSERT_EQ(0, vgsched_bo_cpu_prep(self->fd, j.a.handle, DRM_VGSCHED_CPU_PREP_WRITE, 0));
	EXPECT_EQ(2 * 64, fdinfo_kib(self->fd, "drm-resident-vram"));
	EXPECT_EQ(total, fdinfo_kib(self->fd, "drm-total-vram"));
	add_job_fini(self->fd, &j);
	EXPECT_EQ(0, fdinfo_kib(self->fd, "drm-total-vram"));
}

/* Bindings that can never fit together: E2BIG, nothing queued. */
TEST_F(vram, a_job_that_can_never_fit_is_refused)
{
	struct add_job j;
	__u64 before;

	if (strcmp(variant->params, "vram_mib=1 hw_slots=2"))
		SKIP(return, "needs the small device");
	/* Three distinct 448 KiB objects: 1344 KiB, more than 896. */
	ASSERT_EQ(0, add_job_init(self->fd, &j, self->ctx[0], 448 << 10));
	add_job_fill(&j, 2);
	before = vram_number("uploaded");
	ASSERT_EQ(-E2BIG, add_job_submit(self->fd, &j));
	EXPECT_EQ(before, vram_number("uploaded"));
	/* A scratch area that cannot fit beside them: E2BIG too. */
	j.bind[1] = j.a.handle;
	j.s.scratch_bytes = 512 << 10;
	ASSERT_EQ(-E2BIG, add_job_submit(self->fd, &j));
	j.s.scratch_bytes = 0;
	/* a bound twice counts once: a, a, c is 896 KiB and fits. */
	j.bind[1] = j.a.handle;
	ASSERT_EQ(0, add_job_submit(self->fd, &j));
	ASSERT_EQ(0, wait_ok(self->fd, self->ctx[0], j.s.seqno));
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(2 * (i * 3 + 2), ((uint32_t *)j.c.map)[i]);
	}
	add_job_fini(self->fd, &j);
}

/*
 * BO_CPU_PREP: bad flags EINVAL, unknown handle ENOENT, EBUSY while in use
 * (ETIMEDOUT past an absolute deadline), and waiting until the job is done.
 */
TEST_F(vram, cpu_prep_checks_its_input_and_says_busy)
{
	struct busy_job w;

	ASSERT_EQ(0, busy_job_init(self->fd, &w, self->ctx[0], 300, 1, 1, THREADS, 1));
	EXPECT_EQ(-EINVAL, vgsched_bo_cpu_prep(self->fd, w.out.handle, 0, 0));
	EXPECT_EQ(-EINVAL, vgsched_bo_cpu_prep(self->fd, w.out.handle, 4, 0));
	EXPECT_EQ(-ENOENT, vgsched_bo_cpu_prep(self->fd, 0x7fffffff, DRM_VGSCHED_CPU_PREP_READ, 0));
	ASSERT_EQ(0, busy_submit(self->fd, &w));
	EXPECT_EQ(-EBUSY, vgsched_bo_cpu_prep(self->fd, w.out.handle, DRM_VGSCHED_CPU_PREP_READ, 0));
	EXPECT_EQ(-EBUSY, vgsched_bo_cpu_prep(self->fd, w.out.handle, DRM_VGSCHED_CPU_PREP_WRITE, 0));
	/* A deadline already past: ETIMEDOUT, not EBUSY. */
	EXPECT_EQ(-ETIMEDOUT, vgsched_bo_cpu_prep(self->fd, w.out.handle,
						  DRM_VGSCHED_CPU_PREP_READ | DRM_VGSCHED_CPU_PREP_ABSOLUTE,
						  vg_now_ns() - 1));
	EXPECT_EQ(-EINVAL, vgsched_bo_cpu_prep(self->fd, w.out.handle,
					       DRM_VGSCHED_CPU_PREP_ABSOLUTE, 0));
	/* Waits for the job (until a deadline 10 s ahead); then its results are in the mapping. */
	ASSERT_EQ(0, vgsched_bo_cpu_prep(self->fd, w.out.handle,
					 DRM_VGSCHED_CPU_PREP_READ | DRM_VGSCHED_CPU_PREP_ABSOLUTE,
					 vg_now_ns() + 10 * VG_SECOND_NS));
	EXPECT_EQ(-1, busy_job_wrong(&w));
	/* Done: a relative check says so at once. */
	ASSERT_EQ(0, vgsched_bo_cpu_prep(self->fd, w.out.handle, DRM_VGSCHED_CPU_PREP_READ,
					 10 * VG_SECOND_NS));
	EXPECT_EQ(-1, busy_job_wrong(&w));
	busy_job_fini(self->fd, &w);
}

/* Closing the file or killing the process mid-job frees all device memory. */
TEST_F(vram, close_and_kill_mid_job_give_all_memory_back)
{
	int other = vgsched_open_render_node();
	__u32 ctx = other < 0 ? 0 : vgsched_ctx_create(other, 8);
	struct busy_job w;
	pid_t child;

	ASSERT_NE(0, ctx);
	ASSERT_EQ(0, busy_job_init(other, &w, ctx, 2000, 1, 1, THREADS, 1));
	ASSERT_EQ(0, busy_submit(other, &w));
	ASSERT_TRUE(still_running(other, ctx, w.s.seqno));
	/* Poll: preparing runs beside the submission. */
	for (int i = 0; i < 100 && vram_number("free") == vram_number("size"); i++)
		usleep(10000);
	ASSERT_LT(vram_number("free"), vram_number("size")) TH_LOG("the job holds no device memory");
	munmap(w.out.map, w.out.size);
	munmap(w.prog.map, w.prog.size);
	close(other);
	ASSERT_TRUE(vram_all_free());

	child = vg_spawn_endless_child();
	ASSERT_GT(child, 0);
	for (int i = 0; i < 100 && vram_number("free") == vram_number("size"); i++)
		usleep(10000);
	ASSERT_LT(vram_number("free"), vram_number("size"));
	ASSERT_EQ(0, kill(child, SIGKILL));
	ASSERT_EQ(child, waitpid(child, NULL, 0));
	ASSERT_TRUE(vram_all_free());
}

TEST_HARNESS_MAIN
