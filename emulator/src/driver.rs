//! Tile-level operations on the array: each one turns a small matrix
//! operation into the exact per-cycle inputs of `sa_top` (the same stimulus
//! the co-simulation feeds the RTL), clocks the model and picks the results
//! off the output ports at the cycles `docs/ARCHITECTURE.md` names.
//!
//! A tile is at most `cols` x `rows` in W orientation (M x K); smaller tiles
//! are padded with zeros. Matrices are `i64` holding data or accumulator
//! values of the configured widths.

use crate::array::{Array, CycleInput, CycleOutput};
use crate::stats::{Phase, Stats};
use ndarray::{Array2, ArrayView1, ArrayView2};
use sysgrad_config::{fixed, ArrayConfig, Numbers};
use sysgrad_isa::{timing, Mode};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DriveError {
    #[error("{what} tile is {got_r}x{got_c}, larger than the array allows ({max_r}x{max_c})")]
    TileTooLarge {
        what: &'static str,
        got_r: usize,
        got_c: usize,
        max_r: usize,
        max_c: usize,
    },
    #[error("{what} has {got} columns, expected {expected} (the same N for every stream)")]
    StreamLength {
        what: &'static str,
        got: usize,
        expected: usize,
    },
    #[error("{what} holds {value}, which does not fit in {bits}-bit signed data")]
    ValueRange {
        what: &'static str,
        value: i64,
        bits: u32,
    },
    #[error(
        "{what} holds {value:#x}, which is not a {format} bit pattern (0..={max:#x}; \
         [format] {field} = \"{format}\")"
    )]
    FloatWord {
        what: &'static str,
        value: i64,
        format: &'static str,
        field: &'static str,
        max: i64,
    },
    #[error(
        "the interleaved backward pass needs an array configured with backward = \"interleaved\""
    )]
    NotInterleaved,
    #[error(
        "lr_shift {0} is not accepted by this array: it must fit the 6-bit lr_shift port \
         (0..=63) and, on an array built with a constant [array] lr_shift, equal it"
    )]
    LrShift(u32),
    #[error("a stream needs at least one column (N >= 1)")]
    EmptyStream,
    /// A figure counted from sizes alone does not fit in `u64`.
    #[error(transparent)]
    Overflow(#[from] sysgrad_isa::count::Overflow),
}

/// Whether every value of operand `what` ("W", "X" or "dY") is a data
/// word of its format: a signed value of the data width in fixed point,
/// a bit pattern of the operand's format (weights, activations or
/// gradients) in floating point. The error names the first that is not,
/// in row-major order.
pub(crate) fn check_values(
    cfg: &ArrayConfig,
    what: &'static str,
    t: ArrayView2<i64>,
) -> Result<(), DriveError> {
    match cfg.numbers() {
        Numbers::Fixed(f) => {
            let bits = f.widths.in_bits;
            // The bounds once, and a branch-free pass first: every operand
            // of every product goes through here.
            let (lo, hi) = (fixed::min_of(bits), fixed::max_of(bits));
            let in_range = |ok: bool, &v: &i64| ok & (lo <= v) & (v <= hi);
            let all_fit = match t.as_slice_memory_order() {
                Some(s) => s.iter().fold(true, in_range),
                None => t.iter().fold(true, in_range),
            };
            if all_fit {
                return Ok(());
            }
            match t.iter().find(|v| !fixed::fits(**v, bits)) {
                Some(&value) => Err(DriveError::ValueRange { what, value, bits }),
                None => Ok(()),
            }
        }
        Numbers::Float(f) => {
            let (kind, field) = match what {
                "W" => (f.weights, "weights"),
                "X" => (f.activations, "activations"),
                "dY" => (f.gradients, "gradients"),
                _ => unreachable!("operands are W, X and dY"),
            };
            let max = (1i64 << kind.encoding().bits()) - 1;
            match t.iter().find(|v| !(0..=max).contains(*v)) {
                Some(&value) => Err(DriveError::FloatWord {
                    what,
                    value,
                    format: kind.name(),
                    field,
                    max,
                }),
                None => Ok(()),
            }
        }
    }
}

/// Everything that crossed the array's ports, cycle by cycle; what the
/// co-simulation replays on the RTL and compares against.
#[derive(Debug, Clone, Default)]
pub struct Recording {
    pub inputs: Vec<CycleInput>,
    /// `outputs[t]` is what the ports showed while `inputs[t]` was applied.
    pub outputs: Vec<CycleOutput>,
    /// Optional full register snapshot before each edge (for VCD and
    /// register-level comparison).
    pub snapshots: Option<Vec<Array>>,
}

/// Called with the registers before every clock edge: what a recording's
/// snapshots hold, handed over as they are taken instead of kept (a VCD
/// written as the run goes holds one cycle, not the run).
pub type Watcher = Box<dyn FnMut(&Array) + Send>;

/// Owns the array model, its counters and an optional recording.
pub struct Driver {
    pub array: Array,
    pub stats: Stats,
    pub recording: Option<Recording>,
    watcher: Option<Watcher>,
    cycle: u64,
    /// M x K of the weight tile in the PEs (for counting useful MACs).
    loaded: (usize, usize),
}

