// SPDX-License-Identifier: GPL-2.0
/*
 * vgsched-demo: what the main job runs in the guest. Opens the vgsched
 * render node, prints what the virtual GPU looks like, then runs real jobs
 * on it through the uAPI and shows what happened:
 *  - a float vector add and an integer matrix multiply, results checked;
 *  - a job on a second context gated by the first one's sync_file;
 *  - an endless loop stopped at the job timeout, its context turned guilty;
 *  - the dispatcher: a low-priority job served while high-priority work
 *    fills the device, a blocked independent work-group split into
 *    pieces, placements and occupancy bitmaps read back from debugfs;
 *  - the device as its debugfs dump sees it (per-module instruction counts);
 *  - slot selection in turn, pipelined context switching, and tiles: where
 *    jobs of k tiles go and why, sleeping tiles, energy read through hwmon;
 *  - a project in configfs: requests within the budget, a refused one,
 *    a member's whole request reserved at start, the device's tile
 *    revoked and enrolled again by its provider's code,
 *    a member's process stopped at its quota, and two members sharing a
 *    model read-only through shared storage.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vgsched_programs.h"
#include "vgsched_projects.h"

#define CHECK(cond, ...) do { \
		if (!(cond)) { \
			fprintf(stderr, "vgsched-demo: " __VA_ARGS__); \
			fprintf(stderr, "\n"); \
			exit(1); \
		} \
	} while (0)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *status_name(int status)
{
	switch (status) {
	case 0: return "ok";
	case -EFAULT: return "-EFAULT (out-of-bounds access)";
	case -ETIME: return "-ETIME (ran past the job timeout)";
	case -ECANCELED: return "-ECANCELED (never ran)";
	default: return "other error";
	}
}

/* Submits, waits, and prints one line about the job; returns its status. */
static int run(int fd, struct drm_vgsched_submit *s, const char *what)
{
	double t0 = now_ms();
	int ret = vgsched_submit(fd, s), status = 1;

	CHECK(!ret, "SUBMIT (%s): %s", what, strerror(-ret));
	ret = vgsched_wait(fd, s->ctx_id, s->seqno, 60 * VG_SECOND_NS, &status);
	CHECK(!ret, "WAIT (%s): %s", what, strerror(-ret));
	printf("  %-34s context %u seqno %llu: %s after %.1f ms\n", what, s->ctx_id,
	       (unsigned long long)s->seqno, status_name(status), now_ms() - t0);
	return status;
}

static void print_context(int fd, __u32 ctx)
{
	static const char *const states[] = { "idle", "active", "guilty" };
	struct drm_vgsched_ctx_query q = { .ctx_id = ctx };

	CHECK(!ioctl(fd, DRM_IOCTL_VGSCHED_CTX_QUERY, &q), "CTX_QUERY failed");
	printf("  context %u: priority %u, %s, %llu jobs submitted, %llu completed, "
	       "GPU runtime %.3f ms\n", ctx, q.priority, q.state < 3 ? states[q.state] : "?",
	       (unsigned long long)q.jobs_submitted, (unsigned long long)q.jobs_completed,
	       q.runtime_ns / 1e6);
}

static void vector_add(int fd, __u32 ctx)
{
	const unsigned int n = 1024;
	struct vg_buf prog, a, b, c;
	__u64 words[16];
	unsigned int len = vg_prog_vector_add(words, 1), wrong = 0;

	CHECK(!vg_program(fd, words, len, &prog), "program upload failed");
	CHECK(!vg_buf_create(fd, n * 4, &a) && !vg_buf_create(fd, n * 4, &b) &&
	      !vg_buf_create(fd, n * 4, &c), "buffer creation failed");
	float *A = a.map, *B = b.map, *C = c.map;

	for (unsigned int i = 0; i < n; i++) {
		A[i] = i * 0.5f;
		B[i] = 1.0f / (i + 1);
	}
	__u32 bindings[] = { a.handle, b.handle, c.handle };
	struct drm_vgsched_submit s = vg_job(ctx, &prog, len, bindings, 3, 8, 2, 64);

	printf("\nfloat vector add, c = a + b over %u elements (8 work-groups x 2 waves x 64 threads):\n", n);
	run(fd, &s, "vector add");
	for (unsigned int i = 0; i < n; i++)
		wrong += memcmp(&(float){ A[i] + B[i] }, &C[i], 4) != 0;
	for (unsigned int i = 0; i < n; i += 341)
		printf("  c[%4u] = %9.6f + %9.6f = %11.6f\n", i, A[i], B[i], C[i]);
	printf("  %u of %u elements bit-exact with the CPU's result\n", n - wrong, n);
	CHECK(!wrong, "vector add gave wrong results");
	vg_buf_destroy(fd, &prog);
	vg_buf_destroy(fd, &a);
	vg_buf_destroy(fd, &b);
	vg_buf_destroy(fd, &c);
}

