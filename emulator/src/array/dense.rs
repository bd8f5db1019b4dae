//! The dense array (`pipelining = "dense"`, `docs/ARCHITECTURE.md`, Dense
//! pipelining): every PE takes, every cycle, the wave its west neighbour
//! took the cycle before, so the control of each data column travels with
//! it; each PE holds an active and a shadow weight and passes a weight
//! stream south for the exchange slots.
//!
//! [`DenseArray`] holds the [`Core`] and the registers only a dense array
//! has. The PEs are updated in place from the south-east corner to the
//! north-west one: every PE reads only its north and west neighbours'
//! registers, so those still hold their values from before the edge when
//! it reads them.

use super::arith::{PeArith, Product};
use super::core::{sums_east, sums_south, Core, Mesh};
use super::delay::DelayLines;
use super::none::generators;
use super::ports::{CycleInput, Wave};
use sysgrad_config::ArrayConfig;
use sysgrad_isa::Mode;

/// The registers of a dense array, in number format `N`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DenseArray<N: PeArith> {
    pub core: Core,
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
    /// Not a register: for each row, how many of the waves its PEs took
    /// last, from the west, are plain for that row (neither a swap nor
    /// an exchange in it) and of the westmost one's operation. `step`
    /// keeps it, so that finding a row it can step whole scans nothing.
    plain_run: Vec<usize>,
    /// Each PE's SGD generator (`sr_state`).
    pub sr_state: Vec<N::Generator>,
    arith: N,
}

impl<N: PeArith> Mesh for DenseArray<N> {
    type Arith = N;

    fn new(cfg: ArrayConfig, arith: N) -> Self {
        let (r, c) = (cfg.rows(), cfg.cols());
        DenseArray {
            core: Core::new(cfg),
            ws: vec![0; r * c],
            wp: vec![0; r * c],
            ctl: vec![Wave::BUBBLE; r * c],
            ctl_skew: DelayLines::new(0..r),
            w_skew: DelayLines::new(0..c),
            w_deskew: DelayLines::new((0..c).map(|j| c - 1 - j)),
            w_q: vec![0; c],
            // Bubbles everywhere: plain, one operation.
            plain_run: vec![c; r],
            sr_state: generators(&cfg, arith),
            arith,
        }
    }

    fn core(&self) -> &Core {
        &self.core
    }

    #[inline(always)]
    fn arith(&self) -> N {
        self.arith
    }

    fn reset(&mut self) {
        *self = DenseArray::new(self.core.cfg, self.arith);
    }

    /// The output registers of the evicted weights.
    fn w_out(&self) -> &[i64] {
        &self.w_q
    }

    fn sr_state(&self, k: usize) -> Option<u32> {
        N::sr_state(&self.sr_state[k])
    }

    #[inline(always)]
    fn step(&mut self, inp: &CycleInput) {
        self.step_rows(inp, true)
    }
}

/// What a PE's wave computes with, decoded once per PE and cycle.
#[derive(PartialEq)]
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

/// How many swapping or exchanging PEs a row may have and still be
/// stepped whole ([`DenseArray::step_row_with_exchanges`]); a tile's first
/// wave and a weight row passing through make one each.
const MAX_EXCHANGES: usize = 4;

/// The columns of a row whose wave swaps or exchanges there.
#[derive(Default)]
struct Exchanges {
    at: [usize; MAX_EXCHANGES],
    len: usize,
}

/// How a row of a dense array is stepped in a cycle.
enum RowPath {
    /// Every PE takes a wave of this operation and none swaps or
    /// exchanges there (the inside of a tile): whole-row arithmetic.
    Whole(Op),
    /// Likewise but for a few PEs that swap or exchange (a tile's first
    /// wave, a weight row passing through): whole-row arithmetic, then
    /// those PEs stepped again by the table.
    WithExchanges(Op, Exchanges),
    /// Waves of different operations in the row (between tiles of
    /// different passes): PE by PE by the table.
    ByPe,
}

/// What the west and north edges present in one cycle: the skews'
/// outputs, read where they are needed (`step` allocates nothing).
struct Edges<'a> {
    inp: &'a CycleInput,
    /// What enters the control skew this cycle.
    wave: Wave,
}

