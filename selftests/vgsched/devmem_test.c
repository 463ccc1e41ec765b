// SPDX-License-Identifier: GPL-2.0
/*
 * Device memory as a program relies on it: what the CPU writes through
 * mmap() and what jobs compute stay exact, and no combination of device
 * memory, the preparation pipeline and priority levels leaves a job
 * unfinished.
 *  - old_program_rewrites_inputs_through_mmap: a uAPI 1.3 program, which
 *    never calls BO_CPU_PREP, writes new inputs into its objects through
 *    mmap() before each job (integer and float vector adds in turn, the
 *    output poisoned and a word no thread touches changed each round) and
 *    finds every word of each result exact: a device copy left resident
 *    by the previous job is never used once the CPU has written the
 *    object, and the write-back keeps what the CPU wrote where the job
 *    did not store;
 *  - ..._while_evicted: the same on 4 MiB of device memory while another
 *    file's jobs evict the objects between rounds (before and after the
 *    CPU's writes), and in the rounds that follow an upload again;
 *  - cpu_write_beside_running_job_survives: what the CPU writes through
 *    mmap() into a page of an object that a running job does not store
 *    to is still there once the job's fence has signalled, beside the
 *    job's results in the page it stored to (the write-back does not
 *    bring back the page's older device copy);
 *  - big_low_job_preempted_by_high, swapped_levels_all_finish,
 *    low_prepared_ahead_does_not_block_high: a job over a 40 MiB object
 *    (above the 32 MiB sub-task threshold, so it holds the next task's
 *    phase 2 back) and small jobs of other priority levels, in every order
 *    of arrival, one slot or eight, pipelined or sequential: slot
 *    selection's preemption of a lower level never leaves a job waiting
 *    for memory or a pipeline stage that only the preempted job could give
 *    back, nor does a lower level's job prepared ahead as the next task
 *    while a higher level's job over 24 MiB (which does not fit beside it)
 *    arrives; every job ends with status 0 within 15 s, results exact;
 *  - two_17mib_jobs: a level-9 job over 17 MiB preempted by a level-8 job
 *    over another 17 MiB object (34 MiB together, above the threshold
 *    that lets two contexts' jobs execute side by side): both finish;
 *  - reader_fault_does_not_cancel_writer: a job of another file that only
 *    reads an object and faults (-EFAULT) does not cancel the job that
 *    writes the object after it through implicit synchronisation: the
 *    writer waits for the reader, then runs and stores its results;
 *  - same_objects_overlap_preparation: three jobs of one context on the
 *    same model and output objects are pipelined like jobs on distinct
 *    objects: each next job's phase 2 starts before the previous job's
 *    last wave;
 *  - context_keeps_its_slot_between_its_jobs: on one slot, a context with
 *    three queued jobs on the same model and output objects (its own
 *    earlier jobs' fences on them do not hold its next job back) keeps
 *    its slot from its first job to the end of its third (no eviction
 *    while its next job is prepared), and a context of a lower level is
 *    loaded only after that;
 *  - phase1_threshold_holds_under_preemption: at a phase-1 threshold of
 *    two state areas, a higher level's context loaded by preemption is
 *    initialised only after a context initialised ahead of its load gave
 *    its area back: never more than two areas are held at once;
 *  - writes_through_any_mapping_reach_the_next_job: a write through a
 *    second mapping split by munmap(), or through a mapping of the
 *    object's dma-buf, reaches the next job over the resident copy;
 *  - stores_survive_next_job_*: a job's stores to an object mapped
 *    through its dma-buf (read-only and never written, read-write, or
 *    written by the CPU in another page while the job runs) are what the
 *    next job of its context reads, prepared while the first one runs, and
 *    stay in the object (with the CPU's write) once both have signalled;
 *  - a_read_only_holders_job_does_not_hold_the_writer_back: a job of a
 *    holder that may only read a public object, behind an in-fence that
 *    does not signal, does not delay the owner's job that writes it;
 *  - job_at_memory_limit_runs: a job whose objects take device memory
 *    less exactly one context state area is accepted and runs, one page
 *    more is refused with E2BIG, whatever the number of slots.
 * Each test that needs parameters reloads the module with them (the
 * default module again afterwards); the others use the default module.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vgsched_programs.h"
#include "vgsched_projects.h"

#define THREADS 64
#define KIB 1024ull
#define MIB (1024ull * 1024)
/* How long a job may take to finish, once it can run, before a test calls it wedged. */
#define WAIT_NS (15 * VG_SECOND_NS)
/* finish(): the job did not end within WAIT_NS. */
#define NOT_DONE 1000
#define FILES 3
/* What a long job runs for: long enough to be seen running under TCG. */
#define LONG_MS 400

#define I(op, rd, ra, rb, imm) vg_instr(DRM_VGSCHED_OP_##op, rd, ra, rb, imm)

/*
 * Every thread spins @loops times (four loads of word 0 of binding 1 and
 * the loop: VG_SLOW_LOOP_CYCLES each), then stores word (global id x
 * @stride) of binding 1 to word (global id) of binding 0. Bindings: out
 * (read-write), big (read-only).
 */
static unsigned int prog_slow_sample(__u64 *p, int loops, int stride)
{
	unsigned int n = 0;

	p[n++] = I(MOVI, 0, 0, 0, loops);
	for (int i = 0; i < 4; i++)
		p[n++] = I(LD, 2, 3, 1, 0);			/* 1-4: loop */
	p[n++] = I(ADDI, 0, 0, 0, -1);
	p[n++] = I(BRNZ, 0, 0, 0, 1);
	p[n++] = I(SREG, 1, 0, 0, DRM_VGSCHED_SREG_GLOBAL_ID);
	p[n++] = I(MOVI, 4, 0, 0, stride);
	p[n++] = I(MUL, 5, 1, 4, 0);
	p[n++] = I(LD, 6, 5, 1, 0);
	p[n++] = I(ST, 6, 1, 0, 0);
	p[n++] = I(END, 0, 0, 0, 0);
	return n;
}

/*
 * Every thread spins @loops times loading word 0 of binding 0, then loads
 * a word far past its end: the job ends with -EFAULT. It stores nothing.
 */
static unsigned int prog_slow_fault(__u64 *p, int loops)
{
	unsigned int n = 0;

	p[n++] = I(MOVI, 0, 0, 0, loops);
	for (int i = 0; i < 4; i++)
		p[n++] = I(LD, 2, 3, 0, 0);			/* 1-4: loop */
	p[n++] = I(ADDI, 0, 0, 0, -1);
	p[n++] = I(BRNZ, 0, 0, 0, 1);
	p[n++] = I(MOVI, 4, 0, 0, 0x7fffffff);
	p[n++] = I(LD, 5, 4, 0, 0);
	p[n++] = I(END, 0, 0, 0, 0);
	return n;
}

/*
 * Every thread stores its global id to word (global id) of binding 0 first,
 * then spins @loops times (vg_prog_slow_store's loop): a job whose stores
 * are in its device copy long before it ends.
 */
static unsigned int prog_store_then_spin(__u64 *p, int loops)
{
	unsigned int n = 0;

	p[n++] = I(SREG, 1, 0, 0, DRM_VGSCHED_SREG_GLOBAL_ID);
	p[n++] = I(ST, 1, 1, 0, 0);
	p[n++] = I(MOVI, 0, 0, 0, loops);
	for (int i = 0; i < 4; i++)
		p[n++] = I(LD, 2, 3, 0, 0);			/* 3-6: loop */
	p[n++] = I(ADDI, 0, 0, 0, -1);
	p[n++] = I(BRNZ, 0, 0, 0, 3);
	p[n++] = I(END, 0, 0, 0, 0);
	return n;
}

#undef I

/* The status of job @seqno once it ends, or NOT_DONE if it has not within WAIT_NS. */
static int finish(int fd, __u32 ctx, __u64 seqno)
{
	int status = NOT_DONE;

	if (vgsched_wait(fd, ctx, seqno, WAIT_NS, &status))
		return NOT_DONE;
	return status;
}