static void matmul_gated(int fd, __u32 ctx_a, __u32 ctx_b)
{
	enum { N = 6 };
	struct vg_buf mm, busy, a, b, c;
	__u64 words[32];
	unsigned int mm_len = vg_prog_matmul(words, N);

	CHECK(!vg_program(fd, words, mm_len, &mm), "program upload failed");
	unsigned int busy_len = vg_prog_busy_store(words, 100000);

	CHECK(!vg_program(fd, words, busy_len, &busy), "program upload failed");
	CHECK(!vg_buf_create(fd, 4096, &a) && !vg_buf_create(fd, 4096, &b) &&
	      !vg_buf_create(fd, 4096, &c), "buffer creation failed");
	int32_t *A = a.map, *B = b.map, *C = c.map;

	for (int i = 0; i < N * N; i++)
		B[i] = (i % (N + 1)) == 0;	/* identity */

	/* Job 1 (context A) slowly writes A[i] = i; job 2 (context B) waits for it. */
	struct drm_vgsched_submit j1 = vg_job(ctx_a, &busy, busy_len, &a.handle, 1, 1, 1, N * N);
	__u32 bindings[] = { a.handle, b.handle, c.handle };
	struct drm_vgsched_submit j2 = vg_job(ctx_b, &mm, mm_len, bindings, 3, N, 1, N);

	printf("\nsync_file gating: context %u fills A slowly, context %u computes C = A x I "
	       "once A's fence signals:\n", ctx_a, ctx_b);
	j1.flags = DRM_VGSCHED_SUBMIT_OUT_FENCE;
	double t0 = now_ms();

	CHECK(!vgsched_submit(fd, &j1), "SUBMIT job 1 failed");
	j2.flags = DRM_VGSCHED_SUBMIT_IN_FENCE;
	j2.in_fence_fd = j1.out_fence_fd;
	CHECK(!vgsched_submit(fd, &j2), "SUBMIT job 2 failed");

	struct pollfd p = { .fd = j1.out_fence_fd, .events = POLLIN };

	CHECK(poll(&p, 1, 60000) == 1, "fence never signalled");
	printf("  job 1's sync_file fd %d became readable after %.1f ms\n", j1.out_fence_fd,
	       now_ms() - t0);
	int status = 1;

	CHECK(!vgsched_wait(fd, ctx_b, j2.seqno, 60 * VG_SECOND_NS, &status), "WAIT failed");
	printf("  job 2 finished after %.1f ms: %s\n", now_ms() - t0, status_name(status));
	for (int r = 0; r < N; r++) {
		printf("  C[%d] =", r);
		for (int col = 0; col < N; col++) {
			printf(" %3d", C[r * N + col]);
			CHECK(C[r * N + col] == A[r * N + col], "matrix product is wrong");
		}
		printf("\n");
	}
	close(j1.out_fence_fd);
	vg_buf_destroy(fd, &mm);
	vg_buf_destroy(fd, &busy);
	vg_buf_destroy(fd, &a);
	vg_buf_destroy(fd, &b);
	vg_buf_destroy(fd, &c);
}

static void endless_loop(int fd, __u32 bad, __u32 good, const struct drm_vgsched_gpu_info *info)
{
	struct vg_buf prog, out;
	__u64 words[8];
	unsigned int len = vg_prog_endless(words);

	CHECK(!vg_program(fd, words, len, &prog), "program upload failed");
	CHECK(!vg_buf_create(fd, 4096, &out), "buffer creation failed");
	struct drm_vgsched_submit s = vg_job(bad, &prog, len, &out.handle, 1, 1, 1, 1);

	printf("\nan endless loop on context %u (job timeout %u ms):\n", bad, info->job_timeout_ms);
	CHECK(run(fd, &s, "endless loop") == -ETIME, "the endless loop was not stopped");
	s.seqno = 0;
	int ret = vgsched_submit(fd, &s);

	printf("  new work on context %u: %s\n", bad,
	       ret == -ECANCELED ? "refused with -ECANCELED (guilty)" : strerror(-ret));
	CHECK(ret == -ECANCELED, "a guilty context accepted work");
	unsigned int busy_len = vg_prog_busy_store(words, 10);

	vg_buf_destroy(fd, &prog);
	CHECK(!vg_program(fd, words, busy_len, &prog), "program upload failed");
	s = vg_job(good, &prog, busy_len, &out.handle, 1, 4, 4, 64);
	CHECK(run(fd, &s, "other context, 4 x 4 x 64 threads") == 0, "other context failed");
	vg_buf_destroy(fd, &prog);
	vg_buf_destroy(fd, &out);
}

/* Prints the lines of debugfs file @name that contain @match (all if NULL), at most @max. */
static void print_debugfs_lines(const char *name, const char *match, int max)
{
	static char buf[2 << 20];
	char *line, *save = NULL;

	if (vgsched_debugfs_read(name, buf, sizeof(buf)))
		return;
	for (line = strtok_r(buf, "\n", &save); line && max > 0; line = strtok_r(NULL, "\n", &save)) {
		if (!match || strstr(line, match)) {
			printf("    %.150s%s\n", line, strlen(line) > 150 ? " ..." : "");
			max--;
		}
	}
}

/* A job of vg_prog_slow_store: @ms of modeled time per wave, results in @out. */
static struct drm_vgsched_submit slow_job(int fd, __u32 ctx, struct vg_buf *prog, struct vg_buf *out,
					  int ms, __u32 groups, __u32 waves, __u32 vgpr)
{
	__u64 words[16];
	unsigned int len = vg_prog_slow_store(words, ms * 1000 / VG_SLOW_LOOP_CYCLES + 1);

	CHECK(!vg_program(fd, words, len, prog), "program upload failed");
	CHECK(!vg_buf_create(fd, groups * waves * 4, out), "buffer creation failed");
	struct drm_vgsched_submit s = vg_job(ctx, prog, len, &out->handle, 1, groups, waves, 1);

	s.vgpr_blocks = vgpr;
	s.sgpr_blocks = 1;
	s.shared_mem_blocks = 0;
	return s;
}

static int ids_right(const struct vg_buf *out, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (((uint32_t *)out->map)[i] != i)
			return 0;
	return 1;
}

