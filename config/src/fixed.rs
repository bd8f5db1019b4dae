//! Fixed-point arithmetic, defined once for RTL and emulator alike.
//!
//! Values are carried as `i64` holding a two's-complement number of a stated
//! width. Every function here has a line-for-line counterpart in the
//! generated `sa_pe` Verilog (see `docs/ARCHITECTURE.md`).
//!
//! Each is marked `#[inline]`: they sit in the emulator's and the fast
//! kernel's innermost loops, in other crates, which without it cannot
//! inline them (one codegen unit per crate, no LTO).

use crate::float::Rounding;

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

/// The SGD step's stochastic rounding (`docs/ARCHITECTURE.md`,
/// Stochastic rounding in fixed point): `v >> s` rounded toward +infinity
/// with the probability of the dropped fraction, with the 16-bit draw `r`
/// scaled to `s` bits as the offset; 0 for `s >= acc_bits`, as
/// [`round_shift`].
#[inline]
pub fn sr_shift(v: i64, s: u32, acc_bits: u32, r: u32) -> i64 {
    if s == 0 {
        v
    } else if s >= acc_bits {
        0
    } else {
        // floor(r * 2^s / 2^16), r < 2^16 and s < 48: no overflow.
        let r = i64::from(r & 0xFFFF);
        let offset = if s <= 16 {
            r >> (16 - s)
        } else {
            r << (s - 16)
        };
        (v + offset) >> s
    }
}

/// The SGD step `dw` scaled by `2^-s`, rounded as `rounding` says (`r`
/// is the draw stochastic rounding uses).
#[inline]
pub fn update_step(dw: i64, s: u32, acc_bits: u32, rounding: Rounding, r: u32) -> i64 {
    match rounding {
        Rounding::Nearest => round_shift(dw, s, acc_bits),
        Rounding::Stochastic => sr_shift(dw, s, acc_bits, r),
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

        /// Over every draw the step rounds up exactly as often as the
        /// dropped fraction says (s <= 16), so its mean is exact.
        #[test]
        fn sr_shift_over_every_draw_is_exact_in_the_mean(v in -(1i64 << 39)..(1i64 << 39), s in 1u32..=16) {
            let floor = v >> s;
            let ups: i64 = (0..1u32 << 16).map(|r| sr_shift(v, s, 40, r) - floor).sum();
            let fraction = v - (floor << s);
            prop_assert_eq!(ups, fraction << (16 - s));
        }

        #[test]
        fn sr_shift_rounds_to_a_neighbour(v in -(1i64 << 39)..(1i64 << 39), s in 0u32..60, r in 0u32..65536) {
            let q = sr_shift(v, s, 40, r);
            if s >= 40 {
                prop_assert_eq!(q, 0);
            } else {
                prop_assert!(q == v >> s || q == (v >> s) + 1);
                prop_assert!((q << s) - v < (1i64 << s));
            }
        }

        #[test]
        fn sat_is_identity_in_range(v in -32768i64..32768) {
            prop_assert_eq!(sat(v, 16), v);
            prop_assert!(fits(sat(v * 1000, 16), 16));
        }
    }
}
