// SPDX-License-Identifier: GPL-2.0
/*
 * Projects in configfs (/sys/kernel/config/vgsched/NAME/UID/):
 *  - budgets and requests are numbers; non-numbers, negative and
 *    overflowing numbers and unknown roles are EINVAL and change nothing;
 *  - a request that does not fit beside the other members' in the budget
 *    is EDQUOT, and so is a budget lowered below the requests;
 *  - a uid is a member of one project at most (EEXIST), a member's name
 *    is its uid (EINVAL otherwise), a project with members cannot be
 *    removed, and the module cannot be unloaded while projects exist;
 *  - what a member's files create (contexts, buffer-object bytes, dumb
 *    buffers of the primary node, the tiles of unfinished jobs) is charged to it, EDQUOT past its request, and given back when the
 *    context or object goes, when the file is closed and when the process
 *    is killed; root is not limited;
 *  - a uid in no project holds at most the default bound (the module
 *    parameters default_contexts and default_bo_mib), counted across all
 *    its files, EDQUOT past it, given back as things go; the parameters
 *    refuse 0 and values past their limits with EINVAL;
 *  - past the device's pool (pool_contexts), creation fails with ENOSPC
 *    even within the member's request, or with DRM_VGSCHED_CREATE_WAIT
 *    waits until another member gives something back;
 *  - the device's access code: generated in configfs and shown
 *    once, without it SUBMIT is EACCES, a wrong code EACCES, failed
 *    attempts limited per user (EAGAIN, from every file of the uid), and a
 *    revoked code stops new jobs while
 *    the running one completes; root needs none.
 * Members are real uids: forked children that setresuid() to them (which
 * drops every capability).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vgsched_programs.h"
#include "vgsched_projects.h"

/* Waits up to 2 s for @key of @path's usage to be @want; the last value. */
static long long usage_settles(const char *path, const char *key, long long want)
{
	long long v = -1;

	for (int i = 0; i < 200; i++) {
		v = cfs_usage(path, key);
		if (v == want)
			break;
		usleep(10000);
	}
	return v;
}

/*
 * Project alpha with members 1001 and 1002: a budget of @budget contexts,
 * each member requesting @request; 0, or -errno of the first step that failed.
 */
static int alpha_with_1001_and_1002(const char *budget, const char *request)
{
	return cfs_mkdir("alpha") ?: cfs_write("alpha/budget_contexts", budget) ?:
	       cfs_mkdir("alpha/1001") ?: cfs_mkdir("alpha/1002") ?:
	       cfs_write("alpha/1001/request_contexts", request) ?:
	       cfs_write("alpha/1002/request_contexts", request);
}

/*
 * Loads the module again with @params and lets every uid open its render
 * node (the tests fork children of other uids); 0, or -1 on a failure.
 */
static int reload_for_everyone(const char *params)
{
	char path[256];
	int fd;

	if (vgsched_module_unload() || vgsched_module_load(params))
		return -1;
	fd = vgsched_open_render_node_at(path, sizeof(path));
	if (fd < 0)
		return -1;
	close(fd);
	return chmod(path, 0666) ? -1 : 0;
}

FIXTURE(projects) {
	/* Children a test left holding things when it failed: killed first. */
	pid_t kids[20];
	int nkids;
};

FIXTURE_SETUP(projects)
{
	char path[64];
	int fd;

	/* Members open the render node as themselves. */
	fd = vgsched_open_render_node_at(path, sizeof(path));
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, chmod(path, 0666));
	close(fd);
	ASSERT_EQ(0, access(CFS, F_OK)) TH_LOG("no configfs subsystem " CFS);
}

FIXTURE_TEARDOWN(projects)
{
	static const char *const uids[] = { "1001", "1002", "1003" };

	/* Whatever a failed test left: no children, no code, no projects, the default module. */
	for (int i = 0; i < self->nkids; i++) {
		if (self->kids[i] <= 0)
			continue;
		kill(self->kids[i], SIGKILL);
		waitpid(self->kids[i], NULL, 0);
	}
	cfs_write("device_code", "open");
	remove_project("alpha", uids, 3);
	remove_project("beta", uids, 3);
	EXPECT_EQ(0, vgsched_module_unload_wait());
	EXPECT_EQ(0, vgsched_module_load(""));
}

/* The state letter of process @pid (R, S, D, ...), or 0. */
static char proc_state(pid_t pid)
{
	char path[64], buf[256], *close_paren;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	close_paren = strrchr(buf, ')');
	return close_paren && close_paren[1] == ' ' ? close_paren[2] : 0;
}

TEST_F(projects, budgets_requests_and_bad_input)
{
	static const char *const bad[] = { "abc", "-1", "18446744073709551616", "0x", "1 2", "12a" };

	ASSERT_EQ(0, cfs_mkdir("alpha"));
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, cfs_write("alpha/budget_contexts", bad[i])) TH_LOG("'%s'", bad[i]);
	}
	EXPECT_EQ(0, cfs_number("alpha/budget_contexts")) TH_LOG("a refused write changed it");
	ASSERT_EQ(0, cfs_write("alpha/budget_contexts", "10\n"));
	ASSERT_EQ(0, cfs_write("alpha/budget_bo_bytes", "0x100000"));
	EXPECT_EQ(10, cfs_number("alpha/budget_contexts"));
	EXPECT_EQ(1 << 20, cfs_number("alpha/budget_bo_bytes"));

	/* Members are uids. */
	EXPECT_EQ(-EINVAL, cfs_mkdir("alpha/bob"));
	EXPECT_EQ(-EINVAL, cfs_mkdir("alpha/4294967296"));
	ASSERT_EQ(0, cfs_mkdir("alpha/1001"));
	EXPECT_EQ(-EINVAL, cfs_write("alpha/1001/role", "admin"));
	char role[16] = "";
	ASSERT_EQ(0, cfs_read("alpha/1001/role", role, sizeof(role)));
	EXPECT_STREQ("member\n", role);
	ASSERT_EQ(0, cfs_write("alpha/1001/role", "owner\n"));
	ASSERT_EQ(0, cfs_read("alpha/1001/role", role, sizeof(role)));
	EXPECT_STREQ("owner\n", role);

	/* Requests within the budget, beside the others'. */
	EXPECT_EQ(-EDQUOT, cfs_write("alpha/1001/request_contexts", "11"));
	ASSERT_EQ(0, cfs_write("alpha/1001/request_contexts", "6"));
	ASSERT_EQ(0, cfs_mkdir("alpha/1002"));
	EXPECT_EQ(-EDQUOT, cfs_write("alpha/1002/request_contexts", "5"));
	EXPECT_EQ(0, cfs_number("alpha/1002/request_contexts")) TH_LOG("a refused request changed it");
	ASSERT_EQ(0, cfs_write("alpha/1002/request_contexts", "4"));
	EXPECT_EQ(10, cfs_usage("alpha/requested", "contexts"));
	EXPECT_EQ(-EDQUOT, cfs_write("alpha/1002/request_bo_bytes", "1048577"));
	EXPECT_EQ(-EINVAL, cfs_write("alpha/1002/request_bo_bytes", "-5"));

	/* The budget cannot fall below the requests. */
	EXPECT_EQ(-EDQUOT, cfs_write("alpha/budget_contexts", "9"));
	EXPECT_EQ(10, cfs_number("alpha/budget_contexts"));
	ASSERT_EQ(0, cfs_write("alpha/1001/request_contexts", "5"));
	EXPECT_EQ(0, cfs_write("alpha/budget_contexts", "9"));

	/* One project per uid; projects with members stay; so does the module. */
	ASSERT_EQ(0, cfs_mkdir("beta"));
	EXPECT_EQ(-EEXIST, cfs_mkdir("beta/1001"));
	EXPECT_EQ(-ENOTEMPTY, cfs_rmdir("alpha"));
	EXPECT_NE(0, vgsched_module_unload()) TH_LOG("unloaded with projects present");
	EXPECT_EQ(0, access(CFS "/alpha/1001", F_OK));
}

/* What a member's child process does; its exit status says how it went. */
struct member_run {
	int contexts_ok, bo_ok;		/* how many succeed before EDQUOT */
	int hold_fd;			/* write end: say "ready", then wait to be killed */
};

static int member_creates(void *arg)
{
	struct member_run *r = arg;
	int fd = vgsched_open_render_node(), n = 0;
	__u32 ctx[8];

	if (fd < 0)
		return 101;
	while (n < 8 && (ctx[n] = vgsched_ctx_create(fd, 8)))
		n++;
	if (n != r->contexts_ok || errno != EDQUOT)
		return 102;
	for (int i = 0; i < r->bo_ok; i++)
		if (!vgsched_bo_create(fd, 256 << 10))
			return 103;
	if (vgsched_bo_create(fd, 4096) || errno != EDQUOT)
		return 104;
	/* Destroying one gives it back: another can be made. */
	if (n && (vgsched_ctx_destroy(fd, ctx[0]) || !vgsched_ctx_create(fd, 8)))
		return 105;
	if (r->hold_fd >= 0) {
		if (write(r->hold_fd, "r", 1) != 1)
			return 106;
		pause();
	}
	close(fd);
	return 0;
}

static int unlimited_creates(void *arg)
{
	int fd = vgsched_open_render_node();

	if (fd < 0)
		return 101;
	for (int i = 0; i < 8; i++)
		if (!vgsched_ctx_create(fd, 8))
			return 102;
	if (!vgsched_bo_create(fd, 4 << 20))
		return 103;
	close(fd);
	return 0;
}

/*
 * A uid in no project under a default bound of 3 contexts and 2 MiB: its
 * two files share it; what one gives back, the other can take.
 */
