// SPDX-License-Identifier: GPL-2.0

//! A small deterministic random generator (xorshift64*) for the crate's
//! tests, so every run sees the same cases. Host tests only.

/// The generator; the seed must not be zero.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// 32 random bits (the high half, the better one).
    pub(crate) fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// A number below `n` (`n > 0`), from 32 random bits.
    pub(crate) fn below(&mut self, n: u32) -> u32 {
        self.next_u32() % n
    }

    /// A number below `n` (`n > 0`), from 64 random bits.
    pub(crate) fn below_u64(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}
