//! Register-level model of `sa_top`: the PE mesh with its skew and deskew
//! lines. One call to [`Array::step`] is one rising clock edge.
//!
//! Every field here is a register of the generated RTL (same name, same
//! width, same reset value 0); `docs/ARCHITECTURE.md` is the contract both
//! follow. State is stored structure-of-arrays, PE (i, j) at `i * cols + j`,
//! and `step` allocates nothing.

use std::ops::Range;
use sysgrad_config::{fixed, ArrayConfig, MAX_DIM};
use sysgrad_isa::{Mode, ModeCode};

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
    /// All-zero inputs in `mode` (a [`Mode`] or a raw [`ModeCode`]), reset low.
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

/// The outputs of `sa_top` in one cycle (all are register outputs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CycleOutput {
    pub y: Vec<i64>,
    pub dx: Vec<i64>,
    pub dw: Vec<i64>,
    pub w: Vec<i64>,
}

/// A bank of delay lines (a skew or deskew): lane k delays its input by
/// `delay(k)` cycles, each cycle one register.
///
/// It keeps the inputs of the last `depth` cycles (a power of two above
/// the longest delay) in a ring, one slot per cycle: a clock edge writes
/// one slot and moves nothing, and lane k's register s (s = 0 nearest
/// the input) is the input of s + 1 cycles ago. Two banks are equal when
/// their registers are; inputs older than a lane's delay are not
/// registers and are not compared.
#[derive(Debug, Clone)]
pub struct DelayLines<T> {
    delays: Vec<usize>,
    /// `depth` slots of one input per lane.
    history: Vec<T>,
    /// `depth - 1`: slot numbers wrap by masking.
    mask: usize,
    /// The slot the next clock edge writes.
    now: usize,
}

impl<T: Copy + Default + PartialEq> DelayLines<T> {
    pub(crate) fn new(delays: impl Iterator<Item = usize>) -> Self {
        let delays: Vec<usize> = delays.collect();
        let depth = (delays.iter().max().copied().unwrap_or(0) + 1).next_power_of_two();
        DelayLines {
            history: vec![T::default(); depth * delays.len()],
            delays,
            mask: depth - 1,
            now: 0,
        }
    }

    pub fn lanes(&self) -> usize {
        self.delays.len()
    }

    /// Lane `k`'s register `stage` (0 nearest the input), `stage` below
    /// the lane's delay.
    pub fn stage(&self, k: usize, stage: usize) -> T {
        assert!(
            stage < self.delays[k],
            "lane {k} has {} registers",
            self.delays[k]
        );
        self.at(k, stage + 1)
    }

    /// The input lane `k` took `ago` cycles before the next edge.
    #[inline(always)]
    fn at(&self, k: usize, ago: usize) -> T {
        let slot = self.now.wrapping_sub(ago) & self.mask;
        self.history[slot * self.delays.len() + k]
    }

    /// What lane `k` presents at its output this cycle: its last register,
    /// or `input` itself where the lane has none (a wire).
    #[inline(always)]
    pub(crate) fn output(&self, k: usize, input: T) -> T {
        match self.delays[k] {
            0 => input,
            delay => self.at(k, delay),
        }
    }

    /// One clock edge of every lane: each lane's input goes into this
    /// cycle's slot. Read the outputs first.
    #[inline(always)]
    pub(crate) fn shift_all(&mut self, input: impl Fn(usize) -> T) {
        let lanes = self.delays.len();
        let slot = &mut self.history[self.now * lanes..(self.now + 1) * lanes];
        for (k, v) in slot.iter_mut().enumerate() {
            *v = input(k);
        }
        self.now = (self.now + 1) & self.mask;
    }

    /// Every register to its reset value.
    pub(crate) fn clear(&mut self) {
        self.history.fill(T::default());
        self.now = 0;
    }
}

impl<T: Copy + Default + PartialEq> PartialEq for DelayLines<T> {
    fn eq(&self, other: &Self) -> bool {
        self.delays == other.delays
            && (0..self.lanes())
                .all(|k| (0..self.delays[k]).all(|s| self.stage(k, s) == other.stage(k, s)))
    }
}