static int bounded_creates(void *arg)
{
	int a = vgsched_open_render_node(), b = vgsched_open_render_node();
	__u32 ctx[3], bo;

	if (a < 0 || b < 0)
		return 101;
	ctx[0] = vgsched_ctx_create(a, 8);
	ctx[1] = vgsched_ctx_create(a, 8);
	ctx[2] = vgsched_ctx_create(b, 8);
	if (!ctx[0] || !ctx[1] || !ctx[2])
		return 102;
	if (vgsched_ctx_create(b, 8) || errno != EDQUOT)
		return 103;
	if (vgsched_ctx_create(a, 8) || errno != EDQUOT)
		return 104;
	bo = vgsched_bo_create(a, 1 << 20);
	if (!bo || !vgsched_bo_create(b, 1 << 20))
		return 105;
	if (vgsched_bo_create(b, 4096) || errno != EDQUOT)
		return 106;
	/* Given back by one file, taken by the other. */
	if (vgsched_ctx_destroy(a, ctx[0]) || !vgsched_ctx_create(b, 8))
		return 107;
	if (vgsched_bo_close(a, bo) || !vgsched_bo_create(b, 1 << 20))
		return 108;
	/* Closing a file gives back all it held. */
	close(b);
	if (!vgsched_ctx_create(a, 8) || !vgsched_bo_create(a, 1 << 20))
		return 109;
	close(a);
	return 0;
}

TEST_F(projects, files_are_charged_to_their_member)
{
	struct member_run run = { .contexts_ok = 2, .bo_ok = 2, .hold_fd = -1 };
	int pipefd[2], status;
	char c;
	pid_t pid;

	ASSERT_EQ(0, cfs_mkdir("alpha"));
	ASSERT_EQ(0, cfs_write("alpha/budget_contexts", "4"));
	ASSERT_EQ(0, cfs_write("alpha/budget_bo_bytes", "1048576"));
	ASSERT_EQ(0, cfs_mkdir("alpha/1001"));
	ASSERT_EQ(0, cfs_write("alpha/1001/request_contexts", "2"));
	ASSERT_EQ(0, cfs_write("alpha/1001/request_bo_bytes", "524288"));

	/* Two contexts and 512 KiB, then EDQUOT; all back once the file is closed. */
	EXPECT_EQ(0, as_uid(1001, member_creates, &run));
	EXPECT_EQ(0, usage_settles("alpha/1001/usage", "contexts", 0));
	EXPECT_EQ(0, usage_settles("alpha/1001/usage", "bo_bytes", 0));

	/* Killed while holding them: all back too. */
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		close(pipefd[0]);
		run.hold_fd = pipefd[1];
		if (setresgid(1001, 1001, 1001) || setresuid(1001, 1001, 1001))
			_exit(100);
		_exit(member_creates(&run));
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1)) TH_LOG("the member's child failed early");
	EXPECT_EQ(2, cfs_usage("alpha/1001/usage", "contexts"));
	EXPECT_EQ(512 << 10, cfs_usage("alpha/1001/usage", "bo_bytes"));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	close(pipefd[0]);
	EXPECT_EQ(0, usage_settles("alpha/1001/usage", "contexts", 0));
	EXPECT_EQ(0, usage_settles("alpha/1001/usage", "bo_bytes", 0));

	/* Root is not limited; a uid in no project is, by the default bound. */
	EXPECT_EQ(0, unlimited_creates(NULL));
	EXPECT_EQ(0, as_uid(1003, unlimited_creates, NULL));
	EXPECT_EQ(-EINVAL, vgsched_param_write("default_contexts", "0"));
	EXPECT_EQ(-EINVAL, vgsched_param_write("default_contexts", "16385"));
	EXPECT_EQ(-EINVAL, vgsched_param_write("default_bo_mib", "0"));
	EXPECT_EQ(1024, vgsched_param_read("default_contexts"));
	EXPECT_EQ(1024, vgsched_param_read("default_bo_mib"));
	ASSERT_EQ(0, vgsched_param_write("default_contexts", "3"));
	ASSERT_EQ(0, vgsched_param_write("default_bo_mib", "2"));
	EXPECT_EQ(0, as_uid(1003, bounded_creates, NULL));
	/* Everything came back: the whole bound again, and root still unbounded. */
	EXPECT_EQ(0, as_uid(1003, bounded_creates, NULL));
	EXPECT_EQ(0, unlimited_creates(NULL));
}

/* A member with a request of one tile: one unfinished job at a time. */
static int tiles_one_at_a_time(void *arg)
{
	int fd = vgsched_open_render_node(), ret;
	struct busy_job j;
	__u32 ctx;

	if (fd < 0 || !(ctx = vgsched_ctx_create(fd, 8)))
		return 101;
	if (busy_job_init(fd, &j, ctx, 1000, 1, 1, 4, 1) || busy_submit(fd, &j))
		return 102;
	if (busy_submit(fd, &j) != -EDQUOT)
		return 103;
	if (wait_ok(fd, ctx, 1))
		return 104;
	/* Given back once the finished job is dropped. */
	for (int i = 0; i < 200; i++) {
		ret = busy_submit(fd, &j);
		if (ret != -EDQUOT)
			break;
		usleep(10000);
	}
	if (ret || wait_ok(fd, ctx, j.s.seqno))
		return 105;
	busy_job_fini(fd, &j);
	close(fd);
	return 0;
}

/*
 * A member at its request_bo_bytes, making dumb buffers on the primary
 * node: they count as buffer objects of the size MODE_CREATE_DUMB reports.
 */
static int dumb_creates(void *arg)
{
	int fd = vgsched_open_render_node(), card;
	struct drm_mode_create_dumb c = { .width = 64, .height = 64, .bpp = 32 };
	struct drm_mode_destroy_dumb d = { 0 };
	__u32 bo;

	(void)arg;
	if (fd < 0)
		return 101;
	card = vg_open_primary_of(fd);
	if (card < 0)
		return 102;
	/* At the request with an object: no dumb buffer, however small. */
	bo = vgsched_bo_create(fd, 1 << 20);
	if (!bo)
		return 103;
	if (!ioctl(card, DRM_IOCTL_MODE_CREATE_DUMB, &c) || errno != EDQUOT)
		return 104;
	/* The object given back, dumb buffers fill the request in its place. */
	if (vgsched_bo_close(fd, bo))
		return 105;
	c.width = 256;
	c.height = 512;		/* 512 KiB at 32 bpp */
	if (ioctl(card, DRM_IOCTL_MODE_CREATE_DUMB, &c) || c.size != 512 << 10)
		return 106;
	d.handle = c.handle;
	if (ioctl(card, DRM_IOCTL_MODE_CREATE_DUMB, &c))
		return 107;
	/* Two of 512 KiB hold the whole request. */
	if (vgsched_bo_create(fd, 4096) || errno != EDQUOT)
		return 108;
	if (!ioctl(card, DRM_IOCTL_MODE_CREATE_DUMB, &c) || errno != EDQUOT)
		return 109;
	/* Destroying one gives its bytes back. */
	if (ioctl(card, DRM_IOCTL_MODE_DESTROY_DUMB, &d) || !vgsched_bo_create(fd, 512 << 10))
		return 110;
	close(card);
	close(fd);
	return 0;
}

TEST_F(projects, dumb_buffers_are_charged_like_objects)
{
	int fd = vgsched_open_render_node(), card;

	ASSERT_GE(fd, 0);
	card = vg_open_primary_of(fd);
	ASSERT_GE(card, 0) TH_LOG("no primary node next to the render node");
	/*
	 * The member opens the primary node as itself, as a seat user would;
	 * the teardown's module reload makes the node anew, with its mode.
	 */
	ASSERT_EQ(0, fchmod(card, 0666));
	close(card);
	close(fd);
	ASSERT_EQ(0, cfs_mkdir("alpha"));
	ASSERT_EQ(0, cfs_write("alpha/budget_bo_bytes", "1048576"));
	ASSERT_EQ(0, cfs_mkdir("alpha/1001"));
	ASSERT_EQ(0, cfs_write("alpha/1001/request_bo_bytes", "1048576"));
	EXPECT_EQ(0, as_uid(1001, dumb_creates, NULL));
	/* Closing the files gave back the dumb buffers' bytes too. */
	EXPECT_EQ(0, usage_settles("alpha/1001/usage", "bo_bytes", 0));
}

TEST_F(projects, unfinished_jobs_charge_their_tiles)
{
	ASSERT_EQ(0, cfs_mkdir("alpha"));
	ASSERT_EQ(0, cfs_write("alpha/budget_contexts", "2"));
	ASSERT_EQ(0, cfs_write("alpha/budget_bo_bytes", "1048576"));
	ASSERT_EQ(0, cfs_write("alpha/budget_tiles", "1"));
	ASSERT_EQ(0, cfs_mkdir("alpha/1001"));
	ASSERT_EQ(0, cfs_write("alpha/1001/request_contexts", "1"));
	ASSERT_EQ(0, cfs_write("alpha/1001/request_bo_bytes", "1048576"));
	ASSERT_EQ(0, cfs_write("alpha/1001/request_tiles", "1"));
	EXPECT_EQ(0, as_uid(1001, tiles_one_at_a_time, NULL));
	EXPECT_EQ(0, usage_settles("alpha/1001/usage", "tiles", 0));
}

/* Creates a context with DRM_VGSCHED_CREATE_WAIT; its id, or 0 with errno. */
static __u32 ctx_create_waiting(int fd)
{
	struct drm_vgsched_ctx_create c = { .priority = 8, .flags = DRM_VGSCHED_CREATE_WAIT };

	return ioctl(fd, DRM_IOCTL_VGSCHED_CTX_CREATE, &c) ? 0 : c.ctx_id;
}

/*
 * A device pool of 3 contexts under a budget of 4: uid 1001 holds 2, so
 * uid 1002, within its own request of 2, gets one and then ENOSPC; with
 * DRM_VGSCHED_CREATE_WAIT it waits until 1001 gives one back.
 */
