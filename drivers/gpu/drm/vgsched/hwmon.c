// SPDX-License-Identifier: GPL-2.0
/*
 * vgsched: the energy account of the tiles through hwmon, the interface
 * amdgpu and xe report energy and power with and that sensors(1) reads.
 * Linux 7.3 has no Rust binding of hwmon, so this file registers the
 * device on public API (hwmon_device_register_with_info()) and asks the
 * Rust side (hwmon.rs) for each value.
 *
 * One channel per place energy is drawn: the whole device ("device"), each
 * node ("node<n>": its standby and its tiles) and each tile ("tile<n>"),
 * each with energy<i>_input (microjoules since load) and power<i>_input
 * (microwatts now), both labelled. The channel lists are built at
 * registration, as the number of tiles is a module parameter. Without
 * CONFIG_HWMON there is no device (registration returns NULL).
 */

#include <linux/device.h>
#include <linux/err.h>
#include <linux/hwmon.h>
#include <linux/slab.h>

#include "hwmon.h"
#include "params.h"

#define VGSCHED_HWMON_CHANNELS (1 + VGSCHED_MAX_NODES + VGSCHED_MAX_TILES)

struct vgsched_hwmon {
	struct device *dev;
	int (*read)(void *data, int quantity, int channel, long *out);
	void *data;
	struct hwmon_channel_info energy;
	struct hwmon_channel_info power;
	const struct hwmon_channel_info *info[3];
	struct hwmon_ops ops;
	struct hwmon_chip_info chip;
	/* Zero-terminated, as hwmon wants its channel lists. */
	u32 energy_config[VGSCHED_HWMON_CHANNELS + 1];
	u32 power_config[VGSCHED_HWMON_CHANNELS + 1];
	char labels[VGSCHED_HWMON_CHANNELS][16];
};

/*
 * Readable by root only: a tile's energy and power tell what other users'
 * jobs are doing on it (the side channel for which RAPL's energy files
 * became root-only), and each read takes the engine's lock to bring the
 * account up to now, which unprivileged readers must not be able to keep
 * taking. Labels are harmless and stay world-readable.
 */
static umode_t vgsched_hwmon_visible(const void *data, enum hwmon_sensor_types type,
				     u32 attr, int channel)
{
	if ((type == hwmon_energy && attr == hwmon_energy_label) ||
	    (type == hwmon_power && attr == hwmon_power_label))
		return 0444;
	return 0400;
}

static int vgsched_hwmon_read(struct device *dev, enum hwmon_sensor_types type, u32 attr,
			      int channel, long *val)
{
	struct vgsched_hwmon *h = dev_get_drvdata(dev);

	if (type == hwmon_energy && attr == hwmon_energy_input)
		return h->read(h->data, VGSCHED_HWMON_ENERGY_UJ, channel, val);
	if (type == hwmon_power && attr == hwmon_power_input)
		return h->read(h->data, VGSCHED_HWMON_POWER_UW, channel, val);
	return -EOPNOTSUPP;
}

static int vgsched_hwmon_label(struct device *dev, enum hwmon_sensor_types type, u32 attr,
			       int channel, const char **str)
{
	struct vgsched_hwmon *h = dev_get_drvdata(dev);

	if (channel < 0 || channel >= VGSCHED_HWMON_CHANNELS)
		return -EINVAL;
	*str = h->labels[channel];
	return 0;
}

struct vgsched_hwmon *
vgsched_hwmon_register(struct device *parent, unsigned int nodes, unsigned int tiles,
		       int (*read)(void *data, int quantity, int channel, long *out),
		       void *data)
{
	unsigned int channels = 1 + nodes + tiles, i;
	struct vgsched_hwmon *h;

	/* A kernel without hwmon: the module works, nobody reads energy. */
	if (!IS_REACHABLE(CONFIG_HWMON))
		return NULL;
	if (nodes > VGSCHED_MAX_NODES || tiles > VGSCHED_MAX_TILES)
		return ERR_PTR(-EINVAL);
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h)
		return ERR_PTR(-ENOMEM);
	h->read = read;
	h->data = data;
	for (i = 0; i < channels; i++) {
		h->energy_config[i] = HWMON_E_INPUT | HWMON_E_LABEL;
		h->power_config[i] = HWMON_P_INPUT | HWMON_P_LABEL;
		if (i == 0)
			strscpy(h->labels[i], "device");
		else if (i <= nodes)
			snprintf(h->labels[i], sizeof(h->labels[i]), "node%u", i - 1);
		else
			snprintf(h->labels[i], sizeof(h->labels[i]), "tile%u", i - 1 - nodes);
	}
	h->energy = (struct hwmon_channel_info){ .type = hwmon_energy,
						 .config = h->energy_config };
	h->power = (struct hwmon_channel_info){ .type = hwmon_power,
						.config = h->power_config };
	h->info[0] = &h->energy;
	h->info[1] = &h->power;
	h->ops = (struct hwmon_ops){
		.is_visible = vgsched_hwmon_visible,
		.read = vgsched_hwmon_read,
		.read_string = vgsched_hwmon_label,
	};
	h->chip = (struct hwmon_chip_info){ .ops = &h->ops, .info = h->info };
	h->dev = hwmon_device_register_with_info(parent, "vgsched", h, &h->chip, NULL);
	if (IS_ERR(h->dev)) {
		long err = PTR_ERR(h->dev);

		kfree(h);
		return ERR_PTR(err);
	}
	return h;
}

/*
 * Removes the attributes, waiting for reads in progress: once this
 * returns, @read is not called again.
 */
void vgsched_hwmon_unregister(struct vgsched_hwmon *h)
{
	if (!h)
		return;
	hwmon_device_unregister(h->dev);
	kfree(h);
}
