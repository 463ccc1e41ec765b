// SPDX-License-Identifier: GPL-2.0
/*
 * What one open file can make the kernel hold, seen by the memory cgroup.
 *
 * Everything a client makes vgsched allocate is charged to its memory
 * cgroup (GFP_KERNEL_ACCOUNT), and a queued job costs a few KiB whatever
 * its grid: its threads' state belongs to its context's wave store, sized
 * by what the context can have on the device (design.rst, "Prepare").
 * A child process in a cgroup of its own, with a memory.max that the old
 * cost (2 MiB of thread state per queued job) would pass a hundred times
 * over, fills one file with contexts and every context with jobs until
 * the driver refuses (EBUSY for the 65th job of a context, ENOSPC for the
 * 65th context of a file). The jobs wait for an in-fence of vgem's that
 * nobody signals (vgem signals it itself after 10 s), so they stay queued. It must be refused by those limits, not killed
 * by the cgroup, stay within the documented bound, and give everything
 * back when the file closes.
 *
 * A job's scratch area (scratch_bytes) is device memory no program
 * addresses: a number of chunks reserved when the job is prepared, so a
 * queued job with 60 MiB of it costs what one without does (it cost a
 * page table of 4 bytes a chunk, about 64 KiB, before). Jobs with such an
 * area, let go, still count right, one at a time in device memory, and
 * give all of it back.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <drm/vgem_drm.h>

#include "kselftest_harness.h"
#include "vgsched_programs.h"

#define CG_ROOT "/sys/fs/cgroup"
#define CG "/sys/fs/cgroup/vgsched_memcg_test"
/* The cgroup's limit: room for the documented bound and the process itself. */
#define CG_MAX (48ll << 20)
/*
 * The documented bound for this shape (design.rst): per context its
 * record, its job list and a one-wave store (under 16 KiB together); per
 * queued job under 8 KiB (about 4 KiB measured, engine.job_kernel_bytes),
 * for 64 contexts of 64 jobs: 64 x 16 KiB + 4096 x 8 KiB = 33 MiB.
 */
#define BOUND ((64ll << 14) + (4096ll << 13))

static long long cg_read(const char *file, const char *key)
{
	char path[256], line[256];
	long long v = -1, x;
	FILE *f;

	snprintf(path, sizeof(path), CG "/%s", file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!key && sscanf(line, "%lld", &x) == 1)
			v = x;
		else if (key && !strncmp(line, key, strlen(key)) &&
			 sscanf(line + strlen(key), " %lld", &x) == 1)
			v = x;
	}
	fclose(f);
	return v;
}

/*
 * A sync_file of a new vgem fence nobody signals (vgem does after 10 s),
 * its vgem number in *@id (for DRM_IOCTL_VGEM_FENCE_SIGNAL); -1 on error.
 */
static int unsignalled_fence_id(int vgem, __u32 *id)
{
	struct drm_vgem_fence_attach attach = { .flags = VGEM_FENCE_WRITE };
	struct dma_buf_export_sync_file sync = { .flags = DMA_BUF_SYNC_WRITE };
	int buf, ret;

	attach.handle = vg_dumb_create(vgem);
	if (!attach.handle || ioctl(vgem, DRM_IOCTL_VGEM_FENCE_ATTACH, &attach))
		return -1;
	*id = attach.out_fence;
	buf = vg_prime_export(vgem, attach.handle);
	if (buf < 0)
		return -1;
	ret = ioctl(buf, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &sync);
	close(buf);
	return ret ? -1 : sync.fd;
}

static int unsignalled_fence(int vgem)
{
	__u32 id;

	return unsignalled_fence_id(vgem, &id);
}

