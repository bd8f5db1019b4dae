//! The array configuration and the fixed-point number format.
//!
//! Both the Verilog generator (`sysgrad-hdl`) and the cycle-accurate model
//! (`sysgrad-emulator`) read their parameters from [`ArrayConfig`] and their
//! arithmetic from [`fixed`], so the two cannot drift apart. The contract is
//! written out in `docs/ARCHITECTURE.md`.

pub mod fixed;
mod load;

pub use load::{load_config, ConfigError};

use serde::{Deserialize, Serialize};

/// How the backward pass computes dX and dW.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backward {
    /// One pass over dY computes dX and dW together (two multipliers per PE).
    Interleaved,
    /// Baseline: a dX pass, then a dW pass that streams dY again (one multiplier).
    Sequential,
}

impl Backward {
    pub fn name(self) -> &'static str {
        match self {
            Backward::Interleaved => "interleaved",
            Backward::Sequential => "sequential",
        }
    }
}

/// Geometry of the PE mesh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArrayShape {
    pub rows: usize,
    pub cols: usize,
    pub backward: Backward,
}

/// Fixed-point number format (see [`fixed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NumberFormat {
    /// Signed data width of x, w and dy.
    pub in_bits: u32,
    /// Signed accumulator width.
    pub acc_bits: u32,
    /// Fractional bits of a data value; accumulators carry twice as many.
    pub frac_bits: u32,
}

/// The whole configuration, as read from TOML or JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArrayConfig {
    pub array: ArrayShape,
    pub format: NumberFormat,
}

pub const MAX_DIM: usize = 64;
pub const IN_BITS: std::ops::RangeInclusive<u32> = 4..=16;
pub const ACC_BITS: std::ops::RangeInclusive<u32> = 16..=48;
/// Width of the `lr_shift` input port.
pub const LR_SHIFT_BITS: u32 = 6;

impl ArrayConfig {
    pub fn new(rows: usize, cols: usize, backward: Backward, format: NumberFormat) -> Self {
        ArrayConfig {
            array: ArrayShape {
                rows,
                cols,
                backward,
            },
            format,
        }
    }

    /// The default configuration: 16x16 interleaved, Q7.8 data, 40-bit accumulators.
    pub fn default_16x16() -> Self {
        ArrayConfig::new(
            16,
            16,
            Backward::Interleaved,
            NumberFormat {
                in_bits: 16,
                acc_bits: 40,
                frac_bits: 8,
            },
        )
    }

    pub fn rows(&self) -> usize {
        self.array.rows
    }
    pub fn cols(&self) -> usize {
        self.array.cols
    }
    pub fn interleaved(&self) -> bool {
        self.array.backward == Backward::Interleaved
    }

    /// Checks every field against its allowed range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field: &str, value: String, allowed: String| {
            Err(ConfigError::OutOfRange {
                field: field.to_string(),
                value,
                allowed,
            })
        };
        let a = &self.array;
        let f = &self.format;
        if !(1..=MAX_DIM).contains(&a.rows) {
            return bad("array.rows", a.rows.to_string(), format!("1..={MAX_DIM}"));
        }
        if !(1..=MAX_DIM).contains(&a.cols) {
            return bad("array.cols", a.cols.to_string(), format!("1..={MAX_DIM}"));
        }
        if !IN_BITS.contains(&f.in_bits) {
            return bad(
                "format.in_bits",
                f.in_bits.to_string(),
                format!("{}..={}", IN_BITS.start(), IN_BITS.end()),
            );
        }
        if !ACC_BITS.contains(&f.acc_bits) {
            return bad(
                "format.acc_bits",
                f.acc_bits.to_string(),
                format!("{}..={}", ACC_BITS.start(), ACC_BITS.end()),
            );
        }
        if f.acc_bits < 2 * f.in_bits {
            return bad(
                "format.acc_bits",
                f.acc_bits.to_string(),
                format!(
                    "at least 2 * in_bits = {} so that a product fits",
                    2 * f.in_bits
                ),
            );
        }
        if f.frac_bits >= f.in_bits {
            return bad(
                "format.frac_bits",
                f.frac_bits.to_string(),
                format!("0..={} (less than in_bits)", f.in_bits - 1),
            );
        }
        Ok(())
    }

    /// A short name used for generated file names, e.g. `sa_16x16_i16a40f8_il`.
    pub fn tag(&self) -> String {
        format!(
            "sa_{}x{}_i{}a{}f{}_{}",
            self.array.rows,
            self.array.cols,
            self.format.in_bits,
            self.format.acc_bits,
            self.format.frac_bits,
            match self.array.backward {
                Backward::Interleaved => "il",
                Backward::Sequential => "seq",
            }
        )
    }

    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("config serialises")
    }
}
