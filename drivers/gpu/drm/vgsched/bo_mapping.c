// SPDX-License-Identifier: GPL-2.0
/*
 * vgsched: knowing which pages of a buffer object the CPU writes through
 * its mappings, so that a device copy of the object never hides them, and
 * letting the CPU write only while the mapping's holder may.
 *
 * A buffer object's CPU mappings (mmap() of the DRM file, or of one of its
 * dma-bufs) are the shmem GEM helper's: page-frame mappings whose
 * vm_operations_struct has a pfn_mkwrite hook, so the kernel maps the pages
 * read-only and calls the hook on the first write to each page
 * (vma_wants_writenotify() in mm/vma.c). The Rust DRM abstractions of
 * Linux 7.3 give a driver no say in those operations, so this file, on
 * public API only:
 *
 *  - vgsched_bo_track_writes() is called by the object's mmap hook (gem.rs,
 *    once it has accepted the mapping, before drm_gem_shmem_object_mmap()
 *    sets the page protection) and points the mapping at vgsched_bo_vm_ops:
 *    the shmem helper's own operations, each forwarded, except that
 *    pfn_mkwrite first asks the driver (vgsched_bo_cpu_write(), in gem.rs),
 *    which records the page, or refuses the write (SIGBUS) when the
 *    mapping's holder may no longer write the object; that mprotect asks
 *    the driver too (vgsched_bo_may_write(), EACCES for a holder without
 *    write access); and that there is no huge_fault (huge entries would
 *    record writes in the fault path, not through pfn_mkwrite).
 *
 *  - A mapping made through a dma-buf is recorded with the object
 *    (struct vgsched_bo_maps, which gem.rs keeps): the dma-buf's inode,
 *    held with ihold() so that its address space outlives the dma-buf's
 *    file while the record does, and the number of mappings through it
 *    (counted at mmap and in the open and close operations: fork, split,
 *    mremap, munmap). An object may be mapped through several dma-bufs over
 *    its life (the DRM core forgets its dma-buf when its last handle goes,
 *    and a later export makes another), so there is one record per
 *    dma-buf, gone with its last mapping. A mapping whose setup fails after
 *    the driver's hook (the shmem helper found no pages) leaves its count
 *    until the object is freed: its record then only costs a zap of an
 *    address space without mappings.
 *
 *  - vgsched_bo_protect() takes away every CPU page-table entry of the
 *    object, through the DRM files' address space and every recorded
 *    dma-buf's, so the next write to any page goes through pfn_mkwrite
 *    again. Reads fault the pages back in read-only and report nothing.
 *
 * The page reported is the one the shmem helpers map at the faulting
 * address: its offset in the mapping (vmf->pgoff - vma->vm_pgoff, as in
 * drm_gem_shmem_record_mkwrite()).
 *
 * Contract with the Rust side (gem.rs, vram.rs): a page's write is
 * reported before the write can land, and after vgsched_bo_protect()
 * returns no write lands without a new report. So taking and clearing the
 * reported pages, then protecting, then handing the pages taken to the
 * device copy (which uploads them later) gives a copy that misses no write
 * it was not told about later; the Rust side serialises the three steps
 * per object. Nothing here runs on a fence-signalling path; the record's
 * allocation (GFP_KERNEL_ACCOUNT, at mmap) is the only one.
 * vgsched_bo_protect() takes the records' mutex, the mappings' i_mmap
 * locks (allowed under a reservation lock, see dma_resv_lockdep()); the
 * records' mutex is taken under mmap_lock by the mapping operations, and
 * nothing here takes mmap_lock.
 */

#include <drm/drm_device.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_vma_manager.h>
#include <linux/fs.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/slab.h>

#include "bo_mapping.h"

/* The dma-bufs an object is mapped through. */
struct vgsched_bo_maps {
	struct mutex lock;
	struct list_head dmabufs;
};

/* The mappings of an object through one dma-buf. */
struct vgsched_bo_dmabuf_map {
	struct list_head link;
	/* The dma-buf's inode, held: its i_mapping holds the mappings. */
	struct inode *inode;
	unsigned long vmas;
};

struct vgsched_bo_maps *vgsched_bo_maps_new(void)
{
	struct vgsched_bo_maps *maps = kzalloc_obj(*maps, GFP_KERNEL_ACCOUNT);

	if (!maps)
		return NULL;
	mutex_init(&maps->lock);
	INIT_LIST_HEAD(&maps->dmabufs);
	return maps;
}

void vgsched_bo_maps_free(struct vgsched_bo_maps *maps)
{
	struct vgsched_bo_dmabuf_map *m, *next;

	if (!maps)
		return;
	list_for_each_entry_safe(m, next, &maps->dmabufs, link) {
		list_del(&m->link);
		iput(m->inode);
		kfree(m);
	}
	mutex_destroy(&maps->lock);
	kfree(maps);
}

/* The mapping is the DRM file's (not a dma-buf's). */
static bool vgsched_bo_drm_mapping(struct vm_area_struct *vma, struct drm_gem_object *obj)
{
	return vma->vm_file->f_op == obj->dev->driver->fops;
}

