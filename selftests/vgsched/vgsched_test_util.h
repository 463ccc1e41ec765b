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
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "vgsched_drm.h"

/*
 * Opens the render node whose driver is "vgsched", writing its path into
 * @path (@size bytes) if @path is not NULL; -1 if there is none. Other DRM
 * devices may exist, so the name is checked, not assumed.
 */
static inline int vgsched_open_render_node_at(char *path, size_t size)
{
	char name[32], p[64];
	int minor;

	for (minor = 128; minor < 192; minor++) {
		struct drm_version v = { .name = name, .name_len = sizeof(name) - 1 };
		int fd;

		snprintf(p, sizeof(p), "/dev/dri/renderD%d", minor);
		fd = open(p, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(name, 0, sizeof(name));
		if (ioctl(fd, DRM_IOCTL_VERSION, &v) == 0 && strcmp(name, "vgsched") == 0) {
			if (path)
				snprintf(path, size, "%s", p);
			return fd;
		}
		close(fd);
	}
	return -1;
}

/* Opens the render node whose driver is "vgsched"; -1 if there is none. */
static inline int vgsched_open_render_node(void)
{
	return vgsched_open_render_node_at(NULL, 0);
}

/* DRM_IOCTL_VGSCHED_DEV_QUERY of @type into @size bytes at @answer; 0 or -errno. */
static inline int vgsched_dev_query(int fd, __u32 type, void *answer, __u32 size)
{
	struct drm_vgsched_dev_query q = {
		.type = type,
		.size = size,
		.pointer = (__u64)(unsigned long)answer,
	};

	return ioctl(fd, DRM_IOCTL_VGSCHED_DEV_QUERY, &q) ? -errno : 0;
}

/* DRM_IOCTL_VGSCHED_DEV_QUERY for the GPU info; returns 0 or -errno. */
static inline int vgsched_query_gpu_info(int fd, struct drm_vgsched_gpu_info *info)
{
	return vgsched_dev_query(fd, DRM_VGSCHED_DEV_QUERY_GPU_INFO, info, sizeof(*info));
}

/* Creates a buffer object; returns its handle, or 0 with errno set. */
static inline __u32 vgsched_bo_create(int fd, __u64 size)
{
	struct drm_vgsched_bo_create c = { .size = size };

	return ioctl(fd, DRM_IOCTL_VGSCHED_BO_CREATE, &c) ? 0 : c.handle;
}

/* Maps @size bytes of @handle with @prot and @flags; MAP_FAILED with errno set on failure. */
static inline void *vgsched_bo_mmap(int fd, __u32 handle, size_t size, int prot, int flags)
{
	struct drm_vgsched_bo_mmap_offset m = { .handle = handle };

	if (ioctl(fd, DRM_IOCTL_VGSCHED_BO_MMAP_OFFSET, &m))
		return MAP_FAILED;
	return mmap(NULL, size, prot, flags, fd, m.offset);
}

/* Maps @size bytes of @handle shared for reading and writing; MAP_FAILED on error. */
static inline void *vgsched_bo_map(int fd, __u32 handle, size_t size)
{
	return vgsched_bo_mmap(fd, handle, size, PROT_READ | PROT_WRITE, MAP_SHARED);
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

/* DRM_IOCTL_VGSCHED_BO_CPU_PREP; 0 or -errno. */
static inline int vgsched_bo_cpu_prep(int fd, __u32 handle, __u32 flags, __u64 timeout_ns)
{
	struct drm_vgsched_bo_cpu_prep p = {
		.handle = handle, .flags = flags, .timeout_ns = timeout_ns,
	};

	return ioctl(fd, DRM_IOCTL_VGSCHED_BO_CPU_PREP, &p) ? -errno : 0;
}

#define VG_SECOND_NS 1000000000ull

/* CLOCK_MONOTONIC in nanoseconds: the clock the driver's times use. */
static inline __u64 vg_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * VG_SECOND_NS + ts.tv_nsec;
}

/*
 * Writes the debugfs directory of the vgsched device into @dir: the DRM
 * core's /sys/kernel/debug/dri/<minor>, here the render node's minor (a
 * link to dri/vgsched). 0, or -errno (-ENODEV without a device).
 */
static inline int vgsched_debugfs_dir(char *dir, size_t size)
{
	struct stat st;
	int fd = vgsched_open_render_node(), ret;

	if (fd < 0)
		return -ENODEV;
	ret = fstat(fd, &st) ? -errno : 0;
	close(fd);
	if (!ret)
		snprintf(dir, size, "/sys/kernel/debug/dri/%u", minor(st.st_rdev));
	return ret;
}

/* Reads the device's debugfs file @name into @buf (NUL-terminated); 0 or -errno. */
static inline int vgsched_debugfs_read(const char *name, char *buf, size_t size)
{
	char dir[64], path[128];
	size_t len = 0;
	ssize_t n = 0;
	int fd, ret;

	ret = vgsched_debugfs_dir(dir, sizeof(dir));
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += n;
	close(fd);
	buf[len] = 0;
	return n < 0 ? -errno : 0;
}

/* Writes @text to the device's debugfs file @name; 0 or -errno. */
static inline int vgsched_debugfs_write(const char *name, const char *text)
{
	char dir[64], path[128];
	size_t len = strlen(text);
	int fd, ret;

	ret = vgsched_debugfs_dir(dir, sizeof(dir));
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	ret = write(fd, text, len) == (ssize_t)len ? 0 : -errno;
	close(fd);
	return ret;
}

/* Fills @q with what CTX_QUERY says of context @ctx; 0 or -errno. */
/* The number after the first @key in the device's debugfs file @name, or -1. */
static inline long long vgsched_debugfs_number(const char *name, const char *key)
{
	static char buf[1 << 16];
	const char *at;

	if (vgsched_debugfs_read(name, buf, sizeof(buf)))
		return -1;
	at = strstr(buf, key);
	return at ? strtoll(at + strlen(key), NULL, 10) : -1;
}

/* The number after @key in the device's debugfs state file, or -1. */
static inline long long vgsched_state_number(const char *key)
{
	return vgsched_debugfs_number("state", key);
}

/*
 * The value after "@key:" in /proc/self/fdinfo of @fd (the DRM usage
 * statistics), into @val; 0, -ENOENT without the key, or -errno.
 */
static inline int vg_fdinfo_value(int fd, const char *key, char *val, size_t size)
{
	char path[64], text[4096], *line, *save = NULL;
	size_t len = 0, klen = strlen(key);
	ssize_t n = 0;
	int f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY);
	if (f < 0)
		return -errno;
	while (len + 1 < sizeof(text) && (n = read(f, text + len, sizeof(text) - 1 - len)) > 0)
		len += n;
	close(f);
	if (n < 0)
		return -EIO;
	text[len] = 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, key, klen) || line[klen] != ':')
			continue;
		line += klen + 1;
		line += strspn(line, " \t");
		snprintf(val, size, "%s", line);
		return 0;
	}
	return -ENOENT;
}

