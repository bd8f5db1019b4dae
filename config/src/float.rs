//! The floating-point number formats (`[format] kind = "float"`): the
//! three data formats a PE multiplies (bf16, OCP E4M3 and E5M2), the fp32
//! accumulator, the update's rounding and the stochastic-rounding random
//! bits. Every fact about a format is a field of its [`Encoding`] here,
//! and the generator, the emulator and the trainers read it from here
//! (`docs/ARCHITECTURE.md`, Floating-point formats).

use serde::{Deserialize, Serialize};

/// A data format of the float PEs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FloatKind {
    /// bfloat16: 1 sign, 8 exponent, 7 fraction bits; fp32's range.
    #[serde(rename = "bf16")]
    Bf16,
    /// OCP FP8 E4M3 ("E4M3FN"): 1 sign, 4 exponent, 3 fraction bits, no
    /// infinities, one NaN per sign (S.1111.111), largest finite 448.
    #[serde(rename = "e4m3")]
    E4M3,
    /// OCP FP8 E5M2: IEEE 754-like (infinities, NaNs), largest finite 57344.
    #[serde(rename = "e5m2")]
    E5M2,
}

/// The names a `[format]` field of a [`FloatKind`] accepts.
pub const FLOAT_KIND_NAMES: &str = "\"bf16\", \"e4m3\", \"e5m2\"";

/// The bit layout of a binary floating-point format and what it does at
/// its edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Encoding {
    pub exp_bits: u32,
    pub man_bits: u32,
    pub bias: i32,
    /// IEEE 754 infinities (all-ones exponent, zero fraction). Without
    /// them (E4M3) an overflow saturates to the largest finite value.
    pub has_infinity: bool,
    /// The NaN every operation that makes a NaN returns (sign 0).
    pub nan: u32,
    /// The largest finite value's bit pattern (sign 0).
    pub max_finite: u32,
}

impl Encoding {
    /// Total width: sign, exponent and fraction.
    pub const fn bits(&self) -> u32 {
        1 + self.exp_bits + self.man_bits
    }
    /// The sign bit's mask.
    pub const fn sign_mask(&self) -> u32 {
        1 << (self.exp_bits + self.man_bits)
    }
}

/// IEEE 754 binary32, the accumulators' format.
pub const FP32: Encoding = Encoding {
    exp_bits: 8,
    man_bits: 23,
    bias: 127,
    has_infinity: true,
    nan: 0x7FC0_0000,
    max_finite: 0x7F7F_FFFF,
};

impl FloatKind {
    /// Every data format, in a fixed order.
    pub const ALL: [FloatKind; 3] = [FloatKind::Bf16, FloatKind::E4M3, FloatKind::E5M2];

    /// The format's layout.
    pub const fn encoding(self) -> Encoding {
        match self {
            FloatKind::Bf16 => Encoding {
                exp_bits: 8,
                man_bits: 7,
                bias: 127,
                has_infinity: true,
                nan: 0x7FC0,
                max_finite: 0x7F7F,
            },
            FloatKind::E4M3 => Encoding {
                exp_bits: 4,
                man_bits: 3,
                bias: 7,
                has_infinity: false,
                nan: 0x7F,
                max_finite: 0x7E,
            },
            FloatKind::E5M2 => Encoding {
                exp_bits: 5,
                man_bits: 2,
                bias: 15,
                has_infinity: true,
                nan: 0x7E,
                max_finite: 0x7B,
            },
        }
    }

    /// The name the configuration uses.
    pub const fn name(self) -> &'static str {
        match self {
            FloatKind::Bf16 => "bf16",
            FloatKind::E4M3 => "e4m3",
            FloatKind::E5M2 => "e5m2",
        }
    }
}

/// How a value is rounded to a narrower format where the contract lets
/// the configuration choose (the SGD update's result).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rounding {
    /// Round to nearest, ties to even.
    #[default]
    Nearest,
    /// Round away from zero with the probability of the dropped fraction
    /// (`docs/ARCHITECTURE.md`, Stochastic rounding), with random bits
    /// from [`StochasticBits`].
    Stochastic,
}

impl Rounding {
    pub fn is_nearest(&self) -> bool {
        *self == Rounding::Nearest
    }
}