/* The open DRM file a mapping was made through, or NULL for a dma-buf's. */
static struct drm_file *vgsched_bo_drm_file(struct vm_area_struct *vma,
					    struct drm_gem_object *obj)
{
	return vgsched_bo_drm_mapping(vma, obj) ? vma->vm_file->private_data : NULL;
}

static struct vgsched_bo_dmabuf_map *vgsched_bo_find(struct vgsched_bo_maps *maps,
						     struct inode *inode)
{
	struct vgsched_bo_dmabuf_map *m;

	list_for_each_entry(m, &maps->dmabufs, link)
		if (m->inode == inode)
			return m;
	return NULL;
}

/*
 * Counts one more mapping of @obj through the dma-buf of @vma (nothing for
 * the DRM file's mappings); a first one is recorded, which allocates only
 * when @fresh (the mapping is being made: it may fail). Called from open,
 * a dma-buf already has its record (its mapping that was copied counted).
 */
static int vgsched_bo_count_map(struct vm_area_struct *vma, struct drm_gem_object *obj,
				bool fresh)
{
	struct vgsched_bo_maps *maps = vgsched_bo_maps_of(obj);
	struct inode *inode = file_inode(vma->vm_file);
	struct vgsched_bo_dmabuf_map *m;
	int ret = 0;

	if (vgsched_bo_drm_mapping(vma, obj))
		return 0;
	mutex_lock(&maps->lock);
	m = vgsched_bo_find(maps, inode);
	if (m) {
		m->vmas++;
	} else if (fresh) {
		m = kzalloc_obj(*m, GFP_KERNEL_ACCOUNT);
		if (m) {
			ihold(inode);
			m->inode = inode;
			m->vmas = 1;
			list_add(&m->link, &maps->dmabufs);
		} else {
			ret = -ENOMEM;
		}
	} else {
		WARN_ON_ONCE(1);
	}
	mutex_unlock(&maps->lock);
	return ret;
}

static vm_fault_t vgsched_bo_fault(struct vm_fault *vmf)
{
	return drm_gem_shmem_vm_ops.fault(vmf);
}

static void vgsched_bo_open(struct vm_area_struct *vma)
{
	vgsched_bo_count_map(vma, vma->vm_private_data, false);
	drm_gem_shmem_vm_ops.open(vma);
}

static void vgsched_bo_close(struct vm_area_struct *vma)
{
	struct drm_gem_object *obj = vma->vm_private_data;
	struct vgsched_bo_maps *maps = vgsched_bo_maps_of(obj);
	struct vgsched_bo_dmabuf_map *m = NULL;

	if (!vgsched_bo_drm_mapping(vma, obj)) {
		mutex_lock(&maps->lock);
		m = vgsched_bo_find(maps, file_inode(vma->vm_file));
		if (m && --m->vmas == 0)
			list_del(&m->link);
		else
			m = NULL;
		mutex_unlock(&maps->lock);
	}
	if (m) {
		iput(m->inode);
		kfree(m);
	}
	/* Last: it may drop the object's last reference. */
	drm_gem_shmem_vm_ops.close(vma);
}

static vm_fault_t vgsched_bo_pfn_mkwrite(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct drm_gem_object *obj = vma->vm_private_data;

	/* The page the shmem helpers map here: its offset in the mapping. */
	if (!vgsched_bo_cpu_write(obj, vgsched_bo_drm_file(vma, obj), vmf->pgoff - vma->vm_pgoff))
		return VM_FAULT_SIGBUS;
	return drm_gem_shmem_vm_ops.pfn_mkwrite(vmf);
}

static int vgsched_bo_mprotect(struct vm_area_struct *vma, unsigned long start,
			       unsigned long end, unsigned long newflags)
{
	struct drm_gem_object *obj = vma->vm_private_data;

	if ((newflags & VM_WRITE) && !vgsched_bo_may_write(obj, vgsched_bo_drm_file(vma, obj)))
		return -EACCES;
	return 0;
}

static const struct vm_operations_struct vgsched_bo_vm_ops = {
	.fault = vgsched_bo_fault,
	.open = vgsched_bo_open,
	.close = vgsched_bo_close,
	.pfn_mkwrite = vgsched_bo_pfn_mkwrite,
	.mprotect = vgsched_bo_mprotect,
};

int vgsched_bo_track_writes(struct vm_area_struct *vma, struct drm_gem_object *obj)
{
	int ret = vgsched_bo_count_map(vma, obj, true);

	if (ret)
		return ret;
	vma->vm_ops = &vgsched_bo_vm_ops;
	return 0;
}

void vgsched_bo_protect(struct drm_gem_object *obj)
{
	struct vgsched_bo_maps *maps = vgsched_bo_maps_of(obj);
	struct drm_device *dev = obj->dev;
	struct vgsched_bo_dmabuf_map *m;

	drm_vma_node_unmap(&obj->vma_node, dev->anon_inode->i_mapping);
	/* A dma-buf's mappings keep the object's fake offset (drm_gem_prime_mmap()). */
	mutex_lock(&maps->lock);
	list_for_each_entry(m, &maps->dmabufs, link)
		unmap_mapping_range(m->inode->i_mapping, drm_vma_node_offset_addr(&obj->vma_node),
				    obj->size, 1);
	mutex_unlock(&maps->lock);
}