impl<N: PeArith> DenseArray<N> {
    /// One rising edge of a dense array; with `uniform_rows` most rows
    /// are computed a whole row at a time ([`RowPath`]), else every row
    /// PE by PE by the table. Both give the same registers (a test steps
    /// them side by side).
    ///
    /// Rows go bottom first, so every row reads the row above before it
    /// changes. A run of rows stepped whole with one operation first
    /// moves its moving registers (x and the control east, d, dv and the
    /// weight stream south), one block move each, and then computes with
    /// them: a PE's new x and d are its inputs.
    #[inline(always)]
    fn step_rows(&mut self, inp: &CycleInput, uniform_rows: bool) {
        let mode = Mode::dense_from_code(inp.mode.code());
        self.step_outputs();
        let e = Edges {
            inp,
            wave: stream_wave(inp, mode),
        };
        // UPDATE and DRAIN act on every PE's w and dw whatever its wave.
        let row_at_once = uniform_rows && !matches!(mode, Mode::Update | Mode::Drain);
        // Rows `end..` are stepped; `next` is row end-1's path.
        let mut end = self.core.rows();
        let mut next = self.path_of(&e, row_at_once, end - 1);
        loop {
            let i = end - 1;
            let (west_ctl, path) = std::mem::replace(&mut next, (Wave::BUBBLE, RowPath::ByPe));
            self.count_plain_run(i, west_ctl);
            let mut start = i;
            if let RowPath::Whole(op) = &path {
                // The run of rows above with the same operation.
                while start > 0 {
                    next = self.path_of(&e, row_at_once, start - 1);
                    match &next.1 {
                        RowPath::Whole(above) if above == op => {
                            self.count_plain_run(start - 1, next.0);
                            start -= 1;
                        }
                        _ => break,
                    }
                }
                self.move_rows(start, end, &e);
                self.compute_uniform_rows(start, end, op);
            } else {
                match &path {
                    RowPath::WithExchanges(op, cols) => {
                        self.step_row_with_exchanges(i, op, cols, west_ctl, &e, mode);
                    }
                    _ => self.step_row_by_pe(i, west_ctl, &e, mode),
                }
                if i > 0 {
                    next = self.path_of(&e, row_at_once, i - 1);
                }
            }
            if start == 0 {
                break;
            }
            end = start;
        }
        self.ctl_skew.shift_all(|_| e.wave);
        self.w_skew.shift_all(|j| inp.w[j]);
        self.core.shift_input_skews(inp);
    }

    /// Row `i` PE by PE by the table, east first (each PE reads its west
    /// neighbour before it changes).
    #[inline(always)]
    fn step_row_by_pe(&mut self, i: usize, west_ctl: Wave, e: &Edges, mode: Mode) {
        if i == 0 {
            self.take_north_edge(e);
        }
        let west_x = self.core.x_skew.output(i, e.inp.x[i]);
        for j in (0..self.core.cols()).rev() {
            let inputs = self.dense_inputs(i, j, west_ctl, west_x);
            self.step_pe(i, j, inputs, mode, e.inp.lr_shift);
        }
    }

    /// The wave entering row `i` this cycle and how the row is stepped
    /// (by the table unless `row_at_once`).
    #[inline(always)]
    fn path_of(&self, e: &Edges, row_at_once: bool, i: usize) -> (Wave, RowPath) {
        let west = self.west_ctl(e, i);
        let path = if row_at_once {
            self.row_path(i, west)
        } else {
            RowPath::ByPe
        };
        (west, path)
    }

    /// How row `i` is stepped this cycle, `west` entering it.
    #[inline(always)]
    fn row_path(&self, i: usize, west: Wave) -> RowPath {
        if let Some(op) = self.uniform_row_op(i, west) {
            return RowPath::Whole(op);
        }
        match self.few_exchanges(i, west) {
            Some((op, cols)) => RowPath::WithExchanges(op, cols),
            None => RowPath::ByPe,
        }
    }

