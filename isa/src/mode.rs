//! The array's operating modes: the 4-bit `mode` input of `sa_top`
//! (`docs/ARCHITECTURE.md`, Modes). The PE generator declares its mode
//! constants from [`Mode::ALL`] and the emulator decodes with
//! [`Mode::from_code`], so the codes exist only here.

use serde::{Deserialize, Serialize};

/// Width of the `mode` port.
pub const MODE_BITS: u32 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Mode {
    Idle = 0,
    Load = 1,
    Fwd = 2,
    BwdDx = 3,
    BwdDw = 4,
    BwdIl = 5,
    Update = 6,
    Drain = 7,
}

impl Mode {
    /// Every defined mode, in code order. Codes 8..15 are reserved and
    /// behave as IDLE.
    pub const ALL: [Mode; 8] = [
        Mode::Idle,
        Mode::Load,
        Mode::Fwd,
        Mode::BwdDx,
        Mode::BwdDw,
        Mode::BwdIl,
        Mode::Update,
        Mode::Drain,
    ];

    pub fn code(self) -> u8 {
        self as u8
    }

    /// Decodes a 4-bit code; reserved codes 8..15 behave as IDLE.
    pub fn from_code(code: u8) -> Mode {
        Mode::ALL
            .get(usize::from(code))
            .copied()
            .unwrap_or(Mode::Idle)
    }

    /// The name in `docs/ARCHITECTURE.md` and, with `M_`, in the Verilog.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Idle => "IDLE",
            Mode::Load => "LOAD",
            Mode::Fwd => "FWD",
            Mode::BwdDx => "BWD_DX",
            Mode::BwdDw => "BWD_DW",
            Mode::BwdIl => "BWD_IL",
            Mode::Update => "UPDATE",
            Mode::Drain => "DRAIN",
        }
    }

    /// The Verilog localparam naming this mode, e.g. `M_BWD_IL`.
    pub fn verilog_name(self) -> String {
        format!("M_{}", self.name())
    }

    /// Whether the mode streams dY down the columns and computes dX.
    pub fn computes_dx(self) -> bool {
        matches!(self, Mode::BwdDx | Mode::BwdIl)
    }

    /// Whether the mode accumulates dW in the PEs.
    pub fn computes_dw(self) -> bool {
        matches!(self, Mode::BwdDw | Mode::BwdIl)
    }

    /// Whether the mode streams x east along the rows.
    pub fn streams_x(self) -> bool {
        matches!(self, Mode::Fwd | Mode::BwdDw | Mode::BwdIl)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_reserved_codes_idle() {
        for m in Mode::ALL {
            assert_eq!(Mode::from_code(m.code()), m);
        }
        for code in Mode::ALL.len() as u8..1 << MODE_BITS {
            assert_eq!(Mode::from_code(code), Mode::Idle);
        }
    }
}
