//! The accelerator around the array: four on-chip buffers, a command
//! stream and the controller that runs it on the cycle-accurate driver of
//! `sysgrad-emulator`. `docs/COMMANDS.md` is the contract the RTL
//! controller of `sa_accel` follows too.
//!
//! * [`command`]: [`Command`] <-> 64-bit command words (layout from `sysgrad_isa`).
//! * [`asm`]: the text form of programs.
//! * [`buffer`]: banked buffers with access counters.
//! * [`layout`]: how matrices map to buffer lines.
//! * [`machine`]: the [`Accelerator`], with the controller of its array's
//!   pipelining: `none` (checks, then executes, each command on the
//!   driver's tile operations) or [`dense`] (decodes and issues waves side
//!   by side), over a common core (buffers, checks, faults, resident tile,
//!   counters).
//! * `numbers`: what the controller computes on buffer words in the
//!   configuration's number format (the write-back's sum, REQUANT's
//!   rounding, ReLU's test of a positive word), one `LineArith` chosen
//!   once per accelerator.
//! * [`compile`]: programs for an FC layer in `gemm`'s tile order.
//! * [`conv`]: programs for a convolution layer on the address generator
//!   (WINDOW and windowed passes, per kernel element and channel block).
//! * [`error`]: where and why a bad command stopped the controller.
//! * [`link`], [`device`]: the host's side: DMA beats, host-link cycles,
//!   the accelerator behind its host interface and a transcript of it.
//! * [`schedule`]: layer products through the host interface, split to
//!   fit the buffers, with `gemm`'s bits.
//! * [`resident`]: dense layers whose X and dY stay on chip across a
//!   step, chained by ACT.
//! * [`counters`]: the hardware counters of `docs/HOST.md`, as the emulator computes them.
//! * [`window`]: the convolution address generator (WINDOW).

pub mod asm;
pub mod budget;
pub mod buffer;
mod checks;
pub mod command;
pub mod compile;
mod controller;
pub mod conv;
pub mod counters;
pub mod dense;
pub mod device;
pub mod error;
pub mod layout;
pub mod link;
pub mod machine;
mod none;
mod numbers;
pub mod resident;
pub mod schedule;
pub mod stats;
pub mod window;

pub use buffer::{Buffer, BufferId, HostError};
pub use command::{encode_program, ActFunction, BackwardMode, Command, DataBuffer};
pub use compile::{compile_backward, compile_forward, compile_layer, CompileError, FcLayer};
pub use controller::{Resident, State};
pub use device::{Device, DeviceError, HostCounters, HostOp, KeptPrograms, Traffic, Transcript};
pub use error::{ErrorCode, Fault};
pub use layout::Blocked;
pub use link::HostLink;
pub use machine::Accelerator;
pub use stats::{CommandCounters, ControlStats};
pub use window::{Lines, Window};
