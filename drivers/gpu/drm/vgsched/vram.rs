// SPDX-License-Identifier: GPL-2.0

//! The virtual GPU's device memory: a region of `vram_mib` MiB that the
//! module allocates, handed out in chunks of [`CHUNK_BYTES`] (one page of
//! an object) from the core crate's [`ChunkMap`], and the residency of
//! buffer objects in it.
//!
//! A buffer object lives in system memory (shmem). A job runs on device
//! copies of the objects it binds: preparing the job makes each of them
//! resident ([`DeviceMemory::take`]: chunks taken, idle copies evicted least
//! recently used first, and an upload), and cleaning it up writes back the
//! pages it stored to ([`DeviceMemory::write_back`]) before its fence
//! signals. A copy stays resident while the object is idle, so the next job
//! that binds it finds it there, until room is needed or the object is
//! freed.
//!
//! A job's fence waits for its preparation, so nothing here allocates once
//! a job is queued: every [`DeviceCopy`] (the page table of an object or of
//! a context's state area) and every [`Pinned`] handle (with the job's
//! dirty-page bitmap) is allocated when its object, context or job is made,
//! charged to the caller's memory cgroup; taking and giving chunks only
//! flips bits under a spinlock, and the residency table has room for one
//! copy per chunk. A job's scratch area ([`ScratchArea`]) is addressed by
//! no program, so it has no page table: it is a number of chunks, reserved
//! from the free count when the job is prepared, and costs a queued job
//! nothing per chunk. The residency lock (a mutex, held across uploads) is
//! never held around an allocation.
//!
//! CPU writes are never hidden by a resident copy: the object's mappings
//! report each page the CPU writes (`gem.rs`, `bo_mapping.c`); a submission
//! moves the reports into the object's copy ([`DeviceCopy::cpu_pages`]), and
//! the job's preparation uploads those pages again into a resident copy. A
//! write-back copies only the pages the job stored to (one dirty bit per
//! page in its [`Pinned`]), so what the CPU wrote to other pages of the
//! object while the job ran survives it.
//!
//! Copies take modeled time on one copy engine at `vram_bandwidth_mbps`;
//! the bytes move for real, on the calling thread. The sizes, the copy
//! time, the chunk map and the choice of victim are the core crate's
//! ([`crate::vgsched_core::device_memory`]).

use kernel::{
    alloc::flags::__GFP_ZERO,
    bindings,
    drm::gem::{
        shmem::VMapOwned,
        BaseObject, //
    },
    ffi::c_void,
    io::IoBase,
    new_mutex,
    prelude::*,
    sync::{
        atomic::{
            ordering,
            Atomic, //
        },
        new_spinlock,
        Arc,
        Mutex,
        MutexGuard,
        SpinLock, //
    },
    warn_on, //
};

use crate::{
    gem::VgObject,
    vgsched_core::device_memory::{
        chunks_of,
        lru_victim,
        ChunkMap,
        CopyEngine,
        ResidentView,
        CHUNK_BYTES, //
    },
};

/// Words per chunk of device memory.
const CHUNK_WORDS: usize = (CHUNK_BYTES / 4) as usize;

/// Largest state area the engine's step places and zeroes itself
/// ([`DeviceArea::place_at_once`]): the default `ctx_state_kib`.
pub(crate) const AT_ONCE_AREA_BYTES: u64 = 64 * 1024;

// A chunk is a page: a copy's page table and the CPU's per-page write
// reports (`gem.rs`) index the same pages.
const _: () = assert!(CHUNK_BYTES as usize == kernel::page::PAGE_SIZE);

/// Sets `bits` in word `index` of the bitmap `words`; nothing past its end.
fn or_bits(words: &[Atomic<u64>], index: usize, bits: u64) {
    let Some(word) = words.get(index) else {
        return;
    };
    let mut old = word.load(ordering::Relaxed);
    while old | bits != old {
        match word.cmpxchg(old, old | bits, ordering::Release) {
            Ok(_) => break,
            Err(now) => old = now,
        }
    }
}

/// Sets bit `bit` of the bitmap `words`; nothing past its end.
pub(crate) fn set_bit(words: &[Atomic<u64>], bit: usize) {
    or_bits(words, bit / 64, 1u64 << (bit % 64));
}

/// A bitmap of `bits` bits, cleared, charged to the caller's memory cgroup.
pub(crate) fn bitmap(bits: usize) -> Result<KVVec<Atomic<u64>>> {
    let words = bits.div_ceil(64);
    let mut v = KVVec::with_capacity(words, GFP_KERNEL_ACCOUNT)?;
    for _ in 0..words {
        v.push_within_capacity(Atomic::new(0)).map_err(|_| ENOMEM)?;
    }
    Ok(v)
}