TEST_F(projects, the_pool_refuses_or_waits)
{
	int to_a[2], from_a[2], to_b[2], from_b[2], status, fd;
	char c, path[64];
	pid_t a, b;

	ASSERT_EQ(0, vgsched_module_unload());
	ASSERT_EQ(0, vgsched_module_load("pool_contexts=3"));
	fd = vgsched_open_render_node_at(path, sizeof(path));
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, chmod(path, 0666));
	close(fd);
	ASSERT_EQ(0, alpha_with_1001_and_1002("4", "2"));
	ASSERT_EQ(0, pipe(to_a));
	ASSERT_EQ(0, pipe(from_a));
	ASSERT_EQ(0, pipe(to_b));
	ASSERT_EQ(0, pipe(from_b));
	a = fork();
	ASSERT_GE(a, 0);
	if (!a) {
		int fd;
		__u32 x, y;

		if (setresgid(1001, 1001, 1001) || setresuid(1001, 1001, 1001))
			_exit(100);
		fd = vgsched_open_render_node();
		x = vgsched_ctx_create(fd, 8);
		y = vgsched_ctx_create(fd, 8);
		if (!x || !y || write(from_a[1], "h", 1) != 1)
			_exit(101);
		/* Told to, gives one back. */
		if (read(to_a[0], &c, 1) != 1 || vgsched_ctx_destroy(fd, x))
			_exit(102);
		if (read(to_a[0], &c, 1) != 1)
			_exit(103);
		_exit(0);
	}
	ASSERT_EQ(1, read(from_a[0], &c, 1));
	b = fork();
	ASSERT_GE(b, 0);
	if (!b) {
		int fd;

		if (setresgid(1002, 1002, 1002) || setresuid(1002, 1002, 1002))
			_exit(100);
		fd = vgsched_open_render_node();
		if (!vgsched_ctx_create(fd, 8))
			_exit(101);
		/* Within its request, but the pool is held by 1001. */
		if (vgsched_ctx_create(fd, 8) || errno != ENOSPC)
			_exit(102);
		if (write(from_b[1], "w", 1) != 1)
			_exit(103);
		if (!ctx_create_waiting(fd))
			_exit(104);
		/* Holds both until the parent has looked. */
		if (write(from_b[1], "d", 1) != 1 || read(to_b[0], &c, 1) != 1)
			_exit(105);
		_exit(0);
	}
	ASSERT_EQ(1, read(from_b[0], &c, 1));
	EXPECT_EQ('w', c);
	/* It waits, asleep in the ioctl: nothing comes while 1001 holds its two. */
	for (int i = 0; i < 500 && proc_state(b) != 'S'; i++)
		usleep(10000);
	usleep(100000);
	EXPECT_EQ('S', proc_state(b));
	EXPECT_EQ(2, cfs_usage("alpha/1001/usage", "contexts"));
	EXPECT_EQ(1, cfs_usage("alpha/1002/usage", "contexts")) TH_LOG("the waiting creation did not wait");
	ASSERT_EQ(1, write(to_a[1], "g", 1));
	ASSERT_EQ(1, read(from_b[0], &c, 1));
	EXPECT_EQ('d', c);
	EXPECT_EQ(2, cfs_usage("alpha/1002/usage", "contexts"));
	ASSERT_EQ(1, write(to_b[1], "q", 1));
	ASSERT_EQ(1, write(to_a[1], "q", 1));
	ASSERT_EQ(a, waitpid(a, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(b, waitpid(b, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* Reaps child @pid: its exit status, or -1. */
static int reap(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* DRM_IOCTL_VGSCHED_START with @flags; 0 or -errno. */
static int start_env(int fd, __u32 flags)
{
	struct drm_vgsched_start st = { .flags = flags };

	return ioctl(fd, DRM_IOCTL_VGSCHED_START, &st) ? -errno : 0;
}

/* Says @c to the parent and waits for its go; 0 or -1. */
static int step(int out, int in, char c)
{
	return write(out, &c, 1) == 1 && read(in, &c, 1) == 1 ? 0 : -1;
}

/*
 * uid 1001, target 3 contexts, 1 MiB of objects and 2 tiles: starts (a second START on the file is EALREADY, bad flags
 * EINVAL), then, once 1002 has filled the rest of the pool, creates its
 * three contexts (never ENOSPC) and a fourth (EDQUOT); it exits when told,
 * which stops its environment.
 */
static int started_member(void *arg)
{
	int *p = arg, fd = vgsched_open_render_node();
	struct drm_vgsched_start bad = { .flags = 2 };

	if (fd < 0 || start_env(fd, 0))
		return 101;
	if (start_env(fd, 0) != -EALREADY || !ioctl(fd, DRM_IOCTL_VGSCHED_START, &bad) ||
	    errno != EINVAL)
		return 102;
	if (step(p[1], p[0], 's'))
		return 103;
	for (int i = 0; i < 3; i++)
		if (!vgsched_ctx_create(fd, 8))
			return 104;
	if (vgsched_ctx_create(fd, 8) || errno != EDQUOT)
		return 105;
	if (step(p[1], p[0], 'c'))
		return 106;
	close(fd);
	return 0;
}

/*
 * uid 1002, target 3 contexts, not started: takes the pool's last context
 * allocation by allocation, then ENOSPC; its START is ENOSPC; with the
 * wait flag it sleeps until 1001's environment stops, then holds its
 * whole target: two more contexts never fail.
 */
static int waiting_member(void *arg)
{
	int *p = arg, fd = vgsched_open_render_node();

	if (fd < 0 || !vgsched_ctx_create(fd, 8))
		return 101;
	if (vgsched_ctx_create(fd, 8) || errno != ENOSPC)
		return 102;
	if (start_env(fd, 0) != -ENOSPC)
		return 103;
	if (step(p[1], p[0], 'f'))
		return 104;
	if (start_env(fd, DRM_VGSCHED_START_WAIT))
		return 105;
	for (int i = 0; i < 2; i++)
		if (!vgsched_ctx_create(fd, 8))
			return 106;
	if (step(p[1], p[0], 'w'))
		return 107;
	close(fd);
	return 0;
}

/* uid 1003, whose 5 contexts the pool's 4 could never hold: ENOSPC at once, even waiting. */
static int never_fits(void *arg)
{
	int fd = vgsched_open_render_node();

	if (fd < 0)
		return 101;
	return start_env(fd, DRM_VGSCHED_START_WAIT) == -ENOSPC ? 0 : 102;
}

/* A uid in no project has nothing to start. */
static int no_project(void *arg)
{
	int fd = vgsched_open_render_node();

	return fd >= 0 && start_env(fd, 0) == -ENOENT ? 0 : 101;
}

/*
 * Admission of a member's whole request at start (pool_contexts=4, one
 * node of two tiles): a member's target is the project's start parameters
 * plus its request; START reserves all of it from the pool at once, or
 * nothing; once started, the member's creations within it never fail for
 * want of pool, while a member that did not start is refused by the full
 * pool allocation by allocation, and its own START waits until the first
 * environment stops. Start parameters that would take the targets past
 * the budget are EDQUOT.
 */
TEST_F(projects, a_started_member_holds_its_whole_request)
{
	int a_io[2], b_io[2], to_a, from_a, to_b, from_b, fd;
	char c, path[64], buf[256];
	pid_t a, b;

	ASSERT_EQ(0, vgsched_module_unload());
	ASSERT_EQ(0, vgsched_module_load("pool_contexts=4 modules=4 nodes=1 tiles_per_node=2"));
	fd = vgsched_open_render_node_at(path, sizeof(path));
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, chmod(path, 0666));
	/* Root has nothing to start; bad input is EINVAL. */
	EXPECT_EQ(0, start_env(fd, 0));
	close(fd);
	EXPECT_EQ(0, as_uid(1004, no_project, NULL));
	ASSERT_EQ(0, cfs_mkdir("alpha"));
	ASSERT_EQ(0, cfs_write("alpha/budget_contexts", "12"));
	ASSERT_EQ(0, cfs_write("alpha/budget_bo_bytes", "4194304"));
	ASSERT_EQ(0, cfs_write("alpha/budget_tiles", "5"));
	/* A target is the request: no numeric start parameters are added. */
	EXPECT_EQ(-ENOENT, cfs_write("alpha/start_bo_bytes", "65536"));
	ASSERT_EQ(0, cfs_mkdir("alpha/1001"));
	ASSERT_EQ(0, cfs_mkdir("alpha/1002"));
	ASSERT_EQ(0, cfs_mkdir("alpha/1003"));
	ASSERT_EQ(0, cfs_write("alpha/1001/request_contexts", "3"));
	ASSERT_EQ(0, cfs_write("alpha/1001/request_bo_bytes", "1048576"));
	ASSERT_EQ(0, cfs_write("alpha/1001/request_tiles", "2"));
	ASSERT_EQ(0, cfs_write("alpha/1002/request_contexts", "3"));
	ASSERT_EQ(0, cfs_write("alpha/1003/request_contexts", "5"));
	ASSERT_EQ(0, cfs_write("alpha/1003/request_tiles", "3"));
	/* The targets: 11 contexts, 1 MiB, 5 tiles, within the budget. */
	ASSERT_EQ(0, cfs_read("alpha/requested", buf, sizeof(buf)));
	EXPECT_STREQ("contexts 11\nbo_bytes 1048576\ntiles 5\nshared_bytes 0\n", buf);
	/* A request past what the others leave of the budget: 3 + 3 + 7 > 12. */
	EXPECT_EQ(-EDQUOT, cfs_write("alpha/1003/request_contexts", "7"));
	EXPECT_EQ(5, cfs_number("alpha/1003/request_contexts"));
	EXPECT_EQ(0, as_uid(1003, never_fits, NULL));

	a = fork_talking(1001, started_member, a_io, &a_io[0], &a_io[1], &to_a, &from_a);
	ASSERT_GE(a, 0);
	ASSERT_EQ(1, read(from_a, &c, 1));
	ASSERT_EQ('s', c);
	ASSERT_EQ(0, cfs_read("alpha/1001/reserved", buf, sizeof(buf)));
	EXPECT_STREQ("contexts 3\nbo_bytes 1048576\ntiles 2\nshared_bytes 0\n", buf);
	EXPECT_EQ(0, cfs_usage("alpha/1001/usage", "contexts")) TH_LOG("reserved, not held");

	b = fork_talking(1002, waiting_member, b_io, &b_io[0], &b_io[1], &to_b, &from_b);
	ASSERT_GE(b, 0);
	ASSERT_EQ(1, read(from_b, &c, 1));
	ASSERT_EQ('f', c) TH_LOG("1002 could not fill the pool as expected");
	ASSERT_EQ(0, cfs_read("alpha/1002/reserved", buf, sizeof(buf)));
	EXPECT_STREQ("contexts 0\nbo_bytes 0\ntiles 0\nshared_bytes 0\n", buf);
	/* The pool is full (3 reserved + 1 held): 1001 creates its three anyway. */
	ASSERT_EQ(1, write(to_a, "g", 1));
	ASSERT_EQ(1, read(from_a, &c, 1));
	ASSERT_EQ('c', c);
	EXPECT_EQ(3, cfs_usage("alpha/1001/usage", "contexts"));
	/* 1002's waiting start sleeps while 1001's environment lasts. */
	ASSERT_EQ(1, write(to_b, "g", 1));
	for (int i = 0; i < 500 && proc_state(b) != 'S'; i++)
		usleep(10000);
	usleep(100000);
	EXPECT_EQ('S', proc_state(b));
	EXPECT_EQ(0, cfs_usage("alpha/1002/reserved", "contexts"));
	ASSERT_EQ(1, write(to_a, "q", 1));
	ASSERT_EQ(1, read(from_b, &c, 1));
	ASSERT_EQ('w', c) TH_LOG("1002 did not start once 1001 stopped");
	ASSERT_EQ(0, cfs_read("alpha/1002/reserved", buf, sizeof(buf)));
	EXPECT_STREQ("contexts 3\nbo_bytes 0\ntiles 0\nshared_bytes 0\n", buf);
	EXPECT_EQ(3, cfs_usage("alpha/1002/usage", "contexts"));
	ASSERT_EQ(1, write(to_b, "q", 1));
	EXPECT_EQ(0, reap(a));
	EXPECT_EQ(0, reap(b));
	/* Everything given back: nothing reserved, nothing held. */
	EXPECT_EQ(0, usage_settles("alpha/1002/reserved", "contexts", 0));
	EXPECT_EQ(0, usage_settles("alpha/1001/usage", "contexts", 0));
}

/* DRM_IOCTL_VGSCHED_AUTHORIZE with @code; 0 or -errno. */
static int authorize(int fd, const __u8 *code, __u32 provider)
{
	struct drm_vgsched_authorize a = { .provider = provider };

	memcpy(a.code, code, sizeof(a.code));
	return ioctl(fd, DRM_IOCTL_VGSCHED_AUTHORIZE, &a) ? -errno : 0;
}

struct auth_run {
	__u8 code[DRM_VGSCHED_CODE_BYTES];
	int to_child, from_child;
};

/* A uid in no project, on a device with a code; exit status says where it failed. */
static int authorized_work(void *arg)
{
	struct auth_run *r = arg;
	struct drm_vgsched_ctx_query q;
	__u8 wrong[DRM_VGSCHED_CODE_BYTES];
	int fd = vgsched_open_render_node();
	struct busy_job j, k;
	__u32 ctx;

	if (fd < 0 || !(ctx = vgsched_ctx_create(fd, 8)))
		return 101;
	if (busy_job_init(fd, &j, ctx, 1500, 1, 1, 4, 1) || busy_job_init(fd, &k, ctx, 1, 1, 1, 4, 1))
		return 102;
	if (busy_submit(fd, &j) != -EACCES)
		return 103;
	memcpy(wrong, r->code, sizeof(wrong));
	wrong[7] ^= 1;
	for (int i = 0; i < DRM_VGSCHED_AUTH_BURST; i++)
		if (authorize(fd, wrong, 0) != -EACCES)
			return 104;
	/* Limited: even the right code is not looked at now, from any file of the user. */
	int other = vgsched_open_render_node();

	if (authorize(fd, r->code, 0) != -EAGAIN || other < 0 ||
	    authorize(other, r->code, 0) != -EAGAIN)
		return 105;
	close(other);
	usleep(1100000);
	if (authorize(fd, r->code, 2) != -EINVAL || authorize(fd, r->code, 0))
		return 106;
	if (busy_submit(fd, &j))
		return 107;
	/* The administrator revokes the code while the job runs. */
	if (await_revocation(r->from_child, r->to_child))
		return 108;
	if (busy_submit(fd, &k) != -EACCES)
		return 109;
	/* It was still running when the code went: queued work finishes. */
	if (vgsched_ctx_query(fd, ctx, &q) || q.jobs_completed != 0)
		return 111;
	if (wait_ok(fd, ctx, j.s.seqno) || busy_job_wrong(&j) != -1)
		return 110;
	busy_job_fini(fd, &j);
	busy_job_fini(fd, &k);
	close(fd);
	return 0;
}

TEST_F(projects, authorization_codes)
{
	int to, from, fd;
	struct auth_run run;
	char hex[64] = "", path[64];
	struct busy_job j;
	__u32 ctx;
	pid_t pid;

	fd = vgsched_open_render_node_at(path, sizeof(path));
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, chmod(path, 0666));
	EXPECT_EQ(-EINVAL, cfs_write("device_code", "maybe"));
	ASSERT_EQ(0, cfs_read("device_code", hex, sizeof(hex)));
	EXPECT_STREQ("open\n", hex);
	ASSERT_EQ(0, cfs_write("device_code", "generate\n"));
	ASSERT_EQ(0, cfs_read("device_code", hex, sizeof(hex)));
	ASSERT_EQ(33, strlen(hex)) TH_LOG("'%s'", hex);
	ASSERT_EQ(0, parse_code(hex, run.code));
	/* Shown once. */
	ASSERT_EQ(0, cfs_read("device_code", hex, sizeof(hex)));
	EXPECT_STREQ("required\n", hex);

	pid = fork_talking(1004, authorized_work, &run, &run.to_child, &run.from_child, &to, &from);
	ASSERT_GE(pid, 0);
	EXPECT_EQ(0, revoke_for_child(pid, from, to, "device_code", "revoke"));
	ASSERT_EQ(0, cfs_read("device_code", hex, sizeof(hex)));
	EXPECT_STREQ("revoked\n", hex);
	/* Root needs no code. */
	ctx = vgsched_ctx_create(fd, 8);
	ASSERT_NE(0, ctx);
	ASSERT_EQ(0, busy_job_init(fd, &j, ctx, 1, 1, 1, 4, 1));
	EXPECT_EQ(0, busy_submit(fd, &j));
	EXPECT_EQ(0, wait_ok(fd, ctx, 1));
	busy_job_fini(fd, &j);
	close(fd);
}

struct tile_run {
	__u8 code0[DRM_VGSCHED_CODE_BYTES];	/* tile 0's code */
	__u8 code2[DRM_VGSCHED_CODE_BYTES];	/* tile 2's code */
	__u8 device[DRM_VGSCHED_CODE_BYTES];	/* the device's code */
	int to_child, from_child;
	int code_first;	/* present tile 0's code before START */
};

/* A job of @k tiles on @ctx, waited for; 0, -errno of SUBMIT, or 1000. */
static int tile_job_done(int fd, __u32 ctx, __u32 k, __u64 *seqno)
{
	struct busy_job j;
	int ret;

	if (busy_job_init(fd, &j, ctx, 1, 1, 1, 4, 1))
		return 1000;
	j.s.tiles = k;
	ret = busy_submit(fd, &j);
	if (!ret) {
		*seqno = j.s.seqno;
		if (wait_ok(fd, ctx, j.s.seqno) || busy_job_wrong(&j) != -1)
			ret = 1000;
	}
	busy_job_fini(fd, &j);
	return ret;
}

/*
 * The start of a tile_run child: its file and a context, whose client id
 * and number it tells the parent (for the placement log); 0 or -1.
 */
static int tile_child_start(const struct tile_run *r, int *fd, __u32 *ctx)
{
	__u64 ids[2];

	*fd = vgsched_open_render_node();
	if (*fd < 0 || !(*ctx = vgsched_ctx_create(*fd, 8)))
		return -1;
	ids[0] = vgsched_client_id(*fd, *ctx);
	ids[1] = *ctx;
	return write(r->from_child, ids, sizeof(ids)) == sizeof(ids) ? 0 : -1;
}

/*
 * Tiles 0 and 2 (the first of each node of two, where placement would
 * put a one-tile job) have codes of their own: a file without them gets
 * tiles 1 and 3 only; with tile 0's code a job of two tiles fits on node
 * 0; after its revocation, not any more.
 */
static int tile_coded_work(void *arg)
{
	struct tile_run *r = arg;
	__u8 wrong[DRM_VGSCHED_CODE_BYTES];
	__u64 seqno = 0;
	__u32 ctx;
	int fd;

	if (tile_child_start(r, &fd, &ctx))
		return 101;
	if (tile_job_done(fd, ctx, 2, &seqno) != -EACCES)
		return 103;
	for (int i = 0; i < 4; i++)
		if (tile_job_done(fd, ctx, 1, &seqno))
			return 104;
	memcpy(wrong, r->code0, sizeof(wrong));
	wrong[0] ^= 0x80;
	if (authorize(fd, wrong, 1) != -EACCES || authorize(fd, r->code0, 5) != -EINVAL ||
	    authorize(fd, r->code0, 3) != -EACCES || authorize(fd, r->code0, 1))
		return 105;
	if (tile_job_done(fd, ctx, 2, &seqno) || seqno != 5)
		return 106;
	/* The administrator revokes tile 0's code. */
	if (await_revocation(r->from_child, r->to_child))
		return 107;
	if (tile_job_done(fd, ctx, 2, &seqno) != -EACCES)
		return 108;
	if (tile_job_done(fd, ctx, 1, &seqno) || seqno != 6)
		return 109;
	close(fd);
	return 0;
}

/*
 * With a device code too: nothing without a code; the device's code
 * reaches every tile, coded ones included; once it is revoked, tile 2's
 * own code still reaches tile 2, and only it.
 */
static int device_and_tile_codes(void *arg)
{
	struct tile_run *r = arg;
	__u64 seqno = 0;
	__u32 ctx;
	int fd;

	if (tile_child_start(r, &fd, &ctx))
		return 101;
	if (tile_job_done(fd, ctx, 1, &seqno) != -EACCES)
		return 103;
	if (authorize(fd, r->device, 0) || tile_job_done(fd, ctx, 2, &seqno) || seqno != 1)
		return 104;
	/* The administrator revokes the device's code. */
	if (await_revocation(r->from_child, r->to_child))
		return 105;
	if (tile_job_done(fd, ctx, 1, &seqno) != -EACCES)
		return 106;
	if (authorize(fd, r->code2, 3) || tile_job_done(fd, ctx, 1, &seqno) || seqno != 2 ||
	    tile_job_done(fd, ctx, 2, &seqno) != -EACCES)
		return 107;
	close(fd);
	return 0;
}

TEST_F(projects, tile_codes)
{
	int to, from, n;
	char buf[256] = "";
	struct vg_tiles rec[16];
	struct tile_run run;
	__u64 ids[2];
	pid_t pid;

	ASSERT_EQ(0, reload_for_everyone("modules=4 nodes=2 tiles_per_node=2"));
	for (const char *bad = "generate\0generate 4\0frob 1\0generate 1 2\0generate -1\0"; *bad;
	     bad += strlen(bad) + 1) {
		EXPECT_EQ(-EINVAL, cfs_write("tile_codes", bad)) TH_LOG("'%s'", bad);
	}
	ASSERT_EQ(0, cfs_read("tile_codes", buf, sizeof(buf)));
	EXPECT_STREQ("", buf);
	ASSERT_EQ(0, cfs_write("tile_codes", "generate 0\n"));
	ASSERT_EQ(0, cfs_write("tile_codes", "generate 2"));
	ASSERT_EQ(0, cfs_read("tile_codes", buf, sizeof(buf)));
	ASSERT_EQ(2 * 35, strlen(buf)) TH_LOG("'%s'", buf);
	ASSERT_EQ(0, strncmp(buf, "0 ", 2));
	ASSERT_EQ(0, strncmp(buf + 35, "2 ", 2));
	ASSERT_EQ(0, parse_code(buf + 2, run.code0));
	ASSERT_EQ(0, parse_code(buf + 37, run.code2));
	/* Shown once. */
	ASSERT_EQ(0, cfs_read("tile_codes", buf, sizeof(buf)));
	EXPECT_STREQ("0 required\n2 required\n", buf);

	pid = fork_talking(1004, tile_coded_work, &run, &run.to_child, &run.from_child, &to, &from);
	ASSERT_GE(pid, 0);
	ASSERT_EQ(sizeof(ids), read(from, ids, sizeof(ids)));
	EXPECT_EQ(0, revoke_for_child(pid, from, to, "tile_codes", "revoke 0"));
	ASSERT_EQ(0, cfs_read("tile_codes", buf, sizeof(buf)));
	EXPECT_STREQ("0 revoked\n2 required\n", buf);
	/* Where its jobs ran: never on a coded tile without the code. */
	n = tile_records(ids[0], ids[1], rec, 16);
	ASSERT_EQ(6, n);
	for (int i = 0; i < n; i++) {
		if (rec[i].job == 5) {
			EXPECT_EQ(0x3, rec[i].mask) TH_LOG("the two-tile job with tile 0's code");
		} else {
			EXPECT_EQ(0, rec[i].mask & 0x5) TH_LOG("job %llu on 0x%x", rec[i].job, rec[i].mask);
		}
	}

	ASSERT_EQ(0, cfs_write("device_code", "generate"));
	ASSERT_EQ(0, cfs_read("device_code", buf, sizeof(buf)));
	ASSERT_EQ(0, parse_code(buf, run.device));
	pid = fork_talking(1004, device_and_tile_codes, &run, &run.to_child, &run.from_child, &to,
			   &from);
	ASSERT_GE(pid, 0);
	ASSERT_EQ(sizeof(ids), read(from, ids, sizeof(ids)));
	EXPECT_EQ(0, revoke_for_child(pid, from, to, "device_code", "revoke"));
	n = tile_records(ids[0], ids[1], rec, 16);
	ASSERT_EQ(2, n);
	EXPECT_EQ(0x4, rec[1].mask) TH_LOG("with tile 2's code alone");

	ASSERT_EQ(0, cfs_write("tile_codes", "open 0"));
	ASSERT_EQ(0, cfs_write("tile_codes", "open 2"));
	ASSERT_EQ(0, cfs_read("tile_codes", buf, sizeof(buf)));
	EXPECT_STREQ("", buf);
}

/* Creates @project with member @uid whose request fits two one-tile jobs at once. */
static int project_of_one(const char *project, const char *uid)
{
	char dir[64];

	snprintf(dir, sizeof(dir), "%s/%s", project, uid);
	return cfs_mkdir(project) || cfs_set(project, "budget_contexts", "2") ||
	       cfs_set(project, "budget_bo_bytes", "1048576") ||
	       cfs_set(project, "budget_tiles", "2") || cfs_mkdir(dir) ||
	       cfs_set(dir, "request_contexts", "2") || cfs_set(dir, "request_bo_bytes", "1048576") ||
	       cfs_set(dir, "request_tiles", "2");
}

/* A job of one tile (arg 1) or two (arg 2) in a new file: 0, -errno of SUBMIT, or 1000. */
static int one_job_of(void *arg)
{
	__u64 seqno;
	int fd = vgsched_open_render_node(), ret = 1000;
	__u32 ctx = fd < 0 ? 0 : vgsched_ctx_create(fd, 8);

	if (ctx)
		ret = tile_job_done(fd, ctx, (__u32)(long)arg, &seqno);
	if (fd >= 0)
		close(fd);
	return ret == -EACCES ? 13 : ret == -ENOSPC ? 28 : ret;
}

/* The status of one_job_of() for a job of @k tiles as @uid: 0 ran, 13 EACCES. */
static int job_as(uid_t uid, long k)
{
	return as_uid(uid, one_job_of, (void *)k);
}

/*
 * A member of alpha, with tile 1 enrolled into alpha and tile 2 for
 * everyone: its jobs run (on tile 1, the first node in placement's order);
 * a long one is running when tile 1 is revoked, and ends with its result
 * exact; every job after it goes to tile 2, although tile 1 is idle
 * again. Its client and context are sent to the parent first.
 */
static int alpha_across_a_revocation(void *arg)
{
	struct tile_run *r = arg;
	struct busy_job long_job;
	__u64 seqno;
	__u32 ctx;
	int fd;

	if (tile_child_start(r, &fd, &ctx))
		return 101;
	for (int i = 0; i < 2; i++)
		if (tile_job_done(fd, ctx, 1, &seqno))
			return 102;
	if (busy_job_init(fd, &long_job, ctx, 300, 1, 1, 4, 1))
		return 103;
	long_job.s.tiles = 1;
	if (busy_submit(fd, &long_job) || long_job.s.seqno != 3)
		return 104;
	/* The administrator revokes tile 1. */
	if (await_revocation(r->from_child, r->to_child))
		return 105;
	if (wait_ok(fd, ctx, long_job.s.seqno) || busy_job_wrong(&long_job) != -1)
		return 106;
	busy_job_fini(fd, &long_job);
	/* Tile 1 is free again, and would be placement's first choice. */
	for (int i = 0; i < 3; i++)
		if (tile_job_done(fd, ctx, 1, &seqno) || seqno != 4 + (__u64)i)
			return 107;
	close(fd);
	return 0;
}

/*
 * Provider enrolment, as the pooling document has it (tile_enrolment=1;
 * two nodes of two tiles): every tile starts outside the pool and serves
 * no job, root's included; a code made for tile 1 and entered for project
 * alpha puts it in the pool for alpha's members only; tile 2 entered
 * without a project serves everyone; revoking tile 1 sends every later
 * job of alpha to tile 2 while the job already running on tile 1 ends
 * exactly; revoking tile 2 leaves nothing. Malformed commands are EINVAL,
 * a wrong code EACCES, an unknown project ENOENT, each changing nothing.
 * Then node 1, a provider of its own, enrols both its tiles under one
 * code, and its revocation takes both out.
 */
TEST_F(projects, providers_join_the_pool_by_their_codes)
{
	static const char *const bad[] = { "code", "code 4", "frob 1", "code 1 2", "revoke -1",
					   "enrol 1", "enrol 1 0123", "enrol 1 0123 alpha" };
	char buf[512], line[128], code1[33], code2[33];
	struct vg_tiles rec[16];
	struct tile_run run;
	int fd, to, from, n;
	__u64 ids[2];
	pid_t pid;

	ASSERT_EQ(0, vgsched_module_unload());
	ASSERT_EQ(0, vgsched_module_load("modules=4 nodes=2 tiles_per_node=2 tile_enrolment=1"));
	fd = vgsched_open_render_node_at(buf, sizeof(buf));
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, chmod(buf, 0666));
	ASSERT_EQ(0, project_of_one("alpha", "1001"));
	ASSERT_EQ(0, project_of_one("beta", "1002"));
	ASSERT_EQ(0, cfs_read("providers", buf, sizeof(buf)));
	EXPECT_STREQ("0 out\n1 out\n2 out\n3 out\n", buf);
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, cfs_write("providers", bad[i])) TH_LOG("'%s'", bad[i]);
	}
	/* Nothing in the pool: no job runs, not even root's. */
	EXPECT_EQ(13, one_job_of((void *)1L));
	EXPECT_EQ(13, job_as(1001, 1));

	/* The provider's code for tile 1, shown once. */
	ASSERT_EQ(0, cfs_write("providers", "code 1\n"));
	ASSERT_EQ(0, cfs_read("providers", buf, sizeof(buf)));
	ASSERT_EQ(1, sscanf(buf, "0 out\n1 out code %32s\n", code1)) TH_LOG("'%s'", buf);
	ASSERT_EQ(32, strlen(code1));
	ASSERT_EQ(0, cfs_read("providers", buf, sizeof(buf)));
	EXPECT_STREQ("0 out\n1 out code\n2 out\n3 out\n", buf);
	/* A wrong code, an unknown project: refused, nothing changes. */
	snprintf(line, sizeof(line), "enrol 1 %s alpha", code1);
	line[8] = line[8] == '0' ? '1' : '0';
	EXPECT_EQ(-EACCES, cfs_write("providers", line));
	snprintf(line, sizeof(line), "enrol 1 %s gamma", code1);
	EXPECT_EQ(-ENOENT, cfs_write("providers", line));
	snprintf(line, sizeof(line), "enrol 2 %s", code1);
	EXPECT_EQ(-EACCES, cfs_write("providers", line)) TH_LOG("tile 2 has no code");
	ASSERT_EQ(0, cfs_read("providers", buf, sizeof(buf)));
	EXPECT_STREQ("0 out\n1 out code\n2 out\n3 out\n", buf);

	/* Entered for alpha: alpha's member and root run, beta's and a stranger do not. */
	snprintf(line, sizeof(line), "enrol 1 %s alpha\n", code1);
	ASSERT_EQ(0, cfs_write("providers", line));
	ASSERT_EQ(0, cfs_read("providers", buf, sizeof(buf)));
	EXPECT_STREQ("0 out\n1 projects alpha code\n2 out\n3 out\n", buf);
	EXPECT_EQ(0, job_as(1001, 1));
	EXPECT_EQ(13, job_as(1001, 2)) TH_LOG("two tiles: only tile 1 is alpha's");
	EXPECT_EQ(13, job_as(1002, 1));
	EXPECT_EQ(13, job_as(1004, 1));
	EXPECT_EQ(0, one_job_of((void *)1L));

	/* Tile 2 entered without a project: everyone's. */
	ASSERT_EQ(0, cfs_write("providers", "code 2"));
	ASSERT_EQ(0, cfs_read("providers", buf, sizeof(buf)));
	ASSERT_EQ(1, sscanf(strstr(buf, "\n2 ") + 1, "2 out code %32s\n", code2)) TH_LOG("'%s'", buf);
	snprintf(line, sizeof(line), "enrol 2 %s", code2);
	ASSERT_EQ(0, cfs_write("providers", line));
	ASSERT_EQ(0, cfs_read("providers", buf, sizeof(buf)));
	EXPECT_STREQ("0 out\n1 projects alpha code\n2 everyone code\n3 out\n", buf);
	EXPECT_EQ(0, job_as(1002, 1));
	EXPECT_EQ(0, job_as(1004, 1));
	EXPECT_EQ(13, job_as(1002, 2)) TH_LOG("tiles 1 and 2 are on two nodes");

	/* Revoked while alpha's long job runs on tile 1. */
	pid = fork_talking(1001, alpha_across_a_revocation, &run, &run.to_child, &run.from_child,
			   &to, &from);
	ASSERT_GE(pid, 0);
	ASSERT_EQ(sizeof(ids), read(from, ids, sizeof(ids)));
	EXPECT_EQ(0, revoke_for_child(pid, from, to, "providers", "revoke 1"));
	ASSERT_EQ(0, cfs_read("providers", buf, sizeof(buf)));
	EXPECT_STREQ("0 out\n1 out\n2 everyone code\n3 out\n", buf);
	n = tile_records(ids[0], ids[1], rec, 16);
	ASSERT_EQ(6, n);
	for (int i = 0; i < n; i++) {
		TH_LOG("job %llu on tiles 0x%x", rec[i].job, rec[i].mask);
		if (rec[i].job <= 3) {
			EXPECT_EQ(0x2, rec[i].mask) TH_LOG("before the revocation, tile 1 first");
		} else {
			EXPECT_EQ(0x4, rec[i].mask) TH_LOG("after tile 1 was revoked");
		}
	}

	ASSERT_EQ(0, cfs_write("providers", "revoke 2"));
	ASSERT_EQ(0, cfs_read("providers", buf, sizeof(buf)));
	EXPECT_STREQ("0 out\n1 out\n2 out\n3 out\n", buf);
	EXPECT_EQ(13, job_as(1001, 1));
	EXPECT_EQ(13, one_job_of((void *)1L));

	/*
	 * A node is a provider: one code enrols both its tiles, and a job of
	 * two tiles then fits there. A node past the device is EINVAL, a
	 * tile's code does not enrol its node.
	 */
	EXPECT_EQ(-EINVAL, cfs_write("providers", "code node 2"));
	EXPECT_EQ(-EINVAL, cfs_write("providers", "code node"));
	ASSERT_EQ(0, cfs_write("providers", "code node 1\n"));
	ASSERT_EQ(0, cfs_read("providers", buf, sizeof(buf)));
	ASSERT_EQ(1, sscanf(buf, "0 out\n1 out\n2 out\n3 out\nnode 1 code %32s\n", code2))
		TH_LOG("'%s'", buf);
	ASSERT_EQ(0, cfs_read("providers", buf, sizeof(buf)));
	EXPECT_STREQ("0 out\n1 out\n2 out\n3 out\nnode 1 code\n", buf);
	snprintf(line, sizeof(line), "enrol 2 %s", code2);
	EXPECT_EQ(-EACCES, cfs_write("providers", line)) TH_LOG("the node's code is not tile 2's");
	snprintf(line, sizeof(line), "enrol node 0 %s", code2);
	EXPECT_EQ(-EACCES, cfs_write("providers", line)) TH_LOG("node 0 has no code");
	snprintf(line, sizeof(line), "enrol node 1 %s alpha", code2);
	ASSERT_EQ(0, cfs_write("providers", line));
	ASSERT_EQ(0, cfs_read("providers", buf, sizeof(buf)));
	EXPECT_STREQ("0 out\n1 out\n2 projects alpha\n3 projects alpha\nnode 1 code\n", buf);
	EXPECT_EQ(0, job_as(1001, 2)) TH_LOG("node 1's two tiles are alpha's");
	EXPECT_EQ(13, job_as(1002, 1));
	ASSERT_EQ(0, cfs_write("providers", "revoke node 1"));
	ASSERT_EQ(0, cfs_read("providers", buf, sizeof(buf)));
	EXPECT_STREQ("0 out\n1 out\n2 out\n3 out\n", buf);
	EXPECT_EQ(13, job_as(1001, 1));
	close(fd);
}

