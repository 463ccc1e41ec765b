/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Programs for the virtual GPU, shared by the kselftests and the demo.
 * Each fills a caller's array and returns the instruction count. Also
 * the endless-job child the teardown tests kill mid-job.
 */
#ifndef VGSCHED_PROGRAMS_H
#define VGSCHED_PROGRAMS_H

#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>

#include "vgsched_test_util.h"

#define I(op, rd, ra, rb, imm) vg_instr(DRM_VGSCHED_OP_##op, rd, ra, rb, imm)

/*
 * c[i] = a[i] + b[i] for every thread i of the grid; bindings a, b, c.
 * With @fadd the addition is binary32, otherwise 32-bit wrapping integer.
 */
static inline unsigned int vg_prog_vector_add(__u64 *p, int fadd)
{
	unsigned int n = 0;

	p[n++] = I(SREG, 0, 0, 0, DRM_VGSCHED_SREG_GLOBAL_ID);
	p[n++] = I(LD, 1, 0, 0, 0);
	p[n++] = I(LD, 2, 0, 1, 0);
	p[n++] = fadd ? I(FADD, 3, 1, 2, 0) : I(ADD, 3, 1, 2, 0);
	p[n++] = I(ST, 3, 0, 2, 0);
	p[n++] = I(END, 0, 0, 0, 0);
	return n;
}

/*
 * C = A x B for n x n integer matrices (row-major; bindings A, B, C):
 * work-group r computes row r, its thread c element (r, c), with a
 * multiply-accumulate loop. Run it as n work-groups of n threads.
 */
static inline unsigned int vg_prog_matmul(__u64 *p, int size)
{
	unsigned int n = 0;

	p[n++] = I(SREG, 0, 0, 0, DRM_VGSCHED_SREG_GROUP_ID);	/* row */
	p[n++] = I(SREG, 1, 0, 0, DRM_VGSCHED_SREG_LOCAL_ID);	/* column */
	p[n++] = I(MOVI, 2, 0, 0, size);
	p[n++] = I(MUL, 3, 0, 2, 0);				/* index into A */
	p[n++] = I(MOV, 4, 1, 0, 0);				/* index into B */
	p[n++] = I(MOVI, 5, 0, 0, 0);				/* sum */
	p[n++] = I(MOVI, 6, 0, 0, size);			/* k left */
	p[n++] = I(LD, 7, 3, 0, 0);				/* 7: loop */
	p[n++] = I(LD, 8, 4, 1, 0);
	p[n++] = I(MAD, 5, 7, 8, 0);
	p[n++] = I(ADDI, 3, 3, 0, 1);
	p[n++] = I(ADD, 4, 4, 2, 0);
	p[n++] = I(ADDI, 6, 6, 0, -1);
	p[n++] = I(BRNZ, 0, 6, 0, 7);
	p[n++] = I(MUL, 9, 0, 2, 0);
	p[n++] = I(ADD, 9, 9, 1, 0);
	p[n++] = I(ST, 5, 9, 2, 0);
	p[n++] = I(END, 0, 0, 0, 0);
	return n;
}

/* A thread that never ends: the job timeout must stop it. */
static inline unsigned int vg_prog_endless(__u64 *p)
{
	p[0] = I(BR, 0, 0, 0, 0);
	return 1;
}

/*
 * A thread that loops until its job is ended from outside (its context
 * destroyed, or the job timeout): four slow loads of binding 0 a pass, so
 * holding costs little interpretation.
 */
static inline unsigned int vg_prog_hold(__u64 *p)
{
	unsigned int n = 0;

	for (int i = 0; i < 4; i++)
		p[n++] = I(LD, 2, 3, 0, 0);
	p[n++] = I(BR, 0, 0, 0, 0);
	return n;
}

/* Every thread counts r0 down from @loops, then stores its global id. */
static inline unsigned int vg_prog_busy_store(__u64 *p, int loops)
{
	unsigned int n = 0;

	p[n++] = I(MOVI, 0, 0, 0, loops);
	p[n++] = I(ADDI, 0, 0, 0, -1);				/* 1: loop */
	p[n++] = I(BRNZ, 0, 0, 0, 1);
	p[n++] = I(SREG, 1, 0, 0, DRM_VGSCHED_SREG_GLOBAL_ID);
	p[n++] = I(ST, 1, 1, 0, 0);
	p[n++] = I(END, 0, 0, 0, 0);
	return n;
}

/*
 * Like vg_prog_busy_store, but each loop iteration also loads four times
 * from binding 0 (index 0): 67 modeled cycles for 6 instructions, so long
 * modeled runs cost little interpretation.
 */