static void dispatcher(int fd)
{
	__u32 hi1 = vgsched_ctx_create(fd, 8), hi2 = vgsched_ctx_create(fd, 8);
	__u32 lo = vgsched_ctx_create(fd, 8), fill = vgsched_ctx_create(fd, 8);
	__u32 ind = vgsched_ctx_create(fd, 8);
	struct vg_buf prog[5], out[5];
	int status = 1;

	CHECK(hi1 && hi2 && lo && fill && ind, "CTX_CREATE failed");
	printf("\nthe work-group dispatcher: two contexts fill the device with top-priority work\n"
	       "(2 x 150 work-groups of 4 waves x 32 vector blocks, 6 ms each), then a context\n"
	       "submits one work-group at the lowest priority:\n");
	struct drm_vgsched_submit h1 = slow_job(fd, hi1, &prog[0], &out[0], 6, 150, 4, 32);
	struct drm_vgsched_submit h2 = slow_job(fd, hi2, &prog[1], &out[1], 6, 150, 4, 32);
	struct drm_vgsched_submit l = slow_job(fd, lo, &prog[2], &out[2], 1, 1, 1, 32);

	h1.group_priority = h2.group_priority = 0;
	l.group_priority = DRM_VGSCHED_GROUP_PRIORITIES - 1;
	CHECK(!vgsched_submit(fd, &h1) && !vgsched_submit(fd, &h2), "SUBMIT failed");
	usleep(20 * 1000);
	printf("  module 0's bitmaps now (# in use):\n");
	print_debugfs_lines("occupancy", NULL, 5);
	double t0 = now_ms();

	CHECK(!vgsched_submit(fd, &l), "SUBMIT failed");
	CHECK(!vgsched_wait(fd, lo, l.seqno, 60 * VG_SECOND_NS, &status) && status == 0, "low job failed");
	printf("  the lowest-priority job finished after %.1f ms (the rotating windows put its level\n"
	       "  first for 1 ms of every 15 ms), while high-priority work was still queued:\n", now_ms() - t0);
	print_debugfs_lines("state", "job seqno", 2);
	print_debugfs_lines("placements", "band=3", 1);
	CHECK(!vgsched_wait(fd, hi1, h1.seqno, 60 * VG_SECOND_NS, &status) && status == 0, "hi job failed");
	CHECK(!vgsched_wait(fd, hi2, h2.seqno, 60 * VG_SECOND_NS, &status) && status == 0, "hi job failed");
	printf("  all three jobs' results are right: %s\n",
	       ids_right(&out[0], 600) && ids_right(&out[1], 600) && ids_right(&out[2], 1) ? "yes" : "NO");

	printf("\nan independent work-group of 64 waves x 8 vector blocks (whole units) while a\n"
	       "filler holds a little of every unit for 500 ms:\n");
	struct drm_vgsched_submit f = slow_job(fd, fill, &prog[3], &out[3], 500, 4, 4, 4);
	struct drm_vgsched_submit g = slow_job(fd, ind, &prog[4], &out[4], 1, 1, 64, 8);

	g.flags = DRM_VGSCHED_SUBMIT_INDEPENDENT;
	CHECK(!vgsched_submit(fd, &f), "SUBMIT failed");
	t0 = now_ms();
	CHECK(!vgsched_submit(fd, &g), "SUBMIT failed");
	CHECK(!vgsched_wait(fd, ind, g.seqno, 60 * VG_SECOND_NS, &status) && status == 0, "split job failed");
	printf("  it finished after %.1f ms, the filler still running: %s; split into one-wave\n"
	       "  pieces of the lowest band, the first and last placements:\n", now_ms() - t0,
	       vgsched_wait(fd, fill, f.seqno, 0, NULL) == -ETIMEDOUT ? "yes" : "no");
	char key[96];

	snprintf(key, sizeof(key), " ctx=%u job=%llu group=0 waves=0+1 ", ind, (unsigned long long)g.seqno);
	print_debugfs_lines("placements", key, 1);
	snprintf(key, sizeof(key), " ctx=%u job=%llu group=0 waves=63+1 ", ind, (unsigned long long)g.seqno);
	print_debugfs_lines("placements", key, 1);
	CHECK(!vgsched_wait(fd, fill, f.seqno, 60 * VG_SECOND_NS, &status) && status == 0, "filler failed");
	printf("  results right: %s\n", ids_right(&out[4], 64) && ids_right(&out[3], 16) ? "yes" : "NO");
	printf("  the dispatcher's line of the state file:\n");
	print_debugfs_lines("state", "dispatcher:", 1);
	for (int i = 0; i < 5; i++) {
		vg_buf_destroy(fd, &prog[i]);
		vg_buf_destroy(fd, &out[i]);
	}
}

/* The contexts file's header and the lines of contexts @ctx of @client, from one read. */
static void print_contexts(__u64 client, const __u32 *ctx, int n)
{
	static char buf[1 << 16];
	char *line, *save = NULL;

	if (vgsched_debugfs_read("contexts", buf, sizeof(buf)))
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long c;
		unsigned int id;
		int show = line[0] == '#';

		if (sscanf(line, "%llu %u ", &c, &id) == 2 && c == client)
			for (int i = 0; i < n; i++)
				show |= id == ctx[i];
		if (show)
			printf("    %s\n", line);
	}
}

static void slots(int fd, const struct drm_vgsched_gpu_info *info)
{
	enum { N = 10 };
	__u32 ctx[N + 1];
	struct vg_buf prog[N + 1], out[N + 1];
	struct drm_vgsched_submit s[N + 1];
	struct drm_vgsched_ctx_query q;
	int status = 1;

	printf("\nthe context scheduler (slot selection, time slices): %d contexts at\n"
	       "priority 8, each with one 300 ms job, compete for %u hardware slots\n"
	       "(t0 %u us, proportional slices):\n",
	       N, info->hw_slots, info->time_slice_us);
	for (int i = 0; i < N; i++) {
		ctx[i] = vgsched_ctx_create(fd, 8);
		CHECK(ctx[i], "CTX_CREATE failed");
		s[i] = slow_job(fd, ctx[i], &prog[i], &out[i], 300, 1, 1, 4);
	}
	for (int i = 0; i < N; i++)
		CHECK(!vgsched_submit(fd, &s[i]), "SUBMIT failed");
	usleep(60 * 1000);
	__u64 client = vgsched_client_id(fd, ctx[0]);

	printf("  60 ms later, from debugfs contexts (slot '-' = waiting, state saved):\n");
	print_contexts(client, ctx, N);
	ctx[N] = vgsched_ctx_create(fd, 2);
	CHECK(ctx[N], "CTX_CREATE failed");
	s[N] = slow_job(fd, ctx[N], &prog[N], &out[N], 100, 1, 1, 4);
	double t0 = now_ms();

	CHECK(!vgsched_submit(fd, &s[N]), "SUBMIT failed");
	usleep(40 * 1000);
	printf("  a priority-2 context submits a 100 ms job; 40 ms later it holds a slot and\n"
	       "  the level-8 contexts hold none (strict priority), their preemptions counted:\n");
	print_contexts(client, ctx, N + 1);
	CHECK(!vgsched_wait(fd, ctx[N], s[N].seqno, 60 * VG_SECOND_NS, &status) && status == 0, "job failed");
	printf("  its job was done %.1f ms after submission\n", now_ms() - t0);
	for (int i = 0; i < N; i++)
		CHECK(!vgsched_wait(fd, ctx[i], s[i].seqno, 60 * VG_SECOND_NS, &status) && status == 0,
		      "job failed");
	printf("  all %d level-8 jobs done, results right:", N);
	int right = 1;

	for (int i = 0; i <= N; i++) {
		right &= ids_right(&out[i], 1);
		vg_buf_destroy(fd, &prog[i]);
		vg_buf_destroy(fd, &out[i]);
	}
	printf(" %s; GPU time each (300 ms asked):", right ? "yes" : "NO");
	for (int i = 0; i < N; i++) {
		CHECK(!vgsched_ctx_query(fd, ctx[i], &q), "CTX_QUERY failed");
		printf(" %.1f", q.runtime_ns / 1e6);
	}
	printf(" ms\n  the slot line of the state file:\n");
	print_debugfs_lines("state", "slots:", 1);
	for (int i = 0; i <= N; i++)
		vgsched_ctx_destroy(fd, ctx[i]);
}

