//! [`PeArith`] for the floating-point formats (`[format] kind = "float"`,
//! `docs/ARCHITECTURE.md`, Floating-point formats): data words are bf16,
//! E4M3 or E5M2 bit patterns (each operand in its own format), the
//! accumulators fp32 bit patterns, and the update rounds to the weights'
//! format, to nearest or stochastically with each PE's generator.
//!
//! Every operation is `sysgrad_config::float`'s, with two stand-ins in
//! the multiply-accumulate loops, which run in every PE every cycle:
//! operands are widened by table lookup (the tables are `widen`'s values,
//! built once per format), and `mul32`/`add32` are the CPU's own binary32
//! multiply and add, which are IEEE 754's (round to nearest even,
//! subnormals kept: Rust never sets flush-to-zero) once their NaN results
//! are made the one NaN; `mul_add_agree_with_the_soft_float` checks that
//! on edge values and random bits. Nothing saturates, so an accumulator
//! presents what it holds (`read` is the identity) and a weight is shown
//! as it is.

use super::arith::{PeArith, Product};
use std::sync::OnceLock;
use sysgrad_config::float::{self as sf, FloatFormat, FloatKind, StochasticBits, FP32};

/// The floating-point arithmetic of a format's PEs.
#[derive(Clone, Copy)]
pub struct Float {
    format: FloatFormat,
    /// `widen`'s value of every pattern of the weights', activations' and
    /// gradients' formats.
    w: &'static [u32],
    x: &'static [u32],
    dy: &'static [u32],
}

// The tables are functions of the format: equality and Debug are the format's.
impl PartialEq for Float {
    fn eq(&self, other: &Self) -> bool {
        self.format == other.format
    }
}

impl Eq for Float {}

impl std::fmt::Debug for Float {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Float")
            .field("format", &self.format)
            .finish()
    }
}

/// `widen(k, p)` for every pattern `p` of `k`, built once per format.
pub(crate) fn widened(k: FloatKind) -> &'static [u32] {
    static TABLES: [OnceLock<Vec<u32>>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let slot = FloatKind::ALL
        .iter()
        .position(|&x| x == k)
        .expect("a format");
    TABLES[slot].get_or_init(|| {
        (0..1u32 << k.encoding().bits())
            .map(|p| sf::widen(k, p))
            .collect()
    })
}

impl Float {
    /// The arithmetic of format `f`.
    pub fn new(format: FloatFormat) -> Self {
        Float {
            format,
            w: widened(format.weights),
            x: widened(format.activations),
            dy: widened(format.gradients),
        }
    }

    /// The widening tables of a product's two operands, in argument order.
    #[inline(always)]
    fn operands(self, which: Product) -> (&'static [u32], &'static [u32]) {
        match which {
            Product::Forward => (self.w, self.x),
            Product::Dx => (self.w, self.dy),
            Product::Dw => (self.dy, self.x),
        }
    }
}

/// `mul32`: the CPU's IEEE binary32 product, its NaNs made fp32's one NaN.
#[inline(always)]
pub(crate) fn mul32(a: u32, b: u32) -> u32 {
    one_nan(f32::from_bits(a) * f32::from_bits(b))
}

/// `add32`: the CPU's IEEE binary32 sum, its NaNs made fp32's one NaN.
#[inline(always)]
pub(crate) fn add32(a: u32, b: u32) -> u32 {
    one_nan(f32::from_bits(a) + f32::from_bits(b))
}

/// A value's bits, a NaN made fp32's one NaN.
#[inline(always)]
pub(crate) fn one_nan(v: f32) -> u32 {
    if v.is_nan() {
        FP32.nan
    } else {
        v.to_bits()
    }
}

/// A register word as the bit pattern it holds (data words and fp32
/// accumulators are at most 32 bits, never negative as `i64`).
#[inline(always)]
fn bits(v: i64) -> u32 {
    v as u32
}

impl PeArith for Float {
    /// The PE's xorshift generator: its state is the RTL's `sr_state`.
    type Generator = StochasticBits;

    fn generator(self, row: usize, col: usize) -> StochasticBits {
        StochasticBits::new(self.format.seed, row, col)
    }

    /// The generator steps whatever the rounding (with `nearest` the draw
    /// is not used), so `sr_state` follows the contract's rule in every
    /// configuration.
    #[inline(always)]
    fn draw(self, g: &mut StochasticBits) -> u32 {
        g.draw()
    }

    fn sr_state(g: &StochasticBits) -> Option<u32> {
        Some(g.state)
    }