impl<T: Copy + Default + PartialEq> Eq for DelayLines<T> {}

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
    /// The weight each PE presents to its multipliers and its south
    /// neighbour: `w` clamped to DW bits. With deferred saturation `w`
    /// holds the exact difference an UPDATE left (DW+2 bits); without,
    /// the two are equal. Not a register: refreshed whenever `w` changes.
    pub w_sat: Vec<i64>,
    /// The product registers of a PE with a multiplier register
    /// (`docs/ARCHITECTURE.md`, Multiplier register): the product entering
    /// `psv`/`psh`, and the one entering `dw`. Empty without one.
    pub prod_sum: Vec<i64>,
    pub prod_dw: Vec<i64>,
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
    /// The registers only a dense array has.
    pub dense: Option<crate::dense::DenseRegs>,
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
            w_sat: vec![0; r * c],
            prod_sum: vec![0; r * c * cfg.product_stages()],
            prod_dw: vec![0; r * c * cfg.product_stages()],
            x_skew: DelayLines::new(0..r),
            dy_skew: DelayLines::new(0..c),
            y_deskew: DelayLines::new((0..c).map(|j| c - 1 - j)),
            y_q: vec![0; c],
            dx_deskew: DelayLines::new((0..r).map(|i| r - 1 - i)),
            dx_q: vec![0; r],
            dense: cfg.dense().then(|| crate::dense::DenseRegs::new(&cfg)),
        }
    }

    /// What a reset edge does: every register to 0 (the state of [`Array::new`]).
    pub fn reset(&mut self) {
        for v in [
            &mut self.w,
            &mut self.x,
            &mut self.d,
            &mut self.psv,
            &mut self.psh,
            &mut self.dw,
            &mut self.w_sat,
            &mut self.prod_sum,
            &mut self.prod_dw,
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
        if self.dense.is_some() {
            self.dense = Some(crate::dense::DenseRegs::new(&self.cfg));
        }
    }

    pub fn rows(&self) -> usize {
        self.cfg.rows()
    }

    pub fn cols(&self) -> usize {
        self.cfg.cols()
    }

    /// What a `w` register takes as the difference `diff` of an UPDATE:
    /// saturated to DW bits, or with deferred saturation `diff` itself.
    fn weight_after(&self, diff: i64) -> i64 {
        if self.cfg.deferred_saturation() {
            diff
        } else {
            fixed::sat(diff, self.cfg.format().in_bits)
        }
    }

    /// The SGD step of a PE whose `dw` register holds `dw`, rounded at
    /// shift FRAC + `lr` and clamped to DW+1 bits: every weight is below
    /// 2^(DW-1) in magnitude, so a larger step saturates it alike, and
    /// the subtract is DW+2 bits wide.
    fn clamped_step(&self, dw: i64, lr: u32) -> i64 {
        let f = self.cfg.format();
        let read = self.sum_bounds().read(dw);
        let rounded = fixed::round_shift(read, f.frac_bits + lr, f.acc_bits);
        fixed::sat(rounded, f.in_bits + 1)
    }

    /// `w_sat` from `w` after an UPDATE.
    fn refresh_w_sat(&mut self) {
        let bits = self.cfg.format().in_bits;
        for (shown, &w) in self.w_sat.iter_mut().zip(&self.w) {
            *shown = fixed::sat(w, bits);
        }
    }

    /// How this array's accumulator registers saturate.
    pub(crate) fn sum_bounds(&self) -> SumBounds {
        SumBounds::new(self.cfg.format().acc_bits, self.cfg.deferred_saturation())
    }

    /// The dW that row `i`'s east PE presents on the `dw_out` port (its
    /// `dw` register clamped, with deferred saturation).
    pub fn dw_east(&self, i: usize) -> i64 {
        let c = self.cols();
        self.sum_bounds().read(self.dw[i * c + c - 1])
    }

    /// The output ports as seen during the current cycle.
    pub fn outputs(&self) -> CycleOutput {
        let (r, c) = (self.rows(), self.cols());
        CycleOutput {
            y: self.y_q.clone(),
            dx: self.dx_q.clone(),
            dw: (0..r).map(|i| self.dw_east(i)).collect(),
            w: match &self.dense {
                Some(d) => d.w_q.clone(),
                None => self.w_sat[(r - 1) * c..].to_vec(),
            },
        }
    }

    /// One rising clock edge with `inp` applied.
    ///
    /// Every PE computes from the register values before the edge: the
    /// arithmetic of a mode reads the neighbours' old rows first, and the
    /// shifting registers (`x` east, `d`/`dv` south, `w` south, `dw` east)
    /// move afterwards, each as one block copy. One loop per mode, over
    /// whole rows, so the mode and edge tests are out of the PE loop.
    pub fn step(&mut self, inp: &CycleInput) {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU was just checked to support AVX2.
            return unsafe { self.step_avx2(inp) };
        }
        self.step_portable(inp)
    }

    /// [`Array::step`] compiled with AVX2, which has the 64-bit compares
    /// that let the saturating multiply-add loops vectorise.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn step_avx2(&mut self, inp: &CycleInput) {
        self.step_portable(inp)
    }

    #[inline(always)]
    fn step_portable(&mut self, inp: &CycleInput) {
        if inp.rst {
            return self.reset();
        }
        if self.dense.is_some() {
            return self.step_dense(inp);
        }
        let (r, c) = (self.rows(), self.cols());
        debug_assert_eq!((inp.x.len(), inp.w.len(), inp.dy.len()), (r, c, c));
        let f = self.cfg.format();
        let sums = self.sum_bounds();

        // Output side first: it samples the PE registers before they change.
        let bottom = &self.psv[(r - 1) * c..];
        for (j, (q, &b)) in self.y_q.iter_mut().zip(bottom).enumerate() {
            *q = self.y_deskew.output(j, sums.read(b));
        }
        self.y_deskew.shift_all(|j| sums.read(bottom[j]));
        let psh = &self.psh;
        let east = |i: usize| sums.read(psh[i * c + c - 1]);
        for i in 0..r {
            self.dx_q[i] = self.dx_deskew.output(i, east(i));
        }
        self.dx_deskew.shift_all(east);

        let mode = match inp.mode.mode() {
            Mode::BwdIl if !self.cfg.interleaved() => Mode::Idle,
            m => m,
        };
        match mode {
            Mode::Idle | Mode::Stream => {}
            Mode::Load => {
                // Each PE takes its north neighbour's weight as that one
                // presents it (clamped, with deferred saturation), so every
                // loaded weight is in range.
                self.w_sat.copy_within(0..(r - 1) * c, c);
                self.w_sat[..c].copy_from_slice(&inp.w);
                self.w.copy_from_slice(&self.w_sat);
            }
            Mode::Fwd if self.cfg.multiplier_register() => {
                let x_west = self.x_west(inp);
                self.fwd_with_product_registers(&x_west);
                self.shift_x_east(&x_west[..r]);
            }
            Mode::Fwd => {
                // x and psv move first: each PE's new x is its x_in, its
                // psv the sum it adds to.
                let x_west = self.x_west(inp);
                self.shift_x_east(&x_west[..r]);
                sums_south(&mut self.psv, 0..r, c);
                accumulate(&mut self.psv, &self.w_sat, &self.x, None, sums);
            }
            Mode::BwdDx | Mode::BwdDw | Mode::BwdIl => {
                let x_west = self.x_west(inp);
                let (mut d_north, mut dv_north) = ([0i64; MAX_DIM], [false; MAX_DIM]);
                for j in 0..c {
                    let (v, d) = self.dy_skew.output(j, (inp.dy_valid, inp.dy[j]));
                    (d_north[j], dv_north[j]) = (d, v);
                }
                if self.cfg.multiplier_register() {
                    self.bwd_with_product_registers(mode, &x_west, &d_north, &dv_north);
                }
                if mode.computes_dw() {
                    self.shift_x_east(&x_west[..r]);
                }
                self.d.copy_within(0..(r - 1) * c, c);
                self.d[..c].copy_from_slice(&d_north[..c]);
                self.dv.copy_within(0..(r - 1) * c, c);
                self.dv[..c].copy_from_slice(&dv_north[..c]);
                if !self.cfg.multiplier_register() {
                    // The moving registers moved first: each PE's new d,
                    // dv and x are its inputs.
                    if mode.computes_dx() {
                        sums_east(&mut self.psh, 0..r, c);
                        accumulate(&mut self.psh, &self.w_sat, &self.d, None, sums);
                    }
                    if mode.computes_dw() {
                        accumulate(&mut self.dw, &self.d, &self.x, Some(&self.dv), sums);
                    }
                }
            }
            Mode::Update if self.cfg.multiplier_register() => {
                // The rounded step waits a cycle in prod_dw (ARCHITECTURE.md,
                // Multiplier register): w takes the one registered before.
                let lr = self.cfg.pe_lr_shift(inp.lr_shift);
                for k in 0..r * c {
                    self.w[k] = self.weight_after(self.w_sat[k] - self.prod_dw[k]);
                    self.prod_dw[k] = self.clamped_step(self.dw[k], lr);
                    self.dw[k] = 0;
                }
                self.refresh_w_sat();
            }
            Mode::Update if self.cfg.deferred_saturation() => {
                // w keeps the exact difference with the step clamped to
                // DW+1 bits (ARCHITECTURE.md, Deferred saturation).
                let lr = self.cfg.pe_lr_shift(inp.lr_shift);
                for k in 0..r * c {
                    self.w[k] = self.w_sat[k] - self.clamped_step(self.dw[k], lr);
                    self.dw[k] = 0;
                }
                self.refresh_w_sat();
            }
            Mode::Update => {
                // A PE built with a constant shift ignores the port.
                let lr = self.cfg.pe_lr_shift(inp.lr_shift);
                for (w, dw) in self.w.iter_mut().zip(self.dw.iter_mut()) {
                    *w = fixed::sgd_update(*w, *dw, f.frac_bits, lr, f.in_bits, f.acc_bits);
                    *dw = 0;
                }
                self.w_sat.copy_from_slice(&self.w);
            }
            Mode::Drain => {
                // Each PE takes its west neighbour's dw as that one
                // presents it (clamped), the west edge a zero.
                for row in self.dw.chunks_exact_mut(c) {
                    for j in (1..c).rev() {
                        row[j] = sums.read(row[j - 1]);
                    }
                    row[0] = 0;
                }
            }
        }

        // Input skews last: the PEs above consumed their old outputs.
        self.x_skew.shift_all(|i| inp.x[i]);
        self.dy_skew.shift_all(|j| (inp.dy_valid, inp.dy[j]));
    }

    /// FWD on PEs with a multiplier register: each adds the product it
    /// registered the cycle before and registers this cycle's. Bottom row
    /// first, so that every PE reads its north neighbour's old `psv`.
    fn fwd_with_product_registers(&mut self, x_west: &[i64; MAX_DIM]) {
        let (r, c) = (self.rows(), self.cols());
        let sums = self.sum_bounds();
        for i in (0..r).rev() {
            for j in 0..c {
                let k = i * c + j;
                let above = if i == 0 { 0 } else { self.psv[k - c] };
                let x_in = if j == 0 { x_west[i] } else { self.x[k - 1] };
                self.psv[k] = sums.add(above, self.prod_sum[k]);
                self.prod_sum[k] = self.w_sat[k] * x_in;
            }
        }
    }

    /// A BWD_DX, BWD_DW or BWD_IL cycle on PEs with a multiplier register,
    /// before the moving registers move: `d_north`/`dv_north` are row 0's
    /// north inputs and `x_west` the rows' west x.
    fn bwd_with_product_registers(
        &mut self,
        mode: Mode,
        x_west: &[i64; MAX_DIM],
        d_north: &[i64; MAX_DIM],
        dv_north: &[bool; MAX_DIM],
    ) {
        let c = self.cols();
        for (i, &x_edge) in x_west[..self.rows()].iter().enumerate() {
            let (mut d_row, mut dv_row) = (*d_north, *dv_north);
            if i > 0 {
                let above = (i - 1) * c..i * c;
                d_row[..c].copy_from_slice(&self.d[above.clone()]);
                dv_row[..c].copy_from_slice(&self.dv[above]);
            }
            self.bwd_row_with_product_registers(i, mode, x_edge, &d_row, &dv_row);
        }
    }

    /// Row `i` of a BWD_DX, BWD_DW or BWD_IL cycle on PEs with a
    /// multiplier register; `d_in`/`dv_in` are the row's north inputs
    /// and `x_edge` its west x.
    fn bwd_row_with_product_registers(
        &mut self,
        i: usize,
        mode: Mode,
        x_edge: i64,
        d_in: &[i64; MAX_DIM],
        dv_in: &[bool; MAX_DIM],
    ) {
        let c = self.cols();
        let sums = self.sum_bounds();
        if mode.computes_dx() {
            // psh moves east: carry the west neighbour's old value.
            let mut west = 0;
            for (j, &d) in d_in[..c].iter().enumerate() {
                let k = i * c + j;
                let old = self.psh[k];
                self.psh[k] = sums.add(west, self.prod_sum[k]);
                self.prod_sum[k] = self.w_sat[k] * d;
                west = old;
            }
        }
        if mode.computes_dw() {
            for j in 0..c {
                let k = i * c + j;
                let x_in = if j == 0 { x_edge } else { self.x[k - 1] };
                self.dw[k] = sums.add(self.dw[k], self.prod_dw[k]);
                self.prod_dw[k] = if dv_in[j] { d_in[j] * x_in } else { 0 };
            }
        }
    }

    /// What the x skew presents at the west edge of each row this cycle.
    fn x_west(&self, inp: &CycleInput) -> [i64; MAX_DIM] {
        let mut west = [0; MAX_DIM];
        for (i, v) in west.iter_mut().enumerate().take(self.rows()) {
            *v = self.x_skew.output(i, inp.x[i]);
        }
        west
    }

    /// `x <= x_in` in every PE: each row moves one PE east.
    fn shift_x_east(&mut self, west: &[i64]) {
        let c = self.cols();
        for (row, &v) in self.x.chunks_exact_mut(c).zip(west) {
            row.copy_within(0..c - 1, 1);
            row[0] = v;
        }
    }
}

