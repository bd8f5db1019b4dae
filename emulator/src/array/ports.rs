//! The ports of `sa_top`: what one cycle drives into the array
//! ([`CycleInput`], with the [`Wave`] a dense array's waves carry) and what
//! its output registers show ([`CycleOutput`]).

use sysgrad_config::ArrayConfig;
use sysgrad_isa::ModeCode;

/// The inputs of `sa_top` for one cycle. Lane vectors are indexed by row
/// (`x`) or column (`w`, `dy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CycleInput {
    /// Synchronous active-high reset: the edge clears every register,
    /// whatever the other inputs.
    pub rst: bool,
    /// The raw 4-bit code, so that reserved codes (run as IDLE) can be driven.
    pub mode: ModeCode,
    pub lr_shift: u32,
    pub x: Vec<i64>,
    pub w: Vec<i64>,
    pub dy: Vec<i64>,
    pub dy_valid: bool,
    /// The wave's control (dense arrays, in STREAM cycles; ignored otherwise).
    pub wave: Wave,
}

/// The control a wave carries through a dense array
/// (`docs/ARCHITECTURE.md`, The wave): the `wave_*` inputs, and what each
/// PE's control registers hold. All zero is a bubble.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Wave {
    /// The mode code of the data column's operation (0, or FWD..BWD_IL).
    pub op: u8,
    pub swap: bool,
    pub update: bool,
    /// The learning-rate shift of `update` (travels with the wave).
    pub lr: u8,
    pub load: bool,
    pub load_row: u16,
}

impl Wave {
    pub const BUBBLE: Wave = Wave {
        op: 0,
        swap: false,
        update: false,
        lr: 0,
        load: false,
        load_row: 0,
    };

    pub fn is_bubble(&self) -> bool {
        *self == Wave::BUBBLE
    }
}

impl CycleInput {
    /// All-zero inputs in `mode` (a [`Mode`](sysgrad_isa::Mode) or a raw [`ModeCode`]), reset low.
    pub fn zeros(cfg: &ArrayConfig, mode: impl Into<ModeCode>) -> Self {
        CycleInput {
            rst: false,
            mode: mode.into(),
            lr_shift: 0,
            x: vec![0; cfg.rows()],
            w: vec![0; cfg.cols()],
            dy: vec![0; cfg.cols()],
            dy_valid: false,
            wave: Wave::BUBBLE,
        }
    }
}

#[cfg(test)]
impl CycleInput {
    /// Any of the 16 mode codes, random data and controls (a random wave
    /// on a dense array); a reset in about one cycle of `reset_in`.
    pub(crate) fn random(cfg: &ArrayConfig, rng: &mut sysgrad_rng::Rng, reset_in: usize) -> Self {
        let code = ModeCode::new(rng.below(16) as u8).unwrap();
        let mut inp = CycleInput::zeros(cfg, code);
        inp.random_data(cfg, rng);
        inp.dy_valid = rng.below(2) == 0;
        inp.lr_shift = rng.below(64) as u32;
        inp.rst = rng.below(reset_in) == 0;
        if cfg.dense() {
            inp.wave = Wave {
                op: rng.below(8) as u8,
                swap: rng.below(4) == 0,
                update: rng.below(2) == 0,
                lr: rng.below(64) as u8,
                load: rng.below(3) == 0,
                load_row: rng.below(cfg.rows() + 1) as u16,
            };
        }
        inp
    }
}

#[cfg(test)]
impl CycleInput {
    /// Random data words on x, w and dy: signed values of the data width
    /// in fixed point, any bit pattern of each operand's format in
    /// floating point.
    pub(crate) fn random_data(&mut self, cfg: &ArrayConfig, rng: &mut sysgrad_rng::Rng) {
        match cfg.numbers() {
            sysgrad_config::Numbers::Fixed(f) => {
                for v in self.x.iter_mut().chain(&mut self.w).chain(&mut self.dy) {
                    *v = rng.value(f.widths.in_bits);
                }
            }
            sysgrad_config::Numbers::Float(f) => {
                let lanes = [
                    (&mut self.x, f.activations),
                    (&mut self.w, f.weights),
                    (&mut self.dy, f.gradients),
                ];
                for (lane, kind) in lanes {
                    for v in lane.iter_mut() {
                        *v = rng.below(1 << kind.encoding().bits()) as i64;
                    }
                }
            }
        }
    }
}

/// The outputs of `sa_top` in one cycle (all are register outputs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CycleOutput {
    pub y: Vec<i64>,
    pub dx: Vec<i64>,
    pub dw: Vec<i64>,
    pub w: Vec<i64>,
}
