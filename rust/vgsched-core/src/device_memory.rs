// SPDX-License-Identifier: GPL-2.0

//! The virtual GPU's device memory: its size and copy bandwidth, as the
//! module parameters `vram_mib` and `vram_bandwidth_mbps` give them, the
//! unit the allocator hands it out in, what a job needs of it, the modeled
//! time of copies between system and device memory, and which idle object
//! is evicted when room is needed.
//!
//! The memory itself is allocated by the module; its chunks are handed out
//! from a bitmap ([`ChunkMap`]) that taking and giving back never allocate
//! for, so a job's preparation, which its fence waits for, can run them.
//! This file holds the pure rules about it, tested on the host.

use super::topology::{
    within,
    ParamError, //
};

/// Limits of `vram_mib`: at least 1 MiB, at most 1 GiB (the module backs it
/// with memory of its own).
pub const VRAM_MIB: (u32, u32) = (1, 1024);

/// The default device memory, in MiB.
pub const DEFAULT_VRAM_MIB: u32 = 64;

/// The unit device memory is handed out in, in bytes: one page of an
/// object, mapped through the copy's page table.
pub const CHUNK_BYTES: u64 = 4096;

/// Bytes of device memory for `vram_mib`, or the parameter's range error.
pub fn vram_bytes(vram_mib: u64) -> Result<u64, ParamError> {
    Ok(u64::from(within("vram_mib", vram_mib, VRAM_MIB)?) << 20)
}

/// Limits of `vram_bandwidth_mbps`, the modeled copy bandwidth between
/// system and device memory in MB/s (10^6 bytes per second).
pub const BANDWIDTH_MBPS: (u32, u32) = (1, 1_000_000);

/// The default copy bandwidth: 12 GB/s, a PCIe 3.0 x16 link in practice
/// (the link PipeSwitch measured its switches on).
pub const DEFAULT_BANDWIDTH_MBPS: u32 = 12_000;

/// Checks `vram_bandwidth_mbps`.
pub fn bandwidth_mbps(value: u64) -> Result<u32, ParamError> {
    within("vram_bandwidth_mbps", value, BANDWIDTH_MBPS)
}

/// The device memory's chunks, one bit each (set: taken), over storage the
/// caller owns. Every chunk is a page of some copy through that copy's page
/// table, so any free chunks do: taking is first fit over the bitmap,
/// without looking for contiguous runs, and never fails while enough are
/// free.
///
/// Chunks may also be *reserved* by number alone ([`ChunkMap::reserve`]),
/// for device memory that no program addresses (a job's scratch area): no
/// bit changes and no chunk is named, so the holder keeps a count, not a
/// page table. A reserved chunk is not free: taking and reserving both
/// draw on `free`.
///
/// # Invariants
///
/// `free + reserved` is the number of clear bits among the first `chunks`
/// of `words`; bits past `chunks` are set.
pub struct ChunkMap<'a> {
    words: &'a mut [u64],
    chunks: u32,
    free: &'a mut u32,
    reserved: &'a mut u32,
}

impl<'a> ChunkMap<'a> {
    /// Words a map of `chunks` chunks needs.
    pub const fn words_for(chunks: u32) -> usize {
        (chunks as usize).div_ceil(64)
    }

    /// Marks every chunk free, for a map over `words` of `chunks` chunks
    /// (`None` if `words` is too short); `free` receives the count and
    /// `reserved` 0.
    pub fn init(
        words: &'a mut [u64],
        chunks: u32,
        free: &'a mut u32,
        reserved: &'a mut u32,
    ) -> Option<Self> {
        if words.len() < Self::words_for(chunks) {
            return None;
        }
        for (i, w) in words.iter_mut().enumerate() {
            let first = i as u64 * 64;
            let valid = u64::from(chunks).saturating_sub(first).min(64);
            *w = if valid == 64 { 0 } else { !0u64 << valid };
        }
        *free = chunks;
        *reserved = 0;
        Some(Self {
            words,
            chunks,
            free,
            reserved,
        })
    }

