// SPDX-License-Identifier: GPL-2.0

//! IEEE 754 binary32 arithmetic on bit patterns, in integers only.
//!
//! The kernel is built without floating-point support (the compiler's
//! float helpers panic there), yet the virtual GPU's float instructions
//! must give the same numbers a real GPU would. So the few operations the
//! instruction set needs are written here over `u32` bit patterns: add,
//! subtract and multiply with round-to-nearest-even and full subnormal
//! support, conversions to and from `i32`, and less-than. NaN results are
//! the canonical quiet NaN.

/// The canonical quiet NaN every NaN-producing operation returns.
pub const QNAN: u32 = 0x7fc0_0000;
const SIGN: u32 = 0x8000_0000;
const INF: u32 = 0x7f80_0000;

fn is_nan(x: u32) -> bool {
    x & !SIGN > INF
}

fn is_inf(x: u32) -> bool {
    x & !SIGN == INF
}

fn is_zero(x: u32) -> bool {
    x & !SIGN == 0
}

/// Splits a finite, non-zero value into `(m, e)` with value `m * 2^e`.
fn unpack(x: u32) -> (u64, i32) {
    let exp = ((x >> 23) & 0xff) as i32;
    let frac = u64::from(x & 0x7f_ffff);
    if exp == 0 {
        (frac, 1 - 150)
    } else {
        (frac | 0x80_0000, exp - 150)
    }
}

/// Rounds `m * 2^e` (with `m != 0`) to the nearest binary32, ties to even,
/// and packs it with `sign`.
fn pack(sign: u32, mut e: i32, mut m: u64) -> u32 {
    let lz = m.leading_zeros();
    m <<= lz;
    e -= lz as i32;
    // Now m is in [2^63, 2^64): the value is 1.f * 2^(e + 63).
    let biased = e + 63 + 127;
    // Normal results keep 24 bits (hidden bit included); subnormal ones
    // fewer, with the exponent field left at zero.
    let shift: u32 = if biased >= 1 {
        40
    } else {
        (40 + 1 - biased).min(127) as u32
    };
    let wide = u128::from(m);
    let mut mant = (wide >> shift) as u64;
    let rem = wide & ((1u128 << shift) - 1);
    let half = 1u128 << (shift - 1);
    if rem > half || (rem == half && mant & 1 == 1) {
        mant += 1;
    }
    if biased < 1 {
        // A carry into bit 23 turns the subnormal into the smallest normal,
        // which the plain OR below encodes correctly.
        return sign | mant as u32;
    }
    let mut biased = biased as u32;
    if mant == 1 << 24 {
        mant >>= 1;
        biased += 1;
    }
    if biased >= 255 {
        return sign | INF;
    }
    sign | (biased << 23) | (mant as u32 & 0x7f_ffff)
}

/// `a + b`.
pub fn add(a: u32, b: u32) -> u32 {
    if is_nan(a) || is_nan(b) {
        return QNAN;
    }
    if is_inf(a) || is_inf(b) {
        return match (is_inf(a), is_inf(b)) {
            (true, true) if a != b => QNAN,
            (true, _) => a,
            _ => b,
        };
    }
    if is_zero(a) && is_zero(b) {
        // +0 + -0 is +0 when rounding to nearest; -0 + -0 is -0.
        return a & b;
    }
    if is_zero(a) {
        return b;
    }
    if is_zero(b) {
        return a;
    }
    let (ma, ea) = unpack(a);
    let (mb, eb) = unpack(b);
    // Align both on an exponent 38 below the larger one: the larger
    // mantissa (< 2^24) then sits below 2^62, so the sum cannot overflow,
    // and 38 guard bits keep the rounding exact (a shifted-out remainder
    // survives as a sticky low bit).
    let base = ea.max(eb) - 38;
    let align = |m: u64, e: i32| -> u64 {
        let s = e - base;
        if s >= 0 {
            m << s
        } else if -s >= 64 {
            1
        } else {
            let lost = m & ((1u64 << -s) - 1);
            (m >> -s) | u64::from(lost != 0)
        }
    };
    let (xa, xb) = (align(ma, ea), align(mb, eb));
    let (sa, sb) = (a & SIGN, b & SIGN);
    if sa == sb {
        return pack(sa, base, xa + xb);
    }
    match xa.cmp(&xb) {
        core::cmp::Ordering::Equal => 0,
        core::cmp::Ordering::Greater => pack(sa, base, xa - xb),
        core::cmp::Ordering::Less => pack(sb, base, xb - xa),
    }
}

/// `a - b`.
pub fn sub(a: u32, b: u32) -> u32 {
    if is_nan(b) {
        return QNAN;
    }
    add(a, b ^ SIGN)
}

/// `a * b`.
pub fn mul(a: u32, b: u32) -> u32 {
    if is_nan(a) || is_nan(b) {
        return QNAN;
    }
    let sign = (a ^ b) & SIGN;
    if is_inf(a) || is_inf(b) {
        if is_zero(a) || is_zero(b) {
            return QNAN;
        }
        return sign | INF;
    }
    if is_zero(a) || is_zero(b) {
        return sign;
    }
    let (ma, ea) = unpack(a);
    let (mb, eb) = unpack(b);
    pack(sign, ea + eb, ma * mb)
}