#define VG_SLOW_LOOP_CYCLES 67
static inline unsigned int vg_prog_slow_store(__u64 *p, int loops)
{
	unsigned int n = 0;

	p[n++] = I(MOVI, 0, 0, 0, loops);
	for (int i = 0; i < 4; i++)
		p[n++] = I(LD, 2, 3, 0, 0);			/* 1-4: loop */
	p[n++] = I(ADDI, 0, 0, 0, -1);
	p[n++] = I(BRNZ, 0, 0, 0, 1);
	p[n++] = I(SREG, 1, 0, 0, DRM_VGSCHED_SREG_GLOBAL_ID);
	p[n++] = I(ST, 1, 1, 0, 0);
	p[n++] = I(END, 0, 0, 0, 0);
	return n;
}

/*
 * Every thread adds 1 to word (global id) of binding 0 @loops times, reading
 * it back each time, with three slow loads of word 0 per pass (about 85
 * modeled cycles): the word ends at its start value plus @loops only if no
 * pass is lost or repeated, however the waves are stopped and resumed.
 */
#define VG_COUNT_LOOP_CYCLES 85
static inline unsigned int vg_prog_slow_count(__u64 *p, int loops)
{
	unsigned int n = 0;

	p[n++] = I(SREG, 1, 0, 0, DRM_VGSCHED_SREG_GLOBAL_ID);
	p[n++] = I(MOVI, 0, 0, 0, loops);
	p[n++] = I(MOVI, 5, 0, 0, 0);
	p[n++] = I(LD, 2, 1, 0, 0);				/* 3: loop */
	p[n++] = I(ADDI, 2, 2, 0, 1);
	p[n++] = I(ST, 2, 1, 0, 0);
	for (int i = 0; i < 3; i++)
		p[n++] = I(LD, 4, 5, 0, 0);
	p[n++] = I(ADDI, 0, 0, 0, -1);
	p[n++] = I(BRNZ, 0, 0, 0, 3);
	p[n++] = I(END, 0, 0, 0, 0);
	return n;
}

/*
 * Like vg_prog_slow_store, but after the loop every thread copies word
 * (global id) of binding 0 to the same word of binding 1: a job that only
 * reads binding 0, at its end.
 */
static inline unsigned int vg_prog_slow_copy(__u64 *p, int loops)
{
	unsigned int n = 0;

	p[n++] = I(MOVI, 0, 0, 0, loops);
	for (int i = 0; i < 4; i++)
		p[n++] = I(LD, 2, 3, 0, 0);			/* 1-4: loop */
	p[n++] = I(ADDI, 0, 0, 0, -1);
	p[n++] = I(BRNZ, 0, 0, 0, 1);
	p[n++] = I(SREG, 1, 0, 0, DRM_VGSCHED_SREG_GLOBAL_ID);
	p[n++] = I(LD, 2, 1, 0, 0);
	p[n++] = I(ST, 2, 1, 1, 0);
	p[n++] = I(END, 0, 0, 0, 0);
	return n;
}

#undef I

/* A submission of @prog over @groups x @waves x @threads with bindings. */
static inline struct drm_vgsched_submit vg_job(__u32 ctx, const struct vg_buf *prog,
					       unsigned int instrs, const __u32 *bindings,
					       unsigned int nbind, __u32 groups, __u32 waves,
					       __u32 threads)
{
	struct drm_vgsched_submit s = {
		.ctx_id = ctx,
		.program_handle = prog->handle,
		.program_instrs = instrs,
		.bindings = (__u64)(unsigned long)bindings,
		.binding_count = nbind,
		.groups = groups,
		.waves_per_group = waves,
		.threads_per_wave = threads,
		.vgpr_blocks = 4,
		.sgpr_blocks = 2,
		.shared_mem_blocks = 1,
	};
	return s;
}


/* Loop iterations of vg_prog_slow_store for @ms of modeled time at the default 1 MHz. */
#define LOOPS_FOR_MS(ms) ((ms) * 1000 / VG_SLOW_LOOP_CYCLES + 1)

/* A job of vg_prog_slow_store: every thread loops, then stores its id. */
struct busy_job {
	struct vg_buf prog, out;
	unsigned int len;
	__u32 binding;
	struct drm_vgsched_submit s;
	__u32 threads;
};

static inline int busy_job_init(int fd, struct busy_job *j, __u32 ctx, int ms, __u32 groups,
			 __u32 waves, __u32 threads, __u32 vgpr)
{
	__u64 words[16];
	int ret;

	memset(j, 0, sizeof(*j));
	j->len = vg_prog_slow_store(words, LOOPS_FOR_MS(ms));
	ret = vg_program(fd, words, j->len, &j->prog);
	if (ret)
		return ret;
	j->threads = groups * waves * threads;
	ret = vg_buf_create(fd, j->threads * 4, &j->out);
	if (ret)
		return ret;
	memset(j->out.map, 0xff, j->threads * 4);
	j->binding = j->out.handle;
	j->s = vg_job(ctx, &j->prog, j->len, &j->binding, 1, groups, waves, threads);
	j->s.vgpr_blocks = vgpr;
	j->s.sgpr_blocks = 1;
	j->s.shared_mem_blocks = 0;
	return 0;
}