/* The child: fills one file, reports through @report, waits to be told to close. */
static void fill_one_file(int report, int go)
{
	struct vg_buf prog, out;
	__u64 words[1] = { vg_instr(DRM_VGSCHED_OP_END, 0, 0, 0, 0) }, counts[3] = { 0, 0, 0 };
	int fd = vgsched_open_render_node(), vgem = vg_open_card_of_driver("vgem");
	char c;

	if (fd < 0 || vgem < 0 || vg_program(fd, words, 1, &prog) || vg_buf_create(fd, 4096, &out))
		_exit(2);
	for (;;) {
		__u32 ctx = vgsched_ctx_create(fd, 8), binding = out.handle;
		/* One fence per context: each has its 10 s ahead while it fills. */
		int fence = unsignalled_fence(vgem);

		if (fence < 0)
			_exit(7);
		if (!ctx) {
			counts[2] = errno;
			close(fence);
			break;
		}
		counts[0]++;
		for (int n = 0;; n++) {
			struct drm_vgsched_submit s = vg_job(ctx, &prog, 1, &binding, 1, 1, 1, 64);

			s.binding_access[0] = DRM_VGSCHED_BINDING_READ;
			s.flags |= DRM_VGSCHED_SUBMIT_IN_FENCE;
			s.in_fence_fd = fence;
			if (vgsched_submit(fd, &s)) {
				if (errno != EBUSY)
					counts[2] = errno;
				break;
			}
			counts[1]++;
			/* The fence signalled early: the context never fills. */
			if (n > 2 * DRM_VGSCHED_MAX_JOBS_IN_FLIGHT)
				_exit(8);
		}
		close(fence);
		if (counts[2])
			break;
	}
	if (write(report, counts, sizeof(counts)) != sizeof(counts))
		_exit(3);
	if (read(go, &c, 1) != 1)
		_exit(4);
	vg_buf_destroy(fd, &prog);
	vg_buf_destroy(fd, &out);
	close(fd);
	_exit(0);
}

TEST(one_file_stays_within_its_bound_and_gives_everything_back)
{
	int report[2], go[2], status;
	long long before, peak, after;
	__u64 counts[3];
	char pid[32];
	pid_t child;

	/* cgroup2, with the memory controller for a child group. */
	if (access(CG_ROOT "/cgroup.controllers", F_OK))
		ASSERT_EQ(0, mount("none", CG_ROOT, "cgroup2", 0, NULL));
	ASSERT_EQ(0, vg_write_file(CG_ROOT "/cgroup.subtree_control", "+memory"));
	rmdir(CG);
	ASSERT_EQ(0, mkdir(CG, 0755));
	snprintf(pid, sizeof(pid), "%lld", CG_MAX);
	ASSERT_EQ(0, vg_write_file(CG "/memory.max", pid));

	ASSERT_EQ(0, pipe(report));
	ASSERT_EQ(0, pipe(go));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		char self[32];
		char c;

		close(report[0]);
		close(go[1]);
		snprintf(self, sizeof(self), "%d", getpid());
		if (vg_write_file(CG "/cgroup.procs", self))
			_exit(5);
		/* Wait until the parent has read the group's baseline. */
		if (read(go[0], &c, 1) != 1)
			_exit(6);
		fill_one_file(report[1], go[0]);
	}
	close(report[1]);
	close(go[0]);
	usleep(100000);
	before = cg_read("memory.current", NULL);
	ASSERT_LE(0, before);
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(sizeof(counts), read(report[0], counts, sizeof(counts)));
	peak = cg_read("memory.peak", NULL);
	TH_LOG("%llu contexts, %llu jobs queued until refused (errno %llu); memory.current %lld KiB before, peak %lld KiB",
	       counts[0], counts[1], counts[2], before >> 10, peak >> 10);
	/* Refused by the per-file limits, not by the cgroup. */
	EXPECT_EQ(DRM_VGSCHED_MAX_CONTEXTS_PER_FILE, counts[0]);
	EXPECT_EQ(ENOSPC, counts[2]);
	EXPECT_LE(peak - before, BOUND);
	ASSERT_EQ(1, write(go[1], "c", 1));
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status)) TH_LOG("the child was killed (signal %d)", WTERMSIG(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, cg_read("memory.events", "oom_kill"));
	/* Closing the file cancels the jobs; the clean-up gives their memory back. */
	for (int i = 0; i < 50; i++) {
		after = cg_read("memory.current", NULL);
		if (after <= before + (1 << 20))
			break;
		usleep(100000);
	}
	TH_LOG("memory.current %lld KiB after the file closed", after >> 10);
	EXPECT_LE(after, before + (1 << 20));
	close(report[0]);
	close(go[1]);
	rmdir(CG);
}

/* Contexts of the scratch test, and jobs each (the in-flight limit). */
#define SCRATCH_CTXS 2
#define SCRATCH_JOBS DRM_VGSCHED_MAX_JOBS_IN_FLIGHT
#define SCRATCH_BYTES (60ull << 20)
/* What a queued job may cost at most, scratch area or not. */
#define SCRATCH_JOB_BOUND (16ll << 10)
#define SCRATCH_THREADS 64

