// SPDX-License-Identifier: GPL-2.0
/*
 * Buffer objects through the uAPI: create, mmap, share data between
 * mappings, close; and every bad input with its errno. Objects the driver
 * did not create (a dumb buffer of its primary node, a dma-buf of vgem
 * imported through PRIME) are refused with EINVAL by every ioctl that
 * takes a handle.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vgsched_programs.h"

FIXTURE(bo) {
	int fd;
};

FIXTURE_SETUP(bo)
{
	self->fd = vgsched_open_render_node();
	ASSERT_GE(self->fd, 0);
}

FIXTURE_TEARDOWN(bo)
{
	close(self->fd);
}

TEST_F(bo, create_map_write_read_back)
{
	const size_t size = 3 * 4096 + 5;
	__u32 handle = vgsched_bo_create(self->fd, size);
	uint32_t *p, *q;

	ASSERT_NE(0, handle);
	p = vgsched_bo_map(self->fd, handle, size);
	ASSERT_NE(MAP_FAILED, p);
	for (size_t i = 0; i < size / 4; i++) {
		ASSERT_EQ(0, p[i]) TH_LOG("new objects are zero-filled (word %zu)", i);
	}
	for (size_t i = 0; i < size / 4; i++)
		p[i] = 0x9e3779b9u * (uint32_t)i;
	ASSERT_EQ(0, munmap(p, size));

	/* A second mapping sees what the first wrote: one object, not a copy. */
	q = vgsched_bo_map(self->fd, handle, size);
	ASSERT_NE(MAP_FAILED, q);
	for (size_t i = 0; i < size / 4; i++)
		ASSERT_EQ(0x9e3779b9u * (uint32_t)i, q[i]);
	ASSERT_EQ(0, munmap(q, size));
	EXPECT_EQ(0, vgsched_bo_close(self->fd, handle));
}

TEST_F(bo, size_is_rounded_up_to_pages)
{
	__u32 handle = vgsched_bo_create(self->fd, 1);
	char *p;

	ASSERT_NE(0, handle);
	/* The whole page is mappable even though one byte was asked for. */
	p = vgsched_bo_map(self->fd, handle, 4096);
	ASSERT_NE(MAP_FAILED, p);
	p[4095] = 1;
	munmap(p, 4096);
	vgsched_bo_close(self->fd, handle);
}

TEST_F(bo, mapping_past_the_object_fails)
{
	__u32 handle = vgsched_bo_create(self->fd, 4096);
	void *p;

	ASSERT_NE(0, handle);
	p = vgsched_bo_map(self->fd, handle, 2 * 4096);
	EXPECT_EQ(MAP_FAILED, p);
	vgsched_bo_close(self->fd, handle);
}

TEST_F(bo, zero_size_is_einval)
{
	EXPECT_EQ(0, vgsched_bo_create(self->fd, 0));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(bo, absurd_sizes_are_e2big)
{
	EXPECT_EQ(0, vgsched_bo_create(self->fd, DRM_VGSCHED_MAX_BO_SIZE + 1ull));
	EXPECT_EQ(E2BIG, errno);
	EXPECT_EQ(0, vgsched_bo_create(self->fd, ~0ull));
	EXPECT_EQ(E2BIG, errno);
}

TEST_F(bo, largest_size_is_accepted)
{
	__u32 handle = vgsched_bo_create(self->fd, DRM_VGSCHED_MAX_BO_SIZE);

	ASSERT_NE(0, handle);
	EXPECT_EQ(0, vgsched_bo_close(self->fd, handle));
}

TEST_F(bo, unknown_flags_are_einval)
{
	struct drm_vgsched_bo_create c = { .size = 4096, .flags = DRM_VGSCHED_CREATE_WAIT << 1 };

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_VGSCHED_BO_CREATE, &c));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, c.handle);
}

TEST_F(bo, unknown_handle_is_enoent)
{
	struct drm_vgsched_bo_mmap_offset m = { .handle = 12345 };

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_VGSCHED_BO_MMAP_OFFSET, &m));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-EINVAL, vgsched_bo_close(self->fd, 12345));
}

