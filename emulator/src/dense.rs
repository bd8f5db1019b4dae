//! The dense array (`pipelining = "dense"`, `docs/ARCHITECTURE.md`, Dense
//! pipelining): every PE takes, every cycle, the wave its west neighbour
//! took the cycle before, so the control of each data column travels with
//! it; each PE holds an active and a shadow weight and passes a weight
//! stream south for the exchange slots.
//!
//! [`DenseRegs`] holds the registers a dense array has besides those of
//! [`Array`]; [`Array::step`] calls [`Array::step_dense`] for a dense
//! configuration. The PEs are updated in place from the south-east corner
//! to the north-west one: every PE reads only its north and west
//! neighbours' registers, so those still hold their values from before the
//! edge when it reads them.

use crate::array::{Array, CycleInput, DelayLines, Wave};
use sysgrad_config::{fixed, ArrayConfig};
use sysgrad_isa::Mode;

/// The registers of a dense array that the `none` array does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DenseRegs {
    /// Shadow weight of each PE (indexed `i * cols + j`).
    pub ws: Vec<i64>,
    /// The weight stream moving south.
    pub wp: Vec<i64>,
    /// The control of the wave each PE took last.
    pub ctl: Vec<Wave>,
    /// Control skew: row i delays the wave control by i cycles.
    pub ctl_skew: DelayLines<Wave>,
    /// w skew: column j delays `w_in[j]` by j cycles.
    pub w_skew: DelayLines<i64>,
    /// w deskew: column j delays the south row's `wp` by C-1-j cycles.
    pub w_deskew: DelayLines<i64>,
    /// Output registers of the evicted weights (`w_out`).
    pub w_q: Vec<i64>,
}

impl DenseRegs {
    pub fn new(cfg: &ArrayConfig) -> Self {
        let (r, c) = (cfg.rows(), cfg.cols());
        DenseRegs {
            ws: vec![0; r * c],
            wp: vec![0; r * c],
            ctl: vec![Wave::BUBBLE; r * c],
            ctl_skew: DelayLines::new(0..r),
            w_skew: DelayLines::new(0..c),
            w_deskew: DelayLines::new((0..c).map(|j| c - 1 - j)),
            w_q: vec![0; c],
        }
    }
}

/// What a PE's wave computes with, decoded once per PE and cycle.
struct Op {
    fwd: bool,
    dx: bool,
    dw: bool,
}

impl Op {
    /// The operation of a wave on an array whose PEs are (or are not)
    /// interleaved: IL on a sequential array, and any code that is not a
    /// streaming one, do nothing.
    fn of(code: u8, interleaved: bool) -> Op {
        let m = Mode::from_code(code);
        let il = m == Mode::BwdIl && interleaved;
        Op {
            fwd: m == Mode::Fwd,
            dx: m == Mode::BwdDx || il,
            dw: m == Mode::BwdDw || il,
        }
    }
}

/// The neighbour inputs of one PE (the registers north and west of it).
struct Inputs {
    c: Wave,
    x_in: i64,
    d_in: i64,
    dv_in: bool,
    psv_in: i64,
    psh_in: i64,
    wp_in: i64,
    dw_in: i64,
}

impl Array {
    /// One rising edge of a dense array.
    pub(crate) fn step_dense(&mut self, inp: &CycleInput) {
        let (r, c) = (self.rows(), self.cols());
        let mode = Mode::dense_from_code(inp.mode.code());
        self.step_dense_outputs();
        let d = self.dense.as_ref().expect("a dense array");
        // What each edge presents this cycle (the skews' outputs).
        let west_ctl: Vec<Wave> = (0..r)
            .map(|i| d.ctl_skew.output(i, stream_wave(inp, mode)))
            .collect();
        let north_wp: Vec<i64> = (0..c).map(|j| d.w_skew.output(j, inp.w[j])).collect();
        let west_x: Vec<i64> = (0..r).map(|i| self.x_skew.output(i, inp.x[i])).collect();
        let north_d: Vec<(bool, i64)> = (0..c)
            .map(|j| self.dy_skew.output(j, (inp.dy_valid, inp.dy[j])))
            .collect();
        for i in (0..r).rev() {
            for j in (0..c).rev() {
                let inputs = self.dense_inputs(i, j, &west_ctl, &north_wp, &west_x, &north_d);
                self.step_pe(i, j, inputs, mode, inp.lr_shift);
            }
        }
        let d = self.dense.as_mut().expect("a dense array");
        d.ctl_skew.shift_all(|_| stream_wave(inp, mode));
        d.w_skew.shift_all(|j| inp.w[j]);
        self.x_skew.shift_all(|i| inp.x[i]);
        self.dy_skew.shift_all(|j| (inp.dy_valid, inp.dy[j]));
    }

