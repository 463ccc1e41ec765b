// SPDX-License-Identifier: GPL-2.0
/*
 * Shared storage of projects: buffer objects published under names in a
 * project's folders, opened by name with an access mode.
 *  - the permission matrix: each role (the project's owner, another
 *    member, a member of another project, a non-member, root) x each
 *    folder (a project folder, the owner's member folder, the other
 *    member's, a public folder) x each operation (open read-only, open
 *    read-write, mmap for writing, bind writable in a job that inverts a
 *    word, publish, unpublish) gets exactly the documented result, and no
 *    refused attempt changes the object or the folder;
 *  - through a file that holds an object read-only, mmap(PROT_WRITE) and
 *    mprotect() to writing are EACCES, a writable binding, a PRIME export
 *    and BO_CPU_PREP for writing are EACCES, a read-only binding works; a
 *    read-write opener's stores reach the others; a shared object's
 *    dma-buf maps read-only and cannot be imported into another file;
 *    racing the handle's open and close gets no export either; a dma-buf
 *    that outlived every handle of a published object, once the object is
 *    opened by name and exported anew, imports as EBUSY;
 *  - names: malformed paths and project names EINVAL, an unknown project
 *    or a member folder of a uid that is no member (whoever publishes)
 *    ENOENT, a name in use EEXIST, publishing an object one may only read
 *    EACCES, the published bytes charged to the member (EDQUOT past its
 *    request) and given back by unpublish;
 *  - the device's public folders, beside the projects: read-only for
 *    everyone, published by root and the owners the administrator lets;
 *  - the administrator's rules per object and member: read-only,
 *    read-write and download (PRIME export) as separate rights, in place
 *    of the folder's matrix, on every path, even for a handle held when
 *    the rule changes;
 *  - the pooling document's example: project 28, member 144, the folders
 *    algorithms, models and data sets.
 * Every role is a real uid: a forked child that setresuid()s to it, which
 * drops every capability; root's child keeps them.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vgsched_programs.h"
#include "vgsched_projects.h"

enum role { OWNER, MEMBER, OTHER_PROJECT, NON_MEMBER, ROOT, ROLES };
enum folder { F_PROJECT, F_MEMBER, F_OTHER, F_PUBLIC, F_DEVICE, FOLDERS };
enum op { OPEN_RO, OPEN_RW, MMAP_WRITE, BIND_WRITE, PUBLISH, UNPUBLISH, OPS };

static const uid_t role_uid[ROLES] = { 1001, 1002, 1003, 1004, 0 };
static const char *const role_name[ROLES] = {
	"owner", "member", "other-project", "non-member", "root",
};
static const char *const folder_name[FOLDERS] = {
	"project", "owner's member", "other member's", "public", "device's public",
};
/* Who publishes the fixture of each folder (1001 may publish in the device's). */
static const uid_t folder_publisher[FOLDERS] = { 1001, 1001, 1002, 1001, 1001 };
static const char *const op_name[OPS] = {
	"open-ro", "open-rw", "mmap-write", "bind-write", "publish", "unpublish",
};

/*
 * The documented rules (Documentation/admin-guide.rst, "Shared storage"),
 * written out rather than computed: 1001 is alpha's owner, 1002 a member
 * of alpha, 1003 a member of beta; F_MEMBER is 1001's folder, F_OTHER
 * 1002's; F_DEVICE a public folder of the device, beside the projects,
 * where the administrator let 1001 publish (publish_public).
 */
#define ALL(e) { e, e, e, e, e, e }
static const int expected[FOLDERS][ROLES][OPS] = {
	[F_PROJECT] = {
		[OWNER] = ALL(0),
		[MEMBER] = ALL(0),
		[OTHER_PROJECT] = ALL(-ENOENT),
		[NON_MEMBER] = ALL(-ENOENT),
		[ROOT] = ALL(0),
	},
	[F_MEMBER] = {
		[OWNER] = ALL(0),
		[MEMBER] = { 0, -EACCES, -EACCES, -EACCES, -EACCES, -EACCES },
		[OTHER_PROJECT] = ALL(-ENOENT),
		[NON_MEMBER] = ALL(-ENOENT),
		[ROOT] = ALL(0),
	},
	[F_OTHER] = {
		[OWNER] = { 0, -EACCES, -EACCES, -EACCES, -EACCES, -EACCES },
		[MEMBER] = ALL(0),
		[OTHER_PROJECT] = ALL(-ENOENT),
		[NON_MEMBER] = ALL(-ENOENT),
		[ROOT] = ALL(0),
	},
	[F_PUBLIC] = {
		[OWNER] = { 0, -EACCES, -EACCES, -EACCES, 0, 0 },
		[MEMBER] = { 0, -EACCES, -EACCES, -EACCES, -EACCES, -EACCES },
		[OTHER_PROJECT] = { 0, -EACCES, -EACCES, -EACCES, -EACCES, -EACCES },
		[NON_MEMBER] = { 0, -EACCES, -EACCES, -EACCES, -EACCES, -EACCES },
		[ROOT] = ALL(0),
	},
	[F_DEVICE] = {
		[OWNER] = { 0, -EACCES, -EACCES, -EACCES, 0, 0 },
		[MEMBER] = { 0, -EACCES, -EACCES, -EACCES, -EACCES, -EACCES },
		[OTHER_PROJECT] = { 0, -EACCES, -EACCES, -EACCES, -EACCES, -EACCES },
		[NON_MEMBER] = { 0, -EACCES, -EACCES, -EACCES, -EACCES, -EACCES },
		[ROOT] = ALL(0),
	},
};

/* Results outside errno space: a check after the operation failed. */
#define BAD_CONTENT 1000	/* a mapping showed other bytes than the object's */
#define BAD_MPROTECT 1001	/* a read-only mapping could be made writable */
#define BAD_READ_JOB 1002	/* a read-only binding did not work */
#define BAD_WRITABLE 1003	/* the open reported the wrong access */
#define BAD_SETUP 1004		/* the child could not do its part */

#define OBJ_SIZE 4096
#define OBJ_WORDS (OBJ_SIZE / 4)

/* Word @i of the fixture object of folder @f. */
static __u32 pattern(int f, int i)
{
	return 0xc0de0000u + (__u32)f * 0x1000u + (__u32)i;
}

static struct drm_vgsched_shared_path place(int f, const char *name)
{
	static const __u32 kind[FOLDERS] = {
		DRM_VGSCHED_FOLDER_PROJECT, DRM_VGSCHED_FOLDER_MEMBER, DRM_VGSCHED_FOLDER_MEMBER,
		DRM_VGSCHED_FOLDER_PUBLIC, DRM_VGSCHED_FOLDER_PUBLIC,
	};
	static const char *const folder[FOLDERS] = { "models", "1001", "1002", "releases",
						     "datasets" };

	/* The device's public folders: a path with no project. */
	return vg_path(f == F_DEVICE ? "" : "alpha", kind[f], folder[f], name);
}

/* The object at @path, opened read-only on @fd, holds folder @f's pattern. */
static int holds_pattern(int fd, const struct drm_vgsched_shared_path *path, int f)
{
	struct drm_vgsched_shared_open o;
	const __u32 *words;
	int ret;

	ret = vg_shared_open(fd, path, 0, &o);
	if (ret)
		return ret;
	words = vgsched_bo_mmap(fd, o.handle, OBJ_SIZE, PROT_READ, MAP_SHARED);
	ret = words == MAP_FAILED ? -errno : 0;
	for (int i = 0; !ret && i < OBJ_WORDS; i++)
		if (words[i] != pattern(f, i))
			ret = BAD_CONTENT;
	if (words != MAP_FAILED)
		munmap((void *)words, OBJ_SIZE);
	vgsched_bo_close(fd, o.handle);
	return ret;
}

