/* SPDX-License-Identifier: GPL-2.0 */
#ifndef VGSCHED_PARAMS_H
#define VGSCHED_PARAMS_H

/*
 * The run-time parameters (params.c), in this order (params.rs): the
 * pipeline's, the tile placement policy and the default bound of a uid in
 * no project.
 */
enum {
	VGSCHED_PIPELINE_MODE,
	VGSCHED_PHASE1_THRESHOLD_KIB,
	VGSCHED_SUBTASK_THRESHOLD_KIB,
	VGSCHED_PROGRESS_POINT,
	VGSCHED_PLACEMENT_POLICY,
	VGSCHED_DEFAULT_CONTEXTS,
	VGSCHED_DEFAULT_BO_MIB,
	VGSCHED_PIPELINE_PARAMS,
};

unsigned int vgsched_pipeline_param(unsigned int index);
unsigned int vgsched_pipeline_default(unsigned int index);
/*
 * Implemented in Rust (params.rs): 0 or -EINVAL (with the log line). The
 * value as written, which may be wider than the parameter.
 */
int vgsched_pipeline_param_check(unsigned int index, unsigned long long value);

/* As tiles.rs: MAX_TILES, MAX_TYPES, MAX_NODES. */
#define VGSCHED_MAX_TILES	32
#define VGSCHED_MAX_TYPES	8
#define VGSCHED_MAX_NODES	16
/* As tiles.rs: DEFAULT_IDLE_MW, DEFAULT_SLEEP_MW, DEFAULT_IDLE_DELAY_US, DEFAULT_WAKE_US. */
#define VGSCHED_DEFAULT_IDLE_MW		30000
#define VGSCHED_DEFAULT_SLEEP_MW	3000
#define VGSCHED_DEFAULT_IDLE_DELAY_US	5000
#define VGSCHED_DEFAULT_WAKE_US		500

/*
 * The tile topology's parameters, as given (params.rs reads them and
 * checks them; a number is kept as wide as written, so that a value past
 * 32 bits is refused as out of range).
 */
struct vgsched_tile_params {
	unsigned long long nodes;
	unsigned long long tiles_per_node;
	const unsigned int *tile_type;
	int tile_type_n;
	const unsigned int *type_power_mw;
	int type_power_n;
	const unsigned int *node_standby_mw;
	int node_standby_n;
	/* The power model. */
	unsigned long long idle_mw;
	unsigned long long sleep_mw;
	unsigned long long idle_delay_us;
	unsigned long long wake_us;
};

void vgsched_tile_params(struct vgsched_tile_params *out);
void vgsched_tile_lists_write_back(const unsigned int *tile_type, int tiles,
				   const unsigned int *type_power_mw, int types,
				   const unsigned int *node_standby_mw, int nodes);

#endif
