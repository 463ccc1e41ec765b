// SPDX-License-Identifier: GPL-2.0
/*
 * vgsched: the module parameters of the pipeline, of tile placement and of
 * the default bound of a uid in no project that an administrator may
 * change while the module is loaded, through
 * /sys/module/vgsched/parameters/ (mode 0644), and the tile topology and
 * power model (mode 0444), whose lists the Rust module! macro cannot
 * declare.
 *
 * The Rust module! macro of Linux 7.3 registers parameters that sysfs never
 * shows, so these few are registered here with module_param_cb() on public
 * API. A write (or an insmod argument) is parsed as an unsigned number and
 * checked by the Rust side against the limits of the core crate
 * (vgsched_pipeline_param_check(), pipeline.rs), so the limits live in one
 * place; a bad value fails the write, or the load, with -EINVAL and leaves
 * the old value. The engine reads the values with READ_ONCE() through
 * vgsched_pipeline_param() at each decision, so a change takes effect at
 * the next one.
 */

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/string.h>

#include "params.h"

/* The defaults; KUnit checks them against the core crate's (pipeline.rs). */
#define VGSCHED_PIPELINE_DEFAULTS {			\
	[VGSCHED_PIPELINE_MODE] = 0,			\
	[VGSCHED_PHASE1_THRESHOLD_KIB] = 16 << 10,	\
	[VGSCHED_SUBTASK_THRESHOLD_KIB] = 32 << 10,	\
	[VGSCHED_PROGRESS_POINT] = 2,			\
	[VGSCHED_PLACEMENT_POLICY] = 0,			\
	[VGSCHED_DEFAULT_CONTEXTS] = 1024,		\
	[VGSCHED_DEFAULT_BO_MIB] = 1024,		\
}

static const unsigned int vgsched_pipeline_defaults[VGSCHED_PIPELINE_PARAMS] =
	VGSCHED_PIPELINE_DEFAULTS;
static unsigned int vgsched_pipeline_values[VGSCHED_PIPELINE_PARAMS] = VGSCHED_PIPELINE_DEFAULTS;

static int vgsched_pipeline_set(const char *val, const struct kernel_param *kp)
{
	unsigned int *slot = kp->arg;
	unsigned long long value;
	int ret = kstrtoull(val, 0, &value);

	/* A number past 64 bits is out of range too: checked as the widest. */
	if (ret == -ERANGE)
		value = ULLONG_MAX;
	else if (ret)
		return ret;
	/* In range only if it fits the parameter. */
	ret = vgsched_pipeline_param_check(slot - vgsched_pipeline_values, value);
	if (ret)
		return ret;
	WRITE_ONCE(*slot, (unsigned int)value);
	return 0;
}

static const struct kernel_param_ops vgsched_pipeline_ops = {
	.set = vgsched_pipeline_set,
	.get = param_get_uint,
};

module_param_cb(pipeline_mode, &vgsched_pipeline_ops,
		&vgsched_pipeline_values[VGSCHED_PIPELINE_MODE], 0644);
MODULE_PARM_DESC(pipeline_mode,
		 "Preparation of the next task: 0 pipelined (overlaps execution), 1 sequential");
module_param_cb(phase1_threshold_kib, &vgsched_pipeline_ops,
		&vgsched_pipeline_values[VGSCHED_PHASE1_THRESHOLD_KIB], 0644);
MODULE_PARM_DESC(phase1_threshold_kib,
		 "First threshold: device memory of contexts in phase 1 at which no phase 1 starts, KiB (1-1048576)");
module_param_cb(subtask_threshold_kib, &vgsched_pipeline_ops,
		&vgsched_pipeline_values[VGSCHED_SUBTASK_THRESHOLD_KIB], 0644);
MODULE_PARM_DESC(subtask_threshold_kib,
		 "Second threshold: device memory of a job marked at the progress point, KiB (1-1048576)");
module_param_cb(progress_point, &vgsched_pipeline_ops,
		&vgsched_pipeline_values[VGSCHED_PROGRESS_POINT], 0644);
MODULE_PARM_DESC(progress_point,
		 "Progress point: the next task's first job is prepared when fewer than this many jobs of the current one are left unrun (1-64)");

module_param_cb(placement_policy, &vgsched_pipeline_ops,
		&vgsched_pipeline_values[VGSCHED_PLACEMENT_POLICY], 0644);
MODULE_PARM_DESC(placement_policy,
		 "Where a job's tiles go: 0 power (nearly full nodes, lowest power first), 1 spread (least loaded node first)");

module_param_cb(default_contexts, &vgsched_pipeline_ops,
		&vgsched_pipeline_values[VGSCHED_DEFAULT_CONTEXTS], 0644);
MODULE_PARM_DESC(default_contexts,
		 "Contexts a uid in no project may hold on the device, all its files together (1-16384)");
module_param_cb(default_bo_mib, &vgsched_pipeline_ops,
		&vgsched_pipeline_values[VGSCHED_DEFAULT_BO_MIB], 0644);
MODULE_PARM_DESC(default_bo_mib,
		 "Buffer objects a uid in no project may hold on the device, all its files together, MiB (1-1048576)");

unsigned int vgsched_pipeline_default(unsigned int index)
{
	if (WARN_ON(index >= VGSCHED_PIPELINE_PARAMS))
		return 0;
	return vgsched_pipeline_defaults[index];
}

unsigned int vgsched_pipeline_param(unsigned int index)
{
	if (WARN_ON(index >= VGSCHED_PIPELINE_PARAMS))
		return 0;
	return READ_ONCE(vgsched_pipeline_values[index]);
}