/* 0 if a name is at @path (root's view), else -errno. */
static int name_exists(int fd, const struct drm_vgsched_shared_path *path)
{
	struct drm_vgsched_shared_open o;
	int ret = vg_shared_open(fd, path, 0, &o);

	if (!ret)
		vgsched_bo_close(fd, o.handle);
	return ret;
}

/* Opens @path read-write if the rules allow it, else read-only. */
static int open_best(int fd, const struct drm_vgsched_shared_path *path,
		     struct drm_vgsched_shared_open *o)
{
	int ret = vg_shared_open(fd, path, DRM_VGSCHED_SHARED_OPEN_WRITE, o);

	return ret == -EACCES ? vg_shared_open(fd, path, 0, o) : ret;
}

/* mmap(PROT_WRITE) of the best handle; a read-only one must also map for reading only. */
static int op_mmap_write(int fd, int f)
{
	struct drm_vgsched_shared_path data = place(f, "data");
	struct drm_vgsched_shared_open o;
	void *map;
	int ret;

	ret = open_best(fd, &data, &o);
	if (ret)
		return ret;
	map = vgsched_bo_mmap(fd, o.handle, OBJ_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED);
	if (map != MAP_FAILED) {
		munmap(map, OBJ_SIZE);
		return o.writable ? 0 : BAD_WRITABLE;
	}
	ret = -errno;
	if (o.writable)
		return BAD_WRITABLE;
	map = vgsched_bo_mmap(fd, o.handle, OBJ_SIZE, PROT_READ, MAP_SHARED);
	if (map == MAP_FAILED)
		return BAD_CONTENT;
	if (!mprotect(map, OBJ_SIZE, PROT_READ | PROT_WRITE) || errno != EACCES)
		ret = BAD_MPROTECT;
	munmap(map, OBJ_SIZE);
	return ret;
}

/*
 * A job binding the best handle writable and inverting word 0; when it is
 * accepted, its store must show, and a second job inverts the word back
 * so the object keeps its bytes for the next role. Through a read-only
 * handle the same binding marked read-only, with a program that only
 * loads, must run.
 */
static int op_bind_write(int fd, int f)
{
	struct drm_vgsched_shared_path data = place(f, "data");
	const __u64 invert[] = {
		vg_instr(DRM_VGSCHED_OP_MOVI, 0, 0, 0, 0),
		vg_instr(DRM_VGSCHED_OP_MOVI, 2, 0, 0, -1),
		vg_instr(DRM_VGSCHED_OP_LD, 1, 0, 0, 0),
		vg_instr(DRM_VGSCHED_OP_XOR, 1, 1, 2, 0),
		vg_instr(DRM_VGSCHED_OP_ST, 1, 0, 0, 0),
		vg_instr(DRM_VGSCHED_OP_END, 0, 0, 0, 0),
	};
	const __u64 load[] = {
		vg_instr(DRM_VGSCHED_OP_MOVI, 0, 0, 0, 0),
		vg_instr(DRM_VGSCHED_OP_LD, 1, 0, 0, 0),
		vg_instr(DRM_VGSCHED_OP_END, 0, 0, 0, 0),
	};
	struct drm_vgsched_shared_open o;
	struct drm_vgsched_submit s;
	struct vg_buf prog, ro_prog;
	int ret, status = -1;
	__u32 ctx;

	ret = open_best(fd, &data, &o);
	if (ret)
		return ret;
	ctx = vgsched_ctx_create(fd, 8);
	if (!ctx || vg_program(fd, invert, 6, &prog) || vg_program(fd, load, 3, &ro_prog))
		return BAD_SETUP;
	s = vg_job(ctx, &prog, 6, &o.handle, 1, 1, 1, 1);
	s.binding_access[0] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
	ret = vgsched_submit(fd, &s);
	for (int again = 0; !ret && again < 2; again++) {
		const __u32 *words;
		int inverted;

		if (vgsched_wait(fd, ctx, s.seqno, 10 * VG_SECOND_NS, &status) || status)
			return BAD_SETUP;
		words = vgsched_bo_mmap(fd, o.handle, OBJ_SIZE, PROT_READ, MAP_SHARED);
		if (words == MAP_FAILED)
			return BAD_SETUP;
		inverted = words[0] == ~pattern(f, 0);
		munmap((void *)words, OBJ_SIZE);
		if (inverted != !again)
			return BAD_CONTENT;
		if (!again && vgsched_submit(fd, &s))
			return BAD_SETUP;
	}
	if (ret && !o.writable) {
		s = vg_job(ctx, &ro_prog, 3, &o.handle, 1, 1, 1, 1);
		s.binding_access[0] = DRM_VGSCHED_BINDING_READ;
		if (vgsched_submit(fd, &s) ||
		    vgsched_wait(fd, ctx, s.seqno, 10 * VG_SECOND_NS, &status) || status)
			return BAD_READ_JOB;
	}
	return ret;
}

/* Publishes a new object of the caller's at "new-ROLE". */
static int op_publish(int fd, int f, int role)
{
	struct drm_vgsched_shared_path path;
	char name[32];
	__u32 handle;

	snprintf(name, sizeof(name), "new-%s", role_name[role]);
	path = place(f, name);
	handle = vgsched_bo_create(fd, OBJ_SIZE);
	return handle ? vg_publish(fd, &path, handle) : BAD_SETUP;
}

/* Removes the name "victim-ROLE" the fixture published for this role. */
static int op_unpublish(int fd, int f, int role)
{
	struct drm_vgsched_shared_path path;
	char name[32];

	snprintf(name, sizeof(name), "victim-%s", role_name[role]);
	path = place(f, name);
	return vg_unpublish(fd, &path);
}

/* One operation on a file of its own, as the caller's uid. */
static int do_op(int f, int role, int op)
{
	struct drm_vgsched_shared_path data = place(f, "data");
	struct drm_vgsched_shared_open o;
	int fd = vgsched_open_render_node(), ret = BAD_SETUP;

	if (fd < 0)
		return BAD_SETUP;
	switch (op) {
	case OPEN_RO:
		ret = holds_pattern(fd, &data, f);
		break;
	case OPEN_RW:
		ret = vg_shared_open(fd, &data, DRM_VGSCHED_SHARED_OPEN_WRITE, &o);
		if (!ret && (!o.writable || o.size != OBJ_SIZE))
			ret = BAD_WRITABLE;
		break;
	case MMAP_WRITE:
		ret = op_mmap_write(fd, f);
		break;
	case BIND_WRITE:
		ret = op_bind_write(fd, f);
		break;
	case PUBLISH:
		ret = op_publish(fd, f, role);
		break;
	case UNPUBLISH:
		ret = op_unpublish(fd, f, role);
		break;
	}
	close(fd);
	return ret;
}

