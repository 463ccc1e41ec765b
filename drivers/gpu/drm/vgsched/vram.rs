// SPDX-License-Identifier: GPL-2.0

//! The virtual GPU's device memory: a region of `vram_mib` MiB that the
//! module allocates, handed out by the kernel's GPU buddy allocator
//! (`kernel::gpu::buddy`, the allocator of nova-core and the DRM VRAM
//! managers) in chunks of [`CHUNK_BYTES`], and the residency of buffer
//! objects in it.
//!
//! A buffer object lives in system memory (shmem). A job runs on device
//! copies of the objects it binds: preparing the job makes each of them
//! resident ([`DeviceMemory::take`]: allocate, evicting idle objects least
//! recently used first, and upload), and cleaning it up writes the objects
//! it may have written back to system memory ([`DeviceMemory::write_back`])
//! before its fence signals. A copy stays resident while the object is idle,
//! so the next job that binds it finds it there, until room is needed, the
//! CPU announces a write (`BO_CPU_PREP`) or the object is freed.
//!
//! Copies take modeled time on one copy engine at `vram_bandwidth_mbps`;
//! the bytes move for real, on the calling thread. Nothing here runs on the
//! engine's fence-signalling path: it allocates, and the residency lock is
//! held across allocation and copies. The signalling path only reads and
//! writes device words through a [`Pinned`] copy the job holds.
//!
//! The sizes, the copy time and the choice of victim are the core crate's
//! ([`crate::vgsched_core::device_memory`]).

use core::pin::Pin;

use kernel::{
    bindings,
    drm::gem::{
        shmem::VMapOwned,
        BaseObject, //
    },
    ffi::c_void,
    gpu::buddy::{
        AllocatedBlocks,
        GpuBuddy,
        GpuBuddyAllocFlags,
        GpuBuddyAllocMode,
        GpuBuddyParams, //
    },
    io::IoBase,
    new_mutex,
    prelude::*,
    ptr::Alignment,
    sync::{
        atomic::{
            ordering,
            Atomic, //
        },
        new_spinlock,
        Arc,
        Mutex,
        SpinLock, //
    },
    warn_on, //
};

use crate::{
    gem::VgObject,
    vgsched_core::device_memory::{
        chunks_of,
        lru_victim,
        CopyEngine,
        ResidentView,
        CHUNK_BYTES, //
    },
};

/// Words per chunk of device memory.
const CHUNK_WORDS: usize = (CHUNK_BYTES / 4) as usize;

/// The device copy of one buffer object: the chunks the allocator gave it
/// and, per 4 KiB page of the object, the chunk that holds it (the
/// device's page table for the object).
///
/// # Invariants
///
/// - `pages.len() * CHUNK_BYTES == bytes`, and every entry of `pages` is a
///   chunk of `blocks`, each chunk named once;
/// - `pins` counts the [`Pinned`] handles alive on this copy.
pub(crate) struct DeviceCopy {
    /// Keeps the chunks allocated; freed when the copy goes.
    _blocks: Pin<KBox<AllocatedBlocks>>,
    pages: KVVec<u32>,
    bytes: u64,
    pins: Atomic<u32>,
    /// A job stored to it and was cancelled before its write-back: the
    /// copy may differ from system memory and is never taken again.
    stale: Atomic<bool>,
    /// When its upload ends in modeled time: a job that finds it resident
    /// may not start before.
    ready_ns: Atomic<u64>,
}

/// One resident object in the residency table.
struct Resident {
    /// The object ([`VgObject::id`]).
    object: u64,
    copy: Arc<DeviceCopy>,
    /// When a job last took it ([`Table::clock`]).
    last_use: u64,
    /// The object's [`VgObject::resident`]: true while this entry is in
    /// the table.
    flag: Arc<Atomic<bool>>,
}

impl Drop for Resident {
    fn drop(&mut self) {
        self.flag.store(false, ordering::Relaxed);
    }
}

