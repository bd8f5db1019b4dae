//! Cycle-accurate model of the sysgrad training array.
//!
//! * [`array`]: the registers of `sa_top` and one clock edge ([`Array::step`]).
//! * [`driver`]: tile operations (load, forward, backward, drain, update)
//!   turned into per-cycle port stimulus, with counters and recording.
//! * [`gemm`]: layer-sized products tiled onto the array.
//! * [`reference`]: the same arithmetic without cycles, for checking.
//! * [`fast`]: the same results and counters computed per tile without
//!   stepping cycles, behind the [`fast::Engine`] trait shared with the
//!   cycle-accurate path.
//!
//! The accelerator around the array (buffers, command stream, controller)
//! is the `sysgrad-accel` crate; design-space sweeps are `sysgrad-explore`.

pub mod array;
pub mod driver;
pub mod fast;
pub mod gemm;
pub mod reference;
pub mod stats;

pub use array::{Array, CycleInput, CycleOutput};
pub use driver::{DriveError, Driver, Recording};
pub use stats::{Counters, Phase, Stats};
pub use sysgrad_isa::{Mode, ModeCode};