/* Runs every operation on folder @f as @role in a child; results in @out. */
static int run_as(int role, int f, int out[OPS])
{
	int pipefd[2], status;
	pid_t pid;

	if (pipe(pipefd))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		uid_t uid = role_uid[role];
		int res[OPS];

		close(pipefd[0]);
		if (uid && (setresgid(uid, uid, uid) || setresuid(uid, uid, uid)))
			_exit(100);
		for (int op = 0; op < OPS; op++)
			res[op] = do_op(f, role, op);
		_exit(write(pipefd[1], res, sizeof(res)) == sizeof(res) ? 0 : 101);
	}
	close(pipefd[1]);
	status = read(pipefd[0], out, sizeof(int) * OPS) == (ssize_t)(sizeof(int) * OPS) ? 0 : -1;
	close(pipefd[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	return 0;
}

/* The members' part of the fixture: the "data" object of each folder and a "victim-ROLE" per role. */
static int members_publish(void *arg)
{
	int fd = vgsched_open_render_node();

	(void)arg;
	if (fd < 0)
		return 101;
	for (int f = 0; f < FOLDERS; f++) {
		struct drm_vgsched_shared_path path = place(f, "data");
		struct vg_buf buf;

		if (folder_publisher[f] != getuid())
			continue;
		if (vg_buf_create(fd, OBJ_SIZE, &buf))
			return 102;
		for (int i = 0; i < OBJ_WORDS; i++)
			((__u32 *)buf.map)[i] = pattern(f, i);
		if (vg_publish(fd, &path, buf.handle))
			return 103;
		vg_buf_destroy(fd, &buf);
		for (int r = 0; r < ROLES; r++) {
			char name[32];
			__u32 handle = vgsched_bo_create(fd, OBJ_SIZE);

			snprintf(name, sizeof(name), "victim-%s", role_name[r]);
			path = place(f, name);
			if (!handle || vg_publish(fd, &path, handle))
				return 104;
		}
	}
	close(fd);
	return 0;
}

FIXTURE(shared) {
	int fd;		/* root's file */
};

FIXTURE_SETUP(shared)
{
	char path[64];

	self->fd = vgsched_open_render_node_at(path, sizeof(path));
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, chmod(path, 0666));
	ASSERT_EQ(0, cfs_mkdir("alpha"));
	ASSERT_EQ(0, cfs_mkdir("beta"));
	/* Each project's budget, each member's request: resource, budget, request. */
	static const char *const amounts[][3] = {
		{ "contexts", "16", "4" },
		{ "bo_bytes", "16777216", "4194304" },
		{ "shared_bytes", "1048576", "262144" },
		{ "tiles", "8", "2" },
	};
	for (int r = OWNER; r <= OTHER_PROJECT; r++) {
		const char *project = r == OTHER_PROJECT ? "beta" : "alpha";
		char dir[64], attr[64];

		snprintf(dir, sizeof(dir), "%s/%u", project, role_uid[r]);
		ASSERT_EQ(0, cfs_mkdir(dir));
		for (int a = 0; a < 4; a++) {
			snprintf(attr, sizeof(attr), "budget_%s", amounts[a][0]);
			ASSERT_EQ(0, cfs_set(project, attr, amounts[a][1]));
			snprintf(attr, sizeof(attr), "request_%s", amounts[a][0]);
			ASSERT_EQ(0, cfs_set(dir, attr, amounts[a][2]));
		}
	}
	ASSERT_EQ(0, cfs_write("alpha/1001/role", "owner"));
	ASSERT_EQ(0, cfs_write("alpha/1001/publish_public", "1"));
}

FIXTURE_TEARDOWN(shared)
{
	static const char *const uids[] = { "1001", "1002", "1003" };

	static const char *const example[] = { "144", "145" };

	close(self->fd);
	remove_project("alpha", uids, 3);
	remove_project("beta", uids, 3);
	remove_project("28", example, 2);
	EXPECT_EQ(0, vgsched_module_unload());
	EXPECT_EQ(0, vgsched_module_load(""));
}

TEST_F(shared, permission_matrix)
{
	int failures = 0;

	ASSERT_EQ(0, as_uid(1001, members_publish, NULL));
	ASSERT_EQ(0, as_uid(1002, members_publish, NULL));
	for (int f = 0; f < FOLDERS; f++) {
		for (int role = 0; role < ROLES; role++) {
			int got[OPS];

			ASSERT_EQ(0, run_as(role, f, got)) TH_LOG("%s child", role_name[role]);
			for (int op = 0; op < OPS; op++) {
				if (got[op] == expected[f][role][op])
					continue;
				failures++;
				TH_LOG("%s folder, %s, %s: got %d, expected %d", folder_name[f],
				       role_name[role], op_name[op], got[op], expected[f][role][op]);
			}
			/* Nothing refused changed anything. */
			struct drm_vgsched_shared_path path = place(f, "data");
			char name[32];
			int ret;

			EXPECT_EQ(0, holds_pattern(self->fd, &path, f))
				TH_LOG("%s folder after %s", folder_name[f], role_name[role]);
			snprintf(name, sizeof(name), "victim-%s", role_name[role]);
			path = place(f, name);
			ret = name_exists(self->fd, &path);
			EXPECT_EQ(expected[f][role][UNPUBLISH] ? 0 : -ENOENT, ret)
				TH_LOG("%s's victim in the %s folder", role_name[role], folder_name[f]);
			snprintf(name, sizeof(name), "new-%s", role_name[role]);
			path = place(f, name);
			ret = name_exists(self->fd, &path);
			EXPECT_EQ(expected[f][role][PUBLISH] ? -ENOENT : 0, ret)
				TH_LOG("%s's new name in the %s folder", role_name[role], folder_name[f]);
		}
	}
	EXPECT_EQ(0, failures);
}

/* 1002 writes a project object through a read-write handle; 1001 reads it. */
static int member_writes(void *arg)
{
	struct drm_vgsched_shared_path path = place(F_PROJECT, "data");
	struct drm_vgsched_shared_open o;
	int fd = vgsched_open_render_node();
	__u32 *words;

	(void)arg;
	if (fd < 0 || vg_shared_open(fd, &path, DRM_VGSCHED_SHARED_OPEN_WRITE, &o))
		return 101;
	words = vgsched_bo_mmap(fd, o.handle, OBJ_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED);
	if (words == MAP_FAILED)
		return 102;
	words[7] = 0x5eed;
	munmap(words, OBJ_SIZE);
	close(fd);
	return 0;
}

/* A read-only holder's ways around: exporting, preparing a write, republishing, reopening. */
static int reader_tries_around(void *arg)
{
	struct drm_vgsched_shared_path path = place(F_MEMBER, "data");
	struct drm_vgsched_shared_path mine = vg_path("alpha", DRM_VGSCHED_FOLDER_PROJECT,
						      "models", "laundered");
	struct drm_vgsched_shared_open o;
	int fd = vgsched_open_render_node();
	const __u32 *words;

	(void)arg;
	if (fd < 0 || vg_shared_open(fd, &path, 0, &o) || o.writable)
		return 101;
	words = vgsched_bo_mmap(fd, o.handle, OBJ_SIZE, PROT_READ, MAP_SHARED);
	if (words == MAP_FAILED || words[7] != 0x5eed)
		return 102;
	/* Republishing what one may only read would launder the access. */
	if (vg_publish(fd, &mine, o.handle) != -EACCES)
		return 103;
	/* A dma-buf would give its importers the pages to write. */
	if (vg_prime_export(fd, o.handle) != -EACCES)
		return 104;
	/* Preparing to write would drop the device copy others' jobs use. */
	if (vgsched_bo_cpu_prep(fd, o.handle, DRM_VGSCHED_CPU_PREP_WRITE, 0) != -EACCES ||
	    vgsched_bo_cpu_prep(fd, o.handle, DRM_VGSCHED_CPU_PREP_READ, 0))
		return 105;
	/* Opening it read-write where the rules forbid it changes nothing. */
	struct drm_vgsched_shared_open rw;

	if (vg_shared_open(fd, &path, DRM_VGSCHED_SHARED_OPEN_WRITE, &rw) != -EACCES)
		return 106;
	/* A private mapping is refused, though no longer writable. */
	if (vgsched_bo_mmap(fd, o.handle, OBJ_SIZE, PROT_READ, MAP_PRIVATE) != MAP_FAILED ||
	    errno != EINVAL)
		return 108;
	close(fd);
	return 0;
}