/// A bitmap of a copy's pages: one word in place for an object of up to
/// 64 pages (256 KiB), allocated (charged to the caller's memory cgroup)
/// beyond, so a job over small objects allocates no bitmap.
pub(crate) enum PageBits {
    Inline(Atomic<u64>),
    Heap(KVVec<Atomic<u64>>),
}

impl PageBits {
    /// `bits` bits, cleared.
    pub(crate) fn new(bits: usize) -> Result<Self> {
        Ok(match bits <= 64 {
            true => Self::Inline(Atomic::new(0)),
            false => Self::Heap(bitmap(bits)?),
        })
    }
}

impl core::ops::Deref for PageBits {
    type Target = [Atomic<u64>];

    fn deref(&self) -> &[Atomic<u64>] {
        match self {
            Self::Inline(word) => core::slice::from_ref(word),
            Self::Heap(words) => words,
        }
    }
}

/// Some bit of `words` is set.
fn any_bit(words: &[Atomic<u64>]) -> bool {
    words.iter().any(|w| w.load(ordering::Acquire) != 0)
}

/// Clears a bitmap.
fn clear(words: &[Atomic<u64>]) {
    words.iter().for_each(|w| w.store(0, ordering::Relaxed));
}

/// A region of device memory that may be placed (hold chunks) or not: the
/// copy of one buffer object or a context's state area. Made with its
/// owner, so placing it never allocates.
///
/// # Invariants
///
/// - while `placed`, every entry of `pages` is a chunk taken from the
///   device's chunk map for this copy alone, each named once;
/// - `placed` and `pages` change only under the residency lock (an area's,
///   only through `&mut` of its [`DeviceArea`]) while `pins` is 0;
/// - `pins` counts the held [`Pinned`] handles on this copy.
pub(crate) struct DeviceCopy {
    /// The object's number ([`VgObject::id`]); 0 for an area.
    object: u64,
    /// Per page of the copy, its chunk, while placed.
    pages: KVVec<Atomic<u32>>,
    bytes: u64,
    placed: Atomic<bool>,
    pins: Atomic<u32>,
    /// A job stored to it and was cancelled before its write-back: it may
    /// differ from system memory and is uploaded again once no job holds
    /// it.
    stale: Atomic<bool>,
    /// When its upload ends in modeled time: a job that finds it resident
    /// may not start before.
    ready_ns: Atomic<u64>,
    /// When a job last took it (the residency table's clock).
    last_use: Atomic<u64>,
    /// For an object: the pages the CPU wrote since the copy last took
    /// them, one bit per page (moved here from the object's mapping
    /// reports at submission).
    cpu_pages: KVVec<Atomic<u64>>,
    /// Write-backs that changed system memory: a program validated from
    /// the object before one is out of date ([`crate::gem::VgObject`]).
    write_backs: Atomic<u64>,
}

impl DeviceCopy {
    /// An unplaced copy of `bytes` (whole chunks) for object `object` (0:
    /// an area).
    pub(crate) fn new(bytes: u64, object: u64) -> Result<Arc<Self>> {
        let bytes = chunks_of(bytes).ok_or(E2BIG)?;
        let count = usize::try_from(bytes / CHUNK_BYTES)?;
        let mut pages = KVVec::with_capacity(count, GFP_KERNEL_ACCOUNT)?;
        for _ in 0..count {
            pages
                .push_within_capacity(Atomic::new(0))
                .map_err(|_| ENOMEM)?;
        }
        // INVARIANT: not placed, no handle.
        Ok(Arc::new(
            Self {
                object,
                pages,
                bytes,
                placed: Atomic::new(false),
                pins: Atomic::new(0),
                stale: Atomic::new(false),
                ready_ns: Atomic::new(0),
                last_use: Atomic::new(0),
                cpu_pages: bitmap(count)?,
                write_backs: Atomic::new(0),
            },
            GFP_KERNEL_ACCOUNT,
        )?)
    }

    /// Write-backs that changed the object's system memory so far; read
    /// in acquire order, so what they wrote is seen after.
    pub(crate) fn write_backs(&self) -> u64 {
        self.write_backs.load(ordering::Acquire)
    }

    /// It holds device memory now (read without a lock: fdinfo).
    pub(crate) fn is_placed(&self) -> bool {
        self.placed.load(ordering::Relaxed)
    }

    /// The CPU wrote the pages of bits `bits` of word `word` of the
    /// object's page bitmap (page `64 * word + bit`).
    pub(crate) fn cpu_wrote(&self, word: usize, bits: u64) {
        or_bits(&self.cpu_pages, word, bits);
    }