/*
 * Residents in turn: the module reloaded with slot_mode=1 and two
 * slots; three contexts take turns, and the placement log shows the
 * rounds, the loads and each turn with the work-groups it placed.
 */
/* Reloads the module with @params; an open file of its render node. */
static int reload(const char *params)
{
	int fd;

	CHECK(!vgsched_module_unload(), "rmmod failed");
	CHECK(!vgsched_module_load(params), "insmod %s failed", params);
	fd = vgsched_open_render_node();
	CHECK(fd >= 0, "cannot open the render node");
	return fd;
}

/* Reloads the module with its default parameters. */
static void reload_default(void)
{
	CHECK(!vgsched_module_unload(), "rmmod failed");
	CHECK(!vgsched_module_load(""), "insmod failed");
}

static void slots_in_turn(void)
{
	enum { N = 3 };
	static char buf[1 << 17];
	__u32 ctx[N];
	struct vg_buf prog[N], out[N];
	struct drm_vgsched_submit s[N];
	struct drm_vgsched_ctx_query q;
	int status = 1, fd, shown = 0;
	char *line, *save = NULL;

	printf("\nslot selection in turn (module reloaded with slot_mode=1 hw_slots=2\n"
	       "time_slice_us=2000): three contexts at priority 5, each with a 40 ms job of four\n"
	       "work-groups; the loaded contexts run one after another in load order, and\n"
	       "slot selection runs again once each has had its turn (a round):\n");
	fd = reload("slot_mode=1 hw_slots=2 time_slice_us=2000 preemption_us=200");
	for (int i = 0; i < N; i++) {
		ctx[i] = vgsched_ctx_create(fd, 5);
		CHECK(ctx[i], "CTX_CREATE failed");
		s[i] = slow_job(fd, ctx[i], &prog[i], &out[i], 40, 4, 1, 1);
	}
	for (int i = 0; i < N; i++)
		CHECK(!vgsched_submit(fd, &s[i]), "SUBMIT failed");
	usleep(30 * 1000);
	printf("  the placement log's first rounds (load, turn with its slice, placements):\n");
	if (!vgsched_debugfs_read("placements", buf, sizeof(buf)))
		for (line = strtok_r(buf, "\n", &save); line && shown < 24; line = strtok_r(NULL, "\n", &save)) {
			char *cut = strstr(line, " band=");

			if (cut)
				*cut = 0; /* placements: who and which group is enough here */
			printf("    %s\n", line);
			shown++;
		}
	for (int i = 0; i < N; i++)
		CHECK(!vgsched_wait(fd, ctx[i], s[i].seqno, 60 * VG_SECOND_NS, &status) && status == 0,
		      "job failed");
	printf("  all done, results right: ");
	int right = 1;

	for (int i = 0; i < N; i++)
		right &= ids_right(&out[i], 4);
	printf("%s; GPU time each (40 ms asked):", right ? "yes" : "NO");
	for (int i = 0; i < N; i++) {
		CHECK(!vgsched_ctx_query(fd, ctx[i], &q), "CTX_QUERY failed");
		printf(" %.1f", q.runtime_ns / 1e6);
		vg_buf_destroy(fd, &prog[i]);
		vg_buf_destroy(fd, &out[i]);
	}
	printf(" ms\n  the slot line of the state file:\n");
	print_debugfs_lines("state", "slots:", 1);
	close(fd);
	reload_default();
}

static int by_time(const void *a, const void *b)
{
	const struct vg_stage *x = a, *y = b;

	return (x->t > y->t) - (x->t < y->t);
}

/*
 * One switch between two applications of the same priority level: A
 * (four 20 ms jobs over a 4 MiB model) then B (two jobs over its own
 * model), on one slot. Prints B's and A's stages from the stage log, in ms
 * from the first record, and the gap from A's last wave to B's first. (Of
 * the same level: a lower level's task is not prepared ahead of its load,
 * so it would switch as in sequential mode.)
 */