/* The owner's dma-buf of its shared object maps read-only and imports nowhere. */
static int owner_exports(void *arg)
{
	struct drm_vgsched_shared_path path = place(F_MEMBER, "data");
	struct drm_vgsched_shared_open o;
	int fd = vgsched_open_render_node(), fd2 = vgsched_open_render_node(), dmabuf;
	void *map;

	(void)arg;
	if (fd < 0 || fd2 < 0 || vg_shared_open(fd, &path, DRM_VGSCHED_SHARED_OPEN_WRITE, &o))
		return 101;
	dmabuf = vg_prime_export(fd, o.handle);
	if (dmabuf < 0)
		return 102;
	map = mmap(NULL, OBJ_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, dmabuf, 0);
	if (map != MAP_FAILED || errno != EACCES)
		return 103;
	map = mmap(NULL, OBJ_SIZE, PROT_READ, MAP_SHARED, dmabuf, 0);
	if (map == MAP_FAILED || ((__u32 *)map)[7] != 0x5eed)
		return 104;
	munmap(map, OBJ_SIZE);
	if (vg_prime_import(fd2, dmabuf) || errno != EACCES)
		return 105;
	close(dmabuf);
	/*
	 * A dma-buf exported read-only (no DRM_RDWR) maps shared for reading.
	 * The object's dma-buf lives while it has handles: a fresh one needs
	 * them all closed first.
	 */
	struct drm_prime_handle ro = { .flags = DRM_CLOEXEC };

	if (vgsched_bo_close(fd, o.handle) ||
	    vg_shared_open(fd, &path, DRM_VGSCHED_SHARED_OPEN_WRITE, &o))
		return 108;
	ro.handle = o.handle;
	if (ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ro))
		return 106;
	map = mmap(NULL, OBJ_SIZE, PROT_READ, MAP_SHARED, ro.fd, 0);
	if (map == MAP_FAILED)
		return 107;
	munmap(map, OBJ_SIZE);
	close(ro.fd);
	close(fd2);
	close(fd);
	return 0;
}

/* 1001 copies the project object into its own folder (it may read and write both). */
static int owner_copies(void *arg)
{
	struct drm_vgsched_shared_path from = place(F_PROJECT, "data");
	struct drm_vgsched_shared_path to = place(F_MEMBER, "data");
	struct drm_vgsched_shared_open src, dst;
	int fd = vgsched_open_render_node();
	__u32 *a, *b;

	(void)arg;
	if (fd < 0 || vg_shared_open(fd, &from, 0, &src) ||
	    vg_shared_open(fd, &to, DRM_VGSCHED_SHARED_OPEN_WRITE, &dst))
		return 101;
	a = vgsched_bo_mmap(fd, src.handle, OBJ_SIZE, PROT_READ, MAP_SHARED);
	b = vgsched_bo_mmap(fd, dst.handle, OBJ_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED);
	if (a == MAP_FAILED || b == MAP_FAILED)
		return 102;
	memcpy(b, a, OBJ_SIZE);
	close(fd);
	return 0;
}

TEST_F(shared, read_only_holds_and_read_write_reaches)
{
	ASSERT_EQ(0, as_uid(1001, members_publish, NULL));
	ASSERT_EQ(0, as_uid(1002, member_writes, NULL));
	ASSERT_EQ(0, as_uid(1001, owner_copies, NULL));
	EXPECT_EQ(0, as_uid(1002, reader_tries_around, NULL));
	EXPECT_EQ(0, as_uid(1001, owner_exports, NULL));
	/* Again while the object has a dma-buf (root's): the reader's export is still refused. */
	struct drm_vgsched_shared_path mine = place(F_MEMBER, "data");
	struct drm_vgsched_shared_open rw;
	int held;

	ASSERT_EQ(0, vg_shared_open(self->fd, &mine, DRM_VGSCHED_SHARED_OPEN_WRITE, &rw));
	held = vg_prime_export(self->fd, rw.handle);
	ASSERT_GE(held, 0);
	EXPECT_EQ(0, as_uid(1002, reader_tries_around, NULL));
	close(held);
	/* The member's stores reached the object; nothing else changed it. */
	struct drm_vgsched_shared_path path = place(F_MEMBER, "data");
	struct drm_vgsched_shared_open o;
	const __u32 *words;

	ASSERT_EQ(0, vg_shared_open(self->fd, &path, 0, &o));
	words = vgsched_bo_mmap(self->fd, o.handle, OBJ_SIZE, PROT_READ, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, words);
	for (int i = 0; i < OBJ_WORDS; i++) {
		ASSERT_EQ(i == 7 ? 0x5eedu : pattern(F_PROJECT, i), words[i]) TH_LOG("word %d", i);
	}
	munmap((void *)words, OBJ_SIZE);
}

/* What the racing read-only holder did: its opens, its export tries, the exports that worked. */
struct handle_race {
	int fd;
	volatile int stop;
	long opens, tries, exported;
};

/* Opens 1001's member-folder object read-only and closes it again, until told to stop. */
static void *open_and_close(void *arg)
{
	struct drm_vgsched_shared_path path = place(F_MEMBER, "data");
	struct handle_race *r = arg;
	struct drm_vgsched_shared_open o;

	while (!r->stop) {
		if (vg_shared_open(r->fd, &path, 0, &o) || o.writable)
			break;
		r->opens++;
		vgsched_bo_close(r->fd, o.handle);
	}
	return NULL;
}

/*
 * 1002 may only read the object: one thread of its file opens and closes
 * the object's handle in a loop while this one asks for a dma-buf of every
 * handle number the opens can get, for 3 s. Exit status 0 if no export
 * ever worked.
 */
static int reader_races_its_handle(void *arg)
{
	struct handle_race r = { .fd = vgsched_open_render_node() };
	__u64 end = vg_now_ns() + 3 * VG_SECOND_NS;
	pthread_t t;

	(void)arg;
	if (r.fd < 0 || pthread_create(&t, NULL, open_and_close, &r))
		return 101;
	while (vg_now_ns() < end) {
		for (__u32 handle = 1; handle <= 2; handle++) {
			int dmabuf = vg_prime_export(r.fd, handle);

			r.tries++;
			if (dmabuf >= 0) {
				r.exported++;
				close(dmabuf);
			}
		}
	}
	r.stop = 1;
	pthread_join(t, NULL);
	printf("# %ld opens, %ld export tries, %ld exported\n", r.opens, r.tries, r.exported);
	close(r.fd);
	if (r.opens < 100 || r.tries < 100)
		return 102;
	return r.exported ? 103 : 0;
}

/*
 * A handle being made or closed is a handle too: a file that holds an
 * object read-only never gets a dma-buf of it, however its export races
 * the handle's open and close.
 */
TEST_F(shared, read_only_holder_racing_its_handle_never_exports)
{
	ASSERT_EQ(0, as_uid(1001, members_publish, NULL));
	EXPECT_EQ(0, as_uid(1002, reader_races_its_handle, NULL));
}

/*
 * 1001 publishes an object in its own folder, exports it, closes every
 * handle (the core forgets the dma-buf, which lives on), opens it by name
 * again and exports it anew. Importing the first dma-buf is refused
 * (EBUSY) rather than handing the core an object whose dma-buf is another;
 * the second imports as the handle the file has.
 */
static int old_dma_buf_comes_back(void *arg)
{
	struct drm_vgsched_shared_path path = vg_path("alpha", DRM_VGSCHED_FOLDER_MEMBER, "1001",
						      "twice");
	struct drm_vgsched_shared_open o;
	int fd = vgsched_open_render_node(), first, second;
	__u32 handle;

	(void)arg;
	if (fd < 0 || !(handle = vgsched_bo_create(fd, OBJ_SIZE)) || vg_publish(fd, &path, handle))
		return 101;
	first = vg_prime_export(fd, handle);
	if (first < 0 || vgsched_bo_close(fd, handle))
		return 102;
	if (vg_shared_open(fd, &path, DRM_VGSCHED_SHARED_OPEN_WRITE, &o))
		return 103;
	second = vg_prime_export(fd, o.handle);
	if (second < 0)
		return 104;
	if (vg_prime_import(fd, first) || errno != EBUSY)
		return 105;
	if (vg_prime_import(fd, second) != o.handle)
		return 106;
	close(first);
	close(second);
	close(fd);
	return 0;
}

