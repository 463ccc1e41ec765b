/* SPDX-License-Identifier: MIT */
/*
 * vgsched: uAPI of the scheduling virtual GPU.
 *
 * Rules every structure here follows (see Documentation/uapi.rst):
 *  - fixed size, naturally aligned, explicit __u32 padding that must be zero;
 *  - __u64 for user pointers and sizes;
 *  - a flags field whose unknown bits are rejected with -EINVAL;
 *  - ioctl numbers dense from 0 in enum drm_vgsched_ioctl_id, so the C
 *    macros below and the driver's Rust ioctl table agree by construction.
 */
#ifndef _UAPI_VGSCHED_DRM_H_
#define _UAPI_VGSCHED_DRM_H_

#include "drm.h"

#if defined(__cplusplus)
extern "C" {
#endif

/** The uAPI version a driver reports; bump minor for additions. */
enum drm_vgsched_uapi_version {
	DRM_VGSCHED_UAPI_MAJOR = 1,
	DRM_VGSCHED_UAPI_MINOR = 0,
};

/** Driver-private ioctl numbers, offset from DRM_COMMAND_BASE. */
enum drm_vgsched_ioctl_id {
	/** @DRM_VGSCHED_DEV_QUERY: query device information. */
	DRM_VGSCHED_DEV_QUERY = 0,
};

/** Kinds of information DRM_IOCTL_VGSCHED_DEV_QUERY returns. */
enum drm_vgsched_dev_query_type {
	/** @DRM_VGSCHED_DEV_QUERY_GPU_INFO: a struct drm_vgsched_gpu_info. */
	DRM_VGSCHED_DEV_QUERY_GPU_INFO = 0,
};

/**
 * struct drm_vgsched_gpu_info - version and shape of the virtual GPU.
 *
 * The topology comes from the module parameters of the same names.
 */
struct drm_vgsched_gpu_info {
	/** @uapi_major: DRM_VGSCHED_UAPI_MAJOR of the driver. */
	__u32 uapi_major;
	/** @uapi_minor: DRM_VGSCHED_UAPI_MINOR of the driver. */
	__u32 uapi_minor;
	/** @modules: execution modules on the device. */
	__u32 modules;
	/** @units_per_module: execution units in each module. */
	__u32 units_per_module;
	/** @hw_slots: hardware context slots (contexts resident at once). */
	__u32 hw_slots;
	/** @time_slice_us: base time slice t0, in microseconds. */
	__u32 time_slice_us;
	/** @vgpr_blocks: vector register blocks per unit. */
	__u32 vgpr_blocks;
	/** @sgpr_blocks: scalar register blocks per unit. */
	__u32 sgpr_blocks;
	/** @wave_slots: wave slots per unit. */
	__u32 wave_slots;
	/** @shared_mem_blocks: shared-memory blocks per module. */
	__u32 shared_mem_blocks;
};

/**
 * struct drm_vgsched_dev_query - argument of DRM_IOCTL_VGSCHED_DEV_QUERY.
 *
 * With @pointer zero, the driver only writes the size of the answer to
 * @size. Otherwise @size must be at least that size (-EINVAL if not), and
 * the answer is copied to @pointer and its size written back to @size.
 */
struct drm_vgsched_dev_query {
	/** @type: one of enum drm_vgsched_dev_query_type. */
	__u32 type;
	/** @size: in: bytes available at @pointer; out: bytes of the answer. */
	__u32 size;
	/** @pointer: user pointer to the answer buffer, or 0. */
	__u64 pointer;
	/** @flags: must be zero. */
	__u32 flags;
	/** @pad: must be zero. */
	__u32 pad;
};

#define DRM_IOCTL_VGSCHED_DEV_QUERY \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VGSCHED_DEV_QUERY, struct drm_vgsched_dev_query)

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_VGSCHED_DRM_H_ */