static void one_switch(int fd, const char *mode)
{
	enum { JOBS_A = 4, JOBS_B = 2 };
	struct vg_buf prog, model[2], out[JOBS_A + JOBS_B];
	struct drm_vgsched_submit s[JOBS_A + JOBS_B];
	__u32 ctx[2] = { vgsched_ctx_create(fd, 8), vgsched_ctx_create(fd, 8) };
	__u32 bind[JOBS_A + JOBS_B][2];
	static struct vg_stage log[512], lines[512];
	__u64 words[16], client, t0 = 0, a_last = 0, b_first = 0, start = vg_now_ns();
	unsigned int len = vg_prog_slow_copy(words, 300);
	int status = 1, n, count;

	CHECK(ctx[0] && ctx[1], "CTX_CREATE failed");
	client = vgsched_client_id(fd, ctx[0]);
	CHECK(!vg_program(fd, words, len, &prog), "program");
	for (int m = 0; m < 2; m++)
		CHECK(!vg_buf_create(fd, 4 << 20, &model[m]), "model");
	for (int j = 0; j < JOBS_A + JOBS_B; j++) {
		int b = j >= JOBS_A;

		CHECK(!vg_buf_create(fd, 4096, &out[j]), "output");
		bind[j][0] = model[b].handle;
		bind[j][1] = out[j].handle;
		s[j] = vg_job(ctx[b], &prog, len, bind[j], 2, 1, 1, 64);
		s[j].shared_mem_blocks = 0;
		s[j].binding_access[0] = DRM_VGSCHED_BINDING_READ;
		s[j].binding_access[1] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
	}
	for (int j = 0; j < JOBS_A + JOBS_B; j++) {
		CHECK(!vgsched_submit(fd, &s[j]), "SUBMIT failed");
		if (j == JOBS_A - 1)
			usleep(5000); /* A takes the slot first */
	}
	for (int j = 0; j < JOBS_A + JOBS_B; j++)
		CHECK(!vgsched_wait(fd, ctx[j >= JOBS_A], s[j].seqno, 60 * VG_SECOND_NS, &status) &&
		      status == 0, "job failed");
	printf("  %s: the stage log, in time order (ms from A's first stage):\n", mode);
	count = vgsched_stages(log, 512);
	CHECK(count >= 0, "cannot read debugfs stages");
	n = 0;
	for (int i = 0; i < count; i++) {
		const struct vg_stage *e = &log[i];

		if (e->client == client && e->t >= start && (e->ctx == ctx[0] || e->ctx == ctx[1]))
			lines[n++] = *e;
	}
	qsort(lines, n, sizeof(lines[0]), by_time);
	for (int i = 0; i < n; i++) {
		struct vg_stage *e = &lines[i];
		const char *who = e->ctx == ctx[0] ? "A" : "B";

		if (!t0)
			t0 = e->t;
		if (e->ctx == ctx[0] && !strcmp(e->event, "last_wave"))
			a_last = e->t;
		if (e->ctx == ctx[1] && !strcmp(e->event, "first_wave") && !b_first)
			b_first = e->t;
		if (e->job)
			printf("    %8.2f  %s job %llu %s\n", (e->t - t0) / 1e6, who, e->job, e->event);
		else
			printf("    %8.2f  %s %s\n", (e->t - t0) / 1e6, who, e->event);
	}
	printf("  %s: switch gap, A's last wave to B's first: %.2f ms\n", mode,
	       b_first > a_last ? (b_first - a_last) / 1e6 : 0.0);
	for (int j = 0; j < JOBS_A + JOBS_B; j++)
		vg_buf_destroy(fd, &out[j]);
	for (int m = 0; m < 2; m++)
		vg_buf_destroy(fd, &model[m]);
	vg_buf_destroy(fd, &prog);
	vgsched_ctx_destroy(fd, ctx[0]);
	vgsched_ctx_destroy(fd, ctx[1]);
}

/*
 * Pipelined context switching: the module reloaded with one slot, a long
 * time slice and 20 ms of modeled environment initialisation per task;
 * one switch pipelined, then the same after writing pipeline_mode=1
 * (sequential) at run time.
 */
static void pipelined_switch(void)
{
	int fd;

	printf("\npipelined context switching (module reloaded with hw_slots=1\n"
	       "time_slice_us=1000000 ctx_init_us=20000 progress_point=3 vram_mib=16): A and B,\n"
	       "both at priority 8, run four and two jobs over their own 4 MiB models. Pipelined,\n"
	       "B's phase 1 (environment initialisation) and its first phase 2 (upload) run\n"
	       "while A executes, from A's third-last job on (under TCG an upload takes longer\n"
	       "than one job); sequential, each waits for the stage before it. One switch each,\n"
	       "so the gap includes this guest's wake-up latency; make bench averages a run of them:\n");
	fd = reload("hw_slots=1 time_slice_us=1000000 ctx_init_us=20000 progress_point=3 vram_mib=16");
	one_switch(fd, "pipelined");
	CHECK(!vgsched_param_write("pipeline_mode", "1"), "cannot write pipeline_mode");
	one_switch(fd, "sequential");
	printf("  device memory afterwards (debugfs vram):\n");
	print_debugfs_lines("vram", "", 8);
	close(fd);
	reload_default();
}

/* Prints every hwmon channel of vgsched: label, energy and power. */
static void print_hwmon(void)
{
	char dir[300], path[400], label[32];

	if (hwmon_dir(dir, sizeof(dir))) {
		printf("    (no vgsched hwmon device)\n");
		return;
	}
	for (int i = 1;; i++) {
		FILE *f;
		char e[32], w[32];

		snprintf(path, sizeof(path), "%s/energy%d_label", dir, i);
		f = fopen(path, "r");
		if (!f)
			break;
		if (!fgets(label, sizeof(label), f))
			label[0] = 0;
		fclose(f);
		label[strcspn(label, "\n")] = 0;
		snprintf(e, sizeof(e), "energy%d_input", i);
		snprintf(w, sizeof(w), "power%d_input", i);
		printf("    %-7s energy %10.3f J   power %7.1f W\n", label, hwmon_number(e) / 1e6,
		       hwmon_number(w) / 1e6);
	}
}

