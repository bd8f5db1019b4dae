//! The number format rules of `docs/ARCHITECTURE.md` ("Number format
//! rules"), one function per rule. Values are `i128`; the widths are
//! parameters, so each function states which width it clamps to.

/// The data and accumulator widths: DW = `in_bits`, AW = `acc_bits`,
/// F = `frac_bits`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    pub in_bits: u32,
    pub acc_bits: u32,
    pub frac_bits: u32,
}

/// `-2^(n-1)`, the smallest `n`-bit two's complement value.
pub fn min_of(n: u32) -> i128 {
    -(1i128 << (n - 1))
}

/// `2^(n-1) - 1`, the largest `n`-bit two's complement value.
pub fn max_of(n: u32) -> i128 {
    (1i128 << (n - 1)) - 1
}

/// "`sat(v, n)`: clamp `v` to `[-2^(n-1), 2^(n-1)-1]`."
pub fn sat(v: i128, n: u32) -> i128 {
    if v < min_of(n) {
        min_of(n)
    } else if v > max_of(n) {
        max_of(n)
    } else {
        v
    }
}

/// "Accumulate: `acc' = sat(acc + p, AW)` ... the sum is formed exactly
/// before clamping." In `i128` the sum is always exact.
pub fn acc_add(acc: i128, p: i128, acc_bits: u32) -> i128 {
    sat(acc + p, acc_bits)
}

/// "`round_shift(v, s)`: round to nearest, ties toward +infinity:
/// `s == 0 -> v`; `1 <= s < AW -> (v + 2^(s-1)) >>> s`; `s >= AW -> 0`."
///
/// `>>` on `i128` is the arithmetic shift (floor division by `2^s`), so
/// adding half first rounds to nearest with ties up.
pub fn round_shift(v: i128, s: u32, acc_bits: u32) -> i128 {
    if s == 0 {
        v
    } else if s >= acc_bits {
        0
    } else {
        (v + (1i128 << (s - 1))) >> s
    }
}

/// "`sr_shift(v, s, r)`: `s == 0 -> v`; `1 <= s < AW -> (v + off) >>> s`
/// with `off = floor(r * 2^s / 2^16)` ...; `s >= AW -> 0`" (Stochastic
/// rounding in fixed point; `r` a 16-bit draw).
pub fn sr_shift(v: i128, s: u32, r: u32, acc_bits: u32) -> i128 {
    assert!(r < 1 << 16, "a draw has 16 bits");
    if s == 0 {
        v
    } else if s >= acc_bits {
        0
    } else {
        (v + ((i128::from(r) << s) >> 16)) >> s
    }
}

/// "Requantize accumulator to data: `sat(round_shift(acc, F), DW)`."
pub fn requantize(acc: i128, f: Format) -> i128 {
    sat(round_shift(acc, f.frac_bits, f.acc_bits), f.in_bits)
}

