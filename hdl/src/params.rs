//! The parameters and genvars the generated modules share, each named
//! once (the printer checks every use against the module's header).

use crate::expr::P;

/// PE rows (the reduction dimension K).
pub const R: P = P::new("R");
/// PE columns (the output dimension M).
pub const C: P = P::new("C");
/// Data width.
pub const DW: P = P::new("DW");
/// Accumulator width.
pub const AW: P = P::new("AW");
/// Fractional bits of data.
pub const FRAC: P = P::new("FRAC");
/// 1: two multipliers per PE (gradient interleaving); 0: one.
pub const INTERLEAVED: P = P::new("INTERLEAVED");
/// 1: the SGD shift is the constant `LR_SHIFT`.
pub const LR_FIXED: P = P::new("LR_FIXED");
/// The constant SGD shift.
pub const LR_SHIFT: P = P::new("LR_SHIFT");
/// 1: a register after each multiplier (the `none` array).
pub const MUL_REG: P = P::new("MUL_REG");
/// The seed of the PEs' stochastic-rounding generators.
pub const SEED: P = P::new("SEED");
/// Bits of a load row (the dense array): max(1, ceil(log2 R)).
pub const RB: P = P::new("RB");

/// The buffers' depths and the counters' width (`sa_accel`).
pub const W_DEPTH: P = P::new("W_DEPTH");
pub const X_DEPTH: P = P::new("X_DEPTH");
pub const G_DEPTH: P = P::new("G_DEPTH");
pub const A_DEPTH: P = P::new("A_DEPTH");
pub const C_DEPTH: P = P::new("C_DEPTH");
pub const CNT_BITS: P = P::new("CNT_BITS");
/// 1: the convolution address generator is built (`units.window`).
pub const WINDOW: P = P::new("WINDOW");

/// Genvars: PE row and column, buffer lane.
pub const I: P = P::new("i");
pub const J: P = P::new("j");
pub const L: P = P::new("l");