/* Waits up to 10 s for a stage record (as stage_at()); 0 if none came. */
static __u64 wait_stage(__u64 client, unsigned int ctx, __u64 job, const char *event, __u64 after)
{
	__u64 t = 0;

	for (int i = 0; i < 1000 && !(t = stage_at(client, ctx, job, event, after)); i++)
		usleep(10000);
	return t;
}

/* A slot event of the placement log ("load", "leave", "preempt", "turn"). */
struct slot_event {
	char kind[16];
	__u64 t, client;
	unsigned int ctx;
};

/* The slot events of the placement log, in order; how many, or -errno. */
static int slot_events(struct slot_event *out, int max)
{
	char *buf = NULL, *line, *save = NULL;
	int n = 0, ret = vgsched_placement_log(&buf);

	if (ret)
		return ret;
	for (line = strtok_r(buf, "\n", &save); line && n < max; line = strtok_r(NULL, "\n", &save)) {
		struct slot_event *e = &out[n];

		memset(e, 0, sizeof(*e));
		if (sscanf(line, "#%*u t=%llu %15[a-z] client=%llu ctx=%u", &e->t, e->kind, &e->client,
			   &e->ctx) == 4)
			n++;
	}
	free(buf);
	return n;
}

/*
 * A job of one wave of THREADS threads that spins for its modeled time,
 * then stores into its own 4 KiB out object: with @big, word (id x
 * stride) of @big, which it binds read-only (so its footprint is @big's
 * bytes); without, its global id (vg_prog_slow_store).
 */
struct job {
	int fd;
	__u32 ctx;
	__u64 client, submitted_ns;
	struct vg_buf prog, out;
	__u32 bind[2];
	const struct vg_buf *big;
	struct drm_vgsched_submit s;
};

/* Word @i of a big object's sample: what thread @i of a job over it stores. */
#define SAMPLE(i) (0xb1600000u + (uint32_t)(i))

/* Words between two samples of @big: the samples spread over the whole object. */
static int sample_stride(const struct vg_buf *big)
{
	return (int)(big->size / 4 / THREADS);
}

/* Creates a big object and writes its THREADS samples; 0 or -errno. */
static int big_create(int fd, size_t bytes, struct vg_buf *big)
{
	int ret = vg_buf_create(fd, bytes, big);

	for (int i = 0; !ret && i < THREADS; i++)
		((uint32_t *)big->map)[(size_t)i * sample_stride(big)] = SAMPLE(i);
	return ret;
}

static int job_init(int fd, struct job *j, __u32 ctx, int ms, const struct vg_buf *big)
{
	__u64 words[16];
	unsigned int len;
	int ret;

	memset(j, 0, sizeof(*j));
	j->fd = fd;
	j->ctx = ctx;
	j->client = vgsched_client_id(fd, ctx);
	j->big = big;
	len = big ? prog_slow_sample(words, LOOPS_FOR_MS(ms), sample_stride(big)) :
		    vg_prog_slow_store(words, LOOPS_FOR_MS(ms));
	ret = vg_program(fd, words, len, &j->prog) ?: vg_buf_create(fd, 4096, &j->out);
	if (ret)
		return ret;
	memset(j->out.map, 0xff, 4096);
	j->bind[0] = j->out.handle;
	j->bind[1] = big ? big->handle : 0;
	j->s = vg_job(ctx, &j->prog, len, j->bind, big ? 2 : 1, 1, 1, THREADS);
	j->s.vgpr_blocks = 1;
	j->s.sgpr_blocks = 1;
	j->s.shared_mem_blocks = 0;
	j->s.binding_access[0] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
	if (big)
		j->s.binding_access[1] = DRM_VGSCHED_BINDING_READ;
	return 0;
}

static int job_submit(struct job *j)
{
	j->s.seqno = 0;
	j->submitted_ns = vg_now_ns();
	return vgsched_submit(j->fd, &j->s);
}

static int job_finish(const struct job *j)
{
	return finish(j->fd, j->ctx, j->s.seqno);
}

static int job_running(const struct job *j)
{
	return still_running(j->fd, j->ctx, j->s.seqno);
}

/* When @event of @j was recorded (0 if not yet). */
static __u64 job_stage(const struct job *j, const char *event)
{
	return stage_at(j->client, j->ctx, j->s.seqno, event, j->submitted_ns);
}

/* Index of the first wrong word of @j's results, or -1. */
static int job_wrong(const struct job *j)
{
	const uint32_t *out = j->out.map;

	for (int i = 0; i < THREADS; i++)
		if (out[i] != (j->big ? SAMPLE(i) : (uint32_t)i))
			return i;
	for (int i = THREADS; i < 1024; i++)
		if (out[i] != 0xffffffffu)
			return i;
	return -1;
}

static void job_fini(struct job *j)
{
	vg_buf_destroy(j->fd, &j->prog);
	vg_buf_destroy(j->fd, &j->out);
}

FIXTURE(devmem) {
	int fd[FILES];
	int reloaded;
	char config[64];
};

FIXTURE_SETUP(devmem)
{
	for (int i = 0; i < FILES; i++)
		self->fd[i] = -1;
	self->reloaded = 0;
	strcpy(self->config, "default module");
}

/* Unloads the module, retrying while a file of an exited process is still being released. */
static int unload_module(void)
{
	int ret = vgsched_module_unload();

	for (int i = 0; i < 300 && (ret == -EBUSY || ret == -EAGAIN); i++) {
		usleep(10000);
		ret = vgsched_module_unload();
	}
	return ret;
}

/*
 * In the parent, once the test's process (its files, mappings and jobs)
 * is gone, even after a failed assertion: the default module again.
 */
FIXTURE_TEARDOWN_PARENT(devmem)
{
	if (!self->reloaded)
		return;
	EXPECT_EQ(0, unload_module());
	EXPECT_EQ(0, vgsched_module_load(""));
}

static void close_files(FIXTURE_DATA(devmem) *self)
{
	for (int i = 0; i < FILES; i++) {
		if (self->fd[i] >= 0)
			close(self->fd[i]);
		self->fd[i] = -1;
	}
}

/*
 * Reloads the module with @params (NULL: keeps the loaded default module)
 * and opens FILES files on it. Every object of the files must be unmapped.
 */
static void open_device(struct __test_metadata *_metadata, FIXTURE_DATA(devmem) *self,
			const char *params)
{
	close_files(self);
	if (params) {
		self->reloaded = 1;
		ASSERT_EQ(0, unload_module());
		ASSERT_EQ(0, vgsched_module_load(params)) TH_LOG("%s", params);
		snprintf(self->config, sizeof(self->config), "%s", params);
	}
	for (int i = 0; i < FILES; i++) {
		self->fd[i] = vgsched_open_render_node();
		ASSERT_GE(self->fd[i], 0);
	}
}

/* c = a + b over N threads (vg_prog_vector_add), as a uAPI 1.3 program writes it. */
#define ADD_GROUPS 16
#define N (ADD_GROUPS * THREADS)

struct add_job {
	struct vg_buf prog[2], a, b, c;	/* prog[fadd] */
	unsigned int len[2];
	__u32 bind[3];
	struct drm_vgsched_submit s;
};

static int add_job_init(int fd, struct add_job *j, size_t bytes)
{
	__u64 words[16];
	int ret = 0;

	memset(j, 0, sizeof(*j));
	for (int f = 0; !ret && f < 2; f++) {
		j->len[f] = vg_prog_vector_add(words, f);
		ret = vg_program(fd, words, j->len[f], &j->prog[f]);
	}
	ret = ret ?: vg_buf_create(fd, bytes, &j->a);
	ret = ret ?: vg_buf_create(fd, bytes, &j->b);
	ret = ret ?: vg_buf_create(fd, bytes, &j->c);
	if (ret)
		return ret;
	j->bind[0] = j->a.handle;
	j->bind[1] = j->b.handle;
	j->bind[2] = j->c.handle;
	return 0;
}

static void add_job_fini(int fd, struct add_job *j)
{
	for (int f = 0; f < 2; f++)
		vg_buf_destroy(fd, &j->prog[f]);
	vg_buf_destroy(fd, &j->a);
	vg_buf_destroy(fd, &j->b);
	vg_buf_destroy(fd, &j->c);
}

