// SPDX-License-Identifier: GPL-2.0

//! The resource finder: contiguous free runs in resource bitmaps.
//!
//! First-class resources (register blocks, shared memory) are allocated as
//! one contiguous range, so dispatch needs, per resource, the largest free
//! run (does a work-group fit?) and where a run of a given length starts
//! (where does it go?).
//!
//! Bitmaps follow the Linux convention: a `&[u64]`, bit `i` in word `i / 64`
//! at position `i % 64`, a set bit meaning *in use*. Only the first `nbits`
//! bits are looked at; bits at or beyond `nbits`, whatever their value, and
//! bits beyond the end of the slice count as in use. Starts and lengths are
//! in bits (blocks).
//!
//! The exact finders apply the shift-and-AND of the hardware finder to a whole
//! word at once: with `f` the free bits of a word, `f & (f >> 1)` marks the
//! starts of free pairs, `& (.. >> 2)` of runs of four, and so on, so a run of
//! `k` costs O(log k) word operations per word. Runs crossing word boundaries
//! are carried from word to word as a count of trailing free bits. The grouped
//! and sampled variants trade misses for cheaper hardware and are kept so that
//! their miss rates can be measured against the exact finder; [`PackedFinder`]
//! is the time-multiplexed (packed) finder.

/// Number of `u64` words a bitmap of `nbits` bits needs.
pub const fn map_words(nbits: usize) -> usize {
    nbits.div_ceil(64)
}

/// `nbits` limited to what the slice holds, so later indexing cannot fail.
fn clamp_bits(map: &[u64], nbits: usize) -> usize {
    nbits.min(map.len().saturating_mul(64))
}

/// Free bits of word `i` (ones where free); bits at or beyond `nbits` read
/// as in use. `i * 64 < nbits <= map.len() * 64` must hold.
fn free_word(map: &[u64], nbits: usize, i: usize) -> u64 {
    let f = !map[i];
    let rem = nbits - i * 64;
    if rem >= 64 {
        f
    } else {
        f & ((1u64 << rem) - 1)
    }
}

/// Keeps only the whole free groups of `1 << shift` bits: AND-reduce
/// each aligned group, then spread the result back over the group, so the
/// exact finders can run unchanged on the result.
fn whole_groups(f: u64, shift: u32) -> u64 {
    if shift == 0 {
        return f;
    }
    let g = 1u32 << shift;
    let mut a = f;
    let mut s = 1;
    while s < g {
        a &= a >> s;
        s <<= 1;
    }
    // One bit at the start of every group: 0x5555.., 0x1111.., 0x0101.., ..
    a &= if g == 64 {
        1
    } else {
        !0u64 / ((1u64 << g) - 1)
    };
    let mut s = 1;
    while s < g {
        a |= a << s;
        s <<= 1;
    }
    a
}

/// Bit `j` set iff bits `j..j + len` of `f` are all set (`1 <= len <= 64`);
/// vacated bits shift in as zero, so windows running off the top never
/// match. Each step doubles the window, the last one tops it up.
fn word_windows(f: u64, len: u32) -> u64 {
    let mut a = f;
    let mut have = 1;
    while have < len {
        let step = have.min(len - have);
        a &= a >> step;
        have += step;
    }
    a
}

/// Longest run of ones in `f`, as (lowest start, length); `f` must be
/// neither 0 nor all ones. `cur` marks the starts of runs of the length
/// found so far; each step tries to extend them by two bits at once
/// through the free-pair mask (runs are short on a busy map, so this takes
/// about half as many steps as the longest run, each two operations), and
/// the last step by one.
fn word_longest(f: u64) -> (u32, u32) {
    let pairs = f & (f >> 1);
    if pairs == 0 {
        return (f.trailing_zeros(), 1);
    }
    let (mut cur, mut len) = (pairs, 2u32);
    // A run of 64 needs f all ones: len stays below 64 here.
    while len < 63 {
        let next = cur & (pairs >> len);
        if next == 0 {
            break;
        }
        cur = next;
        len += 2;
    }
    let one = cur & (f >> len.min(63));
    if len < 64 && one != 0 {
        cur = one;
        len += 1;
    }
    (cur.trailing_zeros(), len)
}

/// Whether `f` may hold a run of `len` free bits (`2 <= len <= 64`): any
/// such run covers a whole aligned lane of `w` bits, `w` the largest power
/// of two with `2w − 1 <= len`, so a word without an all-free lane cannot
/// hold it (the classic zero-lane test on the used bits, exact for "some
/// lane is zero"). Runs crossing into the next word are found by the
/// callers' carry, not here.
fn may_hold(f: u64, len: usize) -> bool {
    let w = match len {
        0..=2 => return f != 0,
        3..=6 => 2,
        7..=14 => 4,
        15..=30 => 8,
        31..=62 => 16,
        _ => 32,
    };
    let used = !f;
    let (low, high) = match w {
        2 => (0x5555_5555_5555_5555u64, 0xaaaa_aaaa_aaaa_aaaau64),
        4 => (0x1111_1111_1111_1111, 0x8888_8888_8888_8888),
        8 => (0x0101_0101_0101_0101, 0x8080_8080_8080_8080),
        16 => (0x0001_0001_0001_0001, 0x8000_8000_8000_8000),
        _ => (0x0000_0001_0000_0001, 0x8000_0000_8000_0000),
    };
    used.wrapping_sub(low) & !used & high != 0
}