    /// Every page of the object changed behind its mappings (another
    /// device wrote it).
    pub(crate) fn cpu_wrote_all(&self) {
        let pages = self.pages.len();
        for w in 0..self.cpu_pages.len() {
            let first = w * 64;
            let bits = match pages.saturating_sub(first) {
                n if n >= 64 => u64::MAX,
                n => (1u64 << n) - 1,
            };
            or_bits(&self.cpu_pages, w, bits);
        }
    }
}

/// The residency table: the placed copies of objects. Room for one per
/// chunk (a placed copy holds at least one), reserved at load.
pub(crate) struct Table {
    resident: KVec<Arc<DeviceCopy>>,
    /// Counts takes, for least-recently-used order.
    clock: u64,
    evictions: u64,
}

/// The chunk map's storage (see [`ChunkMap`]).
struct Chunks {
    words: KVVec<u64>,
    count: u32,
    free: u32,
    /// Chunks scratch areas hold, by number.
    reserved: u32,
}

impl Chunks {
    /// The chunk map over this storage.
    fn map(&mut self) -> ChunkMap<'_> {
        let Self {
            words,
            count,
            free,
            reserved,
        } = self;
        ChunkMap::over(words, *count, free, reserved)
    }
}

/// The copy engine and what it moved. Under a spinlock of its own.
struct Copies {
    engine: CopyEngine,
    uploaded_bytes: u64,
    written_back_bytes: u64,
    /// Holds reclaimed from jobs that could not run, the bytes they held
    /// and the modeled time their write-backs took.
    reclaims: u64,
    reclaimed_bytes: u64,
    reclaim_ns: u64,
}

/// What debugfs shows of the device memory.
pub(crate) struct MemoryStats {
    pub(crate) uploaded_bytes: u64,
    pub(crate) written_back_bytes: u64,
    pub(crate) reclaims: u64,
    pub(crate) reclaimed_bytes: u64,
    pub(crate) reclaim_ns: u64,
    pub(crate) evictions: u64,
    pub(crate) resident_objects: usize,
    pub(crate) resident_bytes: u64,
}

/// The device memory of one virtual GPU.
///
/// # Invariants
///
/// `words` holds `chunks.count` chunks: every chunk index the map hands out
/// lies inside `words`.
#[pin_data]
pub(crate) struct DeviceMemory {
    words: KVVec<Atomic<u32>>,
    size: u64,
    bandwidth_mbps: u32,
    next_object: Atomic<u64>,
    #[pin]
    table: Mutex<Table>,
    /// Taken inside the residency lock, or alone; never around anything
    /// else.
    #[pin]
    chunks: SpinLock<Chunks>,
    #[pin]
    copies: SpinLock<Copies>,
}

/// Copies an object between its kernel mapping and its device copy:
/// system to device (`upload`) or back, a chunk at a time; only the pages
/// whose bit is set in `only`, if it is given. Returns the bytes moved.
///
/// The copy is placed and held (by the caller's job, or under the
/// residency lock for a fresh upload). The object's pages may change under
/// it (user space maps them): the bytes move with the kernel's `memcpy()`,
/// as `SysMemBackend` copies system memory, not as Rust accesses.
fn copy_words(
    memory: &DeviceMemory,
    copy: &DeviceCopy,
    map: &VMapOwned<VgObject>,
    upload: bool,
    only: Option<&[Atomic<u64>]>,
) -> Result<u64> {
    let object_bytes = map.owner().size();
    let system = map.as_view().as_ptr().cast::<u8>();
    let chunk = CHUNK_BYTES as usize;
    let mut moved = 0;
    for (page, index) in copy.pages.iter().enumerate() {
        let wanted = only.is_none_or(|bits| {
            bits.get(page / 64)
                .is_some_and(|w| w.load(ordering::Acquire) & (1u64 << (page % 64)) != 0)
        });
        if !wanted {
            continue;
        }
        let device = memory.chunk(index.load(ordering::Relaxed)).ok_or(EINVAL)?;
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
        // (one is the object's mapping, the other the module's memory).
        unsafe {
            let system = system.add(offset).cast::<c_void>();
            if upload {
                bindings::memcpy(device, system, chunk);
            } else {
                bindings::memcpy(system, device, chunk);
            }
        }
        moved += CHUNK_BYTES;
    }
    Ok(moved)
}