/*
 * The tiles: nodes of tiles_per_node tiles, each tile's type, each type's
 * first power value and each node's standby power (mW). Read once at load
 * and checked by the Rust side (tiles.rs), which refuses the load with
 * -EINVAL and a log line; a list left out takes its default there, and
 * the lists in force are written back (vgsched_tile_lists_write_back()),
 * so that sysfs shows what the device uses. The numbers are kept 64 bits
 * wide: one past 32 bits is refused as out of range, not by the parser
 * (a list's entries stay 32 bits: one past them is the parser's ERANGE).
 */
static unsigned long long vgsched_nodes = 1;
static unsigned long long vgsched_tiles_per_node = 1;
static unsigned int vgsched_tile_type[VGSCHED_MAX_TILES];
static int vgsched_tile_type_n;
static unsigned int vgsched_type_power_mw[VGSCHED_MAX_TYPES];
static int vgsched_type_power_n;
static unsigned int vgsched_node_standby_mw[VGSCHED_MAX_NODES];
static int vgsched_node_standby_n;

module_param_named(nodes, vgsched_nodes, ullong, 0444);
MODULE_PARM_DESC(nodes, "Tiles: nodes (groups of tiles sharing a standby power, 1-16)");
module_param_named(tiles_per_node, vgsched_tiles_per_node, ullong, 0444);
MODULE_PARM_DESC(tiles_per_node, "Tiles per node (1-16); each tile owns modules / tiles modules");
module_param_array_named(tile_type, vgsched_tile_type, uint, &vgsched_tile_type_n, 0444);
MODULE_PARM_DESC(tile_type, "Each tile's type, node by node (default: all 0)");
module_param_array_named(type_power_mw, vgsched_type_power_mw, uint, &vgsched_type_power_n, 0444);
MODULE_PARM_DESC(type_power_mw, "First power value of each tile type, mW (default: 150000 for type 0)");
module_param_array_named(node_standby_mw, vgsched_node_standby_mw, uint,
			 &vgsched_node_standby_n, 0444);
MODULE_PARM_DESC(node_standby_mw, "Standby power of each node, mW (default: 25000 each)");

/* The power model of the tiles, checked by the Rust side too. */
static unsigned long long vgsched_tile_idle_mw = VGSCHED_DEFAULT_IDLE_MW;
static unsigned long long vgsched_tile_sleep_mw = VGSCHED_DEFAULT_SLEEP_MW;
static unsigned long long vgsched_tile_idle_delay_us = VGSCHED_DEFAULT_IDLE_DELAY_US;
static unsigned long long vgsched_tile_wake_us = VGSCHED_DEFAULT_WAKE_US;

module_param_named(tile_idle_mw, vgsched_tile_idle_mw, ullong, 0444);
MODULE_PARM_DESC(tile_idle_mw, "Power of an idle tile, mW (at most the lowest type power)");
module_param_named(tile_sleep_mw, vgsched_tile_sleep_mw, ullong, 0444);
MODULE_PARM_DESC(tile_sleep_mw, "Power of a tile in the low-power state, mW (at most tile_idle_mw)");
module_param_named(tile_idle_delay_us, vgsched_tile_idle_delay_us, ullong, 0444);
MODULE_PARM_DESC(tile_idle_delay_us, "Idle time after which a tile goes to the low-power state, us (0-10000000)");
module_param_named(tile_wake_us, vgsched_tile_wake_us, ullong, 0444);
MODULE_PARM_DESC(tile_wake_us, "Modeled latency of waking a tile before a job starts on it, us (0-1000000)");

void vgsched_tile_params(struct vgsched_tile_params *out)
{
	*out = (struct vgsched_tile_params){
		.nodes = vgsched_nodes,
		.tiles_per_node = vgsched_tiles_per_node,
		.tile_type = vgsched_tile_type,
		.tile_type_n = vgsched_tile_type_n,
		.type_power_mw = vgsched_type_power_mw,
		.type_power_n = vgsched_type_power_n,
		.node_standby_mw = vgsched_node_standby_mw,
		.node_standby_n = vgsched_node_standby_n,
		.idle_mw = vgsched_tile_idle_mw,
		.sleep_mw = vgsched_tile_sleep_mw,
		.idle_delay_us = vgsched_tile_idle_delay_us,
		.wake_us = vgsched_tile_wake_us,
	};
}

/*
 * Writes back the lists in force after the Rust side checked them
 * (tiles.rs), with the defaults of those left out filled in: each tile's
 * type, each type's first power value, each node's standby power. Called
 * once at load, before the device is registered; the lists are read-only
 * afterwards. Their sysfs files exist already: a reader takes the
 * parameter lock (param_attr_show()), and so does this.
 */
void vgsched_tile_lists_write_back(const unsigned int *tile_type, int tiles,
				   const unsigned int *type_power_mw, int types,
				   const unsigned int *node_standby_mw, int nodes)
{
	if (WARN_ON(tiles < 0 || tiles > VGSCHED_MAX_TILES || types < 0 ||
		    types > VGSCHED_MAX_TYPES || nodes < 0 || nodes > VGSCHED_MAX_NODES))
		return;
	kernel_param_lock(THIS_MODULE);
	memcpy(vgsched_tile_type, tile_type, tiles * sizeof(*tile_type));
	vgsched_tile_type_n = tiles;
	memcpy(vgsched_type_power_mw, type_power_mw, types * sizeof(*type_power_mw));
	vgsched_type_power_n = types;
	memcpy(vgsched_node_standby_mw, node_standby_mw, nodes * sizeof(*node_standby_mw));
	vgsched_node_standby_n = nodes;
	kernel_param_unlock(THIS_MODULE);
}