/* Round @r's inputs: a float round when @fadd, an integer one otherwise. */
static float add_a(int i, uint32_t r)
{
	return (float)(i * 3 + (int)r) * 0.5f;
}

static float add_b(int i, uint32_t r)
{
	return (float)(r * 7) * 0.25f - (float)i * 0.125f;
}

static uint32_t word_a(int i, uint32_t r, int fadd)
{
	float f = add_a(i, r);
	uint32_t w;

	memcpy(&w, &f, 4);
	return fadd ? w : (uint32_t)i * 3 + r * 17;
}

static uint32_t word_b(int i, uint32_t r, int fadd)
{
	float f = add_b(i, r);
	uint32_t w;

	memcpy(&w, &f, 4);
	return fadd ? w : r * 1000 - (uint32_t)i;
}

static uint32_t word_c(int i, uint32_t r, int fadd)
{
	float f = add_a(i, r) + add_b(i, r);
	uint32_t w;

	memcpy(&w, &f, 4);
	return fadd ? w : word_a(i, r, 0) + word_b(i, r, 0);
}

/* The sentinel the CPU writes into c's last word in round @r (no thread stores there). */
#define SENTINEL(r) (0x5eed0000u + (r))

/* Writes round @r's inputs, poisons the output and changes its sentinel, through mmap() only. */
static void add_job_write(struct add_job *j, uint32_t r, int fadd)
{
	uint32_t *a = j->a.map, *b = j->b.map, *c = j->c.map;

	for (int i = 0; i < N; i++) {
		a[i] = word_a(i, r, fadd);
		b[i] = word_b(i, r, fadd);
		c[i] = 0xdeadbeef;
	}
	c[j->c.size / 4 - 1] = SENTINEL(r);
}

/* Index of the first wrong word of round @r's output, or -1. */
static int add_job_wrong(const struct add_job *j, uint32_t r, int fadd)
{
	const uint32_t *c = j->c.map;

	for (int i = 0; i < N; i++)
		if (c[i] != word_c(i, r, fadd))
			return i;
	if (c[j->c.size / 4 - 1] != SENTINEL(r))
		return (int)(j->c.size / 4 - 1);
	return -1;
}

static int add_job_submit(int fd, struct add_job *j, __u32 ctx, int fadd)
{
	j->s = vg_job(ctx, &j->prog[fadd], j->len[fadd], j->bind, 3, ADD_GROUPS, 1, THREADS);
	j->s.binding_access[0] = DRM_VGSCHED_BINDING_READ;
	j->s.binding_access[1] = DRM_VGSCHED_BINDING_READ;
	j->s.binding_access[2] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
	return vgsched_submit(fd, &j->s);
}

/* The objects of the old program: 256 KiB each, so that evicting them takes room. */
#define ADD_BYTES (256 * KIB)
/*
 * Another file's job over a fresh 3580 KiB object and its 4 KiB output:
 * 3.5 MiB. On 4 MiB of device memory, beside at most two 64 KiB state
 * areas, at most one of the three 256 KiB objects can stay.
 */
#define PRESSURE_BYTES ((3584 - 4) * KIB)

static void pressure(struct __test_metadata *_metadata, int fd, __u32 ctx)
{
	struct busy_job p;
	struct vg_buf big;
	__u32 bind[2];

	ASSERT_EQ(0, busy_job_init(fd, &p, ctx, 1, 1, 1, THREADS, 1));
	ASSERT_EQ(0, vg_buf_create(fd, PRESSURE_BYTES, &big));
	bind[0] = p.out.handle;
	bind[1] = big.handle;
	p.s.bindings = (__u64)(unsigned long)bind;
	p.s.binding_count = 2;
	p.s.binding_access[0] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
	p.s.binding_access[1] = DRM_VGSCHED_BINDING_READ;
	ASSERT_EQ(0, busy_submit(fd, &p));
	ASSERT_EQ(0, finish(fd, ctx, p.s.seqno));
	ASSERT_EQ(-1, busy_job_wrong(&p));
	busy_job_fini(fd, &p);
	/* Freed: its device copy goes with it, so the next pressure uploads anew. */
	vg_buf_destroy(fd, &big);
}

/*
 * @rounds rounds of the old program, integer in odd rounds, float in even
 * ones. With @evict, another file's job evicts the objects before rounds 3
 * (after the CPU's writes) and 5 (before them); rounds 4 and 6 run on the
 * copies rounds 3 and 5 uploaded again.
 */
static void old_program(struct __test_metadata *_metadata, FIXTURE_DATA(devmem) *self,
			uint32_t rounds, int evict)
{
	__u32 ctx = vgsched_ctx_create(self->fd[0], 8);
	__u32 other = vgsched_ctx_create(self->fd[1], 8);
	long long evictions = vram_number("evictions");
	struct add_job j;

	ASSERT_NE(0, ctx);
	ASSERT_NE(0, other);
	ASSERT_EQ(0, add_job_init(self->fd[0], &j, ADD_BYTES));
	for (uint32_t r = 1; r <= rounds; r++) {
		int fadd = !(r & 1);

		if (evict && r == 5)
			pressure(_metadata, self->fd[1], other);
		add_job_write(&j, r, fadd);
		if (evict && r == 3)
			pressure(_metadata, self->fd[1], other);
		if (evict && (r == 3 || r == 5)) {
			long long resident = fdinfo_kib(self->fd[0], "drm-resident-vram");

			ASSERT_GE(resident, 0);
			ASSERT_LE(resident, ADD_BYTES / KIB)
				TH_LOG("round %u: %lld KiB of a, b, c still resident: nothing to prove", r,
				       resident);
		}
		ASSERT_EQ(0, add_job_submit(self->fd[0], &j, ctx, fadd));
		ASSERT_EQ(0, finish(self->fd[0], ctx, j.s.seqno)) TH_LOG("round %u", r);
		ASSERT_EQ(-1, add_job_wrong(&j, r, fadd))
			TH_LOG("round %u (%s): a stale device copy, or a write-back over the CPU's words",
			       r, fadd ? "float" : "integer");
		if (r == 1)
			TH_LOG("after round 1: %lld KiB of a, b, c resident",
			       fdinfo_kib(self->fd[0], "drm-resident-vram"));
	}
	TH_LOG("evictions: %lld", vram_number("evictions") - evictions);
	add_job_fini(self->fd[0], &j);
}

TEST_F_TIMEOUT(devmem, old_program_rewrites_inputs_through_mmap, 90)
{
	open_device(_metadata, self, NULL);
	old_program(_metadata, self, 4, 0);
}

TEST_F_TIMEOUT(devmem, old_program_rewrites_inputs_through_mmap_while_evicted, 120)
{
	open_device(_metadata, self, "vram_mib=4 hw_slots=2");
	old_program(_metadata, self, 6, 1);
}

/*
 * A job stores for 400 ms into the first words of a two-page object; the
 * CPU writes the second page meanwhile.
 */
TEST_F_TIMEOUT(devmem, cpu_write_beside_running_job_survives, 60)
{
	const size_t bytes = 8 * KIB, words = bytes / 4, page = 4 * KIB / 4;
	__u32 ctx;
	struct job j;
	uint32_t *x;

	open_device(_metadata, self, NULL);
	ctx = vgsched_ctx_create(self->fd[0], 8);
	ASSERT_NE(0, ctx);
	ASSERT_EQ(0, job_init(self->fd[0], &j, ctx, LONG_MS, NULL));
	vg_buf_destroy(self->fd[0], &j.out);
	ASSERT_EQ(0, vg_buf_create(self->fd[0], bytes, &j.out));
	j.bind[0] = j.out.handle;
	x = j.out.map;
	for (size_t i = 0; i < words; i++)
		x[i] = i < page ? 0xffffffffu : 0x22222222u;
	ASSERT_EQ(0, job_submit(&j));
	/* Its first wave placed: the object was uploaded, second page and all. */
	ASSERT_NE(0, wait_stage(j.client, ctx, j.s.seqno, "first_wave", j.submitted_ns));
	ASSERT_TRUE(job_running(&j)) TH_LOG("the job ended before the CPU could write");
	for (size_t i = page; i < words; i++)
		x[i] = 0xc0ff0000u + (uint32_t)i;
	ASSERT_TRUE(job_running(&j)) TH_LOG("the CPU's write did not happen while the job ran");
	ASSERT_EQ(0, job_finish(&j));
	for (size_t i = 0; i < THREADS; i++) {
		ASSERT_EQ((uint32_t)i, x[i]) TH_LOG("the job's result, word %zu", i);
	}
	for (size_t i = THREADS; i < page; i++) {
		ASSERT_EQ(0xffffffffu, x[i]) TH_LOG("word %zu, which nobody wrote", i);
	}
	for (size_t i = page; i < words; i++) {
		ASSERT_EQ(0xc0ff0000u + (uint32_t)i, x[i])
			TH_LOG("word %zu: the write-back brought the older copy of the page back", i);
	}
	job_fini(&j);
}