/// The residency table.
struct Table {
    resident: KVec<Resident>,
    /// Counts takes, for least-recently-used order.
    clock: u64,
    evictions: u64,
}

/// The copy engine and what it moved. Under a spinlock of its own, never
/// held across an allocation: a write-back, on the way to a fence, takes
/// only this one.
struct Copies {
    engine: CopyEngine,
    uploaded_bytes: u64,
    written_back_bytes: u64,
}

/// What debugfs shows of the device memory.
pub(crate) struct MemoryStats {
    pub(crate) uploaded_bytes: u64,
    pub(crate) written_back_bytes: u64,
    pub(crate) evictions: u64,
    pub(crate) resident_objects: usize,
    pub(crate) resident_bytes: u64,
}

/// The device memory of one virtual GPU.
///
/// # Invariants
///
/// `words` covers the whole range `buddy` manages, which starts at offset
/// 0: every chunk the allocator hands out lies inside `words`.
#[pin_data]
pub(crate) struct DeviceMemory {
    buddy: GpuBuddy,
    words: KVVec<Atomic<u32>>,
    bandwidth_mbps: u32,
    next_object: Atomic<u64>,
    #[pin]
    table: Mutex<Table>,
    #[pin]
    copies: SpinLock<Copies>,
}

/// Copies an object between its kernel mapping and its device copy:
/// system to device (`upload`) or back, a chunk at a time.
///
/// No job stores to the copy meanwhile: an upload fills a copy no job holds
/// yet, and a write-back runs after the last job that may store to it
/// finished (jobs that write an object wait for every earlier job using it,
/// through its reservation). The object's pages may change under the copy
/// (user space maps them): the bytes move with the kernel's `memcpy()`, as
/// `SysMemBackend` copies system memory, not as Rust accesses.
fn copy_words(
    memory: &DeviceMemory,
    copy: &DeviceCopy,
    map: &VMapOwned<VgObject>,
    upload: bool,
) -> Result {
    let object_bytes = map.owner().size();
    let system = map.as_view().as_ptr().cast::<u8>();
    let chunk = CHUNK_BYTES as usize;
    for (page, &index) in copy.pages.iter().enumerate() {
        let device = memory.chunk(index).ok_or(EINVAL)?;
        let offset = page.checked_mul(chunk).ok_or(EINVAL)?;
        if offset
            .checked_add(chunk)
            .is_none_or(|end| end > object_bytes)
        {
            // The page table covers the object's pages and no more.
            warn_on!(true);
            return Err(EINVAL);
        }
        let device = device.as_ptr().cast::<c_void>().cast_mut();
        // SAFETY: By the type invariant of `VMap`, the object's
        // `object_bytes` are mapped at `system` while `map` lives, and
        // `offset + chunk <= object_bytes` (checked above); `device` is a
        // chunk of `words`, `CHUNK_BYTES` long. The two do not overlap
        // (one is the object's mapping, the other the module's memory),
        // and no job stores to the chunk meanwhile (see above).
        unsafe {
            let system = system.add(offset).cast::<c_void>();
            if upload {
                bindings::memcpy(device, system, chunk);
            } else {
                bindings::memcpy(system, device, chunk);
            }
        }
    }
    Ok(())
}

