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
	DRM_VGSCHED_UAPI_MINOR = 11,
};

/** Driver-private ioctl numbers, offset from DRM_COMMAND_BASE. */
enum drm_vgsched_ioctl_id {
	/** @DRM_VGSCHED_DEV_QUERY: query device information. */
	DRM_VGSCHED_DEV_QUERY = 0,
	/** @DRM_VGSCHED_BO_CREATE: create a buffer object. */
	DRM_VGSCHED_BO_CREATE = 1,
	/** @DRM_VGSCHED_BO_MMAP_OFFSET: get the fake offset to mmap a buffer object. */
	DRM_VGSCHED_BO_MMAP_OFFSET = 2,
	/** @DRM_VGSCHED_CTX_CREATE: create a context, the unit the scheduler picks. */
	DRM_VGSCHED_CTX_CREATE = 3,
	/** @DRM_VGSCHED_CTX_DESTROY: destroy a context. */
	DRM_VGSCHED_CTX_DESTROY = 4,
	/** @DRM_VGSCHED_CTX_QUERY: read a context's state and accounting. */
	DRM_VGSCHED_CTX_QUERY = 5,
	/** @DRM_VGSCHED_SUBMIT: queue a job on a context. */
	DRM_VGSCHED_SUBMIT = 6,
	/** @DRM_VGSCHED_WAIT: wait for a job of a context to finish. */
	DRM_VGSCHED_WAIT = 7,
	/** @DRM_VGSCHED_BO_CPU_PREP: prepare a buffer object for CPU access (uAPI 1.4). */
	DRM_VGSCHED_BO_CPU_PREP = 8,
	/** @DRM_VGSCHED_AUTHORIZE: present an access code (uAPI 1.7). */
	DRM_VGSCHED_AUTHORIZE = 9,
	/** @DRM_VGSCHED_SHARED_PUBLISH: name a buffer object in shared storage (uAPI 1.8). */
	DRM_VGSCHED_SHARED_PUBLISH = 10,
	/** @DRM_VGSCHED_SHARED_OPEN: open a shared buffer object by name (uAPI 1.8). */
	DRM_VGSCHED_SHARED_OPEN = 11,
	/** @DRM_VGSCHED_SHARED_UNPUBLISH: remove a name from shared storage (uAPI 1.8). */
	DRM_VGSCHED_SHARED_UNPUBLISH = 12,
	/** @DRM_VGSCHED_START: start the caller's project environment (uAPI 1.9). */
	DRM_VGSCHED_START = 13,
};

/** Limits user space may rely on. */
enum drm_vgsched_limits {
	/** @DRM_VGSCHED_MAX_BO_SIZE: largest buffer object, in bytes (256 MiB). */
	DRM_VGSCHED_MAX_BO_SIZE = 256 << 20,
	/** @DRM_VGSCHED_MAX_CONTEXTS_PER_FILE: contexts one open file may hold. */
	DRM_VGSCHED_MAX_CONTEXTS_PER_FILE = 64,
	/** @DRM_VGSCHED_PRIORITY_LEVELS: priorities are 0 (highest) to 15. */
	DRM_VGSCHED_PRIORITY_LEVELS = 16,
	/**
	 * @DRM_VGSCHED_PRIORITY_NORMAL_FIRST: the highest priority anyone may
	 * ask for; 0 to 7 need CAP_SYS_NICE.
	 */
	DRM_VGSCHED_PRIORITY_NORMAL_FIRST = 8,
	/**
	 * @DRM_VGSCHED_MAX_JOBS_IN_FLIGHT: unfinished jobs one context may
	 * have; one more gets -EBUSY.
	 */
	DRM_VGSCHED_MAX_JOBS_IN_FLIGHT = 64,
};

/** Kinds of information DRM_IOCTL_VGSCHED_DEV_QUERY returns. */
enum drm_vgsched_dev_query_type {
	/** @DRM_VGSCHED_DEV_QUERY_GPU_INFO: a struct drm_vgsched_gpu_info. */
	DRM_VGSCHED_DEV_QUERY_GPU_INFO = 0,
	/** @DRM_VGSCHED_DEV_QUERY_TILES: a struct drm_vgsched_tiles_info (uAPI 1.5). */
	DRM_VGSCHED_DEV_QUERY_TILES = 1,
	/** @DRM_VGSCHED_DEV_QUERY_POWER: a struct drm_vgsched_power_info (uAPI 1.6). */
	DRM_VGSCHED_DEV_QUERY_POWER = 2,
};

/** Limits of struct drm_vgsched_tiles_info. */
enum drm_vgsched_tile_limits {
	/** @DRM_VGSCHED_MAX_TILES: most tiles a device has. */
	DRM_VGSCHED_MAX_TILES = 32,
	/** @DRM_VGSCHED_MAX_TILE_TYPES: most tile types. */
	DRM_VGSCHED_MAX_TILE_TYPES = 8,
	/** @DRM_VGSCHED_MAX_NODES: most nodes. */
	DRM_VGSCHED_MAX_NODES = 16,
};