static void tiles_and_power(void)
{
	static const char *params =
		"modules=8 nodes=2 tiles_per_node=4 tile_type=0,1,0,1,0,0,0,0 "
		"type_power_mw=100000,60000 node_standby_mw=25000,20000 "
		"tile_idle_delay_us=20000 tile_wake_us=2000";
	static const __u32 want[3] = { 3, 1, 2 };
	struct busy_job j[3];
	struct vg_tiles r;
	char dir[300];
	__u32 ctx[3];
	int fd;

	printf("\ntiles and power (module reloaded with %s):\n"
	       "  two nodes of four tiles, one module each; node 0 has tiles of 100 W and 60 W,\n"
	       "  node 1 four of 100 W; a tile idle for 20 ms sleeps (3 W), waking one takes 2 ms,\n"
	       "  a node whose tiles all sleep drops its standby (25 W, 20 W)\n", params);
	fd = reload(params);
	CHECK(!hwmon_dir(dir, sizeof(dir)), "no hwmon device");
	usleep(50 * 1000);
	printf("  after 50 ms with nothing to run every tile sleeps; hwmon (%s):\n", dir);
	print_hwmon();
	for (int i = 0; i < 3; i++) {
		ctx[i] = vgsched_ctx_create(fd, 8);
		CHECK(ctx[i], "CTX_CREATE failed");
		CHECK(!busy_job_init(fd, &j[i], ctx[i], 60, want[i], 1, 4, 1), "job setup failed");
		j[i].s.tiles = want[i];
		CHECK(!busy_submit(fd, &j[i]), "SUBMIT failed");
		for (int t = 0; t < 200 && job_tiles(fd, ctx[i], 1, &r); t++)
			usleep(2000);
	}
	printf("  jobs asking for 3, 1 and 2 tiles, in that order (placement log: node, tiles as a\n"
	       "  mask, and the nodes that could take it in the order tried, as node:idle tiles:W):\n");
	for (int i = 0; i < 3; i++) {
		CHECK(!job_tiles(fd, ctx[i], 1, &r), "no tile record");
		printf("    k=%u -> node %u tiles 0x%02x, woke %u (start +%.1f ms), order %s\n", r.k,
		       r.node, r.mask, r.woken, (r.start - r.t) / 1e6, r.order);
	}
	printf("  why: both nodes wholly idle, node 0 orders by 320 + 25 = 345 W, node 1 by\n"
	       "  400 + 20 = 420 W, so k=3 takes node 0's two 60 W tiles and one 100 W tile; k=1 then\n"
	       "  goes to the nearly full node 0 (1 idle tile before 4); k=2 finds node 0 full\n"
	       "  and wakes node 1\n");
	printf("  while they run (debugfs tiles):\n");
	print_debugfs_lines("tiles", "tile ", 8);
	for (int i = 0; i < 3; i++) {
		int status = 1;

		CHECK(!vgsched_wait(fd, ctx[i], j[i].s.seqno, 60 * VG_SECOND_NS, &status) &&
		      status == 0, "job failed");
		CHECK(busy_job_wrong(&j[i]) == -1, "wrong result");
		busy_job_fini(fd, &j[i]);
	}
	usleep(50 * 1000);
	printf("  all done, results right; 50 ms later everything sleeps again. hwmon:\n");
	print_hwmon();
	print_debugfs_lines("tiles", "device", 1);
	close(fd);
	reload_default();
}

/* Prints configfs attribute @path, indented. */
static void cfs_print(const char *path)
{
	char buf[256] = "", *line, *save = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	if (n < 0)
		return;
	buf[n] = 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		printf("      %s\n", line);
}

/* The model the owner publishes: 1024 words, word i = 1000 + i. */
#define MODEL_WORDS 1024

/* uid 1001, the owner, publishes a model in its own folder. */
static int owner_publishes_model(void *arg)
{
	struct drm_vgsched_shared_path path = vg_path("vision", DRM_VGSCHED_FOLDER_MEMBER, "1001",
						      "model");
	struct vg_buf model;
	int fd = vgsched_open_render_node(), ret;

	(void)arg;
	if (fd < 0 || vg_buf_create(fd, MODEL_WORDS * 4, &model))
		return 1;
	for (int i = 0; i < MODEL_WORDS; i++)
		((__u32 *)model.map)[i] = 1000 + i;
	ret = vg_publish(fd, &path, model.handle);
	printf("    uid 1001: SHARED_PUBLISH of a 4 KiB object as vision/member 1001/model: %s\n",
	       ret ? strerror(-ret) : "ok");
	vg_buf_destroy(fd, &model);
	close(fd);
	return ret ? 1 : 0;
}

/* uid 1002 uses the owner's model read-only. */
static int member_reads_model(void *arg)
{
	struct drm_vgsched_shared_path path = vg_path("vision", DRM_VGSCHED_FOLDER_MEMBER, "1001",
						      "model");
	const __u64 prog[] = {
		vg_instr(DRM_VGSCHED_OP_MOVI, 0, 0, 0, 0),
		vg_instr(DRM_VGSCHED_OP_LD, 1, 0, 0, 5),
		vg_instr(DRM_VGSCHED_OP_ST, 1, 0, 1, 0),
		vg_instr(DRM_VGSCHED_OP_END, 0, 0, 0, 0),
	};
	struct drm_vgsched_shared_open o;
	struct drm_vgsched_submit s;
	struct vg_buf code, out;
	int fd = vgsched_open_render_node(), ret, status = -1;
	__u32 bindings[2], ctx;
	const __u32 *words;
	void *map;

	(void)arg;
	if (fd < 0)
		return 1;
	ret = vg_shared_open(fd, &path, DRM_VGSCHED_SHARED_OPEN_WRITE, &o);
	printf("    uid 1002: SHARED_OPEN read-write: %s\n", ret ? strerror(-ret) : "ok?!");
	if (vg_shared_open(fd, &path, 0, &o))
		return 1;
	printf("    uid 1002: SHARED_OPEN read-only: handle %u, %llu bytes, writable %u\n", o.handle,
	       (unsigned long long)o.size, o.writable);
	words = vgsched_bo_mmap(fd, o.handle, o.size, PROT_READ, MAP_SHARED);
	if (words == MAP_FAILED)
		return 1;
	printf("    uid 1002: mmap(PROT_READ): words 0..3 = %u %u %u %u\n", words[0], words[1],
	       words[2], words[3]);
	map = vgsched_bo_mmap(fd, o.handle, o.size, PROT_READ | PROT_WRITE, MAP_SHARED);
	printf("    uid 1002: mmap(PROT_READ | PROT_WRITE): %s\n",
	       map == MAP_FAILED ? strerror(errno) : "mapped?!");
	ctx = vgsched_ctx_create(fd, 8);
	if (!ctx || vg_program(fd, prog, 4, &code) || vg_buf_create(fd, 4096, &out))
		return 1;
	bindings[0] = o.handle;
	bindings[1] = out.handle;
	s = vg_job(ctx, &code, 4, bindings, 2, 1, 1, 1);
	s.binding_access[0] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
	s.binding_access[1] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
	ret = vgsched_submit(fd, &s);
	printf("    uid 1002: SUBMIT binding the model writable: %s\n",
	       ret ? strerror(-ret) : "queued?!");
	s.binding_access[0] = DRM_VGSCHED_BINDING_READ;
	ret = vgsched_submit(fd, &s);
	if (!ret)
		ret = vgsched_wait(fd, ctx, s.seqno, 60 * VG_SECOND_NS, &status);
	printf("    uid 1002: SUBMIT binding it read-only (a job copying word 5 into its own\n"
	       "              buffer): %s, status %d, copied %u\n",
	       ret ? strerror(-ret) : "ok", status, ((__u32 *)out.map)[0]);
	close(fd);
	return ret || status || ((__u32 *)out.map)[0] != 1005;
}

