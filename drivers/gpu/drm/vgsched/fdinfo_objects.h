/* SPDX-License-Identifier: GPL-2.0 */
#ifndef VGSCHED_FDINFO_OBJECTS_H
#define VGSCHED_FDINFO_OBJECTS_H

struct drm_file;
struct drm_gem_object;

void vgsched_file_for_each_object(struct drm_file *file,
				  void (*cb)(void *data, struct drm_gem_object *obj),
				  void *data);

#endif
