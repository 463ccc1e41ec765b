// SPDX-License-Identifier: GPL-2.0
/*
 * Completion fences through the uAPI: a job's sync_file out-fence is
 * poll-able and signals when the job ends; given as another job's
 * in-fence it holds that job back until then. WAIT with an absolute
 * deadline (DRM_VGSCHED_WAIT_ABSOLUTE) ends by it: at once when it has
 * passed, on time otherwise, even when signals restart the call. A
 * submission racing its context's destruction is refused or ends.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include <linux/sync_file.h>

#include "kselftest_harness.h"
#include "vgsched_programs.h"

FIXTURE(fence) {
	int fd;
	__u32 ctx_a, ctx_b;
	struct vg_buf busy, slow, add, buf_a, buf_b, buf_c;
	unsigned int busy_len, slow_len, add_len;
};

FIXTURE_SETUP(fence)
{
	__u64 words[16];

	self->fd = vgsched_open_render_node();
	ASSERT_GE(self->fd, 0);
	self->ctx_a = vgsched_ctx_create(self->fd, 8);
	self->ctx_b = vgsched_ctx_create(self->fd, 8);
	ASSERT_NE(0, self->ctx_a);
	ASSERT_NE(0, self->ctx_b);
	/* ~6 ms of modeled time per thread at 1 MHz. */
	self->busy_len = vg_prog_busy_store(words, 2000);
	ASSERT_EQ(0, vg_program(self->fd, words, self->busy_len, &self->busy));
	/* ~0.9 s: far longer than a test needs to look at it running. */
	self->slow_len = vg_prog_busy_store(words, 300000);
	ASSERT_EQ(0, vg_program(self->fd, words, self->slow_len, &self->slow));
	self->add_len = vg_prog_vector_add(words, 0);
	ASSERT_EQ(0, vg_program(self->fd, words, self->add_len, &self->add));
	ASSERT_EQ(0, vg_buf_create(self->fd, 4096, &self->buf_a));
	ASSERT_EQ(0, vg_buf_create(self->fd, 4096, &self->buf_b));
	ASSERT_EQ(0, vg_buf_create(self->fd, 4096, &self->buf_c));
}

FIXTURE_TEARDOWN(fence)
{
	close(self->fd);
}

static int sync_file_status(int fence_fd)
{
	struct sync_file_info info = {};

	if (ioctl(fence_fd, SYNC_IOC_FILE_INFO, &info))
		return -1000;
	return info.status;
}

TEST_F(fence, out_fence_is_pollable_and_signals_at_completion)
{
	struct drm_vgsched_submit s =
		vg_job(self->ctx_a, &self->slow, self->slow_len, &self->buf_a.handle, 1, 1, 1, 1);
	int status = 1;

	s.flags = DRM_VGSCHED_SUBMIT_OUT_FENCE;
	ASSERT_EQ(0, vgsched_submit(self->fd, &s));
	ASSERT_GE(s.out_fence_fd, 0);
	ASSERT_NE(self->fd, s.out_fence_fd);

	struct pollfd p = { .fd = s.out_fence_fd, .events = POLLIN };

	/* Still running right after submission: not ready yet. */
	ASSERT_EQ(0, poll(&p, 1, 0));
	ASSERT_EQ(0, sync_file_status(s.out_fence_fd));
	ASSERT_EQ(1, poll(&p, 1, 30000));
	ASSERT_TRUE(p.revents & POLLIN);
	ASSERT_EQ(1, sync_file_status(s.out_fence_fd));
	ASSERT_EQ(0, vgsched_wait(self->fd, self->ctx_a, s.seqno, 0, &status));
	ASSERT_EQ(0, status);
	close(s.out_fence_fd);
}

