/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vgsched: the C fdinfo helper fdinfo.rs declares (see fdinfo.c).
 */
#ifndef _VGSCHED_FDINFO_H_
#define _VGSCHED_FDINFO_H_

#include <linux/types.h>

struct drm_device;
struct drm_file;

int vgsched_fdinfo_install(struct drm_device *dev,
			   u64 (*engine_ns)(struct drm_file *file));

#endif /* _VGSCHED_FDINFO_H_ */
