//! Register-level model of `sa_top`: the PE mesh with its skew and deskew
//! lines. One call to [`Array::step`] is one rising clock edge.
//!
//! Every field here is a register of the generated RTL (same name, same
//! width, same reset value 0); `docs/ARCHITECTURE.md` is the contract both
//! follow. State is stored structure-of-arrays, PE (i, j) at `i * cols + j`,
//! and `step` allocates nothing.

use crate::mode::Mode;
use sysgrad_config::{fixed, ArrayConfig};

/// The inputs of `sa_top` for one cycle. Lane vectors are indexed by row
/// (`x`) or column (`w`, `dy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CycleInput {
    pub mode: Mode,
    pub lr_shift: u32,
    pub x: Vec<i64>,
    pub w: Vec<i64>,
    pub dy: Vec<i64>,
    pub dy_valid: bool,
}

impl CycleInput {
    /// All-zero inputs in `mode`.
    pub fn zeros(cfg: &ArrayConfig, mode: Mode) -> Self {
        CycleInput {
            mode,
            lr_shift: 0,
            x: vec![0; cfg.rows()],
            w: vec![0; cfg.cols()],
            dy: vec![0; cfg.cols()],
            dy_valid: false,
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

/// A triangular bank of delay lines: lane k holds `len(k)` registers,
/// stored back to back; `regs[start(k)]` is the register nearest the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelayLines<T> {
    pub regs: Vec<T>,
    starts: Vec<usize>,
}

impl<T: Copy + Default> DelayLines<T> {
    fn new(lens: impl Iterator<Item = usize>) -> Self {
        let mut starts = vec![0];
        for len in lens {
            starts.push(starts.last().unwrap() + len);
        }
        DelayLines {
            regs: vec![T::default(); *starts.last().unwrap()],
            starts,
        }
    }

    pub fn lanes(&self) -> usize {
        self.starts.len() - 1
    }

    /// The registers of lane `k`, input end first.
    pub fn lane(&self, k: usize) -> &[T] {
        &self.regs[self.starts[k]..self.starts[k + 1]]
    }

    /// What lane `k` presents at its output this cycle: its last register,
    /// or `input` itself where the lane has none (a wire).
    fn output(&self, k: usize, input: T) -> T {
        let end = self.starts[k + 1];
        if end == self.starts[k] {
            input
        } else {
            self.regs[end - 1]
        }
    }

    /// One clock edge: every register takes its predecessor's value.
    fn shift(&mut self, k: usize, input: T) {
        let (s, e) = (self.starts[k], self.starts[k + 1]);
        if e > s {
            self.regs.copy_within(s..e - 1, s + 1);
            self.regs[s] = input;
        }
    }
}

/// The state of every register in `sa_top`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Array {
    pub cfg: ArrayConfig,
    // PE registers, indexed i * cols + j.
    pub w: Vec<i64>,
    pub x: Vec<i64>,
    pub d: Vec<i64>,
    pub dv: Vec<bool>,
    pub psv: Vec<i64>,
    pub psh: Vec<i64>,
    pub dw: Vec<i64>,
    /// x skew: row i delays by i cycles.
    pub x_skew: DelayLines<i64>,
    /// dy skew: column j delays {valid, dy} by j cycles.
    pub dy_skew: DelayLines<(bool, i64)>,
    /// y deskew: column j delays by C-1-j cycles before `y_q`.
    pub y_deskew: DelayLines<i64>,
    pub y_q: Vec<i64>,
    /// dx deskew: row i delays by R-1-i cycles before `dx_q`.
    pub dx_deskew: DelayLines<i64>,
    pub dx_q: Vec<i64>,
}

impl Array {
    /// The array right after reset: every register 0.
    pub fn new(cfg: ArrayConfig) -> Self {
        let (r, c) = (cfg.rows(), cfg.cols());
        Array {
            cfg,
            w: vec![0; r * c],
            x: vec![0; r * c],
            d: vec![0; r * c],
            dv: vec![false; r * c],
            psv: vec![0; r * c],
            psh: vec![0; r * c],
            dw: vec![0; r * c],
            x_skew: DelayLines::new(0..r),
            dy_skew: DelayLines::new(0..c),
            y_deskew: DelayLines::new((0..c).map(|j| c - 1 - j)),
            y_q: vec![0; c],
            dx_deskew: DelayLines::new((0..r).map(|i| r - 1 - i)),
            dx_q: vec![0; r],
        }
    }

