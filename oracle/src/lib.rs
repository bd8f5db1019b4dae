//! An independent oracle for the sysgrad array: what a layer-level product
//! must return, written from `docs/ARCHITECTURE.md` alone.
//!
//! It shares no code with what it checks: no `sysgrad_config::fixed`, no
//! tiling helpers, no emulator, not even a matrix crate. Every value is an
//! `i128`, wide enough that no intermediate (a product of two 16-bit values,
//! a sum of two 48-bit accumulators, a shift by up to 78) can overflow, so
//! the only clamps are the ones the page prescribes. Widths are parameters.
//!
//! * [`number`]: the number format rules (`sat`, accumulate, `round_shift`,
//!   requantization, the SGD update).
//! * [`float`]: the floating-point formats (bf16, E4M3, E5M2 with fp32
//!   accumulation) with the CPU's IEEE fp32 arithmetic and the `half` and
//!   `float8` crates' conversions, and their layer-level products.
//! * [`layer`]: `Y = W X`, dX, dW and the update of a layer of any size,
//!   tiled and summed in the documented order.
//! * [`matrix`]: a minimal row-major matrix of `i128`.

pub mod float;
pub mod layer;
pub mod matrix;
pub mod number;

pub use layer::{dw, dx, forward, requantize_matrix, update, Config, Stochastic};
pub use matrix::Matrix;
pub use number::{
    acc_add, max_of, min_of, requantize, round_shift, sat, sgd_update, sr_shift, Format,
};