/* The object of the big jobs: above the default 32 MiB sub-task threshold. */
#define BIG_BYTES (40 * MIB)

/* A job of one scenario: its file, priority level, modeled time and big object (or none). */
struct spec {
	int file, prio, ms;
	const struct vg_buf *big;
};

/*
 * @first starts (its first wave is placed), then @second is submitted;
 * both must end with status 0, each WAIT within 15 s, results exact.
 */
static void first_then_second(struct __test_metadata *_metadata, FIXTURE_DATA(devmem) *self,
			      const char *what, struct spec first, struct spec second)
{
	const struct spec *spec[2] = { &first, &second };
	struct job j[2];
	__u32 ctx[2];

	for (int k = 0; k < 2; k++) {
		int fd = self->fd[spec[k]->file];

		ctx[k] = vgsched_ctx_create(fd, spec[k]->prio);
		ASSERT_NE(0, ctx[k]);
		ASSERT_EQ(0, job_init(fd, &j[k], ctx[k], spec[k]->ms, spec[k]->big));
	}
	ASSERT_EQ(0, job_submit(&j[0]));
	ASSERT_NE(0, wait_stage(j[0].client, ctx[0], j[0].s.seqno, "first_wave", j[0].submitted_ns))
		TH_LOG("%s, %s: the first job never started", self->config, what);
	ASSERT_TRUE(job_running(&j[0])) TH_LOG("%s, %s: the first job ended too soon", self->config, what);
	ASSERT_EQ(0, job_submit(&j[1]));
	for (int k = 1; k >= 0; k--) {
		ASSERT_EQ(0, job_finish(&j[k]))
			TH_LOG("%s, %s: the %s job (priority %d%s) did not finish (%d: not in 15 s)",
			       self->config, what, k ? "second" : "first", spec[k]->prio,
			       spec[k]->big ? ", big" : "", NOT_DONE);
		ASSERT_EQ(-1, job_wrong(&j[k])) TH_LOG("%s, %s: job %d", self->config, what, k);
	}
	for (int k = 0; k < 2; k++) {
		job_fini(&j[k]);
		EXPECT_EQ(0, vgsched_ctx_destroy(self->fd[spec[k]->file], ctx[k]));
	}
}

typedef void (*scenario_fn)(struct __test_metadata *_metadata, FIXTURE_DATA(devmem) *self,
			    const struct vg_buf *big);

/*
 * Runs @fn on one slot and on eight (the default), each pipelined and
 * sequential, with a 40 MiB object of file 0 (sampled by the big jobs).
 */
static void every_config(struct __test_metadata *_metadata, FIXTURE_DATA(devmem) *self,
			 scenario_fn fn)
{
	static const char *const slots[] = { "hw_slots=1", "hw_slots=8" };

	for (int s = 0; s < 2; s++) {
		struct vg_buf big;

		open_device(_metadata, self, slots[s]);
		ASSERT_EQ(0, big_create(self->fd[0], BIG_BYTES, &big));
		for (int mode = 0; mode < 2; mode++) {
			ASSERT_EQ(0, vgsched_param_write("pipeline_mode", mode ? "1" : "0"));
			snprintf(self->config, sizeof(self->config), "%s pipeline_mode=%d", slots[s], mode);
			fn(_metadata, self, &big);
		}
		vg_buf_destroy(self->fd[0], &big);
	}
}

static void big_low_then_high(struct __test_metadata *_metadata, FIXTURE_DATA(devmem) *self,
			      const struct vg_buf *big)
{
	first_then_second(_metadata, self, "a big priority-12 job, then a small priority-8 one",
			  (struct spec){ 0, 12, LONG_MS, big }, (struct spec){ 1, 8, 10, NULL });
}

/*
 * A priority-12 context's job over 40 MiB has started when a priority-8
 * context of another file submits a 4 KiB job: the lower level is
 * preempted, and neither job is left waiting on the other.
 */
TEST_F_TIMEOUT(devmem, big_low_job_preempted_by_high, 150)
{
	every_config(_metadata, self, big_low_then_high);
}

static void swapped_levels(struct __test_metadata *_metadata, FIXTURE_DATA(devmem) *self,
			   const struct vg_buf *big)
{
	first_then_second(_metadata, self, "a small priority-12 job, then a big priority-8 one",
			  (struct spec){ 1, 12, LONG_MS, NULL }, (struct spec){ 0, 8, 20, big });
	first_then_second(_metadata, self, "a big priority-8 job, then a small priority-12 one",
			  (struct spec){ 0, 8, LONG_MS, big }, (struct spec){ 1, 12, 10, NULL });
}

/*
 * The levels the other way round: the 40 MiB job, at priority 8, preempts
 * a running small priority-12 job; and, running first at priority 8, it
 * holds a small priority-12 job back until it ends.
 */
TEST_F_TIMEOUT(devmem, swapped_levels_all_finish, 180)
{
	every_config(_metadata, self, swapped_levels);
}

/* The high context's second job's object: with the 40 MiB one, more than the 64 MiB device. */
#define SECOND_BYTES (24 * MIB)
/* How long the low job is given to start its phase 2 ahead of its load, if it may. */
#define AHEAD_MS 500

static void low_prepared_ahead(struct __test_metadata *_metadata, FIXTURE_DATA(devmem) *self,
			       const struct vg_buf *big)
{
	/* The high context's two jobs, the low one's big job, the bystander's. */
	enum { H1, L, H2, B, JOBS };
	static const int file[JOBS] = { 1, 0, 1, 2 }, ms[JOBS] = { 4 * LONG_MS, 20, 50, 10 };
	static const char *const name[JOBS] = { "high first", "low big", "high second", "bystander" };
	/* Finished in the order the levels run them: 8, 8, 10, 12. */
	static const int order[JOBS] = { H1, H2, B, L };
	const struct vg_buf *obj[JOBS];
	struct vg_buf second;
	struct job j[JOBS];
	__u32 high = vgsched_ctx_create(self->fd[1], 8), low = vgsched_ctx_create(self->fd[0], 12);
	__u32 by = vgsched_ctx_create(self->fd[2], 10);
	const __u32 ctx[JOBS] = { high, low, high, by };
	__u64 ahead = 0;

	ASSERT_NE(0, high);
	ASSERT_NE(0, low);
	ASSERT_NE(0, by);
	ASSERT_EQ(0, big_create(self->fd[1], SECOND_BYTES, &second));
	obj[H1] = NULL;
	obj[L] = big;
	obj[H2] = &second;
	obj[B] = NULL;
	for (int k = 0; k < JOBS; k++) {
		ASSERT_EQ(0, job_init(self->fd[file[k]], &j[k], ctx[k], ms[k], obj[k]));
	}
	ASSERT_EQ(0, job_submit(&j[H1]));
	ASSERT_NE(0, wait_stage(j[H1].client, high, j[H1].s.seqno, "first_wave", j[H1].submitted_ns))
		TH_LOG("%s: the high context's first job never started", self->config);
	/*
	 * The low context alone waits: it is the next task, and the high task
	 * is at its progress point (no job left unrun). It may be prepared
	 * ahead (it must not be, or must give the memory back): given the
	 * time to, before the rest arrives.
	 */
	ASSERT_EQ(0, job_submit(&j[L]));
	for (int i = 0; i < AHEAD_MS / 10 && !(ahead = job_stage(&j[L], "phase2_start")); i++)
		usleep(10000);
	TH_LOG("%s: the low job %s prepared ahead", self->config, ahead ? "was" : "was not");
	for (int k = H2; k < JOBS; k++) {
		ASSERT_EQ(0, job_submit(&j[k]));
	}
	ASSERT_TRUE(job_running(&j[H1])) TH_LOG("%s: the first job ended too soon", self->config);
	for (int i = 0; i < JOBS; i++) {
		int k = order[i];

		ASSERT_EQ(0, job_finish(&j[k]))
			TH_LOG("%s: the %s job did not finish (%d: not in 15 s)", self->config, name[k],
			       NOT_DONE);
		ASSERT_EQ(-1, job_wrong(&j[k])) TH_LOG("%s: the %s job", self->config, name[k]);
	}
	for (int k = 0; k < JOBS; k++)
		job_fini(&j[k]);
	vg_buf_destroy(self->fd[1], &second);
	EXPECT_EQ(0, vgsched_ctx_destroy(self->fd[1], high));
	EXPECT_EQ(0, vgsched_ctx_destroy(self->fd[0], low));
	EXPECT_EQ(0, vgsched_ctx_destroy(self->fd[2], by));
}

