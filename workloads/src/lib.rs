//! Real training workloads on the sysgrad emulator.
//!
//! * [`model`]: model files (TOML/JSON) and their checks.
//! * [`data`]: the digits data set and its seeded split.
//! * [`arith`]: fixed point on the cycle-accurate array (or the whole
//!   emulated accelerator), and f32.
//! * [`compile`]: the network compiler for the accelerator.
//! * [`net`]: the layers, written once over [`arith::Arith`].
//! * [`onnx`]: models in and out through ONNX (docs/ONNX.md).
//! * [`train`]: both networks trained side by side on the same batches.
//! * [`report`]: per-layer counters, CSV/JSON and SVG plots.
//! * [`scalesim`]: SCALE-Sim topologies and configs, COMPUTE_REPORT-style output.

pub mod arith;
pub mod budget;
pub mod compile;
pub mod data;
pub mod energy;
pub mod error;
pub mod model;
pub mod net;
pub mod onnx;
pub mod report;
pub mod scalesim;
pub mod train;

pub use data::DIGITS;
pub use error::{Result, WorkloadError};
