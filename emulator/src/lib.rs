//! Cycle-accurate model of the sysgrad training array.
//!
//! * [`array`]: the registers of `sa_top` and one clock edge ([`Array::step`]).
//! * [`driver`]: tile operations (load, forward, backward, drain, update)
//!   turned into per-cycle port stimulus, with counters and recording.
//! * [`gemm`]: layer-sized products tiled onto the array.
//! * [`fast`]: the same results and counters computed per tile without
//!   stepping cycles, behind the [`fast::Engine`] trait shared with the
//!   cycle-accurate path.
//! * [`accel`]: buffers, command stream and controller around the array
//!   (`docs/COMMANDS.md`).
//! * [`sweep`]: design-space sweeps over array sizes, widths and schedules.
//!
//! The results of [`gemm`], [`fast`] and [`accel`] are checked by property
//! test against `sysgrad-oracle`, an independent i128 reference written
//! from `docs/ARCHITECTURE.md` alone (`tests/oracle.rs`).

pub mod accel;
pub mod array;
pub mod driver;
pub mod fast;
pub mod gemm;
pub mod mode;
pub mod stats;
pub mod sweep;

pub use array::{Array, CycleInput, CycleOutput};
pub use driver::{DriveError, Driver, Recording};
pub use mode::Mode;
pub use stats::{Counters, Phase, Stats};