impl Driver {
    pub fn new(cfg: ArrayConfig) -> Self {
        Driver {
            array: Array::new(cfg),
            stats: Stats::default(),
            recording: None,
            watcher: None,
            cycle: 0,
            loaded: (0, 0),
        }
    }

    /// A driver that records every cycle's inputs and outputs
    /// (and, with `snapshots`, every register).
    pub fn recording(cfg: ArrayConfig, snapshots: bool) -> Self {
        let mut d = Driver::new(cfg);
        d.recording = Some(Recording {
            snapshots: snapshots.then(Vec::new),
            ..Recording::default()
        });
        d
    }

    /// This driver, handing the registers to `watch` before every edge.
    pub fn watched(mut self, watch: Watcher) -> Self {
        self.watcher = Some(watch);
        self
    }

    /// Stops handing the registers over; the watcher, to be dropped (and
    /// whatever it shares released).
    pub fn unwatch(&mut self) -> Option<Watcher> {
        self.watcher.take()
    }

    pub fn cfg(&self) -> ArrayConfig {
        self.array.cfg()
    }

    /// Cycles clocked since construction.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    /// One cycle: observe the ports, apply `inp` on the clock edge.
    pub fn clock(&mut self, inp: CycleInput, phase: Phase) -> CycleOutput {
        let out = self.array.outputs();
        self.tick(&inp, phase);
        out
    }

    /// One clock edge with `inp`, charged to `phase`. The tile operations
    /// read the ports they need straight from the registers before calling
    /// this, so nothing is allocated per cycle unless recording.
    fn tick(&mut self, inp: &CycleInput, phase: Phase) {
        if let Some(watch) = &mut self.watcher {
            watch(&self.array);
        }
        if let Some(rec) = &mut self.recording {
            if let Some(s) = &mut rec.snapshots {
                s.push(self.array.clone());
            }
            rec.outputs.push(self.array.outputs());
            rec.inputs.push(inp.clone());
        }
        self.array.step(inp);
        self.stats.phase_mut(phase).cycles += 1;
        self.cycle += 1;
    }

    fn check_tile(
        &self,
        what: &'static str,
        t: &ArrayView2<i64>,
        max_r: usize,
        max_c: usize,
    ) -> Result<(), DriveError> {
        let (got_r, got_c) = t.dim();
        if got_r > max_r || got_c > max_c {
            return Err(DriveError::TileTooLarge {
                what,
                got_r,
                got_c,
                max_r,
                max_c,
            });
        }
        check_values(&self.cfg(), what, t.view())
    }

    /// Shifts `w` (M' x K', M' <= cols, K' <= rows, zero-padded) into the
    /// PEs in `rows` LOAD cycles. Returns the weights that were in the array
    /// before (cols x rows, W orientation), which leave through `w_out`.
    pub fn load(&mut self, w: ArrayView2<i64>) -> Result<Array2<i64>, DriveError> {
        let (r, c) = (self.array.rows(), self.array.cols());
        self.check_tile("W", &w, c, r)?;
        let (m, k) = w.dim();
        let mut old = Array2::zeros((c, r));
        let mut inp = CycleInput::zeros(&self.cfg(), Mode::Load);
        // One array row per LOAD cycle, the bottom row first.
        for step in 0..self.cost(timing::LOAD, 0) {
            let row = r - 1 - step;
            for j in 0..m {
                inp.w[j] = if row < k { w[[j, row]] } else { 0 };
            }
            // w_out: the south row's weights, before the edge.
            old.column_mut(row)
                .assign(&ArrayView1::from(self.array.w_out()));
            self.tick(&inp, Phase::Load);
        }
        self.stats.phase_mut(Phase::Load).w_reads += (m * k) as u64;
        self.loaded = (m, k);
        Ok(old)
    }

    /// Cycles of one streaming pass of `n` columns ([`timing::PASS`]).
    pub fn pass_cycles(&self, n: usize) -> usize {
        self.cost(timing::PASS, n)
    }

    /// `cycles` evaluated for this array and a stream of `n` columns.
    fn cost(&self, cycles: timing::Cycles, n: usize) -> usize {
        cycles.eval(&self.array.cfg(), n) as usize
    }

    /// Streams x (K' x N) through the loaded weights: returns the raw
    /// accumulator result Y (cols x N) of `W_tile * x`.
    pub fn forward(&mut self, x: ArrayView2<i64>) -> Result<Array2<i64>, DriveError> {
        let (r, c) = (self.array.rows(), self.array.cols());
        self.check_tile("X", &x, r, usize::MAX)?;
        let n = x.ncols();
        if n == 0 {
            return Err(DriveError::EmptyStream);
        }
        let (lat, len) = (self.cost(timing::RESULT_LATENCY, n), self.pass_cycles(n));
        let mut y = Array2::zeros((c, n));
        let mut inp = CycleInput::zeros(&self.cfg(), Mode::Fwd);
        for t in 0..len {
            if t < n {
                for i in 0..x.nrows() {
                    inp.x[i] = x[[i, t]];
                }
            } else if t == n {
                inp.x.fill(0);
            }
            if t >= lat {
                y.column_mut(t - lat)
                    .assign(&ArrayView1::from(self.array.y_out()));
            }
            self.tick(&inp, Phase::Forward);
        }
        y.column_mut(n - 1)
            .assign(&ArrayView1::from(self.array.y_out()));
        let (m, k) = self.loaded;
        let st = self.stats.phase_mut(Phase::Forward);
        st.x_reads += x.len() as u64;
        st.macs += (m * k * n) as u64;
        Ok(y)
    }