/// The floating-point format of a configuration: a data format per
/// operand, fp32 accumulators, and the update's rounding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FloatFormat {
    /// The weights (`w`, the weight buffer).
    pub weights: FloatKind,
    /// The activations (`x`, the activation buffer, Y after REQUANT).
    pub activations: FloatKind,
    /// The gradients (`dy`, the gradient buffer, dX after REQUANT).
    pub gradients: FloatKind,
    /// The rounding of the in-PE SGD update's result.
    pub rounding: Rounding,
    /// The seed of the stochastic-rounding generators.
    pub seed: u32,
}

impl FloatFormat {
    /// Width of a data word on the array's ports and in the data buffers:
    /// the widest of the three formats (a narrower value sits in the low
    /// bits, the rest zero).
    pub fn data_bits(&self) -> u32 {
        [self.weights, self.activations, self.gradients]
            .iter()
            .map(|k| k.encoding().bits())
            .max()
            .expect("three formats")
    }

    /// A short name for file names, e.g. `bf16-e4m3-e5m2-sr`.
    pub fn tag(&self) -> String {
        let sr = match self.rounding {
            Rounding::Nearest => "",
            Rounding::Stochastic => "-sr",
        };
        format!(
            "{}-{}-{}{sr}",
            self.weights.name(),
            self.activations.name(),
            self.gradients.name()
        )
    }
}

/// The width of a stochastic-rounding draw: a rounding compares this
/// many bits of the dropped fraction with as many random bits.
pub const STOCHASTIC_BITS: u32 = 16;

/// The random bits of one PE's stochastic rounding: a 32-bit xorshift
/// generator (Marsaglia 2003, shifts 13, 17, 5), one per PE, seeded from
/// the configuration's seed and the PE's place, stepped once per
/// stochastically rounded update of that PE; a draw is the low
/// [`STOCHASTIC_BITS`] bits of the new state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StochasticBits {
    pub state: u32,
}

impl StochasticBits {
    /// The generator of the PE at `row`, `col` after reset: the seed
    /// mixed with the PE's index (never 0, which xorshift never leaves).
    pub fn new(seed: u32, row: usize, col: usize) -> Self {
        let index = (row as u32) << 16 | col as u32;
        let mixed = (seed ^ index.wrapping_mul(0x9E37_79B9)).wrapping_mul(0x85EB_CA6B);
        StochasticBits {
            state: if mixed == 0 { 1 } else { mixed },
        }
    }

    /// One step of the generator.
    pub const fn next_state(x: u32) -> u32 {
        let x = x ^ (x << 13);
        let x = x ^ (x >> 17);
        x ^ (x << 5)
    }

    /// Steps the generator and returns the draw.
    pub fn draw(&mut self) -> u32 {
        self.state = Self::next_state(self.state);
        self.state & ((1 << STOCHASTIC_BITS) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_match_the_formats_largest_values() {
        // 448 = 1.75 * 2^8, 57344 = 1.75 * 2^15 (OCP FP8 spec, table 1).
        let value = |k: FloatKind| {
            let e = k.encoding();
            let m = e.max_finite & ((1 << e.man_bits) - 1);
            let x = (e.max_finite >> e.man_bits) as i32 - e.bias;
            (1.0 + m as f64 / (1u64 << e.man_bits) as f64) * 2f64.powi(x)
        };
        assert_eq!(value(FloatKind::E4M3), 448.0);
        assert_eq!(value(FloatKind::E5M2), 57344.0);
        assert_eq!(value(FloatKind::Bf16), f32::from_bits(0x7F7F_0000) as f64);
        assert_eq!(f32::from_bits(FP32.max_finite), f32::MAX);
        assert!(f32::from_bits(FP32.nan).is_nan());
    }

    #[test]
    fn every_pe_generator_starts_nonzero_and_differs_from_its_neighbours() {
        let g = |r, c| StochasticBits::new(7, r, c).state;
        assert!((0..16).all(|r| (0..16).all(|c| g(r, c) != 0)));
        assert_ne!(g(0, 0), g(0, 1));
        assert_ne!(g(0, 1), g(1, 0));
        assert_eq!(StochasticBits::next_state(1), 270_369);
    }
}