/* The number that starts fdinfo key @key's value (units ignored); 0 or -errno. */
static inline int vg_fdinfo_u64(int fd, const char *key, __u64 *out)
{
	char val[128], *end;
	int ret = vg_fdinfo_value(fd, key, val, sizeof(val));

	if (ret)
		return ret;
	errno = 0;
	*out = strtoull(val, &end, 10);
	return end == val || errno ? -EPROTO : 0;
}

/* Writes @value to the file @path in one write(2) (sysfs, configfs); 0 or -errno. */
static inline int vg_write_file(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, value, strlen(value)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Reads the file @path (sysfs, configfs) into @buf, NUL-terminated; 0 or -errno. */
static inline int vg_read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

/* Writes @value to the module parameter @name in sysfs; 0 or -errno. */
static inline int vgsched_param_write(const char *name, const char *value)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/module/vgsched/parameters/%s", name);
	return vg_write_file(path, value);
}

/* Reads the module parameter @name in sysfs as a number; -1 on error. */
static inline long long vgsched_param_read(const char *name)
{
	char path[128], buf[32] = "";
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/module/vgsched/parameters/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n < 0 ? -1 : strtoll(buf, NULL, 10);
}

/* One record of the debugfs stage log. */
struct vg_stage {
	unsigned long long t, client, job;
	unsigned int ctx;
	char event[16];
};