    pub fn rows(&self) -> usize {
        self.cfg.rows()
    }

    pub fn cols(&self) -> usize {
        self.cfg.cols()
    }

    /// The output ports as seen during the current cycle.
    pub fn outputs(&self) -> CycleOutput {
        let (r, c) = (self.rows(), self.cols());
        CycleOutput {
            y: self.y_q.clone(),
            dx: self.dx_q.clone(),
            dw: (0..r).map(|i| self.dw[i * c + c - 1]).collect(),
            w: (0..c).map(|j| self.w[(r - 1) * c + j]).collect(),
        }
    }

    /// One rising clock edge with `inp` applied.
    pub fn step(&mut self, inp: &CycleInput) {
        let (r, c) = (self.rows(), self.cols());
        debug_assert_eq!((inp.x.len(), inp.w.len(), inp.dy.len()), (r, c, c));
        let f = self.cfg.format;
        let aw = f.acc_bits;

        // Output side first: it samples the PE registers before they change.
        for j in 0..c {
            let bottom = self.psv[(r - 1) * c + j];
            self.y_q[j] = self.y_deskew.output(j, bottom);
            self.y_deskew.shift(j, bottom);
        }
        for i in 0..r {
            let east = self.psh[i * c + c - 1];
            self.dx_q[i] = self.dx_deskew.output(i, east);
            self.dx_deskew.shift(i, east);
        }

        // The mesh, south-east corner first, so that every neighbour read
        // below still holds its value from before this edge.
        let mode = match inp.mode {
            Mode::BwdIl if !self.cfg.interleaved() => Mode::Idle,
            m => m,
        };
        for i in (0..r).rev() {
            for j in (0..c).rev() {
                let k = i * c + j;
                let x_in = if j == 0 {
                    self.x_skew.output(i, inp.x[i])
                } else {
                    self.x[k - 1]
                };
                let (d_in, dv_in) = if i == 0 {
                    let (v, d) = self.dy_skew.output(j, (inp.dy_valid, inp.dy[j]));
                    (d, v)
                } else {
                    (self.d[k - c], self.dv[k - c])
                };
                match mode {
                    Mode::Idle => {}
                    Mode::Load => {
                        self.w[k] = if i == 0 { inp.w[j] } else { self.w[k - c] };
                    }
                    Mode::Fwd => {
                        let psv_in = if i == 0 { 0 } else { self.psv[k - c] };
                        self.psv[k] = fixed::acc_add(psv_in, self.w[k] * x_in, aw);
                        self.x[k] = x_in;
                    }
                    Mode::BwdDx | Mode::BwdDw | Mode::BwdIl => {
                        if mode.computes_dx() {
                            let psh_in = if j == 0 { 0 } else { self.psh[k - 1] };
                            self.psh[k] = fixed::acc_add(psh_in, self.w[k] * d_in, aw);
                        }
                        if mode.computes_dw() {
                            if dv_in {
                                self.dw[k] = fixed::acc_add(self.dw[k], d_in * x_in, aw);
                            }
                            self.x[k] = x_in;
                        }
                        self.d[k] = d_in;
                        self.dv[k] = dv_in;
                    }
                    Mode::Update => {
                        self.w[k] = fixed::sgd_update(
                            self.w[k],
                            self.dw[k],
                            f.frac_bits,
                            inp.lr_shift,
                            f.in_bits,
                            aw,
                        );
                        self.dw[k] = 0;
                    }
                    Mode::Drain => {
                        self.dw[k] = if j == 0 { 0 } else { self.dw[k - 1] };
                    }
                }
            }
        }

        // Input skews last: the PEs above consumed their old outputs.
        for i in 0..r {
            self.x_skew.shift(i, inp.x[i]);
        }
        for j in 0..c {
            self.dy_skew.shift(j, (inp.dy_valid, inp.dy[j]));
        }
    }
}
