// SPDX-License-Identifier: GPL-2.0
/*
 * vgsched-bench-guest: the engine-lock workloads of `make bench`, run in
 * the guest on a freshly loaded module (Documentation/benchmarks.rst).
 *
 *   vgsched-bench-guest short|long
 *
 * One job of one 64-thread wave: lanes 0-62 count down a loop that ends
 * just under the job timeout, lane 63 stores out of bounds at once and
 * faults. "short" has a loop body of 2 instructions, "long" one of 2000
 * (1000 times longer; 2009 instructions in all, within the ISA's 4096).
 * Both run the same modeled time, so what differs is the work per loop
 * pass. Meanwhile a second process, with its own open file, creates,
 * queries and destroys a context in a loop and records its slowest ioctl.
 * A warm-up run of the same job comes first; the program then writes 0 to
 * the device's debugfs file lock_hold_max_us (the measurement starts
 * again), and at the end reads it and prints, one per line,
 * "KEY = NUMBER" for bench.json:
 *
 *   engine.lock_hold_max_us.<w>          longest engine-lock hold after the warm-up
 *   engine.lock_hold_max_since_load_us.<w> longest since the module was loaded
 *   gpu.piece_max_us.<w>                 the wave executor's longest piece of interpretation
 *   gpu.interpret_us_per_modeled_ms.<w>  its CPU time per modeled ms of the job
 *   gpu.instructions.<w>                 instructions it interpreted for the job
 *   engine.other_client_ioctl_max_us.<w> slowest ioctl of the other process
 *   engine.other_client_ioctls.<w>       ioctls it made while the job ran
 *   engine.fault_job_wall_ms.<w>         submit to WAIT's return
 *
 * It fails (exit 1) unless the job ends with -EFAULT, i.e. unless the
 * loops stayed under the timeout and the last lane faulted.
 *
 *   vgsched-bench-guest preempt at_once|at_point
 *
 * How long a priority-0 job waits for the device when a lower level fills
 * it (run on a module loaded with one module of one unit, with
 * preempt_at_once 1 and then 0). A priority-5 context runs one long wave
 * that holds every vector register of the unit; a priority-0 context then
 * submits a one-wave job ROUNDS times (after WARMUP untimed ones), at
 * random phases of the point grid, each needing a register the low
 * wave holds, so it can start only once the low wave's state is saved.
 * From the placement log, on the engine's clock: the low context's
 * preempt event (the decision) and the high job's placement. From
 * CTX_QUERY and the state file: the low context's switch time over its
 * waves saved and restored, the modeled time to move one wave's state.
 * Prints, as "KEY = NUMBER" (MODE: the second argument, naming how the
 * module was loaded):
 *
 *   sched.prio0_first_dispatch_us.MODE.mean   decision to high placement
 *   sched.prio0_first_dispatch_us.MODE.median
 *   sched.prio0_first_dispatch_us.MODE.max
 *   sched.save_us.MODE                        modeled save of one wave
 *
 *   vgsched-bench-guest pipeline pipelined|sequential|resident
 *
 * Applications taking turns on one hardware slot, in the spirit of
 * PipeSwitch (OSDI 2020): PIPE_APPS contexts, each with a model object of
 * PIPE_MODEL_MIB (three of them do not fit in the 64 MiB of device memory the
 * module is loaded with, except in the resident run), run PIPE_ROUNDS
 * rounds; in each, every application submits PIPE_JOBS short inference jobs (each reads
 * the model and writes a small output). The module is loaded with a long
 * time slice, so an application keeps the slot until its jobs are done,
 * and a modeled environment initialisation (ctx_init_us). From the stage
 * log (debugfs stages), every switch between applications: the gap from
 * the outgoing application's last wave to the incoming one's first wave.
 * Prints (MODE: the argument, naming how the module was loaded):
 *
 *   pipeline.switch_gap_us.MODE         mean switch gap
 *   pipeline.switch_gap_us.MODE.median
 *   pipeline.switch_gap_us.MODE.max
 *   pipeline.end_reported_us.MODE       mean, over the same switches, of how
 *                                       long after the outgoing last wave's
 *                                       modeled end the engine learned of it
 *   pipeline.end_reported_us.MODE.median
 *   pipeline.switch_reaction_us.MODE    mean of the rest of the gap: from
 *                                       that report to the incoming first wave
 *   pipeline.switch_reaction_us.MODE.median
 *   pipeline.jobs_per_s.MODE            jobs over the wall time of the run
 *
 *   vgsched-bench-guest hiprio_memory small|big
 *
 * A high-priority job's wait while a lower level's job holds device
 * memory, on one hardware slot and 64 MiB of device memory (the default
 * 32 MiB sub-task threshold). A level-12 context runs a long job
 * (HM_LOW_MS) over its object L: 8 MiB ("small", under the threshold) or
 * 60 MiB ("big", over it, and leaving no room for the high job's object
 * beside it, so what it holds must be reclaimed). The low job first
 * stores one word into each of the first 64 pages of L, then loops. Once
 * it runs, a level-4 context submits a short job over its own 4 MiB
 * object H, whose every page the CPU rewrote through mmap() just before
 * (so H is uploaded in full in both modes). HM_ROUNDS rounds after an
 * untimed one, each waiting for both jobs. Prints (MODE: small or big):
 *
 *   pipeline.hiprio_wait_us.MODE_low  mean, the high job's SUBMIT to its
 *                                     first placement (placement log)
 *   pipeline.reclaim_us.MODE_low      mean per round of the modeled
 *                                     write-back time of what was
 *                                     reclaimed (debugfs vram reclaim_ns)
 *   gpu.stop_wait_max_us.hiprio_MODE_low  longest wait, since the module
 *                                     was loaded, of a cut of the low
 *                                     job's chunk for the executor's
 *                                     piece in hand
 *
 *   vgsched-bench-guest power
 *
 * Power-aware placement against spreading, on a module loaded with 4
 * nodes x 4 tiles of two types (bench mode of scripts/guest/init). A fixed
 * pseudo-random schedule of POWER_JOBS jobs arrives over time (one every
 * 6-18 ms; 1 to 4 tiles, mostly 1 or 2; 5 to 25 ms each), each from its own context
 * of POWER_CTXS taken in turn. The schedule runs once untimed under each
 * of placement_policy 0 (power) and 1 (spread), then POWER_REPS times
 * under each, alternating, the policy that runs first alternating too
 * (spread first in two of the three), each from a device whose tiles all
 * sleep. Energy is hwmon's energy1_input over a
 * run, from the first submission to the last completion (the makespan);
 * the bound is the energy of the tiles' busy time alone (debugfs tiles,
 * busy_energy_uj), the smaller of the two policies'. Prints the means:
 *   power.energy_mj.power       power.energy_mj.spread
 *   power.energy_mj.bound       power.makespan_ms.power
 *   power.makespan_ms.spread    power.energy_saving_pct
 *   power.busy_over_work.POLICY power.wakes.POLICY
 *
 *   vgsched-bench-guest memory
 *
 * Kernel memory the driver holds for what user space queues, from the
 * slab and vmalloc counters of /proc/meminfo (Slab + VmallocUsed), on a
 * freshly loaded module (a 60 s job timeout, so that the blockers below
 * end rather than hang: they outlast the queueing while it takes less than
 * their MEM_BLOCK_MS of modeled time, about 5 s at scripts/cpu-quota.sh
 * 100). MEM_FILES files
 * create MEM_CTXS contexts each, with no job; then MEM_QCTXS contexts
 * each get a blocker job (one thread that loops for MEM_BLOCK_MS of
 * modeled time, under the job timeout) and MEM_QJOBS jobs of the lock-hold workload's
 * shape (one wave of 64 threads, one 4 KiB binding, its program) queued
 * behind it. Counters are read after each phase has settled; prints:
 *
 *   engine.context_kernel_bytes.idle  per idle context
 *   engine.job_kernel_bytes.queued    per queued job (the blockers and
 *                                     the first job of each context, which
 *                                     sizes its wave store, excluded)
 *
 *   vgsched-bench-guest queued 0|idle4096|6144|close
 *
 * What other clients' queued work costs a client, on a module loaded with
 * one hardware slot and a 60 s job timeout. A level-14 context runs a
 * long one-thread blocker job, so contexts of level 15 get no slot and
 * their jobs stay queued. "0": nothing else is queued; "6144": another
 * process first queues 6144 one-wave jobs on 96 level-15 contexts (two
 * files); "idle4096": four processes of four other uids (IDLE_UID_BASE +
 * 1..4) first create IDLE_PER_UID contexts each (16 files of 64, their
 * default bound), with no job, and hold them. Then a level-8 context
 * submits QUEUED_ROUNDS one-wave jobs one at a time (it preempts the
 * blocker), each timed from SUBMIT to WAIT's return, after two warm-up
 * jobs and a restart of the lock-hold measurement. "close": 64 files
 * of 64 level-15 contexts, each with one job queued, are closed one after
 * the other. Prints (MODE: queued0, idle4096 or queued6144):
 *
 *   engine.trivial_job_us.MODE         median SUBMIT to fence
 *   engine.lock_hold_max_us.MODE       longest engine-lock hold during the timed jobs
 *   engine.lock_hold_max_since_load_us.MODE  longest since the module was loaded
 *   gpu.stop_wait_max_us.MODE          longest wait of a cut or a recall for
 *                                      the executor's piece in hand, during
 *                                      the timed jobs
 *   engine.close_files_ms.64x64        closing the 64 files
 *
 * and, with 6144 jobs queued, while debugfs state is read whole four times:
 *
 *   engine.state_read_ms.6144          mean time of one read
 *   engine.lock_hold_max_us.state_read6144  longest engine-lock hold meanwhile
 *
 *   vgsched-bench-guest ref
 *
 * The host-speed reference of rust/vgsched-bench (hostref.rs) run in the
 * guest: REF_STEPS steps of the same table-and-multiply hash from the
 * same seed, REF_RUNS timed runs after an untimed one, then as many on
 * every vCPU at once; prints the result (the host's, if the loops are the
 * same) and
 *
 *   bench.guest_ref_ns                 median wall time of one run, ns
 *   bench.guest_ref_ns.all_vcpus       the same, every vCPU running one
 *
 * It needs no module.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vgsched_programs.h"

#define I(op, rd, ra, rb, imm) vg_instr(DRM_VGSCHED_OP_##op, rd, ra, rb, imm)

#define LANES 64
/* Cycles the looping lanes stay below the job timeout. */
#define MARGIN_CYCLES 16

