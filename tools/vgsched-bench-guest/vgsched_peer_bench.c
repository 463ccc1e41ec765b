// SPDX-License-Identifier: GPL-2.0
/*
 * vgsched-peer-bench: the same three workloads through the kernel's GPU
 * scheduler (drm_sched, on the mock ring of tools/drm-sched-peer) and
 * through vgsched, in the guest (Documentation/benchmarks.rst, "Side by
 * side with drm_sched").
 *
 *   vgsched-peer-bench drm_sched NAME    through /dev/vgsched_peer
 *   vgsched-peer-bench vgsched NAME      through vgsched's render node
 *   vgsched-peer-bench vgsched_mock NAME through vgsched's render node, the
 *                                        module loaded over the mock device
 *                                        (backend=1): the first workload
 *                                        only, the scheduler alone
 *   vgsched-peer-bench drm_sched_resv NAME
 *                                        through /dev/vgsched_peer, each job
 *                                        writing a buffer of its context as
 *                                        vgsched's do: the first workload's
 *                                        SUBMIT and submit to start only
 *
 * A third argument, "submit", runs the first workload's 2 000 submissions
 * only (the guest's profile mode traces them).
 *
 * NAME labels the keys (the drm_sched policy or vgsched's slot mode the
 * module was loaded with). A job is "run for D µs": on the mock ring a
 * timer of D µs, on vgsched a one-thread wave looping D modeled µs (1 MHz).
 *
 *   submit     2 000 jobs of no duration on one context, 32 in flight at
 *              most: the mean SUBMIT ioctl, µs, the submitting thread's
 *              CPU time in it (CLOCK_THREAD_CPUTIME_ID), µs, the CPU time
 *              every other thread of the guest (the schedulers' work
 *              items among them) spent meanwhile, per job, µs, and the
 *              scheduler's own part of the ioctl (drm_sched_job_init() to
 *              drm_sched_entity_push_job(); vgsched's Engine::submit(),
 *              from the debugfs state file), µs; then 1 000 such jobs one
 *              at a time on an idle device: the mean time from SUBMIT to
 *              the job's start on the device, µs
 *   jainN      N (2, 8, 64) contexts of one priority each keep two 2 ms
 *              jobs in flight for 1 s (after 200 ms): Jain's index of
 *              their device time in that second
 *   hiprio     four normal contexts keep two 10 ms jobs each in flight; a
 *              high-priority context submits a 1 ms job 10 times, 30-40 ms
 *              apart: the mean wait from its SUBMIT to its job's start, ms
 *              (drm_sched: the ring's start; vgsched: its placement)
 *
 * Prints "KEY = X" for peer.submit_ioctl_us.NAME, peer.submit_cpu_us.NAME,
 * peer.sched_cpu_us_per_job.NAME, peer.sched_submit_us.NAME,
 * peer.submit_overhead_us.NAME (submit to start), their medians over the
 * calls (peer.submit_ioctl_us.NAME.median, peer.submit_cpu_us.NAME.median,
 * peer.submit_overhead_us.NAME.median), peer.jainN.NAME and
 * peer.hiprio_wait_ms.NAME (and for vgsched peer.hiprio_upload_start_ms.NAME,
 * peer.hiprio_upload_end_ms.NAME, peer.hiprio_load_ms.NAME,
 * peer.hiprio_phase1_start_ms.NAME and peer.hiprio_phase1_end_ms.NAME, with
 * the last round's timeline); drm_sched_resv prints all but the scheduler's
 * part, vgsched_mock all of the first workload's.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "vgsched_programs.h"
#include "../drm-sched-peer/vgsched_peer.h"

#define DIE(...) do { \
		fprintf(stderr, "vgsched-peer-bench: " __VA_ARGS__); \
		fprintf(stderr, "\n"); \
		exit(1); \
	} while (0)

#define CONTEXTS 64
#define HIGH_ROUNDS 10

static int use_peer, use_bo;
static int fd;

/*
 * vgsched: one program per job length, and one buffer per context for its
 * jobs to write (a buffer shared by contexts would order their jobs by
 * implicit synchronisation, which the mock ring does not have).
 */
