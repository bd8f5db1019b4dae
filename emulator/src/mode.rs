//! The array's operating modes (the 4-bit `mode` input of `sa_top`).

use serde::{Deserialize, Serialize};

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
    pub fn code(self) -> u8 {
        self as u8
    }

    /// Decodes a 4-bit code; reserved codes 8..15 behave as IDLE.
    pub fn from_code(code: u8) -> Mode {
        match code {
            1 => Mode::Load,
            2 => Mode::Fwd,
            3 => Mode::BwdDx,
            4 => Mode::BwdDw,
            5 => Mode::BwdIl,
            6 => Mode::Update,
            7 => Mode::Drain,
            _ => Mode::Idle,
        }
    }

    /// Whether the mode streams dY down the columns (and so computes dX).
    pub fn computes_dx(self) -> bool {
        matches!(self, Mode::BwdDx | Mode::BwdIl)
    }

    /// Whether the mode accumulates dW in the PEs.
    pub fn computes_dw(self) -> bool {
        matches!(self, Mode::BwdDw | Mode::BwdIl)
    }
}