impl DeviceMemory {
    /// Allocates `bytes` of device memory (zeroed) and its allocator.
    pub(crate) fn new(bytes: u64, bandwidth_mbps: u32) -> Result<Arc<Self>> {
        let words_len = usize::try_from(bytes / 4)?;
        let chunk_size = usize::try_from(CHUNK_BYTES)
            .ok()
            .and_then(Alignment::new_checked)
            .ok_or(EINVAL)?;
        let mut words = KVVec::with_capacity(words_len, GFP_KERNEL)?;
        for _ in 0..words_len {
            words
                .push_within_capacity(Atomic::new(0))
                .map_err(|_| ENOMEM)?;
        }
        let buddy = GpuBuddy::new(GpuBuddyParams {
            base_offset: 0,
            size: bytes,
            chunk_size,
        })?;
        // INVARIANT: `words` holds the `bytes` the allocator manages from 0.
        Arc::pin_init(
            try_pin_init!(Self {
                buddy,
                words,
                bandwidth_mbps,
                next_object: Atomic::new(1),
                table <- new_mutex!(Table {
                    resident: KVec::new(),
                    clock: 0,
                    evictions: 0,
                }),
                copies <- new_spinlock!(Copies {
                    engine: CopyEngine::default(),
                    uploaded_bytes: 0,
                    written_back_bytes: 0,
                }),
            }),
            GFP_KERNEL,
        )
    }

    /// Bytes of device memory.
    pub(crate) fn size(&self) -> u64 {
        self.buddy.size()
    }

    /// Bytes not allocated. Takes the allocator's lock: not on the
    /// fence-signalling path.
    pub(crate) fn avail(&self) -> u64 {
        self.buddy.avail()
    }

    /// The modeled copy bandwidth, MB/s.
    pub(crate) fn bandwidth_mbps(&self) -> u32 {
        self.bandwidth_mbps
    }

    /// A number for a new buffer object, unique for this device's life.
    pub(crate) fn new_object_id(&self) -> u64 {
        self.next_object.fetch_add(1, ordering::Relaxed)
    }

    /// Totals and the resident set, for debugfs.
    pub(crate) fn stats(&self) -> MemoryStats {
        let (uploaded_bytes, written_back_bytes) = {
            let c = self.copies.lock();
            (c.uploaded_bytes, c.written_back_bytes)
        };
        let t = self.table.lock();
        MemoryStats {
            uploaded_bytes,
            written_back_bytes,
            evictions: t.evictions,
            resident_objects: t.resident.len(),
            resident_bytes: t.resident.iter().map(|r| r.copy.bytes).sum(),
        }
    }

    /// Calls `f` with each resident object: its number, bytes, pins and
    /// last use. Holds the residency lock throughout.
    pub(crate) fn for_each_resident(&self, mut f: impl FnMut(u64, u64, u32, u64)) {
        let t = self.table.lock();
        for r in t.resident.iter() {
            f(
                r.object,
                r.copy.bytes,
                r.copy.pins.load(ordering::Relaxed),
                r.last_use,
            );
        }
    }

    /// Makes the object behind `map` resident for a job and pins it there
    /// until the returned handle is dropped. An object already resident is taken as it is; otherwise room
    /// is made (idle objects evicted, least recently used first) and the
    /// object is uploaded. Returns the handle and when, in modeled time,
    /// the object is on the device (`now_ns` if it already was).
    ///
    /// `ENOSPC` if every byte that could be freed is held by jobs: the
    /// caller waits for one to finish.
    pub(crate) fn take(
        this: &Arc<Self>,
        map: &VMapOwned<VgObject>,
        now_ns: u64,
    ) -> Result<(Pinned, u64)> {
        let object = map.owner().id;
        let bytes = chunks_of(map.owner().size() as u64).ok_or(E2BIG)?;
        let mut t = this.table.lock();
        t.clock += 1;
        let clock = t.clock;
        let mut ready_ns = now_ns;
        let found = t.resident.iter().position(|r| r.object == object);
        let index = match found {
            Some(i) if !t.resident[i].copy.stale.load(ordering::Relaxed) => i,
            stale => {
                if let Some(i) = stale {
                    // Never taken again; holders keep their handles.
                    t.resident.remove(i)?;
                }
                let copy = this.allocate(&mut t, bytes)?;
                copy_words(this, &copy, map, true)?;
                ready_ns = this.copy_time(bytes, now_ns);
                copy.ready_ns.store(ready_ns, ordering::Relaxed);
                let flag = map.owner().resident.clone();
                t.resident.push(
                    Resident {
                        object,
                        copy,
                        last_use: clock,
                        flag: flag.clone(),
                    },
                    GFP_KERNEL,
                )?;
                flag.store(true, ordering::Relaxed);
                t.resident.len() - 1
            }
        };
        let r = t.resident.get_mut(index).ok_or(EINVAL)?;
        r.last_use = clock;
        ready_ns = ready_ns.max(r.copy.ready_ns.load(ordering::Relaxed));
        r.copy.pins.fetch_add(1, ordering::Relaxed);
        let pinned = Pinned {
            memory: this.clone(),
            copy: r.copy.clone(),
            stored: Atomic::new(false),
            written_back: false,
        };
        Ok((pinned, ready_ns))
    }

