/* SPDX-License-Identifier: GPL-2.0 */
#ifndef VGSCHED_PARAMS_H
#define VGSCHED_PARAMS_H

/* The run-time pipeline parameters (params.c), in this order (params.rs). */
enum {
	VGSCHED_PIPELINE_MODE,
	VGSCHED_PHASE1_THRESHOLD_KIB,
	VGSCHED_SUBTASK_THRESHOLD_KIB,
	VGSCHED_PROGRESS_POINT,
	VGSCHED_PIPELINE_PARAMS,
};

unsigned int vgsched_pipeline_param(unsigned int index);
unsigned int vgsched_pipeline_default(unsigned int index);
/* Implemented in Rust (params.rs): 0 or -EINVAL. */
int vgsched_pipeline_param_check(unsigned int index, unsigned int value);

#endif
