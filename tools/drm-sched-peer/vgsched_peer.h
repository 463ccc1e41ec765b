/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ioctls of /dev/vgsched_peer (vgsched_peer.c), shared by the module
 * and the guest benchmark. Test-only: not a uAPI of vgsched.
 */
#ifndef VGSCHED_PEER_H
#define VGSCHED_PEER_H

#include <linux/ioctl.h>
#include <linux/types.h>

struct vgsched_peer_ctx_create {
	__u32 priority;		/* 0 high, 1 normal */
	__u32 pad;
	__u32 ctx_id;		/* out */
	__u32 pad2;
};

struct vgsched_peer_submit {
	__u32 ctx_id;
	__u32 bo_handle;	/* 0, or a buffer the job writes (BO_CREATE) */
	__u64 duration_us;
	__u64 seqno;		/* out */
};

struct vgsched_peer_wait {
	__u32 ctx_id;
	__u32 pad;
	__u64 seqno;
	__u64 timeout_ns;	/* relative */
};

struct vgsched_peer_query {
	__u32 ctx_id;
	__u32 pad;
	__u64 runtime_ns;	/* out: time its jobs ran on the ring */
	__u64 last_submit_ns;	/* out: its last SUBMIT, CLOCK_MONOTONIC */
	__u64 last_start_ns;	/* out: its last job's start on the ring */
	__u64 sched_submit_ns;	/* out: time in drm_sched queueing jobs without a buffer */
	__u64 sched_submits;	/* out: how many */
};

struct vgsched_peer_bo_create {
	__u32 handle;		/* out */
	__u32 pad;
};

#define VGSCHED_PEER_CTX_CREATE	_IOWR('V', 1, struct vgsched_peer_ctx_create)
#define VGSCHED_PEER_SUBMIT	_IOWR('V', 2, struct vgsched_peer_submit)
#define VGSCHED_PEER_WAIT	_IOW('V', 3, struct vgsched_peer_wait)
#define VGSCHED_PEER_QUERY	_IOWR('V', 4, struct vgsched_peer_query)
#define VGSCHED_PEER_BO_CREATE	_IOWR('V', 5, struct vgsched_peer_bo_create)

#endif