    /// The wave the control skew presents to row `i` this cycle.
    #[inline(always)]
    fn west_ctl(&self, e: &Edges, i: usize) -> Wave {
        self.ctl_skew.output(i, e.wave)
    }

    /// The operation of row `i`'s PEs if they all take a wave of the same
    /// operation (the west edge's `west` and the waves the row's PEs took
    /// last, which move one PE east) and none of them swaps or exchanges
    /// a weight.
    #[inline(always)]
    fn uniform_row_op(&self, i: usize, west: Wave) -> Option<Op> {
        let c = self.core.cols();
        // The PEs east of the first take what PEs 0..c-1 took last.
        let rest_plain = c == 1 || (self.plain_run[i] >= c - 1 && self.ctl[i * c].op == west.op);
        (plain_in_row(&west, i) && rest_plain).then(|| self.op_of(west.op))
    }

    /// The operation of row `i`'s PEs and the columns whose wave swaps or
    /// exchanges in that row, if every PE takes a wave of one operation
    /// and at most [`MAX_EXCHANGES`] of them do (a tile's first wave, a
    /// weight row passing through).
    #[inline(always)]
    fn few_exchanges(&self, i: usize, west: Wave) -> Option<(Op, Exchanges)> {
        let c = self.core.cols();
        let waves = std::iter::once(&west).chain(&self.ctl[i * c..i * c + c - 1]);
        let mut cols = Exchanges::default();
        for (j, wave) in waves.enumerate() {
            if wave.op != west.op {
                return None;
            }
            if !plain_in_row(wave, i) {
                if cols.len == MAX_EXCHANGES {
                    return None;
                }
                cols.at[cols.len] = j;
                cols.len += 1;
            }
        }
        Some((self.op_of(west.op), cols))
    }

    /// The operation of a wave of code `code` on this array's PEs.
    #[inline(always)]
    fn op_of(&self, code: u8) -> Op {
        Op::of(code, self.core.cfg.interleaved())
    }

    /// Row `i` of [`DenseArray::few_exchanges`]: stepped whole as if no PE
    /// swapped or exchanged, then each PE in `cols` stepped again by the
    /// table from the inputs and `dw` it had before the edge (the row's
    /// whole-row results east of it used its old registers, as they
    /// should).
    #[inline(always)]
    fn step_row_with_exchanges(
        &mut self,
        i: usize,
        op: &Op,
        cols: &Exchanges,
        west_ctl: Wave,
        e: &Edges,
        mode: Mode,
    ) {
        let c = self.core.cols();
        if i == 0 {
            self.take_north_edge(e);
        }
        let west_x = self.core.x_skew.output(i, e.inp.x[i]);
        let mut before: [Option<(Inputs, i64)>; MAX_EXCHANGES] = Default::default();
        for (slot, &j) in before.iter_mut().zip(&cols.at[..cols.len]) {
            *slot = Some((
                self.dense_inputs(i, j, west_ctl, west_x),
                self.core.dw[i * c + j],
            ));
        }
        self.move_rows(i, i + 1, e);
        self.compute_uniform_rows(i, i + 1, op);
        for (slot, &j) in before.into_iter().zip(&cols.at[..cols.len]) {
            let (inputs, dw) = slot.expect("one per column");
            self.core.dw[i * c + j] = dw;
            self.step_pe(i, j, inputs, mode, e.inp.lr_shift);
        }
    }

    /// Keeps [`DenseArray::plain_run`] of row `i` as `west` enters it
    /// (before the row is stepped).
    #[inline(always)]
    fn count_plain_run(&mut self, i: usize, west: Wave) {
        let c = self.core.cols();
        let first = self.ctl[i * c];
        let run = self.plain_run[i];
        self.plain_run[i] = if !plain_in_row(&west, i) {
            0
        } else if run > 0 && first.op == west.op {
            (run + 1).min(c)
        } else {
            1
        };
    }

