/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vgsched: the C helper projects.rs declares (see userns.c).
 */
#ifndef _VGSCHED_USERNS_H_
#define _VGSCHED_USERNS_H_

#include <linux/types.h>

u32 vgsched_current_bound_owner(void);

#endif
