//! What the controller computes on buffer words, in the configuration's
//! number format (`docs/COMMANDS.md`, Semantics and Floating point): the
//! write-back's accumulate, REQUANT's rounding into a destination buffer
//! and the activation unit's test of a word's sign. One trait,
//! [`LineArith`], chosen once per accelerator from `cfg.numbers()`
//! ([`for_config`]); the controllers never ask which format it is.

use crate::command::DataBuffer;
use sysgrad_config::float::{self as sf, FloatFormat, FloatKind};
use sysgrad_config::{fixed, ArrayConfig, NumberFormat, Numbers};

/// The controller's arithmetic on buffer words of one number format.
pub(crate) trait LineArith: Send + Sync {
    /// A write-back with acc = 1: the result `new` added to the line's
    /// `old` word, as the PEs add.
    fn acc_add(&self, old: i64, new: i64) -> i64;
    /// An accumulator word as REQUANT writes it into buffer `to`.
    fn requantize(&self, acc: i64, to: DataBuffer) -> i64;
    /// Whether a word of buffer `of` stands for a value greater than 0
    /// (ReLU keeps such a word; relu_grad's mask passes its lane).
    fn positive(&self, word: i64, of: DataBuffer) -> bool;
}

/// Two's-complement fixed point: saturating sums, `fixed::requantize`.
struct FixedLines(NumberFormat);

impl LineArith for FixedLines {
    fn acc_add(&self, old: i64, new: i64) -> i64 {
        fixed::acc_add(old, new, self.0.acc_bits)
    }

    fn requantize(&self, acc: i64, _to: DataBuffer) -> i64 {
        let f = self.0;
        fixed::requantize(acc, f.frac_bits, f.in_bits, f.acc_bits)
    }

    fn positive(&self, word: i64, _of: DataBuffer) -> bool {
        word > 0
    }
}

/// Floating point: words are patterns; fp32 sums, rounding to the
/// destination buffer's format.
struct FloatLines(FloatFormat);

impl FloatLines {
    /// The format of a data buffer's words.
    fn kind(&self, of: DataBuffer) -> FloatKind {
        match of {
            DataBuffer::Activations => self.0.activations,
            DataBuffer::Gradients => self.0.gradients,
        }
    }
}

/// A word as the 32-bit pattern it holds (buffer words are never
/// negative in a float format, and at most 32 bits).
fn pattern(word: i64) -> u32 {
    word as u32
}

impl LineArith for FloatLines {
    fn acc_add(&self, old: i64, new: i64) -> i64 {
        sf::add32(pattern(old), pattern(new)).into()
    }

    fn requantize(&self, acc: i64, to: DataBuffer) -> i64 {
        sf::round_to(self.kind(to), pattern(acc)).into()
    }

    /// The value's exact fp32 widening compared as IEEE compares: a NaN,
    /// either zero and every negative value are not greater than 0.
    fn positive(&self, word: i64, of: DataBuffer) -> bool {
        f32::from_bits(sf::widen(self.kind(of), pattern(word))) > 0.0
    }
}

/// The arithmetic of `cfg`'s number format.
pub(crate) fn for_config(cfg: &ArrayConfig) -> Box<dyn LineArith> {
    match cfg.numbers() {
        Numbers::Fixed(_) => Box::new(FixedLines(cfg.format())),
        Numbers::Float(f) => Box::new(FloatLines(f)),
    }
}
