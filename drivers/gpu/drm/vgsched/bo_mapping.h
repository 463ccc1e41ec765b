/* SPDX-License-Identifier: GPL-2.0 */
#ifndef VGSCHED_BO_MAPPING_H
#define VGSCHED_BO_MAPPING_H

#include <linux/types.h>

struct drm_file;
struct drm_gem_object;
struct vm_area_struct;
struct vgsched_bo_maps;

struct vgsched_bo_maps *vgsched_bo_maps_new(void);
void vgsched_bo_maps_free(struct vgsched_bo_maps *maps);
int vgsched_bo_track_writes(struct vm_area_struct *vma, struct drm_gem_object *obj);
void vgsched_bo_protect(struct drm_gem_object *obj);

/* Implemented in Rust (gem.rs). */
struct vgsched_bo_maps *vgsched_bo_maps_of(struct drm_gem_object *obj);
bool vgsched_bo_cpu_write(struct drm_gem_object *obj, struct drm_file *file, unsigned long page);
bool vgsched_bo_may_write(struct drm_gem_object *obj, struct drm_file *file);

#endif