TEST_F(bo, closed_handle_is_gone)
{
	__u32 handle = vgsched_bo_create(self->fd, 4096);
	struct drm_vgsched_bo_mmap_offset m = { .handle = handle };

	ASSERT_NE(0, handle);
	ASSERT_EQ(0, vgsched_bo_close(self->fd, handle));
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_VGSCHED_BO_MMAP_OFFSET, &m));
	EXPECT_EQ(ENOENT, errno);
}

TEST_F(bo, mmap_offset_padding_is_einval)
{
	__u32 handle = vgsched_bo_create(self->fd, 4096);
	struct drm_vgsched_bo_mmap_offset m = { .handle = handle, .pad = 1 };

	ASSERT_NE(0, handle);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_VGSCHED_BO_MMAP_OFFSET, &m));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, m.offset);
	vgsched_bo_close(self->fd, handle);
}

/* Handles are per file: another open of the device cannot use them. */
TEST_F(bo, handles_are_private_to_their_file)
{
	__u32 handle = vgsched_bo_create(self->fd, 4096);
	int other = vgsched_open_render_node();
	struct drm_vgsched_bo_mmap_offset m = { .handle = handle };

	ASSERT_NE(0, handle);
	ASSERT_GE(other, 0);
	EXPECT_EQ(-1, ioctl(other, DRM_IOCTL_VGSCHED_BO_MMAP_OFFSET, &m));
	EXPECT_EQ(ENOENT, errno);
	close(other);
}

/* Closing the file with objects and mappings alive releases them all;
 * the kmemleak scan at the end of the run checks nothing is left. */
TEST(close_file_with_live_objects_and_mappings)
{
	int fd = vgsched_open_render_node();
	void *p;

	ASSERT_GE(fd, 0);
	for (int i = 0; i < 32; i++)
		ASSERT_NE(0, vgsched_bo_create(fd, 64 * 1024));
	p = vgsched_bo_map(fd, vgsched_bo_create(fd, 8192), 8192);
	ASSERT_NE(MAP_FAILED, p);
	close(fd);
	/* The mapping outlives the file and still works. */
	((volatile char *)p)[100] = 7;
	EXPECT_EQ(7, ((volatile char *)p)[100]);
	munmap(p, 8192);
}

/*
 * Every vgsched ioctl that takes a handle refuses @foreign, a handle of
 * @fd naming an object vgsched did not create, with EINVAL (an unknown
 * handle would be ENOENT), and nothing is queued; the same calls with one
 * of vgsched's own objects then work on @fd.
 */
static void foreign_handle_is_refused(struct __test_metadata *_metadata, int fd, __u32 foreign)
{
	struct drm_vgsched_ctx_query q;
	struct vg_buf prog, data, fake_prog = { .handle = foreign };
	__u64 words[8];
	unsigned int len = vg_prog_busy_store(words, 1);
	__u32 ctx = vgsched_ctx_create(fd, 8);
	int status = 1;

	ASSERT_NE(0, ctx);
	ASSERT_EQ(-EINVAL, vgsched_bo_mmap_offset(fd, foreign));
	ASSERT_EQ(0, vg_program(fd, words, len, &prog));
	ASSERT_EQ(0, vg_buf_create(fd, 4096, &data));

	/* As a binding, alone or next to a good object. */
	__u32 bind[] = { foreign };
	__u32 bind2[] = { data.handle, foreign };
	struct drm_vgsched_submit s = vg_job(ctx, &prog, len, bind, 1, 1, 1, 1);

	ASSERT_EQ(-EINVAL, vgsched_submit(fd, &s));
	ASSERT_EQ(0, s.seqno);
	s = vg_job(ctx, &prog, len, bind2, 2, 1, 1, 1);
	ASSERT_EQ(-EINVAL, vgsched_submit(fd, &s));
	/* As the program. */
	s = vg_job(ctx, &fake_prog, 1, &data.handle, 1, 1, 1, 1);
	ASSERT_EQ(-EINVAL, vgsched_submit(fd, &s));
	ASSERT_EQ(0, vgsched_ctx_query(fd, ctx, &q));
	ASSERT_EQ(0, q.jobs_submitted);

	/* The same file with vgsched's own object: mapped, bound and run. */
	ASSERT_EQ(0, vgsched_bo_mmap_offset(fd, data.handle));
	s = vg_job(ctx, &prog, len, &data.handle, 1, 1, 1, 1);
	ASSERT_EQ(0, vgsched_submit(fd, &s));
	ASSERT_EQ(0, vgsched_wait(fd, ctx, s.seqno, 30 * VG_SECOND_NS, &status));
	ASSERT_EQ(0, status);
	vg_buf_destroy(fd, &prog);
	vg_buf_destroy(fd, &data);
	vgsched_ctx_destroy(fd, ctx);
}