/// The exact product of two data values. They have at most 16 bits
/// (`sysgrad_config::IN_BITS`), so their 32-bit truncations multiply
/// exactly into 64 bits, which AVX2 does four at a time (it has no
/// 64 x 64-bit multiply).
#[inline(always)]
pub(crate) fn product(a: i64, b: i64) -> i64 {
    i64::from(a as i32) * i64::from(b as i32)
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

/// How the accumulator registers (`psv`, `psh`, `dw`) saturate
/// (`docs/ARCHITECTURE.md`, Deferred saturation): a value read from one
/// is clamped to `read` (AW bits), a sum written into one to `write`
/// (AW bits; with deferred saturation the AW+1 bits of the exact sum of
/// two AW-bit values, which no add leaves, so the register holds the
/// exact sum and its readers clamp it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SumBounds {
    read: (i64, i64),
    write: (i64, i64),
    deferred: bool,
}

impl SumBounds {
    pub(crate) fn new(acc_bits: u32, deferred: bool) -> Self {
        let range = |n| (fixed::min_of(n), fixed::max_of(n));
        SumBounds {
            read: range(acc_bits),
            write: range(acc_bits + u32::from(deferred)),
            deferred,
        }
    }

    /// The AW-bit value a register holding `v` presents to its readers.
    #[inline(always)]
    pub(crate) fn read(self, v: i64) -> i64 {
        v.clamp(self.read.0, self.read.1)
    }