    /// Allocates a copy of `bytes`, evicting idle objects until it fits.
    fn allocate(&self, t: &mut Table, bytes: u64) -> Result<Arc<DeviceCopy>> {
        let chunk = Alignment::new_checked(CHUNK_BYTES as usize).ok_or(EINVAL)?;
        let blocks = loop {
            let attempt = KBox::pin_init(
                self.buddy.alloc_blocks(
                    GpuBuddyAllocMode::Simple,
                    bytes,
                    chunk,
                    GpuBuddyAllocFlags::default(),
                ),
                GFP_KERNEL,
            );
            match attempt {
                Ok(blocks) => break blocks,
                Err(e) if e != ENOSPC => return Err(e),
                Err(_) => {
                    let views = t.resident.iter().map(|r| ResidentView {
                        pins: r.copy.pins.load(ordering::Relaxed),
                        last_use: r.last_use,
                    });
                    let victim = lru_victim(views).ok_or(ENOSPC)?;
                    // Idle copies equal system memory (written back when
                    // their last writer finished): dropping one is enough.
                    drop(t.resident.remove(victim)?);
                    t.evictions += 1;
                }
            }
        };
        let mut pages = KVVec::with_capacity((bytes / CHUNK_BYTES) as usize, GFP_KERNEL)?;
        for block in blocks.iter() {
            let first = block.offset() / CHUNK_BYTES;
            for chunk in first..first + block.size() / CHUNK_BYTES {
                pages.push(u32::try_from(chunk)?, GFP_KERNEL)?;
            }
        }
        if pages.len() as u64 * CHUNK_BYTES != bytes {
            warn_on!(true);
            return Err(EINVAL);
        }
        // INVARIANT: `pages` names each chunk of `blocks` once, in all
        // `bytes`; no handle exists yet.
        Ok(Arc::new(
            DeviceCopy {
                _blocks: blocks,
                pages,
                bytes,
                pins: Atomic::new(0),
                stale: Atomic::new(false),
                ready_ns: Atomic::new(0),
            },
            GFP_KERNEL,
        )?)
    }

    /// Copies a pinned object back to system memory (through `map`, its
    /// mapping) and marks the handle written back. Returns when, in
    /// modeled time, the copy ends.
    pub(crate) fn write_back(
        &self,
        pinned: &mut Pinned,
        map: &VMapOwned<VgObject>,
        now_ns: u64,
    ) -> Result<u64> {
        copy_words(self, &pinned.copy, map, false)?;
        let bytes = pinned.copy.bytes;
        pinned.written_back = true;
        let mut c = self.copies.lock();
        c.written_back_bytes = c.written_back_bytes.saturating_add(bytes);
        Ok(c.engine.issue(now_ns, bytes, self.bandwidth_mbps).1)
    }

    /// Forgets the device copy of `object`: the CPU is about to write the
    /// object, or it is being freed. Jobs holding the copy keep it until
    /// they finish; the next job uploads the object again.
    pub(crate) fn forget(&self, object: u64) {
        let gone = {
            let mut t = self.table.lock();
            match t.resident.iter().position(|r| r.object == object) {
                Some(i) => t.resident.remove(i).ok(),
                None => None,
            }
        };
        // The chunks go back outside the residency lock.
        drop(gone);
    }

