//! [`PeArith`] for the floating-point formats (`[format] kind = "float"`,
//! `docs/ARCHITECTURE.md`, Floating-point formats): data words are bf16,
//! E4M3 or E5M2 bit patterns (each operand in its own format), the
//! accumulators fp32 bit patterns, and the update rounds to the weights'
//! format, to nearest or stochastically with each PE's generator.
//!
//! Every operation is `sysgrad_config::float`'s; nothing saturates, so an
//! accumulator presents what it holds (`read` is the identity) and a
//! weight is shown as it is.

use super::arith::{PeArith, Product};
use sysgrad_config::float::{self as sf, FloatFormat, FloatKind, StochasticBits};

/// The floating-point arithmetic of a format's PEs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Float {
    format: FloatFormat,
}

impl Float {
    /// The arithmetic of format `f`.
    pub fn new(format: FloatFormat) -> Self {
        Float { format }
    }

    /// The formats of a product's two operands, in argument order.
    #[inline(always)]
    fn operands(self, which: Product) -> (FloatKind, FloatKind) {
        let f = &self.format;
        match which {
            Product::Forward => (f.weights, f.activations),
            Product::Dx => (f.weights, f.gradients),
            Product::Dw => (f.gradients, f.activations),
        }
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
        let (ka, kb) = self.operands(which);
        i64::from(sf::mul32(sf::widen(ka, bits(a)), sf::widen(kb, bits(b))))
    }

    #[inline(always)]
    fn read(self, sum: i64) -> i64 {
        sum
    }

    #[inline(always)]
    fn add(self, sum: i64, p: i64) -> i64 {
        i64::from(sf::add32(bits(sum), bits(p)))
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
    fn step(self, dw: i64, lr: u32) -> i64 {
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