    /// What a register holding `sum` takes when `p` is added to it.
    #[inline(always)]
    pub(crate) fn add(self, sum: i64, p: i64) -> i64 {
        self.add_in_range(self.read(sum), p)
    }

    /// [`SumBounds::add`] for a `sum` known to be in the read range.
    #[inline(always)]
    fn add_in_range(self, sum: i64, p: i64) -> i64 {
        (sum + p).clamp(self.write.0, self.write.1)
    }
}

/// Each PE of a block adds the product of its two inputs to the sum it
/// holds, saturating as `bounds` say: FWD (`psv += w * x_in`, after
/// [`sums_south`]), dX (`psh += w * d_in`, after [`sums_east`]) and dW
/// (`dw += d_in * x_in` where `valid`).
///
/// The moving registers move before this, so every operand lines up with
/// the PE it feeds (a PE's new x and d are its inputs) and a block of rows
/// is one loop: resliced to one length, without bounds checks or
/// branches, it vectorises.
#[inline(always)]
pub(crate) fn accumulate(
    sums: &mut [i64],
    a: &[i64],
    b: &[i64],
    valid: Option<&[bool]>,
    bounds: SumBounds,
) {
    // Without deferred saturation a register holds an in-range value and
    // reading it needs no clamp: a loop without one is faster.
    if bounds.deferred {
        accumulate_as::<true>(sums, a, b, valid, bounds)
    } else {
        accumulate_as::<false>(sums, a, b, valid, bounds)
    }
}