#define DIE(...) do { \
		fprintf(stderr, "vgsched-bench-guest: " __VA_ARGS__); \
		fprintf(stderr, "\n"); \
		exit(1); \
	} while (0)

/* What the other process reports, in memory shared with it. */
struct other_client {
	volatile int stop;
	volatile int ready;
	volatile uint64_t max_ns;
	volatile uint64_t ioctls;
	volatile int error;
};

/*
 * The workload's program into @p: lane 63 faults, the others loop with a
 * body of @body instructions (2 or more) until just under @timeout_cycles,
 * given the cycle costs of @info. Returns the instruction count, 0 if the
 * timeout is too short for one pass.
 */
static unsigned int fault_program(__u64 *p, unsigned int body, __u64 timeout_cycles,
				  const struct drm_vgsched_gpu_info *info)
{
	const __u32 *c = info->cycle_costs;
	__u64 move = c[DRM_VGSCHED_CLASS_MOVE], alu = c[DRM_VGSCHED_CLASS_ALU];
	__u64 cmp = c[DRM_VGSCHED_CLASS_COMPARE], jump = c[DRM_VGSCHED_CLASS_JUMP];
	/* SREG, MOVI, SEQ, BRNZ, MOVI before the loop; END after it. */
	__u64 fixed = move + move + cmp + jump + move + jump;
	/* body - 2 ADDI r7 filler, ADDI r4, BRNZ. */
	__u64 pass = (body - 1) * alu + jump;
	unsigned int n = 0, loop, fault;
	__u64 loops;

	if (timeout_cycles < fixed + MARGIN_CYCLES + pass)
		return 0;
	loops = (timeout_cycles - fixed - MARGIN_CYCLES) / pass;
	if (loops > INT32_MAX)
		loops = INT32_MAX;
	loop = 5;
	fault = loop + body + 1;
	p[n++] = I(SREG, 1, 0, 0, DRM_VGSCHED_SREG_LANE);
	p[n++] = I(MOVI, 2, 0, 0, LANES - 1);
	p[n++] = I(SEQ, 3, 1, 2, 0);
	p[n++] = I(BRNZ, 0, 3, 0, fault);
	p[n++] = I(MOVI, 4, 0, 0, (__s32)loops);
	for (unsigned int i = 0; i < body - 2; i++)		/* 5: loop */
		p[n++] = I(ADDI, 7, 7, 0, 1);
	p[n++] = I(ADDI, 4, 4, 0, -1);
	p[n++] = I(BRNZ, 0, 4, 0, loop);
	p[n++] = I(END, 0, 0, 0, 0);
	/* fault: a word 4 MiB into a one-page buffer. */
	p[n++] = I(MOVI, 6, 0, 0, 1 << 20);
	p[n++] = I(ST, 1, 6, 0, 0);
	p[n++] = I(END, 0, 0, 0, 0);
	return n;
}

/* The other process: context create, query, destroy until told to stop. */
static void other_client_loop(struct other_client *oc)
{
	int fd = vgsched_open_render_node();

	if (fd < 0) {
		oc->error = 1;
		oc->ready = 1;
		_exit(1);
	}
	oc->ready = 1;
	while (!oc->stop) {
		struct drm_vgsched_ctx_query q;
		__u64 t0, t1, t2, t3, worst;
		__u32 ctx;

		t0 = vg_now_ns();
		ctx = vgsched_ctx_create(fd, 8);
		t1 = vg_now_ns();
		if (!ctx || vgsched_ctx_query(fd, ctx, &q)) {
			oc->error = 1;
			break;
		}
		t2 = vg_now_ns();
		if (vgsched_ctx_destroy(fd, ctx)) {
			oc->error = 1;
			break;
		}
		t3 = vg_now_ns();
		worst = t1 - t0;
		if (t2 - t1 > worst)
			worst = t2 - t1;
		if (t3 - t2 > worst)
			worst = t3 - t2;
		if (worst > oc->max_ns)
			oc->max_ns = worst;
		oc->ioctls += 3;
	}
	close(fd);
	_exit(oc->error);
}

/* The number in the device's debugfs file @name, or -1. */
static long long debugfs_number(const char *name)
{
	char buf[64], *end;
	long long v;

	if (vgsched_debugfs_read(name, buf, sizeof(buf)))
		return -1;
	v = strtoll(buf, &end, 10);
	return end == buf ? -1 : v;
}

/*
 * The engine lock's meter, the "lock_holds" file: one line, read without
 * the lock (the state file would copy every queued job under it). NULL if
 * it cannot be read.
 */
static char *read_lock_holds(void)
{
	static char line[512];

	return vgsched_debugfs_read("lock_holds", line, sizeof(line)) ? NULL : line;
}

/* Engine-lock holds since load and the slow ones (over 1 ms), from "lock_holds"; 0 or -1. */
static int hold_counts(long long *holds, long long *slow)
{
	char *line = read_lock_holds();

	line = line ? strstr(line, "us, ") : NULL;
	return line && sscanf(line, "us, %lld of %lld holds", slow, holds) == 2 ? 0 : -1;
}

/* Slow engine-lock holds (over 1 ms) since load; -1 if unknown. */
static long long slow_holds(void)
{
	long long slow, holds;

	return hold_counts(&holds, &slow) ? -1 : slow;
}

/* The wave executor's counts from the state file's "executor:" line; 0 or -1. */
struct exec_stats {
	unsigned long long instructions, pieces, busy_us, piece_max_us;
	/* Cuts and recalls that waited for the piece in hand; the longest wait. */
	unsigned long long stops, stop_wait_max_us;
};

static int exec_stats(struct exec_stats *x)
{
	/* Room for the state of thousands of contexts (the queued workloads). */
	static char state[4 << 20];
	char *line;

	if (vgsched_debugfs_read("state", state, sizeof(state)) ||
	    !(line = strstr(state, "\nexecutor: ")))
		return -1;
	if (sscanf(line, "\nexecutor: %llu instructions in %llu pieces, %llu us interpreting, longest piece %llu us",
		   &x->instructions, &x->pieces, &x->busy_us, &x->piece_max_us) != 4)
		return -1;
	line = strstr(line, " yields, ");
	if (!line || sscanf(line, " yields, %llu stops, longest stop wait %llu us", &x->stops,
			    &x->stop_wait_max_us) != 2)
		return -1;
	return 0;
}

/* Prints the line on the longest engine-lock hold (where it was taken). */
static void print_hold_site(void)
{
	char *line = read_lock_holds(), *end;

	if (!line)
		return;
	end = strchr(line, '\n');
	if (end)
		*end = 0;
	printf("  %s\n", line);
}

#define ROUNDS 20
#define WARMUP 2