/*
 * Parses the debugfs stage log into @out (at most @max records, in the
 * order recorded). Returns how many, or -errno.
 */
static inline int vgsched_stages(struct vg_stage *out, int max)
{
	static char buf[1 << 16];
	int n = 0, ret = vgsched_debugfs_read("stages", buf, sizeof(buf));

	if (ret)
		return ret;
	for (char *line = buf; line && *line && n < max;
	     line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		struct vg_stage *e = &out[n];

		if (sscanf(line, "#%*u t=%llu client=%llu ctx=%u job=%llu %15s", &e->t, &e->client,
			   &e->ctx, &e->job, e->event) == 5)
			n++;
	}
	return n;
}

/*
 * The time of the first stage record of job @job (0: the context's own) of
 * context @ctx of client @client named @event at or after @after; 0 if
 * there is none.
 */
static inline __u64 stage_at(__u64 client, unsigned int ctx, __u64 job, const char *event,
			     __u64 after)
{
	static struct vg_stage log[512];
	int n = vgsched_stages(log, 512);

	for (int i = 0; i < n; i++) {
		const struct vg_stage *e = &log[i];

		if (e->client == client && e->ctx == ctx && e->job == job &&
		    !strcmp(e->event, event) && e->t >= after)
			return e->t;
	}
	return 0;
}

/* A number of debugfs vram, by key ("free", "evictions", ...); -1 if absent. */
static inline long long vram_number(const char *key)
{
	char line_key[32];

	snprintf(line_key, sizeof(line_key), "%s ", key);
	return vgsched_debugfs_number("vram", line_key);
}

/* Waits up to 2 s for every byte of device memory to be free; 1 if it is, else 0. */
static inline int vram_all_free(void)
{
	for (int i = 0; i < 200; i++) {
		if (vram_number("free") == vram_number("size"))
			return 1;
		usleep(10000);
	}
	return 0;
}

/* The KiB of fdinfo key @key of @fd; -1 if absent. */
static inline long long fdinfo_kib(int fd, const char *key)
{
	__u64 kib;

	return vg_fdinfo_u64(fd, key, &kib) ? -1 : (long long)kib;
}

static inline int vgsched_ctx_query(int fd, __u32 ctx, struct drm_vgsched_ctx_query *q)
{
	memset(q, 0, sizeof(*q));
	q->ctx_id = ctx;
	return ioctl(fd, DRM_IOCTL_VGSCHED_CTX_QUERY, q) ? -errno : 0;
}

/* The client id debugfs shows for the file owning context @ctx. */
static inline __u64 vgsched_client_id(int fd, __u32 ctx)
{
	struct drm_vgsched_ctx_query q;

	return vgsched_ctx_query(fd, ctx, &q) ? 0 : q.client_id;
}

/*
 * Loads vgsched.ko (path in $VGSCHED_KO) with @params through
 * finit_module(2), as insmod does; 0 or -errno.
 */