/// [`first_free_run`] on the map as seen through [`whole_groups`].
fn first_run(map: &[u64], nbits: usize, len: usize, shift: u32) -> Option<usize> {
    let nbits = clamp_bits(map, nbits);
    if len == 0 {
        return Some(0);
    }
    if len > nbits {
        return None;
    }
    // Whole-map reject: a run of `len` covers an aligned free lane in
    // some word (crossing runs too), so without one there is none. One
    // tight pass, which is where a failing search on a long map spends
    // its time otherwise.
    if shift == 0 && (3..64).contains(&len) {
        let full = nbits / 64;
        let any = map
            .get(..full)
            .is_some_and(|w| w.iter().any(|&w| may_hold(!w, len)))
            || (full < map_words(nbits) && may_hold(free_word(map, nbits, full), len));
        if !any {
            return None;
        }
    }
    // Free bits ending at the top of the previous word.
    let mut run = 0;
    for i in 0..map_words(nbits) {
        let f = whole_groups(free_word(map, nbits, i), shift);
        let base = i * 64;
        if f == !0 {
            run += 64;
            if run >= len {
                return Some(base + 64 - run);
            }
            continue;
        }
        if run + f.trailing_ones() as usize >= len {
            return Some(base - run);
        }
        // Cheap rejects before the shifts: no whole free lane a run of
        // `len` would cover, or too few free bits in this word.
        if len < 64 && may_hold(f, len) && f.count_ones() as usize >= len {
            let w = word_windows(f, len as u32);
            if w != 0 {
                return Some(base + w.trailing_zeros() as usize);
            }
        }
        run = f.leading_ones() as usize;
    }
    None
}

/// [`largest_free_run`] on the map as seen through [`whole_groups`].
fn largest_run(map: &[u64], nbits: usize, shift: u32) -> Option<(usize, usize)> {
    let nbits = clamp_bits(map, nbits);
    let (mut best_start, mut best_len) = (0, 0);
    let (mut run_start, mut run) = (0, 0);
    // Runs are met in order of their start and only a strictly longer one
    // replaces the best, which keeps the lowest start among equals.
    for i in 0..map_words(nbits) {
        let f = whole_groups(free_word(map, nbits, i), shift);
        let base = i * 64;
        if run == 0 {
            run_start = base;
        }
        if f == !0 {
            run += 64;
            continue;
        }
        let head = f.trailing_ones();
        run += head as usize;
        if run > best_len {
            (best_start, best_len) = (run_start, run);
        }
        let tail = f.leading_ones();
        // Runs touching neither end of the word; there is a used bit
        // between head and tail, so they do not overlap.
        let inner = ((f >> head) << head << tail) >> tail;
        // Only a run longer than the best counts: reject the word unless
        // it may hold one of best + 1.
        if inner.count_ones() as usize > best_len && may_hold(inner, (best_len + 1).min(64)) {
            let (j, l) = word_longest(inner);
            if l as usize > best_len {
                (best_start, best_len) = (base + j as usize, l as usize);
            }
        }
        run = tail as usize;
        run_start = base + 64 - run;
    }
    if run > best_len {
        (best_start, best_len) = (run_start, run);
    }
    if best_len == 0 {
        None
    } else {
        Some((best_start, best_len))
    }
}

/// Start and length of the longest run of free bits among the first
/// `nbits`; the lowest start among runs of equal length. `None` when no bit
/// is free. Exact, word-parallel.
pub fn largest_free_run(map: &[u64], nbits: usize) -> Option<(usize, usize)> {
    largest_run(map, nbits, 0)
}

/// Lowest start of `len` consecutive free bits among the first `nbits`,
/// `None` if there is none. A length of 0 always gives `Some(0)`: an empty
/// range fits anywhere, which keeps "need <= largest run" and "a start is
/// found" the same test. Exact, word-parallel.
#[inline]
pub fn first_free_run(map: &[u64], nbits: usize, len: usize) -> Option<usize> {
    if len == 1 {
        return first_free_bit(map, nbits);
    }
    first_run(map, nbits, len, 0)
}

/// The first free bit among the first `nbits`, one test per word: no
/// slower than a plain scan, which stops at the first free bit too. A
/// first free bit at or past `nbits` means none is free below it.
#[inline]
fn first_free_bit(map: &[u64], nbits: usize) -> Option<usize> {
    let mut base = 0;
    for &w in map {
        if base >= nbits {
            break;
        }
        if w != !0 {
            let bit = base + (!w).trailing_zeros() as usize;
            return (bit < nbits).then_some(bit);
        }
        base += 64;
    }
    None
}

/// Number of free bits among the first `nbits`.
pub fn count_free(map: &[u64], nbits: usize) -> usize {
    let nbits = clamp_bits(map, nbits);
    (0..map_words(nbits))
        .map(|i| free_word(map, nbits, i).count_ones() as usize)
        .sum()
}

/// Sets (`fill = !0`) or clears (`fill = 0`) bits `start..start + len`,
/// cut off at the end of the slice.
fn fill_range(map: &mut [u64], start: usize, len: usize, fill: u64) {
    let end = start.saturating_add(len).min(map.len().saturating_mul(64));
    if start >= end {
        return;
    }
    let (first, last) = (start / 64, (end - 1) / 64);
    let head = !0u64 << (start % 64);
    let tail = !0u64 >> (63 - (end - 1) % 64);
    let put = |w: &mut u64, mask: u64| *w = (*w & !mask) | (fill & mask);
    if first == last {
        put(&mut map[first], head & tail);
        return;
    }
    put(&mut map[first], head);
    for w in &mut map[first + 1..last] {
        *w = fill;
    }
    put(&mut map[last], tail);
}

/// Marks bits `start..start + len` in use (allocation). Bits beyond the end
/// of the slice are ignored rather than panicking, as this runs in the
/// kernel; callers pass ranges the finders returned.
pub fn set_range(map: &mut [u64], start: usize, len: usize) {
    fill_range(map, start, len, !0);
}