    /// A map over state [`ChunkMap::init`] made.
    pub fn over(
        words: &'a mut [u64],
        chunks: u32,
        free: &'a mut u32,
        reserved: &'a mut u32,
    ) -> Self {
        Self {
            words,
            chunks,
            free,
            reserved,
        }
    }

    /// Free chunks: neither taken nor reserved.
    pub fn free(&self) -> u32 {
        *self.free
    }

    /// Chunks reserved by number.
    pub fn reserved(&self) -> u32 {
        *self.reserved
    }

    /// Takes `count` chunks, lowest first, calling `put(i, chunk)` for the
    /// `i`-th; all or nothing: `false` (and nothing taken) if fewer are
    /// free.
    pub fn take(&mut self, count: usize, mut put: impl FnMut(usize, u32)) -> bool {
        if count > *self.free as usize {
            return false;
        }
        // At least `free` bits are clear: the walk finds `count` of them.
        let mut i = 0;
        for (w, word) in self.words.iter_mut().enumerate() {
            while i < count && *word != !0 {
                let bit = (!*word).trailing_zeros();
                *word |= 1 << bit;
                put(i, w as u32 * 64 + bit);
                i += 1;
            }
            if i == count {
                break;
            }
        }
        *self.free -= i as u32;
        i == count
    }

    /// Gives chunk `chunk` back; `false` if it was not taken (a chunk is
    /// never counted free twice).
    pub fn give(&mut self, chunk: u32) -> bool {
        if chunk >= self.chunks {
            return false;
        }
        let Some(word) = self.words.get_mut(chunk as usize / 64) else {
            return false;
        };
        let mask = 1u64 << (chunk % 64);
        if *word & mask == 0 {
            return false;
        }
        *word &= !mask;
        *self.free += 1;
        true
    }

    /// Reserves `count` free chunks by number; all or nothing: `false`
    /// (and nothing reserved) if fewer are free.
    pub fn reserve(&mut self, count: u32) -> bool {
        if count > *self.free {
            return false;
        }
        *self.free -= count;
        *self.reserved += count;
        true
    }

    /// Gives back `count` reserved chunks; `false` (and nothing changed)
    /// if fewer are reserved (a reservation is never given back twice).
    pub fn unreserve(&mut self, count: u32) -> bool {
        if count > *self.reserved {
            return false;
        }
        *self.reserved -= count;
        *self.free += count;
        true
    }
}

/// Bytes of device memory an object of `bytes` takes: whole chunks.
pub fn chunks_of(bytes: u64) -> Option<u64> {
    bytes.checked_next_multiple_of(CHUNK_BYTES)
}

/// Bytes of device memory a job needs at once: every distinct bound object
/// in whole chunks. `None` if the sum overflows (it can never fit).
pub fn footprint(mut objects: impl Iterator<Item = u64>) -> Option<u64> {
    objects.try_fold(0u64, |sum, bytes| sum.checked_add(chunks_of(bytes)?))
}

/// Modeled time to copy `bytes` at `mbps` MB/s, in nanoseconds, rounded
/// up (a copy of one byte takes time). Saturates instead of overflowing.
pub fn transfer_ns(bytes: u64, mbps: u32) -> u64 {
    // bytes / (mbps * 1e6 B/s) in ns = bytes * 1000 / mbps.
    let mbps = u64::from(mbps.max(1));
    bytes.saturating_mul(1000).div_ceil(mbps)
}

/// The copy engine between system and device memory: one transfer at a
/// time, in the order they are issued, each for its modeled time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyEngine {
    /// When the last transfer issued ends, in nanoseconds.
    pub busy_until_ns: u64,
}

impl CopyEngine {
    /// Issues a transfer of `bytes` at `now_ns`: it starts when the engine
    /// is free and takes its modeled time. Returns its (start, end).
    pub fn issue(&mut self, now_ns: u64, bytes: u64, mbps: u32) -> (u64, u64) {
        let start = self.busy_until_ns.max(now_ns);
        let end = start.saturating_add(transfer_ns(bytes, mbps));
        self.busy_until_ns = end;
        (start, end)
    }
}