impl DeviceMemory {
    /// Allocates `bytes` of device memory (zeroed), its chunk map and its
    /// residency table.
    pub(crate) fn new(bytes: u64, bandwidth_mbps: u32) -> Result<Arc<Self>> {
        let words_len = usize::try_from(bytes / 4)?;
        let count = u32::try_from(bytes / CHUNK_BYTES)?;
        // Zeroed by the allocator (a memset), not word by word: filling
        // 64 MiB one push at a time took over a second of every load under
        // TCG.
        let mut words = KVVec::<Atomic<u32>>::with_capacity(words_len, GFP_KERNEL | __GFP_ZERO)?;
        // SAFETY: The capacity is `words_len` elements, allocated with
        // `__GFP_ZERO`, and an `Atomic<u32>` whose bytes are all zero is a
        // valid 0.
        unsafe { words.inc_len(words_len) };
        let mut map = KVVec::from_elem(0u64, ChunkMap::words_for(count), GFP_KERNEL)?;
        let (mut free, mut reserved) = (0, 0);
        ChunkMap::init(&mut map, count, &mut free, &mut reserved).ok_or(EINVAL)?;
        let resident = KVec::with_capacity(count as usize, GFP_KERNEL)?;
        // INVARIANT: `words` holds the `count` chunks of the map.
        Arc::pin_init(
            try_pin_init!(Self {
                words,
                size: u64::from(count) * CHUNK_BYTES,
                bandwidth_mbps,
                next_object: Atomic::new(1),
                table <- new_mutex!(Table {
                    resident,
                    clock: 0,
                    evictions: 0,
                }),
                chunks <- new_spinlock!(Chunks {
                    words: map,
                    count,
                    free,
                    reserved,
                }),
                copies <- new_spinlock!(Copies {
                    engine: CopyEngine::default(),
                    uploaded_bytes: 0,
                    written_back_bytes: 0,
                    reclaims: 0,
                    reclaimed_bytes: 0,
                    reclaim_ns: 0,
                }),
            }),
            GFP_KERNEL,
        )
    }

    /// Bytes of device memory.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Bytes neither taken nor reserved.
    pub(crate) fn avail(&self) -> u64 {
        u64::from(self.chunks.lock().free) * CHUNK_BYTES
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
        let (uploaded_bytes, written_back_bytes, reclaims, reclaimed_bytes, reclaim_ns) = {
            let c = self.copies.lock();
            (
                c.uploaded_bytes,
                c.written_back_bytes,
                c.reclaims,
                c.reclaimed_bytes,
                c.reclaim_ns,
            )
        };
        let t = self.table.lock();
        MemoryStats {
            uploaded_bytes,
            written_back_bytes,
            reclaims,
            reclaimed_bytes,
            reclaim_ns,
            evictions: t.evictions,
            resident_objects: t.resident.len(),
            resident_bytes: t.resident.iter().map(|c| c.bytes).sum(),
        }
    }

    /// Calls `f` with each resident copy: its object, bytes, pins and last
    /// use. Holds the residency lock throughout.
    pub(crate) fn for_each_resident(&self, mut f: impl FnMut(u64, u64, u32, u64)) {
        let t = self.table.lock();
        for c in t.resident.iter() {
            f(
                c.object,
                c.bytes,
                c.pins.load(ordering::Relaxed),
                c.last_use.load(ordering::Relaxed),
            );
        }
    }

    /// Places `copy`: takes its chunks, evicting idle resident copies
    /// (least recently used first) until they fit. `ENOSPC` if every chunk
    /// that could be freed is held by jobs. Allocates nothing.
    fn place(&self, t: &mut Table, copy: &DeviceCopy) -> Result {
        self.evict_until(t, |map| Self::take_chunks(map, copy))?;
        copy.placed.store(true, ordering::Relaxed);
        Ok(())
    }

    /// Places `copy` in chunks that are free now, evicting nothing (the
    /// chunk map's spinlock only); `false`, with nothing taken, if too few
    /// are.
    fn place_free(&self, copy: &DeviceCopy) -> bool {
        let got = Self::take_chunks(&mut self.chunks.lock().map(), copy);
        if got {
            copy.placed.store(true, ordering::Relaxed);
        }
        got
    }

    /// Takes chunks for every page of `copy` from `map`, all or none.
    fn take_chunks(map: &mut ChunkMap<'_>, copy: &DeviceCopy) -> bool {
        map.take(copy.pages.len(), |i, chunk| {
            if let Some(p) = copy.pages.get(i) {
                p.store(chunk, ordering::Relaxed);
            }
        })
    }

