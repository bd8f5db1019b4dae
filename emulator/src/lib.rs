//! Cycle-accurate model of the sysgrad training array.
//!
//! * [`array`]: the registers of `sa_top` and one clock edge ([`Array::step`]).
//! * [`dense`]: the registers and clock edge of a dense array (waves,
//!   shadow weights, exchange slots).
//! * [`driver`]: tile operations (load, forward, backward, drain, update)
//!   turned into per-cycle port stimulus, with counters and recording.
//! * [`gemm`]: layer-sized products tiled onto the array.
//! * [`fast`]: the same results and counters computed per tile without
//!   stepping cycles, behind the [`fast::Engine`] trait shared with the
//!   cycle-accurate path.
//!
//! The accelerator around the array (buffers, command stream, controller)
//! is the `sysgrad-accel` crate; design-space sweeps are `sysgrad-explore`.
//!
//! The results of [`gemm`] and [`fast`] (and of `sysgrad-accel`) are
//! checked by property test against `sysgrad-oracle`, an independent i128
//! reference written from `docs/ARCHITECTURE.md` alone (`tests/oracle.rs`).

pub mod array;
pub mod dense;
mod dense_gemm;
pub mod driver;
pub mod fast;
pub mod gemm;
pub mod issue;
pub mod stats;

pub use array::{Array, CycleInput, CycleOutput, Wave};
pub use driver::{DriveError, Driver, Recording};
pub use stats::{Counters, Phase, Stats};
pub use sysgrad_isa::{Mode, ModeCode};