TEST_F(fence, sync_file_of_one_job_gates_another)
{
	uint32_t *b = self->buf_b.map, *c = self->buf_c.map;
	int status = 1;

	/* Job A (context A) writes a[i] = i slowly; job B (context B) computes c = a + b. */
	struct drm_vgsched_submit ja =
		vg_job(self->ctx_a, &self->busy, self->busy_len, &self->buf_a.handle, 1, 4, 1, 64);
	ja.flags = DRM_VGSCHED_SUBMIT_OUT_FENCE;
	ASSERT_EQ(0, vgsched_submit(self->fd, &ja));

	for (int i = 0; i < 256; i++)
		b[i] = 1000;
	__u32 bindings[] = { self->buf_a.handle, self->buf_b.handle, self->buf_c.handle };
	struct drm_vgsched_submit jb =
		vg_job(self->ctx_b, &self->add, self->add_len, bindings, 3, 4, 1, 64);

	jb.flags = DRM_VGSCHED_SUBMIT_IN_FENCE | DRM_VGSCHED_SUBMIT_OUT_FENCE;
	jb.in_fence_fd = ja.out_fence_fd;
	ASSERT_EQ(0, vgsched_submit(self->fd, &jb));

	/* B cannot be done while A is not, whatever the timing. */
	ASSERT_EQ(0, vgsched_wait(self->fd, self->ctx_b, jb.seqno, 30 * VG_SECOND_NS, &status));
	ASSERT_EQ(0, status);
	ASSERT_EQ(1, sync_file_status(ja.out_fence_fd)) TH_LOG("B finished before A");
	for (int i = 0; i < 256; i++) {
		ASSERT_EQ(1000 + i, c[i]) TH_LOG("B read a[%d] before A wrote it", i);
	}
	close(ja.out_fence_fd);
	close(jb.out_fence_fd);
}

TEST_F(fence, failed_in_fence_cancels_the_waiting_job)
{
	/* A's context is destroyed while A runs: its fence signals -ECANCELED. */
	__u32 ctx = vgsched_ctx_create(self->fd, 8);
	struct drm_vgsched_submit ja =
		vg_job(ctx, &self->slow, self->slow_len, &self->buf_a.handle, 1, 1, 1, 1);
	int status = 0;

	ja.flags = DRM_VGSCHED_SUBMIT_OUT_FENCE;
	ASSERT_EQ(0, vgsched_submit(self->fd, &ja));
	__u32 bindings[] = { self->buf_a.handle, self->buf_b.handle, self->buf_c.handle };
	struct drm_vgsched_submit jb =
		vg_job(self->ctx_b, &self->add, self->add_len, bindings, 3, 1, 1, 64);

	jb.flags = DRM_VGSCHED_SUBMIT_IN_FENCE;
	jb.in_fence_fd = ja.out_fence_fd;
	ASSERT_EQ(0, vgsched_submit(self->fd, &jb));
	ASSERT_EQ(0, vgsched_ctx_destroy(self->fd, ctx));
	ASSERT_EQ(-ECANCELED, sync_file_status(ja.out_fence_fd));
	ASSERT_EQ(0, vgsched_wait(self->fd, self->ctx_b, jb.seqno, 30 * VG_SECOND_NS, &status));
	ASSERT_EQ(-ECANCELED, status);
	close(ja.out_fence_fd);
}

/*
 * A chain of in-fences across contexts, longer than a step's bound of
 * passes (64) and than a context's jobs in flight: each job waits on the
 * previous one's out-fence, and the first fails. Every link fails in turn
 * as the one before it is collected and signals, each found failed by
 * the runnable refresh or the dispatcher and collected from there: every
 * job of the chain ends -ECANCELED, none is left uncollected.
 */
#define CHAIN_CTXS 3
#define CHAIN_LEN 96