    /// The output side: deskews and output registers sample the PEs
    /// before they change.
    fn step_dense_outputs(&mut self) {
        let (r, c) = (self.rows(), self.cols());
        let bottom = (r - 1) * c;
        for j in 0..c {
            self.y_q[j] = self.y_deskew.output(j, self.psv[bottom + j]);
        }
        let psv = &self.psv;
        self.y_deskew.shift_all(|j| psv[bottom + j]);
        for i in 0..r {
            self.dx_q[i] = self.dx_deskew.output(i, self.psh[i * c + c - 1]);
        }
        let psh = &self.psh;
        self.dx_deskew.shift_all(|i| psh[i * c + c - 1]);
        let d = self.dense.as_mut().expect("a dense array");
        for j in 0..c {
            d.w_q[j] = d.w_deskew.output(j, d.wp[bottom + j]);
        }
        let wp = &d.wp;
        d.w_deskew.shift_all(|j| wp[bottom + j]);
    }

    /// PE(i, j)'s inputs: its west and north neighbours' registers, or the
    /// edge values.
    fn dense_inputs(
        &self,
        i: usize,
        j: usize,
        west_ctl: &[Wave],
        north_wp: &[i64],
        west_x: &[i64],
        north_d: &[(bool, i64)],
    ) -> Inputs {
        let c = self.cols();
        let d = self.dense.as_ref().expect("a dense array");
        let (west, north) = (
            j.checked_sub(1).map(|w| i * c + w),
            i.checked_sub(1).map(|n| n * c + j),
        );
        let (dv_in, d_in) = north.map_or(north_d[j], |k| (self.dv[k], self.d[k]));
        Inputs {
            c: west.map_or(west_ctl[i], |k| d.ctl[k]),
            x_in: west.map_or(west_x[i], |k| self.x[k]),
            d_in,
            dv_in,
            psv_in: north.map_or(0, |k| self.psv[k]),
            psh_in: west.map_or(0, |k| self.psh[k]),
            wp_in: north.map_or(north_wp[j], |k| d.wp[k]),
            dw_in: west.map_or(0, |k| self.dw[k]),
        }
    }

    /// One PE's edge, per the "A PE in every cycle" table.
    fn step_pe(&mut self, i: usize, j: usize, inp: Inputs, mode: Mode, lr_shift: u32) {
        let k = i * self.cols() + j;
        let f = self.cfg.format();
        let aw = f.acc_bits;
        let cfg = self.cfg;
        let sgd = |w: i64, dw: i64, lr: u32| {
            fixed::sgd_update(w, dw, f.frac_bits, cfg.pe_lr_shift(lr), f.in_bits, aw)
        };
        let c = inp.c;
        let op = Op::of(c.op, self.cfg.interleaved());
        let d = self.dense.as_mut().expect("a dense array");
        let (w, ws, dw) = (self.w[k], d.ws[k], self.dw[k]);
        let w_eff = if c.swap { ws } else { w };
        let leaving = match (c.swap, c.update) {
            (true, true) => sgd(w, dw, c.lr.into()),
            (true, false) => w,
            (false, _) => ws,
        };
        let exch = c.load && usize::from(c.load_row) == i;
        let mut w_next = if c.swap { ws } else { w };
        d.ws[k] = match (exch, c.swap) {
            (true, _) => inp.wp_in,
            (false, true) => leaving,
            (false, false) => ws,
        };
        d.wp[k] = if exch { leaving } else { inp.wp_in };
        d.ctl[k] = c;
        self.x[k] = inp.x_in;
        self.d[k] = inp.d_in;
        self.dv[k] = inp.dv_in;
        let acc = |a: i64, p: i64| fixed::acc_add(a, p, aw);
        self.psv[k] = if op.fwd {
            acc(inp.psv_in, w_eff * inp.x_in)
        } else {
            0
        };
        self.psh[k] = if op.dx {
            acc(inp.psh_in, w_eff * inp.d_in)
        } else {
            0
        };
        let base = if c.swap { 0 } else { dw };
        let mut dw_next = if op.dw && inp.dv_in {
            acc(base, inp.d_in * inp.x_in)
        } else {
            base
        };
        // The global modes override what the wave does to w and dw.
        match mode {
            Mode::Update => {
                w_next = sgd(w, dw, lr_shift);
                dw_next = 0;
            }
            Mode::Drain => dw_next = inp.dw_in,
            _ => {}
        }
        self.w[k] = w_next;
        self.dw[k] = dw_next;
    }
}

/// What enters the control skew: the wave in STREAM cycles, a bubble
/// otherwise.
fn stream_wave(inp: &CycleInput, mode: Mode) -> Wave {
    if mode == Mode::Stream {
        // The learning-rate shift enters with the wave from its own port.
        Wave {
            lr: inp.lr_shift as u8,
            ..inp.wave
        }
    } else {
        Wave::BUBBLE
    }
}