TEST_F(shared, a_dma_buf_outliving_every_handle_imports_as_ebusy)
{
	ASSERT_EQ(0, as_uid(1001, old_dma_buf_comes_back, NULL));
}

/* Publishing to the member folder of 1009, who is in no project: there is no such folder. */
static int publishes_to_a_stranger(void *arg)
{
	struct drm_vgsched_shared_path path = vg_path("alpha", DRM_VGSCHED_FOLDER_MEMBER, "1009",
						      "gift");
	int fd = vgsched_open_render_node();
	__u32 handle;

	(void)arg;
	if (fd < 0 || !(handle = vgsched_bo_create(fd, OBJ_SIZE)))
		return 101;
	if (vg_publish(fd, &path, handle) != -ENOENT)
		return 102;
	close(fd);
	return 0;
}

/* 1002 publishes 4 KiB objects until its shared_bytes request (12 KiB here) stops it. */
static int member_fills_its_folder(void *arg)
{
	int fd = vgsched_open_render_node(), n = 0;
	char uid[16], name[32];

	(void)arg;
	snprintf(uid, sizeof(uid), "%u", getuid());
	if (fd < 0)
		return 101;
	for (;;) {
		struct drm_vgsched_shared_path path;
		__u32 handle = vgsched_bo_create(fd, OBJ_SIZE);
		int ret;

		snprintf(name, sizeof(name), "part-%d", n);
		path = vg_path("alpha", DRM_VGSCHED_FOLDER_MEMBER, uid, name);
		if (!handle)
			return 102;
		ret = vg_publish(fd, &path, handle);
		if (ret == -EDQUOT)
			break;
		if (ret || ++n > 3)
			return 103;
		/* The same name again. */
		if (vg_publish(fd, &path, handle) != -EEXIST)
			return 104;
	}
	close(fd);
	return n == 3 ? 0 : 105;
}

TEST_F(shared, names_and_charges)
{
	struct drm_vgsched_shared_path good = vg_path("alpha", DRM_VGSCHED_FOLDER_PROJECT,
						      "models", "m");
	struct drm_vgsched_shared_path bad[8];
	struct drm_vgsched_shared_publish badflags = { .path = good };
	struct drm_vgsched_shared_open o;
	char listing[4096];
	__u32 handle;

	EXPECT_EQ(-EINVAL, cfs_mkdir("ml team")) TH_LOG("a project name paths cannot hold");
	EXPECT_EQ(-EINVAL, cfs_mkdir("a-project-name-of-thirty-two-ch" "x"));
	EXPECT_EQ(0, cfs_mkdir("a-project-name-of-thirty-one-ch"));
	EXPECT_EQ(0, cfs_rmdir("a-project-name-of-thirty-one-ch"));
	for (int i = 0; i < 8; i++)
		bad[i] = good;
	strcpy(bad[0].name, "..");
	strcpy(bad[1].name, "a/b");
	bad[2].name[0] = 0;
	bad[3].kind = 3;
	bad[4].member_uid = 1001;			/* a project folder has no uid */
	bad[5].kind = DRM_VGSCHED_FOLDER_MEMBER;	/* ... a member folder no name */
	memset(bad[6].folder, 'x', sizeof(bad[6].folder));	/* no NUL */
	strcpy(bad[7].project, ".alpha");
	handle = vgsched_bo_create(self->fd, OBJ_SIZE);
	ASSERT_NE(0, handle);
	for (int i = 0; i < 8; i++) {
		EXPECT_EQ(-EINVAL, vg_publish(self->fd, &bad[i], handle)) TH_LOG("path %d", i);
		EXPECT_EQ(-EINVAL, vg_shared_open(self->fd, &bad[i], 0, &o)) TH_LOG("path %d", i);
	}
	badflags.handle = handle;
	badflags.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_VGSCHED_SHARED_PUBLISH, &badflags));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-EINVAL, vg_shared_open(self->fd, &good, 2, &o));
	struct drm_vgsched_shared_path nowhere = vg_path("gamma", DRM_VGSCHED_FOLDER_PUBLIC, "x", "m");

	EXPECT_EQ(-ENOENT, vg_publish(self->fd, &nowhere, handle));
	/* A member folder of a uid that is no member: ENOENT for everyone, the uid included. */
	struct drm_vgsched_shared_path stranger = vg_path("alpha", DRM_VGSCHED_FOLDER_MEMBER,
							  "1009", "gift");

	EXPECT_EQ(-ENOENT, vg_publish(self->fd, &stranger, handle));
	EXPECT_EQ(0, as_uid(1001, publishes_to_a_stranger, NULL)) TH_LOG("the owner");
	EXPECT_EQ(0, as_uid(1002, publishes_to_a_stranger, NULL)) TH_LOG("a member");
	EXPECT_EQ(0, as_uid(1009, publishes_to_a_stranger, NULL)) TH_LOG("the uid itself");
	EXPECT_EQ(-ENOENT, vg_publish(self->fd, &good, handle + 100));
	EXPECT_EQ(-ENOENT, vg_shared_open(self->fd, &good, 0, &o));
	EXPECT_EQ(-ENOENT, vg_unpublish(self->fd, &good));
	ASSERT_EQ(0, vg_publish(self->fd, &good, handle));
	EXPECT_EQ(-EEXIST, vg_publish(self->fd, &good, handle));
	ASSERT_EQ(0, cfs_read("alpha/shared", listing, sizeof(listing)));
	EXPECT_STREQ("project/models/m 4096 0\n", listing);

	/* 12 KiB of shared bytes for 1002: three objects, then EDQUOT. */
	ASSERT_EQ(0, cfs_write("alpha/1002/request_shared_bytes", "12288"));
	EXPECT_EQ(0, as_uid(1002, member_fills_its_folder, NULL));
	EXPECT_EQ(12288, cfs_usage("alpha/1002/usage", "shared_bytes"));
	/* Unpublishing gives its bytes back; the objects outlive their creator's file. */
	struct drm_vgsched_shared_path part = vg_path("alpha", DRM_VGSCHED_FOLDER_MEMBER, "1002",
						      "part-0");

	ASSERT_EQ(0, vg_shared_open(self->fd, &part, 0, &o));
	EXPECT_EQ(0, vg_unpublish(self->fd, &part));
	EXPECT_EQ(8192, cfs_usage("alpha/1002/usage", "shared_bytes"));
	EXPECT_EQ(0, vgsched_bo_close(self->fd, o.handle));
	/* Removing the project drops its names (the teardown unloads the module: nothing left). */
	EXPECT_EQ(0, cfs_rmdir("alpha/1002"));
}

/* Opens @path on a new file of the caller's as @flags asks; 0 or -errno. */
static int open_as_asked(const struct drm_vgsched_shared_path *path, __u32 flags)
{
	struct drm_vgsched_shared_open o;
	int fd = vgsched_open_render_node(), ret;

	if (fd < 0)
		return BAD_SETUP;
	ret = vg_shared_open(fd, path, flags, &o);
	close(fd);
	return ret;
}

/* Opens @path read-only and exports the handle as a dma-buf; 0 or -errno. */
static int download(const struct drm_vgsched_shared_path *path)
{
	struct drm_vgsched_shared_open o;
	int fd = vgsched_open_render_node(), ret;

	if (fd < 0)
		return BAD_SETUP;
	ret = vg_shared_open(fd, path, 0, &o);
	if (!ret) {
		ret = vg_prime_export(fd, o.handle);
		if (ret >= 0) {
			close(ret);
			ret = 0;
		}
	}
	close(fd);
	return ret;
}

/* What 1002 gets on alpha's models/data: open read-only, read-write, download. */
struct rule_view {
	int ro, rw, dl;
};

