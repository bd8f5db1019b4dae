//! The controller's error codes. Every command is checked completely before
//! any of its effects happen, so a fault leaves buffers and array exactly as
//! the previous command left them.

use serde::Serialize;
use sysgrad_config::host::error_code as code;

/// Why the controller stopped. The numeric code is what the RTL controller
/// reports on its `error` status output; `docs/COMMANDS.md` lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, thiserror::Error)]
pub enum ErrorCode {
    #[error("unknown opcode")]
    UnknownOpcode = code::UNKNOWN_OPCODE as isize,
    #[error("a reserved or unused field is not zero")]
    ReservedBits = code::RESERVED_BITS as isize,
    #[error("the program ended before a HALT (or inside a two-word command)")]
    ProgramEnd = code::PROGRAM_END as isize,
    #[error("a size field (m, k, n or count) is zero")]
    ZeroSize = code::ZERO_SIZE as isize,
    #[error("the tile is larger than the array (m > cols or k > rows)")]
    TileTooLarge = code::TILE_TOO_LARGE as isize,
    #[error("lr_shift is larger than 63 (the array's port is 6 bits)")]
    LrShift = code::LR_SHIFT as isize,
    #[error("interleaved backward on an array built with backward = \"sequential\"")]
    NotInterleaved = code::NOT_INTERLEAVED as isize,
    #[error("the command needs a weight tile in the array and none is loaded")]
    NoTile = code::NO_TILE as isize,
    #[error("an address range runs past the end of its buffer")]
    AddressRange = code::ADDRESS_RANGE as isize,
    #[error("LOAD_W reads lines that the write-back of the previous tile overwrites")]
    WeightOverlap = code::WEIGHT_OVERLAP as isize,
}

impl ErrorCode {
    pub fn code(self) -> u8 {
        self as u8
    }
}

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