/*
 * A priority-8 context runs a long job; while it runs, a priority-12
 * context of another file queues a job over 40 MiB, alone waiting (the
 * next task, which may be prepared ahead: it is given AHEAD_MS to). Then
 * the high context queues its second job, over a 24 MiB object (the two
 * big objects do not fit in device memory together), and a bystander of
 * priority 10 a 4 KiB job: every job finishes, in the levels' order.
 */
TEST_F_TIMEOUT(devmem, low_prepared_ahead_does_not_block_high, 150)
{
	every_config(_metadata, self, low_prepared_ahead);
}

/*
 * Default parameters: a level-9 job over one 17 MiB object has started
 * when a level-8 job over another 17 MiB object of another file arrives.
 */
TEST_F_TIMEOUT(devmem, two_17mib_jobs, 60)
{
	struct vg_buf a, b;

	open_device(_metadata, self, NULL);
	ASSERT_EQ(0, big_create(self->fd[0], 17 * MIB, &a));
	ASSERT_EQ(0, big_create(self->fd[1], 17 * MIB, &b));
	first_then_second(_metadata, self, "17 MiB at level 9, then 17 MiB at level 8",
			  (struct spec){ 0, 9, LONG_MS, &a }, (struct spec){ 1, 8, 20, &b });
	vg_buf_destroy(self->fd[0], &a);
	vg_buf_destroy(self->fd[1], &b);
}

/*
 * File A's object O, imported by file B through PRIME. B's job binds O
 * read-only and faults after 300 ms; while it runs, A submits a job that
 * writes O, which waits for B's (a reader) through O's reservation.
 */
TEST_F_TIMEOUT(devmem, reader_fault_does_not_cancel_writer, 60)
{
	__u64 words[16];
	struct vg_buf o, prog;
	struct drm_vgsched_submit r;
	__u32 actx, bctx, o_in_b;
	struct job w;
	int dmabuf, status = NOT_DONE;
	unsigned int len = prog_slow_fault(words, LOOPS_FOR_MS(300));

	open_device(_metadata, self, NULL);
	actx = vgsched_ctx_create(self->fd[0], 8);
	bctx = vgsched_ctx_create(self->fd[1], 8);
	ASSERT_NE(0, actx);
	ASSERT_NE(0, bctx);
	ASSERT_EQ(0, vg_buf_create(self->fd[0], 4096, &o));
	memset(o.map, 0xff, 4096);
	dmabuf = vg_prime_export(self->fd[0], o.handle);
	ASSERT_GE(dmabuf, 0);
	o_in_b = vg_prime_import(self->fd[1], dmabuf);
	ASSERT_NE(0, o_in_b);
	ASSERT_EQ(0, vg_program(self->fd[1], words, len, &prog));
	r = vg_job(bctx, &prog, len, &o_in_b, 1, 1, 1, THREADS);
	r.vgpr_blocks = 1;
	r.sgpr_blocks = 1;
	r.shared_mem_blocks = 0;
	r.binding_access[0] = DRM_VGSCHED_BINDING_READ;
	__u64 t0 = vg_now_ns();

	ASSERT_EQ(0, vgsched_submit(self->fd[1], &r));
	ASSERT_NE(0, wait_stage(vgsched_client_id(self->fd[1], bctx), bctx, r.seqno, "first_wave", t0));

	/* A's writer: x[i] = i after 10 ms, over O itself. */
	ASSERT_EQ(0, job_init(self->fd[0], &w, actx, 10, NULL));
	w.bind[0] = o.handle;
	ASSERT_EQ(0, job_submit(&w));
	ASSERT_TRUE(still_running(self->fd[1], bctx, r.seqno))
		TH_LOG("the reader ended before the writer was submitted: its fence did not count");

	ASSERT_EQ(0, job_finish(&w)) TH_LOG("the writer (%d: not in 15 s, %d: cancelled)", NOT_DONE,
					    -ECANCELED);
	EXPECT_EQ(0, vgsched_wait(self->fd[1], bctx, r.seqno, 0, &status))
		TH_LOG("the writer finished before the reader");
	ASSERT_EQ(0, vgsched_wait(self->fd[1], bctx, r.seqno, WAIT_NS, &status));
	ASSERT_EQ(-EFAULT, status) TH_LOG("the reader did not fault: the test proves nothing");
	for (int i = 0; i < THREADS; i++) {
		ASSERT_EQ((uint32_t)i, ((uint32_t *)o.map)[i]) TH_LOG("word %d of O", i);
	}
	close(dmabuf);
	vg_buf_destroy(self->fd[1], &prog);
	vgsched_bo_close(self->fd[1], o_in_b);
	vg_buf_destroy(self->fd[0], &o);
	job_fini(&w);
}

/*
 * Three jobs of 60 ms queued at once on one context, each reading the same
 * 256 KiB model and storing to the same output (vg_prog_slow_copy).
 */
TEST_F_TIMEOUT(devmem, same_objects_overlap_preparation, 60)
{
	enum { JOBS = 3 };
	__u64 words[16], seqno[JOBS], t0;
	unsigned int len = vg_prog_slow_copy(words, LOOPS_FOR_MS(60));
	struct vg_buf prog, model, out;
	struct drm_vgsched_submit s;
	__u32 ctx, bind[2];
	__u64 client;

	open_device(_metadata, self, NULL);
	ASSERT_EQ(0, vgsched_param_write("pipeline_mode", "0")) TH_LOG("pipelined, as by default");
	ctx = vgsched_ctx_create(self->fd[0], 8);
	ASSERT_NE(0, ctx);
	client = vgsched_client_id(self->fd[0], ctx);
	ASSERT_EQ(0, vg_program(self->fd[0], words, len, &prog));
	ASSERT_EQ(0, vg_buf_create(self->fd[0], 256 * KIB, &model));
	ASSERT_EQ(0, vg_buf_create(self->fd[0], 4096, &out));
	for (int i = 0; i < THREADS; i++)
		((uint32_t *)model.map)[i] = 0x30de0000u + i;
	memset(out.map, 0xff, 4096);
	bind[0] = model.handle;
	bind[1] = out.handle;
	s = vg_job(ctx, &prog, len, bind, 2, 1, 1, THREADS);
	s.vgpr_blocks = 1;
	s.sgpr_blocks = 1;
	s.shared_mem_blocks = 0;
	s.binding_access[0] = DRM_VGSCHED_BINDING_READ;
	s.binding_access[1] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
	t0 = vg_now_ns();
	for (int k = 0; k < JOBS; k++) {
		s.seqno = 0;
		ASSERT_EQ(0, vgsched_submit(self->fd[0], &s));
		seqno[k] = s.seqno;
	}
	for (int k = 0; k < JOBS; k++) {
		ASSERT_EQ(0, finish(self->fd[0], ctx, seqno[k])) TH_LOG("job %d", k + 1);
	}
	for (int i = 0; i < THREADS; i++) {
		ASSERT_EQ(0x30de0000u + i, ((uint32_t *)out.map)[i]) TH_LOG("word %d", i);
	}
	for (int k = 0; k + 1 < JOBS; k++) {
		__u64 next_p2 = stage_at(client, ctx, seqno[k + 1], "phase2_start", t0);
		__u64 last = stage_at(client, ctx, seqno[k], "last_wave", t0);

		ASSERT_NE(0, next_p2);
		ASSERT_NE(0, last);
		EXPECT_LT(next_p2, last)
			TH_LOG("job %d's phase 2 began %lld us after job %d's last wave",
			       k + 2, ((long long)next_p2 - (long long)last) / 1000, k + 1);
	}
	vg_buf_destroy(self->fd[0], &prog);
	vg_buf_destroy(self->fd[0], &model);
	vg_buf_destroy(self->fd[0], &out);
}