/// Marks bits `start..start + len` free (release). Bits beyond the end of
/// the slice are ignored, as in [`set_range`].
pub fn clear_range(map: &mut [u64], start: usize, len: usize) {
    fill_range(map, start, len, 0);
}

/// Which finder answers a query: the exact one or one of the approximate
/// hardware variants (grouped, sampled). Approximate finders may miss a run
/// that exists but never report one that does not: every range they return is
/// really free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinderKind {
    /// Exact answers.
    Exact,
    /// Grouped variant: the map is cut into aligned groups of `group`
    /// bits, a group counts as free only when all its bits are, and runs
    /// are made of whole free groups. Lengths are rounded up to a multiple
    /// of `group` and starts are multiples of `group`. The document
    /// suggests groups of 4. `group` should be a power of two up to 64 so
    /// groups never straddle words; other values are rounded down to one
    /// (0 acts as 1, above 64 as 64).
    Grouped {
        /// Bits per group.
        group: u32,
    },
    /// Sampled variant: only windows whose length is a power of two
    /// are tried, i.e. exactly the terms the doubling trick produces, so
    /// the largest run is reported rounded down to a power of two and a
    /// request for `len` bits looks for `len.next_power_of_two()`. The sampled
    /// hardware finder's optional exclusion of low-probability values (e.g.
    /// primes) is not applied: the sampled shift counts are `2^i - 1`
    /// (0, 1, 3, 7, ...), and 3, 7, 31 and 127 among them are primes, so
    /// excluding primes would leave only 0, 1, 15 and 63 below 255.
    Sampled,
    /// Exact answers from the time-multiplexed finder: a placement's
    /// searches packed into periods of [`PACK_WIDTH`] bits, one pass each
    /// ([`packed_first_runs`]); matching a module (its largest runs) as
    /// the exact finder.
    Packed,
}

impl FinderKind {
    /// `log2` of the group size [`FinderKind::Grouped`] really uses; 0 for
    /// the other kinds.
    fn group_shift(self) -> u32 {
        match self {
            FinderKind::Grouped { group } => group.clamp(1, 64).ilog2(),
            _ => 0,
        }
    }

    /// Whether it answers exactly: finds a run whenever one exists, at
    /// the lowest start.
    pub fn is_exact(self) -> bool {
        matches!(self, FinderKind::Exact | FinderKind::Packed)
    }

    /// The length this finder really searches for when asked for `len`
    /// bits: `len` rounded up to a whole number of groups (grouped) or to a
    /// power of two (sampled); `len` itself for the exact finder. A request
    /// matches under this finder iff its largest reported run is at least
    /// `search_len(len)`.
    pub fn search_len(self, len: usize) -> usize {
        match self {
            FinderKind::Exact | FinderKind::Packed => len,
            FinderKind::Grouped { .. } => {
                let g = (1usize << self.group_shift()) - 1;
                len.checked_add(g).map_or(usize::MAX, |l| l & !g)
            }
            FinderKind::Sampled => len.checked_next_power_of_two().unwrap_or(usize::MAX),
        }
    }
}

/// Start of a free range of at least `len` bits as found by `kind`, `None`
/// if that finder finds none. The exact finder returns the lowest start;
/// the approximate ones the lowest start of a run of
/// [`FinderKind::search_len`] bits (group-aligned for the grouped finder).
/// `len == 0` gives `Some(0)`. Lets a benchmark compare finders on the same
/// maps.
pub fn finds(kind: FinderKind, map: &[u64], nbits: usize, len: usize) -> Option<usize> {
    if len == 0 {
        return Some(0);
    }
    if len > clamp_bits(map, nbits) {
        return None;
    }
    first_run(map, nbits, kind.search_len(len), kind.group_shift())
}

/// Largest free run as reported by `kind`, as (start, length). Exact: the
/// true largest run. Grouped: the longest run of whole free groups. Sampled:
/// the largest power of two not above the true largest run, at the lowest
/// start where that many bits are free (in software this costs an exact
/// pass plus a search; the variant exists to reproduce the sampled
/// hardware finder's answers, not to save time here).
pub fn finds_largest(kind: FinderKind, map: &[u64], nbits: usize) -> Option<(usize, usize)> {
    match kind {
        FinderKind::Exact | FinderKind::Packed | FinderKind::Grouped { .. } => {
            largest_run(map, nbits, kind.group_shift())
        }
        FinderKind::Sampled => {
            let (_, len) = largest_run(map, nbits, 0)?;
            // `checked_ilog2` rather than `ilog2`: no panic path in the kernel.
            let p = 1usize << len.checked_ilog2()?;
            Some((first_run(map, nbits, p, 0)?, p))
        }
    }
}

/// Width of the time-multiplexed finder's word (`E` in the design document).
pub const PACK_WIDTH: usize = 128;
/// Most resource bitmaps one [`PackedFinder`] period holds: enough for all
/// per-unit and per-module resources of one module.
pub const PACK_MAX_FIELDS: usize = 8;

/// `n` ones starting at bit `lo` (`lo + n <= 128`).
fn span(lo: usize, n: usize) -> u128 {
    if n == 0 {
        0
    } else {
        (!0u128 >> (128 - n)) << lo
    }
}

