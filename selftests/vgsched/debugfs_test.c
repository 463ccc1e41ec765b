// SPDX-License-Identifier: GPL-2.0
/*
 * The device's debugfs files: in the DRM core's directory of the device
 * (/sys/kernel/debug/dri/<minor>, whose name file names the driver), not
 * in a module-global one; all read-only but lock_hold_max_us (its owner
 * may write 0 to measure the longest hold again from then on; anything
 * else is refused with EINVAL), no policy file and, in a production
 * build, no benchmark; lock_hold_max_us holds one number, the one the
 * state file reports too; lock_holds is the state file's line on the
 * engine lock alone, with the site of the longest hold.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vgsched_programs.h"
#include "vgsched_test_util.h"

static const char *const views[] = { "state", "contexts", "occupancy", "placements", "lock_hold_max_us",
				     "lock_hold_mean_us", "lock_holds" };

/* The number in lock_hold_max_us, which must be all the file holds; -1 if not. */
static long long lock_hold_file(void)
{
	char buf[64], *end;
	long long v;

	if (vgsched_debugfs_read("lock_hold_max_us", buf, sizeof(buf)))
		return -1;
	v = strtoll(buf, &end, 10);
	return end != buf && !strcmp(end, "\n") && v >= 0 ? v : -1;
}

TEST(files_are_in_the_devices_dri_directory)
{
	char dir[64], path[128], name[128];
	struct stat st;

	ASSERT_EQ(0, vgsched_debugfs_dir(dir, sizeof(dir)));
	/* The DRM core's directory of this device. */
	ASSERT_EQ(0, vgsched_debugfs_read("name", name, sizeof(name)));
	EXPECT_EQ(0, strncmp(name, "vgsched ", 8)) TH_LOG("%s/name: %s", dir, name);
	for (unsigned int i = 0; i < sizeof(views) / sizeof(views[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, views[i]);
		ASSERT_EQ(0, stat(path, &st)) TH_LOG("%s: %s", path, strerror(errno));
		if (!strcmp(views[i], "lock_hold_max_us")) {
			EXPECT_EQ(0200, st.st_mode & 0222) TH_LOG("%s: mode %o", path, st.st_mode);
		} else {
			EXPECT_EQ(0, st.st_mode & 0222) TH_LOG("%s is writable (mode %o)", path, st.st_mode);
		}
	}
	/* No module-global directory any more. */
	EXPECT_EQ(-1, stat("/sys/kernel/debug/vgsched", &st));
	EXPECT_EQ(ENOENT, errno);
}

TEST(no_policy_file_and_no_benchmark)
{
	const char *const gone[] = { "slice_formula", "finder_bench" };
	char dir[64], path[128];
	struct stat st;

	ASSERT_EQ(0, vgsched_debugfs_dir(dir, sizeof(dir)));
	/*
	 * Policies are module parameters, and the benchmark is only in a
	 * module built with VGSCHED_BENCH=1: neither in the device's
	 * directory nor in the module-global one of older versions.
	 */
	for (unsigned int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, gone[i]);
		EXPECT_EQ(-1, stat(path, &st)) TH_LOG("%s exists", path);
		snprintf(path, sizeof(path), "/sys/kernel/debug/vgsched/%s", gone[i]);
		EXPECT_EQ(-1, stat(path, &st)) TH_LOG("%s exists", path);
	}
}

TEST(lock_hold_max_us_is_one_number_and_in_state)
{
	static char state[1 << 16];
	long long before, after, in_state;
	char *line;

	before = lock_hold_file();
	ASSERT_LE(0, before);
	ASSERT_EQ(0, vgsched_debugfs_read("state", state, sizeof(state)));
	after = lock_hold_file();
	line = strstr(state, "\nlock_hold_max_us: ");
	ASSERT_NE(NULL, line) TH_LOG("%s", state);
	in_state = strtoll(line + strlen("\nlock_hold_max_us: "), NULL, 10);
	/* A maximum since load: it only grows between the reads. */
	EXPECT_LE(before, in_state);
	EXPECT_LE(in_state, after);
}