    /// One backward pass in `mode` (BwdDx, BwdDw or BwdIl). `dy` is M' x N
    /// (M' <= cols); `x` (K' x N) is needed for the dW modes. Returns dX
    /// (rows x N, raw accumulator) for the dX modes. dW accumulates in the
    /// PEs until [`Driver::drain`] or [`Driver::update`].
    pub fn backward(
        &mut self,
        mode: Mode,
        dy: ArrayView2<i64>,
        x: Option<ArrayView2<i64>>,
    ) -> Result<Option<Array2<i64>>, DriveError> {
        let (r, c) = (self.array.rows(), self.array.cols());
        let phase = match mode {
            Mode::BwdDx => Phase::BackwardDx,
            Mode::BwdDw => Phase::BackwardDw,
            Mode::BwdIl if self.cfg().interleaved() => Phase::BackwardInterleaved,
            Mode::BwdIl => return Err(DriveError::NotInterleaved),
            _ => unreachable!("backward() takes a backward mode"),
        };
        self.check_tile("dY", &dy, c, usize::MAX)?;
        let n = dy.ncols();
        if n == 0 {
            return Err(DriveError::EmptyStream);
        }
        let x = if mode.computes_dw() {
            let x = x.expect("dW modes stream x");
            self.check_tile("X", &x, r, usize::MAX)?;
            if x.ncols() != n {
                return Err(DriveError::StreamLength {
                    what: "X",
                    got: x.ncols(),
                    expected: n,
                });
            }
            Some(x)
        } else {
            None
        };
        let (lat, len) = (self.cost(timing::RESULT_LATENCY, n), self.pass_cycles(n));
        let mut dx = Array2::zeros((r, n));
        let mut inp = CycleInput::zeros(&self.cfg(), mode);
        for t in 0..len {
            if t < n {
                for j in 0..dy.nrows() {
                    inp.dy[j] = dy[[j, t]];
                }
                inp.dy_valid = true;
                if let Some(x) = &x {
                    for i in 0..x.nrows() {
                        inp.x[i] = x[[i, t]];
                    }
                }
            } else if t == n {
                inp.dy.fill(0);
                inp.x.fill(0);
                inp.dy_valid = false;
            }
            if t >= lat {
                dx.column_mut(t - lat)
                    .assign(&ArrayView1::from(self.array.dx_out()));
            }
            self.tick(&inp, phase);
        }
        dx.column_mut(n - 1)
            .assign(&ArrayView1::from(self.array.dx_out()));

        let (m, k) = self.loaded;
        let st = self.stats.phase_mut(phase);
        st.dy_reads += dy.len() as u64;
        if mode.computes_dx() {
            st.macs += (m * k * n) as u64;
        }
        if let Some(x) = &x {
            st.x_reads += x.len() as u64;
            st.macs += (m * k * n) as u64;
        }
        Ok(mode.computes_dx().then_some(dx))
    }

    /// Shifts the accumulated dW out (cols x rows, W orientation) in `cols`
    /// DRAIN cycles, leaving every `dw` at 0.
    pub fn drain(&mut self) -> Array2<i64> {
        let (r, c) = (self.array.rows(), self.array.cols());
        let mut dw = Array2::zeros((c, r));
        let inp = CycleInput::zeros(&self.cfg(), Mode::Drain);
        // One array column per DRAIN cycle, the east column first.
        for k in 0..self.cost(timing::DRAIN, 0) {
            // dw_out: the east column's accumulators, before the edge.
            for i in 0..r {
                dw[[c - 1 - k, i]] = self.array.dw_east(i);
            }
            self.tick(&inp, Phase::Drain);
        }
        let (m, k) = self.loaded;
        self.stats.phase_mut(Phase::Drain).dw_writes += (m * k) as u64;
        dw
    }

    /// One UPDATE cycle: `w -= 2^-lr_shift * dw` in every PE, `dw` cleared.
    pub fn update(&mut self, lr_shift: u32) -> Result<(), DriveError> {
        if !self.cfg().accepts_lr_shift(lr_shift) {
            return Err(DriveError::LrShift(lr_shift));
        }
        let mut inp = CycleInput::zeros(&self.cfg(), Mode::Update);
        inp.lr_shift = lr_shift;
        for _ in 0..self.cost(timing::UPDATE, 0) {
            self.clock(inp.clone(), Phase::Update);
        }
        Ok(())
    }

    /// `n` IDLE cycles.
    pub fn idle(&mut self, n: usize) {
        for _ in 0..n {
            self.clock(CycleInput::zeros(&self.cfg(), Mode::Idle), Phase::Idle);
        }
    }
}