    /// Issues a transfer of `bytes` at `now_ns` on the copy engine; returns
    /// when it ends in modeled time.
    pub(crate) fn copy_time(&self, bytes: u64, now_ns: u64) -> u64 {
        let mut c = self.copies.lock();
        c.uploaded_bytes = c.uploaded_bytes.saturating_add(bytes);
        c.engine.issue(now_ns, bytes, self.bandwidth_mbps).1
    }

    /// The device word at `word` (an index into device memory).
    fn word(&self, word: usize) -> Option<&Atomic<u32>> {
        self.words.get(word)
    }

    /// The words of chunk `index`.
    fn chunk(&self, index: u32) -> Option<&[Atomic<u32>]> {
        let base = (index as usize).checked_mul(CHUNK_WORDS)?;
        self.words.get(base..base.checked_add(CHUNK_WORDS)?)
    }
}

/// A job's hold on the device copy of one object: while it lives, the
/// copy cannot be evicted. The interpreter reads and writes device words
/// through it, without any lock.
pub(crate) struct Pinned {
    memory: Arc<DeviceMemory>,
    copy: Arc<DeviceCopy>,
    /// The job has stored to the copy.
    stored: Atomic<bool>,
    /// The object was written back since the job took it.
    written_back: bool,
}

impl Pinned {
    /// The device word of the object's 32-bit word `index`; `None` past
    /// its end.
    fn word(&self, index: u64) -> Option<&Atomic<u32>> {
        let index = usize::try_from(index).ok()?;
        let chunk = *self.copy.pages.get(index / CHUNK_WORDS)?;
        let base = (chunk as usize).checked_mul(CHUNK_WORDS)?;
        self.memory.word(base.checked_add(index % CHUNK_WORDS)?)
    }

    /// Reads the object's word `index` on the device.
    pub(crate) fn load(&self, index: u64) -> Option<u32> {
        Some(self.word(index)?.load(ordering::Relaxed))
    }

    /// Writes the object's word `index` on the device; `false` past its
    /// end.
    pub(crate) fn store(&self, index: u64, value: u32) -> bool {
        match self.word(index) {
            Some(w) => {
                w.store(value, ordering::Relaxed);
                self.stored.store(true, ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// The job has stored to the object's copy: it must be written back.
    pub(crate) fn stored(&self) -> bool {
        self.stored.load(ordering::Relaxed)
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        if self.stored.load(ordering::Relaxed) && !self.written_back {
            // Its stores may never reach system memory: nobody takes this
            // copy again.
            self.copy.stale.store(true, ordering::Relaxed);
        }
        self.copy.pins.fetch_sub(1, ordering::Relaxed);
    }
}

/// Device memory that belongs to no buffer object: a context's state area
/// or a job's scratch area, zeroed, freed when dropped (outside the
/// engine lock).
pub(crate) struct DeviceArea {
    /// Keeps the chunks allocated.
    _copy: Arc<DeviceCopy>,
}

impl DeviceArea {
    /// Allocates `bytes` (in whole chunks; `None` for 0), evicting idle
    /// objects if needed, and zeroes them. `ENOSPC` if jobs hold the rest.
    pub(crate) fn new(memory: &Arc<DeviceMemory>, bytes: u64) -> Result<Option<Self>> {
        if bytes == 0 {
            return Ok(None);
        }
        let mut t = memory.table.lock();
        let copy = memory.allocate(&mut t, chunks_of(bytes).ok_or(E2BIG)?)?;
        drop(t);
        for &chunk in copy.pages.iter() {
            let words = memory.chunk(chunk).ok_or(EINVAL)?;
            words.iter().for_each(|w| w.store(0, ordering::Relaxed));
        }
        Ok(Some(Self { _copy: copy }))
    }
}
