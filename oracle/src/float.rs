//! The floating-point formats of `docs/ARCHITECTURE.md` ("Floating-point
//! formats"), computed with the CPU's own IEEE 754 binary32 arithmetic
//! (`a * b` and `a + b` on `f32` round to nearest even and keep
//! subnormals on x86-64 SSE and on AArch64) and converted with the `half`
//! crate (bf16) and the `float8` crate (E4M3, E5M2). Nothing here is
//! shared with `sysgrad_config::float` or the emulator.
//!
//! Where a crate's conversion differs from the contract, the contract's
//! behaviour is written around it (see [`round_to`]):
//! * `float8` converts with NVIDIA's "saturate to finite" rule: E5M2
//!   overflow (and infinity) becomes ±57344 where the contract (IEEE) says
//!   ±infinity;
//! * both crates keep a NaN's sign (and `half` its payload), where the
//!   contract makes every NaN the format's one positive NaN.
//!
//! Values are bit patterns (`u32`, a format's pattern in the low bits);
//! the layer functions take and return [`Matrix`]es of them.

use crate::layer::blocks;
use crate::matrix::Matrix;
use float8::{F8E4M3, F8E5M2};
use half::bf16;

/// A data format (the contract's table "Formats").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Bf16,
    E4M3,
    E5M2,
}

/// The accumulators' one NaN (`0x7FC00000`).
pub const FP32_NAN: u32 = 0x7FC0_0000;

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Bf16, Kind::E4M3, Kind::E5M2];

    /// (exponent bits, fraction bits, bias), from the table.
    pub const fn layout(self) -> (u32, u32, i32) {
        match self {
            Kind::Bf16 => (8, 7, 127),
            Kind::E4M3 => (4, 3, 7),
            Kind::E5M2 => (5, 2, 15),
        }
    }

    /// The width of a value.
    pub const fn bits(self) -> u32 {
        let (e, m, _) = self.layout();
        1 + e + m
    }

    /// The one NaN every operation makes.
    pub const fn nan(self) -> u32 {
        match self {
            Kind::Bf16 => 0x7FC0,
            Kind::E4M3 => 0x7F,
            Kind::E5M2 => 0x7E,
        }
    }

    /// The largest finite value's pattern.
    pub const fn max_finite(self) -> u32 {
        match self {
            Kind::Bf16 => 0x7F7F,
            Kind::E4M3 => 0x7E,
            Kind::E5M2 => 0x7B,
        }
    }

    /// Whether the format has infinities (E4M3 has none).
    pub const fn has_infinity(self) -> bool {
        !matches!(self, Kind::E4M3)
    }

    fn sign_bit(self) -> u32 {
        1 << (self.bits() - 1)
    }

    /// The smallest subnormal, `2^(1 - bias - fraction bits)`.
    fn min_subnormal(self) -> f64 {
        let (_, m, bias) = self.layout();
        2f64.powi(1 - bias - m as i32)
    }
}

/// Whether a pattern of format `k` is a NaN.
pub fn is_nan(k: Kind, bits: u32) -> bool {
    to_f32(k, bits).is_nan()
}

/// "`widen(v)` is the exact fp32 value of a data value": `half` and
/// `float8` decode; every NaN is read as a NaN.
pub fn to_f32(k: Kind, bits: u32) -> f32 {
    match k {
        Kind::Bf16 => bf16::from_bits(bits as u16).to_f32(),
        Kind::E4M3 => F8E4M3::from_bits(bits as u8).to_f32(),
        Kind::E5M2 => F8E5M2::from_bits(bits as u8).to_f32(),
    }
}

/// An fp32 result as the array holds it: any NaN becomes `0x7FC00000`.
pub fn fp32_bits(v: f32) -> u32 {
    if v.is_nan() {
        FP32_NAN
    } else {
        v.to_bits()
    }
}

/// `widen` as an fp32 pattern.
pub fn widen(k: Kind, bits: u32) -> u32 {
    fp32_bits(to_f32(k, bits))
}

