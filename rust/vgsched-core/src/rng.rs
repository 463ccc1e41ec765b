// SPDX-License-Identifier: GPL-2.0

//! A small deterministic random generator (xorshift64*).
//!
//! Tests and benchmarks use it so every run sees the same cases (the host
//! benchmark and the in-kernel one build the same maps from the same seed);
//! the dispatcher uses it for its random tie-break between channels.

/// The generator. A zero seed would stay zero, so [`Rng::new`] avoids it.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// A generator seeded with `seed` (0 is replaced by a fixed constant).
    pub const fn new(seed: u64) -> Self {
        Self(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    /// 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// 32 random bits (the high half, the better one).
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// A number below `n` (0 when `n` is 0), from 32 random bits.
    pub fn below(&mut self, n: u32) -> u32 {
        self.next_u32().checked_rem(n).unwrap_or(0)
    }

    /// A number below `n` (0 when `n` is 0), from 64 random bits.
    pub fn below_u64(&mut self, n: u64) -> u64 {
        self.next_u64().checked_rem(n).unwrap_or(0)
    }
}