/*
 * A dumb buffer, created through the device's own primary node: a buffer
 * for the CPU and other devices, not for jobs. vgsched's ioctls refuse it;
 * it maps through MODE_MAP_DUMB and exports as a dma-buf, the contract of
 * dumb buffers the DRM core's shmem helper made before vgsched made them
 * itself (to charge them, see projects_test).
 */
TEST_F(bo, dumb_buffer_is_refused_by_every_handle_ioctl)
{
	int card = vg_open_primary_of(self->fd), dmabuf;
	struct drm_mode_map_dumb m = { 0 };
	uint32_t *cpu, *seen;
	__u32 dumb;

	ASSERT_GE(card, 0) TH_LOG("no primary node next to the render node");
	ASSERT_TRUE(vg_drm_driver_is(card, "vgsched"));
	dumb = vg_dumb_create(card);
	ASSERT_NE(0, dumb) TH_LOG("CREATE_DUMB: %s", strerror(errno));
	foreign_handle_is_refused(_metadata, card, dumb);

	/* 64 x 64 at 32 bpp: 16 KiB through MODE_MAP_DUMB, and through its dma-buf. */
	m.handle = dumb;
	ASSERT_EQ(0, ioctl(card, DRM_IOCTL_MODE_MAP_DUMB, &m));
	cpu = mmap(NULL, 16384, PROT_READ | PROT_WRITE, MAP_SHARED, card, m.offset);
	ASSERT_NE(MAP_FAILED, cpu);
	for (int i = 0; i < 4096; i++)
		cpu[i] = 0xd0b0000u + i;
	dmabuf = vg_prime_export(card, dumb);
	ASSERT_GE(dmabuf, 0) TH_LOG("PRIME export: %s", strerror(-dmabuf));
	seen = mmap(NULL, 16384, PROT_READ, MAP_SHARED, dmabuf, 0);
	ASSERT_NE(MAP_FAILED, seen);
	for (int i = 0; i < 4096; i++) {
		ASSERT_EQ(0xd0b0000u + i, seen[i]) TH_LOG("word %d", i);
	}
	munmap(seen, 16384);
	munmap(cpu, 16384);
	close(dmabuf);
	close(card);
}

/* A dma-buf exported by vgem and imported into vgsched through PRIME. */
TEST_F(bo, imported_vgem_dma_buf_is_refused_by_every_handle_ioctl)
{
	int vgem = vg_open_card_of_driver("vgem");
	__u32 vgem_handle, imported;
	int dmabuf;

	ASSERT_GE(vgem, 0) TH_LOG("no vgem device (CONFIG_DRM_VGEM)");
	vgem_handle = vg_dumb_create(vgem);
	ASSERT_NE(0, vgem_handle);
	dmabuf = vg_prime_export(vgem, vgem_handle);
	ASSERT_GE(dmabuf, 0);
	imported = vg_prime_import(self->fd, dmabuf);
	ASSERT_NE(0, imported) TH_LOG("PRIME import: %s", strerror(errno));
	foreign_handle_is_refused(_metadata, self->fd, imported);
	/* Importing the same dma-buf again names the same object. */
	ASSERT_EQ(imported, vg_prime_import(self->fd, dmabuf));
	close(dmabuf);
	close(vgem);
}

/* vgsched's own object comes back as itself through PRIME, and is usable. */
TEST_F(bo, own_object_through_prime_is_accepted)
{
	__u32 handle = vgsched_bo_create(self->fd, 4096);
	int other = vgsched_open_render_node();
	int dmabuf;
	__u32 imported;

	ASSERT_NE(0, handle);
	ASSERT_GE(other, 0);
	dmabuf = vg_prime_export(self->fd, handle);
	ASSERT_GE(dmabuf, 0);
	imported = vg_prime_import(other, dmabuf);
	ASSERT_NE(0, imported);
	EXPECT_EQ(0, vgsched_bo_mmap_offset(other, imported));
	close(dmabuf);
	close(other);
}

TEST_HARNESS_MAIN