/// `mul32`: the CPU's IEEE product.
pub fn mul32(a: u32, b: u32) -> u32 {
    fp32_bits(f32::from_bits(a) * f32::from_bits(b))
}

/// `add32`: the CPU's IEEE sum.
pub fn add32(a: u32, b: u32) -> u32 {
    fp32_bits(f32::from_bits(a) + f32::from_bits(b))
}

/// `sub32(a, b) = add32(a, -b)`, `-b` the sign flipped.
pub fn sub32(a: u32, b: u32) -> u32 {
    add32(a, b ^ 0x8000_0000)
}

/// `scale(dw, lr) = dw * 2^-lr`, rounded to nearest even: one IEEE
/// multiplication by a power of two (2^-63 is a normal fp32 value).
pub fn scale(dw: u32, lr: u32) -> u32 {
    assert!(lr <= 63, "lr_shift {lr} > 63");
    fp32_bits(f32::from_bits(dw) * (-(lr as f32)).exp2())
}

/// `round_to(k, v)`: nearest even, subnormals kept; beyond the largest
/// finite value infinity in bf16 and E5M2 (from half an ulp past it),
/// ±448 in E4M3 (±infinity too); NaN the format's one NaN.
pub fn round_to(k: Kind, v: u32) -> u32 {
    let f = f32::from_bits(v);
    if f.is_nan() {
        return k.nan();
    }
    let sign = if f.is_sign_negative() {
        k.sign_bit()
    } else {
        0
    };
    match k {
        Kind::Bf16 => u32::from(bf16::from_f32(f).to_bits()),
        Kind::E4M3 => u32::from(F8E4M3::from_f32(f).to_bits()),
        Kind::E5M2 => {
            // float8 saturates at 57344; IEEE overflows to infinity from
            // 57344 + half an ulp (61440, a tie that rounds to the even
            // 2^16, beyond the format) up.
            if f.abs() >= 61440.0 {
                sign | 0x7C
            } else {
                u32::from(F8E5M2::from_f32(f).to_bits())
            }
        }
    }
}

/// The contract's stochastic rounding of fp32 `v` to format `k` with the
/// 16-bit draw `r`: `lo` is `v` rounded toward zero, `phi` the top 16 bits
/// of the dropped fraction; one ulp away from zero if `r < phi`.
///
/// A value beyond the format's binades (|v| >= 2^(emax+1), which only
/// E4M3 and E5M2 meet) has no ulp "at its exponent in k": it rounds as
/// with nearest (infinity, or 448 in E4M3), the reading the contract's
/// "a step away from the largest finite value gives infinity" and "E4M3
/// saturates any |v| > 448" suggest.
pub fn round_stochastic(k: Kind, v: u32, r: u32) -> u32 {
    assert!(r < 1 << 16, "a draw has 16 bits");
    let f = f32::from_bits(v);
    let nearest = round_to(k, v);
    if !f.is_finite() || f64::from(to_f32(k, nearest)) == f64::from(f) {
        return nearest;
    }
    let magnitude = f64::from(f.abs());
    if k == Kind::E4M3 && magnitude > 448.0 {
        return nearest;
    }
    let (e_bits, m_bits, bias) = k.layout();
    let emax = ((1 << e_bits) - 2) - bias + i32::from(!k.has_infinity());
    if magnitude >= 2f64.powi(emax + 1) {
        return nearest;
    }
    // lo: nearest, or the pattern below it if nearest rounded away.
    let sign = nearest & k.sign_bit();
    let mut lo = nearest & !k.sign_bit();
    if f64::from(to_f32(k, lo)) > magnitude {
        lo -= 1;
    }
    let lo_value = f64::from(to_f32(k, lo));
    let exp_field = (lo >> m_bits) as i32;
    let ulp = if exp_field == 0 {
        k.min_subnormal()
    } else {
        2f64.powi(exp_field - bias - m_bits as i32)
    };
    // Exact in f64: both are fp32 values of one binade or adjacent ones.
    let phi = ((magnitude - lo_value) / ulp * 65536.0).floor() as u32;
    assert!(
        phi < 65536,
        "{magnitude} past {lo_value} by more than an ulp"
    );
    let up = if r < phi { lo + 1 } else { lo };
    // One step past E4M3's 448 would be its NaN: it stays.
    let up = if k == Kind::E4M3 && up > k.max_finite() {
        k.max_finite()
    } else {
        up
    };
    sign | up
}