TEST_F(fence, failed_in_fence_chain_longer_than_a_step_ends)
{
	__u32 head_ctx = vgsched_ctx_create(self->fd, 8);
	__u32 ctxs[CHAIN_CTXS];
	struct drm_vgsched_submit head =
		vg_job(head_ctx, &self->slow, self->slow_len, &self->buf_a.handle, 1, 1, 1, 1);
	int fences[CHAIN_LEN + 1];
	__u64 seqnos[CHAIN_LEN];
	int status = 0;

	ASSERT_NE(0, head_ctx);
	for (int c = 0; c < CHAIN_CTXS; c++) {
		ctxs[c] = vgsched_ctx_create(self->fd, 8);
		ASSERT_NE(0, ctxs[c]);
	}
	head.flags = DRM_VGSCHED_SUBMIT_OUT_FENCE;
	ASSERT_EQ(0, vgsched_submit(self->fd, &head));
	fences[0] = head.out_fence_fd;
	for (int i = 0; i < CHAIN_LEN; i++) {
		struct drm_vgsched_submit s = vg_job(ctxs[i % CHAIN_CTXS], &self->busy, self->busy_len,
						     &self->buf_b.handle, 1, 1, 1, 1);

		s.flags = DRM_VGSCHED_SUBMIT_IN_FENCE | DRM_VGSCHED_SUBMIT_OUT_FENCE;
		s.in_fence_fd = fences[i];
		ASSERT_EQ(0, vgsched_submit(self->fd, &s)) TH_LOG("link %d", i);
		fences[i + 1] = s.out_fence_fd;
		seqnos[i] = s.seqno;
	}
	/* The head is cancelled: every link after it fails in turn. */
	ASSERT_EQ(0, vgsched_ctx_destroy(self->fd, head_ctx));
	ASSERT_EQ(0, vgsched_wait(self->fd, ctxs[(CHAIN_LEN - 1) % CHAIN_CTXS],
				  seqnos[CHAIN_LEN - 1], 30 * VG_SECOND_NS, &status));
	ASSERT_EQ(-ECANCELED, status);
	for (int i = 0; i <= CHAIN_LEN; i++) {
		ASSERT_EQ(-ECANCELED, sync_file_status(fences[i])) TH_LOG("link %d", i - 1);
		close(fences[i]);
	}
}

/*
 * Submissions racing the destruction of their context, from another
 * thread of the same file: each either is refused with ENOENT or ends,
 * its out-fence signalled (done, or -ECANCELED) within a bounded time.
 * None is lost on its way to the engine, whichever of the two comes first.
 */
#define RACE_ROUNDS 12
#define RACE_MAX_JOBS 1024

struct racer {
	int fd;
	__u32 ctx;
	struct drm_vgsched_submit job;
	int fences[RACE_MAX_JOBS];
	int accepted;
	int refused_errno;
	int started;
};

static void *submit_until_refused(void *arg)
{
	struct racer *r = arg;

	for (;;) {
		struct drm_vgsched_submit s = r->job;

		if (vgsched_submit(r->fd, &s)) {
			if (errno == EBUSY) {
				/* 64 unfinished: wait for one, the destroy ends it all. */
				usleep(200);
				continue;
			}
			r->refused_errno = errno;
			return NULL;
		}
		if (r->accepted == RACE_MAX_JOBS) {
			r->refused_errno = E2BIG;
			close(s.out_fence_fd);
			return NULL;
		}
		r->fences[r->accepted++] = s.out_fence_fd;
		__atomic_store_n(&r->started, 1, __ATOMIC_RELEASE);
	}
}

TEST_F(fence, submissions_racing_a_destroy_are_refused_or_end)
{
	static struct racer r;

	for (int round = 0; round < RACE_ROUNDS; round++) {
		pthread_t t;

		memset(&r, 0, sizeof(r));
		r.fd = self->fd;
		r.ctx = vgsched_ctx_create(self->fd, 8);
		ASSERT_NE(0, r.ctx);
		/* One-wave jobs of ~6 ms: some run, some wait, as the destroy comes. */
		r.job = vg_job(r.ctx, &self->busy, self->busy_len, &self->buf_a.handle, 1, 1, 1, 1);
		r.job.flags = DRM_VGSCHED_SUBMIT_OUT_FENCE;
		ASSERT_EQ(0, pthread_create(&t, NULL, submit_until_refused, &r));
		while (!__atomic_load_n(&r.started, __ATOMIC_ACQUIRE))
			usleep(100);
		/* Later in each round: the destroy meets submissions at every stage. */
		usleep(round * 500);
		ASSERT_EQ(0, vgsched_ctx_destroy(self->fd, r.ctx));
		ASSERT_EQ(0, pthread_join(t, NULL));
		ASSERT_EQ(ENOENT, r.refused_errno) TH_LOG("round %d", round);
		ASSERT_GT(r.accepted, 0);
		for (int i = 0; i < r.accepted; i++) {
			struct pollfd p = { .fd = r.fences[i], .events = POLLIN };
			int status;

			ASSERT_EQ(1, poll(&p, 1, 10000))
				TH_LOG("round %d: job %d of %d never ended", round, i + 1, r.accepted);
			status = sync_file_status(r.fences[i]);
			ASSERT_TRUE(status == 1 || status == -ECANCELED)
				TH_LOG("round %d: job %d ended with %d", round, i + 1, status);
			close(r.fences[i]);
		}
	}
}

