/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the tests of projects: the configfs tree
 * /sys/kernel/config/vgsched/ and children running as other uids.
 */
#ifndef VGSCHED_PROJECTS_H
#define VGSCHED_PROJECTS_H

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vgsched_test_util.h"

#define CFS "/sys/kernel/config/vgsched"

/* mkdir of @path under the subsystem; 0 or -errno. */
static inline int cfs_mkdir(const char *path)
{
	char full[256];

	snprintf(full, sizeof(full), CFS "/%s", path);
	return mkdir(full, 0755) ? -errno : 0;
}

/* rmdir of @path under the subsystem; 0 or -errno. */
static inline int cfs_rmdir(const char *path)
{
	char full[256];

	snprintf(full, sizeof(full), CFS "/%s", path);
	return rmdir(full) ? -errno : 0;
}

/* Writes @value to attribute @path; 0 or -errno. */
static inline int cfs_write(const char *path, const char *value)
{
	char full[256];

	snprintf(full, sizeof(full), CFS "/%s", path);
	return vg_write_file(full, value);
}

/* Writes @value to attribute @attr of directory @dir; 0 or -errno. */
static inline int cfs_set(const char *dir, const char *attr, const char *value)
{
	char path[192];

	snprintf(path, sizeof(path), "%s/%s", dir, attr);
	return cfs_write(path, value);
}

/* Reads attribute @path into @buf; 0 or -errno. */
static inline int cfs_read(const char *path, char *buf, size_t size)
{
	char full[256];

	snprintf(full, sizeof(full), CFS "/%s", path);
	return vg_read_file(full, buf, size);
}

/* Attribute @path as a number; -1 on error. */
static inline long long cfs_number(const char *path)
{
	char buf[64];

	return cfs_read(path, buf, sizeof(buf)) ? -1 : strtoll(buf, NULL, 0);
}

/* The amount of @key in a usage or requested attribute; -1 on error. */
static inline long long cfs_usage(const char *path, const char *key)
{
	char buf[256], *at;

	if (cfs_read(path, buf, sizeof(buf)))
		return -1;
	at = strstr(buf, key);
	return at ? strtoll(at + strlen(key) + 1, NULL, 10) : -1;
}

/* Removes every member listed and then the project; best effort. */
static inline void remove_project(const char *project, const char *const *uids, int n)
{
	char path[128];

	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", project, uids[i]);
		cfs_rmdir(path);
	}
	cfs_rmdir(project);
}

/* Forks a child that runs @fn(@arg) as @uid (no capability left); its pid, or -1. */
static inline pid_t fork_as(uid_t uid, int (*fn)(void *), void *arg)
{
	pid_t pid = fork();

	if (!pid) {
		int ret = 100;

		if (!setresgid(uid, uid, uid) && !setresuid(uid, uid, uid))
			ret = fn(arg);
		/* _exit() does not flush what the child printed. */
		fflush(stdout);
		_exit(ret);
	}
	return pid;
}

/*
 * Runs @fn in a child that became @uid (all of real, effective and saved:
 * no capability left); returns the child's exit status, or -1.
 */
static inline int as_uid(uid_t uid, int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork_as(uid, fn, arg);

	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/*
 * Forks @fn(@arg) as @uid (fork_as()) with a pipe each way: the child's
 * ends go to *@child_in (it reads) and *@child_out (it writes) before the
 * fork, the parent's to *@to and *@from. Only the child holds its ends, so
 * a dead child reads as EOF. The pid, or -1.
 */
static inline pid_t fork_talking(uid_t uid, int (*fn)(void *), void *arg, int *child_in,
				 int *child_out, int *to, int *from)
{
	int down[2], up[2];
	pid_t pid;

	if (pipe(down) || pipe(up))
		return -1;
	*child_in = down[0];
	*child_out = up[1];
	pid = fork_as(uid, fn, arg);
	close(down[0]);
	close(up[1]);
	*to = down[1];
	*from = up[0];
	return pid;
}

/* The code configfs shows as 32 hex digits at @hex, into @code; 0 or -1. */
static inline int parse_code(const char *hex, __u8 *code)
{
	for (int i = 0; i < DRM_VGSCHED_CODE_BYTES; i++)
		if (sscanf(hex + 2 * i, "%2hhx", &code[i]) != 1)
			return -1;
	return 0;
}

/* In a child of fork_talking(): says it is ready (on @out) and waits to go on (on @in); 0 or -1. */
static inline int await_revocation(int out, int in)
{
	char c;

	return write(out, "s", 1) == 1 && read(in, &c, 1) == 1 ? 0 : -1;
}

/*
 * Waits for child @pid to say (a byte on @from) that it is ready for a
 * revocation, writes @cmd to configfs attribute @attr, lets it go on (a
 * byte on @to) and reaps it: its exit status, or -1.
 */
static inline int revoke_for_child(pid_t pid, int from, int to, const char *attr, const char *cmd)
{
	int status;
	char c;

	if (read(from, &c, 1) != 1 || cfs_write(attr, cmd) || write(to, "r", 1) != 1) {
		/* The child failed before the revocation, or the revocation did. */
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return -1;
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* A path in project @project's shared storage: @kind's folder @folder (the
 * member's uid for a member folder), object @name. */
static inline struct drm_vgsched_shared_path vg_path(const char *project, __u32 kind,
						    const char *folder, const char *name)
{
	struct drm_vgsched_shared_path p = { .kind = kind };

	snprintf(p.project, sizeof(p.project), "%s", project);
	if (kind == DRM_VGSCHED_FOLDER_MEMBER)
		p.member_uid = strtoul(folder, NULL, 10);
	else
		snprintf(p.folder, sizeof(p.folder), "%s", folder);
	snprintf(p.name, sizeof(p.name), "%s", name);
	return p;
}

/* DRM_IOCTL_VGSCHED_SHARED_PUBLISH; 0 or -errno. */
static inline int vg_publish(int fd, const struct drm_vgsched_shared_path *path, __u32 handle)
{
	struct drm_vgsched_shared_publish a = { .path = *path, .handle = handle };

	return ioctl(fd, DRM_IOCTL_VGSCHED_SHARED_PUBLISH, &a) ? -errno : 0;
}

/* DRM_IOCTL_VGSCHED_SHARED_OPEN with @flags; 0 (the answer in *out) or -errno. */
static inline int vg_shared_open(int fd, const struct drm_vgsched_shared_path *path, __u32 flags,
				 struct drm_vgsched_shared_open *out)
{
	*out = (struct drm_vgsched_shared_open){ .path = *path, .flags = flags };
	return ioctl(fd, DRM_IOCTL_VGSCHED_SHARED_OPEN, out) ? -errno : 0;
}

/* DRM_IOCTL_VGSCHED_SHARED_UNPUBLISH; 0 or -errno. */
static inline int vg_unpublish(int fd, const struct drm_vgsched_shared_path *path)
{
	struct drm_vgsched_shared_unpublish a = { .path = *path };

	return ioctl(fd, DRM_IOCTL_VGSCHED_SHARED_UNPUBLISH, &a) ? -errno : 0;
}

#endif /* VGSCHED_PROJECTS_H */