/// What eviction knows of one resident object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResidentView {
    /// Jobs holding it in device memory (prepared, running or being
    /// cleaned up): it cannot move while any does.
    pub pins: u32,
    /// When it was last taken by a job (a counter that only grows).
    pub last_use: u64,
}

/// The least recently used object that can be evicted (no job holds it),
/// as its position in `objects`; `None` if every object is held.
pub fn lru_victim(objects: impl Iterator<Item = ResidentView>) -> Option<usize> {
    objects
        .enumerate()
        .filter(|(_, o)| o.pins == 0)
        .min_by_key(|(_, o)| o.last_use)
        .map(|(i, _)| i)
}

/// The cases of the copy time, the footprint, the copy engine, the choice
/// of victim and reserving chunks by number, as the host tests and KUnit
/// run them: `Err(name)` names the first that fails.
pub fn cases() -> Result<(), &'static str> {
    let o = |pins, last_use| ResidentView { pins, last_use };
    let mut ce = CopyEngine::default();
    let mut words = [0u64; 1];
    let (mut free, mut reserved) = (0, 0);
    let reservation = match ChunkMap::init(&mut words, 8, &mut free, &mut reserved) {
        Some(mut map) => [
            map.reserve(6) && !map.reserve(3) && map.free() == 2,
            !map.take(3, |_, _| ()) && map.take(2, |_, _| ()) && map.free() == 0,
            map.unreserve(6) && !map.unreserve(1) && map.free() == 6,
        ],
        None => [false; 3],
    };
    let cases: [(&'static str, bool); 18] = [
        (
            "12 MB at 12 GB/s: 1 ms",
            transfer_ns(12_000_000, 12_000) == 1_000_000,
        ),
        (
            "1 MiB at 100 MB/s, rounded up",
            transfer_ns(1 << 20, 100) == 10_485_760,
        ),
        ("one byte takes time", transfer_ns(1, 1_000_000) == 1),
        ("nothing takes none", transfer_ns(0, 1) == 0),
        ("saturates", transfer_ns(u64::MAX, 1) == u64::MAX),
        (
            "whole chunks",
            footprint([1u64, 4096, 4097].into_iter()) == Some(4096 * 4),
        ),
        ("no objects", footprint(core::iter::empty()) == Some(0)),
        (
            "a chunk past the end",
            footprint([u64::MAX].into_iter()).is_none(),
        ),
        (
            "a sum past the end",
            footprint([u64::MAX / 2, u64::MAX / 2 + 4096].into_iter()).is_none(),
        ),
        (
            "an idle engine starts at once",
            ce.issue(100, 1000, 1000) == (100, 1100),
        ),
        (
            "a busy one queues",
            ce.issue(500, 2000, 1000) == (1100, 3100),
        ),
        ("idle again", ce.issue(5000, 0, 1000) == (5000, 5000)),
        (
            "the least recently used idle one",
            lru_victim([o(0, 5), o(0, 3), o(1, 1)].into_iter()) == Some(1),
        ),
        (
            "none while all are held",
            lru_victim([o(1, 5), o(2, 3)].into_iter()).is_none(),
        ),
        (
            "held ones are skipped",
            lru_victim([o(1, 0), o(0, 9)].into_iter()) == Some(1),
        ),
        ("a reservation draws on the free count", reservation[0]),
        ("taking sees what reservations left", reservation[1]),
        ("a reservation goes back once", reservation[2]),
    ];
    first_failing(&cases)
}

