/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vgsched: the hwmon device of the tiles' energy account (see hwmon.c).
 */
#ifndef _VGSCHED_HWMON_H_
#define _VGSCHED_HWMON_H_

struct device;
struct vgsched_hwmon;

/* What a channel reads (hwmon.rs answers). */
enum vgsched_hwmon_quantity {
	VGSCHED_HWMON_ENERGY_UJ,
	VGSCHED_HWMON_POWER_UW,
};

/*
 * Channel 0 is the device, channels 1..nodes its nodes, the next ones its
 * tiles. @read answers one channel's quantity into *out, or returns a
 * negative errno. Returns the device, an ERR_PTR(), or NULL on a kernel
 * without hwmon; vgsched_hwmon_unregister() takes any but an ERR_PTR().
 */
struct vgsched_hwmon *
vgsched_hwmon_register(struct device *parent, unsigned int nodes, unsigned int tiles,
		       int (*read)(void *data, int quantity, int channel, long *out),
		       void *data);
void vgsched_hwmon_unregister(struct vgsched_hwmon *hwmon);

#endif /* _VGSCHED_HWMON_H_ */