static inline int vgsched_module_load(const char *params)
{
	const char *ko = getenv("VGSCHED_KO");
	int fd, ret;

	if (!ko)
		return -ENOENT;
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

/* Unloads the module through delete_module(2), as rmmod does; 0 or -errno. */
static inline int vgsched_module_unload(void)
{
	return syscall(SYS_delete_module, "vgsched", O_NONBLOCK) ? -errno : 0;
}

/*
 * Unloads the module, waiting (up to 3 s) while it is still in use: a file
 * of a process just killed may still be being released. 0 or -errno.
 */
static inline int vgsched_module_unload_wait(void)
{
	int ret = vgsched_module_unload();

	for (int i = 0; i < 300 && (ret == -EBUSY || ret == -EAGAIN); i++) {
		usleep(10000);
		ret = vgsched_module_unload();
	}
	return ret;
}

/* One line of the device's debugfs file placements. */
struct vg_placement {
	__u64 number, time_ns, client, job;
	unsigned int ctx, group, first_wave, waves, band, module, shared_start, shared_len;
	struct {
		unsigned int unit, vgpr, vgpr_len, sgpr, sgpr_len;
	} wave[64];
};

/*
 * Reads the device's placement log into *@buf (malloc()ed, the caller
 * frees it; NULL on error); 0 or -errno.
 */
static inline int vgsched_placement_log(char **buf)
{
	size_t size = 2 << 20;
	int ret;

	*buf = malloc(size);
	if (!*buf)
		return -ENOMEM;
	ret = vgsched_debugfs_read("placements", *buf, size);
	if (ret) {
		free(*buf);
		*buf = NULL;
	}
	return ret;
}

/*
 * Prints the placement log's slot records (loads, turns, evictions,
 * rounds) from @t to @at (ns) as lines "  +US  slot: RECORD", the time
 * from @t; nothing if the log cannot be read (informational output).
 */
static inline void vg_print_slot_records(__u64 t, __u64 at)
{
	char *buf = NULL, *line, *save = NULL;

	if (vgsched_placement_log(&buf))
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long when;
		char kind[16];

		if (sscanf(line, "#%*u t=%llu %15[a-z]", &when, kind) == 2 && when >= t && when <= at &&
		    strcmp(kind, "client"))
			printf("  +%8.0f us  slot: %s\n", (when - t) / 1000.0, strstr(line, kind));
	}
	free(buf);
}

/*
 * Parses the placement log into @out (at most @max entries), keeping only
 * those of context @ctx of client @client (all when @client is 0). The
 * log's slot events (loads, turns, evictions, rounds) are skipped.
 * Returns how many were kept, or -errno.
 */
static inline int vgsched_placements(__u64 client, unsigned int ctx, struct vg_placement *out, int max)
{
	char *buf = NULL, *line, *save = NULL;
	int n = 0, ret = vgsched_placement_log(&buf);

	if (ret)
		return ret;
	for (line = strtok_r(buf, "\n", &save); !ret && line && n < max; line = strtok_r(NULL, "\n", &save)) {
		struct vg_placement *p = &out[n];
		char *w, event[16], after = 0;
		int used = 0, k;

		/* Slot events ("#n t=T turn client=..." or "#n t=T round") are not placements. */
		k = sscanf(line, "#%*u t=%*u %15[a-z]%c", event, &after);
		if (k == 1 || (k == 2 && after == ' '))
			continue;
		if (sscanf(line, "#%llu t=%llu client=%llu ctx=%u job=%llu group=%u waves=%u+%u band=%u module=%u shared=%u+%u%n",
			   &p->number, &p->time_ns, &p->client, &p->ctx, &p->job, &p->group,
			   &p->first_wave, &p->waves, &p->band, &p->module, &p->shared_start,
			   &p->shared_len, &used) != 12 || p->waves > 64) {
			ret = -EPROTO;
			break;
		}
		w = line + used;
		for (unsigned int i = 0; i < p->waves; i++) {
			int k = 0;

			if (sscanf(w, " w=%u:%u+%u:%u+%u%n", &p->wave[i].unit, &p->wave[i].vgpr,
				   &p->wave[i].vgpr_len, &p->wave[i].sgpr, &p->wave[i].sgpr_len, &k) != 5) {
				ret = -EPROTO;
				break;
			}
			w += k;
		}
		if (!ret && (!client || (p->client == client && p->ctx == ctx)))
			n++;
	}
	free(buf);
	return ret ? ret : n;
}

/* Whether the DRM device open on @fd is driven by @driver. */
static inline int vg_drm_driver_is(int fd, const char *driver)
{
	char name[32] = { 0 };
	struct drm_version v = { .name = name, .name_len = sizeof(name) - 1 };

	return ioctl(fd, DRM_IOCTL_VERSION, &v) == 0 && strcmp(name, driver) == 0;
}