static int view_project_data(void *arg)
{
	struct drm_vgsched_shared_path path = place(F_PROJECT, "data");
	struct rule_view v = {
		.ro = open_as_asked(&path, 0),
		.rw = open_as_asked(&path, DRM_VGSCHED_SHARED_OPEN_WRITE),
		.dl = download(&path),
	};

	return write(*(int *)arg, &v, sizeof(v)) == sizeof(v) ? 0 : 101;
}

/* 1002's view of models/data under the rules now in force. */
static struct rule_view view_of_1002(void)
{
	struct rule_view v = { BAD_SETUP, BAD_SETUP, BAD_SETUP };
	int io[2];

	if (pipe(io))
		return v;
	if (as_uid(1002, view_project_data, &io[1]) || read(io[0], &v, sizeof(v)) != sizeof(v))
		v.ro = BAD_SETUP;
	close(io[0]);
	close(io[1]);
	return v;
}

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	siglongjmp(bus_jmp, 1);
}

/* Whether storing @v at @p raises SIGBUS (the store is then not made). */
static int store_faults(volatile uint32_t *p, uint32_t v)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	int faulted = 0;

	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(bus_jmp, 1) == 0)
		*p = v;
	else
		faulted = 1;
	sigaction(SIGBUS, &old, NULL);
	return faulted;
}

/*
 * 1002, a member, opens 1001's member folder read-write (a rule lets it),
 * maps it for writing, cannot publish it elsewhere (only a rule lets it
 * write), and waits; the administrator then removes its rule, and the
 * folder's matrix (read-only for another member) holds again: its
 * writable mapping, a writable binding and the export through the handle
 * it holds are refused from then on, a read-only binding runs; of the
 * mappings it made before, a read-only one cannot be made writable by
 * mprotect() (EACCES) and a store through a writable one faults (SIGBUS)
 * and changes nothing.
 */
static int writer_loses_its_right(void *arg)
{
	struct drm_vgsched_shared_path path = place(F_MEMBER, "data");
	const __u64 load[] = {
		vg_instr(DRM_VGSCHED_OP_MOVI, 0, 0, 0, 0),
		vg_instr(DRM_VGSCHED_OP_LD, 1, 0, 0, 0),
		vg_instr(DRM_VGSCHED_OP_END, 0, 0, 0, 0),
	};
	struct drm_vgsched_shared_open o;
	struct drm_vgsched_submit sub;
	struct vg_buf prog;
	int *io = arg, fd = vgsched_open_render_node();
	__u32 ctx;
	void *map, *ro;
	volatile uint32_t *rw;

	if (fd < 0 || vg_shared_open(fd, &path, DRM_VGSCHED_SHARED_OPEN_WRITE, &o) || !o.writable)
		return 101;
	map = vgsched_bo_mmap(fd, o.handle, OBJ_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED);
	if (map == MAP_FAILED)
		return 102;
	munmap(map, OBJ_SIZE);
	/* Kept across the revocation: one writable (and written), one read-only. */
	rw = vgsched_bo_mmap(fd, o.handle, OBJ_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED);
	ro = vgsched_bo_mmap(fd, o.handle, OBJ_SIZE, PROT_READ, MAP_SHARED);
	if (rw == MAP_FAILED || ro == MAP_FAILED || store_faults(&rw[1], 0x600du))
		return 110;
	struct drm_vgsched_shared_path elsewhere = place(F_PROJECT, "copy");

	if (vg_publish(fd, &elsewhere, o.handle) != -EACCES)
		return 109;
	ctx = vgsched_ctx_create(fd, 8);
	if (!ctx || vg_program(fd, load, 3, &prog))
		return 103;
	/* The administrator removes 1002's rule. */
	if (await_revocation(io[1], io[0]))
		return 104;
	map = vgsched_bo_mmap(fd, o.handle, OBJ_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED);
	if (map != MAP_FAILED || errno != EACCES)
		return 105;
	/* The mappings made before lose the right too. */
	if (!mprotect(ro, OBJ_SIZE, PROT_READ | PROT_WRITE) || errno != EACCES)
		return 111;
	if (!store_faults(&rw[1], 0xbad0700au) || rw[1] != 0x600du)
		return 112;
	munmap(ro, OBJ_SIZE);
	munmap((void *)rw, OBJ_SIZE);
	sub = vg_job(ctx, &prog, 3, &o.handle, 1, 1, 1, 1);
	sub.binding_access[0] = DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE;
	if (!vgsched_submit(fd, &sub) || errno != EACCES)
		return 106;
	sub.binding_access[0] = DRM_VGSCHED_BINDING_READ;
	if (vgsched_submit(fd, &sub))
		return 107;
	if (vg_prime_export(fd, o.handle) != -EACCES)
		return 108;
	close(fd);
	return 0;
}

/*
 * The administrator's rules per object and member (configfs rules): a
 * rule gives one member its own rights on one object in place of the
 * folder's matrix: read-only, read-write and download (PRIME export) are
 * separate, so a reader may download and a writer may not; a rule lowered
 * while the member holds the object takes effect on every path (mapping,
 * binding, export); "default" brings the matrix back. Malformed rules are
 * EINVAL, an unknown name or a uid that is not a member ENOENT.
 */
TEST_F(shared, rules_per_member_and_object)
{
	static const char *const bad[] = {
		"alpha/project/models 1002 r",	    "alpha/project/models/data 1002 rx",
		"alpha/project/models/data 1002",   "alpha/project/models/data x r",
		"alpha/project/models/data 0 r",    "alpha/folder/models/data 1002 r",
		"alpha/project/models/data 1002 r d",
	};
	struct rule_view v;
	char buf[1024];
	int io[2], to, from;
	pid_t pid;

	ASSERT_EQ(0, as_uid(1001, members_publish, NULL));
	ASSERT_EQ(0, as_uid(1002, members_publish, NULL));
	/* The matrix: a member reads and writes a project folder; the writer may download. */
	v = view_of_1002();
	EXPECT_EQ(0, v.ro);
	EXPECT_EQ(0, v.rw);
	EXPECT_EQ(-EACCES, v.dl) TH_LOG("a read-only holder downloads nothing by default");
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, cfs_write("rules", bad[i])) TH_LOG("'%s'", bad[i]);
	}
	EXPECT_EQ(-ENOENT, cfs_write("rules", "alpha/project/models/nothing 1002 r"));
	EXPECT_EQ(-ENOENT, cfs_write("rules", "gamma/project/models/data 1002 r"));
	EXPECT_EQ(-ENOENT, cfs_write("rules", "alpha/project/models/data 1004 r"))
		TH_LOG("1004 is no member of alpha");
	ASSERT_EQ(0, cfs_read("rules", buf, sizeof(buf)));
	EXPECT_STREQ("", buf);

	/* Read-only for 1002: no writing, no download. */
	ASSERT_EQ(0, cfs_write("rules", "alpha/project/models/data 1002 r\n"));
	v = view_of_1002();
	EXPECT_EQ(0, v.ro);
	EXPECT_EQ(-EACCES, v.rw);
	EXPECT_EQ(-EACCES, v.dl);
	/* Read and download, still no writing. */
	ASSERT_EQ(0, cfs_write("rules", "alpha/project/models/data 1002 dr"));
	v = view_of_1002();
	EXPECT_EQ(0, v.ro);
	EXPECT_EQ(-EACCES, v.rw);
	EXPECT_EQ(0, v.dl) TH_LOG("the download right alone exports");
	/* Nothing at all. */
	ASSERT_EQ(0, cfs_write("rules", "alpha/project/models/data 1002 -"));
	v = view_of_1002();
	EXPECT_EQ(-EACCES, v.ro);
	EXPECT_EQ(-EACCES, v.rw);
	ASSERT_EQ(0, cfs_read("rules", buf, sizeof(buf)));
	EXPECT_STREQ("alpha/project/models/data 1002 ---\n", buf);
	/* The matrix again. */
	ASSERT_EQ(0, cfs_write("rules", "alpha/project/models/data 1002 default"));
	v = view_of_1002();
	EXPECT_EQ(0, v.rw);
	ASSERT_EQ(0, cfs_read("rules", buf, sizeof(buf)));
	EXPECT_STREQ("", buf);

	/* Another member's folder, read-only by the matrix, made read-write for 1002, then lowered. */
	ASSERT_EQ(0, cfs_write("rules", "alpha/member/1001/data 1002 rw"));
	pid = fork_talking(1002, writer_loses_its_right, io, &io[0], &io[1], &to, &from);
	ASSERT_GE(pid, 0);
	EXPECT_EQ(0, revoke_for_child(pid, from, to, "rules", "alpha/member/1001/data 1002 default"));
	ASSERT_EQ(0, cfs_read("rules", buf, sizeof(buf)));
	EXPECT_STREQ("", buf);
	/* A rule goes with its member. */
	ASSERT_EQ(0, cfs_write("rules", "alpha/project/models/data 1002 r"));
	ASSERT_EQ(0, cfs_rmdir("alpha/1002"));
	ASSERT_EQ(0, cfs_read("rules", buf, sizeof(buf)));
	EXPECT_STREQ("", buf);
}