    /// `mul32(widen(a), widen(b))`, each operand widened from its format.
    #[inline(always)]
    fn product(self, which: Product, a: i64, b: i64) -> i64 {
        let (ta, tb) = self.operands(which);
        // A word's bits above its format's are ignored, as `widen` does
        // (the tables' lengths are powers of two).
        let (a, b) = (a as usize & (ta.len() - 1), b as usize & (tb.len() - 1));
        i64::from(mul32(ta[a], tb[b]))
    }

    #[inline(always)]
    fn read(self, sum: i64) -> i64 {
        sum
    }

    #[inline(always)]
    fn add(self, sum: i64, p: i64) -> i64 {
        i64::from(add32(bits(sum), bits(p)))
    }

    /// An invalid dy leaves `dw` as it is: no product is added (adding
    /// +0.0 would turn -0.0 into +0.0).
    #[inline(always)]
    fn accumulate(
        self,
        which: Product,
        sums: &mut [i64],
        a: &[i64],
        b: &[i64],
        valid: Option<&[bool]>,
    ) {
        let n = sums.len();
        let (a, b) = (&a[..n], &b[..n]);
        match valid {
            None => {
                for k in 0..n {
                    sums[k] = self.add(sums[k], self.product(which, a[k], b[k]));
                }
            }
            Some(valid) => {
                for k in 0..n {
                    if valid[k] {
                        sums[k] = self.add(sums[k], self.product(which, a[k], b[k]));
                    }
                }
            }
        }
    }

    #[inline(always)]
    fn shown(self, w: i64) -> i64 {
        w
    }

    /// `round_w(sub32(widen(w), scale(dw, lr)))`.
    #[inline(always)]
    fn sgd(self, shown: i64, dw: i64, lr: u32, r: u32) -> i64 {
        i64::from(sf::sgd(&self.format, bits(shown), bits(dw), lr, r))
    }

    /// `scale(dw, lr)`, an fp32 value in `prod_dw`.
    #[inline(always)]
    fn step(self, dw: i64, lr: u32, _: u32) -> i64 {
        i64::from(sf::scale32(bits(dw), lr))
    }

    /// `round_w(sub32(widen(w), prod_dw))`.
    #[inline(always)]
    fn minus_step(self, shown: i64, step: i64, r: u32) -> i64 {
        let f = &self.format;
        let diff = sf::sub32(sf::widen(f.weights, bits(shown)), bits(step));
        i64::from(sf::round_update(f, diff, r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sysgrad_rng::Rng;

    /// The stand-ins of the multiply-accumulate loops are the soft-float's
    /// operations: the CPU's product and sum on every pair of fp32 edge
    /// values and on random bits biased to every binade, and the tables on
    /// every pattern of every format.
    #[test]
    fn mul_add_agree_with_the_soft_float() {
        let edges = [
            0u32,
            0x8000_0000,
            1,
            0x8000_0001,
            0x007F_FFFF,
            0x0080_0000,
            0x0080_0001,
            0x3F80_0000,
            0x3FFF_FFFF,
            0x7F7F_FFFF,
            0xFF7F_FFFF,
            0x7F80_0000,
            0xFF80_0000,
            0x7FC0_0000,
            0xFFC0_0001,
            0x7F80_0001,
            0x1F80_0000,
            0x5F80_0000,
        ];
        let mut rng = Rng::new(0xf32);
        let mut values = edges.to_vec();
        for _ in 0..200_000 {
            let r = rng.next_u64() as u32;
            values.push(match rng.below(3) {
                0 => r,
                _ => (r & 0x807F_FFFF) | ((rng.below(256) as u32) << 23),
            });
        }
        for &a in &edges {
            for &b in &edges {
                assert_eq!(mul32(a, b), sf::mul32(a, b), "{a:#x} * {b:#x}");
                assert_eq!(add32(a, b), sf::add32(a, b), "{a:#x} + {b:#x}");
            }
        }
        for pair in values.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            assert_eq!(mul32(a, b), sf::mul32(a, b), "{a:#x} * {b:#x}");
            assert_eq!(add32(a, b), sf::add32(a, b), "{a:#x} + {b:#x}");
            let c = (b & 0x7FFF_FFFF) | (!a & 0x8000_0000);
            assert_eq!(add32(a, c), sf::add32(a, c), "{a:#x} + {c:#x}");
        }
        for k in FloatKind::ALL {
            let t = widened(k);
            assert!((0..1u32 << k.encoding().bits()).all(|p| t[p as usize] == sf::widen(k, p)));
        }
    }
}
