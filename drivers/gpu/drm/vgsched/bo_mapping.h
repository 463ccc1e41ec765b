/* SPDX-License-Identifier: GPL-2.0 */
#ifndef VGSCHED_BO_MAPPING_H
#define VGSCHED_BO_MAPPING_H

struct drm_gem_object;
struct vm_area_struct;

void vgsched_bo_track_writes(struct vm_area_struct *vma);
void vgsched_bo_protect(struct drm_gem_object *obj);

/* Implemented in Rust (gem.rs). */
void vgsched_bo_cpu_write(struct drm_gem_object *obj, unsigned long page);

#endif