/**
 * struct drm_vgsched_tiles_info - the tiles of the virtual GPU (uAPI 1.5).
 *
 * The device's execution modules are shared evenly among @nodes x
 * @tiles_per_node tiles, tile t owning modules t x @modules_per_tile up to
 * the next tile's; tile t belongs to node t / @tiles_per_node. Powers in
 * milliwatts. From the module parameters of the same names; the default is
 * one node of one tile. A node whose tiles all sleep draws no standby.
 */
struct drm_vgsched_tiles_info {
	/** @nodes: groups of tiles that share a standby power. */
	__u32 nodes;
	/** @tiles_per_node: tiles in each node. */
	__u32 tiles_per_node;
	/** @types: tile types (entries of @type_power_mw in use). */
	__u32 types;
	/** @modules_per_tile: execution modules each tile owns. */
	__u32 modules_per_tile;
	/** @type_power_mw: each type's first power value (a busy tile's power). */
	__u32 type_power_mw[DRM_VGSCHED_MAX_TILE_TYPES];
	/** @node_standby_mw: each node's standby power. */
	__u32 node_standby_mw[DRM_VGSCHED_MAX_NODES];
	/** @tile_type: each tile's type. */
	__u8 tile_type[DRM_VGSCHED_MAX_TILES];
};

/**
 * struct drm_vgsched_power_info - the tiles' power model (uAPI 1.6).
 *
 * Powers in milliwatts, from the module parameters tile_idle_mw,
 * tile_sleep_mw, tile_idle_delay_us and tile_wake_us. A busy tile draws
 * its type's power (struct drm_vgsched_tiles_info); energy and power are
 * read through hwmon.
 */