/*
 * uid 1001, member of alpha with a request of two tiles: its START is
 * ENOSPC while the providers enrolled fewer than two tiles for it; then it
 * waits, and reports once it has started.
 */
static int start_after_enrolment(void *arg)
{
	int *p = arg, fd = vgsched_open_render_node();

	if (fd < 0)
		return 101;
	if (start_env(fd, 0) != -ENOSPC)
		return 102;
	if (step(p[1], p[0], 'n'))
		return 103;
	if (start_env(fd, DRM_VGSCHED_START_WAIT))
		return 104;
	if (step(p[1], p[0], 's'))
		return 105;
	close(fd);
	return 0;
}

/*
 * Makes provider @who's code (`N` or `node N`) and enters it for @project
 * (for everyone if NULL); 0 or -1.
 */
static int enrol_for(const char *who, const char *project)
{
	char buf[512], cmd[64], code[33], *at;

	snprintf(cmd, sizeof(cmd), "code %s", who);
	if (cfs_write("providers", cmd) || cfs_read("providers", buf, sizeof(buf)))
		return -1;
	at = strstr(buf, " code ");
	if (!at || sscanf(at, " code %32s", code) != 1)
		return -1;
	snprintf(cmd, sizeof(cmd), "enrol %s %s%s%s", who, code, project ? " " : "",
		 project ? project : "");
	return cfs_write("providers", cmd) ? -1 : 0;
}

