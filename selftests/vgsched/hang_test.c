// SPDX-License-Identifier: GPL-2.0
/*
 * Hangs and teardown through the uAPI: an endless loop is stopped at the
 * job timeout with -ETIME, its context turns guilty and refuses work while
 * other contexts go on; closing a file or killing a process mid-job leaves
 * nothing behind on the device. A wave that faults in its last lane, while
 * its other lanes would loop until just under the job timeout, fails at
 * once and never keeps other clients waiting for the engine.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vgsched_programs.h"

/* The debugfs dump, for checking that nothing is left on the device. */
static int device_state(char *buf, size_t size)
{
	return vgsched_debugfs_read("state", buf, size);
}

/* Waits up to 10 s for the device to hold no work-group and no job. */
static int device_drains(char *buf, size_t size)
{
	for (int i = 0; i < 1000; i++) {
		if (device_state(buf, size))
			return -1;
		if (strstr(buf, "work-groups on the device: 0") && !strstr(buf, "jobs queued"))
			return 0;
		usleep(10 * 1000);
	}
	return -1;
}

FIXTURE(hang) {
	int fd;
	struct vg_buf endless, add, a, b, c;
	unsigned int endless_len, add_len;
	struct drm_vgsched_gpu_info info;
};

FIXTURE_SETUP(hang)
{
	__u64 words[16];

	self->fd = vgsched_open_render_node();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, vgsched_query_gpu_info(self->fd, &self->info));
	self->endless_len = vg_prog_endless(words);
	ASSERT_EQ(0, vg_program(self->fd, words, self->endless_len, &self->endless));
	self->add_len = vg_prog_vector_add(words, 0);
	ASSERT_EQ(0, vg_program(self->fd, words, self->add_len, &self->add));
	ASSERT_EQ(0, vg_buf_create(self->fd, 4096, &self->a));
	ASSERT_EQ(0, vg_buf_create(self->fd, 4096, &self->b));
	ASSERT_EQ(0, vg_buf_create(self->fd, 4096, &self->c));
}

FIXTURE_TEARDOWN(hang)
{
	close(self->fd);
}

TEST_F(hang, endless_loop_is_stopped_and_its_context_turns_guilty)
{
	__u32 bad = vgsched_ctx_create(self->fd, 8), good = vgsched_ctx_create(self->fd, 8);
	__u32 bindings[] = { self->a.handle, self->b.handle, self->c.handle };
	int status = 0;

	ASSERT_NE(0, bad);
	ASSERT_NE(0, good);
	/*
	 * The endless program touches no memory: it binds nothing, so the
	 * other context's job below, which writes c, has no reason to wait
	 * for it (implicit synchronisation, uapi.rst).
	 */
	struct drm_vgsched_submit hung =
		vg_job(bad, &self->endless, self->endless_len, bindings, 0, 1, 1, 1);
	ASSERT_EQ(0, vgsched_submit(self->fd, &hung));
	__u64 start = vg_now_ns();
	/* Queued behind the hang on the same context: cancelled with it. */
	struct drm_vgsched_submit behind = hung;

	ASSERT_EQ(0, vgsched_submit(self->fd, &behind));

	/* Another context's job completes meanwhile, with right results. */
	for (int i = 0; i < 64; i++) {
		((uint32_t *)self->a.map)[i] = i;
		((uint32_t *)self->b.map)[i] = 7;
	}
	struct drm_vgsched_submit other = vg_job(good, &self->add, self->add_len, bindings, 3, 1, 1, 64);

	ASSERT_EQ(0, vgsched_submit(self->fd, &other));
	ASSERT_EQ(0, vgsched_wait(self->fd, good, other.seqno, 30 * VG_SECOND_NS, &status));
	ASSERT_EQ(0, status);
	for (int i = 0; i < 64; i++) {
		ASSERT_EQ(i + 7, ((uint32_t *)self->c.map)[i]);
	}
	/* The hung job is still held: not before the timeout. */
	ASSERT_EQ(-ETIMEDOUT, vgsched_wait(self->fd, bad, hung.seqno, 0, &status));

	ASSERT_EQ(0, vgsched_wait(self->fd, bad, hung.seqno, 30 * VG_SECOND_NS, &status));
	__u64 took = vg_now_ns() - start;

	ASSERT_EQ(-ETIME, status);
	/* Stopped at the job timeout: not before it (modeled time is real time). */
	ASSERT_GE(took, self->info.job_timeout_ms * 1000000ull * 9 / 10);
	/* Cancelled with the guilty context, not necessarily as the hung job signals. */
	ASSERT_EQ(0, vgsched_wait(self->fd, bad, behind.seqno, 5 * VG_SECOND_NS, &status));
	ASSERT_EQ(-ECANCELED, status);

	struct drm_vgsched_ctx_query q = { .ctx_id = bad };

	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_VGSCHED_CTX_QUERY, &q));
	ASSERT_EQ(DRM_VGSCHED_CTX_STATE_GUILTY, q.state);
	ASSERT_EQ(2, q.jobs_completed);
	struct drm_vgsched_submit refused = hung;

	ASSERT_EQ(-ECANCELED, vgsched_submit(self->fd, &refused));
	/* The good context is untouched. */
	q.ctx_id = good;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_VGSCHED_CTX_QUERY, &q));
	ASSERT_EQ(DRM_VGSCHED_CTX_STATE_IDLE, q.state);
	other.seqno = 0;
	ASSERT_EQ(0, vgsched_submit(self->fd, &other));
	ASSERT_EQ(0, vgsched_wait(self->fd, good, other.seqno, 30 * VG_SECOND_NS, &status));
	ASSERT_EQ(0, status);
}