/// A floating-point configuration: the array's shape, the three formats
/// and the update's rounding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloatConfig {
    pub rows: usize,
    pub cols: usize,
    pub weights: Kind,
    pub activations: Kind,
    pub gradients: Kind,
    /// The update's rounding: nearest, or stochastic with the configuration's seed.
    pub stochastic: Option<u32>,
}

/// "`Y = W X`" with `acc_add = add32`, every fold from +0.0: the column
/// chain in row order, tiles in K order. fp32 patterns, M x N.
pub fn forward(cfg: &FloatConfig, w: &Matrix, x: &Matrix) -> Matrix {
    let (m, k) = w.dim();
    let n = x.cols();
    assert_eq!(x.rows(), k, "X must have K = {k} rows");
    let mut y = Matrix::zeros(m, n);
    for (m0, mt) in blocks(m, cfg.cols) {
        for (k0, kt) in blocks(k, cfg.rows) {
            for row in m0..m0 + mt {
                for col in 0..n {
                    let mut part = 0i128;
                    for i in 0..kt {
                        let p = product(
                            cfg.weights,
                            w[(row, k0 + i)],
                            cfg.activations,
                            x[(k0 + i, col)],
                        );
                        part = add(part, p);
                    }
                    y[(row, col)] = add(y[(row, col)], part);
                }
            }
        }
    }
    y
}

/// "dX `= W^T dY`": the row chain in column order, tiles in M order.
pub fn dx(cfg: &FloatConfig, w: &Matrix, dy: &Matrix) -> Matrix {
    let (m, k) = w.dim();
    let n = dy.cols();
    assert_eq!(dy.rows(), m, "dY must have M = {m} rows");
    let mut dx = Matrix::zeros(k, n);
    for (m0, mt) in blocks(m, cfg.cols) {
        for (k0, kt) in blocks(k, cfg.rows) {
            for row in k0..k0 + kt {
                for col in 0..n {
                    let mut part = 0i128;
                    for j in 0..mt {
                        let p = product(
                            cfg.weights,
                            w[(m0 + j, row)],
                            cfg.gradients,
                            dy[(m0 + j, col)],
                        );
                        part = add(part, p);
                    }
                    dx[(row, col)] = add(dx[(row, col)], part);
                }
            }
        }
    }
    dx
}

/// "dW `= dY X^T`": the whole stream in order, from +0.0.
pub fn dw(cfg: &FloatConfig, dy: &Matrix, x: &Matrix) -> Matrix {
    let (m, n) = dy.dim();
    let k = x.rows();
    assert_eq!(x.cols(), n, "X must have N = {n} columns like dY");
    Matrix::from_fn(m, k, |row, col| {
        (0..n).fold(0, |acc, t| {
            let p = product(cfg.gradients, dy[(row, t)], cfg.activations, x[(col, t)]);
            i128::from(add32(acc as u32, p as u32))
        })
    })
}