/*
 * Whole-request admission against what the providers enrolled
 * (tile_enrolment=1, two nodes of two tiles): with nothing enrolled a
 * member's START of two tiles is ENOSPC, not two tiles of the device
 * reserved for jobs that could not run; a waiting START sleeps through
 * the enrolment of one tile for its project and is let in by node 1's,
 * and then holds its two tiles.
 */
TEST_F(projects, a_start_is_admitted_against_the_enrolled_tiles)
{
	int io[2], to, from;
	char c, buf[256];
	pid_t pid;

	ASSERT_EQ(0, reload_for_everyone("modules=4 nodes=2 tiles_per_node=2 tile_enrolment=1"));
	ASSERT_EQ(0, project_of_one("alpha", "1001"));
	pid = fork_talking(1001, start_after_enrolment, io, &io[0], &io[1], &to, &from);
	ASSERT_GE(pid, 0);
	ASSERT_EQ(1, read(from, &c, 1));
	ASSERT_EQ('n', c) TH_LOG("START was not ENOSPC with nothing enrolled");
	ASSERT_EQ(0, enrol_for("0", "alpha"));
	ASSERT_EQ(1, write(to, "w", 1));
	/* One tile enrolled: the waiting START sleeps and reserves nothing. */
	for (int i = 0; i < 500 && proc_state(pid) != 'S'; i++)
		usleep(10000);
	usleep(100000);
	EXPECT_EQ('S', proc_state(pid));
	EXPECT_EQ(0, cfs_usage("alpha/1001/reserved", "tiles"));
	ASSERT_EQ(0, enrol_for("node 1", "alpha"));
	ASSERT_EQ(1, read(from, &c, 1));
	ASSERT_EQ('s', c) TH_LOG("the enrolment did not let the START in");
	ASSERT_EQ(0, cfs_read("alpha/1001/reserved", buf, sizeof(buf)));
	EXPECT_STREQ("contexts 2\nbo_bytes 1048576\ntiles 2\nshared_bytes 0\n", buf);
	ASSERT_EQ(1, write(to, "q", 1));
	EXPECT_EQ(0, reap(pid));
	EXPECT_EQ(0, usage_settles("alpha/1001/reserved", "tiles", 0));
}