/*
 * One slot, one-second slices: a priority-8 context queues three jobs of
 * 40 ms, each reading the same 256 KiB model and storing to the same
 * output (so each next job's implicit dependencies are its own context's
 * earlier jobs), a priority-9 context of another file one job. From the
 * placement log's slot events and the stage log.
 */
TEST_F_TIMEOUT(devmem, context_keeps_its_slot_between_its_jobs, 60)
{
	enum { JOBS = 3, EVENTS = 2048 };
	struct slot_event *ev = calloc(EVENTS, sizeof(*ev));
	struct job high[JOBS], low;
	struct vg_buf model;
	__u32 hctx, lctx;
	__u64 last, low_load = 0, low_first;
	int n, loads = 0;

	ASSERT_NE(NULL, ev);
	open_device(_metadata, self, "hw_slots=1 time_slice_us=1000000");
	hctx = vgsched_ctx_create(self->fd[0], 8);
	lctx = vgsched_ctx_create(self->fd[1], 9);
	ASSERT_NE(0, hctx);
	ASSERT_NE(0, lctx);
	ASSERT_EQ(0, big_create(self->fd[0], 256 * KIB, &model));
	for (int k = 0; k < JOBS; k++) {
		ASSERT_EQ(0, job_init(self->fd[0], &high[k], hctx, 40, &model));
	}
	/* One output for the three: the first job's (each stores the same samples). */
	for (int k = 1; k < JOBS; k++) {
		vg_buf_destroy(self->fd[0], &high[k].out);
		high[k].out = high[0].out;
		high[k].bind[0] = high[0].out.handle;
	}
	ASSERT_EQ(0, job_init(self->fd[1], &low, lctx, 10, NULL));
	for (int k = 0; k < JOBS; k++) {
		ASSERT_EQ(0, job_submit(&high[k]));
	}
	ASSERT_EQ(0, job_submit(&low));
	for (int k = 0; k < JOBS; k++) {
		ASSERT_EQ(0, job_finish(&high[k])) TH_LOG("priority-8 job %d", k + 1);
		ASSERT_EQ(-1, job_wrong(&high[k]));
	}
	ASSERT_EQ(0, job_finish(&low));
	ASSERT_EQ(-1, job_wrong(&low));

	last = job_stage(&high[JOBS - 1], "last_wave");
	ASSERT_NE(0, last);
	n = slot_events(ev, EVENTS);
	ASSERT_GT(n, 0);
	for (int i = 0; i < n; i++) {
		const struct slot_event *e = &ev[i];

		if (e->client == high[0].client && e->ctx == hctx && e->t < last) {
			loads += !strcmp(e->kind, "load");
			EXPECT_TRUE(strcmp(e->kind, "leave") && strcmp(e->kind, "preempt"))
				TH_LOG("priority 8: %s %lld us before its third job's last wave",
				       e->kind, (long long)(last - e->t) / 1000);
		}
		if (e->client == low.client && e->ctx == lctx && !strcmp(e->kind, "load") && !low_load)
			low_load = e->t;
	}
	EXPECT_EQ(1, loads) TH_LOG("the priority-8 context was loaded %d times during its jobs", loads);
	ASSERT_NE(0, low_load) TH_LOG("the priority-9 context was never loaded");
	EXPECT_GE(low_load, last)
		TH_LOG("priority 9 loaded %lld us before priority 8's last wave",
		       (long long)(last - low_load) / 1000);
	low_first = job_stage(&low, "first_wave");
	ASSERT_NE(0, low_first);
	EXPECT_GE(low_first, last);
	job_fini(&high[0]);
	for (int k = 1; k < JOBS; k++)
		vg_buf_destroy(self->fd[0], &high[k].prog);
	vg_buf_destroy(self->fd[0], &model);
	job_fini(&low);
	free(ev);
}

/*
 * Most state areas held at once over the stage log, in the order it was
 * recorded: a context holds one from its phase1_start to its
 * task_cleanup (printed with @verbose). -1 if the log cannot be read.
 */
static int most_state_areas_held(int verbose)
{
	static struct vg_stage log[1024];
	struct {
		__u64 client;
		unsigned int ctx;
		int held;
	} holder[16] = { 0 };
	int n = vgsched_stages(log, 1024), held = 0, most = 0, known = 0;

	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		const struct vg_stage *e = &log[i];
		int up = !strcmp(e->event, "phase1_start"), k;

		if (e->job || (!up && strcmp(e->event, "task_cleanup")))
			continue;
		for (k = 0; k < known && (holder[k].client != e->client || holder[k].ctx != e->ctx); k++)
			;
		if (k == known) {
			if (known == 16)
				return -1;
			holder[known++] = (typeof(holder[0])){ e->client, e->ctx, 0 };
		}
		held += up - holder[k].held;
		holder[k].held = up;
		most = held > most ? held : most;
		if (verbose)
			printf("# %llu client %llu ctx %u %s: %d held\n", e->t, e->client, e->ctx,
			       e->event, held);
	}
	return most;
}

/*
 * The phase-1 threshold at two 64 KiB state areas, one slot. A priority-8
 * job over 256 KiB runs (above the 64 KiB sub-task threshold, so the next
 * task's phase 2 waits for it); another priority-8 context is initialised
 * ahead of its load (the threshold reached); then a priority-4 job
 * preempts the first. Its context, loaded, is initialised only once the
 * context initialised ahead has given its area back: never more than two
 * areas are held, and every job ends exact.
 */
TEST_F_TIMEOUT(devmem, phase1_threshold_holds_under_preemption, 60)
{
	struct job a, b, d;
	struct vg_buf model;
	__u32 actx, bctx, dctx;
	__u64 b_p1, d_p1;

	open_device(_metadata, self,
		    "hw_slots=1 time_slice_us=1000000 ctx_state_kib=64 phase1_threshold_kib=128 subtask_threshold_kib=64 ctx_init_us=5000");
	actx = vgsched_ctx_create(self->fd[0], 8);
	bctx = vgsched_ctx_create(self->fd[1], 8);
	dctx = vgsched_ctx_create(self->fd[2], 4);
	ASSERT_NE(0, actx);
	ASSERT_NE(0, bctx);
	ASSERT_NE(0, dctx);
	ASSERT_EQ(0, big_create(self->fd[0], 256 * KIB, &model));
	ASSERT_EQ(0, job_init(self->fd[0], &a, actx, LONG_MS, &model));
	ASSERT_EQ(0, job_init(self->fd[1], &b, bctx, 10, NULL));
	ASSERT_EQ(0, job_init(self->fd[2], &d, dctx, 10, NULL));
	ASSERT_EQ(0, job_submit(&a));
	ASSERT_NE(0, wait_stage(a.client, actx, a.s.seqno, "first_wave", a.submitted_ns));
	ASSERT_EQ(0, job_submit(&b));
	b_p1 = wait_stage(b.client, bctx, 0, "phase1_start", b.submitted_ns);
	ASSERT_NE(0, b_p1) TH_LOG("the second context was not initialised ahead of its load");
	ASSERT_TRUE(job_running(&a)) TH_LOG("the first job ended too soon for the test");
	ASSERT_EQ(0, job_submit(&d));
	ASSERT_EQ(0, job_finish(&d)) TH_LOG("the priority-4 job");
	ASSERT_EQ(0, job_finish(&a)) TH_LOG("the preempted job");
	ASSERT_EQ(0, job_finish(&b)) TH_LOG("the job initialised ahead");
	EXPECT_EQ(-1, job_wrong(&a));
	EXPECT_EQ(-1, job_wrong(&b));
	EXPECT_EQ(-1, job_wrong(&d));
	d_p1 = stage_at(d.client, dctx, 0, "phase1_start", d.submitted_ns);
	ASSERT_NE(0, d_p1);
	EXPECT_NE(0, stage_at(b.client, bctx, 0, "task_cleanup", b_p1))
		TH_LOG("the area initialised ahead was never given back");
	EXPECT_EQ(2, most_state_areas_held(0)) {
		TH_LOG("state areas held at once, threshold two:");
		most_state_areas_held(1);
	}
	job_fini(&a);
	job_fini(&b);
	job_fini(&d);
	vg_buf_destroy(self->fd[0], &model);
}

