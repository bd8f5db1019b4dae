//! What every array has, whatever its pipelining: the registers of the PE
//! mesh and its skew and deskew lines ([`Core`]), the row kernels that move
//! partial sums, and the [`Mesh`] trait each pipelining implements over
//! them (`none.rs`, `dense.rs`).
//!
//! Every field is a register of the generated RTL (same name, same width,
//! same reset value 0); `docs/ARCHITECTURE.md` is the contract both follow.
//! State is stored structure-of-arrays, PE (i, j) at `i * cols + j`.

use super::arith::PeArith;
use super::delay::DelayLines;
use super::ports::CycleInput;
use std::ops::Range;
use sysgrad_config::{ArrayConfig, MAX_DIM};

/// The registers of `sa_top` that every pipelining has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Core {
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

impl Core {
    /// Every register 0.
    pub(crate) fn new(cfg: ArrayConfig) -> Self {
        let (r, c) = (cfg.rows(), cfg.cols());
        Core {
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

    /// Every register to its reset value 0 (the state of [`Core::new`]).
    pub(crate) fn clear(&mut self) {
        for v in [
            &mut self.w,
            &mut self.x,
            &mut self.d,
            &mut self.psv,
            &mut self.psh,
            &mut self.dw,
            &mut self.y_q,
            &mut self.dx_q,
        ] {
            v.fill(0);
        }
        self.dv.fill(false);
        self.x_skew.clear();
        self.dy_skew.clear();
        self.y_deskew.clear();
        self.dx_deskew.clear();
    }

    pub fn rows(&self) -> usize {
        self.cfg.rows()
    }

    pub fn cols(&self) -> usize {
        self.cfg.cols()
    }

    /// The output side of an edge, first: the deskews and output registers
    /// sample the south row's `psv` and the east column's `psh` before the
    /// PEs change, as their readers see them.
    #[inline(always)]
    pub(crate) fn sample_outputs(&mut self, arith: impl PeArith) {
        let (r, c) = (self.rows(), self.cols());
        let bottom = &self.psv[(r - 1) * c..];
        for (j, (q, &b)) in self.y_q.iter_mut().zip(bottom).enumerate() {
            *q = self.y_deskew.output(j, arith.read(b));
        }
        self.y_deskew.shift_all(|j| arith.read(bottom[j]));
        let psh = &self.psh;
        let east = |i: usize| arith.read(psh[i * c + c - 1]);
        for i in 0..r {
            self.dx_q[i] = self.dx_deskew.output(i, east(i));
        }
        self.dx_deskew.shift_all(east);
    }

    /// The input skews take this cycle's x and dy, last: the PEs above
    /// consumed their old outputs.
    #[inline(always)]
    pub(crate) fn shift_input_skews(&mut self, inp: &CycleInput) {
        self.x_skew.shift_all(|i| inp.x[i]);
        self.dy_skew.shift_all(|j| (inp.dy_valid, inp.dy[j]));
    }

    /// What the x skew presents at the west edge of each row this cycle.
    #[inline(always)]
    pub(crate) fn x_west(&self, inp: &CycleInput) -> [i64; MAX_DIM] {
        let mut west = [0; MAX_DIM];
        for (i, v) in west.iter_mut().enumerate().take(self.rows()) {
            *v = self.x_skew.output(i, inp.x[i]);
        }
        west
    }

    /// The dW that row `i`'s east PE presents on the `dw_out` port.
    #[inline(always)]
    pub(crate) fn dw_east(&self, arith: impl PeArith, i: usize) -> i64 {
        let c = self.cols();
        arith.read(self.dw[i * c + c - 1])
    }
}

/// One pipelining of the PE mesh: the registers it has besides the
/// [`Core`], and its clock edge, in the number format `Arith`.
pub trait Mesh {
    type Arith: PeArith;

    /// The array right after reset: every register 0.
    fn new(cfg: ArrayConfig, arith: Self::Arith) -> Self;

    /// The registers every array has.
    fn core(&self) -> &Core;

    /// The number format its PEs compute in.
    fn arith(&self) -> Self::Arith;

    /// One rising clock edge with reset low.
    fn step(&mut self, inp: &CycleInput);

    /// What a reset edge does: every register to 0.
    fn reset(&mut self);

    /// What the `w_out` port shows this cycle (C lanes).
    fn w_out(&self) -> &[i64];

    /// PE `k`'s stochastic-rounding generator (the `sr_state` register),
    /// if its number format has one.
    fn sr_state(&self, k: usize) -> Option<u32>;

    /// What the `dw_out` port shows for row `i` this cycle: the east PE's
    /// `dw` register as it presents it.
    #[inline(always)]
    fn dw_east(&self, i: usize) -> i64 {
        self.core().dw_east(self.arith(), i)
    }
}

/// Moves the partial sums of rows `rows` one PE south: each row takes
/// the old sums of the row above it, the top one zeros (`psv` of the
/// north edge). Every row above `rows` must still hold its old sums.
#[inline(always)]
pub(crate) fn sums_south(psv: &mut [i64], rows: Range<usize>, cols: usize) {
    let lo = rows.start.max(1);
    if lo < rows.end {
        psv.copy_within((lo - 1) * cols..(rows.end - 1) * cols, lo * cols);
    }
    if rows.start == 0 {
        psv[..cols].fill(0);
    }
}

/// Moves the partial sums of rows `rows` one PE east: each PE takes its
/// west neighbour's old sum, the west edge's a zero.
#[inline(always)]
pub(crate) fn sums_east(psh: &mut [i64], rows: Range<usize>, cols: usize) {
    let block = &mut psh[rows.start * cols..rows.end * cols];
    // The sum crossing into the next row is zeroed right after.
    block.copy_within(0..block.len() - 1, 1);
    for row in block.chunks_exact_mut(cols) {
        row[0] = 0;
    }
}