/* A job of about five seconds on context A, for waits that must time out. */
static void start_long_job(struct __test_metadata *_metadata, FIXTURE_DATA(fence) *self,
			   struct busy_job *j)
{
	ASSERT_EQ(0, busy_job_init(self->fd, j, self->ctx_a, 5000, 1, 1, 1, 1));
	ASSERT_EQ(0, busy_submit(self->fd, j));
	ASSERT_TRUE(still_running(self->fd, self->ctx_a, j->s.seqno));
}

TEST_F(fence, absolute_deadline_in_the_past_returns_at_once)
{
	struct busy_job j;
	__u64 start;

	start_long_job(_metadata, self, &j);
	start = vg_now_ns();
	ASSERT_EQ(-ETIMEDOUT, vgsched_wait_flags(self->fd, self->ctx_a, j.s.seqno,
						 DRM_VGSCHED_WAIT_ABSOLUTE, start - 1000000, NULL));
	ASSERT_EQ(-ETIMEDOUT, vgsched_wait_flags(self->fd, self->ctx_a, j.s.seqno,
						 DRM_VGSCHED_WAIT_ABSOLUTE, 0, NULL));
	/* No waiting: far less than the job, or a relative wait of that size. */
	ASSERT_LT(vg_now_ns() - start, 200000000ull);
	busy_job_fini(self->fd, &j);
}

TEST_F(fence, absolute_deadline_is_kept)
{
	struct busy_job j;
	__u64 start, took;

	start_long_job(_metadata, self, &j);
	start = vg_now_ns();
	ASSERT_EQ(-ETIMEDOUT, vgsched_wait_flags(self->fd, self->ctx_a, j.s.seqno,
						 DRM_VGSCHED_WAIT_ABSOLUTE, start + 50000000, NULL));
	took = vg_now_ns() - start;
	/* Never before the deadline; late only by scheduling. */
	ASSERT_GE(took, 50000000ull);
	ASSERT_LT(took, 1000000000ull) TH_LOG("took %llu ns", took);
	busy_job_fini(self->fd, &j);
}

static volatile sig_atomic_t alarms;

static void count_alarm(int sig)
{
	alarms++;
}

/*
 * A timer interrupts the wait every 2 ms; SA_RESTART makes the C library
 * restart the ioctl each time with the same argument. The absolute wait
 * still ends at its deadline.
 */
TEST_F(fence, absolute_deadline_survives_restarts)
{
	struct sigaction sa = { .sa_handler = count_alarm, .sa_flags = SA_RESTART };
	struct itimerval every_2ms = { .it_interval = { 0, 2000 }, .it_value = { 0, 2000 } };
	struct itimerval off = {};
	struct busy_job j;
	__u64 start, took;
	int ret;

	start_long_job(_metadata, self, &j);
	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	alarms = 0;
	start = vg_now_ns();
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &every_2ms, NULL));
	ret = vgsched_wait_flags(self->fd, self->ctx_a, j.s.seqno, DRM_VGSCHED_WAIT_ABSOLUTE,
				 start + 300000000, NULL);
	took = vg_now_ns() - start;
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_DFL);
	ASSERT_EQ(-ETIMEDOUT, ret);
	/* Signals did arrive during the wait, so it was restarted. */
	ASSERT_GE(alarms, 10);
	ASSERT_GE(took, 300000000ull);
	/* The job has seconds left: the wait ended by its deadline, not with the job. */
	ASSERT_LT(took, 1500000000ull) TH_LOG("took %llu ns", took);
	ASSERT_TRUE(still_running(self->fd, self->ctx_a, j.s.seqno));
	busy_job_fini(self->fd, &j);
}

TEST_HARNESS_MAIN