/*
 * Runs a job over @obj (two pages, resident from the job before) that
 * stores the words at THREADS evenly spaced offsets of @obj; returns the
 * index of the first stored word that differs from what the CPU sees in
 * @obj's own mapping, -1 if none does, JOB_FAILED if the job failed.
 */
#define JOB_FAILED (-2)
static int sample_matches_cpu_view(int fd, __u32 ctx, const struct vg_buf *obj)
{
	const uint32_t *cpu = obj->map, *out;
	struct job j;
	int wrong = -1;

	if (job_init(fd, &j, ctx, 1, obj) || job_submit(&j) || job_finish(&j))
		return JOB_FAILED;
	out = j.out.map;
	for (int i = 0; i < THREADS && wrong < 0; i++)
		if (out[i] != cpu[(size_t)i * sample_stride(obj)])
			wrong = i;
	job_fini(&j);
	return wrong;
}

/*
 * What the CPU writes through a second mapping of an object, split by
 * munmap() of its first page, or through a mapping of the object's
 * dma-buf, reaches the next job while the object's copy is resident:
 * every word the job reads is what the object's own mapping shows.
 */
TEST_F_TIMEOUT(devmem, writes_through_any_mapping_reach_the_next_job, 60)
{
	int fd, buf_fd;
	struct vg_buf obj;
	uint32_t *second, *dmabuf;
	__u32 ctx;

	open_device(_metadata, self, NULL);
	fd = self->fd[0];
	ctx = vgsched_ctx_create(fd, 8);
	ASSERT_NE(0, ctx);
	ASSERT_EQ(0, big_create(fd, 2 * 4096, &obj));
	ASSERT_EQ(-1, sample_matches_cpu_view(fd, ctx, &obj));

	second = vgsched_bo_mmap(fd, obj.handle, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, second);
	ASSERT_EQ(0, munmap(second, 4096));
	second[1024] = 0x5b117u;		/* the first word the split mapping shows */
	EXPECT_EQ(-1, sample_matches_cpu_view(fd, ctx, &obj))
		TH_LOG("a write through a split mapping did not reach the job");
	munmap(second + 1024, 4096);

	buf_fd = vg_prime_export(fd, obj.handle);
	ASSERT_GE(buf_fd, 0);
	dmabuf = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, buf_fd, 0);
	ASSERT_NE(MAP_FAILED, dmabuf);
	dmabuf[1024] = 0xd4abu;
	dmabuf[32] = 0xd4ac;
	EXPECT_EQ(-1, sample_matches_cpu_view(fd, ctx, &obj))
		TH_LOG("a write through the dma-buf's mapping did not reach the job");
	dmabuf[1024 + 32] = 0xd4adu;
	EXPECT_EQ(-1, sample_matches_cpu_view(fd, ctx, &obj))
		TH_LOG("a second write through the dma-buf's mapping did not reach the job");
	munmap(dmabuf, 2 * 4096);
	close(buf_fd);
	vg_buf_destroy(fd, &obj);
}

/* How an object is mapped through its dma-buf before the jobs of stores_survive_next_job(). */
enum dmabuf_use {
	DMABUF_READ_ONLY,	/* exported read-only, mapped PROT_READ, only read */
	DMABUF_READ_WRITE,	/* mapped read-write and written before the jobs */
	DMABUF_WRITE_BESIDE,	/* as READ_WRITE, and a page the jobs do not touch written while job 1 runs */
};

#define STALE_WORD 0x11111111u
#define BESIDE_WORD (1024 + 5)

/*
 * Job 1 stores its thread ids into the first words of a two-page object
 * @x, then runs on for a while; job 2 of the same context, submitted while
 * job 1 runs
 * (so it is prepared beside it), copies those words into its own output.
 * The object has been mapped through its dma-buf as @use says. Both jobs
 * end with status 0, job 2 read job 1's stores, and @x keeps them (and
 * what the CPU wrote beside them) once both fences have signalled.
 */
static void stores_survive_next_job(struct __test_metadata *_metadata,
				    FIXTURE_DATA(devmem) *self, enum dmabuf_use use)
{
	struct drm_prime_handle exp;
	struct vg_buf x, prog1, prog2, out;
	__u64 w1[16], w2[16];
	unsigned int n1, n2;
	__u32 b1[1], b2[2], ctx;
	struct drm_vgsched_submit s1, s2;
	volatile uint32_t *view;
	uint32_t sum = 0;
	__u64 t0;
	int fd, buf_fd, st1 = -1, st2 = -1;

	open_device(_metadata, self, NULL);
	fd = self->fd[0];
	ctx = vgsched_ctx_create(fd, 8);
	ASSERT_NE(0, ctx);
	ASSERT_EQ(0, vg_buf_create(fd, 2 * 4096, &x));
	for (int i = 0; i < 2 * 1024; i++)
		((uint32_t *)x.map)[i] = STALE_WORD;
	ASSERT_EQ(0, vg_buf_create(fd, 4096, &out));
	memset(out.map, 0xff, 4096);

	exp = (struct drm_prime_handle){ .handle = x.handle,
		.flags = DRM_CLOEXEC | (use == DMABUF_READ_ONLY ? 0 : DRM_RDWR) };
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &exp));
	buf_fd = exp.fd;
	view = mmap(NULL, 2 * 4096, use == DMABUF_READ_ONLY ? PROT_READ : PROT_READ | PROT_WRITE,
		    MAP_SHARED, buf_fd, 0);
	ASSERT_NE(MAP_FAILED, view);
	if (use == DMABUF_READ_ONLY) {
		for (int i = 0; i < 2 * 1024; i++)
			sum += view[i];
		ASSERT_EQ(STALE_WORD * 2048u, sum);
	} else {
		view[2000] = STALE_WORD;
	}

	n1 = prog_store_then_spin(w1, LOOPS_FOR_MS(LONG_MS));
	n2 = vg_prog_slow_copy(w2, 1);
	ASSERT_EQ(0, vg_program(fd, w1, n1, &prog1));
	ASSERT_EQ(0, vg_program(fd, w2, n2, &prog2));
	b1[0] = x.handle;
	s1 = vg_job(ctx, &prog1, n1, b1, 1, 1, 1, THREADS);
	s1.binding_access[0] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
	b2[0] = x.handle;
	b2[1] = out.handle;
	s2 = vg_job(ctx, &prog2, n2, b2, 2, 1, 1, THREADS);
	s2.binding_access[0] = DRM_VGSCHED_BINDING_READ;
	s2.binding_access[1] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
	t0 = vg_now_ns();
	ASSERT_EQ(0, vgsched_submit(fd, &s1));
	/*
	 * Job 2 is submitted once job 1 runs, and a moment later, so that job
	 * 1's stores (its first instructions) are in its copy when job 2 is
	 * prepared: an upload then would overwrite them. (The test does not
	 * rely on the moment to pass, only to catch that upload.)
	 */
	ASSERT_NE(0, wait_stage(vgsched_client_id(fd, ctx), ctx, s1.seqno, "first_wave", t0));
	usleep(20000);
	if (use == DMABUF_WRITE_BESIDE)
		view[BESIDE_WORD] = 0xbe51deu;
	ASSERT_EQ(0, vgsched_submit(fd, &s2));
	EXPECT_EQ(0, vgsched_wait(fd, ctx, s1.seqno, WAIT_NS, &st1));
	EXPECT_EQ(0, vgsched_wait(fd, ctx, s2.seqno, WAIT_NS, &st2));
	EXPECT_EQ(0, st1);
	EXPECT_EQ(0, st2);
	for (int i = 0; i < THREADS; i++) {
		ASSERT_EQ((uint32_t)i, ((uint32_t *)x.map)[i])
			TH_LOG("word %d of the object lost job 1's store", i);
		ASSERT_EQ((uint32_t)i, ((uint32_t *)out.map)[i])
			TH_LOG("job 2 read word %d before job 1's store", i);
	}
	EXPECT_EQ(STALE_WORD, ((uint32_t *)x.map)[THREADS]);
	EXPECT_EQ(0xffffffffu, ((uint32_t *)out.map)[THREADS]);
	if (use == DMABUF_WRITE_BESIDE)
		EXPECT_EQ(0xbe51deu, ((uint32_t *)x.map)[BESIDE_WORD])
			TH_LOG("the CPU's write beside the jobs was lost");
	munmap((void *)view, 2 * 4096);
	close(buf_fd);
	vg_buf_destroy(fd, &prog1);
	vg_buf_destroy(fd, &prog2);
	vg_buf_destroy(fd, &out);
	vg_buf_destroy(fd, &x);
}