/// Converts an `i32` to the nearest binary32 (ties to even).
pub fn from_i32(x: i32) -> u32 {
    if x == 0 {
        return 0;
    }
    let sign = if x < 0 { SIGN } else { 0 };
    pack(sign, 0, u64::from(x.unsigned_abs()))
}

/// Converts to `i32` truncating toward zero; out-of-range values saturate
/// and NaN gives 0 (the semantics of Rust's `as`).
pub fn to_i32(x: u32) -> i32 {
    if is_nan(x) {
        return 0;
    }
    let neg = x & SIGN != 0;
    if is_inf(x) {
        return if neg { i32::MIN } else { i32::MAX };
    }
    if is_zero(x) {
        return 0;
    }
    let (m, e) = unpack(x);
    let mag: u64 = if e >= 0 {
        if e > 40 {
            u64::MAX
        } else {
            m << e
        }
    } else if -e >= 64 {
        0
    } else {
        m >> -e
    };
    if neg {
        if mag >= 1u64 << 31 {
            i32::MIN
        } else {
            -(mag as i32)
        }
    } else if mag > i32::MAX as u64 {
        i32::MAX
    } else {
        mag as i32
    }
}

/// `a < b`; false when either is NaN, and -0 is not less than +0.
pub fn lt(a: u32, b: u32) -> bool {
    if is_nan(a) || is_nan(b) || (is_zero(a) && is_zero(b)) {
        return false;
    }
    // Map sign-magnitude onto an order-preserving unsigned key.
    let key = |x: u32| if x & SIGN != 0 { !x } else { x | SIGN };
    key(a) < key(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::rng::Rng;

    /// Bit patterns biased toward the interesting places: specials,
    /// subnormals, near-equal exponents.
    fn float(rng: &mut Rng) -> u32 {
        let r = rng.next_u32();
        match r % 8 {
            0 => {
                [
                    0,
                    SIGN,
                    INF,
                    INF | SIGN,
                    QNAN,
                    1,
                    0x7f_ffff,
                    0x80_0000,
                    0x7f7f_ffff,
                ][(rng.next_u32() % 9) as usize]
                    ^ (rng.next_u32() & SIGN)
            }
            1 => rng.next_u32() & 0x807f_ffff, // subnormal or zero
            2 => (rng.next_u32() & 0x80ff_ffff) | 0x3f00_0000, // exponents near 1.0
            _ => rng.next_u32(),
        }
    }

    fn same(got: u32, want: f32, what: &str, a: u32, b: u32) {
        let want = want.to_bits();
        let ok = if is_nan(want) {
            got == QNAN
        } else {
            got == want
        };
        assert!(
            ok,
            "{what}({a:#010x}, {b:#010x}) = {got:#010x}, want {want:#010x}"
        );
    }

    const N: usize = 2_000_000;

    #[test]
    fn add_sub_mul_match_hardware() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..N {
            let (a, b) = (float(&mut rng), float(&mut rng));
            let (fa, fb) = (f32::from_bits(a), f32::from_bits(b));
            same(add(a, b), fa + fb, "add", a, b);
            same(sub(a, b), fa - fb, "sub", a, b);
            same(mul(a, b), fa * fb, "mul", a, b);
        }
    }

    #[test]
    fn conversions_and_compare_match_hardware() {
        let mut rng = Rng(7);
        for _ in 0..N {
            let (a, b) = (float(&mut rng), float(&mut rng));
            let i = rng.next_u32() as i32 >> (rng.next_u32() % 32);
            assert_eq!(from_i32(i), (i as f32).to_bits(), "from_i32({i})");
            assert_eq!(to_i32(a), f32::from_bits(a) as i32, "to_i32({a:#x})");
            assert_eq!(
                lt(a, b),
                f32::from_bits(a) < f32::from_bits(b),
                "lt({a:#x}, {b:#x})"
            );
        }
        for i in [0, 1, -1, i32::MAX, i32::MIN, 16_777_217, -16_777_217] {
            assert_eq!(from_i32(i), (i as f32).to_bits(), "from_i32({i})");
        }
    }

    #[test]
    fn worked_values() {
        let f = |x: f32| x.to_bits();
        assert_eq!(add(f(1.5), f(2.25)), f(3.75));
        assert_eq!(mul(f(3.0), f(-0.5)), f(-1.5));
        assert_eq!(sub(f(1.0), f(1.0)), 0, "x - x is +0");
        assert_eq!(add(f(f32::MAX), f(f32::MAX)), INF);
        assert_eq!(
            mul(f(f32::MIN_POSITIVE), f(0.5)),
            0x40_0000,
            "exact subnormal"
        );
        assert_eq!(add(INF, INF | SIGN), QNAN);
        assert_eq!(mul(INF, 0), QNAN);
    }
}