/// Time-multiplexed finder: the free bits of several small bitmaps
/// packed side by side into one 128-bit word and searched together.
///
/// The doubling shifts run once over the whole word for every field. They let
/// bits of one field slide into the next; rather than masking every shift (the
/// hardware finder's per-group masks), the final window bits are ANDed with
/// each field's valid starts, which removes every window crossing a field edge
/// and gives the same answers. Exact for every field: packing loses nothing, it
/// only shares the work. A field holds at most 128 bits (a 128-bit resource
/// takes a whole period).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PackedFinder {
    free: u128,
    offset: [u8; PACK_MAX_FIELDS],
    width: [u8; PACK_MAX_FIELDS],
    count: usize,
    used: usize,
}

impl PackedFinder {
    /// An empty period.
    pub const fn new() -> Self {
        Self {
            free: 0,
            offset: [0; PACK_MAX_FIELDS],
            width: [0; PACK_MAX_FIELDS],
            count: 0,
            used: 0,
        }
    }

    /// Adds the first `nbits` bits of `map` as the next field (bitmap
    /// convention of this module); returns its index, or `None` when the
    /// period has no room left (too many fields or bits) and the bitmap
    /// must wait for another period.
    pub fn push(&mut self, map: &[u64], nbits: usize) -> Option<usize> {
        let nbits = clamp_bits(map, nbits);
        if self.count == PACK_MAX_FIELDS || self.used + nbits > PACK_WIDTH {
            return None;
        }
        let mut f = 0u128;
        for i in 0..map_words(nbits) {
            f |= u128::from(free_word(map, nbits, i)) << (64 * i);
        }
        let k = self.count;
        if nbits > 0 {
            self.free |= f << self.used;
        }
        self.offset[k] = self.used as u8;
        self.width[k] = nbits as u8;
        self.count += 1;
        self.used += nbits;
        Some(k)
    }

    /// Number of fields pushed.
    pub fn fields(&self) -> usize {
        self.count
    }

    /// `pow[i]`: bit `j` set iff packed bits `j..j + 2^i` are all free,
    /// edges between fields ignored.
    fn powers(&self) -> [u128; 8] {
        self.powers_upto(8)
    }

    /// The first `levels` of [`PackedFinder::powers`] (the others are
    /// left as the free bits): enough for lengths below `2^levels`.
    fn powers_upto(&self, levels: usize) -> [u128; 8] {
        let mut pow = [self.free; 8];
        for i in 1..levels.min(8) {
            pow[i] = pow[i - 1] & (pow[i - 1] >> (1 << (i - 1)));
        }
        pow
    }

    /// Start bits of windows of `len` bits lying inside field `k`.
    fn starts(&self, k: usize, len: usize) -> u128 {
        let (off, w) = (self.offset[k] as usize, self.width[k] as usize);
        if len > w {
            0
        } else {
            span(off, w - len + 1)
        }
    }

    /// For each field `k < min(fields, lens.len(), out.len())`, the lowest
    /// start (within that field's own bitmap) of `lens[k]` free bits, or
    /// `None`; `Some(0)` for a length of 0, as [`first_free_run`].
    pub fn first_free_runs(&self, lens: &[usize], out: &mut [Option<usize>]) {
        // Only the powers of two the longest length is made of.
        let longest = lens.iter().take(self.count).copied().max().unwrap_or(0);
        let pow = self.powers_upto((usize::BITS - longest.leading_zeros()) as usize);
        for (k, (&len, o)) in lens.iter().zip(out.iter_mut()).enumerate().take(self.count) {
            *o = if len == 0 {
                Some(0)
            } else if len > self.width[k] as usize {
                None
            } else {
                // Windows of `len` from the powers of two in `len`.
                let (mut acc, mut shift) = (!0u128, 0);
                for (i, p) in pow.iter().enumerate() {
                    if len & (1 << i) != 0 {
                        acc &= p >> shift;
                        shift += 1 << i;
                    }
                }
                let w = acc & self.starts(k, len);
                (w != 0).then(|| w.trailing_zeros() as usize - self.offset[k] as usize)
            };
        }
    }

    /// For each field `k < min(fields, out.len())`, its largest free run as
    /// (start within the field, length), lowest start among equals, as
    /// [`largest_free_run`]; `None` if the field has no free bit.
    pub fn largest_free_runs(&self, out: &mut [Option<(usize, usize)>]) {
        let pow = self.powers();
        for (k, o) in out.iter_mut().enumerate().take(self.count) {
            let mut cur = self.free & self.starts(k, 1);
            if cur == 0 {
                *o = None;
                continue;
            }
            let mut len = 1;
            for i in (0..8).rev() {
                let t = cur & (pow[i] >> len) & self.starts(k, len + (1 << i));
                if t != 0 {
                    cur = t;
                    len += 1 << i;
                }
            }
            *o = Some((cur.trailing_zeros() as usize - self.offset[k] as usize, len));
        }
    }
}

/// One search of the time-multiplexed finder: the lowest start of `len`
/// free bits in the first `nbits` bits of `map`.
#[derive(Clone, Copy, Debug)]
pub struct Search<'a> {
    /// The resource's bitmap (this module's convention: set bits used).
    pub map: &'a [u64],
    /// Its bits.
    pub nbits: usize,
    /// The run looked for.
    pub len: usize,
}

