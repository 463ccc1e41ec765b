/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vgsched: the C helpers engine.rs declares (see engine_sync.c).
 */
#ifndef _VGSCHED_ENGINE_SYNC_H_
#define _VGSCHED_ENGINE_SYNC_H_

#include <linux/types.h>

struct workqueue_struct;

struct workqueue_struct *vgsched_engine_wq_alloc(void);
struct workqueue_struct *vgsched_memory_wq_alloc(void);
struct workqueue_struct *vgsched_gpu_wq_alloc(void);
void vgsched_engine_wq_destroy(struct workqueue_struct *wq);
bool vgsched_gpu_yield(void);
bool vgsched_fence_begin_signalling(void);
void vgsched_fence_end_signalling(bool cookie);

#endif /* _VGSCHED_ENGINE_SYNC_H_ */