TEST_F(hang, close_mid_job_leaves_nothing_behind)
{
	char state[8192];
	int fd = vgsched_open_render_node();
	__u32 ctx = vgsched_ctx_create(fd, 8);
	struct vg_buf prog, out;
	__u64 words[4];
	unsigned int len = vg_prog_endless(words);

	ASSERT_NE(0, ctx);
	ASSERT_EQ(0, vg_program(fd, words, len, &prog));
	ASSERT_EQ(0, vg_buf_create(fd, 4096, &out));
	struct drm_vgsched_submit s = vg_job(ctx, &prog, len, &out.handle, 1, 8, 4, 1);

	for (int i = 0; i < 5; i++) {
		ASSERT_EQ(0, vgsched_submit(fd, &s));
	}
	ASSERT_EQ(0, device_state(state, sizeof(state)));
	ASSERT_NE(NULL, strstr(state, "jobs queued")) TH_LOG("%s", state);
	munmap(prog.map, prog.size);
	munmap(out.map, out.size);
	close(fd);
	ASSERT_EQ(0, device_drains(state, sizeof(state))) TH_LOG("%s", state);
	ASSERT_NE(NULL, strstr(state, "module 0: vgpr 0 sgpr 0 shared 0 waves 0,")) TH_LOG("%s", state);
}

TEST_F(hang, killed_process_mid_job_leaves_nothing_behind)
{
	char state[8192];
	pid_t pid = vg_spawn_endless_child();

	ASSERT_GT(pid, 0);
	ASSERT_EQ(0, device_state(state, sizeof(state)));
	ASSERT_NE(NULL, strstr(state, "jobs queued")) TH_LOG("%s", state);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	ASSERT_EQ(0, device_drains(state, sizeof(state))) TH_LOG("%s", state);
}

/*
 * One wave of 64 threads: lanes 0-62 count down @loops, lane 63 counts
 * down @fault_loops (3 modeled cycles an iteration), then stores far out
 * of bounds.
 */
