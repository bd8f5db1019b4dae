//! The number format as the PEs compute with it: one trait, [`PeArith`],
//! that both pipelinings step their registers with, so that a format is
//! an implementation of it and never a branch in the array.
//!
//! Registers hold `i64` words whatever the format: a fixed-point value
//! today, a bit pattern for a floating-point format. Every operation the
//! mesh does on their contents goes through the trait: the exact product
//! of two data words, an accumulator add (with the bounds an accumulator
//! register saturates to, and what it presents to its readers), the
//! multiply-accumulate over a block of PEs, the SGD step of UPDATE and
//! the weight a PE presents to its multipliers.
//!
//! The array is generic over the implementation ([`crate::array::NoneArray`]
//! and [`crate::array::DenseArray`] take it as a type parameter), so the
//! hot loops are compiled for one format each, and [`crate::Array::new`]
//! picks it once from `cfg.format()`.
//!
//! # Adding a format
//!
//! A floating-point format (bf16 or FP8 data with fp32 accumulation, say)
//! is a new type beside [`crate::array::Fixed`], in its own file:
//!
//! 1. implement [`PeArith`] for it, with registers holding bit patterns:
//!    `product` widens both operands and multiplies (exactly, in the
//!    accumulator's format), `add` and `accumulate` round as the hardware
//!    adder does (no saturation bounds: `read` is then the identity), the
//!    SGD step scales `dw` by the learning rate and rounds to the data
//!    format, and `shown` is the data-format rounding of a weight;
//!    `accumulate` must keep a register whose `valid` is false as it is
//!    (adding +0.0 would turn -0.0 into +0.0); `product` widens each
//!    operand from the format of its role ([`Product`]); a format whose
//!    SGD unit keeps state (stochastic rounding's generator) names it as
//!    its [`PeArith::Generator`], which every mesh holds per PE;
//! 2. give `Array` one arm per pipelining for it (`NoneFloat(NoneArray<Float>)`
//!    and `DenseFloat(DenseArray<Float>)`, as [`crate::array::Fixed`] has
//!    arms with and without deferred saturation) and choose it in
//!    `Array::new` from `cfg.format()`;
//! 3. nothing in `none.rs`, `dense.rs` or `core.rs` changes.

use std::fmt::Debug;

/// Which of a PE's products a multiplier forms, so that a format whose
/// operands differ (weights, activations and gradients each in their own
/// format) widens each from its own. Callers pass a constant, which the
/// inlined hot loops fold away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Product {
    /// `w * x` (FWD): weight by activation.
    Forward,
    /// `w * dy` (BWD_DX): weight by gradient.
    Dx,
    /// `dy * x` (BWD_DW): gradient by activation.
    Dw,
}

/// The arithmetic of a PE in one number format. Values are register
/// contents (`i64` words); every method is a pure function of them and of
/// the format (`self`, a small `Copy` value such as the widths and bounds),
/// except the SGD unit's random bits, which come from the PE's
/// [`PeArith::Generator`], a register of each PE that the mesh holds.
pub trait PeArith: Copy + Debug + PartialEq + Eq + Send + Sync + 'static {
    /// The state the SGD unit of each PE keeps besides `w` (the stochastic
    /// rounding generator's `sr_state`; stepped unread in a PE that rounds
    /// to nearest).
    type Generator: Copy + Debug + PartialEq + Eq + Send + Sync + 'static;

    /// PE (`row`, `col`)'s generator after reset.
    fn generator(self, row: usize, col: usize) -> Self::Generator;

    /// Steps the generator once (every cycle the PE's SGD unit writes a
    /// weight) and returns the draw that cycle's rounding uses.
    fn draw(self, g: &mut Self::Generator) -> u32;

    /// The generator as the RTL's `sr_state` register, if it has one.
    fn sr_state(g: &Self::Generator) -> Option<u32>;

    /// The exact product of two data words, as an accumulator-format word.
    fn product(self, which: Product, a: i64, b: i64) -> i64;

    /// What an accumulator register (`psv`, `psh`, `dw`) holding `sum`
    /// presents to its readers: its neighbours, the output deskews, the
    /// `dw_out` port, DRAIN and UPDATE.
    fn read(self, sum: i64) -> i64;

    /// What an accumulator register holding `sum` takes when the product
    /// `p` is added to it.
    fn add(self, sum: i64, p: i64) -> i64;

    /// Every PE of a block adds the product of its two inputs to the sum
    /// it holds: `sums[k] = add(sums[k], product(which, a[k], b[k]))`, only
    /// where `valid[k]` if `valid` is given (an invalid dy leaves the
    /// register as it is). One call steps whole rows of PEs, so it must
    /// vectorise.
    fn accumulate(
        self,
        which: Product,
        sums: &mut [i64],
        a: &[i64],
        b: &[i64],
        valid: Option<&[bool]>,
    );

    /// The weight a PE presents to its multipliers and its south
    /// neighbour when its `w` register holds `w`.
    fn shown(self, w: i64) -> i64;

    /// The `w` register after an UPDATE of a PE that presents the weight
    /// `shown` and whose `dw` register holds `dw`, at learning-rate shift
    /// `lr`, in one cycle, with the generator's draw `r`.
    fn sgd(self, shown: i64, dw: i64, lr: u32, r: u32) -> i64;

    /// The step of an UPDATE (the scaled `dw`) that a PE with a multiplier
    /// register computes in one cycle and holds in `prod_dw`, with that
    /// cycle's draw `r` (a format that rounds the step uses it: fixed
    /// point; floating point rounds in [`PeArith::minus_step`]).
    fn step(self, dw: i64, lr: u32, r: u32) -> i64;

    /// The `w` register after the registered `step` is subtracted from the
    /// weight `shown`, in the UPDATE cycle after it was computed, with
    /// that cycle's draw `r`.
    fn minus_step(self, shown: i64, step: i64, r: u32) -> i64;
}