#[inline(always)]
fn accumulate_as<const DEFERRED: bool>(
    sums: &mut [i64],
    a: &[i64],
    b: &[i64],
    valid: Option<&[bool]>,
    bounds: SumBounds,
) {
    // Without deferred saturation every register is in range.
    let add = |sum: i64, p: i64| {
        if DEFERRED {
            bounds.add(sum, p)
        } else {
            bounds.add_in_range(sum, p)
        }
    };
    let n = sums.len();
    let (a, b) = (&a[..n], &b[..n]);
    match valid {
        None => {
            for k in 0..n {
                sums[k] = add(sums[k], product(a[k], b[k]));
            }
        }
        Some(valid) => {
            let valid = &valid[..n];
            for k in 0..n {
                // An invalid dy leaves the register as it is (the RTL's
                // dw_en); adding 0 to an in-range value does the same.
                sums[k] = if DEFERRED {
                    let added = add(sums[k], product(a[k], b[k]));
                    if valid[k] {
                        added
                    } else {
                        sums[k]
                    }
                } else {
                    // 0 or all ones: a select without a branch.
                    let keep = -i64::from(valid[k]);
                    add(sums[k], product(a[k], b[k]) & keep)
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sysgrad_config::{Backward, NumberFormat};
    use sysgrad_rng::Rng;

    fn config() -> ArrayConfig {
        let fmt = NumberFormat {
            in_bits: 8,
            acc_bits: 16,
            frac_bits: 3,
        };
        ArrayConfig::new(5, 3, Backward::Interleaved, fmt).unwrap()
    }

    /// Any of the 16 mode codes, random data and controls; a reset in
    /// about one cycle of `reset_in`.
    fn random_input(cfg: &ArrayConfig, rng: &mut Rng, reset_in: usize) -> CycleInput {
        let code = ModeCode::new(rng.below(16) as u8).unwrap();
        let mut inp = CycleInput::zeros(cfg, code);
        let bits = cfg.format().in_bits;
        for v in inp.x.iter_mut().chain(&mut inp.w).chain(&mut inp.dy) {
            *v = rng.value(bits);
        }
        inp.dy_valid = rng.below(2) == 0;
        inp.lr_shift = rng.below(64) as u32;
        inp.rst = rng.below(reset_in) == 0;
        inp
    }

    /// The AVX2 build of `step` and the portable one agree register for
    /// register on random stimulus in every mode code, resets included
    /// (only one of them runs in the other tests, depending on the CPU).
    #[test]
    fn dispatched_and_portable_steps_agree() {
        for (mul_reg, deferred) in [(false, false), (true, false), (false, true), (true, true)] {
            let cfg = config()
                .with_multiplier_register(mul_reg)
                .unwrap()
                .with_deferred_saturation(deferred)
                .unwrap();
            let (mut a, mut b) = (Array::new(cfg), Array::new(cfg));
            let mut rng = Rng::new(0x1234_5678);
            for _ in 0..2000 {
                let inp = random_input(&cfg, &mut rng, 100);
                a.step(&inp);
                b.step_portable(&inp);
                assert_eq!(a, b);
            }
        }
    }

    /// Deferred saturation changes what the accumulator and weight
    /// registers hold, not what anything reads from them: on random
    /// stimulus (16-bit sums of 8-bit products, which overflow) the
    /// outputs are the same every cycle, every register reads the same
    /// clamped, and some sum and some weight do leave their widths.
    #[test]
    fn deferred_saturation_changes_no_output() {
        for mul_reg in [false, true] {
            let at_once = config().with_multiplier_register(mul_reg).unwrap();
            let deferred = at_once.with_deferred_saturation(true).unwrap();
            let (mut a, mut b) = (Array::new(at_once), Array::new(deferred));
            let (aw, dw_bits) = (at_once.format().acc_bits, at_once.format().in_bits);
            let mut rng = Rng::new(0xdefe);
            let (mut overflowed, mut weight_left) = (false, false);
            for _ in 0..3000 {
                let inp = random_input(&at_once, &mut rng, 500);
                assert_eq!(a.outputs(), b.outputs());
                a.step(&inp);
                b.step(&inp);
                let sums = |x: &Array| [x.psv.clone(), x.psh.clone(), x.dw.clone()];
                for (held, raw) in sums(&a).iter().zip(sums(&b).iter()) {
                    for (&h, &v) in held.iter().zip(raw) {
                        assert_eq!(h, fixed::sat(v, aw));
                        overflowed |= !fixed::fits(v, aw);
                    }
                }
                for (&h, &v) in a.w.iter().zip(&b.w) {
                    assert_eq!(h, fixed::sat(v, dw_bits));
                    weight_left |= !fixed::fits(v, dw_bits);
                }
                assert_eq!(a.w, b.w_sat);
                assert_eq!((&a.x, &a.d, &a.dv), (&b.x, &b.d, &b.dv));
            }
            assert!(overflowed, "no sum left AW bits (mul_reg {mul_reg})");
            assert!(weight_left, "no weight left DW bits (mul_reg {mul_reg})");
        }
    }

    /// A reset edge clears every register whatever the mode and data, as
    /// the RTL's synchronous reset does; a reserved code holds every
    /// register, as IDLE does.
    #[test]
    fn reset_clears_everything_and_reserved_codes_hold() {
        let cfg = config().with_multiplier_register(true).unwrap();
        let mut a = Array::new(cfg);
        let mut rng = Rng::new(99);
        for _ in 0..300 {
            let mut inp = random_input(&cfg, &mut rng, usize::MAX);
            let before = a.clone();
            if inp.mode.is_reserved() {
                let mut idle = inp.clone();
                idle.mode = Mode::Idle.into();
                let (mut held, mut idled) = (a.clone(), a.clone());
                held.step(&inp);
                idled.step(&idle);
                assert_eq!(held, idled, "code {} differs from IDLE", inp.mode.code());
            }
            a.step(&inp);
            if a != before && rng.below(10) == 0 {
                inp.rst = true;
                let mut r = a.clone();
                r.step(&inp);
                assert_eq!(r, Array::new(cfg));
            }
        }
        assert_ne!(a, Array::new(cfg), "random stimulus left the array empty");
    }
}
