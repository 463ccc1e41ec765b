// SPDX-License-Identifier: GPL-2.0
/*
 * The device's debugfs files: in the DRM core's directory of the device
 * (/sys/kernel/debug/dri/<minor>, whose name file names the driver), not
 * in a module-global one; all read-only but lock_hold_max_us (its owner
 * may write 0 to measure the longest hold again from then on; anything
 * else is refused with EINVAL), no policy file and, in a production
 * build, no benchmark; lock_hold_max_us holds one number, the one the
 * state file reports too; lock_holds is the state file's line on the
 * engine lock alone, with the site of the longest hold; state, read a
 * record at a time, shows each context once, between its head and its
 * tail, however small the reads.
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

/* Reads the debugfs file @name in reads of @chunk bytes into @buf. */
static int read_in_pieces(const char *name, char *buf, size_t size, size_t chunk)
{
	char dir[64], path[128];
	size_t len = 0;
	ssize_t n = 0;
	int fd;

	if (vgsched_debugfs_dir(dir, sizeof(dir)))
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	while (len + chunk < size && (n = read(fd, buf + len, chunk)) > 0)
		len += n;
	close(fd);
	buf[len] = 0;
	return n < 0 || len + chunk >= size ? -1 : 0;
}

/* How many lines of @text start with @prefix. */
static int lines_starting(const char *text, const char *prefix)
{
	int n = 0;

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		n += !strncmp(l, prefix, strlen(prefix));
	return n;
}

TEST(state_shows_each_context_once_between_its_head_and_its_tail)
{
	static char whole[1 << 16], pieces[1 << 16];
	static const size_t chunks[] = { 1, 64, 4095 };
	enum { CONTEXTS = 48 };
	__u32 ctx[CONTEXTS];
	char prefix[96];
	__u64 client;
	int fd;

	/* Enough contexts that the file outgrows a page. */
	fd = vgsched_open_render_node();
	ASSERT_LE(0, fd);
	for (int i = 0; i < CONTEXTS; i++) {
		ctx[i] = vgsched_ctx_create(fd, 8);
		ASSERT_NE(0, ctx[i]);
	}
	client = vgsched_client_id(fd, ctx[0]);
	ASSERT_NE(0, client);
	ASSERT_EQ(0, vgsched_debugfs_read("state", whole, sizeof(whole)));
	ASSERT_LT(4096, strlen(whole));
	for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
		const char *text[] = { whole, pieces };

		ASSERT_EQ(0, read_in_pieces("state", pieces, sizeof(pieces), chunks[c]));
		for (int t = 0; t < 2; t++) {
			const char *tail = strstr(text[t], "\nwork-groups on the device: ");
			const char *last_context = NULL;

			ASSERT_EQ(0, strncmp(text[t], "device: ", 8)) TH_LOG("%.200s", text[t]);
			ASSERT_NE(NULL, tail) TH_LOG("read in %zu-byte pieces", chunks[c]);
			EXPECT_EQ(1, lines_starting(text[t], "work-groups on the device: "));
			EXPECT_EQ(1, lines_starting(text[t], "slots: "));
			EXPECT_EQ(1, lines_starting(text[t], "executor: "));
			for (int i = 0; i < CONTEXTS; i++) {
				const char *at;

				snprintf(prefix, sizeof(prefix), "context client %llu id %u priority 8: ",
					 (unsigned long long)client, ctx[i]);
				EXPECT_EQ(1, lines_starting(text[t], prefix))
					TH_LOG("ctx %u, read in %zu-byte pieces", ctx[i], chunks[c]);
				at = strstr(text[t], prefix);
				if (at && (!last_context || at > last_context))
					last_context = at;
			}
			/* Contexts after the head's last line, before the tail. */
			ASSERT_NE(NULL, last_context);
			EXPECT_LT(strstr(text[t], "\nslots: "), last_context);
			EXPECT_LT(last_context, tail);
		}
	}
	close(fd);
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