/*
 * Opens the primary node (/dev/dri/cardN) of the device whose render node
 * is open on @render_fd, found through sysfs (the render node's device
 * directory lists its sibling nodes under drm/); -1 if there is none.
 */
static inline int vg_open_primary_of(int render_fd)
{
	char path[96];
	struct stat st;
	struct dirent *e;
	DIR *dir;
	int fd = -1;

	if (fstat(render_fd, &st))
		return -1;
	snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/device/drm",
		 major(st.st_rdev), minor(st.st_rdev));
	dir = opendir(path);
	if (!dir)
		return -1;
	while (fd < 0 && (e = readdir(dir))) {
		unsigned int n;

		if (sscanf(e->d_name, "card%u", &n) != 1)
			continue;
		snprintf(path, sizeof(path), "/dev/dri/card%u", n);
		fd = open(path, O_RDWR | O_CLOEXEC);
	}
	closedir(dir);
	return fd;
}

/* Opens the first primary node driven by @driver; -1 if there is none. */
static inline int vg_open_card_of_driver(const char *driver)
{
	char path[64];

	for (int n = 0; n < 64; n++) {
		int fd;

		snprintf(path, sizeof(path), "/dev/dri/card%d", n);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (vg_drm_driver_is(fd, driver))
			return fd;
		close(fd);
	}
	return -1;
}

/* DRM_IOCTL_MODE_CREATE_DUMB of a 64 x 64, 32 bpp buffer; its handle, or 0 with errno set. */
static inline __u32 vg_dumb_create(int fd)
{
	struct drm_mode_create_dumb c = { .width = 64, .height = 64, .bpp = 32 };

	return ioctl(fd, DRM_IOCTL_MODE_CREATE_DUMB, &c) ? 0 : c.handle;
}

/* DRM_IOCTL_PRIME_HANDLE_TO_FD (read-write); the dma-buf fd or -errno. */
static inline int vg_prime_export(int fd, __u32 handle)
{
	struct drm_prime_handle p = { .handle = handle, .flags = DRM_CLOEXEC | DRM_RDWR };

	return ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p) ? -errno : p.fd;
}

/* DRM_IOCTL_PRIME_FD_TO_HANDLE; the handle, or 0 with errno set. */
static inline __u32 vg_prime_import(int fd, int dmabuf_fd)
{
	struct drm_prime_handle p = { .fd = dmabuf_fd };

	return ioctl(fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &p) ? 0 : p.handle;
}

/* DRM_IOCTL_VGSCHED_BO_MMAP_OFFSET alone; 0 or -errno. */
static inline int vgsched_bo_mmap_offset(int fd, __u32 handle)
{
	struct drm_vgsched_bo_mmap_offset m = { .handle = handle };

	return ioctl(fd, DRM_IOCTL_VGSCHED_BO_MMAP_OFFSET, &m) ? -errno : 0;
}

/* DRM_IOCTL_VGSCHED_WAIT with @flags; 0 (job status in *status) or -errno. */
static inline int vgsched_wait_flags(int fd, __u32 ctx, __u64 seqno, __u32 flags, __u64 timeout_ns,
				     int *status)
{
	struct drm_vgsched_wait w = { .ctx_id = ctx, .flags = flags, .seqno = seqno,
				      .timeout_ns = timeout_ns };
	int ret = ioctl(fd, DRM_IOCTL_VGSCHED_WAIT, &w) ? -errno : 0;

	if (!ret && status)
		*status = w.status;
	return ret;
}

/* One "tiles" record of the placement log. */
struct vg_tiles {
	unsigned long long t, client, job, start;
	unsigned int ctx, k, node, mask, woken;
	char policy[8];
	char order[128];
};