/// The name of the first case of `cases` that does not hold.
pub fn first_failing(cases: &[(&'static str, bool)]) -> Result<(), &'static str> {
    match cases.iter().find(|(_, ok)| !ok) {
        Some((name, _)) => Err(name),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::ChunkMap;

    #[test]
    fn chunk_map_takes_all_or_nothing_and_gives_back() {
        let mut words = [0u64; 3];
        let (mut free, mut reserved) = (0, 0);
        let mut map = ChunkMap::init(&mut words, 130, &mut free, &mut reserved).unwrap();
        assert_eq!(map.free(), 130);
        let mut got = [0u32; 130];
        assert!(map.take(70, |i, c| got[i] = c));
        assert_eq!(&got[..3], &[0, 1, 2]);
        assert_eq!(got[69], 69);
        assert_eq!(map.free(), 60);
        // Too many: nothing taken.
        assert!(!map.take(61, |_, _| panic!("nothing may be taken")));
        assert_eq!(map.free(), 60);
        // Holes are filled first, in any order.
        assert!(map.give(5) && map.give(64));
        assert!(!map.give(5), "a free chunk is not given twice");
        assert!(!map.give(130), "past the end");
        let mut two = [0u32; 2];
        assert!(map.take(2, |i, c| two[i] = c));
        assert_eq!(two, [5, 64]);
        // The rest, up to the last chunk, never past it.
        let mut rest = [0u32; 60];
        assert!(map.take(60, |i, c| rest[i] = c));
        assert_eq!(rest[59], 129);
        assert_eq!(map.free(), 0);
        assert!(!map.take(1, |_, _| ()));
        assert!(ChunkMap::init(&mut [0u64; 2], 130, &mut free, &mut reserved).is_none());
    }

    #[test]
    fn reserved_chunks_are_counted_not_named() {
        let mut words = [0u64; 3];
        let (mut free, mut reserved) = (0, 0);
        let mut map = ChunkMap::init(&mut words, 130, &mut free, &mut reserved).unwrap();
        // A reservation draws on the free count, all or nothing.
        assert!(map.reserve(100));
        assert_eq!((map.free(), map.reserved()), (30, 100));
        assert!(!map.reserve(31));
        assert_eq!((map.free(), map.reserved()), (30, 100));
        // Taking sees only what is left, though more bits are clear.
        assert!(!map.take(31, |_, _| panic!("nothing may be taken")));
        let mut got = [0u32; 30];
        assert!(map.take(30, |i, c| got[i] = c));
        assert_eq!((got[0], got[29]), (0, 29));
        assert_eq!(map.free(), 0);
        assert!(!map.reserve(1));
        // Given back, the count is free again; and never twice.
        assert!(!map.unreserve(101));
        assert!(map.unreserve(60));
        assert_eq!((map.free(), map.reserved()), (60, 40));
        assert!(map.take(60, |_, _| ()));
        assert!(map.give(3));
        assert!(map.unreserve(40));
        assert!(!map.unreserve(1));
        assert_eq!((map.free(), map.reserved()), (41, 0));
        // Every chunk comes back: the bitmap and the counts agree.
        for c in 0..90 {
            if c != 3 {
                assert!(map.give(c));
            }
        }
        assert_eq!(map.free(), 130);
        assert!(map.reserve(130));
        assert!(!map.take(1, |_, _| ()));
    }

    use super::*;

    #[test]
    fn sizes_in_range_and_errors_named() {
        assert_eq!(vram_bytes(DEFAULT_VRAM_MIB.into()), Ok(64 << 20));
        assert_eq!(vram_bytes(1), Ok(1 << 20));
        assert_eq!(vram_bytes(1024), Ok(1 << 30));
        for bad in [0, 1025, u64::from(u32::MAX), 1 << 32] {
            let e = vram_bytes(bad).unwrap_err();
            assert_eq!((e.field, e.value, e.min, e.max), ("vram_mib", bad, 1, 1024));
        }
        // Whole chunks.
        assert_eq!(vram_bytes(3).unwrap() % CHUNK_BYTES, 0);
    }

    #[test]
    fn bandwidth_in_range() {
        assert_eq!(bandwidth_mbps(DEFAULT_BANDWIDTH_MBPS.into()), Ok(12_000));
        for bad in [0, 1_000_001] {
            let e = bandwidth_mbps(bad).unwrap_err();
            assert_eq!(
                (e.field, e.min, e.max),
                ("vram_bandwidth_mbps", 1, 1_000_000)
            );
        }
    }

    #[test]
    fn every_case_holds() {
        assert_eq!(cases(), Ok(()));
    }
}
