//! Cycle-accurate model of the sysgrad training array.
//!
//! * [`array`](mod@array): the registers of `sa_top` and one clock edge ([`Array::step`]),
//!   with the pipelining (`none`, or `dense`: waves, shadow weights,
//!   exchange slots) and the number format chosen as types.
//! * [`driver`]: tile operations (load, forward, backward, drain, update)
//!   turned into per-cycle port stimulus, with counters and recording.
//! * [`gemm`]: layer-sized products tiled onto the array.
//! * [`issue`]: the issue rules of a dense array, shared by `gemm` and the
//!   accelerator's dense controller.
//! * [`budget`]: the memory and time a layer needs, estimated from its
//!   sizes before anything is allocated.
//! * [`fast`]: the same results and counters computed per tile without
//!   stepping cycles, behind the [`fast::Engine`] trait shared with the
//!   cycle-accurate path.
//!
//! The accelerator around the array (buffers, command stream, controller)
//! is the `sysgrad-accel` crate; design-space sweeps are `sysgrad-explore`.
//!
//! The results of [`gemm`] and [`fast`] (and of `sysgrad-accel`) are
//! checked by property test against `sysgrad-oracle`, an independent i128
//! reference written from `docs/ARCHITECTURE.md` alone (`tests/oracle.rs`),
//! and in floating point against its `float` module (the CPU's IEEE fp32,
//! the `half` and `float8` crates' conversions; `tests/float.rs`).

pub mod array;
pub mod budget;
pub mod driver;
pub mod fast;
pub mod gemm;
pub mod issue;
pub mod stats;

pub use array::{Array, CycleInput, CycleOutput, Wave};
pub use driver::{DriveError, Driver, Recording, Watcher};
pub use stats::{Counters, Phase, Stats};
/// Checked figures (`sysgrad_isa::count`), for the crates above that
/// count from sizes alone.
pub use sysgrad_isa::count;
pub use sysgrad_isa::{Mode, ModeCode};