TEST(lock_holds_is_one_line_with_the_site_of_the_longest_hold)
{
	char line[512], file[256];
	long long before, max, after, mean, slow, holds, at;
	int fd, n = 0;

	/* A context's creation and destruction take the engine lock. */
	fd = vgsched_open_render_node();
	ASSERT_LE(0, fd);
	ASSERT_NE(0, vgsched_ctx_create(fd, 8));
	close(fd);
	before = lock_hold_file();
	ASSERT_LE(0, before);
	ASSERT_EQ(0, vgsched_debugfs_read("lock_holds", line, sizeof(line)));
	after = lock_hold_file();
	ASSERT_EQ(4, sscanf(line, "lock_hold_max_us: %lld (taken at %255[^:]:%lld), mean %lld us, %n",
			    &max, file, &at, &mean, &n)) TH_LOG("%s", line);
	ASSERT_LT(0, n) TH_LOG("%s", line);
	EXPECT_LE(before, max);
	EXPECT_LE(max, after);
	EXPECT_EQ(0, strncmp(file, "drivers/gpu/drm/vgsched/", 24)) TH_LOG("%s", file);
	EXPECT_LT(0, at);
	ASSERT_EQ(2, sscanf(line + n, "%lld of %lld holds over 1000 us", &slow, &holds)) TH_LOG("%s", line);
	EXPECT_LE(slow, holds);
	EXPECT_LT(0, holds);
	/* One line, and nothing after it. */
	EXPECT_EQ(strchr(line, '\n'), line + strlen(line) - 1) TH_LOG("%s", line);
}

TEST(lock_hold_max_us_starts_again_on_a_write_of_0)
{
	static const char *const bad[] = { "1", "00", "-0", "0 ", "x", "" };
	__u64 words[1] = { vg_instr(DRM_VGSCHED_OP_END, 0, 0, 0, 0) };
	struct drm_vgsched_submit s;
	struct vg_buf prog;
	long long before, after;
	__u64 t0, t1;
	__u32 ctx;
	int fd;

	fd = vgsched_open_render_node();
	ASSERT_LE(0, fd);
	ctx = vgsched_ctx_create(fd, 8);
	ASSERT_NE(0, ctx);
	ASSERT_EQ(0, vg_program(fd, words, 1, &prog));
	/* A job, so that the engine lock has been held at least once. */
	s = vg_job(ctx, &prog, 1, NULL, 0, 1, 1, 1);
	ASSERT_EQ(0, vgsched_submit(fd, &s));
	ASSERT_EQ(0, vgsched_wait(fd, ctx, s.seqno, 60 * VG_SECOND_NS, NULL));
	before = lock_hold_file();
	ASSERT_LE(0, before);
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, vgsched_debugfs_write("lock_hold_max_us", bad[i])) TH_LOG("\"%s\"", bad[i]);
		/* Refused, it changed nothing: the maximum only grows. */
		EXPECT_LE(before, lock_hold_file());
	}
	ASSERT_EQ(0, vgsched_debugfs_write("lock_hold_max_us", "0\n"));
	/*
	 * Measured again from the write on: the write waits for a hold in
	 * progress and restarts the measurement under the lock, so every hold
	 * counted after it began and ended between t0 and t1.
	 */
	t0 = vg_now_ns();
	ASSERT_EQ(0, vgsched_debugfs_write("lock_hold_max_us", "0"));
	after = lock_hold_file();
	t1 = vg_now_ns();
	ASSERT_LE(0, after);
	EXPECT_LE(after, (long long)((t1 - t0) / 1000) + 1)
		TH_LOG("%lld us after the restart, which took %llu us (before: %lld us)", after,
		       (unsigned long long)((t1 - t0) / 1000), before);
	vg_buf_destroy(fd, &prog);
	vgsched_ctx_destroy(fd, ctx);
	close(fd);
}

TEST_HARNESS_MAIN
