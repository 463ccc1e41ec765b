/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the vgsched kselftests: finding and opening the
 * render node, and thin wrappers over the driver's ioctls.
 */
#ifndef VGSCHED_TEST_UTIL_H
#define VGSCHED_TEST_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vgsched_drm.h"

/*
 * Opens the render node whose driver is "vgsched"; -1 if there is none.
 * Other DRM devices may exist, so the name is checked, not assumed.
 */
static inline int vgsched_open_render_node(void)
{
	char path[64], name[32];
	int minor;

	for (minor = 128; minor < 192; minor++) {
		struct drm_version v = { .name = name, .name_len = sizeof(name) - 1 };
		int fd;

		snprintf(path, sizeof(path), "/dev/dri/renderD%d", minor);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(name, 0, sizeof(name));
		if (ioctl(fd, DRM_IOCTL_VERSION, &v) == 0 && strcmp(name, "vgsched") == 0)
			return fd;
		close(fd);
	}
	return -1;
}

/* DRM_IOCTL_VGSCHED_DEV_QUERY for the GPU info; returns 0 or -errno. */
static inline int vgsched_query_gpu_info(int fd, struct drm_vgsched_gpu_info *info)
{
	struct drm_vgsched_dev_query q = {
		.type = DRM_VGSCHED_DEV_QUERY_GPU_INFO,
		.size = sizeof(*info),
		.pointer = (__u64)(unsigned long)info,
	};

	return ioctl(fd, DRM_IOCTL_VGSCHED_DEV_QUERY, &q) ? -errno : 0;
}

/* Creates a buffer object; returns its handle, or 0 with errno set. */
static inline __u32 vgsched_bo_create(int fd, __u64 size)
{
	struct drm_vgsched_bo_create c = { .size = size };

	return ioctl(fd, DRM_IOCTL_VGSCHED_BO_CREATE, &c) ? 0 : c.handle;
}

/* Maps a buffer object read-write; MAP_FAILED with errno set on failure. */
static inline void *vgsched_bo_map(int fd, __u32 handle, size_t size)
{
	struct drm_vgsched_bo_mmap_offset m = { .handle = handle };

	if (ioctl(fd, DRM_IOCTL_VGSCHED_BO_MMAP_OFFSET, &m))
		return MAP_FAILED;
	return mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, m.offset);
}

/* DRM_IOCTL_GEM_CLOSE; returns 0 or -errno. */
static inline int vgsched_bo_close(int fd, __u32 handle)
{
	struct drm_gem_close c = { .handle = handle };

	return ioctl(fd, DRM_IOCTL_GEM_CLOSE, &c) ? -errno : 0;
}

/* Creates a context; returns its id, or 0 with errno set. */
static inline __u32 vgsched_ctx_create(int fd, __u32 priority)
{
	struct drm_vgsched_ctx_create c = { .priority = priority };

	return ioctl(fd, DRM_IOCTL_VGSCHED_CTX_CREATE, &c) ? 0 : c.ctx_id;
}

/* Destroys a context; returns 0 or -errno. */
static inline int vgsched_ctx_destroy(int fd, __u32 ctx_id)
{
	struct drm_vgsched_ctx_destroy d = { .ctx_id = ctx_id };

	return ioctl(fd, DRM_IOCTL_VGSCHED_CTX_DESTROY, &d) ? -errno : 0;
}

/* One instruction word (Documentation/isa.rst). */
static inline __u64 vg_instr(enum drm_vgsched_op op, unsigned int rd, unsigned int ra,
			     unsigned int rb, __s32 imm)
{
	return (__u64)op | (__u64)rd << 8 | (__u64)ra << 16 | (__u64)rb << 24 |
	       (__u64)(__u32)imm << 32;
}

/* A buffer object and its mapping. */
struct vg_buf {
	__u32 handle;
	size_t size;
	void *map;
};

/* Creates and maps a buffer object of @size bytes; 0 or -errno. */
static inline int vg_buf_create(int fd, size_t size, struct vg_buf *buf)
{
	*buf = (struct vg_buf){ .size = size };
	buf->handle = vgsched_bo_create(fd, size);
	if (!buf->handle)
		return -errno;
	buf->map = vgsched_bo_map(fd, buf->handle, size);
	return buf->map == MAP_FAILED ? -errno : 0;
}

/* Unmaps and closes a buffer object. */
static inline void vg_buf_destroy(int fd, struct vg_buf *buf)
{
	if (buf->map && buf->map != MAP_FAILED)
		munmap(buf->map, buf->size);
	if (buf->handle)
		vgsched_bo_close(fd, buf->handle);
	buf->map = NULL;
	buf->handle = 0;
}

/* Puts a program of @n instructions into a new buffer object; 0 or -errno. */
static inline int vg_program(int fd, const __u64 *words, unsigned int n, struct vg_buf *buf)
{
	int ret = vg_buf_create(fd, n * sizeof(__u64), buf);

	if (!ret)
		memcpy(buf->map, words, n * sizeof(__u64));
	return ret;
}

/* DRM_IOCTL_VGSCHED_SUBMIT; 0 or -errno. */
static inline int vgsched_submit(int fd, struct drm_vgsched_submit *s)
{
	return ioctl(fd, DRM_IOCTL_VGSCHED_SUBMIT, s) ? -errno : 0;
}

/* DRM_IOCTL_VGSCHED_WAIT; 0 (job status in *status) or -errno. */
static inline int vgsched_wait(int fd, __u32 ctx, __u64 seqno, __u64 timeout_ns, int *status)
{
	struct drm_vgsched_wait w = { .ctx_id = ctx, .seqno = seqno, .timeout_ns = timeout_ns };
	int ret = ioctl(fd, DRM_IOCTL_VGSCHED_WAIT, &w) ? -errno : 0;

	if (!ret && status)
		*status = w.status;
	return ret;
}

#define VG_SECOND_NS 1000000000ull

#endif /* VGSCHED_TEST_UTIL_H */