/*
 * A busy_job whose threads run vg_prog_hold instead: it holds what it was
 * placed on until the test ends it (run a module with a long job timeout).
 */
static inline int hold_job_init(int fd, struct busy_job *j, __u32 ctx, __u32 groups,
				__u32 waves, __u32 threads, __u32 vgpr)
{
	__u64 words[8];
	int ret = busy_job_init(fd, j, ctx, 1, groups, waves, threads, vgpr);

	if (ret)
		return ret;
	vg_buf_destroy(fd, &j->prog);
	j->len = vg_prog_hold(words);
	ret = vg_program(fd, words, j->len, &j->prog);
	j->s.program_handle = j->prog.handle;
	j->s.program_instrs = j->len;
	return ret;
}

/*
 * Writes every output word back to 0xff once the CPU may write it, so that
 * the job's next run must store every id again (and the run sees the
 * CPU's write, not its device copy); 0 or -errno.
 */
static inline int busy_job_clear_out(int fd, struct busy_job *j)
{
	int ret = vgsched_bo_cpu_prep(fd, j->out.handle, DRM_VGSCHED_CPU_PREP_WRITE, 0);

	if (!ret)
		memset(j->out.map, 0xff, j->threads * 4);
	return ret;
}

/* Re-arms the submission after a SUBMIT overwrote its out fields. */
static inline int busy_submit(int fd, struct busy_job *j)
{
	j->s.seqno = 0;
	return vgsched_submit(fd, &j->s);
}

/* Index of the first thread whose stored id is wrong, or -1. */
static inline int busy_job_wrong(const struct busy_job *j)
{
	for (__u32 i = 0; i < j->threads; i++)
		if (((uint32_t *)j->out.map)[i] != i)
			return i;
	return -1;
}

static inline void busy_job_fini(int fd, struct busy_job *j)
{
	vg_buf_destroy(fd, &j->prog);
	vg_buf_destroy(fd, &j->out);
}

/* Still running: WAIT with a zero timeout says so. */
static inline int still_running(int fd, __u32 ctx, __u64 seqno)
{
	return vgsched_wait(fd, ctx, seqno, 0, NULL) == -ETIMEDOUT;
}

static inline int wait_ok(int fd, __u32 ctx, __u64 seqno)
{
	int status = 1;

	if (vgsched_wait(fd, ctx, seqno, 60 * VG_SECOND_NS, &status))
		return -1;
	return status;
}

/*
 * Opens the device and queues a job that never ends (with an out-fence,
 * returned in *fence_fd) and a second job behind it; 0 or -1.
 */
static inline int vg_submit_endless(int *fd_out, int *fence_fd)
{
	struct vg_buf prog, out;
	__u64 words[4];
	unsigned int len = vg_prog_endless(words);
	int fd = vgsched_open_render_node();
	__u32 ctx = fd < 0 ? 0 : vgsched_ctx_create(fd, 8);

	if (!ctx || vg_program(fd, words, len, &prog) || vg_buf_create(fd, 4096, &out))
		return -1;
	struct drm_vgsched_submit s = vg_job(ctx, &prog, len, &out.handle, 1, 4, 2, 1);

	s.flags = DRM_VGSCHED_SUBMIT_OUT_FENCE;
	if (vgsched_submit(fd, &s))
		return -1;
	/* A second job queued behind it. */
	s.flags = 0;
	if (vgsched_submit(fd, &s))
		return -1;
	/* Mappings hold the file open; only the jobs should remain. */
	munmap(prog.map, prog.size);
	munmap(out.map, out.size);
	*fd_out = fd;
	*fence_fd = s.out_fence_fd;
	return 0;
}

/*
 * Forks a child that queues vg_submit_endless()'s jobs and then waits to
 * be killed, so a test can kill a process in the middle of a job. Returns
 * the child's pid once its jobs are queued, or -1 (no child left).
 */
static inline pid_t vg_spawn_endless_child(void)
{
	int pipefd[2];
	char ok = 'n';
	pid_t pid;

	if (pipe(pipefd))
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd, fence_fd;

		ok = vg_submit_endless(&fd, &fence_fd) ? 'n' : 'y';
		write(pipefd[1], &ok, 1);
		pause();
		_exit(0);
	}
	if (pid > 0 && (read(pipefd[0], &ok, 1) != 1 || ok != 'y')) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(pipefd[0]);
	close(pipefd[1]);
	return pid;
}

#endif /* VGSCHED_PROGRAMS_H */