static unsigned int prog_fault_in_last_lane(__u64 *p, int loops, int fault_loops)
{
	unsigned int n = 0;

#define I(op, rd, ra, rb, imm) vg_instr(DRM_VGSCHED_OP_##op, rd, ra, rb, imm)
	p[n++] = I(SREG, 1, 0, 0, DRM_VGSCHED_SREG_LANE);
	p[n++] = I(MOVI, 2, 0, 0, 63);
	p[n++] = I(SEQ, 3, 1, 2, 0);
	p[n++] = I(MOVI, 0, 0, 0, loops);
	p[n++] = I(BRZ, 0, 3, 0, 6);
	p[n++] = I(MOVI, 0, 0, 0, fault_loops);			/* lane 63 */
	p[n++] = I(ADDI, 0, 0, 0, -1);				/* 6: loop */
	p[n++] = I(BRNZ, 0, 0, 0, 6);
	p[n++] = I(BRNZ, 0, 3, 0, 10);
	p[n++] = I(END, 0, 0, 0, 0);
	p[n++] = I(MOVI, 4, 0, 0, 0x7fffffff);			/* 10: lane 63 */
	p[n++] = I(ST, 4, 4, 0, 0);
	p[n++] = I(END, 0, 0, 0, 0);
#undef I
	return n;
}

/* The child of the test below: runs the faulting job; exit 0 if it faulted. */
static int run_faulting_job(int ready_fd)
{
	/*
	 * Lanes 0-62: just under the 2 s default timeout at 1 MHz, 3 cycles an
	 * iteration; lane 63 faults after 300 ms, so the job runs that long.
	 */
	int loops = 2000 * 1000 / 3 - 1000, fault_loops = 300 * 1000 / 3;
	struct vg_buf prog, out;
	__u64 words[16];
	__u32 bind;
	int fd, status = 0, ok;
	__u32 ctx;

	fd = vgsched_open_render_node();
	if (fd < 0)
		return 2;
	ctx = vgsched_ctx_create(fd, 8);
	if (!ctx || vg_program(fd, words, prog_fault_in_last_lane(words, loops, fault_loops), &prog) ||
	    vg_buf_create(fd, 4096, &out))
		return 3;
	bind = out.handle;
	struct drm_vgsched_submit s = vg_job(ctx, &prog, prog_fault_in_last_lane(words, loops, fault_loops),
					     &bind, 1, 1, 1, 64);
	if (vgsched_submit(fd, &s))
		return 4;
	ok = write(ready_fd, "s", 1) == 1;
	if (vgsched_wait(fd, ctx, s.seqno, 120 * VG_SECOND_NS, &status))
		return 5;
	return ok && status == -EFAULT ? 0 : 6;
}

/*
 * While another process's wave faults in its last lane, this process's
 * context ioctls (which need the engine lock) never wait long: the engine
 * interprets in bounded pieces and drops its lock between them. Before,
 * the lanes before the faulting one ran to the job timeout under the lock
 * (seconds in the guest), and every other client waited that long. The
 * bound asserted (one second) is far above the engine's lock hold
 * (Documentation/benchmarks.rst measures it) and far below the old wait.
 */
TEST(fault_in_last_lane_never_blocks_other_clients)
{
	__u64 worst = 0, t0;
	int pipefd[2], wstatus, rounds = 0;
	char c;
	pid_t child;
	int fd;

	ASSERT_EQ(0, pipe(pipefd));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		close(pipefd[0]);
		_exit(run_faulting_job(pipefd[1]));
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	fd = vgsched_open_render_node();
	ASSERT_LE(0, fd);
	while (waitpid(child, &wstatus, WNOHANG) == 0) {
		struct drm_vgsched_ctx_query q;
		__u32 ctx;

		t0 = vg_now_ns();
		ctx = vgsched_ctx_create(fd, 8);
		ASSERT_NE(0, ctx);
		ASSERT_EQ(0, vgsched_ctx_query(fd, ctx, &q));
		ASSERT_EQ(0, vgsched_ctx_destroy(fd, ctx));
		if (vg_now_ns() - t0 > worst)
			worst = vg_now_ns() - t0;
		rounds++;
		usleep(1000);
	}
	TH_LOG("%d rounds of create, query and destroy; the slowest took %llu us",
	       rounds, (unsigned long long)worst / 1000);
	ASSERT_TRUE(WIFEXITED(wstatus));
	ASSERT_EQ(0, WEXITSTATUS(wstatus));
	/* The job ran long enough to be overlapped. */
	ASSERT_LE(1, rounds);
	ASSERT_LT(worst, VG_SECOND_NS);
	close(fd);
}

TEST_HARNESS_MAIN