/* The pipe ends of a member process the parent talks to. */
struct hold {
	int in, out;
};

/* uid 1002 creates until its quota stops it, then holds it all until told to go. */
static int member_holds(void *arg)
{
	struct hold *h = arg;
	int f = vgsched_open_render_node(), n = 0;
	char c;

	while (f >= 0 && n < 4 && vgsched_ctx_create(f, 8))
		n++;
	printf("    contexts created: %d, the next: %s\n", n, strerror(errno));
	n = 0;
	while (f >= 0 && n < 8 && vgsched_bo_create(f, 512 << 10))
		n++;
	printf("    512 KiB objects created: %d, the next: %s\n", n, strerror(errno));
	fflush(stdout);
	/* Held until the parent has shown the usage. */
	return write(h->out, "r", 1) == 1 && read(h->in, &c, 1) == 1 ? 0 : 1;
}

/* uid 1002 starts its environment (START) and holds it until told to go. */
static int member_starts(void *arg)
{
	struct hold *h = arg;
	struct drm_vgsched_start st = { 0 };
	int f = vgsched_open_render_node(), ret;
	char c;

	ret = f < 0 || ioctl(f, DRM_IOCTL_VGSCHED_START, &st) ? -errno : 0;
	printf("    uid 1002: START: %s\n", ret ? strerror(-ret) : "ok, its whole request reserved at once");
	fflush(stdout);
	return write(h->out, "r", 1) == 1 && read(h->in, &c, 1) == 1 && !ret ? 0 : 1;
}

/* A one-tile job in a new file as the caller's uid: 0 or -errno of SUBMIT. */
static int member_runs_a_job(void *arg)
{
	int f = vgsched_open_render_node(), ret = -EBADF;
	__u32 ctx = f < 0 ? 0 : vgsched_ctx_create(f, 8);
	struct busy_job j;

	(void)arg;
	if (ctx && !busy_job_init(f, &j, ctx, 1, 1, 1, 1, 1)) {
		ret = busy_submit(f, &j);
		if (!ret)
			ret = wait_ok(f, ctx, j.s.seqno) ? -EIO : 0;
		busy_job_fini(f, &j);
	}
	printf("    uid 1002: a job: %s\n", ret ? strerror(-ret) : "ran");
	fflush(stdout);
	return ret ? 1 : 0;
}

/* Writes @cmd to the subsystem's providers attribute and shows the result. */
static int provider(const char *cmd)
{
	int ret = vg_write_file("/sys/kernel/config/vgsched/providers", cmd);

	printf("    echo \"%.20s%s\" > providers: %s\n", cmd, strlen(cmd) > 20 ? "..." : "",
	       ret ? strerror(-ret) : "ok");
	return ret;
}

/*
 * Provider enrolment on the device's one tile: revoked, nothing runs; its
 * code made and entered for project @name, its member's job runs; then
 * entered for everyone again.
 */
static void providers(const char *name)
{
	const char *attr = "/sys/kernel/config/vgsched/providers";
	char buf[128], code[33], cmd[128];

	printf("  providers: the device's tiles join the pool by their codes (cat providers):\n");
	cfs_print(attr);
	CHECK(!provider("revoke 0"), "revoke");
	cfs_print(attr);
	CHECK(as_uid(1002, member_runs_a_job, NULL) == 1, "a job ran on a revoked tile");
	CHECK(!provider("code 0"), "code");
	CHECK(!vg_read_file(attr, buf, sizeof(buf)) && sscanf(buf, "0 out code %32s", code) == 1,
	      "no code shown");
	printf("    cat providers: 0 out code %.8s... (shown once)\n", code);
	snprintf(cmd, sizeof(cmd), "enrol 0 %s %s", code, name);
	CHECK(!provider(cmd), "enrol");
	cfs_print(attr);
	CHECK(!as_uid(1002, member_runs_a_job, NULL), "the enrolled tile took no job");
	snprintf(cmd, sizeof(cmd), "enrol 0 %s", code);
	CHECK(!provider(cmd), "enrol for everyone");
	cfs_print(attr);
}

/* Two members of project @p share a model read-only. */
static void shared_model(const char *p)
{
	char path[128];

	printf("  shared storage: the owner publishes a model in its member folder (read-write\n"
	       "  for it, read-only for the other members); uid 1002 uses it read-only:\n");
	CHECK(!as_uid(1001, owner_publishes_model, NULL), "owner could not publish");
	CHECK(!as_uid(1002, member_reads_model, NULL), "member could not use the model");
	printf("    cat shared (name, bytes, publisher):\n");
	snprintf(path, sizeof(path), "%s/shared", p);
	cfs_print(path);
	printf("    cat 1001/usage (the published bytes are the owner's):\n");
	snprintf(path, sizeof(path), "%s/1001/usage", p);
	cfs_print(path);
}