    /// Row 0's north inputs, stepped last (nothing reads its old d, dv
    /// and wp any more): d, dv and wp take the skews' outputs, which the
    /// row reads there (as its new d and dv when stepped whole, as its
    /// north inputs when stepped by the table).
    #[inline(always)]
    fn take_north_edge(&mut self, e: &Edges) {
        let core = &mut self.core;
        for j in 0..core.cols() {
            self.wp[j] = self.w_skew.output(j, e.inp.w[j]);
            (core.dv[j], core.d[j]) = core.dy_skew.output(j, (e.inp.dy_valid, e.inp.dy[j]));
        }
    }

    /// Rows `lo..hi` when [`DenseArray::uniform_row_op`] found `op` in each,
    /// after their moving registers moved ([`DenseArray::move_rows`]): the
    /// table's arithmetic with the active weight, no exchange and no swap,
    /// over the rows as one block. The sums an operation computes move
    /// (psv south, psh east) and take the products; the others go to 0.
    #[inline(always)]
    fn compute_uniform_rows(&mut self, lo: usize, hi: usize, op: &Op) {
        let (arith, core) = (self.arith, &mut self.core);
        let c = core.cols();
        let block = lo * c..hi * c;
        let (w, x_in, d_in) = (
            &core.w[block.clone()],
            &core.x[block.clone()],
            &core.d[block.clone()],
        );
        if op.fwd {
            sums_south(&mut core.psv, lo..hi, c);
            arith.accumulate(
                Product::Forward,
                &mut core.psv[block.clone()],
                w,
                x_in,
                None,
            );
        } else {
            clear(&mut core.psv[block.clone()]);
        }
        if op.dx {
            sums_east(&mut core.psh, lo..hi, c);
            arith.accumulate(Product::Dx, &mut core.psh[block.clone()], w, d_in, None);
        } else {
            clear(&mut core.psh[block.clone()]);
        }
        if op.dw {
            let dv_in = &core.dv[block.clone()];
            arith.accumulate(Product::Dw, &mut core.dw[block], d_in, x_in, Some(dv_in));
        }
    }

    /// The moving registers of rows `lo..hi` take their inputs: x and the
    /// control one PE east (the west edge entering each row), d, dv and
    /// the weight stream one PE south (row 0 from the north edge). One
    /// block move per register.
    #[inline(always)]
    fn move_rows(&mut self, lo: usize, hi: usize, e: &Edges) {
        let core = &mut self.core;
        let c = core.cols();
        let rows = lo * c..hi * c;
        // The element crossing into the next row is overwritten by that
        // row's west edge right after.
        core.x[rows.clone()].copy_within(0..rows.len() - 1, 1);
        self.ctl[rows.clone()].copy_within(0..rows.len() - 1, 1);
        for i in lo..hi {
            core.x[i * c] = core.x_skew.output(i, e.inp.x[i]);
            self.ctl[i * c] = self.ctl_skew.output(i, e.wave);
        }
        let from_north = rows.start.max(c)..rows.end;
        if !from_north.is_empty() {
            let north = from_north.start - c..from_north.end - c;
            core.d.copy_within(north.clone(), from_north.start);
            core.dv.copy_within(north.clone(), from_north.start);
            self.wp.copy_within(north, from_north.start);
        }
        if lo == 0 {
            self.take_north_edge(e);
        }
    }

    /// The output side: deskews and output registers sample the PEs
    /// before they change.
    #[inline(always)]
    fn step_outputs(&mut self) {
        self.core.sample_outputs(self.arith);
        let (r, c) = (self.core.rows(), self.core.cols());
        let bottom = (r - 1) * c;
        for j in 0..c {
            self.w_q[j] = self.w_deskew.output(j, self.wp[bottom + j]);
        }
        let wp = &self.wp;
        self.w_deskew.shift_all(|j| wp[bottom + j]);
    }