    /// The residency lock, if it is free now: for the engine's step, which
    /// never waits for it (it is held across uploads).
    pub(crate) fn try_table(&self) -> Option<MutexGuard<'_, Table>> {
        self.table.try_lock()
    }

    /// Calls `get` on the chunk map (under its spinlock) until it returns
    /// `true`, evicting an idle resident copy (least recently used first)
    /// after each `false`. `ENOSPC` if every chunk that could be freed is
    /// held by jobs. Allocates nothing.
    fn evict_until(&self, t: &mut Table, mut get: impl FnMut(&mut ChunkMap<'_>) -> bool) -> Result {
        loop {
            let got = { get(&mut self.chunks.lock().map()) };
            if got {
                return Ok(());
            }
            let views = t.resident.iter().map(|c| ResidentView {
                pins: c.pins.load(ordering::Relaxed),
                last_use: c.last_use.load(ordering::Relaxed),
            });
            let victim = lru_victim(views).ok_or(ENOSPC)?;
            // An idle copy equals system memory but for the pages the CPU
            // wrote since, which are newer there: dropping it loses nothing.
            let gone = t.resident.remove(victim)?;
            self.unplace(&gone);
            t.evictions += 1;
        }
    }

    /// Reserves `chunks` chunks by number, evicting idle copies until they
    /// are free. `ENOSPC` if jobs hold the rest. Allocates nothing.
    fn reserve(&self, chunks: u32) -> Result {
        let mut t = self.table.lock();
        self.evict_until(&mut t, |map| map.reserve(chunks))
    }

    /// Gives back `chunks` chunks a reservation holds (a spinlock only).
    fn unreserve(&self, chunks: u32) {
        warn_on!(!self.chunks.lock().map().unreserve(chunks));
    }

    /// Gives the chunks of a placed, unheld `copy` back.
    fn unplace(&self, copy: &DeviceCopy) {
        if !copy.placed.load(ordering::Relaxed) {
            return;
        }
        let mut c = self.chunks.lock();
        let mut map = c.map();
        for page in copy.pages.iter() {
            warn_on!(!map.give(page.load(ordering::Relaxed)));
        }
        copy.placed.store(false, ordering::Relaxed);
        // A stale copy's chunks are gone with it: placed again, it is
        // uploaded whole.
        copy.stale.store(false, ordering::Relaxed);
    }

    /// Makes the object behind `map` (whose copy `pin` names) resident for
    /// a job and holds it there until the handle is released. A resident
    /// copy is taken as it is, but for the pages the CPU wrote since, which
    /// are uploaded again; otherwise it is placed (idle copies evicted,
    /// least recently used first) and the whole object is uploaded. Returns
    /// when, in modeled time, the object is on the device (`now_ns` if it
    /// already was and the CPU wrote nothing).
    ///
    /// `ENOSPC` if every chunk that could be freed is held by jobs, `EBUSY`
    /// if the copy is held by another job and is stale or has pages the CPU
    /// wrote since (an upload would overwrite that job's stores): the
    /// caller waits for a job to finish. `own` pins of the copy are the
    /// caller's job's (an object it binds twice), not another job's.
    /// Allocates nothing.
    pub(crate) fn take(
        &self,
        pin: &mut Pinned,
        map: &VMapOwned<VgObject>,
        now_ns: u64,
        own: u32,
    ) -> Result<u64> {
        let mut t = self.table.lock();
        // With a mapping to upload through, it is never left undone.
        self.take_locked(&mut t, pin, Some(map), now_ns, own)?
            .ok_or(EINVAL)
    }

    /// [`DeviceMemory::take`] under the residency lock `t`. Without a
    /// mapping (`map` `None`: the engine's step, [`DeviceMemory::try_table`])
    /// only a copy that needs no upload is taken: `Ok(None)`, with nothing
    /// changed, for one that is not resident, is stale or has pages the
    /// CPU wrote since.
    pub(crate) fn take_locked(
        &self,
        t: &mut Table,
        pin: &mut Pinned,
        map: Option<&VMapOwned<VgObject>>,
        now_ns: u64,
        own: u32,
    ) -> Result<Option<u64>> {
        if pin.held {
            return Err(EINVAL);
        }
        let copy = pin.copy.clone();
        // `pins` first: a release that dropped it has set `stale` before.
        let pins = copy.pins.load(ordering::Acquire);
        let stale = copy.is_placed() && copy.stale.load(ordering::Relaxed);
        if stale && pins > 0 {
            return Err(EBUSY);
        }
        // A held copy is another job's (an earlier one of the same context,
        // or one that reads the object beside this one): uploading into it
        // would overwrite what that job stores. Pages the CPU wrote since
        // wait until it lets the copy go; read without taking them, so
        // they stay for then. (A stale copy here is unheld: forgotten
        // below, it is placed again.)
        if !stale && copy.is_placed() && pins > own && any_bit(&copy.cpu_pages) {
            return Err(EBUSY);
        }
        let Some(map) = map else {
            if stale || !copy.is_placed() || any_bit(&copy.cpu_pages) {
                return Ok(None);
            }
            let ready_ns = now_ns.max(copy.ready_ns.load(ordering::Relaxed));
            Self::hold_copy(t, pin, &copy);
            return Ok(Some(ready_ns));
        };
        if stale {
            self.forget_locked(t, &copy);
        }
        let ready_ns = if copy.is_placed() {
            // What the CPU wrote since: those pages again. (Protection was
            // restored when they were moved here, at submission.) Each word
            // is taken whole, into the handle's dirty bitmap (cleared below
            // for the job): a page a submission reports meanwhile stays for
            // the next take, never cleared unseen.
            let mut pending = false;
            for (taken, word) in pin.dirty.iter().zip(copy.cpu_pages.iter()) {
                let bits = word.xchg(0, ordering::Acquire);
                taken.store(bits, ordering::Relaxed);
                pending |= bits != 0;
            }
            let mut moved = 0;
            if pending {
                moved = match copy_words(self, &copy, map, true, Some(&pin.dirty[..])) {
                    Ok(bytes) => bytes,
                    Err(e) => {
                        // Not uploaded: still to do.
                        for (w, taken) in pin.dirty.iter().enumerate() {
                            or_bits(&copy.cpu_pages, w, taken.load(ordering::Relaxed));
                        }
                        return Err(e);
                    }
                };
            }
            match moved {
                0 => now_ns.max(copy.ready_ns.load(ordering::Relaxed)),
                bytes => {
                    let at = self.copy_time(bytes, now_ns);
                    copy.ready_ns.store(at, ordering::Relaxed);
                    at
                }
            }
        } else {
            self.place(t, &copy)?;
            if let Err(e) = t.resident.push_within_capacity(copy.clone()) {
                // Cannot happen: room for one copy per chunk.
                warn_on!(true);
                self.unplace(&e.0);
                return Err(ENOMEM);
            }
            // The whole object moves: what the CPU wrote is in it. (Taken
            // as the placed branch does: a report arriving after the clear
            // stays for the next take.)
            copy.cpu_pages.iter().for_each(|w| {
                w.xchg(0, ordering::Acquire);
            });
            if let Err(e) = copy_words(self, &copy, map, true, None) {
                // Partly uploaded: not a copy of the object.
                self.forget_locked(t, &copy);
                return Err(e);
            }
            let at = self.copy_time(copy.bytes, now_ns);
            copy.ready_ns.store(at, ordering::Relaxed);
            at
        };
        Self::hold_copy(t, pin, &copy);
        Ok(Some(ready_ns))
    }

    /// Counts `pin`'s hold on `copy`, resident and current for its job,
    /// as the copy's most recent use.
    fn hold_copy(t: &mut Table, pin: &mut Pinned, copy: &DeviceCopy) {
        t.clock += 1;
        copy.last_use.store(t.clock, ordering::Relaxed);
        copy.pins.fetch_add(1, ordering::Relaxed);
        pin.held = true;
        pin.written_back = false;
        pin.stored.store(false, ordering::Relaxed);
        clear(&pin.dirty);
    }

    /// Copies the pages a job stored to back to system memory (through
    /// `map`, the object's mapping) and marks the handle written back; the
    /// object's other pages keep what the CPU wrote meanwhile. Returns
    /// when, in modeled time, the copy ends. Allocates nothing and takes
    /// only the copy engine's spinlock.
    pub(crate) fn write_back(
        &self,
        pinned: &mut Pinned,
        map: &VMapOwned<VgObject>,
        now_ns: u64,
    ) -> Result<u64> {
        if !pinned.held {
            return Err(EINVAL);
        }
        // Counted before and after, as a sequence count: a program read
        // while the copy runs (maybe half of it) is never taken for
        // current, and a copy that fails half-way counts too.
        pinned.copy.write_backs.fetch_add(1, ordering::Release);
        let copied = copy_words(self, &pinned.copy, map, false, Some(&pinned.dirty[..]));
        pinned.copy.write_backs.fetch_add(1, ordering::Release);
        let bytes = copied?;
        pinned.written_back = true;
        let mut c = self.copies.lock();
        c.written_back_bytes = c.written_back_bytes.saturating_add(bytes);
        Ok(c.engine.issue(now_ns, bytes, self.bandwidth_mbps).1)
    }

    /// Takes `copy` (an object's) out of device memory if it is resident
    /// and idle: the object is being freed, or the CPU is about to write it
    /// (`BO_CPU_PREP`). A held copy stays; the CPU's writes reach the next
    /// job anyway.
    pub(crate) fn forget(&self, copy: &DeviceCopy) {
        let mut t = self.table.lock();
        if copy.pins.load(ordering::Relaxed) == 0 {
            self.forget_locked(&mut t, copy);
        }
    }

    /// Takes the unheld `copy` out of the table and gives its chunks back.
    fn forget_locked(&self, t: &mut Table, copy: &DeviceCopy) {
        if let Some(i) = t
            .resident
            .iter()
            .position(|c| core::ptr::eq::<DeviceCopy>(&**c, copy))
        {
            // Not the last reference: the caller holds one.
            let _ = t.resident.remove(i);
        }
        self.unplace(copy);
        copy.stale.store(false, ordering::Relaxed);
    }

    /// Counts a reclaimed hold of `bytes` whose write-back took `ns` of
    /// modeled time.
    pub(crate) fn count_reclaim(&self, bytes: u64, ns: u64) {
        let mut c = self.copies.lock();
        c.reclaims = c.reclaims.saturating_add(1);
        c.reclaimed_bytes = c.reclaimed_bytes.saturating_add(bytes);
        c.reclaim_ns = c.reclaim_ns.saturating_add(ns);
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

/// A job's handle on the device copy of one object, made at submission:
/// while held ([`DeviceMemory::take`] to [`Pinned::release`]), the copy
/// cannot be evicted. The interpreter reads and writes device words through
/// it, without any lock.
pub(crate) struct Pinned {
    memory: Arc<DeviceMemory>,
    copy: Arc<DeviceCopy>,
    /// It counts in the copy's pins.
    held: bool,
    /// The job has stored to the copy.
    stored: Atomic<bool>,
    /// The pages it stored to, one bit per page: what its write-back
    /// copies.
    dirty: PageBits,
    /// The object was written back since the job took it.
    written_back: bool,
}

impl Pinned {
    /// It is a handle on the same copy as `other`.
    pub(crate) fn same_copy(&self, other: &Pinned) -> bool {
        Arc::ptr_eq(&self.copy, &other.copy)
    }

    /// An unheld handle on `copy`, for a job about to be queued.
    pub(crate) fn new(memory: &Arc<DeviceMemory>, copy: &Arc<DeviceCopy>) -> Result<Self> {
        Ok(Self {
            memory: memory.clone(),
            copy: copy.clone(),
            held: false,
            stored: Atomic::new(false),
            dirty: PageBits::new(copy.pages.len())?,
            written_back: false,
        })
    }

    /// The device word of the object's 32-bit word `index`; `None` past
    /// its end or while not held.
    fn word(&self, index: u64) -> Option<&Atomic<u32>> {
        if !self.held {
            return None;
        }
        let index = usize::try_from(index).ok()?;
        let entry = self.copy.pages.get(index / CHUNK_WORDS)?;
        // SAFETY: `entry` is a live, aligned `u32`. While this handle is
        // held the copy is placed and counted in `pins`, so no one writes
        // its page table (type invariant of `DeviceCopy`: only a placing or
        // an unplacing does, under the residency lock, with no handle
        // held); the take that made this handle held came after the last
        // write, through the residency lock. A plain read: the
        // interpreter's hottest path, where an atomic load is a call.
        let chunk = unsafe { entry.as_ptr().read() };
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
                set_bit(&self.dirty, index as usize / CHUNK_WORDS);
                self.stored.store(true, ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// The job has stored to the object's copy: it must be written back.
    pub(crate) fn stored(&self) -> bool {
        self.held && self.stored.load(ordering::Relaxed)
    }

    /// Bytes of device memory the copy holds.
    pub(crate) fn bytes(&self) -> u64 {
        self.copy.bytes
    }

    /// Lets the copy go. Stores that were never written back make it stale:
    /// it is uploaded again before any job takes it.
    pub(crate) fn release(&mut self) {
        if !self.held {
            return;
        }
        if self.stored.load(ordering::Relaxed) && !self.written_back {
            self.copy.stale.store(true, ordering::Relaxed);
        }
        // Release: a take that sees the count drop sees `stale` too.
        self.copy.pins.fetch_sub(1, ordering::Release);
        self.held = false;
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        self.release();
    }
}

/// Device memory that belongs to no buffer object: a context's state area,
/// made with its owner and placed (zeroed) when needed; its chunks go back
/// when it is unplaced or dropped.
pub(crate) struct DeviceArea {
    memory: Arc<DeviceMemory>,
    copy: Arc<DeviceCopy>,
}

impl DeviceArea {
    /// An unplaced area of `bytes` (whole chunks); `None` for 0.
    pub(crate) fn new(memory: &Arc<DeviceMemory>, bytes: u64) -> Result<Option<Self>> {
        if bytes == 0 {
            return Ok(None);
        }
        Ok(Some(Self {
            memory: memory.clone(),
            copy: DeviceCopy::new(bytes, 0)?,
        }))
    }

    /// It holds its chunks.
    pub(crate) fn is_placed(&self) -> bool {
        self.copy.is_placed()
    }

    /// Takes its chunks (evicting idle copies) and zeroes them. `ENOSPC` if
    /// jobs hold the rest. Allocates nothing.
    pub(crate) fn place(&mut self) -> Result {
        if self.copy.is_placed() {
            return Ok(());
        }
        {
            let mut t = self.memory.table.lock();
            self.memory.place(&mut t, &self.copy)?;
        }
        self.zero()
    }

    /// [`DeviceArea::place`] in the engine's step: only an area of at most
    /// [`AT_ONCE_AREA_BYTES`] (its zeroing is short) in chunks free now
    /// (nothing evicted, and the residency lock not taken); `false`, with
    /// nothing taken, otherwise.
    pub(crate) fn place_at_once(&mut self) -> bool {
        if self.copy.is_placed() {
            return true;
        }
        if self.copy.bytes > AT_ONCE_AREA_BYTES || !self.memory.place_free(&self.copy) {
            return false;
        }
        if self.zero().is_err() {
            self.unplace();
            return false;
        }
        true
    }

    /// Zeroes its chunks, just placed.
    fn zero(&self) -> Result {
        for page in self.copy.pages.iter() {
            let words = self
                .memory
                .chunk(page.load(ordering::Relaxed))
                .ok_or(EINVAL)?;
            let chunk = words.as_ptr().cast::<c_void>().cast_mut();
            // SAFETY: `chunk` is a chunk of the device's words,
            // `CHUNK_BYTES` long, taken for this area alone (no job can
            // reach it before the area is placed).
            unsafe { bindings::memset(chunk, 0, CHUNK_BYTES as usize) };
        }
        Ok(())
    }

    /// Gives its chunks back (a spinlock only: fine under the engine lock).
    pub(crate) fn unplace(&mut self) {
        self.memory.unplace(&self.copy);
    }
}

impl Drop for DeviceArea {
    fn drop(&mut self) {
        self.unplace();
    }
}

/// A job's scratch area: device memory the job holds beside its objects,
/// which no program addresses (uAPI: `scratch_bytes`). It is a number of
/// chunks, reserved from the free count when the job is prepared (idle
/// copies evicted for it as for an object) and given back at its clean-up;
/// no chunk is named, so it has no page table and costs its queued job no
/// memory per chunk. Making, placing and unplacing it allocate nothing.
///
/// # Invariants
///
/// While `placed`, `chunks` chunks are reserved in `memory`'s chunk map
/// for this area alone.
pub(crate) struct ScratchArea {
    memory: Arc<DeviceMemory>,
    chunks: u32,
    placed: bool,
}

impl ScratchArea {
    /// An unplaced area of `bytes` (whole chunks); `None` for 0, `E2BIG`
    /// past what any device memory can hold.
    pub(crate) fn new(memory: &Arc<DeviceMemory>, bytes: u64) -> Result<Option<Self>> {
        if bytes == 0 {
            return Ok(None);
        }
        let chunks = chunks_of(bytes).ok_or(E2BIG)? / CHUNK_BYTES;
        // INVARIANT: not placed.
        Ok(Some(Self {
            memory: memory.clone(),
            chunks: u32::try_from(chunks).map_err(|_| E2BIG)?,
            placed: false,
        }))
    }

    /// Bytes it takes when placed.
    pub(crate) fn bytes(&self) -> u64 {
        u64::from(self.chunks) * CHUNK_BYTES
    }

    /// Reserves chunks that are free now, evicting nothing (the engine's
    /// step); `false`, with nothing reserved, if too few are.
    pub(crate) fn place_free(&mut self) -> bool {
        if !self.placed {
            // INVARIANT: reserved here, or not placed.
            self.placed = self.memory.chunks.lock().map().reserve(self.chunks);
        }
        self.placed
    }

    /// Reserves its chunks (evicting idle copies). `ENOSPC` if jobs hold
    /// the rest. Nothing can read it, so nothing is zeroed. Allocates
    /// nothing.
    pub(crate) fn place(&mut self) -> Result {
        if self.placed {
            return Ok(());
        }
        self.memory.reserve(self.chunks)?;
        // INVARIANT: reserved just now.
        self.placed = true;
        Ok(())
    }

    /// Gives its chunks back (a spinlock only: fine under the engine lock).
    pub(crate) fn unplace(&mut self) {
        if self.placed {
            self.memory.unreserve(self.chunks);
            self.placed = false;
        }
    }
}

impl Drop for ScratchArea {
    fn drop(&mut self) {
        self.unplace();
    }
}
