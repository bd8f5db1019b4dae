//! The array's operating modes: the 4-bit `mode` input of `sa_top`
//! (`docs/ARCHITECTURE.md`, Modes and Dense pipelining). The two arrays
//! decode the same codes differently, each from its own table: the `none`
//! array has [`Mode::ALL`] ([`Mode::from_code`]), the dense array
//! [`Mode::DENSE`] ([`Mode::dense_from_code`]), and a dense array's waves
//! carry one of [`Mode::WAVE_OPS`] ([`Mode::wave_op_from_code`]). The PE
//! generator declares its constants from these tables and the emulator
//! decodes with them, so the codes exist only here.

use serde::{Deserialize, Serialize};

/// Width of the `mode` port.
pub const MODE_BITS: u32 = 4;

/// Width of a wave's operation (`wave_op`): the streaming mode codes 0..=5.
pub const WAVE_OP_BITS: u32 = 3;

/// Width of a wave's load row (`wave_load_row`) on an array of `rows` rows.
pub fn load_row_bits(rows: usize) -> u32 {
    rows.next_power_of_two().trailing_zeros().max(1)
}

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
    /// Dense arrays only: the wave inputs enter the array.
    Stream = 8,
}

impl Mode {
    /// The modes of a `none` array, in code order. Codes 8..15 are
    /// reserved there and behave as IDLE (8 is STREAM on a dense array).
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

    /// The modes of a dense array (`docs/ARCHITECTURE.md`, Dense
    /// pipelining): every other code takes a bubble, like IDLE.
    pub const DENSE: [Mode; 4] = [Mode::Idle, Mode::Update, Mode::Drain, Mode::Stream];

    /// Decodes a 4-bit code on a dense array; codes it does not have are IDLE.
    pub fn dense_from_code(code: u8) -> Mode {
        Mode::DENSE
            .into_iter()
            .find(|m| m.code() == code)
            .unwrap_or(Mode::Idle)
    }

    /// Decodes a 4-bit code on a `none` array; reserved codes 8..15 behave as IDLE.
    pub fn from_code(code: u8) -> Mode {
        Mode::ALL
            .get(usize::from(code))
            .copied()
            .unwrap_or(Mode::Idle)
    }

    /// What a wave's data column can do on a dense array (`wave_op`, the
    /// codes of the `none` array's streaming modes); every other code of
    /// [`WAVE_OP_BITS`] bits is a bubble.
    pub const WAVE_OPS: [Mode; 4] = [Mode::Fwd, Mode::BwdDx, Mode::BwdDw, Mode::BwdIl];

    /// Decodes a wave's `op` on a dense array: codes not in
    /// [`Mode::WAVE_OPS`], and BWD_IL on a sequential array, do nothing
    /// (IDLE).
    pub fn wave_op_from_code(code: u8, interleaved: bool) -> Mode {
        match Mode::WAVE_OPS.into_iter().find(|m| m.code() == code) {
            Some(Mode::BwdIl) if !interleaved => Mode::Idle,
            Some(m) => m,
            None => Mode::Idle,
        }
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
            Mode::Stream => "STREAM",
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

/// The raw value of the 4-bit `mode` port: one of the [`Mode`]s or a
/// reserved code 8..15. Per-cycle stimulus carries this rather than a
/// [`Mode`] so that a test can drive the reserved codes too (which the
/// array must treat as IDLE); [`ModeCode::mode`] is what the array does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ModeCode(u8);

impl ModeCode {
    /// The code `code`, or `None` if it does not fit the port.
    pub fn new(code: u8) -> Option<ModeCode> {
        (code < 1 << MODE_BITS).then_some(ModeCode(code))
    }

    /// Every value of the port, 0..=15.
    pub fn all() -> impl Iterator<Item = ModeCode> {
        (0..1 << MODE_BITS).map(ModeCode)
    }

    pub fn code(self) -> u8 {
        self.0
    }

    /// The mode the array runs for this code (reserved codes: IDLE).
    #[inline]
    pub fn mode(self) -> Mode {
        Mode::from_code(self.0)
    }

    pub fn is_reserved(self) -> bool {
        usize::from(self.0) >= Mode::ALL.len()
    }
}

impl From<Mode> for ModeCode {
    fn from(m: Mode) -> ModeCode {
        ModeCode(m.code())
    }
}

/// The same code: a reserved code equals no [`Mode`], although it runs as IDLE.
impl PartialEq<Mode> for ModeCode {
    fn eq(&self, m: &Mode) -> bool {
        self.0 == m.code()
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
        for code in 0..1 << MODE_BITS {
            let m = Mode::dense_from_code(code);
            assert!(m.code() == code || m == Mode::Idle);
        }
        assert_eq!(Mode::dense_from_code(Mode::Fwd.code()), Mode::Idle);
        assert_eq!(Mode::dense_from_code(Mode::Stream.code()), Mode::Stream);
        // STREAM is a reserved code on a `none` array.
        assert_eq!(Mode::from_code(Mode::Stream.code()), Mode::Idle);
        assert!(Mode::DENSE.iter().all(|m| m.code() < 1 << MODE_BITS));
    }

    #[test]
    fn wave_ops_fit_their_field_and_il_needs_an_interleaved_array() {
        for m in Mode::WAVE_OPS {
            assert!(m.code() < 1 << WAVE_OP_BITS, "{m:?}");
            assert_eq!(Mode::wave_op_from_code(m.code(), true), m);
        }
        for code in 0..1 << WAVE_OP_BITS {
            let m = Mode::wave_op_from_code(code, true);
            let op = Mode::WAVE_OPS.iter().any(|w| w.code() == code);
            assert_eq!(m, if op { m } else { Mode::Idle }, "{code}");
            assert!(!op || m.code() == code, "{code}");
        }
        for m in [Mode::Idle, Mode::Load, Mode::Update, Mode::Drain] {
            assert_eq!(Mode::wave_op_from_code(m.code(), true), Mode::Idle);
        }
        let il = Mode::BwdIl.code();
        assert_eq!(Mode::wave_op_from_code(il, false), Mode::Idle);
        assert_eq!(
            Mode::wave_op_from_code(Mode::BwdDw.code(), false),
            Mode::BwdDw
        );
    }

    #[test]
    fn load_row_bits_is_max_1_ceil_log2() {
        for (rows, bits) in [
            (1, 1),
            (2, 1),
            (3, 2),
            (4, 2),
            (5, 3),
            (16, 4),
            (17, 5),
            (64, 6),
        ] {
            assert_eq!(load_row_bits(rows), bits, "{rows}");
        }
    }

    #[test]
    fn mode_codes_cover_the_port_and_reserved_ones_run_idle() {
        assert_eq!(ModeCode::all().count(), 16);
        assert_eq!(ModeCode::new(16), None);
        for c in ModeCode::all() {
            assert_eq!(ModeCode::new(c.code()), Some(c));
            assert_eq!(c.is_reserved(), c.code() >= 8);
            if c.is_reserved() {
                assert_eq!(c.mode(), Mode::Idle);
                assert!(c != Mode::Idle, "code {} is not IDLE's code", c.code());
            } else {
                assert_eq!(ModeCode::from(c.mode()), c);
                assert!(c == c.mode());
            }
        }
    }
}