/// The Update sink: `round_w(sub32(widen(w), scale(dw, lr)))`, each
/// weight once, after its tile's backward pass.
///
/// With stochastic rounding, weight `W[m][k]` sits in PE (i, j) = (k mod R,
/// m mod C) and is rounded with that PE's draw of its tile's update: every
/// update of a tile steps every PE's generator `steps_per_update` times
/// (the array's UPDATE writes every PE's `w`: once, or twice with the
/// multiplier register, whose second cycle rounds), tiles run M-block
/// outer, K-block inner, and the generators start from reset.
pub fn update(
    cfg: &FloatConfig,
    w: &Matrix,
    dw: &Matrix,
    lr_shift: u32,
    steps_per_update: u32,
) -> Matrix {
    assert_eq!(w.dim(), dw.dim(), "W and dW must have the same shape");
    let kw = cfg.weights;
    let k_tiles = w.cols().div_ceil(cfg.rows);
    Matrix::from_fn(w.rows(), w.cols(), |r, c| {
        let diff = sub32(
            widen(kw, w[(r, c)] as u32),
            scale(dw[(r, c)] as u32, lr_shift),
        );
        let rounded = match cfg.stochastic {
            None => round_to(kw, diff),
            Some(seed) => {
                let tile = (r / cfg.cols) * k_tiles + c / cfg.rows;
                let steps = steps_per_update as usize * (tile + 1);
                let mut state = generator(seed, c % cfg.rows, r % cfg.cols);
                for _ in 0..steps {
                    state = xorshift(state);
                }
                round_stochastic(kw, diff, state & 0xFFFF)
            }
        };
        i128::from(rounded)
    })
}

/// Requantization to a data format: `round_to` elementwise.
pub fn requantize(k: Kind, acc: &Matrix) -> Matrix {
    acc.map(|v| i128::from(round_to(k, v as u32)))
}

/// "`StochasticBits::new(seed, i, j)` after reset: state `((seed ^ ((i <<
/// 16 | j) * 0x9E3779B9)) * 0x85EBCA6B) mod 2^32`, or 1 if that is 0."
pub fn generator(seed: u32, i: usize, j: usize) -> u32 {
    let index = ((i as u64) << 16 | j as u64) as u32;
    let mixed = (u64::from(seed ^ (u64::from(index) * 0x9E37_79B9) as u32) * 0x85EB_CA6B) as u32;
    if mixed == 0 {
        1
    } else {
        mixed
    }
}

/// One step of the 32-bit xorshift generator (shifts 13, 17, 5).
pub fn xorshift(mut x: u32) -> u32 {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    x
}

/// `mul32(widen(a), widen(b))` of two data values of formats `ka`, `kb`.
fn product(ka: Kind, a: i128, kb: Kind, b: i128) -> i128 {
    i128::from(mul32(widen(ka, a as u32), widen(kb, b as u32)))
}