/*
 * uid 1001, started with a reservation of one tile: its own job of one
 * tile runs (on the tile it reserved, or the other); it stays started
 * until told.
 */
static int started_with_a_tile(void *arg)
{
	int *p = arg, fd = vgsched_open_render_node();

	if (fd < 0 || start_env(fd, 0))
		return 101;
	if (one_job_of((void *)1L))
		return 102;
	if (step(p[1], p[0], 's'))
		return 103;
	close(fd);
	return 0;
}

/*
 * What a started environment reserved is its own at placement (one node
 * of two tiles, every tile in the pool): while uid 1001's environment
 * holds one tile, a uid in no project, and root, get ENOSPC for a job of
 * two tiles (it would otherwise wait for the environment's end), and a
 * job of one runs; once the environment stops, the job of two runs.
 */
TEST_F(projects, reserved_tiles_are_the_started_members_own)
{
	int io[2], to, from;
	char c;
	pid_t pid;

	ASSERT_EQ(0, reload_for_everyone("modules=4 nodes=1 tiles_per_node=2"));
	ASSERT_EQ(0, cfs_mkdir("alpha"));
	ASSERT_EQ(0, cfs_write("alpha/budget_contexts", "4"));
	ASSERT_EQ(0, cfs_write("alpha/budget_tiles", "1"));
	ASSERT_EQ(0, cfs_write("alpha/budget_bo_bytes", "1048576"));
	ASSERT_EQ(0, cfs_mkdir("alpha/1001"));
	ASSERT_EQ(0, cfs_write("alpha/1001/request_contexts", "4"));
	ASSERT_EQ(0, cfs_write("alpha/1001/request_bo_bytes", "1048576"));
	ASSERT_EQ(0, cfs_write("alpha/1001/request_tiles", "1"));
	EXPECT_EQ(0, job_as(1004, 2)) TH_LOG("nothing reserved yet");
	pid = fork_talking(1001, started_with_a_tile, io, &io[0], &io[1], &to, &from);
	ASSERT_GE(pid, 0);
	if (read(from, &c, 1) != 1)
		c = 0;
	ASSERT_EQ('s', c) TH_LOG("the member did not start and run its job: %d", reap(pid));
	EXPECT_EQ(1, cfs_usage("alpha/1001/reserved", "tiles"));
	EXPECT_EQ(28, job_as(1004, 2)) TH_LOG("one of the node's two tiles is reserved");
	EXPECT_EQ(0, job_as(1004, 1));
	EXPECT_EQ(28, job_as(0, 2)) TH_LOG("root's jobs keep off reservations too");
	ASSERT_EQ(1, write(to, "q", 1));
	EXPECT_EQ(0, reap(pid));
	EXPECT_EQ(0, usage_settles("alpha/1001/reserved", "tiles", 0));
	EXPECT_EQ(0, job_as(1004, 2)) TH_LOG("the environment stopped");
}