static struct {
	__u64 us;
	struct vg_buf prog;
	unsigned int len;
} progs[8];
static struct vg_buf out[DRM_VGSCHED_MAX_CONTEXTS_PER_FILE + 1];
/* drm_sched_resv: the mock's buffer of each context, the same way. */
static __u32 peer_bo[DRM_VGSCHED_MAX_CONTEXTS_PER_FILE + 1];

static __u32 ctx_create(int high)
{
	if (use_peer) {
		struct vgsched_peer_ctx_create c = { .priority = high ? 0 : 1 };

		if (ioctl(fd, VGSCHED_PEER_CTX_CREATE, &c))
			DIE("CTX_CREATE: %m");
		return c.ctx_id;
	}
	{
		__u32 id = vgsched_ctx_create(fd, high ? 0 : 8);

		if (!id)
			DIE("CTX_CREATE: %m");
		return id;
	}
}

/* vgsched holds 64 contexts per file; the mock ring frees them on close. */
static void ctx_destroy(__u32 ctx)
{
	if (!use_peer && vgsched_ctx_destroy(fd, ctx))
		DIE("CTX_DESTROY failed");
}

static const struct vg_buf *program(__u64 us, unsigned int *len)
{
	__u64 words[16];
	int i;

	for (i = 0; i < 8 && progs[i].len; i++)
		if (progs[i].us == us)
			break;
	if (i == 8)
		DIE("too many job lengths");
	if (!progs[i].len) {
		progs[i].us = us;
		progs[i].len = vg_prog_slow_store(words, us / VG_SLOW_LOOP_CYCLES + 1);
		if (vg_program(fd, words, progs[i].len, &progs[i].prog))
			DIE("program failed");
	}
	*len = progs[i].len;
	return &progs[i].prog;
}

/* Submits a job of @us on @ctx; returns its sequence number. */
static __u64 submit(__u32 ctx, __u64 us)
{
	if (use_peer) {
		struct vgsched_peer_submit s = { .ctx_id = ctx, .duration_us = us };

		if (use_bo) {
			struct vgsched_peer_bo_create b = { 0 };

			if (ctx >= DRM_VGSCHED_MAX_CONTEXTS_PER_FILE + 1)
				DIE("context id %u", ctx);
			if (!peer_bo[ctx] && ioctl(fd, VGSCHED_PEER_BO_CREATE, &b))
				DIE("BO_CREATE: %m");
			if (!peer_bo[ctx])
				peer_bo[ctx] = b.handle;
			s.bo_handle = peer_bo[ctx];
		}
		if (ioctl(fd, VGSCHED_PEER_SUBMIT, &s))
			DIE("SUBMIT: %m");
		return s.seqno;
	} else {
		unsigned int len;
		const struct vg_buf *prog = program(us, &len);
		struct drm_vgsched_submit s;
		__u32 binding;

		if (ctx >= DRM_VGSCHED_MAX_CONTEXTS_PER_FILE + 1)
			DIE("context id %u", ctx);
		if (!out[ctx].handle && vg_buf_create(fd, 4096, &out[ctx]))
			DIE("buffer failed");
		binding = out[ctx].handle;
		s = vg_job(ctx, prog, len, &binding, 1, 1, 1, 1);

		s.vgpr_blocks = 1;
		s.sgpr_blocks = 1;
		s.shared_mem_blocks = 0;
		int ret = vgsched_submit(fd, &s);

		if (ret)
			DIE("SUBMIT: %d", ret);
		return s.seqno;
	}
}

/* Waits up to @timeout_ns for job @seqno of @ctx; whether it finished. */
static int wait_job(__u32 ctx, __u64 seqno, __u64 timeout_ns)
{
	int ret;

	if (use_peer) {
		struct vgsched_peer_wait w = { .ctx_id = ctx, .seqno = seqno, .timeout_ns = timeout_ns };

		ret = ioctl(fd, VGSCHED_PEER_WAIT, &w) ? -errno : 0;
	} else {
		ret = vgsched_wait(fd, ctx, seqno, timeout_ns, NULL);
	}
	if (ret && ret != -ETIMEDOUT)
		DIE("WAIT: %d", ret);
	return ret == 0;
}