struct drm_vgsched_power_info {
	/** @idle_mw: an idle tile's power. */
	__u32 idle_mw;
	/** @sleep_mw: a tile's power in the low-power state. */
	__u32 sleep_mw;
	/** @idle_delay_us: idle time before a tile goes to the low-power state. */
	__u32 idle_delay_us;
	/** @wake_us: modeled time to wake a sleeping tile before a job starts on it. */
	__u32 wake_us;
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
	/** @clock_khz: modeled clock rate; one cycle lasts 10^6 / clock_khz ns. */
	__u32 clock_khz;
	/** @job_timeout_ms: a wave running longer than this hangs its job. */
	__u32 job_timeout_ms;
	/**
	 * @cycle_costs: cycles one instruction of each class costs, indexed by
	 * enum drm_vgsched_isa_class.
	 */
	__u32 cycle_costs[8];
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

/*
 * Flag of BO_CREATE and CTX_CREATE (uAPI 1.7): when the device's pool of
 * what a project member creates is held by other members, wait until it
 * is given back (interruptibly) instead of failing with -ENOSPC.
 */
#define DRM_VGSCHED_CREATE_WAIT (1u << 0)

/**
 * struct drm_vgsched_bo_create - argument of DRM_IOCTL_VGSCHED_BO_CREATE.
 *
 * Creates a shmem-backed, zero-filled buffer object of at least @size
 * bytes (rounded up to whole pages). Close it with DRM_IOCTL_GEM_CLOSE.
 */
struct drm_vgsched_bo_create {
	/** @size: in: bytes, 1 to DRM_VGSCHED_MAX_BO_SIZE. */
	__u64 size;
	/** @flags: DRM_VGSCHED_CREATE_WAIT or zero. */
	__u32 flags;
	/** @handle: out: the new object's handle in this file. */
	__u32 handle;
};

/** struct drm_vgsched_bo_mmap_offset - argument of DRM_IOCTL_VGSCHED_BO_MMAP_OFFSET. */
struct drm_vgsched_bo_mmap_offset {
	/** @handle: in: the buffer object. */
	__u32 handle;
	/** @pad: must be zero. */
	__u32 pad;
	/** @offset: out: pass to mmap(2) on this file to map the object. */
	__u64 offset;
};

/** struct drm_vgsched_ctx_create - argument of DRM_IOCTL_VGSCHED_CTX_CREATE. */
struct drm_vgsched_ctx_create {
	/**
	 * @priority: in: 0 (highest) to 15; below
	 * DRM_VGSCHED_PRIORITY_NORMAL_FIRST needs CAP_SYS_NICE (-EPERM).
	 */
	__u32 priority;
	/** @flags: DRM_VGSCHED_CREATE_WAIT or zero. */
	__u32 flags;
	/** @ctx_id: out: the context's id in this file, never 0. */
	__u32 ctx_id;
	/** @pad: must be zero. */
	__u32 pad;
};

/** struct drm_vgsched_ctx_destroy - argument of DRM_IOCTL_VGSCHED_CTX_DESTROY. */
struct drm_vgsched_ctx_destroy {
	/** @ctx_id: the context. */
	__u32 ctx_id;
	/** @pad: must be zero. */
	__u32 pad;
};

/*
 * The instruction set (Documentation/isa.rst). A program is an array of
 * little-endian 64-bit words, one instruction each:
 *   bits  0..8  opcode      bits 16..24 ra (source / index register)
 *   bits  8..16 rd          bits 24..32 rb (source register / binding slot)
 *   bits 32..64 imm (signed)
 * Fields an opcode does not use must be zero.
 */
#define DRM_VGSCHED_ISA_INSTR_BYTES	8
#define DRM_VGSCHED_ISA_NUM_REGS	16
#define DRM_VGSCHED_ISA_MAX_INSTRS	4096
#define DRM_VGSCHED_ISA_MAX_BINDINGS	8

/** Opcodes of the virtual GPU. */
enum drm_vgsched_op {
	DRM_VGSCHED_OP_END = 0x00,	/* the thread is done */
	DRM_VGSCHED_OP_MOV = 0x01,	/* rd = ra */
	DRM_VGSCHED_OP_MOVI = 0x02,	/* rd = imm */
	DRM_VGSCHED_OP_SREG = 0x03,	/* rd = special register imm */
	DRM_VGSCHED_OP_LD = 0x10,	/* rd = binding rb, word (ra + imm) */
	DRM_VGSCHED_OP_ST = 0x11,	/* binding rb, word (ra + imm) = rd */
	DRM_VGSCHED_OP_ADD = 0x20,	/* rd = ra + rb, wrapping */
	DRM_VGSCHED_OP_SUB = 0x21,
	DRM_VGSCHED_OP_MUL = 0x22,
	DRM_VGSCHED_OP_AND = 0x23,
	DRM_VGSCHED_OP_OR = 0x24,
	DRM_VGSCHED_OP_XOR = 0x25,
	DRM_VGSCHED_OP_SHL = 0x26,	/* rd = ra << (rb % 32) */
	DRM_VGSCHED_OP_SHR = 0x27,	/* rd = ra >> (rb % 32), logical */
	DRM_VGSCHED_OP_ADDI = 0x28,	/* rd = ra + imm, wrapping */
	DRM_VGSCHED_OP_FADD = 0x30,	/* binary32, round to nearest even */
	DRM_VGSCHED_OP_FSUB = 0x31,
	DRM_VGSCHED_OP_FMUL = 0x32,
	DRM_VGSCHED_OP_ITOF = 0x33,	/* rd = (float)(int)ra */
	DRM_VGSCHED_OP_FTOI = 0x34,	/* rd = (int)ra, toward zero, saturating */
	DRM_VGSCHED_OP_MAD = 0x40,	/* rd += ra * rb, integer */
	DRM_VGSCHED_OP_FMA = 0x41,	/* rd += ra * rb, float (two roundings) */
	DRM_VGSCHED_OP_SLT = 0x50,	/* rd = ra < rb, signed */
	DRM_VGSCHED_OP_SLTU = 0x51,	/* rd = ra < rb, unsigned */
	DRM_VGSCHED_OP_SEQ = 0x52,	/* rd = ra == rb */
	DRM_VGSCHED_OP_FLT = 0x53,	/* rd = ra < rb, float, false on NaN */
	DRM_VGSCHED_OP_BR = 0x60,	/* pc = imm */
	DRM_VGSCHED_OP_BRZ = 0x61,	/* if ra == 0: pc = imm */
	DRM_VGSCHED_OP_BRNZ = 0x62,	/* if ra != 0: pc = imm */
};

/** Special registers DRM_VGSCHED_OP_SREG reads. */
enum drm_vgsched_sreg {
	DRM_VGSCHED_SREG_GLOBAL_ID = 0,		/* thread index in the grid */
	DRM_VGSCHED_SREG_LOCAL_ID = 1,		/* thread index in its work-group */
	DRM_VGSCHED_SREG_GROUP_ID = 2,		/* work-group index */
	DRM_VGSCHED_SREG_GROUP_THREADS = 3,	/* threads per work-group */
	DRM_VGSCHED_SREG_NUM_GROUPS = 4,	/* work-groups in the grid */
	DRM_VGSCHED_SREG_WAVE_ID = 5,		/* wave index in its work-group */
	DRM_VGSCHED_SREG_LANE = 6,		/* thread index in its wave */
};

/**
 * Instruction classes, as counted per execution module (for the module
 * choice by recent power).
 */
enum drm_vgsched_isa_class {
	DRM_VGSCHED_CLASS_MOVE = 0,	/* MOV, MOVI, SREG */
	DRM_VGSCHED_CLASS_ALU = 1,	/* integer and float arithmetic, logic */
	DRM_VGSCHED_CLASS_LOAD = 2,	/* LD */
	DRM_VGSCHED_CLASS_STORE = 3,	/* ST */
	DRM_VGSCHED_CLASS_MATRIX = 4,	/* MAD, FMA */
	DRM_VGSCHED_CLASS_COMPARE = 5,	/* SLT, SLTU, SEQ, FLT */
	DRM_VGSCHED_CLASS_JUMP = 6,	/* BR, BRZ, BRNZ, END */
	DRM_VGSCHED_NUM_CLASSES = 7,
};

/** States a context reports. */
enum drm_vgsched_ctx_state {
	/** @DRM_VGSCHED_CTX_STATE_IDLE: no work queued. */
	DRM_VGSCHED_CTX_STATE_IDLE = 0,
	/** @DRM_VGSCHED_CTX_STATE_ACTIVE: work queued or running. */
	DRM_VGSCHED_CTX_STATE_ACTIVE = 1,
	/** @DRM_VGSCHED_CTX_STATE_GUILTY: a job hung; new work is refused. */
	DRM_VGSCHED_CTX_STATE_GUILTY = 2,
};

/** struct drm_vgsched_ctx_query - argument of DRM_IOCTL_VGSCHED_CTX_QUERY. */
struct drm_vgsched_ctx_query {
	/** @ctx_id: in: the context. */
	__u32 ctx_id;
	/** @pad: must be zero. */
	__u32 pad;
	/** @created_ns: out: creation time, CLOCK_MONOTONIC nanoseconds. */
	__u64 created_ns;
	/** @runtime_ns: out: time the context's work ran on the GPU. */
	__u64 runtime_ns;
	/** @priority: out: the context's priority. */
	__u32 priority;
	/** @state: out: enum drm_vgsched_ctx_state. */
	__u32 state;
	/** @jobs_submitted: out: jobs accepted so far. */
	__u64 jobs_submitted;
	/** @jobs_completed: out: jobs finished so far (with or without error). */
	__u64 jobs_completed;
	/**
	 * @client_id: out: number of the open file that owns the context, as
	 * debugfs shows it: the DRM core's client id, drm-client-id in the
	 * file's fdinfo (uAPI 1.1).
	 */
	__u64 client_id;
	/*
	 * The context scheduler's view (uAPI 1.2). A caller built
	 * against 1.1 passes the shorter struct and simply does not see these.
	 */
	/** @lifetime_ns: out: time since creation, at the query. */
	__u64 lifetime_ns;
	/**
	 * @weight_milli: out: lifetime / runtime x 1000 as slot selection ranks
	 * the context (under the module's weight_history rule, which may count
	 * only runnable time); ~0 (all bits set) while the weight is infinite.
	 */
	__u64 weight_milli;
	/** @slices: out: time slices received (loads and renewals, or turns). */
	__u64 slices;
	/** @preemptions: out: times it lost its slot with work left. */
	__u64 preemptions;
	/** @switch_ns: out: modeled time spent saving and restoring its state. */
	__u64 switch_ns;
	/** @slot: out: hardware slot it holds, or -1 if none. */
	__s32 slot;
	/** @pad2: zero. */
	__u32 pad2;
	/*
	 * The stages of pipelined context switching (uAPI 1.4), in
	 * CLOCK_MONOTONIC nanoseconds, 0 if not reached; an end may lie ahead
	 * of the query (modeled time). Documentation/gpu/vgsched/uapi.rst.
	 */
	/** @phase1_start_ns: out: its last environment initialisation began. */
	__u64 phase1_start_ns;
	/** @phase1_end_ns: out: ... and ended. */
	__u64 phase1_end_ns;
	/** @last_job_seqno: out: the last job that finished, whose stages follow. */
	__u64 last_job_seqno;
	/** @phase2_start_ns: out: its device memory allocation and upload began. */
	__u64 phase2_start_ns;
	/** @phase2_end_ns: out: ... and its last upload ended. */
	__u64 phase2_end_ns;
	/** @first_wave_ns: out: its first work-group was placed. */
	__u64 first_wave_ns;
	/** @last_wave_ns: out: its last wave was retired. */
	__u64 last_wave_ns;
	/** @cleanup_start_ns: out: its write-back and release began. */
	__u64 cleanup_start_ns;
	/** @cleanup_end_ns: out: ... and ended (its fence signalled then). */
	__u64 cleanup_end_ns;
};

/* Flags of struct drm_vgsched_submit. */
/**
 * Work-groups of the job do not depend on each other, so the dispatcher
 * may split blocked ones into waves.
 */
#define DRM_VGSCHED_SUBMIT_INDEPENDENT	(1u << 0)
/** Wait for the sync_file in @in_fence_fd before the job starts. */
#define DRM_VGSCHED_SUBMIT_IN_FENCE	(1u << 1)
/** Return a sync_file of the job's completion in @out_fence_fd. */
#define DRM_VGSCHED_SUBMIT_OUT_FENCE	(1u << 2)
/** Work-group priority levels (bands) of the dispatcher's rotation windows. */
#define DRM_VGSCHED_GROUP_PRIORITIES	4
#define DRM_VGSCHED_SUBMIT_FLAGS \
	(DRM_VGSCHED_SUBMIT_INDEPENDENT | DRM_VGSCHED_SUBMIT_IN_FENCE | \
	 DRM_VGSCHED_SUBMIT_OUT_FENCE)

/*
 * Access modes of a binding, in @binding_access of struct
 * drm_vgsched_submit (uAPI 1.3). 0, what callers built against 1.2 pass,
 * means READ | WRITE; WRITE alone is not a mode (-EINVAL).
 */
/** The job loads from the binding. */
#define DRM_VGSCHED_BINDING_READ	(1u << 0)
/** The job stores to the binding. */
#define DRM_VGSCHED_BINDING_WRITE	(1u << 1)
#define DRM_VGSCHED_BINDING_FLAGS \
	(DRM_VGSCHED_BINDING_READ | DRM_VGSCHED_BINDING_WRITE)

/**
 * struct drm_vgsched_submit - argument of DRM_IOCTL_VGSCHED_SUBMIT.
 *
 * Queues one job on a context: the program in @program_handle runs once
 * per thread over a grid of @groups work-groups, each of @waves_per_group
 * waves of @threads_per_wave threads. The program is copied and validated
 * here (-EINVAL if malformed); the bound buffer objects are referenced
 * until the job finishes. Jobs of one context run in submission order.
 */
struct drm_vgsched_submit {
	/** @ctx_id: the context. */
	__u32 ctx_id;
	/** @flags: DRM_VGSCHED_SUBMIT_* bits. */
	__u32 flags;
	/** @program_handle: buffer object holding the program from offset 0. */
	__u32 program_handle;
	/** @program_instrs: instructions in the program (1 to DRM_VGSCHED_ISA_MAX_INSTRS). */
	__u32 program_instrs;
	/** @bindings: user pointer to @binding_count __u32 buffer object handles. */
	__u64 bindings;
	/** @binding_count: 0 to DRM_VGSCHED_ISA_MAX_BINDINGS. */
	__u32 binding_count;
	/** @groups: work-groups in the grid, at least 1. */
	__u32 groups;
	/** @waves_per_group: 1 to 64. */
	__u32 waves_per_group;
	/** @threads_per_wave: 1 to 64. */
	__u32 threads_per_wave;
	/** @vgpr_blocks: vector register blocks each wave needs on its unit. */
	__u32 vgpr_blocks;
	/** @sgpr_blocks: scalar register blocks each wave needs on its unit. */
	__u32 sgpr_blocks;
	/** @shared_mem_blocks: shared-memory blocks each work-group needs. */
	__u32 shared_mem_blocks;
	/** @in_fence_fd: sync_file to wait for, with DRM_VGSCHED_SUBMIT_IN_FENCE. */
	__s32 in_fence_fd;
	/** @out_fence_fd: out: sync_file fd, with DRM_VGSCHED_SUBMIT_OUT_FENCE. */
	__s32 out_fence_fd;
	/**
	 * @group_priority: priority of the job's work-groups in the
	 * dispatcher, 0 (first) to DRM_VGSCHED_GROUP_PRIORITIES - 1; the
	 * dispatcher's rotating windows still serve every level (uAPI 1.1;
	 * was padding, so 0 is the old behaviour).
	 */
	__u32 group_priority;
	/** @seqno: out: the job's sequence number in its context, from 1. */
	__u64 seqno;
	/**
	 * @binding_access: DRM_VGSCHED_BINDING_* of each binding slot below
	 * @binding_count (0: read-write), 0 for the others; a store to a slot
	 * without DRM_VGSCHED_BINDING_WRITE is refused (-EACCES). The job
	 * waits for the fences in each bound object's reservation object
	 * (the writers' for a read-only slot, all for a written one) and
	 * adds its own fence there, as a writer or a reader (uAPI 1.3).
	 */
	__u32 binding_access[DRM_VGSCHED_ISA_MAX_BINDINGS];
	/**
	 * @scratch_bytes: device memory the job needs beside its bound
	 * objects (its scratch area, which no program addresses), taken in
	 * its phase 2 (its zeroing modeled as a copy of its size) and
	 * released at its clean-up; 0 for none (uAPI 1.4). Its objects and
	 * scratch together larger than device memory minus a context's state
	 * area: -E2BIG.
	 */
	__u64 scratch_bytes;
	/**
	 * @tiles: tiles the job needs, all on one node, 0 meaning 1 (uAPI
	 * 1.6). When its first work-group is about to be placed the
	 * placement policy chooses them (placement_policy), and the job holds
	 * them alone until it ends (or, preempted, until it is off the device;
	 * they are chosen again when it comes back): its work-groups run only
	 * on their modules. A job waits while no node has @tiles idle tiles; more
	 * than a node has: -E2BIG. A device of one tile shares it among all
	 * jobs, as before uAPI 1.6.
	 */
	__u32 tiles;
	/** @pad: 0. */
	__u32 pad;
};

/* Flags of struct drm_vgsched_wait. */
/**
 * @timeout_ns is an absolute CLOCK_MONOTONIC time, so a wait restarted
 * after a signal still ends by it (uAPI 1.3).
 */
#define DRM_VGSCHED_WAIT_ABSOLUTE	(1u << 0)
#define DRM_VGSCHED_WAIT_FLAGS		DRM_VGSCHED_WAIT_ABSOLUTE

/**
 * struct drm_vgsched_wait - argument of DRM_IOCTL_VGSCHED_WAIT.
 *
 * Waits until job @seqno of context @ctx_id has finished, or @timeout_ns
 * passed (-ETIMEDOUT; 0 only polls). Jobs finish in order within a context.
 * A relative timeout starts again when the call is restarted after a
 * signal; an absolute one (DRM_VGSCHED_WAIT_ABSOLUTE) does not.
 */
struct drm_vgsched_wait {
	/** @ctx_id: the context. */
	__u32 ctx_id;
	/** @flags: DRM_VGSCHED_WAIT_* bits. */
	__u32 flags;
	/** @seqno: a sequence number SUBMIT returned on this context. */
	__u64 seqno;
	/**
	 * @timeout_ns: relative timeout in nanoseconds, or with
	 * DRM_VGSCHED_WAIT_ABSOLUTE the CLOCK_MONOTONIC deadline.
	 */
	__u64 timeout_ns;
	/**
	 * @status: out: how the job ended: 0 success, -EFAULT an access out
	 * of its buffers, -ETIME it ran past the job timeout, -ECANCELED it
	 * never ran (context destroyed or guilty, or its in-fence failed),
	 * -ENODATA its context has accepted DRM_VGSCHED_MAX_JOBS_IN_FLIGHT
	 * or more jobs since, so its result is no longer kept.
	 */
	__s32 status;
	/** @pad: must be zero. */
	__u32 pad;
};

/* Flags of struct drm_vgsched_bo_cpu_prep. */
/** The CPU will read the object: wait for the jobs that write it. */
#define DRM_VGSCHED_CPU_PREP_READ	(1u << 0)
/**
 * The CPU will write the object: wait for every job using it, and drop its
 * device copy, so the next job uploads what the CPU wrote.
 */
#define DRM_VGSCHED_CPU_PREP_WRITE	(1u << 1)
/**
 * @timeout_ns is an absolute CLOCK_MONOTONIC deadline, so a call restarted
 * after a signal still ends by it (as DRM_VGSCHED_WAIT_ABSOLUTE).
 */
#define DRM_VGSCHED_CPU_PREP_ABSOLUTE	(1u << 2)
#define DRM_VGSCHED_CPU_PREP_FLAGS \
	(DRM_VGSCHED_CPU_PREP_READ | DRM_VGSCHED_CPU_PREP_WRITE | DRM_VGSCHED_CPU_PREP_ABSOLUTE)

/**
 * struct drm_vgsched_bo_cpu_prep - argument of DRM_IOCTL_VGSCHED_BO_CPU_PREP.
 *
 * Jobs run on device copies of the objects they bind. A job's results are
 * in system memory, where mmap() sees them, once its fence has signalled
 * (the objects it may write are written back first). A copy stays in
 * device memory after its jobs for the next job that binds the object, so
 * the CPU announces a write through mmap() with DRM_VGSCHED_CPU_PREP_WRITE
 * before it makes it (not needed before an object's first job). Waits
 * until the jobs in question are done or @timeout_ns passed: -EBUSY when
 * only checking (a relative 0), -ETIMEDOUT otherwise. A relative timeout
 * starts again when the call is restarted after a signal; an absolute one
 * (DRM_VGSCHED_CPU_PREP_ABSOLUTE) does not.
 */
struct drm_vgsched_bo_cpu_prep {
	/** @handle: the buffer object. */
	__u32 handle;
	/** @flags: DRM_VGSCHED_CPU_PREP_* bits, READ or WRITE or both. */
	__u32 flags;
	/**
	 * @timeout_ns: relative timeout in nanoseconds (0 only checks), or
	 * with DRM_VGSCHED_CPU_PREP_ABSOLUTE the CLOCK_MONOTONIC deadline.
	 */
	__u64 timeout_ns;
};

/** Bytes of an access code. */
#define DRM_VGSCHED_CODE_BYTES 16

/**
 * struct drm_vgsched_authorize - argument of DRM_IOCTL_VGSCHED_AUTHORIZE.
 *
 * A provider is the whole device (0) or one tile (1 + its index, uAPI
 * 1.8). While the device has an access code (generated by the
 * administrator in configfs), SUBMIT on a file that has
 * presented none fails with -EACCES; root's files need none. A tile with
 * a code of its own takes a file's jobs only after the file presented
 * that code or the device's; a job that cannot fit on the tiles its file
 * may use is -EACCES at SUBMIT, and is placed only on those tiles. A file
 * presents a code once; it stays authorized until the code is revoked or
 * replaced (jobs already queued still run). A wrong code, or none for the
 * provider, is -EACCES; after DRM_VGSCHED_AUTH_BURST failed attempts the
 * user (the opener's uid, through any of its files) waits a second per
 * further attempt (-EAGAIN before that, the code unchecked).
 */
struct drm_vgsched_authorize {
	/** @code: the 128-bit code, as configfs showed it (hex, 32 digits). */
	__u8 code[DRM_VGSCHED_CODE_BYTES];
	/** @provider: 0, the whole device; 1 + n, tile n (uAPI 1.8). */
	__u32 provider;
	/** @flags: must be zero. */
	__u32 flags;
};

/** Failed authorization attempts a user may make at once. */
#define DRM_VGSCHED_AUTH_BURST 3

/** Wait for the pool to hold the whole target instead of -ENOSPC. */
#define DRM_VGSCHED_START_WAIT (1u << 0)

/**
 * struct drm_vgsched_start - argument of DRM_IOCTL_VGSCHED_START (uAPI 1.9).
 *
 * Starts the environment of the project member the file belongs to (the
 * uid that opened it): its target, the member's request (configfs), is
 * reserved from the device's pool in one step, or not at all. Its tiles
 * (at most the device's) are named ones (uAPI 1.11): enrolled for the
 * member, usable by the file where they suffice (otherwise only the
 * usable ones are kept from others),
 * reserved by no other environment, one node holding the environment's
 * largest job. They are the environment's own: its jobs run there when
 * they fit, and another user's job that fits only with them is -ENOSPC
 * at DRM_IOCTL_VGSCHED_SUBMIT.
 * Afterwards nothing the member's files create within what was reserved
 * fails for want of pool (-ENOSPC); the environment stays started while
 * a file that started it is open. When the pool cannot hold the whole
 * target now, -ENOSPC, or with DRM_VGSCHED_START_WAIT the call sleeps
 * (interruptibly) until it can; a target the pool could never hold is
 * -ENOSPC at once. A uid in no project is -ENOENT; root has nothing to
 * start (0). A file starts once (-EALREADY after, while the member it
 * started exists). A member none of whose files started is charged
 * allocation by allocation, as before uAPI 1.9. Nothing is written back.
 */
struct drm_vgsched_start {
	/** @flags: DRM_VGSCHED_START_WAIT or 0. */
	__u32 flags;
	/** @pad: must be zero. */
	__u32 pad;
};

/** Kinds of folder of a project's shared storage (uAPI 1.8). */
enum drm_vgsched_folder_kind {
	/**
	 * @DRM_VGSCHED_FOLDER_PROJECT: a project folder (models, data sets):
	 * read-write for the project's members.
	 */
	DRM_VGSCHED_FOLDER_PROJECT = 0,
	/**
	 * @DRM_VGSCHED_FOLDER_MEMBER: the folder of one member: read-write for
	 * it, read-only for the other members.
	 */
	DRM_VGSCHED_FOLDER_MEMBER = 1,
	/**
	 * @DRM_VGSCHED_FOLDER_PUBLIC: a public folder: read-only for everyone;
	 * the project's owners publish and unpublish there.
	 */
	DRM_VGSCHED_FOLDER_PUBLIC = 2,
};

/**
 * Bytes of a name in shared storage, its terminating NUL included: 1 to 31
 * characters of [A-Za-z0-9._-], not starting with a dot.
 */
#define DRM_VGSCHED_NAME_BYTES 32

/**
 * struct drm_vgsched_shared_path - where a shared buffer object is named.
 *
 * A project's non-members never learn what its project and member folders
 * hold: every operation there is -ENOENT for them, as for a missing name.
 * Public folders are visible to everyone.
 */
struct drm_vgsched_shared_path {
	/** @project: the project's configfs directory name. */
	char project[DRM_VGSCHED_NAME_BYTES];
	/**
	 * @folder: the folder's name for DRM_VGSCHED_FOLDER_PROJECT and
	 * DRM_VGSCHED_FOLDER_PUBLIC; empty (all zero) for a member folder.
	 */
	char folder[DRM_VGSCHED_NAME_BYTES];
	/** @name: the object's name in the folder. */
	char name[DRM_VGSCHED_NAME_BYTES];
	/** @kind: enum drm_vgsched_folder_kind. */
	__u32 kind;
	/**
	 * @member_uid: for DRM_VGSCHED_FOLDER_MEMBER, the uid of the member
	 * whose folder it is; 0 otherwise.
	 */
	__u32 member_uid;
};

/**
 * struct drm_vgsched_shared_publish - argument of
 * DRM_IOCTL_VGSCHED_SHARED_PUBLISH.
 *
 * Names the buffer object @handle at @path; the name keeps the object
 * alive until it is unpublished or its project is removed, and its size
 * is charged to the publishing member's shared_bytes. The caller's file
 * must hold the object read-write. Once published, an object stays a
 * shared object: other files reach it only through
 * DRM_IOCTL_VGSCHED_SHARED_OPEN (a PRIME import of it is -EACCES) and its
 * dma-buf maps read-only.
 */
struct drm_vgsched_shared_publish {
	/** @path: the folder and name. */
	struct drm_vgsched_shared_path path;
	/** @handle: the object. */
	__u32 handle;
	/** @flags: must be zero. */
	__u32 flags;
};

/** Flags of struct drm_vgsched_shared_open. */
/** DRM_VGSCHED_SHARED_OPEN_WRITE: open read-write (default read-only). */
#define DRM_VGSCHED_SHARED_OPEN_WRITE	(1u << 0)
#define DRM_VGSCHED_SHARED_OPEN_FLAGS	DRM_VGSCHED_SHARED_OPEN_WRITE

/**
 * struct drm_vgsched_shared_open - argument of DRM_IOCTL_VGSCHED_SHARED_OPEN.
 *
 * Returns a new handle to the object named at @path, with the access the
 * folder's rules give the caller for the mode asked. A file's access to an
 * object is the best of its handles': through a file that holds it only
 * read-only, mmap() with PROT_WRITE is -EACCES (and mprotect() cannot add
 * it later) and a SUBMIT binding it writable is -EACCES.
 */
struct drm_vgsched_shared_open {
	/** @path: the folder and name. */
	struct drm_vgsched_shared_path path;
	/** @flags: DRM_VGSCHED_SHARED_OPEN_*. */
	__u32 flags;
	/** @handle: out, the new handle; close it with DRM_IOCTL_GEM_CLOSE. */
	__u32 handle;
	/** @writable: out, 1 if the file may now write the object, else 0. */
	__u32 writable;
	/** @pad: must be zero. */
	__u32 pad;
	/** @size: out, the object's size in bytes. */
	__u64 size;
};

/**
 * struct drm_vgsched_shared_unpublish - argument of
 * DRM_IOCTL_VGSCHED_SHARED_UNPUBLISH.
 *
 * Removes the name at @path; handles already open keep the object.
 */
struct drm_vgsched_shared_unpublish {
	/** @path: the folder and name. */
	struct drm_vgsched_shared_path path;
	/** @flags: must be zero. */
	__u32 flags;
	/** @pad: must be zero. */
	__u32 pad;
};

#define DRM_IOCTL_VGSCHED_DEV_QUERY \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VGSCHED_DEV_QUERY, struct drm_vgsched_dev_query)
#define DRM_IOCTL_VGSCHED_BO_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VGSCHED_BO_CREATE, struct drm_vgsched_bo_create)
#define DRM_IOCTL_VGSCHED_BO_MMAP_OFFSET \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VGSCHED_BO_MMAP_OFFSET, struct drm_vgsched_bo_mmap_offset)
#define DRM_IOCTL_VGSCHED_CTX_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VGSCHED_CTX_CREATE, struct drm_vgsched_ctx_create)
#define DRM_IOCTL_VGSCHED_CTX_DESTROY \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VGSCHED_CTX_DESTROY, struct drm_vgsched_ctx_destroy)
#define DRM_IOCTL_VGSCHED_CTX_QUERY \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VGSCHED_CTX_QUERY, struct drm_vgsched_ctx_query)
#define DRM_IOCTL_VGSCHED_SUBMIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VGSCHED_SUBMIT, struct drm_vgsched_submit)
#define DRM_IOCTL_VGSCHED_WAIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VGSCHED_WAIT, struct drm_vgsched_wait)
#define DRM_IOCTL_VGSCHED_BO_CPU_PREP \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VGSCHED_BO_CPU_PREP, struct drm_vgsched_bo_cpu_prep)
#define DRM_IOCTL_VGSCHED_AUTHORIZE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VGSCHED_AUTHORIZE, struct drm_vgsched_authorize)
#define DRM_IOCTL_VGSCHED_SHARED_PUBLISH \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VGSCHED_SHARED_PUBLISH, struct drm_vgsched_shared_publish)
#define DRM_IOCTL_VGSCHED_SHARED_OPEN \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VGSCHED_SHARED_OPEN, struct drm_vgsched_shared_open)
#define DRM_IOCTL_VGSCHED_SHARED_UNPUBLISH \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VGSCHED_SHARED_UNPUBLISH, struct drm_vgsched_shared_unpublish)
#define DRM_IOCTL_VGSCHED_START \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VGSCHED_START, struct drm_vgsched_start)

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_VGSCHED_DRM_H_ */
