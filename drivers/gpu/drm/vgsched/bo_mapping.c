// SPDX-License-Identifier: GPL-2.0
/*
 * vgsched: knowing which pages of a buffer object the CPU writes through
 * its mappings, so that a device copy of the object never hides them.
 *
 * A buffer object's CPU mappings (mmap() of the DRM file, or of its
 * dma-buf) are the shmem GEM helper's: page-frame mappings whose
 * vm_operations_struct has a pfn_mkwrite hook, so the kernel maps the pages
 * read-only and calls the hook on the first write to each page
 * (vma_wants_writenotify() in mm/vma.c). The Rust DRM abstractions of
 * Linux 7.3 give a driver no say in those operations, so this file, on
 * public API only:
 *
 *  - vgsched_bo_track_writes() is called by the object's mmap hook (gem.rs,
 *    before drm_gem_shmem_object_mmap() sets the page protection) and
 *    points the mapping at vgsched_bo_vm_ops: the shmem helper's own
 *    operations, each forwarded, except that pfn_mkwrite first reports the
 *    page to the driver (vgsched_bo_cpu_write(), in gem.rs) and that there
 *    is no huge_fault (huge entries would record writes in the fault path,
 *    not through pfn_mkwrite).
 *
 *  - vgsched_bo_protect() takes away every CPU page-table entry of the
 *    object (through the DRM file's mapping and its dma-buf's), so the next
 *    write to any page goes through pfn_mkwrite again. Reads fault the
 *    pages back in read-only and report nothing.
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
 * per object. A dma-buf's mappings are zapped only through the object's
 * current dma-buf; one mapped through an older dma-buf is not, so the Rust
 * side counts every page of an object ever mapped through a dma-buf as
 * written. Nothing here allocates or runs on a fence-signalling path;
 * vgsched_bo_protect() takes the mappings' i_mmap locks (allowed under a
 * reservation lock, see dma_resv_lockdep()) and the device's
 * object_name_lock, which guards the object's dma-buf.
 */

#include <drm/drm_device.h>
#include <drm/drm_gem.h>
#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_vma_manager.h>
#include <linux/dma-buf.h>
#include <linux/fs.h>
#include <linux/mm.h>

#include "bo_mapping.h"

static vm_fault_t vgsched_bo_fault(struct vm_fault *vmf)
{
	return drm_gem_shmem_vm_ops.fault(vmf);
}

static void vgsched_bo_open(struct vm_area_struct *vma)
{
	drm_gem_shmem_vm_ops.open(vma);
}

static void vgsched_bo_close(struct vm_area_struct *vma)
{
	drm_gem_shmem_vm_ops.close(vma);
}

static vm_fault_t vgsched_bo_pfn_mkwrite(struct vm_fault *vmf)
{
	struct drm_gem_object *obj = vmf->vma->vm_private_data;

	/* The page the shmem helpers map here: its offset in the mapping. */
	vgsched_bo_cpu_write(obj, vmf->pgoff - vmf->vma->vm_pgoff);
	return drm_gem_shmem_vm_ops.pfn_mkwrite(vmf);
}

static const struct vm_operations_struct vgsched_bo_vm_ops = {
	.fault = vgsched_bo_fault,
	.open = vgsched_bo_open,
	.close = vgsched_bo_close,
	.pfn_mkwrite = vgsched_bo_pfn_mkwrite,
};

void vgsched_bo_track_writes(struct vm_area_struct *vma)
{
	vma->vm_ops = &vgsched_bo_vm_ops;
}

void vgsched_bo_protect(struct drm_gem_object *obj)
{
	struct drm_device *dev = obj->dev;

	drm_vma_node_unmap(&obj->vma_node, dev->anon_inode->i_mapping);
	/* A dma-buf's mappings keep the object's fake offset (drm_gem_prime_mmap()). */
	mutex_lock(&dev->object_name_lock);
	if (obj->dma_buf)
		unmap_mapping_range(obj->dma_buf->file->f_mapping,
				    drm_vma_node_offset_addr(&obj->vma_node), obj->size, 1);
	mutex_unlock(&dev->object_name_lock);
}
