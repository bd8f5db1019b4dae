//! Where and why the controller stopped. The codes themselves, their
//! meanings and their priority are defined in `sysgrad_isa::error`.
//! Every command is checked completely before any of its effects happen,
//! so a fault leaves buffers and array exactly as the previous command left
//! them.

use serde::Serialize;
pub use sysgrad_isa::ErrorCode;

/// A stopped controller's status: what went wrong and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("command at word {pc} (0x{word:016x}): {code} (error 0x{:02x})", code.code())]
pub struct Fault {
    pub code: ErrorCode,
    /// Index of the first word of the faulting command in the program.
    pub pc: usize,
    /// That word (0 for [`ErrorCode::ProgramEnd`] at the end of the program).
    pub word: u64,
}