TEST_F_TIMEOUT(devmem, stores_survive_next_job_after_read_only_dmabuf_mapping, 60)
{
	stores_survive_next_job(_metadata, self, DMABUF_READ_ONLY);
}

TEST_F_TIMEOUT(devmem, stores_survive_next_job_after_dmabuf_mapping, 60)
{
	stores_survive_next_job(_metadata, self, DMABUF_READ_WRITE);
}

TEST_F_TIMEOUT(devmem, stores_survive_next_job_beside_a_cpu_write, 60)
{
	stores_survive_next_job(_metadata, self, DMABUF_WRITE_BESIDE);
}

/* The name root publishes for held_reader(). */
#define HELD_PATH vg_path("", DRM_VGSCHED_FOLDER_PUBLIC, "models", "held")

/*
 * As uid 1003, which may only read the public object: queues a job that
 * never ends (until the 60 s job timeout) and, behind it through its
 * out-fence, a job that reads the object; says so on @io[1], and waits on
 * @io[0] until the test is done (its file then goes, and its jobs).
 */
static int held_reader(void *arg)
{
	struct drm_vgsched_shared_path path = HELD_PATH;
	struct drm_vgsched_shared_open o;
	struct drm_vgsched_submit s;
	struct vg_buf prog;
	__u64 words[16];
	unsigned int len = vg_prog_slow_copy(words, 1);
	int *io = arg, fd, endless_fd, fence_fd;
	__u32 bind[2], ctx;

	if (vg_submit_endless(&endless_fd, &fence_fd))
		return 101;
	fd = vgsched_open_render_node();
	if (fd < 0 || vg_shared_open(fd, &path, 0, &o) || o.writable)
		return 102;
	ctx = vgsched_ctx_create(fd, 8);
	bind[0] = o.handle;
	bind[1] = vgsched_bo_create(fd, 4096);
	if (!ctx || !bind[1] || vg_program(fd, words, len, &prog))
		return 103;
	s = vg_job(ctx, &prog, len, bind, 2, 1, 1, THREADS);
	s.binding_access[0] = DRM_VGSCHED_BINDING_READ;
	s.binding_access[1] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
	s.flags = DRM_VGSCHED_SUBMIT_IN_FENCE;
	s.in_fence_fd = fence_fd;
	if (vgsched_submit(fd, &s))
		return 104;
	if (await_revocation(io[1], io[0]))
		return 105;
	/* Its in-fence never signalled meanwhile: the reader still waits. */
	return still_running(fd, ctx, s.seqno) ? 0 : 106;
}

/*
 * A holder that may only read a public object queues a job reading it
 * behind an in-fence that does not signal for a minute; the owner's job
 * that writes the object is not held back by it (the reader's fence is
 * bookkeeping in the object's reservation): it ends, right, within
 * WAIT_NS, while the reader still waits.
 */
TEST_F_TIMEOUT(devmem, a_read_only_holders_job_does_not_hold_the_writer_back, 120)
{
	struct drm_vgsched_shared_path path = HELD_PATH;
	struct vg_buf x, prog;
	__u64 words[16];
	unsigned int len = vg_prog_busy_store(words, 1);
	int io[2], to, from, status = -1;
	char node[64], c;
	__u32 ctx;
	pid_t pid;

	open_device(_metadata, self, "job_timeout_ms=60000");
	close(vgsched_open_render_node_at(node, sizeof(node)));
	ASSERT_EQ(0, chmod(node, 0666));
	ASSERT_EQ(0, vg_buf_create(self->fd[0], 4096, &x));
	memset(x.map, 0x5a, 4096);
	ASSERT_EQ(0, vg_publish(self->fd[0], &path, x.handle));
	pid = fork_talking(1003, held_reader, io, &io[0], &io[1], &to, &from);
	ASSERT_GT(pid, 0);
	ASSERT_EQ(1, read(from, &c, 1)) TH_LOG("the reader's jobs were not queued");

	ctx = vgsched_ctx_create(self->fd[0], 8);
	ASSERT_NE(0, ctx);
	ASSERT_EQ(0, vg_program(self->fd[0], words, len, &prog));
	struct drm_vgsched_submit s = vg_job(ctx, &prog, len, &x.handle, 1, 1, 1, THREADS);

	ASSERT_EQ(0, vgsched_submit(self->fd[0], &s));
	EXPECT_EQ(0, finish(self->fd[0], ctx, s.seqno)) TH_LOG("the writer waited for the reader");
	for (int i = 0; i < THREADS; i++)
		ASSERT_EQ((uint32_t)i, ((uint32_t *)x.map)[i]);
	EXPECT_EQ(1, write(to, "g", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, vg_unpublish(self->fd[0], &path));
	vg_buf_destroy(self->fd[0], &prog);
	vg_buf_destroy(self->fd[0], &x);
}

/*
 * 8 MiB of device memory, 64 KiB state areas, four slots: a job binding
 * one object of 8 MiB - 64 KiB fits beside its own context's state area
 * and runs; one page more can never fit (E2BIG, nothing queued).
 */
TEST_F_TIMEOUT(devmem, job_at_memory_limit_runs, 60)
{
	struct drm_vgsched_ctx_query q;
	struct busy_job w;
	struct vg_buf over;
	__u32 ctx;
	uint32_t *x;
	size_t words;

	open_device(_metadata, self, "vram_mib=8 ctx_state_kib=64 hw_slots=4");
	ctx = vgsched_ctx_create(self->fd[0], 8);
	ASSERT_NE(0, ctx);
	ASSERT_EQ(0, busy_job_init(self->fd[0], &w, ctx, 1, 1, 1, THREADS, 1));
	vg_buf_destroy(self->fd[0], &w.out);
	ASSERT_EQ(0, vg_buf_create(self->fd[0], 8 * MIB - 64 * KIB, &w.out));
	w.binding = w.out.handle;
	x = w.out.map;
	words = w.out.size / 4;
	memset(x, 0xff, THREADS * 4);
	x[words - 1] = 0x5eed;
	ASSERT_EQ(0, busy_submit(self->fd[0], &w)) TH_LOG("8 MiB - 64 KiB refused");
	ASSERT_EQ(0, finish(self->fd[0], ctx, w.s.seqno));
	ASSERT_EQ(-1, busy_job_wrong(&w));
	ASSERT_EQ(0x5eed, x[words - 1]) TH_LOG("the write-back changed a word the job did not store");

	ASSERT_EQ(0, vg_buf_create(self->fd[0], 8 * MIB - 60 * KIB, &over));
	w.binding = over.handle;
	ASSERT_EQ(-E2BIG, busy_submit(self->fd[0], &w)) TH_LOG("8 MiB - 60 KiB accepted");
	ASSERT_EQ(0, vgsched_ctx_query(self->fd[0], ctx, &q));
	EXPECT_EQ(1, q.jobs_submitted);
	vg_buf_destroy(self->fd[0], &over);
	busy_job_fini(self->fd[0], &w);
}

TEST_HARNESS_MAIN