static void projects(void)
{
	const char *p = "/sys/kernel/config/vgsched/vision";
	char path[128], rnode[64], c;
	int ret, status, fd, ready, go;
	struct hold hold;
	pid_t pid;

	printf("\nprojects (configfs, /sys/kernel/config/vgsched): project 'vision' with a budget\n"
	       "of 8 contexts and 64 MiB of buffer objects, members uid 1001 (owner) and 1002:\n");
	CHECK(!mkdir(p, 0755), "mkdir %s: %s", p, strerror(errno));
	snprintf(path, sizeof(path), "%s/1001", p);
	CHECK(!mkdir(path, 0755), "mkdir member");
	snprintf(path, sizeof(path), "%s/1002", p);
	CHECK(!mkdir(path, 0755), "mkdir member");
#define SET(attr, value) do { \
		snprintf(path, sizeof(path), "%s/%s", p, attr); \
		ret = vg_write_file(path, value); \
		printf("    echo %-10s > %-22s %s\n", value, attr, ret ? strerror(-ret) : "ok"); \
	} while (0)
	SET("budget_contexts", "8");
	SET("budget_bo_bytes", "0x4000000");
	SET("1001/role", "owner");
	SET("1001/request_contexts", "6");
	SET("1002/request_contexts", "3");
	SET("1002/request_contexts", "2");
	SET("1002/request_bo_bytes", "1048576");
	SET("budget_contexts", "7");
	SET("budget_tiles", "2");
	SET("budget_shared_bytes", "1048576");
	SET("1002/request_tiles", "1");
	SET("1001/request_bo_bytes", "1048576");
	SET("1001/request_shared_bytes", "65536");
#undef SET
	printf("    cat requested:\n");
	snprintf(path, sizeof(path), "%s/requested", p);
	cfs_print(path);
	fd = vgsched_open_render_node_at(rnode, sizeof(rnode));
	CHECK(fd >= 0 && !chmod(rnode, 0666), "render node");
	close(fd);
	printf("  uid 1002 opens the render node: two contexts, then EDQUOT; 1 MiB of objects,\n"
	       "  then EDQUOT:\n");
	pid = fork_talking(1002, member_holds, &hold, &hold.in, &hold.out, &go, &ready);
	CHECK(pid >= 0, "fork");
	CHECK(read(ready, &c, 1) == 1, "member process failed");
	printf("  its usage while it holds them (cat 1002/usage):\n");
	snprintf(path, sizeof(path), "%s/1002/usage", p);
	cfs_print(path);
	CHECK(write(go, "q", 1) == 1, "pipe");
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
	      "member process failed");
	printf("  after it exited:\n");
	snprintf(path, sizeof(path), "%s/1002/usage", p);
	cfs_print(path);
	printf("  uid 1002 starts its environment: the pool holds its whole request for it\n"
	       "  (cat 1002/reserved):\n");
	pid = fork_talking(1002, member_starts, &hold, &hold.in, &hold.out, &go, &ready);
	CHECK(pid >= 0, "fork");
	CHECK(read(ready, &c, 1) == 1, "member process failed");
	snprintf(path, sizeof(path), "%s/1002/reserved", p);
	cfs_print(path);
	CHECK(write(go, "q", 1) == 1, "pipe");
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
	      "member process failed");
	providers("vision");
	shared_model(p);
	snprintf(path, sizeof(path), "%s/1001", p);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/1002", p);
	rmdir(path);
	CHECK(!rmdir(p), "rmdir project");
}

static void print_debugfs(void)
{
	char dir[64], path[128], line[512];
	FILE *f = NULL;

	if (!vgsched_debugfs_dir(dir, sizeof(dir))) {
		snprintf(path, sizeof(path), "%s/state", dir);
		f = fopen(path, "r");
	}
	if (!f) {
		printf("\n(no debugfs dump: /sys/kernel/debug not mounted)\n");
		return;
	}
	printf("\nthe device as %s shows it:\n", path);
	while (fgets(line, sizeof(line), f))
		printf("  %s", line);
	fclose(f);
}

int main(void)
{
	char name[32] = {}, desc[64] = {};
	struct drm_version v = {
		.name = name, .name_len = sizeof(name) - 1,
		.desc = desc, .desc_len = sizeof(desc) - 1,
	};
	struct drm_vgsched_gpu_info info;
	int fd, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	fd = vgsched_open_render_node();
	CHECK(fd >= 0, "no vgsched render node (is the module loaded?)");
	CHECK(!ioctl(fd, DRM_IOCTL_VERSION, &v), "DRM_IOCTL_VERSION failed");
	ret = vgsched_query_gpu_info(fd, &info);
	CHECK(!ret, "DEV_QUERY failed: %s", strerror(-ret));

	printf("driver           %s %d.%d.%d (%s)\n", name, v.version_major,
	       v.version_minor, v.version_patchlevel, desc);
	printf("uAPI             %u.%u\n", info.uapi_major, info.uapi_minor);
	printf("execution        %u modules x %u units = %u units\n", info.modules,
	       info.units_per_module, info.modules * info.units_per_module);
	printf("context slots    %u (time slice t0 = %u us)\n", info.hw_slots,
	       info.time_slice_us);
	printf("per unit         %u vector / %u scalar register blocks, %u wave slots\n",
	       info.vgpr_blocks, info.sgpr_blocks, info.wave_slots);
	printf("per module       %u shared-memory blocks\n", info.shared_mem_blocks);
	printf("modeled clock    %u kHz; cycles per instruction class: move %u alu %u load %u "
	       "store %u matrix %u compare %u jump %u\n", info.clock_khz,
	       info.cycle_costs[DRM_VGSCHED_CLASS_MOVE], info.cycle_costs[DRM_VGSCHED_CLASS_ALU],
	       info.cycle_costs[DRM_VGSCHED_CLASS_LOAD], info.cycle_costs[DRM_VGSCHED_CLASS_STORE],
	       info.cycle_costs[DRM_VGSCHED_CLASS_MATRIX],
	       info.cycle_costs[DRM_VGSCHED_CLASS_COMPARE], info.cycle_costs[DRM_VGSCHED_CLASS_JUMP]);

	__u32 ctx_a = vgsched_ctx_create(fd, 8), ctx_b = vgsched_ctx_create(fd, 10);
	__u32 ctx_c = vgsched_ctx_create(fd, 12);

	CHECK(ctx_a && ctx_b && ctx_c, "CTX_CREATE failed");
	vector_add(fd, ctx_a);
	matmul_gated(fd, ctx_a, ctx_b);
	endless_loop(fd, ctx_c, ctx_b, &info);
	dispatcher(fd);
	slots(fd, &info);
	printf("\ncontexts:\n");
	print_context(fd, ctx_a);
	print_context(fd, ctx_b);
	print_context(fd, ctx_c);
	print_debugfs();
	close(fd);
	slots_in_turn();
	pipelined_switch();
	tiles_and_power();
	projects();
	return 0;
}