static __u64 runtime_ns(__u32 ctx)
{
	if (use_peer) {
		struct vgsched_peer_query q = { .ctx_id = ctx };

		if (ioctl(fd, VGSCHED_PEER_QUERY, &q))
			DIE("QUERY: %m");
		return q.runtime_ns;
	} else {
		struct drm_vgsched_ctx_query q;

		if (vgsched_ctx_query(fd, ctx, &q))
			DIE("CTX_QUERY failed");
		return q.runtime_ns;
	}
}

/* When @ctx's job submitted at @submitted started on the device. */
static __u64 started_ns(__u32 ctx, __u64 submitted)
{
	if (use_peer) {
		struct vgsched_peer_query q = { .ctx_id = ctx };

		if (ioctl(fd, VGSCHED_PEER_QUERY, &q))
			DIE("QUERY: %m");
		return q.last_start_ns;
	} else {
		static struct vg_placement log[256];
		int n = vgsched_placements(vgsched_client_id(fd, ctx), ctx, log, 256);

		for (int i = 0; i < n; i++)
			if (log[i].time_ns >= submitted)
				return log[i].time_ns;
		DIE("no placement of the high job");
	}
}

/* The calling thread's CPU time, ns. */
static __u64 thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		DIE("CLOCK_THREAD_CPUTIME_ID: %m");
	return ts.tv_sec * VG_SECOND_NS + ts.tv_nsec;
}

/*
 * The CPU time every thread of the guest but this process's has had, ns:
 * the sum of their se.sum_exec_runtime (/proc/PID/task/TID/sched, ms with
 * six decimals). Kernel threads (the work queues' workers among them) are
 * threads here; interrupts are counted in the thread they interrupt, and
 * not at all when they interrupt the idle task.
 */
