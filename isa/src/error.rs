//! The controller's error codes (`STATUS[15:8]`, `docs/COMMANDS.md`,
//! Errors): each code's number, name and meaning, listed in the order of
//! their priority when several apply (the RTL's check chain follows it).

use serde::Serialize;

/// Width of an error code (`STATUS[15:8]`).
pub const CODE_BITS: u32 = 8;

/// Why the controller stopped at a command. Every command is checked
/// completely before it has any effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum ErrorCode {
    UnknownOpcode = 0x01,
    ReservedBits = 0x02,
    ProgramEnd = 0x03,
    ZeroSize = 0x04,
    TileTooLarge = 0x05,
    LrShift = 0x06,
    NotInterleaved = 0x07,
    NoTile = 0x08,
    AddressRange = 0x09,
    WeightOverlap = 0x0A,
    BadFunction = 0x0B,
    NoWindow = 0x0C,
    WindowLength = 0x0D,
    NoGenerator = 0x0E,
}

impl ErrorCode {
    /// Every code, in code order.
    pub const ALL: [ErrorCode; 14] = [
        ErrorCode::UnknownOpcode,
        ErrorCode::ReservedBits,
        ErrorCode::ProgramEnd,
        ErrorCode::ZeroSize,
        ErrorCode::TileTooLarge,
        ErrorCode::LrShift,
        ErrorCode::NotInterleaved,
        ErrorCode::NoTile,
        ErrorCode::AddressRange,
        ErrorCode::WeightOverlap,
        ErrorCode::BadFunction,
        ErrorCode::NoWindow,
        ErrorCode::WindowLength,
        ErrorCode::NoGenerator,
    ];

    /// The checks made on a decoded command, highest priority first
    /// (`UNKNOWN_OPCODE` and `PROGRAM_END` are found while fetching, and
    /// `RESERVED_BITS` while decoding, before any of these).
    pub const CHECK_ORDER: [ErrorCode; 11] = [
        ErrorCode::BadFunction,
        ErrorCode::ZeroSize,
        ErrorCode::TileTooLarge,
        ErrorCode::LrShift,
        ErrorCode::NotInterleaved,
        ErrorCode::NoGenerator,
        ErrorCode::NoTile,
        ErrorCode::NoWindow,
        ErrorCode::WindowLength,
        ErrorCode::AddressRange,
        ErrorCode::WeightOverlap,
    ];

    /// The 8-bit code in `STATUS`.
    pub fn code(self) -> u8 {
        self as u8
    }

    pub fn from_code(code: u8) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|e| e.code() == code)
    }

    /// The name in `docs/COMMANDS.md`, e.g. `TILE_TOO_LARGE`.
    pub fn name(self) -> &'static str {
        use ErrorCode::*;
        match self {
            UnknownOpcode => "UNKNOWN_OPCODE",
            ReservedBits => "RESERVED_BITS",
            ProgramEnd => "PROGRAM_END",
            ZeroSize => "ZERO_SIZE",
            TileTooLarge => "TILE_TOO_LARGE",
            LrShift => "LR_SHIFT",
            NotInterleaved => "NOT_INTERLEAVED",
            NoTile => "NO_TILE",
            AddressRange => "ADDRESS_RANGE",
            WeightOverlap => "WEIGHT_OVERLAP",
            BadFunction => "BAD_FUNCTION",
            NoWindow => "NO_WINDOW",
            WindowLength => "WINDOW_LENGTH",
            NoGenerator => "NO_GENERATOR",
        }
    }

    /// What went wrong, in a phrase.
    pub fn message(self) -> &'static str {
        use ErrorCode::*;
        match self {
            UnknownOpcode => "unknown opcode",
            ReservedBits => "a reserved or unused field is not zero",
            ProgramEnd => "the program ended before a HALT (or inside a two-word command)",
            ZeroSize => {
                "a size field (m, k, n, count or lanes; WINDOW w, h, ow, oh, stride or images) is zero"
            }
            TileTooLarge => {
                "the tile is larger than the array (m > cols or k > rows), or ACT writes more \
                 lanes than its destination has"
            }
            LrShift => {
                "lr_shift is larger than 63 (the array's port is 6 bits), or is not the \
                 constant lr_shift the array was built with"
            }
            NotInterleaved => {
                "interleaved backward on an array built with backward = \"sequential\""
            }
            NoTile => "the command needs a weight tile in the array and none is loaded",
            AddressRange => "an address range runs past the end of its buffer",
            WeightOverlap => {
                "LOAD_W reads lines that the write-back of the previous tile overwrites"
            }
            BadFunction => {
                "ACT function code 3, or relu_grad (a gradient gate) into the activation buffer"
            }
            NoWindow => "a windowed FORWARD or BACKWARD (win = 1) before any WINDOW",
            NoGenerator => {
                "WINDOW on an accelerator built without the address generator (units.window = false)"
            }
            WindowLength => {
                "a windowed FORWARD or BACKWARD whose n is not the window's images x oh x ow"
            }
        }
    }

    /// The Verilog localparam naming this code, e.g. `E_NO_TILE`.
    pub fn verilog_name(self) -> String {
        format!("E_{}", self.name())
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for ErrorCode {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_md_lists_every_code_in_order() {
        let doc = include_str!("../../docs/COMMANDS.md");
        let mut at = 0;
        for e in ErrorCode::ALL {
            let row = format!("| `0x{:02X}` | `{}` |", e.code(), e.name());
            let found = doc[at..].find(&row);
            assert!(
                found.is_some(),
                "docs/COMMANDS.md lacks the row `{row}` (in code order)"
            );
            at += found.unwrap();
        }
        // The priority sentence names the checks in CHECK_ORDER.
        let order: Vec<String> = ErrorCode::CHECK_ORDER
            .iter()
            .map(|e| format!("`{}`", e.name()))
            .collect();
        assert!(
            doc.contains(&order.join(", ")),
            "docs/COMMANDS.md should give the check order {}",
            order.join(", ")
        );
    }

    #[test]
    fn codes_are_dense_and_round_trip() {
        for (i, e) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(usize::from(e.code()), i + 1);
            assert_eq!(ErrorCode::from_code(e.code()), Some(*e));
        }
        assert_eq!(ErrorCode::from_code(0), None);
    }
}
