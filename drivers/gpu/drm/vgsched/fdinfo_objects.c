// SPDX-License-Identifier: GPL-2.0
/*
 * vgsched: the objects of a DRM file, for the device-memory keys of its
 * fdinfo (fdinfo.rs).
 *
 * The Rust DRM abstractions of Linux 7.3 cannot walk a file's handles, and
 * drm_show_memory_stats() covers system memory only, so this walks the
 * file's object table (struct drm_file.object_idr, under its table_lock,
 * as drm_show_memory_stats() does) and hands each object to a callback.
 * The callback runs under a spinlock: it must not sleep.
 */

#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <linux/idr.h>
#include <linux/spinlock.h>

#include "fdinfo_objects.h"

void vgsched_file_for_each_object(struct drm_file *file,
				  void (*cb)(void *data, struct drm_gem_object *obj),
				  void *data)
{
	struct drm_gem_object *obj;
	int id;

	spin_lock(&file->table_lock);
	idr_for_each_entry(&file->object_idr, obj, id)
		cb(data, obj);
	spin_unlock(&file->table_lock);
}