static __u64 others_cpu_ns(void)
{
	DIR *procs = opendir("/proc");
	struct dirent *p;
	__u64 total = 0;
	pid_t self = getpid();

	if (!procs)
		DIE("/proc: %m");
	while ((p = readdir(procs))) {
		char path[300];
		struct dirent *t;
		DIR *tasks;

		if (p->d_name[0] < '0' || p->d_name[0] > '9' || atoi(p->d_name) == self)
			continue;
		snprintf(path, sizeof(path), "/proc/%s/task", p->d_name);
		tasks = opendir(path);
		if (!tasks)
			continue;	/* it has gone */
		while ((t = readdir(tasks))) {
			char file[600], line[160];
			unsigned long long ms, frac;
			FILE *f;

			if (t->d_name[0] < '0' || t->d_name[0] > '9')
				continue;
			snprintf(file, sizeof(file), "/proc/%s/task/%s/sched", p->d_name, t->d_name);
			f = fopen(file, "r");
			if (!f)
				continue;
			while (fgets(line, sizeof(line), f)) {
				if (strncmp(line, "se.sum_exec_runtime", 19))
					continue;
				if (sscanf(strchr(line, ':') + 1, " %llu.%6llu", &ms, &frac) == 2)
					total += ms * 1000000 + frac;
				break;
			}
			fclose(f);
		}
		closedir(tasks);
	}
	closedir(procs);
	return total;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of @n values, which it sorts. */
static double median(double *v, int n)
{
	qsort(v, n, sizeof(v[0]), by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * 2 000 jobs of no duration on one context, at most 32 in flight: the mean
 * SUBMIT ioctl, µs; the submitting thread's mean CPU time in it, µs; the
 * CPU time of the guest's other threads meanwhile, per job, µs; and the
 * medians of the first two over the calls (a few calls stalled by the
 * host move a mean of µs-scale calls, not the median).
 */
static void submit_ioctl_us(double *wall, double *cpu, double *others, double *wall_median,
			    double *cpu_median)
{
	static double walls[2000], cpus[2000];
	__u32 ctx = ctx_create(0);
	__u64 total = 0, total_cpu = 0, seqno = 0, others0;
	int n = 2000;

	others0 = others_cpu_ns();
	for (int i = 0; i < n; i++) {
		__u64 c0 = thread_cpu_ns(), t0 = vg_now_ns(), t1, c1;

		seqno = submit(ctx, 0);
		t1 = vg_now_ns();
		c1 = thread_cpu_ns();
		walls[i] = (t1 - t0) / 1000.0;
		cpus[i] = (c1 - c0) / 1000.0;
		total += t1 - t0;
		total_cpu += c1 - c0;
		/* At most 32 in flight (vgsched refuses more than 64). */
		if (i % 32 == 31)
			wait_job(ctx, seqno, 60 * VG_SECOND_NS);
	}
	wait_job(ctx, seqno, 60 * VG_SECOND_NS);
	*others = (others_cpu_ns() - others0) / 1000.0 / n;
	ctx_destroy(ctx);
	*wall = total / 1000.0 / n;
	*cpu = total_cpu / 1000.0 / n;
	*wall_median = median(walls, n);
	*cpu_median = median(cpus, n);
}

/*
 * 1 000 jobs of no duration on one context of an idle device, one at a
 * time: the mean time from SUBMIT to the job's start on the device, µs,
 * and (@median_us) its median.
 * vgsched's starts come from the placement log, read after every 100 jobs
 * (it keeps the last 512 lines): a job is one placement, in order.
 */
static double submit_to_start_us(double *median_us)
{
	static __u64 submitted[100];
	static struct vg_placement log[512];
	static double each[1000];
	__u32 ctx = ctx_create(0);
	__u64 total = 0;

	for (int batch = 0; batch < 10; batch++) {
		for (int i = 0; i < 100; i++) {
			__u64 seqno;

			submitted[i] = vg_now_ns();
			seqno = submit(ctx, 0);
			wait_job(ctx, seqno, 60 * VG_SECOND_NS);
			if (use_peer) {
				__u64 d = started_ns(ctx, submitted[i]) - submitted[i];

				each[batch * 100 + i] = d / 1000.0;
				total += d;
			}
		}
		if (!use_peer) {
			int n = vgsched_placements(vgsched_client_id(fd, ctx), ctx, log, 512);

			if (n < 100)
				DIE("placement log: %d of 100 jobs", n);
			for (int i = 0; i < 100; i++) {
				__u64 d = log[n - 100 + i].time_ns - submitted[i];

				each[batch * 100 + i] = d / 1000.0;
				total += d;
			}
		}
	}
	ctx_destroy(ctx);
	*median_us = median(each, 1000);
	return total / 1000.0 / 1000;
}

/* The scheduler's own mean time to queue one job so far, µs. */
static double sched_submit_us(void)
{
	if (use_peer) {
		struct vgsched_peer_query q = { .ctx_id = 0 };
		__u32 ctx = ctx_create(0);

		q.ctx_id = ctx;
		if (ioctl(fd, VGSCHED_PEER_QUERY, &q) || !q.sched_submits)
			DIE("QUERY: %m");
		return q.sched_submit_ns / 1000.0 / q.sched_submits;
	}
	return vgsched_state_number("engine_submit_ns: ") / 1000.0;
}

/* Keeps two jobs of @us in flight on each of @n contexts until @until. */
static void keep_busy(const __u32 *ctx, __u64 (*inflight)[2], int n, __u64 us, __u64 until)
{
	while (vg_now_ns() < until) {
		for (int i = 0; i < n; i++) {
			if (!inflight[i][0]) {
				inflight[i][0] = submit(ctx[i], us);
				inflight[i][1] = submit(ctx[i], us);
				continue;
			}
			/* The older one finished: queue another behind the newer. */
			if (!wait_job(ctx[i], inflight[i][0], 0))
				continue;
			inflight[i][0] = inflight[i][1];
			inflight[i][1] = submit(ctx[i], us);
		}
		usleep(500);
	}
}

static double jain(int n)
{
	static __u32 ctx[CONTEXTS];
	static __u64 inflight[CONTEXTS][2], before[CONTEXTS];
	double sum = 0, squares = 0;

	memset(inflight, 0, sizeof(inflight));
	for (int i = 0; i < n; i++)
		ctx[i] = ctx_create(0);
	keep_busy(ctx, inflight, n, 2000, vg_now_ns() + 200000000ull);
	for (int i = 0; i < n; i++)
		before[i] = runtime_ns(ctx[i]);
	keep_busy(ctx, inflight, n, 2000, vg_now_ns() + VG_SECOND_NS);
	for (int i = 0; i < n; i++) {
		double x = runtime_ns(ctx[i]) - before[i];

		sum += x;
		squares += x * x;
	}
	for (int i = 0; i < n; i++)
		for (int k = 0; k < 2; k++)
			if (inflight[i][k])
				wait_job(ctx[i], inflight[i][k], 60 * VG_SECOND_NS);
	for (int i = 0; i < n; i++)
		ctx_destroy(ctx[i]);
	return squares > 0 ? sum * sum / (n * squares) : 0;
}

/*
 * Where vgsched's high-priority job waited, summed over the rounds (ns
 * from its SUBMIT): its device memory allocation and upload began and
 * ended (CTX_QUERY's stage stamps; drm_sched has no such stages).
 */
static __u64 hiprio_phase2_start, hiprio_phase2_end, hiprio_staged;

/*
 * The rest of the split, summed over the rounds that have every mark (ns
 * from the SUBMIT): the engine step that gave the high context its slot
 * (the placement log's load), and the memory work item's start and end of
 * its phase 1 (the stage log), before its phase 2 above.
 */
static __u64 hiprio_load, hiprio_phase1_start, hiprio_phase1_end, hiprio_marked;

/* The time of the first slot load of @ctx of @client at or after @after; 0 if none. */
static __u64 load_at(__u64 client, __u32 ctx, __u64 after)
{
	char *buf = NULL, *line, *save = NULL;
	__u64 at = 0;

	if (vgsched_placement_log(&buf))
		DIE("cannot read the placement log");
	for (line = strtok_r(buf, "\n", &save); line && !at; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long when, c;
		unsigned int x;

		if (sscanf(line, "#%*u t=%llu load client=%llu ctx=%u", &when, &c, &x) == 3 &&
		    c == client && x == ctx && when >= after)
			at = when;
	}
	free(buf);
	return at;
}

/*
 * The last round, informational: the stage and slot records of every
 * context of this file from the high job's SUBMIT at @t to its placement
 * at @at, as lines "+US ctx N job J EVENT".
 */
static void hiprio_timeline(__u32 high, __u64 t, __u64 at)
{
	static struct vg_stage log[512];
	__u64 client = vgsched_client_id(fd, high);
	int n = vgsched_stages(log, 512);

	printf("  last round, from the high job's SUBMIT to its placement (+%.0f us), high ctx %u:\n",
	       (at - t) / 1000.0, high);
	for (int i = 0; i < n; i++)
		if (log[i].client == client && log[i].t >= t && log[i].t <= at)
			printf("  +%8.0f us  ctx %u job %llu %s\n", (log[i].t - t) / 1000.0,
			       log[i].ctx, log[i].job, log[i].event);
	vg_print_slot_records(t, at);
}

/* Adds round @t's slot load and phase 1 of the high context @high to the sums. */
static void hiprio_marks(__u32 high, __u64 t)
{
	__u64 client = vgsched_client_id(fd, high);
	__u64 load = load_at(client, high, t);
	__u64 p1s = stage_at(client, high, 0, "phase1_start", t);
	__u64 p1e = stage_at(client, high, 0, "phase1_end", t);

	if (!load || !p1s || p1e < p1s)
		return;
	hiprio_load += load - t;
	hiprio_phase1_start += p1s - t;
	hiprio_phase1_end += p1e - t;
	hiprio_marked++;
}

static double hiprio_wait_ms(void)
{
	__u32 low[4], high = ctx_create(1);
	__u64 inflight[4][2] = { 0 }, waited = 0;

	for (int i = 0; i < 4; i++)
		low[i] = ctx_create(0);
	keep_busy(low, inflight, 4, 10000, vg_now_ns() + 100000000ull);
	for (int r = 0; r < HIGH_ROUNDS; r++) {
		__u64 t, seqno;

		t = vg_now_ns();
		seqno = submit(high, 1000);
		keep_busy(low, inflight, 4, 10000, vg_now_ns() + 30000000ull + rand() % 10000000);
		if (!wait_job(high, seqno, 60 * VG_SECOND_NS))
			DIE("high job %d did not finish", r);
		__u64 at = started_ns(high, t);

		waited += at - t;
		if (!use_peer && r == HIGH_ROUNDS - 1)
			hiprio_timeline(high, t, at);
		if (!use_peer) {
			struct drm_vgsched_ctx_query q;

			if (vgsched_ctx_query(fd, high, &q))
				DIE("CTX_QUERY of the high context");
			hiprio_marks(high, t);
			/* Only rounds with both upload stamps count. */
			if (q.last_job_seqno == seqno && q.phase2_start_ns >= t &&
			    q.phase2_end_ns >= q.phase2_start_ns) {
				hiprio_phase2_start += q.phase2_start_ns - t;
				hiprio_phase2_end += q.phase2_end_ns - t;
				hiprio_staged++;
			}
		}
	}
	for (int i = 0; i < 4; i++)
		for (int k = 0; k < 2; k++)
			if (inflight[i][k])
				wait_job(low[i], inflight[i][k], 60 * VG_SECOND_NS);
	return waited / 1e6 / HIGH_ROUNDS;
}

int main(int argc, char **argv)
{
	static const int clients[] = { 2, 8, CONTEXTS };
	double wall, cpu, others, wall_median, cpu_median, start_median, start_mean;
	const char *name;
	int mock;

	if (argc < 3 || argc > 4 ||
	    (strcmp(argv[1], "drm_sched") && strcmp(argv[1], "drm_sched_resv") &&
	     strcmp(argv[1], "vgsched") && strcmp(argv[1], "vgsched_mock")) ||
	    (argc == 4 && strcmp(argv[3], "submit")))
		DIE("usage: vgsched-peer-bench drm_sched|drm_sched_resv|vgsched|vgsched_mock NAME [submit]");
	use_bo = !strcmp(argv[1], "drm_sched_resv");
	use_peer = use_bo || !strcmp(argv[1], "drm_sched");
	mock = !strcmp(argv[1], "vgsched_mock");
	name = argv[2];
	fd = use_peer ? open("/dev/vgsched_peer", O_RDWR) : vgsched_open_render_node();
	if (fd < 0)
		DIE("cannot open the %s device", argv[1]);
	srand(1);
	if (!use_peer) {
		static char state[1 << 16];

		if (vgsched_debugfs_read("state", state, sizeof(state)))
			DIE("cannot read the state file");
		if (!strstr(state, "\ndevice: mock") != !mock)
			DIE("vgsched is%s loaded over the mock device (backend=1)", mock ? " not" : "");
	}
	submit_ioctl_us(&wall, &cpu, &others, &wall_median, &cpu_median);
	printf("peer.submit_ioctl_us.%s = %.2f\n", name, wall);
	printf("peer.submit_ioctl_us.%s.median = %.2f\n", name, wall_median);
	printf("peer.submit_cpu_us.%s = %.2f\n", name, cpu);
	printf("peer.submit_cpu_us.%s.median = %.2f\n", name, cpu_median);
	printf("peer.sched_cpu_us_per_job.%s = %.2f\n", name, others);
	if (argc == 4) {
		close(fd);
		return 0;
	}
	/* The mock times drm_sched's own part of submissions without a buffer. */
	if (!use_bo)
		printf("peer.sched_submit_us.%s = %.2f\n", name, sched_submit_us());
	start_mean = submit_to_start_us(&start_median);
	printf("peer.submit_overhead_us.%s = %.2f\n", name, start_mean);
	printf("peer.submit_overhead_us.%s.median = %.2f\n", name, start_median);
	/* The mock's jobs take no time: only the first workload means anything. */
	if (use_bo || mock) {
		close(fd);
		return 0;
	}
	for (unsigned int i = 0; i < sizeof(clients) / sizeof(clients[0]); i++)
		printf("peer.jain%d.%s = %.4f\n", clients[i], name, jain(clients[i]));
	printf("peer.hiprio_wait_ms.%s = %.2f\n", name, hiprio_wait_ms());
	if (hiprio_staged) {
		printf("peer.hiprio_upload_start_ms.%s = %.2f\n", name,
		       hiprio_phase2_start / 1e6 / hiprio_staged);
		printf("peer.hiprio_upload_end_ms.%s = %.2f\n", name,
		       hiprio_phase2_end / 1e6 / hiprio_staged);
	}
	if (hiprio_marked) {
		printf("peer.hiprio_load_ms.%s = %.2f\n", name, hiprio_load / 1e6 / hiprio_marked);
		printf("peer.hiprio_phase1_start_ms.%s = %.2f\n", name,
		       hiprio_phase1_start / 1e6 / hiprio_marked);
		printf("peer.hiprio_phase1_end_ms.%s = %.2f\n", name,
		       hiprio_phase1_end / 1e6 / hiprio_marked);
	}
	close(fd);
	return 0;
}