/// The time-multiplexed finder over several resources, period by period:
/// the searches are packed in their order into periods of [`PACK_WIDTH`]
/// bits (a period takes the next searches while their maps fit, at most
/// [`PACK_MAX_FIELDS`] of them; a 128-bit map takes a whole period, a
/// wider one is searched alone by the exact finder), and each period is
/// searched in one pass ([`PackedFinder::first_free_runs`]). Writes each
/// search's answer to `out` (as [`first_free_run`]: the lowest start, or
/// `None`) and returns the number of passes. A search for 0 bits is
/// answered without one.
pub fn packed_first_runs(searches: &[Search<'_>], out: &mut [Option<usize>]) -> usize {
    packed_first_runs_each(searches.iter().copied(), |i, answer| {
        if let Some(o) = out.get_mut(i) {
            *o = answer;
        }
    })
}

/// [`packed_first_runs`] over searches as they come, each answer given to
/// `answer` with the search's position (in no particular order): what the
/// placement path uses, without arrays of searches and answers.
pub fn packed_first_runs_each<'a>(
    searches: impl Iterator<Item = Search<'a>>,
    mut answer: impl FnMut(usize, Option<usize>),
) -> usize {
    let mut passes = 0;
    let mut period = PackedFinder::new();
    // The period's fields: their lengths and their searches' positions.
    let mut lens = [0usize; PACK_MAX_FIELDS];
    let mut index = [0usize; PACK_MAX_FIELDS];
    for (i, s) in searches.enumerate() {
        if s.len == 0 {
            answer(i, Some(0));
            continue;
        }
        if clamp_bits(s.map, s.nbits) > PACK_WIDTH {
            answer(i, first_free_run(s.map, s.nbits, s.len));
            passes += 1;
            continue;
        }
        let k = match period.push(s.map, s.nbits) {
            Some(k) => k,
            None => {
                // The period is full: search it, start the next (an empty
                // period takes any map of up to its width).
                search_period(&period, &lens, &index, &mut answer);
                passes += 1;
                period = PackedFinder::new();
                match period.push(s.map, s.nbits) {
                    Some(k) => k,
                    // Never for a map this narrow; answered alone then.
                    None => {
                        answer(i, first_free_run(s.map, s.nbits, s.len));
                        passes += 1;
                        continue;
                    }
                }
            }
        };
        if let (Some(l), Some(x)) = (lens.get_mut(k), index.get_mut(k)) {
            *l = s.len;
            *x = i;
        }
    }
    if period.fields() > 0 {
        search_period(&period, &lens, &index, &mut answer);
        passes += 1;
    }
    passes
}

/// One pass over `period`, whose field `k` looks for `lens[k]` bits for
/// the search at position `index[k]`: each answer to `answer`.
fn search_period(
    period: &PackedFinder,
    lens: &[usize; PACK_MAX_FIELDS],
    index: &[usize; PACK_MAX_FIELDS],
    answer: &mut impl FnMut(usize, Option<usize>),
) {
    let n = period.fields();
    let mut answers = [None; PACK_MAX_FIELDS];
    period.first_free_runs(lens.get(..n).unwrap_or(&[]), &mut answers);
    for (&i, a) in index.iter().zip(answers).take(n) {
        answer(i, a);
    }
}

/// Naive references, one bit at a time: what the tests check the finders
/// against and what the benchmarks compare them with.
pub mod naive {
    /// Whether bit `i` is in use; bits at or past `nbits` or past the end
    /// of `map` count as used.
    pub fn is_used(map: &[u64], nbits: usize, i: usize) -> bool {
        i >= nbits || i / 64 >= map.len() || map[i / 64] >> (i % 64) & 1 == 1
    }

    /// Lowest start of `len` free bits, scanning bit by bit.
    pub fn first_free_run(map: &[u64], nbits: usize, len: usize) -> Option<usize> {
        if len == 0 {
            return Some(0);
        }
        let mut run = 0;
        for i in 0..nbits {
            if is_used(map, nbits, i) {
                run = 0;
            } else {
                run += 1;
                if run == len {
                    return Some(i + 1 - len);
                }
            }
        }
        None
    }

