//! The numbers the hardware and the software agree on, bit for bit, each
//! written down once: the generator builds the RTL's decoders from these
//! tables, the emulator and the assembler encode and decode with them, and
//! the testbench drives and checks the same values.
//!
//! * [`mode`]: the array's 4-bit mode codes (the `none` and the dense
//!   array's) and the operations a dense array's waves carry.
//! * [`wave`]: the layout of a wave's control word (dense arrays).
//! * [`command`]: command words: opcodes, field positions, per-command
//!   argument layout, backward modes and REQUANT destinations.
//! * [`error`]: the controller's error codes, in priority order.
//! * [`timing`]: how many cycles each array operation takes.
//! * [`count`]: figures that cannot wrap ([`count::Count`], checked,
//!   its overflow reported as [`count::Overflow`]).
//! * [`host`]: the accelerator's AXI4-Lite register map, DMA codes,
//!   status bits and hardware counters.
//!
//! `docs/ARCHITECTURE.md`, `docs/COMMANDS.md` and `docs/HOST.md` explain them.

pub mod command;
pub mod count;
pub mod error;
pub mod host;
pub mod mode;
pub mod timing;
pub mod wave;

pub use command::{BackwardMode, DataBuffer, Field, Format};
pub use count::{Count, Overflow};
pub use error::ErrorCode;
pub use mode::{Mode, ModeCode};
pub use wave::WaveField;