/*
 * The device's public folders, beside the projects (a path with no
 * project): root publishes there, an owner only once the administrator
 * lets it (publish_public), whose bytes are then charged to it; every
 * user reads, none writes; the subsystem's public attribute lists the
 * names; a path with no project in any other kind of folder is EINVAL.
 */
static int owner_publishes_on_the_device(void *arg)
{
	struct drm_vgsched_shared_path path = vg_path("", DRM_VGSCHED_FOLDER_PUBLIC, "models", "base");
	int fd = vgsched_open_render_node();
	__u32 handle = fd < 0 ? 0 : vgsched_bo_create(fd, OBJ_SIZE);

	if (!handle)
		return 101;
	return -vg_publish(fd, &path, handle);
}

static int owner_unpublishes_roots(void *arg)
{
	struct drm_vgsched_shared_path path = vg_path("", DRM_VGSCHED_FOLDER_PUBLIC, "models", "root");
	int fd = vgsched_open_render_node();

	(void)arg;
	return fd < 0 ? 101 : -vg_unpublish(fd, &path);
}

TEST_F(shared, device_public_folders)
{
	struct drm_vgsched_shared_path path = vg_path("", DRM_VGSCHED_FOLDER_PUBLIC, "models", "base");
	struct drm_vgsched_shared_path bad = vg_path("", DRM_VGSCHED_FOLDER_PROJECT, "models", "base");
	char buf[256];

	ASSERT_EQ(0, cfs_write("alpha/1001/publish_public", "0"));
	EXPECT_EQ(-EINVAL, cfs_write("alpha/1001/publish_public", "2"));
	EXPECT_EQ(EACCES, as_uid(1001, owner_publishes_on_the_device, NULL));
	EXPECT_EQ(-ENOENT, name_exists(self->fd, &path));
	ASSERT_EQ(0, cfs_write("alpha/1001/publish_public", "1"));
	EXPECT_EQ(EACCES, as_uid(1002, owner_publishes_on_the_device, NULL)) TH_LOG("a plain member");
	EXPECT_EQ(0, as_uid(1001, owner_publishes_on_the_device, NULL));
	EXPECT_EQ(0, name_exists(self->fd, &path));
	/* Another publisher removes only its own names. */
	struct drm_vgsched_shared_path roots = vg_path("", DRM_VGSCHED_FOLDER_PUBLIC, "models", "root");

	ASSERT_EQ(0, vg_publish(self->fd, &roots, vgsched_bo_create(self->fd, OBJ_SIZE)));
	EXPECT_EQ(EACCES, as_uid(1001, owner_unpublishes_roots, NULL));
	EXPECT_EQ(0, name_exists(self->fd, &roots));
	EXPECT_EQ(0, vg_unpublish(self->fd, &roots));
	EXPECT_EQ(OBJ_SIZE, cfs_usage("alpha/1001/usage", "shared_bytes"));
	ASSERT_EQ(0, cfs_read("public", buf, sizeof(buf)));
	EXPECT_STREQ("public/models/base 4096 1001\n", buf);
	EXPECT_EQ(-EINVAL, vg_publish(self->fd, &bad, vgsched_bo_create(self->fd, OBJ_SIZE)));
	/* Root empties it; its bytes come back to 1001. */
	EXPECT_EQ(0, vg_unpublish(self->fd, &path));
	EXPECT_EQ(0, cfs_usage("alpha/1001/usage", "shared_bytes"));
	ASSERT_EQ(0, cfs_read("public", buf, sizeof(buf)));
	EXPECT_STREQ("", buf);
}

/* The paths of the pooling document's shared-storage example. */
enum {
	EX_ALGORITHMS,
	EX_MODELS,
	EX_DATASETS,
	EX_NOTES,
	EX_PUBLIC_ALGORITHMS,
	EX_PUBLIC_MODELS,
	EX_PUBLIC_DATASETS,
	EX_PATHS
};

static struct drm_vgsched_shared_path example_path(int i)
{
	switch (i) {
	case EX_ALGORITHMS:
		return vg_path("28", DRM_VGSCHED_FOLDER_PROJECT, "algorithms", "detector");
	case EX_MODELS:
		return vg_path("28", DRM_VGSCHED_FOLDER_PROJECT, "models", "resnet");
	case EX_DATASETS:
		return vg_path("28", DRM_VGSCHED_FOLDER_PROJECT, "datasets", "train");
	case EX_NOTES:
		return vg_path("28", DRM_VGSCHED_FOLDER_MEMBER, "144", "notes");
	case EX_PUBLIC_ALGORITHMS:
		return vg_path("", DRM_VGSCHED_FOLDER_PUBLIC, "algorithms", "yolo");
	case EX_PUBLIC_MODELS:
		return vg_path("", DRM_VGSCHED_FOLDER_PUBLIC, "models", "bert");
	default:
		return vg_path("", DRM_VGSCHED_FOLDER_PUBLIC, "datasets", "mnist");
	}
}

/* Member 144 publishes in the project's three folders and its own. */
static int member_144_publishes(void *arg)
{
	int fd = vgsched_open_render_node();

	(void)arg;
	for (int i = EX_ALGORITHMS; i <= EX_NOTES; i++) {
		struct drm_vgsched_shared_path path = example_path(i);
		__u32 handle = fd < 0 ? 0 : vgsched_bo_create(fd, OBJ_SIZE);

		if (!handle || vg_publish(fd, &path, handle))
			return 101 + i;
	}
	close(fd);
	return 0;
}

/* Each path opened read-only, then read-write: results into the pipe of @arg. */
static int probe_example(void *arg)
{
	int res[EX_PATHS][2];

	for (int i = 0; i < EX_PATHS; i++) {
		struct drm_vgsched_shared_path path = example_path(i);

		res[i][0] = open_as_asked(&path, 0);
		res[i][1] = open_as_asked(&path, DRM_VGSCHED_SHARED_OPEN_WRITE);
	}
	return write(*(int *)arg, res, sizeof(res)) == sizeof(res) ? 0 : 101;
}

/*
 * The pooling document's example of shared storage: project 28 with the
 * members 144, 264, 265 and 96. Its project folders for algorithms,
 * models and data sets are read-write for its members; member 144's own
 * folder is read-write for it and read-only for the three others; the
 * three public folders beside the projects (public algorithms, models and
 * data sets) are read-only for everyone; a user outside project 28 sees
 * none of its folders.
 */
