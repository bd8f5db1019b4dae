//! Pipelined training across several arrays.
//!
//! P arrays (the emulated array, each with its own configuration) in a
//! line, joined by links of configurable width and latency; the compute
//! layers of a model or a SCALE-Sim topology partitioned across them; and
//! the schedules of the pipeline-parallel training literature run on them:
//! GPipe, PipeDream 1F1B with weight stashing, LayerPipe, LayerPipe2 (with
//! stashing or its moving-average weight reconstruction), zero bubble
//! (ZB-H1) and SpikePipe (its paper's delayed gradients, and a synchronous
//! variant), each with the interleaved or the sequential backward on the
//! arrays.
//!
//! A new schedule is a variant of [`Schedule`]: its name, whether it is
//! synchronous, and its rules in [`Plan`] (in-flight limit, lag, priority,
//! or a fixed per-stage order); the simulator, the numerics and the
//! reports follow from those.
//!
//! * [`work`]: the layers to pipeline (model file or topology).
//! * [`cost`]: task costs, counted by the array models (never a formula).
//! * [`system`], [`partition`]: arrays and links; balanced or given partitions.
//! * [`plan`]: the schedules and their rules; [`sim`]: the event-driven
//!   timeline; [`metrics`]: the figures; [`gantt`]: the SVG chart.
//! * [`budget`]: the memory and time of one run, estimated before it starts.
//! * [`setup`]: all of the above for one run; [`report`]: its files.
//! * [`numerics`]: training the model in fixed point in the timeline's
//!   order, so stale weights and delayed gradients change the result.

pub mod budget;
pub mod cost;
pub mod error;
pub mod gantt;
pub mod metrics;
pub mod numerics;
pub mod partition;
pub mod plan;
pub mod report;
pub mod setup;
pub mod sim;
pub mod system;
pub mod work;

pub use error::{PipelineError, Result};
pub use plan::{Kind, Plan, Schedule, Weights};
pub use setup::{Measured, PartitionChoice, Setup};
pub use system::{Link, System};
pub use work::Work;