    /// Longest free run (lowest start among equals), scanning bit by bit.
    pub fn largest_free_run(map: &[u64], nbits: usize) -> Option<(usize, usize)> {
        let (mut best, mut run) = (None, 0);
        for i in 0..nbits {
            if is_used(map, nbits, i) {
                run = 0;
            } else {
                run += 1;
                if best.is_none_or(|(_, l)| run > l) {
                    best = Some((i + 1 - run, run));
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::naive::{
        first_free_run as ref_first,
        is_used as used,
        largest_free_run as ref_largest, //
    };

    /// Lowest start that is a multiple of `g` with `g`-aligned `len` bits free.
    fn ref_grouped_first(map: &[u64], nbits: usize, len: usize, g: usize) -> Option<usize> {
        let len = len.div_ceil(g) * g;
        (0..nbits)
            .step_by(g)
            .find(|&s| s + len <= nbits && (s..s + len).all(|i| !used(map, nbits, i)))
    }

    fn ref_grouped_largest(map: &[u64], nbits: usize, g: usize) -> Option<(usize, usize)> {
        let (mut best, mut run) = (None, 0);
        for s in (0..nbits).step_by(g) {
            if (s..s + g).all(|i| !used(map, nbits, i)) {
                run += g;
                if best.is_none_or(|(_, l)| run > l) {
                    best = Some((s + g - run, run));
                }
            } else {
                run = 0;
            }
        }
        best
    }

    fn all_free(map: &[u64], nbits: usize, start: usize, len: usize) -> bool {
        (start..start + len).all(|i| !used(map, nbits, i))
    }

    use super::super::rng::Rng;

    const MAXW: usize = 65;
    const DENSITIES: usize = 5;

    /// A random map of `nbits` bits in `MAXW` words; words and bits past
    /// `nbits` get garbage: random, all set or all clear.
    fn random_map(rng: &mut Rng, nbits: usize, density: usize) -> [u64; MAXW] {
        let mut m = [0u64; MAXW];
        match density {
            0 => m.iter_mut().for_each(|w| *w = rng.next_u64()),
            // Sparse: about 1 bit in 16 used.
            1 => m.iter_mut().for_each(|w| {
                *w = rng.next_u64() & rng.next_u64() & rng.next_u64() & rng.next_u64()
            }),
            // Dense: about 1 bit in 16 free.
            2 => m.iter_mut().for_each(|w| {
                *w = rng.next_u64() | rng.next_u64() | rng.next_u64() | rng.next_u64()
            }),
            // Fragmented: alternating used and free runs of 1..300 bits.
            3 | 4 => {
                let (mut i, mut busy) = (0, rng.next_u64() & 1 == 1);
                while i < MAXW * 64 {
                    let n = if density == 3 {
                        1 + rng.below_u64(300)
                    } else {
                        1 + rng.below_u64(70)
                    } as usize;
                    if busy {
                        set_range(&mut m, i, n);
                    }
                    i += n;
                    busy = !busy;
                }
            }
            _ => unreachable!(),
        }
        let tail = nbits.min(MAXW * 64);
        match rng.below_u64(3) {
            0 => set_range(&mut m, tail, usize::MAX),
            1 => clear_range(&mut m, tail, usize::MAX),
            _ => {}
        }
        m
    }

    fn check_exact(map: &[u64], nbits: usize, lens: impl Iterator<Item = usize>) {
        let best = ref_largest(map, nbits);
        assert_eq!(
            largest_free_run(map, nbits),
            best,
            "largest, nbits {nbits}, {map:x?}"
        );
        let l = best.map_or(0, |b| b.1);
        for len in lens.chain([l, l + 1, nbits, nbits + 1]) {
            assert_eq!(
                first_free_run(map, nbits, len),
                ref_first(map, nbits, len),
                "first len {len}, nbits {nbits}, {map:x?}"
            );
        }
    }

    #[test]
    fn every_16_bit_map() {
        for m in 0..=0xffffu64 {
            // Alone, with garbage above; and straddling words 0 and 1 at
            // bits 56..72 behind used bits, with garbage above.
            let garbage = if m & 1 == 0 { !0 << 16 } else { 0x5a5a_0000 };
            let a = [m | garbage];
            let b = [
                (m << 56) | 0x00ff_ffff_ffff_ffff,
                (m >> 8) | 0xdead_0000_0000_ff00,
            ];
            let best = ref_largest(&a, 16);
            assert_eq!(largest_free_run(&a, 16), best, "{m:#x}");
            assert_eq!(
                largest_free_run(&b, 72),
                best.map(|(s, l)| (s + 56, l)),
                "{m:#x}"
            );
            assert_eq!(count_free(&a, 16), m.count_zeros() as usize - 48);
            for len in 1..=17 {
                let want = ref_first(&a, 16, len);
                assert_eq!(first_free_run(&a, 16, len), want, "{m:#x} len {len}");
                assert_eq!(
                    first_free_run(&b, 72, len),
                    want.map(|s| s + 56),
                    "{m:#x} len {len}"
                );
            }
        }
    }

    #[test]
    fn every_16_bit_map_approximate() {
        for m in 0..=0xffffu64 {
            let a = [m];
            let exact = ref_largest(&a, 16).map_or(0, |b| b.1);
            for len in 1..=17 {
                for g in [2, 4] {
                    let kind = FinderKind::Grouped { group: g };
                    let got = finds(kind, &a, 16, len);
                    assert_eq!(
                        got,
                        ref_grouped_first(&a, 16, len, g as usize),
                        "{m:#x} {len} {g}"
                    );
                    if let Some(s) = got {
                        assert!(all_free(&a, 16, s, len));
                    }
                }
                let got = finds(FinderKind::Sampled, &a, 16, len);
                assert_eq!(
                    got,
                    ref_first(&a, 16, len.next_power_of_two()),
                    "{m:#x} {len}"
                );
                if let Some(s) = got {
                    assert!(all_free(&a, 16, s, len));
                }
            }
            for g in [2, 4] {
                let got = finds_largest(FinderKind::Grouped { group: g }, &a, 16);
                assert_eq!(got, ref_grouped_largest(&a, 16, g as usize), "{m:#x} {g}");
            }
            let got = finds_largest(FinderKind::Sampled, &a, 16);
            assert!(got
                .is_none_or(|(s, l)| l.is_power_of_two() && l <= exact && all_free(&a, 16, s, l)));
            assert_eq!(
                got.map_or(0, |g| g.1),
                if exact == 0 { 0 } else { 1 << exact.ilog2() }
            );
        }
    }

    #[test]
    fn random_maps() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for nbits in [1, 63, 64, 65, 127, 128, 129, 1000, 4095, 4096, 4097] {
            let maps = if nbits > 1000 { 12 } else { 40 };
            for density in 0..DENSITIES {
                for _ in 0..maps {
                    let m = random_map(&mut rng, nbits, density);
                    let lens = (1..=70).chain([127, 128, 129, 200, 256, 257, 300, 1000]);
                    check_exact(&m, nbits, lens);
                    let want = (0..nbits).filter(|&i| !used(&m, nbits, i)).count();
                    assert_eq!(count_free(&m, nbits), want);
                }
            }
        }
    }

    #[test]
    fn random_maps_approximate() {
        let mut rng = Rng(42);
        for nbits in [100, 128, 1000, 4096] {
            for density in 0..DENSITIES {
                for _ in 0..4 {
                    let m = random_map(&mut rng, nbits, density);
                    for g in [1, 2, 4, 8, 16, 32, 64] {
                        let kind = FinderKind::Grouped { group: g };
                        let gs = g as usize;
                        assert_eq!(
                            finds_largest(kind, &m, nbits),
                            ref_grouped_largest(&m, nbits, gs)
                        );
                        for len in (1..=80).chain([128, 300, 1000]) {
                            let got = finds(kind, &m, nbits, len);
                            assert_eq!(
                                got,
                                ref_grouped_first(&m, nbits, len, gs),
                                "g {g} len {len}"
                            );
                            assert!(got.is_none_or(|s| s % gs == 0 && all_free(&m, nbits, s, len)));
                            // Same as exact whenever the exact answer for
                            // the rounded length is aligned.
                            let l = kind.search_len(len);
                            if let Some(s) = ref_first(&m, nbits, l).filter(|s| s % gs == 0) {
                                assert_eq!(got, Some(s));
                            }
                        }
                    }
                    for len in 1..=300 {
                        let got = finds(FinderKind::Sampled, &m, nbits, len);
                        assert_eq!(got, ref_first(&m, nbits, len.next_power_of_two()));
                        assert!(got.is_none_or(|s| all_free(&m, nbits, s, len)));
                    }
                    let exact = ref_largest(&m, nbits);
                    let got = finds_largest(FinderKind::Sampled, &m, nbits);
                    let want = exact.map(|(_, l)| 1 << l.ilog2());
                    assert_eq!(got.map(|g| g.1), want);
                    assert_eq!(got.map(|g| g.0), want.and_then(|l| ref_first(&m, nbits, l)));
                    assert_eq!(finds_largest(FinderKind::Exact, &m, nbits), exact);
                    assert_eq!(
                        finds(FinderKind::Exact, &m, nbits, 5),
                        ref_first(&m, nbits, 5)
                    );
                }
            }
        }
    }

    #[test]
    fn edges() {
        let free = [0u64; 4];
        let full = [!0u64; 4];
        assert_eq!(largest_free_run(&free, 256), Some((0, 256)));
        assert_eq!(largest_free_run(&free, 200), Some((0, 200)));
        assert_eq!(first_free_run(&free, 256, 256), Some(0));
        assert_eq!(first_free_run(&free, 256, 257), None);
        assert_eq!(largest_free_run(&full, 256), None);
        assert_eq!(first_free_run(&full, 256, 1), None);
        assert_eq!(count_free(&free, 200), 200);
        // Length 0 fits anywhere, even in an empty or full map.
        assert_eq!(first_free_run(&full, 256, 0), Some(0));
        assert_eq!(first_free_run(&[], 0, 0), Some(0));
        assert_eq!(largest_free_run(&[], 0), None);
        assert_eq!(largest_free_run(&free, 0), None);
        // nbits beyond the slice: the missing bits are in use.
        assert_eq!(largest_free_run(&free[..1], 1000), Some((0, 64)));
        assert_eq!(first_free_run(&free[..1], 1000, 65), None);
        assert_eq!(count_free(&free[..1], 1000), 64);
        // A run crossing two word edges, and one just before it.
        let mut m = [!0u64; 4];
        clear_range(&mut m, 3, 60);
        clear_range(&mut m, 100, 100);
        assert_eq!(largest_free_run(&m, 256), Some((100, 100)));
        assert_eq!(first_free_run(&m, 256, 60), Some(3));
        assert_eq!(first_free_run(&m, 256, 61), Some(100));
        assert_eq!(first_free_run(&m, 256, 100), Some(100));
        assert_eq!(largest_free_run(&m, 150), Some((3, 60)));
        // Runs ending at the very end of a full last word.
        assert_eq!(first_free_run(&[1], 64, 63), Some(1));
        assert_eq!(first_free_run(&[!0, 1], 128, 63), Some(65));
        assert_eq!(largest_free_run(&[!0, 1], 128), Some((65, 63)));
        assert_eq!(first_free_run(&[1, 0], 128, 127), Some(1));
        assert_eq!(largest_free_run(&[1, 0], 128), Some((1, 127)));
        // Equal lengths: the lowest start wins, also across words.
        let mut m = [!0u64; 2];
        clear_range(&mut m, 60, 8);
        clear_range(&mut m, 100, 8);
        assert_eq!(largest_free_run(&m, 128), Some((60, 8)));
        // Garbage above nbits, set or clear, changes nothing.
        for g in [0, !0 << 10, 0x8000_0000_0000_0000] {
            let m = [g & !0x3ff | 0x0f0];
            assert_eq!(largest_free_run(&m, 10), Some((0, 4)));
            assert_eq!(first_free_run(&m, 10, 2), Some(0));
            assert_eq!(first_free_run(&m, 10, 5), None);
        }
        // The grouped finder's usual group of 4 and an odd group size.
        let mut m = [!0u64; 2];
        clear_range(&mut m, 2, 8); // 2..10 free: only group 4..8 is whole
        assert_eq!(finds(FinderKind::Grouped { group: 4 }, &m, 128, 4), Some(4));
        assert_eq!(finds(FinderKind::Grouped { group: 4 }, &m, 128, 5), None);
        assert_eq!(finds(FinderKind::Grouped { group: 6 }, &m, 128, 4), Some(4));
        assert_eq!(FinderKind::Grouped { group: 0 }.search_len(3), 3);
        assert_eq!(FinderKind::Grouped { group: 100 }.search_len(3), 64);
        assert_eq!(FinderKind::Sampled.search_len(5), 8);
        assert_eq!(FinderKind::Sampled.search_len(usize::MAX), usize::MAX);
        assert_eq!(finds(FinderKind::Sampled, &m, 128, 5), Some(2));
        assert_eq!(finds(FinderKind::Sampled, &m, 128, 9), None);
        assert_eq!(finds(FinderKind::Sampled, &m, 128, 0), Some(0));
    }

    #[test]
    fn set_and_clear_ranges() {
        let mut rng = Rng(3);
        for _ in 0..3000 {
            let mut m = [0u64; 5];
            m.iter_mut().for_each(|w| *w = rng.next_u64());
            let mut want = m;
            let start = rng.below_u64(340) as usize;
            let len = match rng.below_u64(4) {
                0 => rng.below_u64(4),
                1 => rng.below_u64(70),
                2 => usize::MAX as u64,
                _ => rng.below_u64(340),
            } as usize;
            let set = rng.next_u64() & 1 == 1;
            for i in start..start.saturating_add(len).min(320) {
                if set {
                    want[i / 64] |= 1 << (i % 64);
                } else {
                    want[i / 64] &= !(1 << (i % 64));
                }
            }
            if set {
                set_range(&mut m, start, len);
            } else {
                clear_range(&mut m, start, len);
            }
            assert_eq!(m, want, "set {set} start {start} len {len}");
        }
    }

    #[test]
    fn packed_matches_exact() {
        let mut rng = Rng(11);
        let layouts: [&[usize]; 6] = [
            &[64, 48],
            &[128],
            &[16; 8],
            &[1, 127],
            &[100, 0, 28],
            &[33, 7, 50, 20, 5, 13],
        ];
        for round in 0..400 {
            let layout = layouts[round % layouts.len()];
            let mut maps = [[0u64; 3]; PACK_MAX_FIELDS];
            let mut p = PackedFinder::new();
            for (k, &w) in layout.iter().enumerate() {
                let density = rng.below_u64(DENSITIES as u64) as usize;
                let mut m = random_map(&mut rng, w, density);
                if round % 3 == 0 {
                    m[..3].iter_mut().for_each(|x| *x ^= rng.next_u64());
                }
                maps[k].copy_from_slice(&m[..3]);
                assert_eq!(p.push(&maps[k], w), Some(k));
            }
            assert_eq!(p.fields(), layout.len());
            let mut largest = [Some((9, 9)); PACK_MAX_FIELDS];
            p.largest_free_runs(&mut largest);
            for (k, &w) in layout.iter().enumerate() {
                assert_eq!(
                    largest[k],
                    largest_free_run(&maps[k], w),
                    "{layout:?} field {k}"
                );
            }
            for len in 0..=129 {
                let mut out = [Some(999); PACK_MAX_FIELDS];
                p.first_free_runs(&[len; PACK_MAX_FIELDS], &mut out);
                for (k, &w) in layout.iter().enumerate() {
                    assert_eq!(
                        out[k],
                        first_free_run(&maps[k], w, len),
                        "{layout:?} {k} {len}"
                    );
                }
            }
            // Different lengths per field in one call.
            let mut lens = [0; PACK_MAX_FIELDS];
            lens.iter_mut()
                .for_each(|l| *l = rng.below_u64(20) as usize);
            let mut out = [None; PACK_MAX_FIELDS];
            p.first_free_runs(&lens, &mut out);
            for (k, &w) in layout.iter().enumerate() {
                assert_eq!(out[k], first_free_run(&maps[k], w, lens[k]));
            }
        }
    }

    #[test]
    fn packed_refuses_overflow() {
        let free = [0u64; 2];
        let mut p = PackedFinder::new();
        assert_eq!(p.push(&free, 64), Some(0));
        assert_eq!(p.push(&free, 65), None, "64 + 65 > 128");
        assert_eq!(p.push(&free, 64), Some(1));
        assert_eq!(p.push(&free, 1), None);
        assert_eq!(p.push(&free, 0), Some(2));
        let mut out = [None; 3];
        p.largest_free_runs(&mut out);
        assert_eq!(out, [Some((0, 64)), Some((0, 64)), None]);
        let mut p = PackedFinder::new();
        for k in 0..PACK_MAX_FIELDS {
            assert_eq!(p.push(&free, 1), Some(k));
        }
        assert_eq!(p.push(&free, 1), None, "too many fields");
    }

    /// The period loop answers every search as the exact finder does and
    /// takes one pass per period: at the default sizes (48 shared, 64
    /// scalar, 128 vector blocks) a one-unit work-group's three searches
    /// take two passes, the shared and scalar maps sharing one.
    #[test]
    fn periods_pack_several_resources_and_answer_exactly() {
        extern crate std;
        use std::{
            vec,
            vec::Vec, //
        };
        let mut rng = Rng::new(0x7e51);
        let widths = [48usize, 64, 128, 64, 64, 128, 200, 17, 1, 128];
        let maps: Vec<[u64; 4]> = (0..widths.len())
            .map(|_| core::array::from_fn(|_| rng.next_u64() & rng.next_u64()))
            .collect();
        for round in 0..2000 {
            let n = 1 + round % widths.len();
            let searches: Vec<Search<'_>> = (0..n)
                .map(|i| Search {
                    map: &maps[(i + round) % maps.len()],
                    nbits: widths[i],
                    len: rng.below(9) as usize,
                })
                .collect();
            let mut out = vec![Some(usize::MAX); n];
            packed_first_runs(&searches, &mut out);
            for (s, o) in searches.iter().zip(&out) {
                assert_eq!(*o, ref_first(s.map, s.nbits, s.len), "{s:?}");
            }
        }
        let free = [0u64; 2];
        let search = |nbits| Search {
            map: &free,
            nbits,
            len: 1,
        };
        let mut out = [None; 9];
        assert_eq!(
            packed_first_runs(&[search(48), search(64), search(128)], &mut out),
            2
        );
        let four_units = [48, 64, 64, 64, 64, 128, 128, 128, 128].map(search);
        assert_eq!(packed_first_runs(&four_units, &mut out), 7);
        assert_eq!(packed_first_runs(&[search(129)], &mut out), 1);
    }
}