TEST_F(shared, the_documents_example_project_28_member_144)
{
	static const uid_t uids[] = { 144, 264, 265, 96, 1004 };
	/* Paths as EX_*: the project's three, 144's own, the three public. */
#define EX_PUBLIC_RO { 0, -EACCES }, { 0, -EACCES }, { 0, -EACCES }
#define EX_OTHER_MEMBER { { 0, 0 }, { 0, 0 }, { 0, 0 }, { 0, -EACCES }, EX_PUBLIC_RO }
	/* [user][path][read-only, read-write] */
	static const int want[5][EX_PATHS][2] = {
		{ { 0, 0 }, { 0, 0 }, { 0, 0 }, { 0, 0 }, EX_PUBLIC_RO },
		EX_OTHER_MEMBER,
		EX_OTHER_MEMBER,
		EX_OTHER_MEMBER,
		{ { -ENOENT, -ENOENT }, { -ENOENT, -ENOENT }, { -ENOENT, -ENOENT },
		  { -ENOENT, -ENOENT }, EX_PUBLIC_RO },
	};
#undef EX_OTHER_MEMBER
#undef EX_PUBLIC_RO
	static const char *const members[] = { "144", "264", "265", "96" };
	struct drm_vgsched_shared_path pub[3];

	for (int i = 0; i < 3; i++)
		pub[i] = example_path(EX_PUBLIC_ALGORITHMS + i);
	ASSERT_EQ(0, cfs_mkdir("28"));
	ASSERT_EQ(0, cfs_write("28/budget_contexts", "16"));
	ASSERT_EQ(0, cfs_write("28/budget_bo_bytes", "2097152"));
	ASSERT_EQ(0, cfs_write("28/budget_shared_bytes", "131072"));
	for (int m = 0; m < 4; m++) {
		char dir[32];

		snprintf(dir, sizeof(dir), "28/%s", members[m]);
		ASSERT_EQ(0, cfs_mkdir(dir));
		ASSERT_EQ(0, cfs_set(dir, "request_contexts", "4"));
		ASSERT_EQ(0, cfs_set(dir, "request_bo_bytes", "524288"));
		ASSERT_EQ(0, cfs_set(dir, "request_shared_bytes", "32768"));
	}
	ASSERT_EQ(0, as_uid(144, member_144_publishes, NULL));
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, vg_publish(self->fd, &pub[i], vgsched_bo_create(self->fd, OBJ_SIZE)));
	for (int u = 0; u < 5; u++) {
		int got[EX_PATHS][2], io[2];

		ASSERT_EQ(0, pipe(io));
		ASSERT_EQ(0, as_uid(uids[u], probe_example, &io[1]));
		ASSERT_EQ(sizeof(got), read(io[0], got, sizeof(got)));
		close(io[0]);
		close(io[1]);
		for (int i = 0; i < EX_PATHS; i++) {
			EXPECT_EQ(want[u][i][0], got[i][0]) TH_LOG("uid %u, path %d, read-only", uids[u], i);
			EXPECT_EQ(want[u][i][1], got[i][1]) TH_LOG("uid %u, path %d, read-write", uids[u], i);
		}
	}
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(0, vg_unpublish(self->fd, &pub[i]));
	remove_project("28", members, 4);
}

/*
 * 1002 maps 1001's member-folder object read-write (a rule lets it),
 * writes it, closes its handle and keeps the mapping; once the
 * administrator removes the rule, a store through it raises SIGBUS: the
 * mapping's right went with the rule, whatever handles are left.
 */
static int closes_handle_keeps_mapping(void *arg)
{
	struct drm_vgsched_shared_path path = place(F_MEMBER, "data");
	struct drm_vgsched_shared_open o;
	int *io = arg, fd = vgsched_open_render_node();
	volatile uint32_t *rw;

	if (fd < 0 || vg_shared_open(fd, &path, DRM_VGSCHED_SHARED_OPEN_WRITE, &o) || !o.writable)
		return 101;
	rw = vgsched_bo_mmap(fd, o.handle, OBJ_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED);
	if (rw == MAP_FAILED || store_faults(&rw[1], 0x600du))
		return 102;
	/* Only the mapping is kept. */
	if (vgsched_bo_close(fd, o.handle))
		return 103;
	if (await_revocation(io[1], io[0]))
		return 104;
	/* The rule is gone: per admin-guide.rst the store must raise SIGBUS. */
	if (store_faults(&rw[2], 0xbad0700au))
		return 0;
	printf("# 1002 stored 0x%x after its rule was removed\n", rw[2]);
	return 50;
}

TEST_F(shared, a_rule_removed_after_the_handle_closed_ends_the_mappings_right)
{
	struct drm_vgsched_shared_path path = place(F_MEMBER, "data");
	struct drm_vgsched_shared_open o;
	const volatile uint32_t *words;
	int io[2], to, from, ret;
	pid_t pid;

	ASSERT_EQ(0, as_uid(1001, members_publish, NULL));
	ASSERT_EQ(0, cfs_write("rules", "alpha/member/1001/data 1002 rw"));
	pid = fork_talking(1002, closes_handle_keeps_mapping, io, &io[0], &io[1], &to, &from);
	ASSERT_GE(pid, 0);
	ret = revoke_for_child(pid, from, to, "rules", "alpha/member/1001/data 1002 default");
	ASSERT_EQ(0, vg_shared_open(self->fd, &path, 0, &o));
	words = vgsched_bo_mmap(self->fd, o.handle, OBJ_SIZE, PROT_READ, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, words);
	printf("# child status %d, word 2 of 1001's object as root sees it: 0x%x\n", ret, words[2]);
	munmap((void *)words, OBJ_SIZE);
	vgsched_bo_close(self->fd, o.handle);
	EXPECT_EQ(0, ret) TH_LOG("a write through a mapping survived the rule's removal");
}

/*
 * 1002 maps 1001's member-folder object read-write (a rule lets it) and
 * writes it; once the administrator removes 1002 from the project (its
 * rules go with it), a store through that mapping raises SIGBUS and a
 * read-only mapping cannot be made writable.
 */
static int keeps_writing_across_removal(void *arg)
{
	struct drm_vgsched_shared_path path = place(F_MEMBER, "data");
	struct drm_vgsched_shared_open o;
	int *io = arg, fd = vgsched_open_render_node();
	volatile uint32_t *rw;
	void *ro;
	int faulted, mp;

	if (fd < 0 || vg_shared_open(fd, &path, DRM_VGSCHED_SHARED_OPEN_WRITE, &o) || !o.writable)
		return 101;
	rw = vgsched_bo_mmap(fd, o.handle, OBJ_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED);
	ro = vgsched_bo_mmap(fd, o.handle, OBJ_SIZE, PROT_READ, MAP_SHARED);
	if (rw == MAP_FAILED || ro == MAP_FAILED || store_faults(&rw[1], 0x600du))
		return 102;
	if (await_revocation(io[1], io[0]))
		return 104;
	faulted = store_faults(&rw[3], 0xbad0700au);
	mp = mprotect(ro, OBJ_SIZE, PROT_READ | PROT_WRITE) ? errno : 0;
	printf("# after member removal: store faulted=%d (word now 0x%x), mprotect(rw) of a ro map -> %s\n",
	       faulted, rw[3], mp ? strerror(mp) : "ok");
	return faulted && mp == EACCES ? 0 : 51;
}

TEST_F(shared, a_removed_members_mappings_lose_write_access)
{
	int io[2], to, from, status = -1;
	pid_t pid;
	char c;

	ASSERT_EQ(0, as_uid(1001, members_publish, NULL));
	ASSERT_EQ(0, cfs_write("rules", "alpha/member/1001/data 1002 rw"));
	pid = fork_talking(1002, keeps_writing_across_removal, io, &io[0], &io[1], &to, &from);
	ASSERT_GE(pid, 0);
	ASSERT_EQ(1, read(from, &c, 1));
	EXPECT_EQ(0, cfs_rmdir("alpha/1002"));
	ASSERT_EQ(1, write(to, "r", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("a removed member kept writing");
}

TEST_HARNESS_MAIN
