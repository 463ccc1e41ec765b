// SPDX-License-Identifier: GPL-2.0
/*
 * vgsched: DRM client usage statistics in /proc/PID/fdinfo/FD
 * (Documentation/gpu/drm-usage-stats.rst).
 *
 * The Rust DRM abstractions of Linux 7.3 give a driver no way to hook
 * fdinfo: the struct drm_driver they build is a constant with
 * .show_fdinfo = NULL (rust/kernel/drm/device.rs, UnregisteredDevice::VTABLE)
 * and its file operations, also a constant, have no .show_fdinfo
 * (rust/kernel/drm/gem/mod.rs, create_fops()). Both sit in read-only data.
 *
 * The DRM core, though, reads both through dev->driver at the moment of
 * use: drm_stub_open() installs dev->driver->fops on every open of a DRM
 * node (drivers/gpu/drm/drm_drv.c, drm_stub_open()), and drm_show_fdinfo()
 * calls dev->driver->show_fdinfo (drivers/gpu/drm/drm_file.c). So, while
 * the device is still unregistered and nothing can open it, which is when
 * the abstraction itself assigns dev->driver (UnregisteredDevice::new()),
 * vgsched_fdinfo_install() points dev->driver at a copy of the
 * abstraction's structure that differs only in the two hooks:
 *
 *  - the file operations gain .show_fdinfo = drm_show_fdinfo, the core's
 *    helper, which prints drm-driver and drm-client-id itself, then
 *  - calls the driver's .show_fdinfo, vgsched_show_fdinfo() below: the
 *    standard GEM memory keys (drm_show_memory_stats()) and
 *    drm-engine-gpu, the modeled GPU time of the file's contexts, which
 *    the Rust side (fdinfo.rs) computes.
 *
 * Everything else (ioctl table, open/postclose, release, features, the
 * fops owner) is the abstraction's own, copied bit for bit, so the core
 * sees the same driver. The copies are written once, from module init,
 * and are then read-only (__ro_after_init). They last as long as the
 * originals do, the module's lifetime, which is long enough for the same
 * reasons: open files pin the module through fops.owner, and the device's
 * release callback is module code too. One device per module (the faux
 * device "vgsched"), so one copy; a second install is refused.
 */

#include <linux/bug.h>
#include <linux/errno.h>
#include <linux/fs.h>

#include <drm/drm_device.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_print.h>

#include "fdinfo.h"

/* Not const: filled in at init from the abstraction's; read-only after it. */
static struct drm_driver vgsched_fdinfo_driver __ro_after_init;
static struct file_operations vgsched_fdinfo_fops __ro_after_init;
static u64 (*vgsched_fdinfo_engine_ns)(struct drm_file *file) __ro_after_init;

/* The driver's part of the fdinfo text, after drm-driver and drm-client-id. */
static void vgsched_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	drm_show_memory_stats(p, file);
	/* One engine: the whole virtual GPU, as contexts' runtime counts it. */
	drm_printf(p, "drm-engine-gpu:\t%llu ns\n", vgsched_fdinfo_engine_ns(file));
}

/**
 * vgsched_fdinfo_install - give an unregistered device the fdinfo hooks
 * @dev: the device, allocated by the Rust abstraction, not yet registered
 * @engine_ns: busy time of the engine "gpu" for an open file of @dev
 *
 * Must be called from module init (the copies become read-only after it),
 * before drm_dev_register(). Returns 0, or -EBUSY if a device of this
 * module already has them.
 */
int vgsched_fdinfo_install(struct drm_device *dev,
			   u64 (*engine_ns)(struct drm_file *file))
{
	if (WARN_ON(vgsched_fdinfo_engine_ns || dev->registered))
		return -EBUSY;

	vgsched_fdinfo_fops = *dev->driver->fops;
	vgsched_fdinfo_fops.show_fdinfo = drm_show_fdinfo;

	vgsched_fdinfo_driver = *dev->driver;
	vgsched_fdinfo_driver.fops = &vgsched_fdinfo_fops;
	vgsched_fdinfo_driver.show_fdinfo = vgsched_show_fdinfo;

	vgsched_fdinfo_engine_ns = engine_ns;
	dev->driver = &vgsched_fdinfo_driver;
	return 0;
}
