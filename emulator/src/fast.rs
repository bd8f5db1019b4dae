//! Fast exact mode: the results *and* the counters of running a layer
//! through [`crate::gemm`] on the cycle-accurate [`crate::Driver`], without
//! clocking the array.
//!
//! * [`exact`]: the products ([`forward`], [`backward`]) and the counters
//!   alone ([`count_forward`], [`count_backward`]).
//! * [`ledger`]: the counters of a `none` array, charged tile by tile in
//!   `gemm`'s order (they depend on shapes only), with the operand checks at
//!   the driver's points; [`dense`]: a dense array's, its cycles in closed
//!   form; [`operands`]: what both take.
//! * [`kernel`]: the numbers, folded in the array's saturation order, with a
//!   float GEMM for the rows that provably cannot saturate; [`float`]: a
//!   floating-point format's, added in the array's exact order;
//!   [`numbers`]: one type per format over them, chosen once.
//! * [`engine`]: one trait over both modes, so a caller switches with a flag.
//!
//! `tests/fast_vs_cycle.rs` checks results, errors and every counter
//! against the cycle-accurate path.

pub mod dense;
pub mod engine;
pub mod exact;
pub mod float;
pub mod kernel;
pub mod ledger;
pub mod numbers;
pub mod operands;

pub use engine::{Engine, EngineKind, FastEngine, UnknownEngine};
pub use exact::{backward, backward_on, count_backward, count_forward, forward, generators};