/* Time of the latest "preempt" event of @ctx at or before @t in @log. */
static __u64 preempt_before(char *log, __u32 ctx, __u64 t)
{
	__u64 best = 0, when;
	unsigned int c;
	char *line, *save = NULL;

	for (line = strtok_r(log, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (sscanf(line, "#%*u t=%llu preempt client=%*u ctx=%u", &when, &c) == 2 &&
		    c == ctx && when <= t && when > best)
			best = when;
	return best;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int preempt_bench(int fd, const struct drm_vgsched_gpu_info *info, const char *mode)
{
	static char log[2 << 20];
	struct vg_placement *all = calloc(WARMUP + ROUNDS, sizeof(*all)), *placed = all;
	struct busy_job low, high;
	struct drm_vgsched_ctx_query q;
	__u32 lctx = vgsched_ctx_create(fd, 5), hctx = vgsched_ctx_create(fd, 0);
	double sum = 0, max = 0, save_us, per_job[ROUNDS];
	long long saved, restored;
	int n;

	if (!placed || !lctx || !hctx || info->modules != 1 || info->units_per_module != 1)
		DIE("preempt wants one module of one unit");
	/* One wave with every vector register of the unit, for a minute. */
	if (busy_job_init(fd, &low, lctx, 60000, 1, 1, 1, info->vgpr_blocks) || busy_submit(fd, &low))
		DIE("low job failed");
	if (busy_job_init(fd, &high, hctx, 1, 1, 1, 1, 1))
		DIE("high job failed");
	srand(1);
	for (int i = 0; i < WARMUP + ROUNDS; i++) {
		/*
		 * The low wave is back and running (restored, past its point);
		 * a random extra wait spreads the submissions over the point grid.
		 */
		usleep(30 * 1000 + rand() % 10000);
		if (busy_submit(fd, &high) || vgsched_wait(fd, hctx, high.s.seqno, 60 * VG_SECOND_NS, NULL))
			DIE("high job %d failed", i);
	}
	n = vgsched_placements(vgsched_client_id(fd, hctx), hctx, placed, WARMUP + ROUNDS);
	if (n != WARMUP + ROUNDS || vgsched_debugfs_read("placements", log, sizeof(log)))
		DIE("placement log: %d of %d", n, ROUNDS);
	/* The first jobs are a warm-up (lockdep's first pass over new lock chains). */
	placed += WARMUP;
	n -= WARMUP;
	for (int i = 0; i < n; i++) {
		static char copy[2 << 20];
		__u64 p;
		double us;

		memcpy(copy, log, sizeof(copy));
		p = preempt_before(copy, lctx, placed[i].time_ns);
		if (!p)
			DIE("no preempt event before placement %d", i);
		us = (placed[i].time_ns - p) / 1000.0;
		per_job[i] = us;
		sum += us;
		max = us > max ? us : max;
	}
	saved = vgsched_state_number("waves saved ");
	restored = vgsched_state_number("groups restored ");
	if (vgsched_ctx_query(fd, lctx, &q) || saved <= 0 || restored < 0)
		DIE("state: saved %lld restored %lld", saved, restored);
	/* Every save and every restore of the low context moved one such wave. */
	save_us = q.switch_ns / 1000.0 / (saved + restored);
	printf("workload preempt (%s): %d priority-0 jobs, each waiting for one saved wave of %u vector register blocks\n",
	       mode, n, info->vgpr_blocks);
	printf("  decision to placement, us, per job:");
	for (int i = 0; i < n; i++)
		printf(" %.0f", per_job[i]);
	printf("\n");
	qsort(per_job, n, sizeof(per_job[0]), by_value);
	printf("sched.prio0_first_dispatch_us.%s.mean = %.0f\n", mode, sum / n);
	printf("sched.prio0_first_dispatch_us.%s.median = %.0f\n", mode, per_job[n / 2]);
	printf("sched.prio0_first_dispatch_us.%s.max = %.0f\n", mode, max);
	printf("sched.save_us.%s = %.0f\n", mode, save_us);
	printf("sched.waves_stopped_at_once.%s = %lld\n", mode, vgsched_state_number("stopped at once "));
	if (!strcmp(mode, "at_once")) {
		/* The module's default: the figures under their plain names. */
		printf("sched.prio0_first_dispatch_us.mean = %.0f\n", sum / n);
		printf("sched.prio0_first_dispatch_us.median = %.0f\n", per_job[n / 2]);
		printf("sched.save_us = %.0f\n", save_us);
	}
	vgsched_ctx_destroy(fd, hctx);
	vgsched_ctx_destroy(fd, lctx);
	busy_job_fini(fd, &high);
	busy_job_fini(fd, &low);
	free(all);
	close(fd);
	return 0;
}

#define PIPE_APPS 3
#define PIPE_ROUNDS 6
#define PIPE_JOBS 6
#define PIPE_MODEL_MIB 24

/* The first and last waves of the jobs in the stage log, per job. */
struct job_span {
	unsigned int ctx;
	__u64 job, first, last, reported;
};

static int by_first(const void *a, const void *b)
{
	const struct job_span *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

/* @late - @early in µs, 0 if @late is not later. */
static double span_us(__u64 early, __u64 late)
{
	return late > early ? (late - early) / 1000.0 : 0;
}

/*
 * Reads the stage log and appends to @gaps the switch gaps among the
 * jobs of @client whose first wave is at or after @since, and splits each
 * at the outgoing job's end_reported: into @late (from its last wave's
 * modeled end to the report) and @reaction (from the report to the
 * incoming job's first wave).
 */
static int switch_gaps(__u64 client, __u64 since, double *gaps, double *late, double *reaction,
		       int n)
{
	static struct vg_stage log[512];
	static struct job_span spans[512];
	int count = 0, records = vgsched_stages(log, 512);

	if (records < 0)
		DIE("cannot read debugfs stages");
	for (int r = 0; r < records; r++) {
		const struct vg_stage *e = &log[r];
		int i;

		if (e->client != client || !e->job)
			continue;
		for (i = 0; i < count && (spans[i].ctx != e->ctx || spans[i].job != e->job); i++)
			;
		if (i == count)
			spans[count++] = (struct job_span){ .ctx = e->ctx, .job = e->job };
		if (!strcmp(e->event, "first_wave"))
			spans[i].first = e->t;
		else if (!strcmp(e->event, "last_wave"))
			spans[i].last = e->t;
		else if (!strcmp(e->event, "end_reported"))
			spans[i].reported = e->t;
	}
	qsort(spans, count, sizeof(spans[0]), by_first);
	for (int i = 1; i < count; i++)
		if (spans[i].first >= since && spans[i - 1].first >= since &&
		    spans[i].ctx != spans[i - 1].ctx && spans[i - 1].last) {
			const struct job_span *out = &spans[i - 1];

			if (!out->reported)
				DIE("job %llu: last_wave without end_reported", (unsigned long long)out->job);
			gaps[n] = span_us(out->last, spans[i].first);
			late[n] = span_us(out->last, out->reported);
			reaction[n++] = span_us(out->reported, spans[i].first);
		}
	return n;
}

static int pipeline_bench(int fd, const char *mode)
{
	static double gaps[PIPE_APPS * PIPE_ROUNDS], late[PIPE_APPS * PIPE_ROUNDS],
		reaction[PIPE_APPS * PIPE_ROUNDS];
	struct {
		__u32 ctx;
		struct vg_buf model, out[PIPE_JOBS];
		__u32 bind[PIPE_JOBS][2];
		struct drm_vgsched_submit s[PIPE_JOBS];
	} app[PIPE_APPS];
	struct vg_buf prog;
	__u64 words[16], t0, start, wall;
	unsigned int len = vg_prog_slow_copy(words, 150);
	int ngaps = 0;
	double sum = 0, late_sum = 0, reaction_sum = 0;
	__u64 client;

	if (vg_program(fd, words, len, &prog))
		DIE("program");
	for (int a = 0; a < PIPE_APPS; a++) {
		app[a].ctx = vgsched_ctx_create(fd, 8);
		if (!app[a].ctx || vg_buf_create(fd, (size_t)PIPE_MODEL_MIB << 20, &app[a].model))
			DIE("setup of application %d", a);
		for (int w = 0; w < LANES; w++)
			((uint32_t *)app[a].model.map)[w] = a * 1000 + w;
		for (int j = 0; j < PIPE_JOBS; j++) {
			if (vg_buf_create(fd, 4096, &app[a].out[j]))
				DIE("output buffer");
			app[a].bind[j][0] = app[a].model.handle;
			app[a].bind[j][1] = app[a].out[j].handle;
			app[a].s[j] = vg_job(app[a].ctx, &prog, len, app[a].bind[j], 2, 1, 1, LANES);
			app[a].s[j].shared_mem_blocks = 0;
			app[a].s[j].binding_access[0] = DRM_VGSCHED_BINDING_READ;
			app[a].s[j].binding_access[1] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
		}
	}
	client = vgsched_client_id(fd, app[0].ctx);
	t0 = vg_now_ns();
	for (int r = 0; r < PIPE_ROUNDS; r++) {
		start = vg_now_ns();
		for (int a = 0; a < PIPE_APPS; a++)
			for (int j = 0; j < PIPE_JOBS; j++) {
				app[a].s[j].seqno = 0;
				if (vgsched_submit(fd, &app[a].s[j]))
					DIE("submit");
			}
		for (int a = 0; a < PIPE_APPS; a++)
			for (int j = 0; j < PIPE_JOBS; j++) {
				if (wait_ok(fd, app[a].ctx, app[a].s[j].seqno))
					DIE("job of application %d failed", a);
				for (int w = 0; w < LANES; w++)
					if (((uint32_t *)app[a].out[j].map)[w] != (uint32_t)(a * 1000 + w))
						DIE("wrong result, application %d", a);
			}
		ngaps = switch_gaps(client, start, gaps, late, reaction, ngaps);
	}
	wall = vg_now_ns() - t0;
	if (!ngaps)
		DIE("no switch seen");
	for (int i = 0; i < ngaps; i++) {
		sum += gaps[i];
		late_sum += late[i];
		reaction_sum += reaction[i];
	}
	qsort(gaps, ngaps, sizeof(gaps[0]), by_value);
	qsort(late, ngaps, sizeof(late[0]), by_value);
	qsort(reaction, ngaps, sizeof(reaction[0]), by_value);
	printf("workload pipeline (%s): %d applications x %d MiB models, %d rounds of %d jobs each, %d switches\n",
	       mode, PIPE_APPS, PIPE_MODEL_MIB, PIPE_ROUNDS, PIPE_JOBS, ngaps);
	printf("pipeline.switch_gap_us.%s = %.1f\n", mode, sum / ngaps);
	printf("pipeline.switch_gap_us.%s.median = %.1f\n", mode, gaps[ngaps / 2]);
	printf("pipeline.switch_gap_us.%s.max = %.1f\n", mode, gaps[ngaps - 1]);
	printf("pipeline.end_reported_us.%s = %.1f\n", mode, late_sum / ngaps);
	printf("pipeline.end_reported_us.%s.median = %.1f\n", mode, late[ngaps / 2]);
	printf("pipeline.switch_reaction_us.%s = %.1f\n", mode, reaction_sum / ngaps);
	printf("pipeline.switch_reaction_us.%s.median = %.1f\n", mode, reaction[ngaps / 2]);
	printf("pipeline.jobs_per_s.%s = %.1f\n", mode,
	       PIPE_APPS * PIPE_ROUNDS * PIPE_JOBS / (wall / 1e9));
	for (int a = 0; a < PIPE_APPS; a++) {
		vg_buf_destroy(fd, &app[a].model);
		for (int j = 0; j < PIPE_JOBS; j++)
			vg_buf_destroy(fd, &app[a].out[j]);
	}
	vg_buf_destroy(fd, &prog);
	close(fd);
	return 0;
}

/*
 * The power workload: jobs, contexts, repetitions per policy (after one
 * untimed run of each).
 */
#define POWER_JOBS 60
#define POWER_CTXS 16
#define POWER_REPS 3

/* One job of the schedule. */
struct power_job {
	__u64 at_ns;
	__u32 tiles, ms;
};

/* Sums @key over the 16 tiles' lines of the last debugfs tiles read. */
static long long tiles_sum(const char *key)
{
	long long sum = 0;

	for (int i = 0; i < 16; i++) {
		char line[16];
		long long x;

		snprintf(line, sizeof(line), "tile %d", i);
		x = tiles_field(line, key);
		if (x < 0)
			DIE("debugfs tiles: no %s on %s", key, line);
		sum += x;
	}
	return sum;
}

/* Sleeps until @t on CLOCK_MONOTONIC. */
static void sleep_until(__u64 t)
{
	struct timespec ts = { .tv_sec = t / 1000000000ull, .tv_nsec = t % 1000000000ull };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
		;
}

/*
 * Runs the schedule once under @policy; returns the makespan in ns and
 * the device's energy and busy energy over it in uJ.
 */
static __u64 power_run(int fd, const struct power_job *sched, const __u32 *ctx,
		       struct busy_job *jobs, const char *policy, long long power_asleep,
		       long long *energy, long long *busy, long long *busy_ns, long long *wakes)
{
	__u64 t0, end;
	long long e0, b0, n0, w0;

	if (vgsched_param_write("placement_policy", policy))
		DIE("placement_policy=%s", policy);
	/* Every run starts from a sleeping device. */
	do
		usleep(20000);
	while (hwmon_number("power1_input") != power_asleep);
	if (tiles_read())
		DIE("debugfs tiles");
	b0 = tiles_field("device", "busy_energy_uj");
	n0 = tiles_sum("busy_ns");
	w0 = tiles_sum("wakes");
	e0 = hwmon_number("energy1_input");
	t0 = vg_now_ns();
	for (int i = 0; i < POWER_JOBS; i++) {
		sleep_until(t0 + sched[i].at_ns);
		jobs[i].s.seqno = 0;
		if (vgsched_submit(fd, &jobs[i].s))
			DIE("submit %d", i);
	}
	for (int i = 0; i < POWER_JOBS; i++)
		if (wait_ok(fd, ctx[i % POWER_CTXS], jobs[i].s.seqno) || busy_job_wrong(&jobs[i]) != -1)
			DIE("job %d failed", i);
	end = vg_now_ns();
	*energy = hwmon_number("energy1_input") - e0;
	if (tiles_read())
		DIE("debugfs tiles");
	*busy = tiles_field("device", "busy_energy_uj") - b0;
	*busy_ns = tiles_sum("busy_ns") - n0;
	*wakes = tiles_sum("wakes") - w0;
	if (e0 < 0 || *energy < 0 || *busy < 0)
		DIE("hwmon or debugfs tiles unreadable");
	return end - t0;
}

static int power_bench(int fd)
{
	static struct busy_job jobs[POWER_JOBS];
	struct power_job sched[POWER_JOBS];
	struct drm_vgsched_tiles_info t;
	struct drm_vgsched_power_info pm;
	__u32 ctx[POWER_CTXS], seed = 12345;
	double energy[2] = { 0 }, busy[2] = { 0 }, makespan[2] = { 0 };
	double held[2] = { 0 }, woken[2] = { 0 }, work_ms = 0;
	__u64 at = 0;

	if (vgsched_dev_query(fd, DRM_VGSCHED_DEV_QUERY_TILES, &t, sizeof(t)) ||
	    vgsched_dev_query(fd, DRM_VGSCHED_DEV_QUERY_POWER, &pm, sizeof(pm)) || t.nodes != 4 ||
	    t.tiles_per_node != 4)
		DIE("power wants 4 nodes x 4 tiles");
	for (int c = 0; c < POWER_CTXS; c++) {
		ctx[c] = vgsched_ctx_create(fd, 8);
		if (!ctx[c])
			DIE("context");
	}
	for (int i = 0; i < POWER_JOBS; i++) {
		__u32 r;

		seed = seed * 1103515245u + 12345u;
		r = seed >> 8;
		at += (6 + r % 13) * 1000000ull;
		sched[i].at_ns = at;
		r /= 13;
		/* 1 tile 45 %, 2 tiles 35 %, 3 and 4 tiles 10 % each. */
		sched[i].tiles = r % 20 < 9 ? 1 : r % 20 < 16 ? 2 : r % 20 < 18 ? 3 : 4;
		r /= 20;
		sched[i].ms = 5 + r % 21;
		if (busy_job_init(fd, &jobs[i], ctx[i % POWER_CTXS], sched[i].ms, sched[i].tiles, 1, 4, 1))
			DIE("job %d", i);
		jobs[i].s.tiles = sched[i].tiles;
		work_ms += sched[i].ms * sched[i].tiles;
	}
	/*
	 * Repetition 0 is untimed: the first run after the module's load is
	 * the slowest (the interpreter falls furthest behind the modeled
	 * clock in it), whichever policy it is. The order of the two policies
	 * alternates from one repetition to the next, so that neither always
	 * runs first.
	 */
	for (int rep = 0; rep <= POWER_REPS; rep++)
		for (int i = 0; i < 2; i++) {
			int p = (i + rep) % 2;
			long long e, b, n, w;
			__u64 span = power_run(fd, sched, ctx, jobs, p ? "1" : "0",
					       16000LL * pm.sleep_mw, &e, &b, &n, &w);

			if (!rep)
				continue;
			energy[p] += e / 1000.0 / POWER_REPS;
			busy[p] += b / 1000.0 / POWER_REPS;
			makespan[p] += span / 1e6 / POWER_REPS;
			held[p] += n / 1e6 / POWER_REPS;
			woken[p] += (double)w / POWER_REPS;
		}
	printf("workload power: %d jobs of 1-4 tiles over %.0f ms on 4 nodes x 4 tiles, %d runs per policy after one untimed each\n",
	       POWER_JOBS, at / 1e6, POWER_REPS);
	printf("power.energy_mj.power = %.1f\n", energy[0]);
	printf("power.energy_mj.spread = %.1f\n", energy[1]);
	printf("power.energy_mj.bound = %.1f\n", busy[0] < busy[1] ? busy[0] : busy[1]);
	printf("power.busy_energy_mj.power = %.1f\n", busy[0]);
	printf("power.busy_energy_mj.spread = %.1f\n", busy[1]);
	printf("power.makespan_ms.power = %.1f\n", makespan[0]);
	printf("power.makespan_ms.spread = %.1f\n", makespan[1]);
	printf("power.energy_saving_pct = %.1f\n", 100.0 * (1 - energy[0] / energy[1]));
	/* Tiles' busy time against the jobs' modeled work (ms x tiles). */
	printf("power.busy_over_work.power = %.3f\n", held[0] / work_ms);
	printf("power.busy_over_work.spread = %.3f\n", held[1] / work_ms);
	printf("power.wakes.power = %.1f\n", woken[0]);
	printf("power.wakes.spread = %.1f\n", woken[1]);
	for (int i = 0; i < POWER_JOBS; i++)
		busy_job_fini(fd, &jobs[i]);
	close(fd);
	return 0;
}

#define HM_ROUNDS 8
#define HM_LOW_MS 300
#define HM_HIGH_MIB 4

/*
 * The low job of hiprio_memory: every thread stores its global id into
 * word (global id x 1024) of binding 0 (one word in each of 64 pages),
 * then loops @loops times loading word 0 (VG_SLOW_LOOP_CYCLES each).
 */
static unsigned int hm_low_program(__u64 *p, int loops)
{
	unsigned int n = 0;

	p[n++] = I(SREG, 1, 0, 0, DRM_VGSCHED_SREG_GLOBAL_ID);
	p[n++] = I(MOVI, 4, 0, 0, 1024);
	p[n++] = I(MUL, 5, 1, 4, 0);
	p[n++] = I(ST, 1, 5, 0, 0);
	p[n++] = I(MOVI, 0, 0, 0, loops);
	for (int i = 0; i < 4; i++)
		p[n++] = I(LD, 2, 3, 0, 0);			/* 5-8: loop */
	p[n++] = I(ADDI, 0, 0, 0, -1);
	p[n++] = I(BRNZ, 0, 0, 0, 5);
	p[n++] = I(END, 0, 0, 0, 0);
	return n;
}

/*
 * The last round's stages from the high job's SUBMIT at @t to its first
 * placement at @at, as lines "+US  ctx N JOB EVENT" (informational).
 */
static void hm_timeline(__u64 client, __u64 t, __u64 at)
{
	static struct vg_stage log[1024];
	int n = vgsched_stages(log, 1024);

	printf("  last round, from the high job's SUBMIT to its placement (+%.0f us):\n",
	       (at - t) / 1000.0);
	for (int i = 0; i < n; i++)
		if (log[i].client == client && log[i].t >= t && log[i].t <= at)
			printf("  +%8.0f us  ctx %u job %llu %s\n", (log[i].t - t) / 1000.0,
			       log[i].ctx, log[i].job, log[i].event);
	/* The slot decisions in the same window. */
	vg_print_slot_records(t, at);
}

static int hiprio_memory_bench(int fd, const char *mode)
{
	static struct vg_placement log[512];
	int big = !strcmp(mode, "big");
	size_t low_bytes = (big ? 60ull : 8ull) << 20, high_bytes = (size_t)HM_HIGH_MIB << 20;
	struct vg_buf low_prog, high_prog, low_obj, high_obj, high_out;
	struct exec_stats x;
	__u32 low = vgsched_ctx_create(fd, 12), high = vgsched_ctx_create(fd, 4);
	__u32 low_bind, high_bind[2];
	struct drm_vgsched_submit ls, hs;
	__u64 words[32], waited = 0, client;
	long long reclaim_before = -1, reclaim_after;
	unsigned int low_len, high_len;
	double submit_us = 0;

	if (strcmp(mode, "big") && strcmp(mode, "small"))
		DIE("hiprio_memory: small or big");
	low_len = hm_low_program(words, LOOPS_FOR_MS(HM_LOW_MS));
	if (!low || !high || vg_program(fd, words, low_len, &low_prog))
		DIE("hiprio_memory: setup");
	high_len = vg_prog_slow_copy(words, 1);
	if (vg_program(fd, words, high_len, &high_prog) ||
	    vg_buf_create(fd, low_bytes, &low_obj) || vg_buf_create(fd, high_bytes, &high_obj) ||
	    vg_buf_create(fd, 4096, &high_out))
		DIE("hiprio_memory: buffers");
	low_bind = low_obj.handle;
	high_bind[0] = high_obj.handle;
	high_bind[1] = high_out.handle;
	ls = vg_job(low, &low_prog, low_len, &low_bind, 1, 1, 1, LANES);
	hs = vg_job(high, &high_prog, high_len, high_bind, 2, 1, 1, LANES);
	hs.binding_access[0] = DRM_VGSCHED_BINDING_READ;
	hs.binding_access[1] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
	client = vgsched_client_id(fd, high);
	/* Round 0 is a warm-up (first mappings, lockdep's first pass over new lock chains). */
	for (int r = 0; r <= HM_ROUNDS; r++) {
		struct drm_vgsched_ctx_query q;
		__u64 t, deadline = vg_now_ns() + 60 * VG_SECOND_NS, at = 0;
		int n;

		for (size_t off = 0; off < high_bytes; off += 4096)
			((uint32_t *)high_obj.map)[off / 4] = r * 1000 + off / 4096;
		for (int w = 1; w < LANES; w++)
			((uint32_t *)high_obj.map)[w] = r * 1000 + w;
		memset(high_out.map, 0, 4096);
		ls.seqno = 0;
		if (vgsched_submit(fd, &ls))
			DIE("hiprio_memory: low SUBMIT");
		/* Until the low job has run for a while. */
		do {
			usleep(2000);
			if (vgsched_ctx_query(fd, low, &q) || vg_now_ns() > deadline)
				DIE("hiprio_memory: the low job never ran");
		} while (q.runtime_ns < 20000000ull);
		usleep(rand() % 3000);
		t = vg_now_ns();
		hs.seqno = 0;
		if (vgsched_submit(fd, &hs))
			DIE("hiprio_memory: high SUBMIT");
		if (r)
			submit_us += (vg_now_ns() - t) / 1000.0;
		if (wait_ok(fd, high, hs.seqno))
			DIE("hiprio_memory: high job failed");
		for (int w = 0; w < LANES; w++)
			if (((uint32_t *)high_out.map)[w] != ((uint32_t *)high_obj.map)[w])
				DIE("hiprio_memory: wrong result, round %d", r);
		n = vgsched_placements(client, high, log, 512);
		for (int i = 0; i < n && !at; i++)
			if (log[i].time_ns >= t)
				at = log[i].time_ns;
		if (!at)
			DIE("hiprio_memory: no placement of the high job");
		if (r)
			waited += at - t;
		printf("  round %d: %.0f us\n", r, (at - t) / 1000.0);
		if (r == HM_ROUNDS)
			hm_timeline(client, t, at);
		if (wait_ok(fd, low, ls.seqno))
			DIE("hiprio_memory: low job failed");
		for (int i = 0; i < LANES; i++)
			if (((uint32_t *)low_obj.map)[i * 1024] != (uint32_t)i)
				DIE("hiprio_memory: low job's stores lost, round %d", r);
		if (!r)
			reclaim_before = vgsched_debugfs_number("vram", "reclaim_ns ");
	}
	reclaim_after = vgsched_debugfs_number("vram", "reclaim_ns ");
	if (reclaim_before < 0 || reclaim_after < reclaim_before)
		DIE("hiprio_memory: no reclaim_ns in debugfs vram");
	printf("workload hiprio_memory (%s): low job over %zu MiB, high job over %d MiB, %d rounds, %lld reclaims\n",
	       mode, low_bytes >> 20, HM_HIGH_MIB, HM_ROUNDS,
	       vgsched_debugfs_number("vram", "reclaims "));
	printf("  the high job's SUBMIT ioctl took %.0f us on average\n", submit_us / HM_ROUNDS);
	printf("pipeline.hiprio_wait_us.%s_low = %.1f\n", mode, waited / 1000.0 / HM_ROUNDS);
	printf("pipeline.reclaim_us.%s_low = %.1f\n", mode,
	       (reclaim_after - reclaim_before) / 1000.0 / HM_ROUNDS);
	if (exec_stats(&x))
		DIE("hiprio_memory: no executor line in state");
	printf("gpu.stop_wait_max_us.hiprio_%s_low = %llu\n", mode, x.stop_wait_max_us);
	vg_buf_destroy(fd, &low_prog);
	vg_buf_destroy(fd, &high_prog);
	vg_buf_destroy(fd, &low_obj);
	vg_buf_destroy(fd, &high_obj);
	vg_buf_destroy(fd, &high_out);
	vgsched_ctx_destroy(fd, low);
	vgsched_ctx_destroy(fd, high);
	close(fd);
	return 0;
}

#define MEM_FILES 4
#define MEM_CTXS 60
#define MEM_QCTXS 8
#define MEM_QJOBS 56
#define MEM_BLOCK_MS 20000

/* Slab plus vmalloc'd kernel memory, in bytes (/proc/meminfo). */
static long long kernel_bytes(void)
{
	char line[256];
	long long kib, total = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Slab: %lld kB", &kib) == 1 ||
		    sscanf(line, "VmallocUsed: %lld kB", &kib) == 1)
			total += kib * 1024;
	fclose(f);
	return total;
}

/* kernel_bytes() once freed objects and per-CPU caches have settled. */
static long long settled_kernel_bytes(void)
{
	usleep(200000);
	return kernel_bytes();
}

static int memory_bench(int fd, const struct drm_vgsched_gpu_info *info)
{
	int fds[MEM_FILES];
	__u32 ctxs[MEM_FILES][MEM_CTXS], qctx[MEM_QCTXS];
	struct busy_job blocker;
	struct vg_buf prog, mem;
	__u64 words[4096];
	unsigned int len = fault_program(words, 2, (__u64)info->job_timeout_ms * info->clock_khz, info);
	long long before, after, idle_bytes, job_bytes;

	if (info->job_timeout_ms <= MEM_BLOCK_MS)
		DIE("memory: job timeout %u ms, load the module with more than %d",
		    info->job_timeout_ms, MEM_BLOCK_MS);
	if (!len || vg_program(fd, words, len, &prog) || vg_buf_create(fd, 4096, &mem))
		DIE("memory: setup");
	for (int f = 0; f < MEM_FILES; f++)
		if ((fds[f] = vgsched_open_render_node()) < 0)
			DIE("memory: open");
	before = settled_kernel_bytes();
	for (int f = 0; f < MEM_FILES; f++)
		for (int c = 0; c < MEM_CTXS; c++)
			if (!(ctxs[f][c] = vgsched_ctx_create(fds[f], 8)))
				DIE("memory: CTX_CREATE %d.%d", f, c);
	after = settled_kernel_bytes();
	idle_bytes = (after - before) / (MEM_FILES * MEM_CTXS);
	for (int f = 0; f < MEM_FILES; f++) {
		for (int c = 0; c < MEM_CTXS; c++)
			vgsched_ctx_destroy(fds[f], ctxs[f][c]);
		close(fds[f]);
	}

	__u32 binding = mem.handle;
	struct drm_vgsched_submit s;

	for (int c = 0; c < MEM_QCTXS; c++) {
		if (!(qctx[c] = vgsched_ctx_create(fd, 8)))
			DIE("memory: CTX_CREATE");
		errno = 0;
		if (busy_job_init(fd, &blocker, qctx[c], MEM_BLOCK_MS, 1, 1, 1, 1) || busy_submit(fd, &blocker))
			DIE("memory: blocker %d: %s", c, errno ? strerror(errno) : "setup failed");
		busy_job_fini(fd, &blocker);
		s = vg_job(qctx[c], &prog, len, &binding, 1, 1, 1, LANES);
		if (vgsched_submit(fd, &s))
			DIE("memory: first job: %s", strerror(errno));
	}
	before = settled_kernel_bytes();
	for (int c = 0; c < MEM_QCTXS; c++)
		for (int j = 0; j < MEM_QJOBS; j++) {
			s = vg_job(qctx[c], &prog, len, &binding, 1, 1, 1, LANES);
			if (vgsched_submit(fd, &s))
				DIE("memory: SUBMIT %d.%d: %s", c, j, strerror(errno));
		}
	after = settled_kernel_bytes();
	job_bytes = (after - before) / (MEM_QCTXS * MEM_QJOBS);
	/*
	 * Every job was still queued at the second reading only if no
	 * blocker had ended (a queueing slower than the blockers' modeled
	 * time would skew the figure): refused rather than printed.
	 */
	for (int c = 0; c < MEM_QCTXS; c++) {
		struct drm_vgsched_ctx_query q;

		if (vgsched_ctx_query(fd, qctx[c], &q))
			DIE("memory: CTX_QUERY: %s", strerror(errno));
		if (q.jobs_completed)
			DIE("memory: a blocker ended before the second reading (%llu jobs of context %d done)",
			    (unsigned long long)q.jobs_completed, c);
	}
	for (int c = 0; c < MEM_QCTXS; c++)
		vgsched_ctx_destroy(fd, qctx[c]);
	vg_buf_destroy(fd, &prog);
	vg_buf_destroy(fd, &mem);
	printf("workload memory: %d idle contexts in %d files; %d jobs queued on %d contexts behind a blocker\n",
	       MEM_FILES * MEM_CTXS, MEM_FILES, MEM_QCTXS * MEM_QJOBS, MEM_QCTXS);
	printf("engine.context_kernel_bytes.idle = %lld\n", idle_bytes);
	printf("engine.job_kernel_bytes.queued = %lld\n", job_bytes);
	close(fd);
	return 0;
}

#define QUEUED_ROUNDS 21
#define QUEUED_CTXS 96
#define CLOSE_FILES 64

/* A one-thread job of @ctx looping @ms modeled ms; its program and buffer in @j. */
static void blocker_job(int fd, struct busy_job *j, __u32 ctx, int ms)
{
	if (busy_job_init(fd, j, ctx, ms, 1, 1, 1, 1) || busy_submit(fd, j))
		DIE("queued: blocker");
}

/*
 * Fills @n files with @per contexts of level 15, each with @jobs trivial
 * jobs over a program and a buffer of the file's own (unmapped, so closing
 * the file frees everything).
 */
static void queue_behind(int *fds, int n, int per, int jobs)
{
	__u64 end[1] = { vg_instr(DRM_VGSCHED_OP_END, 0, 0, 0, 0) };

	for (int f = 0; f < n; f++) {
		struct vg_buf prog, mem;

		if (vg_program(fds[f], end, 1, &prog) || vg_buf_create(fds[f], 4096, &mem))
			DIE("queued: objects");
		munmap(prog.map, prog.size);
		munmap(mem.map, mem.size);
		for (int c = 0; c < per; c++) {
			__u32 ctx = vgsched_ctx_create(fds[f], 15);
			__u32 binding = mem.handle;

			if (!ctx)
				DIE("queued: CTX_CREATE %d.%d", f, c);
			for (int j = 0; j < jobs; j++) {
				struct drm_vgsched_submit s = vg_job(ctx, &prog, 1, &binding, 1, 1, 1, LANES);

				s.binding_access[0] = DRM_VGSCHED_BINDING_READ;
				if (vgsched_submit(fds[f], &s))
					DIE("queued: SUBMIT %d.%d.%d: %s", f, c, j, strerror(errno));
			}
		}
	}
}

#define IDLE_UIDS 4
#define IDLE_UID_BASE 2000
#define IDLE_FILES 16
#define IDLE_CTXS 64
#define IDLE_PER_UID (IDLE_FILES * IDLE_CTXS)

/* The processes holding idle contexts: a pipe each way to each. */
struct idle_holders {
	pid_t pid[IDLE_UIDS];
	int go[IDLE_UIDS];	/* parent's end: closing it lets the holder exit */
};

/*
 * A holder, as @uid: opens IDLE_FILES files of the render node at @path
 * and creates IDLE_CTXS level-8 contexts in each, writes the number made
 * to @report, then holds them until @go reads EOF.
 */
static void idle_holder(uid_t uid, const char *path, int report, int go)
{
	/* Contexts made, and the errno of the first refusal. */
	int fds[IDLE_FILES], rep[2] = { 0, 0 };
	char byte;

	if (setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
		_exit(101);
	for (int f = 0; f < IDLE_FILES && !rep[1]; f++) {
		fds[f] = open(path, O_RDWR | O_CLOEXEC);
		if (fds[f] < 0) {
			rep[1] = errno;
			break;
		}
		for (int c = 0; c < IDLE_CTXS && !rep[1]; c++) {
			if (vgsched_ctx_create(fds[f], 8))
				rep[0]++;
			else
				rep[1] = errno;
		}
	}
	if (write(report, rep, sizeof(rep)) != sizeof(rep))
		_exit(102);
	while (read(go, &byte, 1) > 0)
		;
	_exit(0);
}

/*
 * Starts the holders of IDLE_UIDS x IDLE_PER_UID idle contexts and waits
 * until every one holds all of its own. The render node is made
 * world-accessible for their opens (as a desktop's udev rules make it)
 * and given its mode back after.
 */
static void idle_start(int fd, struct idle_holders *h)
{
	char path[64];
	struct stat st;
	int probe = vgsched_open_render_node_at(path, sizeof(path));

	if (probe < 0 || stat(path, &st) || chmod(path, 0666))
		DIE("idle: render node");
	close(probe);
	for (int u = 0; u < IDLE_UIDS; u++) {
		int report[2], go[2], rep[2];

		if (pipe(report) || pipe(go))
			DIE("idle: pipe");
		fflush(stdout);
		h->pid[u] = fork();
		if (h->pid[u] < 0)
			DIE("idle: fork");
		if (!h->pid[u]) {
			close(fd);
			close(report[0]);
			close(go[1]);
			for (int v = 0; v < u; v++)
				close(h->go[v]);
			idle_holder(IDLE_UID_BASE + 1 + u, path, report[1], go[0]);
		}
		close(report[1]);
		close(go[0]);
		h->go[u] = go[1];
		if (read(report[0], rep, sizeof(rep)) != sizeof(rep) || rep[0] != IDLE_PER_UID)
			DIE("idle: uid %d made %d of %d contexts (%s)", IDLE_UID_BASE + 1 + u,
			    rep[0], IDLE_PER_UID, strerror(rep[1]));
		close(report[0]);
	}
	chmod(path, st.st_mode & 07777);
}

/* Lets the holders go (their files close as they exit) and reaps them. */
static void idle_stop(struct idle_holders *h)
{
	for (int u = 0; u < IDLE_UIDS; u++) {
		int status;

		close(h->go[u]);
		if (waitpid(h->pid[u], &status, 0) != h->pid[u] || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			DIE("idle: holder %d failed", u);
	}
}

/*
 * With @n jobs queued: the longest engine-lock hold while debugfs state
 * is read STATE_READS times (it is read a record at a time, one context's
 * jobs a hold), and the mean time of a read.
 */
#define STATE_READS 4
static void state_reads(int n)
{
	size_t size = 8 << 20;
	char *buf = malloc(size);
	__u64 t;

	if (!buf)
		DIE("queued: no memory for the state file");
	if (vgsched_debugfs_write("lock_hold_max_us", "0"))
		DIE("queued: cannot restart the lock-hold measurement");
	t = vg_now_ns();
	for (int r = 0; r < STATE_READS; r++)
		if (vgsched_debugfs_read("state", buf, size) || strlen(buf) + 1 >= size)
			DIE("queued: cannot read the state file whole");
	printf("  state file: %zu bytes\n", strlen(buf));
	printf("engine.state_read_ms.%d = %.1f\n", n, (vg_now_ns() - t) / 1e6 / STATE_READS);
	printf("engine.lock_hold_max_us.state_read%d = %lld\n", n, debugfs_number("lock_hold_max_us"));
	print_hold_site();
	free(buf);
}

/*
 * The last trivial job's window, from its SUBMIT at @t to WAIT's return at
 * @end: the stage records and slot decisions in it, as lines "+US ..."
 * (informational; at most 40 stage records).
 */
static void queued_timeline(__u64 t, __u64 end)
{
	static struct vg_stage log[1024];
	int n = vgsched_stages(log, 1024), shown = 0;

	printf("  last trivial job, SUBMIT to fence (+%.0f us):\n", (end - t) / 1000.0);
	for (int i = 0; i < n && shown < 40; i++)
		if (log[i].t >= t && log[i].t <= end) {
			printf("  +%8.0f us  ctx %u job %llu %s\n", (log[i].t - t) / 1000.0,
			       log[i].ctx, log[i].job, log[i].event);
			shown++;
		}
	vg_print_slot_records(t, end);
}

static int queued_bench(int fd, const char *mode)
{
	__u64 end[1] = { vg_instr(DRM_VGSCHED_OP_END, 0, 0, 0, 0) };
	double times[QUEUED_ROUNDS];
	struct busy_job blocker;
	struct vg_buf prog, mem;
	struct idle_holders idle;
	int idle_run = !strcmp(mode, "idle4096");
	__u32 low, high;

	/* Before this process maps anything the holders would inherit. */
	if (idle_run)
		idle_start(fd, &idle);
	low = vgsched_ctx_create(fd, 14);
	high = vgsched_ctx_create(fd, 8);
	if (!low || !high || vg_program(fd, end, 1, &prog) || vg_buf_create(fd, 4096, &mem))
		DIE("queued: setup");
	blocker_job(fd, &blocker, low, 50000);
	if (!strcmp(mode, "close")) {
		int fds[CLOSE_FILES];
		__u64 t;

		for (int f = 0; f < CLOSE_FILES; f++) {
			fds[f] = vgsched_open_render_node();
			if (fds[f] < 0)
				DIE("queued: open");
		}
		t = vg_now_ns();
		queue_behind(fds, CLOSE_FILES, 64, 1);
		printf("engine.queue_ms.64x64 = %.1f\n", (vg_now_ns() - t) / 1e6);
		t = vg_now_ns();
		for (int f = 0; f < CLOSE_FILES; f++)
			close(fds[f]);
		printf("workload queued (close): %d files of 64 contexts with a job each\n", CLOSE_FILES);
		printf("engine.close_files_ms.64x64 = %.1f\n", (vg_now_ns() - t) / 1e6);
	} else {
		int n = idle_run ? 0 : atoi(mode), fds[2] = { -1, -1 };
		long long since_load, hold;
		char name[32];
		__u64 queue_start, last_t = 0, last_end = 0;
		struct exec_stats x;

		if (n || (!idle_run && strcmp(mode, "0"))) {
			if (n != 6144)
				DIE("queued: 0, idle4096, 6144 or close");
			for (int f = 0; f < 2; f++)
				if ((fds[f] = vgsched_open_render_node()) < 0)
					DIE("queued: open");
			queue_start = vg_now_ns();
			queue_behind(fds, 2, QUEUED_CTXS / 2, n / QUEUED_CTXS);
			printf("engine.queue_ms.%d = %.1f\n", n, (vg_now_ns() - queue_start) / 1e6);
		}
		/*
		 * Two trivial jobs first (the first pass over new lock chains and
		 * code paths, see the short workload), then the longest hold is
		 * measured again from the first measured job on.
		 */
		for (int r = 0; r < 2; r++) {
			__u32 binding = mem.handle;
			struct drm_vgsched_submit s = vg_job(high, &prog, 1, &binding, 1, 1, 1, LANES);

			s.binding_access[0] = DRM_VGSCHED_BINDING_READ;
			if (vgsched_submit(fd, &s) || wait_ok(fd, high, s.seqno))
				DIE("queued: warm-up job %d", r);
		}
		since_load = debugfs_number("lock_hold_max_us");
		if (vgsched_debugfs_write("lock_hold_max_us", "0"))
			DIE("queued: cannot restart the lock-hold measurement");
		for (int r = 0; r < QUEUED_ROUNDS; r++) {
			__u32 binding = mem.handle;
			struct drm_vgsched_submit s = vg_job(high, &prog, 1, &binding, 1, 1, 1, LANES);

			last_t = vg_now_ns();
			s.binding_access[0] = DRM_VGSCHED_BINDING_READ;
			if (vgsched_submit(fd, &s) || wait_ok(fd, high, s.seqno))
				DIE("queued: trivial job %d", r);
			last_end = vg_now_ns();
			times[r] = (last_end - last_t) / 1000.0;
		}
		qsort(times, QUEUED_ROUNDS, sizeof(times[0]), by_value);
		if (idle_run) {
			snprintf(name, sizeof(name), "idle%d", IDLE_UIDS * IDLE_PER_UID);
			printf("workload queued (%s): %d trivial jobs of a level-8 context, %d idle contexts of %d other uids\n",
			       mode, QUEUED_ROUNDS, IDLE_UIDS * IDLE_PER_UID, IDLE_UIDS);
		} else {
			snprintf(name, sizeof(name), "queued%d", n);
			printf("workload queued (%d): %d trivial jobs of a level-8 context, %d jobs of level 15 queued\n",
			       n, QUEUED_ROUNDS, n);
		}
		printf("  SUBMIT to fence, us, sorted:");
		for (int r = 0; r < QUEUED_ROUNDS; r++)
			printf(" %.0f", times[r]);
		printf("\n");
		printf("engine.trivial_job_us.%s = %.0f\n", name, times[QUEUED_ROUNDS / 2]);
		queued_timeline(last_t, last_end);
		hold = debugfs_number("lock_hold_max_us");
		printf("engine.lock_hold_max_us.%s = %lld\n", name, hold);
		printf("engine.lock_hold_max_since_load_us.%s = %lld\n", name,
		       since_load > hold ? since_load : hold);
		print_hold_site();
		/*
		 * Each timed job preempts the blocker at once: how long the
		 * cut of the blocker's chunk waited for the executor's piece.
		 */
		if (exec_stats(&x))
			DIE("queued: no executor line in state");
		printf("gpu.stop_wait_max_us.%s = %llu\n", name, x.stop_wait_max_us);
		if (n)
			state_reads(n);
		for (int f = 0; f < 2; f++)
			if (fds[f] >= 0)
				close(fds[f]);
	}
	busy_job_fini(fd, &blocker);
	vg_buf_destroy(fd, &prog);
	vg_buf_destroy(fd, &mem);
	close(fd);
	if (idle_run)
		idle_stop(&idle);
	return 0;
}

/* The host-speed reference's loop and constants (rust/vgsched-bench/src/hostref.rs). */
#define REF_STEPS (1ull << 22)
#define REF_SEED 0x9e3779b97f4a7c15ull
#define REF_RUNS 7
#define REF_TABLE 256

static uint64_t ref_chain(uint64_t steps, uint64_t seed)
{
	uint64_t table[REF_TABLE], t = seed, x = seed;

	/* Opaque to the optimiser, as black_box() on the host. */
	__asm__ volatile("" : "+r"(steps), "+r"(x), "+r"(t));
	for (unsigned int i = 0; i < REF_TABLE; i++) {
		t = t * 0x2545f4914f6cdd1dull + i;
		table[i] = t ^ (t >> 31);
	}
	for (uint64_t i = 0; i < steps; i++) {
		x ^= table[x & (REF_TABLE - 1)];
		x ^= x >> 29;
		x *= 0xbf58476d1ce4e5b9ull;
		x ^= x >> 32;
	}
	__asm__ volatile("" : "+r"(x));
	return x;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int ref_bench(void)
{
	uint64_t times[REF_RUNS], result = ref_chain(REF_STEPS, REF_SEED);

	printf("Guest-speed reference: %llu steps of a 64-bit table-and-multiply hash chain, %d runs:",
	       REF_STEPS, REF_RUNS);
	for (int i = 0; i < REF_RUNS; i++) {
		uint64_t t = vg_now_ns();

		if (ref_chain(REF_STEPS, REF_SEED) != result)
			DIE("ref: two results");
		times[i] = vg_now_ns() - t;
		printf(" %.2f", times[i] / 1e6);
	}
	printf(" ms\n  result %#018llx\n", (unsigned long long)result);
	qsort(times, REF_RUNS, sizeof(times[0]), cmp_u64);
	printf("bench.guest_ref_ns = %llu\n", (unsigned long long)times[REF_RUNS / 2]);

	/*
	 * The same on every vCPU at once: a CPU quota is shared by QEMU's
	 * vCPU threads, so one busy vCPU alone may run faster than each of
	 * two busy together.
	 */
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t *all;
	int n = 0;

	if (ncpu < 1 || ncpu > 64)
		DIE("ref: %ld CPUs", ncpu);
	all = mmap(NULL, ncpu * REF_RUNS * sizeof(*all), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (all == MAP_FAILED)
		DIE("ref: mmap");
	fflush(stdout);
	for (long c = 0; c < ncpu; c++) {
		pid_t pid = fork();

		if (pid < 0)
			DIE("ref: fork");
		if (!pid) {
			ref_chain(REF_STEPS, REF_SEED);
			for (int i = 0; i < REF_RUNS; i++) {
				uint64_t t = vg_now_ns();

				if (ref_chain(REF_STEPS, REF_SEED) != result)
					_exit(1);
				all[c * REF_RUNS + i] = vg_now_ns() - t;
			}
			_exit(0);
		}
	}
	for (long c = 0; c < ncpu; c++) {
		int status;

		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			DIE("ref: a copy failed");
	}
	n = ncpu * REF_RUNS;
	qsort(all, n, sizeof(all[0]), cmp_u64);
	printf("  on all %ld vCPUs at once, %d runs each: %.2f to %.2f ms\n", ncpu, REF_RUNS,
	       all[0] / 1e6, all[n - 1] / 1e6);
	printf("bench.guest_ref_ns.all_vcpus = %llu\n", (unsigned long long)all[n / 2]);
	return 0;
}

int main(int argc, char **argv)
{
	const char *w = argc >= 2 ? argv[1] : "";
	unsigned int body = !strcmp(w, "short") ? 2 : !strcmp(w, "long") ? 2000 : 0;
	struct drm_vgsched_gpu_info info;
	struct other_client *oc;
	struct vg_buf prog, mem;
	__u64 words[4096], t0, t1, timeout_cycles;
	unsigned int len;
	int fd, status = 0, child_status;
	long long hold, mean, warm_slow, since_load;
	struct drm_vgsched_ctx_query q0, q1;
	struct exec_stats x0, x1;
	__u32 ctx;
	pid_t pid;

	if (!strcmp(w, "ref"))
		return ref_bench();
	fd = vgsched_open_render_node();
	if (fd < 0)
		DIE("no vgsched render node");
	if (vgsched_query_gpu_info(fd, &info))
		DIE("DEV_QUERY failed");
	if (!strcmp(w, "preempt") && argc == 3)
		return preempt_bench(fd, &info, argv[2]);
	if (!strcmp(w, "pipeline") && argc == 3)
		return pipeline_bench(fd, argv[2]);
	if (!strcmp(w, "hiprio_memory") && argc == 3)
		return hiprio_memory_bench(fd, argv[2]);
	if (!strcmp(w, "power"))
		return power_bench(fd);
	if (!strcmp(w, "memory"))
		return memory_bench(fd, &info);
	if (!strcmp(w, "queued") && argc == 3)
		return queued_bench(fd, argv[2]);
	if (!body)
		DIE("usage: vgsched-bench-guest short|long|preempt at_once|at_point|pipeline MODE|hiprio_memory small|big|power|memory|queued 0|idle4096|6144|close|ref");
	timeout_cycles = (__u64)info.job_timeout_ms * info.clock_khz;
	len = fault_program(words, body, timeout_cycles, &info);
	if (!len)
		DIE("job timeout too short");
	ctx = vgsched_ctx_create(fd, 8);
	if (!ctx || vg_program(fd, words, len, &prog) || vg_buf_create(fd, 4096, &mem))
		DIE("setup failed");
	__u32 binding = mem.handle;
	struct drm_vgsched_submit s = vg_job(ctx, &prog, len, &binding, 1, 1, 1, LANES);

	/*
	 * A warm-up run of the same job first: the kernel's first pass over new
	 * lock chains (lockdep) and fence callbacks costs milliseconds under
	 * TCG, once per module load; holds over 1 ms counted after it are the
	 * engine's own.
	 */
	{
		struct drm_vgsched_submit warm = s;

		if (vgsched_submit(fd, &warm) || vgsched_wait(fd, ctx, warm.seqno, 600 * VG_SECOND_NS, NULL))
			DIE("warm-up run failed");
	}
	warm_slow = slow_holds();
	if (exec_stats(&x0) || vgsched_ctx_query(fd, ctx, &q0))
		DIE("no executor line in state, or CTX_QUERY failed");
	since_load = debugfs_number("lock_hold_max_us");
	if (vgsched_debugfs_write("lock_hold_max_us", "0"))
		DIE("cannot restart the lock-hold measurement");

	oc = mmap(NULL, sizeof(*oc), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (oc == MAP_FAILED)
		DIE("mmap failed");
	memset(oc, 0, sizeof(*oc));
	pid = fork();
	if (pid < 0)
		DIE("fork failed");
	if (pid == 0)
		other_client_loop(oc);
	while (!oc->ready)
		usleep(1000);
	/* Let the other client reach its steady loop first. */
	usleep(50000);

	t0 = vg_now_ns();
	if (vgsched_submit(fd, &s))
		DIE("SUBMIT failed");
	if (vgsched_wait(fd, ctx, s.seqno, 600 * VG_SECOND_NS, &status))
		DIE("WAIT failed");
	t1 = vg_now_ns();
	oc->stop = 1;
	if (waitpid(pid, &child_status, 0) != pid || !WIFEXITED(child_status) ||
	    WEXITSTATUS(child_status) || oc->error)
		DIE("the other client failed");
	hold = debugfs_number("lock_hold_max_us");
	mean = debugfs_number("lock_hold_mean_us");
	if (exec_stats(&x1) || vgsched_ctx_query(fd, ctx, &q1))
		DIE("no executor line in state, or CTX_QUERY failed");

	printf("workload %s: one wave of %d threads, lane %d faults, the others loop %llu of %llu timeout cycles\n",
	       w, LANES, LANES - 1,
	       (unsigned long long)(timeout_cycles - MARGIN_CYCLES), (unsigned long long)timeout_cycles);
	printf("  program %u instructions (loop body %u), job status %d (%s)\n", len, body, status,
	       status == -EFAULT ? "-EFAULT, as meant" : "unexpected");
	printf("engine.lock_hold_max_us.%s = %lld\n", w, hold);
	printf("engine.lock_hold_max_since_load_us.%s = %lld\n", w, since_load > hold ? since_load : hold);
	printf("engine.lock_hold_mean_us.%s = %lld\n", w, mean);
	if (warm_slow >= 0 && slow_holds() >= warm_slow)
		printf("engine.lock_holds_over_1ms_after_warmup.%s = %lld\n", w, slow_holds() - warm_slow);
	{
		long long slow, holds;

		print_hold_site();
		if (!hold_counts(&holds, &slow)) {
			printf("engine.lock_holds_over_1ms.%s = %lld\n", w, slow);
			printf("engine.lock_holds.%s = %lld\n", w, holds);
		}
	}
	/*
	 * The modeled hardware's cost apart from the scheduler's: the wave
	 * executor's longest piece (its longest stretch of interpretation,
	 * under no lock the scheduler takes; over the whole load, warm-up
	 * included) and its CPU time per modeled millisecond of the job.
	 */
	printf("gpu.piece_max_us.%s = %llu\n", w, x1.piece_max_us);
	printf("gpu.interpret_us_per_modeled_ms.%s = %.1f\n", w,
	       q1.runtime_ns > q0.runtime_ns ?
		       (x1.busy_us - x0.busy_us) / ((q1.runtime_ns - q0.runtime_ns) / 1e6) : 0.0);
	printf("gpu.instructions.%s = %llu\n", w, x1.instructions - x0.instructions);
	printf("engine.other_client_ioctl_max_us.%s = %llu\n", w, (unsigned long long)(oc->max_ns / 1000));
	printf("engine.other_client_ioctls.%s = %llu\n", w, (unsigned long long)oc->ioctls);
	printf("engine.fault_job_wall_ms.%s = %llu\n", w, (unsigned long long)((t1 - t0) / 1000000));
	vg_buf_destroy(fd, &prog);
	vg_buf_destroy(fd, &mem);
	vgsched_ctx_destroy(fd, ctx);
	close(fd);
	if (status != -EFAULT || hold < 0)
		DIE("job status %d (want %d), lock_hold_max_us %lld", status, -EFAULT, hold);
	return 0;
}