fn add(a: i128, b: i128) -> i128 {
    i128::from(add32(a as u32, b as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pattern of `k`, by brute force: the value nearest to `v`
    /// (ties to the even pattern) among the finite ones, or what the
    /// contract says beyond them. Independent of both crates' rounding.
    fn nearest_by_search(k: Kind, v: f32) -> u32 {
        let max = f64::from(to_f32(k, k.max_finite()));
        let x = f64::from(v);
        let sign = if v.is_sign_negative() {
            k.sign_bit()
        } else {
            0
        };
        let (_, m_bits, bias) = k.layout();
        let half_ulp_past =
            max + 2f64.powi((k.max_finite() >> m_bits) as i32 - bias - m_bits as i32) / 2.0;
        if x.abs() >= half_ulp_past || v.is_infinite() {
            return sign
                | if k.has_infinity() {
                    k.max_finite() + 1
                } else {
                    k.max_finite()
                };
        }
        let mut best = 0u32;
        for p in 0..=k.max_finite() {
            let (d, db) = (
                (f64::from(to_f32(k, p)) - x.abs()).abs(),
                (f64::from(to_f32(k, best)) - x.abs()).abs(),
            );
            if d < db || (d == db && p % 2 == 0) {
                best = p;
            }
        }
        sign | best
    }

    fn edge_and_random_f32() -> Vec<f32> {
        let mut v = vec![
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            f32::MIN_POSITIVE,
            1e-45,
            448.0,
            464.0,
            463.9,
            480.0,
            57344.0,
            61440.0,
            61439.0,
            65536.0,
        ];
        let mut s = 0x1234_5678u32;
        for _ in 0..20000 {
            s = xorshift(s);
            // Exponents around every format's range.
            let e = 127 - 30 + (s >> 8) % 50;
            v.push(f32::from_bits(
                (s & 0x8000_0000) | (e << 23) | (xorshift(s) & 0x7F_FFFF),
            ));
            v.push(f32::from_bits(xorshift(s ^ 0xABCD)));
        }
        v
    }

    #[test]
    fn round_to_is_the_nearest_pattern_for_every_format() {
        for k in Kind::ALL {
            for &v in &edge_and_random_f32() {
                if v.is_nan() {
                    assert_eq!(round_to(k, v.to_bits()), k.nan());
                    continue;
                }
                if k == Kind::Bf16 && v.is_finite() {
                    // bf16's range is fp32's: the search above is for FP8.
                    let r = round_to(k, v.to_bits());
                    let back = to_f32(k, r);
                    let next = |p: u32| f64::from(to_f32(k, p)) - f64::from(v);
                    if back.is_finite() {
                        assert!(next(r).abs() <= next(r ^ 1).abs(), "{v}");
                    }
                    continue;
                }
                assert_eq!(
                    round_to(k, v.to_bits()),
                    nearest_by_search(k, v),
                    "{k:?} {v:e}"
                );
            }
        }
    }

    #[test]
    fn widen_is_exact_and_nans_are_one() {
        for k in Kind::ALL {
            for p in 0..(1u32 << k.bits()) {
                let f = to_f32(k, p);
                if f.is_nan() {
                    assert_eq!(widen(k, p), FP32_NAN);
                } else {
                    assert_eq!(round_to(k, f.to_bits()), p, "{k:?} {p:#x}");
                }
            }
        }
        assert_eq!(widen(Kind::E4M3, 0xFF), FP32_NAN);
        assert!(to_f32(Kind::E4M3, 0x7E) == 448.0);
        assert!(to_f32(Kind::E5M2, 0x7C).is_infinite());
    }

    #[test]
    fn arithmetic_keeps_subnormals_and_signed_zeros() {
        let tiny = f32::from_bits(1);
        assert_eq!(mul32(0x3F00_0000, tiny.to_bits()), 0); // 0.5 * 2^-149 ties to even 0
        assert_eq!(add32(0x8000_0000, 0x8000_0000), 0x8000_0000);
        assert_eq!(add32(0x3F80_0000, 0xBF80_0000), 0);
        assert_eq!(mul32(0, 0x7F80_0000), FP32_NAN);
        assert_eq!(scale(0x0080_0000, 1), 0x0040_0000);
    }

    #[test]
    fn stochastic_rounding_goes_up_with_the_dropped_fraction() {
        // 1 + 2^-9 in bf16: lo = 1, ulp 2^-7, phi = 2^-2 * 2^16 = 16384.
        let v = (1.0f32 + 2f32.powi(-9)).to_bits();
        assert_eq!(round_stochastic(Kind::Bf16, v, 16383), 0x3F81);
        assert_eq!(round_stochastic(Kind::Bf16, v, 16384), 0x3F80);
        // Negative: away from zero.
        assert_eq!(round_stochastic(Kind::Bf16, v | 0x8000_0000, 0), 0xBF81);
        // E4M3 stays at 448; E5M2 steps to infinity.
        assert_eq!(round_stochastic(Kind::E4M3, 450f32.to_bits(), 0), 0x7E);
        assert_eq!(round_stochastic(Kind::E5M2, 57345f32.to_bits(), 0), 0x7C);
        assert_eq!(
            round_stochastic(Kind::E5M2, 57345f32.to_bits(), 65535),
            0x7B
        );
    }

    #[test]
    fn the_generator_matches_the_contracts_numbers() {
        assert_eq!(xorshift(1), 270_369);
        assert_ne!(generator(7, 0, 1), generator(7, 1, 0));
    }
}