/// "SGD update: `w' = sat(w - round_shift(dw, F + lr_shift), DW)` ... The
/// difference is formed exactly before clamping."
pub fn sgd_update(w: i128, dw: i128, lr_shift: u32, f: Format) -> i128 {
    sat(
        w - round_shift(dw, f.frac_bits + lr_shift, f.acc_bits),
        f.in_bits,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const F8_16: Format = Format {
        in_bits: 8,
        acc_bits: 16,
        frac_bits: 4,
    };

    #[test]
    fn extremes_of_a_width() {
        assert_eq!((min_of(8), max_of(8)), (-128, 127));
        assert_eq!((min_of(48), max_of(48)), (-(1 << 47), (1 << 47) - 1));
    }

    #[test]
    fn sat_clamps_to_both_ends() {
        assert_eq!(sat(200, 8), 127);
        assert_eq!(sat(-200, 8), -128);
        assert_eq!(sat(127, 8), 127);
        assert_eq!(sat(-128, 8), -128);
        assert_eq!(sat(5, 8), 5);
    }

    #[test]
    fn accumulation_sticks_at_the_clamp() {
        assert_eq!(acc_add(32767, 1, 16), 32767);
        assert_eq!(acc_add(-32768, -1, 16), -32768);
        // Formed exactly before clamping: max + min is -1, not a wrap.
        assert_eq!(acc_add(32767, -32768, 16), -1);
        assert_eq!(acc_add(16384, 16384, 16), 32767);
    }

    #[test]
    fn ties_round_up_towards_plus_infinity() {
        assert_eq!(round_shift(3, 1, 32), 2); // 1.5 -> 2
        assert_eq!(round_shift(-3, 1, 32), -1); // -1.5 -> -1
        assert_eq!(round_shift(6, 2, 32), 2); // 1.5 -> 2
        assert_eq!(round_shift(-6, 2, 32), -1); // -1.5 -> -1
    }

    #[test]
    fn non_ties_round_to_nearest() {
        assert_eq!(round_shift(5, 2, 32), 1); // 1.25 -> 1
        assert_eq!(round_shift(7, 2, 32), 2); // 1.75 -> 2
        assert_eq!(round_shift(-5, 2, 32), -1); // -1.25 -> -1
        assert_eq!(round_shift(-7, 2, 32), -2); // -1.75 -> -2
    }

    #[test]
    fn shift_zero_is_the_identity() {
        assert_eq!(round_shift(-12345, 0, 16), -12345);
        assert_eq!(round_shift(32767, 0, 16), 32767);
    }

    #[test]
    fn the_widest_shift_below_acc_bits() {
        // s = AW - 1 = 15: max is 0.99997 -> 1, min is exactly -1.
        assert_eq!(round_shift(32767, 15, 16), 1);
        assert_eq!(round_shift(-32768, 15, 16), -1);
        assert_eq!(round_shift(-16385, 15, 16), -1); // -0.50003 -> -1
        assert_eq!(round_shift(-16384, 15, 16), 0); // -0.5 tie -> 0
    }

    #[test]
    fn shifts_of_acc_bits_or_more_give_zero() {
        for s in [16, 17, 40, 78, 100] {
            assert_eq!(round_shift(32767, s, 16), 0);
            assert_eq!(round_shift(-32768, s, 16), 0);
        }
    }

    /// The page says `s >= AW -> 0` is "what the formula gives for any AW-bit
    /// `v`": check that claim on the extremes, so the special case is not
    /// a second rule.
    #[test]
    fn zero_for_large_shifts_is_what_the_formula_gives() {
        for aw in [16, 32, 48] {
            for s in aw..aw + 64 {
                for v in [min_of(aw), -1, 0, 1, max_of(aw)] {
                    assert_eq!((v + (1i128 << (s - 1))) >> s, 0, "v {v} s {s}");
                }
            }
        }
    }

    #[test]
    fn requantize_rounds_then_saturates() {
        // F = 4: an accumulator has 8 fractional bits, data 4, so shift by 4.
        assert_eq!(requantize(24, F8_16), 2); // 1.5 -> 2
        assert_eq!(requantize(-24, F8_16), -1); // -1.5 -> -1
        assert_eq!(requantize(32767, F8_16), 127); // 2048 -> clamped
        assert_eq!(requantize(-32768, F8_16), -128);
        let integer = Format {
            frac_bits: 0,
            ..F8_16
        };
        assert_eq!(requantize(-129, integer), -128);
    }

    #[test]
    fn sgd_subtracts_the_rounded_scaled_gradient() {
        // Shift F + lr = 5: 48 / 32 = 1.5 -> 2.
        assert_eq!(sgd_update(10, 48, 1, F8_16), 8);
        assert_eq!(sgd_update(10, -48, 1, F8_16), 11); // -1.5 -> -1
        assert_eq!(sgd_update(10, 0, 63, F8_16), 10);
    }

    #[test]
    fn sgd_saturates_the_weight() {
        let integer = Format {
            frac_bits: 0,
            ..F8_16
        };
        assert_eq!(sgd_update(-128, 32767, 0, integer), -128);
        assert_eq!(sgd_update(127, -32768, 0, integer), 127);
    }

    #[test]
    fn sgd_with_a_shift_of_acc_bits_changes_nothing() {
        // F + lr = 4 + 12 = 16 = AW: the step is 0 even for the largest dW.
        assert_eq!(sgd_update(5, -32768, 12, F8_16), 5);
        // One less: -32768 / 2^15 = -1 exactly.
        assert_eq!(sgd_update(5, -32768, 11, F8_16), 6);
    }
}