TEST(a_queued_jobs_scratch_area_costs_no_kernel_memory)
{
	int fd = vgsched_open_render_node(), vgem = vg_open_card_of_driver("vgem");
	int fences[SCRATCH_CTXS];
	__u32 ctx[SCRATCH_CTXS], fence_id[SCRATCH_CTXS], binding[SCRATCH_CTXS];
	__u64 last[SCRATCH_CTXS], words[16];
	struct vg_buf prog, out[SCRATCH_CTXS];
	unsigned int len = vg_prog_slow_count(words, 1);
	long long before = -1, after, per_job;
	char pid[32];

	ASSERT_LE(0, fd);
	ASSERT_LE(0, vgem);
	ASSERT_EQ(0, vg_program(fd, words, len, &prog));
	if (access(CG_ROOT "/cgroup.controllers", F_OK))
		ASSERT_EQ(0, mount("none", CG_ROOT, "cgroup2", 0, NULL));
	ASSERT_EQ(0, vg_write_file(CG_ROOT "/cgroup.subtree_control", "+memory"));
	rmdir(CG);
	ASSERT_EQ(0, mkdir(CG, 0755));
	snprintf(pid, sizeof(pid), "%d", getpid());
	ASSERT_EQ(0, vg_write_file(CG "/cgroup.procs", pid));

	/*
	 * Per context: its out buffer (every job adds 1 to each of its words),
	 * a vgem fence its jobs wait for, and its first job, which sizes the
	 * context's wave store: all before the baseline.
	 */
	for (int c = 0; c < SCRATCH_CTXS; c++) {
		ctx[c] = vgsched_ctx_create(fd, 8);
		ASSERT_NE(0, ctx[c]);
		ASSERT_EQ(0, vg_buf_create(fd, SCRATCH_THREADS * 4, &out[c]));
		memset(out[c].map, 0, SCRATCH_THREADS * 4);
		binding[c] = out[c].handle;
		fences[c] = unsignalled_fence_id(vgem, &fence_id[c]);
		ASSERT_LE(0, fences[c]);
	}
	for (int j = 0; j < SCRATCH_JOBS; j++) {
		for (int c = 0; c < SCRATCH_CTXS; c++) {
			struct drm_vgsched_submit s = vg_job(ctx[c], &prog, len, &binding[c], 1, 1, 1,
							     SCRATCH_THREADS);

			s.binding_access[0] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
			s.flags |= DRM_VGSCHED_SUBMIT_IN_FENCE;
			s.in_fence_fd = fences[c];
			s.scratch_bytes = SCRATCH_BYTES;
			ASSERT_EQ(0, vgsched_submit(fd, &s)) TH_LOG("job %d of context %d", j, c);
			last[c] = s.seqno;
		}
		if (!j) {
			before = cg_read("memory.current", NULL);
			ASSERT_LE(0, before);
		}
	}
	after = cg_read("memory.current", NULL);
	per_job = (after - before) / (SCRATCH_CTXS * (SCRATCH_JOBS - 1));
	TH_LOG("%d jobs with %llu MiB of scratch each queued: %lld bytes of memory.current a job",
	       SCRATCH_CTXS * (SCRATCH_JOBS - 1), SCRATCH_BYTES >> 20, per_job);
	/* Measured while queued: vgem has not signalled on its own. */
	for (int c = 0; c < SCRATCH_CTXS; c++) {
		ASSERT_TRUE(still_running(fd, ctx[c], 1)) TH_LOG("context %d's jobs ran early", c);
	}
	EXPECT_LE(per_job, SCRATCH_JOB_BOUND);

	/* Let go: each job needs most of device memory, so they run one by one. */
	for (int c = 0; c < SCRATCH_CTXS; c++) {
		struct drm_vgem_fence_signal sig = { .fence = fence_id[c] };

		ASSERT_EQ(0, ioctl(vgem, DRM_IOCTL_VGEM_FENCE_SIGNAL, &sig));
		close(fences[c]);
	}
	for (int c = 0; c < SCRATCH_CTXS; c++) {
		ASSERT_EQ(0, wait_ok(fd, ctx[c], last[c])) TH_LOG("context %d", c);
		for (int i = 0; i < SCRATCH_THREADS; i++) {
			ASSERT_EQ(SCRATCH_JOBS, ((uint32_t *)out[c].map)[i])
				TH_LOG("context %d, word %d", c, i);
		}
		vg_buf_destroy(fd, &out[c]);
		vgsched_ctx_destroy(fd, ctx[c]);
	}
	vg_buf_destroy(fd, &prog);
	/* Every scratch area's chunks are back, and the buffers' copies gone. */
	EXPECT_TRUE(vram_all_free()) TH_LOG("free %lld of %lld", vram_number("free"),
					      vram_number("size"));
	close(fd);
	close(vgem);
	ASSERT_EQ(0, vg_write_file(CG_ROOT "/cgroup.procs", pid));
	rmdir(CG);
}

TEST_HARNESS_MAIN
