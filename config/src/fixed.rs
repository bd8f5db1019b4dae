//! Fixed-point arithmetic, defined once for RTL and emulator alike.
//!
//! Values are carried as `i64` holding a two's-complement number of a stated
//! width. Every function here has a line-for-line counterpart in the
//! generated `sa_pe` Verilog (see `docs/ARCHITECTURE.md`).
//!
//! Each is marked `#[inline]`: they sit in the emulator's and the fast
//! kernel's innermost loops, in other crates, which without it cannot
//! inline them (one codegen unit per crate, no LTO).

/// Smallest value of an `n`-bit signed number.
#[inline]
pub fn min_of(n: u32) -> i64 {
    -(1i64 << (n - 1))
}

/// Largest value of an `n`-bit signed number.
#[inline]
pub fn max_of(n: u32) -> i64 {
    (1i64 << (n - 1)) - 1
}

/// Clamps `v` into the `n`-bit signed range.
#[inline]
pub fn sat(v: i64, n: u32) -> i64 {
    v.clamp(min_of(n), max_of(n))
}

/// Whether `v` is representable in `n` signed bits.
#[inline]
pub fn fits(v: i64, n: u32) -> bool {
    (min_of(n)..=max_of(n)).contains(&v)
}

/// Saturating accumulate: `sat(acc + p, acc_bits)`, the sum formed exactly.
#[inline]
pub fn acc_add(acc: i64, p: i64, acc_bits: u32) -> i64 {
    sat(acc + p, acc_bits)
}

/// Round to nearest, ties toward +infinity, then shift right by `s`.
/// For `s >= acc_bits` every `acc_bits`-wide value rounds to 0.
#[inline]
pub fn round_shift(v: i64, s: u32, acc_bits: u32) -> i64 {
    if s == 0 {
        v
    } else if s >= acc_bits {
        0
    } else {
        (v + (1i64 << (s - 1))) >> s
    }
}

/// Accumulator (2F fractional bits) to data (F fractional bits), rounded and saturated.
#[inline]
pub fn requantize(acc: i64, frac_bits: u32, in_bits: u32, acc_bits: u32) -> i64 {
    sat(round_shift(acc, frac_bits, acc_bits), in_bits)
}

/// SGD step of one weight: `sat(w - round_shift(dw, F + lr_shift), DW)`.
#[inline]
pub fn sgd_update(
    w: i64,
    dw: i64,
    frac_bits: u32,
    lr_shift: u32,
    in_bits: u32,
    acc_bits: u32,
) -> i64 {
    sat(w - round_shift(dw, frac_bits + lr_shift, acc_bits), in_bits)
}

/// Converts a real number to data format: round half up, saturate.
#[inline]
pub fn from_f64(x: f64, frac_bits: u32, in_bits: u32) -> i64 {
    if x.is_nan() {
        return 0;
    }
    let scaled = (x * (1u64 << frac_bits) as f64 + 0.5).floor();
    sat(
        scaled.clamp(i64::MIN as f64, i64::MAX as f64) as i64,
        in_bits,
    )
}

/// Data value to real.
#[inline]
pub fn to_f64(v: i64, frac_bits: u32) -> f64 {
    v as f64 / (1u64 << frac_bits) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rounding_is_half_up() {
        assert_eq!(round_shift(3, 1, 32), 2); // 1.5 -> 2
        assert_eq!(round_shift(-3, 1, 32), -1); // -1.5 -> -1
        assert_eq!(round_shift(5, 2, 32), 1); // 1.25 -> 1
        assert_eq!(round_shift(6, 2, 32), 2); // 1.5 -> 2
        assert_eq!(round_shift(-6, 2, 32), -1); // -1.5 -> -1
    }

    proptest! {
        #[test]
        fn round_shift_is_nearest(v in -(1i64 << 39)..(1i64 << 39), s in 1u32..40) {
            let r = round_shift(v, s, 40) as f64;
            let exact = v as f64 / (1u64 << s) as f64;
            prop_assert!((r - exact) <= 0.5 && (exact - r) < 0.5);
        }

        #[test]
        fn large_shifts_round_to_zero(v in -(1i64 << 39)..(1i64 << 39), s in 40u32..80) {
            prop_assert_eq!(round_shift(v, s, 40), 0);
        }

        #[test]
        fn sat_is_identity_in_range(v in -32768i64..32768) {
            prop_assert_eq!(sat(v, 16), v);
            prop_assert!(fits(sat(v * 1000, 16), 16));
        }
    }
}