/*
 * Two projects' environments on their own providers' tiles (two nodes of
 * two tiles, node 0 enrolled for alpha, node 1 for beta): each START
 * takes its node although the other environment holds the rest of the
 * device (tiles are taken by name, not counted against everything members
 * hold). Revoking node 0 takes its tiles out of alpha's reservation: once
 * node 0 serves everyone, a uid in no project runs a job of two tiles
 * there, where beta's node, serving everyone too, is refused to it.
 */
TEST_F(projects, environments_reserve_their_own_providers_tiles_until_revoked)
{
	int io[2][2], to[2], from[2];
	char c;
	pid_t pid[2];

	ASSERT_EQ(0, reload_for_everyone("modules=4 nodes=2 tiles_per_node=2 tile_enrolment=1"));
	ASSERT_EQ(0, project_of_one("alpha", "1001"));
	ASSERT_EQ(0, project_of_one("beta", "1002"));
	ASSERT_EQ(0, enrol_for("node 0", "alpha"));
	ASSERT_EQ(0, enrol_for("node 1", "beta"));
	for (int i = 0; i < 2; i++) {
		pid[i] = fork_talking(1001 + i, started_with_a_tile, io[i], &io[i][0], &io[i][1],
				      &to[i], &from[i]);
		ASSERT_GE(pid[i], 0);
		if (read(from[i], &c, 1) != 1)
			c = 0;
		ASSERT_EQ('s', c) TH_LOG("member %d did not start and run its job: %d", 1001 + i,
					 reap(pid[i]));
	}
	EXPECT_EQ(2, cfs_usage("alpha/1001/reserved", "tiles"));
	EXPECT_EQ(2, cfs_usage("beta/1002/reserved", "tiles"));
	ASSERT_EQ(0, cfs_write("providers", "revoke node 0"));
	EXPECT_EQ(0, cfs_usage("alpha/1001/reserved", "tiles")) TH_LOG("revoked tiles stay reserved");
	EXPECT_EQ(2, cfs_usage("beta/1002/reserved", "tiles"));
	ASSERT_EQ(0, enrol_for("node 1", NULL));
	EXPECT_EQ(28, job_as(1004, 2)) TH_LOG("beta's node is its environment's own");
	ASSERT_EQ(0, enrol_for("node 0", NULL));
	EXPECT_EQ(0, job_as(1004, 2)) TH_LOG("node 0 is still alpha's");
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(1, write(to[i], "q", 1));
		EXPECT_EQ(0, reap(pid[i]));
	}
	EXPECT_EQ(0, usage_settles("beta/1002/reserved", "tiles", 0));
}

/*
 * uid 1001 (request: two tiles, tile 0 coded) starts before it presents
 * tile 0's code, as a uAPI 1.10 program may (or, with @code_first, after
 * it): the start succeeds either way; it stays started until told.
 */
static int start_around_its_code(void *arg)
{
	struct tile_run *r = arg;
	int fd = vgsched_open_render_node();

	if (fd < 0)
		return 101;
	if (r->code_first && authorize(fd, r->code0, 1))
		return 102;
	if (start_env(fd, 0) || (!r->code_first && authorize(fd, r->code0, 1)))
		return 103;
	if (step(r->from_child, r->to_child, 's'))
		return 104;
	close(fd);
	return 0;
}

/*
 * A start keeps from others only tiles its file may use (one node of two
 * tiles, tile 0 coded, a member of two tiles): started before its file
 * presented tile 0's code, the member reserves both tiles' count, but
 * root's job of one tile still runs (on tile 0) and only a job of two is
 * ENOSPC; started after it, both tiles are the environment's own.
 */
TEST_F(projects, a_start_keeps_only_tiles_its_file_may_use)
{
	struct tile_run run;
	char c, buf[256];
	int to, from;
	pid_t pid;

	ASSERT_EQ(0, reload_for_everyone("modules=4 nodes=1 tiles_per_node=2"));
	ASSERT_EQ(0, project_of_one("alpha", "1001"));
	ASSERT_EQ(0, cfs_write("tile_codes", "generate 0"));
	ASSERT_EQ(0, cfs_read("tile_codes", buf, sizeof(buf)));
	ASSERT_EQ(35, strlen(buf)) TH_LOG("'%s'", buf);
	ASSERT_EQ(0, parse_code(buf + 2, run.code0));
	for (int i = 0; i < 2; i++) {
		run.code_first = i;
		pid = fork_talking(1001, start_around_its_code, &run, &run.to_child, &run.from_child,
				   &to, &from);
		ASSERT_GE(pid, 0);
		if (read(from, &c, 1) != 1)
			c = 0;
		ASSERT_EQ('s', c) TH_LOG("start %d went wrong: %d", i, reap(pid));
		EXPECT_EQ(2, cfs_usage("alpha/1001/reserved", "tiles"));
		EXPECT_EQ(i ? 28 : 0, job_as(0, 1)) TH_LOG("root's job of one tile, start %d", i);
		EXPECT_EQ(28, job_as(0, 2)) TH_LOG("root's job of two tiles, start %d", i);
		ASSERT_EQ(1, write(to, "q", 1));
		EXPECT_EQ(0, reap(pid));
		EXPECT_EQ(0, usage_settles("alpha/1001/reserved", "tiles", 0));
	}
}

/*
 * A child's two pipe ends (fork_talking()) and what it reports: how many
 * contexts it made before the first refusal, and that refusal's errno.
 */
struct holder_run {
	int in, out;
	int limit;	/* contexts to try at most */
};

struct holder_report {
	int made, err;
};

/*
 * Opens files and creates contexts in them (64 a file) until one is
 * refused or @limit are made, reports it and holds them until told to go.
 */
static int hold_contexts(void *arg)
{
	struct holder_run *r = arg;
	struct holder_report rep = { 0, 0 };
	int fd = -1;
	char c;

	while (rep.made < r->limit) {
		if (rep.made % DRM_VGSCHED_MAX_CONTEXTS_PER_FILE == 0) {
			fd = vgsched_open_render_node();
			if (fd < 0) {
				rep.err = errno;
				break;
			}
		}
		if (!vgsched_ctx_create(fd, 8)) {
			rep.err = errno;
			break;
		}
		rep.made++;
	}
	if (write(r->out, &rep, sizeof(rep)) != sizeof(rep) || read(r->in, &c, 1) != 1)
		return 101;
	return 0;
}