/* The tile records of context @ctx of client @client, in order; -errno. */
static inline int tile_records(__u64 client, unsigned int ctx, struct vg_tiles *out, int max)
{
	char *buf = NULL, *line, *save = NULL;
	int n = 0, ret = vgsched_placement_log(&buf);

	if (ret)
		return ret;
	for (line = strtok_r(buf, "\n", &save); !ret && line && n < max;
	     line = strtok_r(NULL, "\n", &save)) {
		struct vg_tiles *r = &out[n];

		if (!strstr(line, " tiles client="))
			continue;
		if (sscanf(line, "#%*u t=%llu tiles client=%llu ctx=%u job=%llu k=%u policy=%7s node=%u mask=%x start=%llu woken=%u order=%127s",
			   &r->t, &r->client, &r->ctx, &r->job, &r->k, r->policy, &r->node,
			   &r->mask, &r->start, &r->woken, r->order) != 11) {
			ret = -EPROTO;
			break;
		}
		if (r->client == client && r->ctx == ctx)
			n++;
	}
	free(buf);
	return ret ? ret : n;
}

/* The tile record of job @seqno of context @ctx on @fd, or -1. */
static inline int job_tiles(int fd, __u32 ctx, __u64 seqno, struct vg_tiles *out)
{
	struct vg_tiles r[64];
	int n = tile_records(vgsched_client_id(fd, ctx), ctx, r, 64);

	for (int i = n - 1; i >= 0; i--) {
		if (r[i].job == seqno) {
			*out = r[i];
			return 0;
		}
	}
	return -1;
}

/* The last read of debugfs tiles (tiles_read()). */
static char tiles_buf[16384];

/* Reads debugfs tiles into tiles_buf (one moment); 0 or -errno. */
static inline int tiles_read(void)
{
	return vgsched_debugfs_read("tiles", tiles_buf, sizeof(tiles_buf));
}

/* The line of tiles_buf starting with @line ("tile 3", "node 0"), or NULL. */
static inline const char *tiles_line(const char *line)
{
	size_t n = strlen(line);

	for (const char *l = tiles_buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, line, n) && l[n] == ' ')
			return l;
	return NULL;
}

/* The number after @key on @line of tiles_buf; -1 if missing. */
static inline long long tiles_field(const char *line, const char *key)
{
	const char *l = tiles_line(line), *end, *at;

	if (!l)
		return -1;
	end = strchr(l, '\n');
	at = strstr(l, key);
	if (!at || (end && at > end))
		return -1;
	return strtoll(at + strlen(key) + 1, NULL, 10);
}

/*
 * Whether @line of a fresh read of debugfs tiles is in state @state
 * ("busy", "idle" or "asleep" for a tile; "awake" or "asleep" for a node):
 * the word after the line's name ("tile 3 node 0 type 1 STATE ...", "node 0
 * STATE ...").
 */
static inline int tiles_in_state(const char *line, const char *state)
{
	char word[16] = "";
	const char *l;

	if (tiles_read())
		return 0;
	l = tiles_line(line);
	if (!l)
		return 0;
	if (!strncmp(l, "tile ", 5))
		sscanf(l, "tile %*u node %*u type %*u %15s", word);
	else
		sscanf(l, "node %*u %15s", word);
	return !strcmp(word, state);
}

/* The directory of vgsched's hwmon device into @dir; 0 or -1. */
static inline int hwmon_dir(char *dir, size_t size)
{
	DIR *d = opendir("/sys/class/hwmon");
	struct dirent *e;
	int ret = -1;

	if (!d)
		return -1;
	while (ret && (e = readdir(d))) {
		char path[300], name[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/hwmon/%.200s/name", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f) && !strcmp(name, "vgsched\n")) {
			snprintf(dir, size, "/sys/class/hwmon/%.200s", e->d_name);
			ret = 0;
		}
		fclose(f);
	}
	closedir(d);
	return ret;
}

/* hwmon attribute @attr (say "energy1_input") as a number; -1 on error. */
static inline long long hwmon_number(const char *attr)
{
	char dir[300], path[400], buf[32] = "";
	FILE *f;

	if (hwmon_dir(dir, sizeof(dir)))
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, attr);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return buf[0] ? strtoll(buf, NULL, 10) : -1;
}

#endif /* VGSCHED_TEST_UTIL_H */