    /// PE(i, j)'s inputs: its west and north neighbours' registers, or the
    /// west edge's `west_ctl` and `west_x`. Row 0 takes its north inputs
    /// from its own d, dv and wp, which [`DenseArray::take_north_edge`]
    /// gave the edge's values.
    #[inline(always)]
    fn dense_inputs(&self, i: usize, j: usize, west_ctl: Wave, west_x: i64) -> Inputs {
        let core = &self.core;
        let c = core.cols();
        let k = i * c + j;
        let north = if i == 0 { k } else { k - c };
        let (ctl, x_in, psh_in, dw_in) = if j == 0 {
            (west_ctl, west_x, 0, 0)
        } else {
            (
                self.ctl[k - 1],
                core.x[k - 1],
                core.psh[k - 1],
                core.dw[k - 1],
            )
        };
        Inputs {
            c: ctl,
            x_in,
            d_in: core.d[north],
            dv_in: core.dv[north],
            psv_in: if i == 0 { 0 } else { core.psv[north] },
            psh_in,
            wp_in: self.wp[north],
            dw_in,
        }
    }

    /// One PE's edge, per the "A PE in every cycle" table.
    #[inline(always)]
    fn step_pe(&mut self, i: usize, j: usize, inp: Inputs, mode: Mode, lr_shift: u32) {
        let (arith, cfg) = (self.arith, self.core.cfg);
        let k = i * cfg.cols() + j;
        let c = inp.c;
        // The generator steps once in a cycle in which either SGD unit
        // writes a weight (the leaving one of a swap with update, or w in
        // UPDATE; both at once share the draw).
        let r = if (c.swap && c.update) || mode == Mode::Update {
            arith.draw(&mut self.sr_state[k])
        } else {
            0
        };
        let sgd = |w: i64, dw: i64, lr: u32| arith.sgd(w, dw, cfg.pe_lr_shift(lr), r);
        let op = self.op_of(c.op);
        let core = &mut self.core;
        let (w, ws, dw) = (core.w[k], self.ws[k], core.dw[k]);
        let w_eff = if c.swap { ws } else { w };
        let leaving = match (c.swap, c.update) {
            (true, true) => sgd(w, dw, c.lr.into()),
            (true, false) => w,
            (false, _) => ws,
        };
        let exch = c.load && usize::from(c.load_row) == i;
        let mut w_next = if c.swap { ws } else { w };
        self.ws[k] = match (exch, c.swap) {
            (true, _) => inp.wp_in,
            (false, true) => leaving,
            (false, false) => ws,
        };
        self.wp[k] = if exch { leaving } else { inp.wp_in };
        self.ctl[k] = c;
        core.x[k] = inp.x_in;
        core.d[k] = inp.d_in;
        core.dv[k] = inp.dv_in;
        let mac = |which, sum: i64, a: i64, b: i64| arith.add(sum, arith.product(which, a, b));
        core.psv[k] = if op.fwd {
            mac(Product::Forward, inp.psv_in, w_eff, inp.x_in)
        } else {
            0
        };
        core.psh[k] = if op.dx {
            mac(Product::Dx, inp.psh_in, w_eff, inp.d_in)
        } else {
            0
        };
        let base = if c.swap { 0 } else { dw };
        let mut dw_next = if op.dw && inp.dv_in {
            mac(Product::Dw, base, inp.d_in, inp.x_in)
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
        core.w[k] = w_next;
        core.dw[k] = dw_next;
    }
}

/// Whether `wave` neither swaps nor exchanges a weight in row `i`.
#[inline(always)]
fn plain_in_row(wave: &Wave, i: usize) -> bool {
    !(wave.swap || (wave.load && usize::from(wave.load_row) == i))
}

/// Zeroes a row of partial sums. Inside a tile they are zero already
/// (a pass of one kind leaves the other sum at 0), and a test (an OR of
/// the words, which vectorises) is cheaper than a call to `memset` for a
/// few words.
#[inline(always)]
fn clear(row: &mut [i64]) {
    if row.iter().fold(0, |any, &v| any | v) != 0 {
        row.fill(0);
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

#[cfg(test)]
mod tests {
    use super::super::fixed::Fixed;
    use super::*;
    use sysgrad_config::{Backward, NumberFormat, Pipelining};
    use sysgrad_isa::ModeCode;
    use sysgrad_rng::Rng;

    fn random_wave(rng: &mut Rng, rows: usize) -> Wave {
        Wave {
            op: rng.below(8) as u8,
            swap: rng.below(2) == 0,
            update: rng.below(2) == 0,
            lr: rng.below(64) as u8,
            load: rng.below(2) == 0,
            // Now and then a row the array does not have.
            load_row: rng.below(rows + 2) as u16,
        }
    }

    /// Stimulus like a dense controller's: runs of one wave (the inside
    /// of a tile), broken by single swaps and exchanges and by new runs;
    /// mostly STREAM, sometimes any of the 16 codes; rare resets.
    fn stimulus(cfg: &ArrayConfig, rng: &mut Rng, cycles: usize) -> Vec<CycleInput> {
        let mut run = Wave::BUBBLE;
        (0..cycles)
            .map(|_| {
                let code = if rng.below(10) == 0 {
                    rng.below(16) as u8
                } else {
                    Mode::Stream.code()
                };
                let mut inp = CycleInput::zeros(cfg, ModeCode::new(code).unwrap());
                let bits = cfg.format().in_bits;
                for v in inp.x.iter_mut().chain(&mut inp.w).chain(&mut inp.dy) {
                    *v = rng.value(bits);
                }
                inp.dy_valid = rng.below(4) != 0;
                inp.lr_shift = rng.below(64) as u32;
                inp.rst = rng.below(500) == 0;
                inp.wave = match rng.below(14) {
                    // A swap or a weight row on the run's operation, or
                    // anything at all.
                    0 => Wave {
                        op: run.op,
                        ..random_wave(rng, cfg.rows())
                    },
                    1 => random_wave(rng, cfg.rows()),
                    2 => {
                        run = Wave {
                            swap: false,
                            load: false,
                            ..random_wave(rng, cfg.rows())
                        };
                        run
                    }
                    _ => run,
                };
                inp
            })
            .collect()
    }

    /// Whole-row stepping (with and without PEs stepped again for their
    /// swaps and exchanges) and the PE-by-PE table give the same
    /// registers in every cycle, on arrays from 1x1 up, both schedules.
    #[test]
    fn whole_rows_step_as_the_table() {
        let fmt = NumberFormat {
            in_bits: 8,
            acc_bits: 20,
            frac_bits: 3,
        };
        let mut rng = Rng::new(0xd15e);
        // Rows stepped whole, whole with exchanges, by the table.
        let mut paths = [0usize; 3];
        for (rows, cols) in [(1, 1), (1, 4), (4, 1), (3, 5), (6, 6)] {
            for backward in [Backward::Interleaved, Backward::Sequential] {
                let cfg = ArrayConfig::new(rows, cols, backward, fmt)
                    .unwrap()
                    .with_pipelining(Pipelining::Dense)
                    .unwrap();
                let new = || DenseArray::<Fixed>::new(cfg, Fixed::new(cfg.format().into()));
                let (mut rows_at_once, mut by_pe) = (new(), new());
                for (t, inp) in stimulus(&cfg, &mut rng, 3000).iter().enumerate() {
                    count_paths(&rows_at_once, inp, &mut paths);
                    if inp.rst {
                        rows_at_once.reset();
                        by_pe.reset();
                    } else {
                        rows_at_once.step(inp);
                        by_pe.step_rows(inp, false);
                    }
                    assert_eq!(rows_at_once, by_pe, "{rows}x{cols} {backward:?}, cycle {t}");
                }
            }
        }
        // The stimulus takes every path, not only the table.
        assert!(paths.iter().all(|&n| n > 1000), "{paths:?}");
    }

    /// Which path each row of `a` takes in the cycle of `inp`.
    fn count_paths(a: &DenseArray<Fixed>, inp: &CycleInput, paths: &mut [usize; 3]) {
        let mode = Mode::dense_from_code(inp.mode.code());
        if inp.rst || matches!(mode, Mode::Update | Mode::Drain) {
            return;
        }
        let e = Edges {
            inp,
            wave: stream_wave(inp, mode),
        };
        for i in 0..a.core.rows() {
            let west = a.west_ctl(&e, i);
            let path = match a.row_path(i, west) {
                RowPath::Whole(_) => 0,
                RowPath::WithExchanges(..) => 1,
                RowPath::ByPe => 2,
            };
            paths[path] += 1;
        }
    }
}