/*
 * uid 1001, a started member whose target is a file's 64 contexts: starts,
 * and once told (the uids in no project hold all they may), creates its 64
 * (never ENOSPC) and a 65th (EDQUOT); exits when told.
 */
static int started_full_file(void *arg)
{
	struct holder_run *r = arg;
	int fd = vgsched_open_render_node();
	__u32 ctx;

	if (fd < 0 || start_env(fd, 0))
		return 101;
	if (step(r->out, r->in, 's'))
		return 102;
	for (int i = 0; i < DRM_VGSCHED_MAX_CONTEXTS_PER_FILE; i++) {
		ctx = vgsched_ctx_create(fd, 8);
		if (!ctx) {
			printf("# context %d of the reservation: %s\n", i, strerror(errno));
			return 103;
		}
	}
	/* The file is full: a second one for the one past the target. */
	if (vgsched_ctx_create(vgsched_open_render_node(), 8) || errno != EDQUOT)
		return 104;
	if (step(r->out, r->in, 'c'))
		return 105;
	close(fd);
	return 0;
}

/* uid 1002, a member that did not start: 64 contexts from the rest of the pool. */
static int unstarted_member(void *arg)
{
	struct holder_run r = { .in = -1, .out = -1, .limit = 64 };
	int fd = vgsched_open_render_node();

	if (fd < 0)
		return 101;
	for (int i = 0; i < r.limit; i++)
		if (!vgsched_ctx_create(fd, 8))
			return 102;
	close(fd);
	return 0;
}

/*
 * The default device (16 384 contexts, a pool of 1 024, a default bound of
 * 1 024): 16 uids in no project, each holding all it may, cannot take the
 * whole device as they did: together they stop at what the pool and
 * root's reserve of 64 leave (16 384 - 1 024 - 64), with ENOSPC. A member
 * that started before them creates its reserved contexts (uAPI 1.9: never
 * ENOSPC within the reservation), a member that did not start still finds
 * the pool, and root creates a file's contexts.
 */
TEST_F_TIMEOUT(projects, uids_in_no_project_leave_reservations_and_root_room, 120)
{
	struct holder_run runs[16], member = { .limit = 0 };
	struct holder_report rep;
	int to[16], from[16], to_m, from_m, total = 0, full = 0, fd;
	pid_t pids[16], m;
	char c;

	ASSERT_EQ(0, alpha_with_1001_and_1002("128", "64"));
	m = fork_talking(1001, started_full_file, &member, &member.in, &member.out, &to_m, &from_m);
	ASSERT_GE(m, 0);
	self->kids[self->nkids++] = m;
	ASSERT_EQ(1, read(from_m, &c, 1));
	ASSERT_EQ('s', c);
	EXPECT_EQ(64, cfs_usage("alpha/1001/reserved", "contexts"));

	/* One after the other, so that who gets what is known. */
	for (int i = 0; i < 16; i++) {
		runs[i].limit = 1025;
		pids[i] = fork_talking(2000 + i, hold_contexts, &runs[i], &runs[i].in, &runs[i].out,
				       &to[i], &from[i]);
		ASSERT_GE(pids[i], 0);
		self->kids[self->nkids++] = pids[i];
		ASSERT_EQ(sizeof(rep), read(from[i], &rep, sizeof(rep))) TH_LOG("uid %d", 2000 + i);
		total += rep.made;
		if (rep.made == 1024) {
			full++;
			EXPECT_EQ(EDQUOT, rep.err) TH_LOG("uid %d past its bound", 2000 + i);
		} else {
			EXPECT_EQ(ENOSPC, rep.err) TH_LOG("uid %d at %d", 2000 + i, rep.made);
		}
	}
	EXPECT_EQ(16384 - 1024 - 64, total);
	EXPECT_EQ(14, full) TH_LOG("single-namespace uids keep their own bounds");

	ASSERT_EQ(1, write(to_m, "g", 1));
	ASSERT_EQ(1, read(from_m, &c, 1)) TH_LOG("the started member was refused");
	EXPECT_EQ('c', c);
	EXPECT_EQ(64, cfs_usage("alpha/1001/usage", "contexts"));
	EXPECT_EQ(0, as_uid(1002, unstarted_member, NULL));
	fd = vgsched_open_render_node();
	ASSERT_GE(fd, 0);
	for (int i = 0; i < DRM_VGSCHED_MAX_CONTEXTS_PER_FILE; i++) {
		EXPECT_NE(0, vgsched_ctx_create(fd, 8)) TH_LOG("root's context %d", i);
	}
	close(fd);

	ASSERT_EQ(1, write(to_m, "q", 1));
	EXPECT_EQ(0, reap(m));
	self->kids[0] = 0;
	for (int i = 0; i < 16; i++) {
		ASSERT_EQ(1, write(to[i], "q", 1));
		EXPECT_EQ(0, reap(pids[i]));
		self->kids[i + 1] = 0;
		close(to[i]);
		close(from[i]);
	}
	self->nkids = 0;
	EXPECT_EQ(0, usage_settles("alpha/1001/usage", "contexts", 0));
}

/* uids of the user namespace below: kuid NS_BASE + k is its uid k. */
#define NS_BASE 200000
#define NS_UIDS 300

/*
 * uid 3000 makes a user namespace (the parent maps its uids 0..299 to
 * kuids 200000..200299 once told, by 'n'; 'u' and the errno if it cannot),
 * then opens a file as each of its 300 uids and creates a
 * context in each: it reports how many were made and the errno of the
 * last refusal, and holds them until told to go.
 */
static int namespace_uids(void *arg)
{
	struct holder_run *r = arg;
	struct holder_report rep = { 0, 0 };
	char c;

	if (unshare(CLONE_NEWUSER)) {
		rep.err = errno;
		return write(r->out, "u", 1) == 1 && write(r->out, &rep, sizeof(rep)) ==
			sizeof(rep) ? 0 : 101;
	}
	if (step(r->out, r->in, 'n'))
		return 102;
	/* Its uid 0 (kuid 200000, not root outside), with every capability in it. */
	if (setresuid(0, 0, 0))
		return 103;
	for (int k = 0; k < NS_UIDS; k++) {
		int fd;

		if (seteuid(k))
			return 104;
		fd = vgsched_open_render_node();
		if (seteuid(0) || fd < 0)
			return 105;
		if (vgsched_ctx_create(fd, 8))
			rep.made++;
		else
			rep.err = errno;
	}
	if (write(r->out, &rep, sizeof(rep)) != sizeof(rep) || read(r->in, &c, 1) != 1)
		return 106;
	return 0;
}

/* A context in a new file: 0, or the errno of CTX_CREATE. */
static int one_context(void *arg)
{
	int fd = vgsched_open_render_node();

	if (fd < 0)
		return 101;
	return vgsched_ctx_create(fd, 8) ? 0 : errno;
}

/*
 * The default bound of uids in no project is counted per user-namespace
 * owner, as the kernel's ucounts charge per-user limits: the 300 uids of a
 * namespace uid 3000 made share uid 3000's bound of 260 contexts (the rest
 * EDQUOT, where they used to get 300 bounds and fill the device's table
 * of 256 uids), and uid 3000 itself gets nothing more; uid 3001 keeps its
 * own. Skipped where the kernel has no user namespaces (CONFIG_USER_NS);
 * unprivileged ones are allowed for the test where a sysctl forbids them.
 */
TEST_F_TIMEOUT(projects, uids_of_one_user_namespace_share_its_owners_bound, 120)
{
	static const char sysctl[] = "/proc/sys/kernel/unprivileged_userns_clone";
	struct holder_run run = { .limit = 0 };
	struct holder_report rep;
	char path[64], map[64], was[16] = "", c;
	int to, from;
	pid_t pid;

	if (access("/proc/self/ns/user", F_OK))
		SKIP(return, "no user namespaces in this kernel (CONFIG_USER_NS)");
	if (!vg_read_file(sysctl, was, sizeof(was)))
		ASSERT_EQ(0, vg_write_file(sysctl, "1"));
	ASSERT_EQ(0, vgsched_param_write("default_contexts", "260"));
	pid = fork_talking(3000, namespace_uids, &run, &run.in, &run.out, &to, &from);
	ASSERT_GE(pid, 0);
	self->kids[self->nkids++] = pid;
	ASSERT_EQ(1, read(from, &c, 1));
	if (c == 'u') {
		ASSERT_EQ(sizeof(rep), read(from, &rep, sizeof(rep)));
		EXPECT_EQ(0, reap(pid));
		self->nkids = 0;
		if (was[0])
			vg_write_file(sysctl, was);
		ASSERT_EQ(0, rep.err) TH_LOG("unshare(CLONE_NEWUSER) as uid 3000");
	}
	ASSERT_EQ('n', c);
	snprintf(path, sizeof(path), "/proc/%d/uid_map", pid);
	snprintf(map, sizeof(map), "0 %d %d\n", NS_BASE, NS_UIDS);
	ASSERT_EQ(0, vg_write_file(path, map));
	ASSERT_EQ(1, write(to, "g", 1));
	ASSERT_EQ(sizeof(rep), read(from, &rep, sizeof(rep)));
	EXPECT_EQ(260, rep.made);
	EXPECT_EQ(EDQUOT, rep.err);
	/* The owner shares the bound its namespace's uids hold; another uid has its own. */
	EXPECT_EQ(EDQUOT, as_uid(3000, one_context, NULL));
	EXPECT_EQ(0, as_uid(3001, one_context, NULL));
	ASSERT_EQ(1, write(to, "q", 1));
	EXPECT_EQ(0, reap(pid));
	self->nkids = 0;
	/* All given back: the owner's bound is whole again. */
	EXPECT_EQ(0, as_uid(3000, one_context, NULL));
	if (was[0])
		vg_write_file(sysctl, was);
}

TEST_HARNESS_MAIN
