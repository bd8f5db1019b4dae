//! A layer on a dense array: the layer's tiles, in the `none` schedule's
//! order, as entries of the [`Issuer`] (`docs/ARCHITECTURE.md`, Scheduling
//! a layer on a dense array), with the operands and results held in
//! matrices. The bits are those of the `none` schedule; the cycles differ.

use super::layer::{tiles, BackwardResult, DwSink, Layers};
use crate::array::Array;
use crate::driver::{DriveError, Driver};
use crate::issue::{phase_of, Entry, Issuer, Marks, Tile, Waves};
use crate::stats::{Phase, Stats};
use ndarray::{Array2, ArrayView2};
use sysgrad_config::{Backward, Numbers};
use sysgrad_isa::Mode;

/// The schedule of a dense array.
pub(super) struct DenseLayers;

impl Layers for DenseLayers {
    fn forward(
        &self,
        drv: &mut Driver,
        w: ArrayView2<i64>,
        x: ArrayView2<i64>,
    ) -> Result<Array2<i64>, DriveError> {
        checked(drv, "W", w)?;
        checked(drv, "X", x)?;
        if x.ncols() == 0 {
            return Err(DriveError::EmptyStream);
        }
        let (m, k, n) = (w.nrows(), w.ncols(), x.ncols());
        let mut entries = Vec::new();
        for tile in layer_tiles(drv, m, k) {
            let tag = tile.tag;
            entries.push(Entry::Load { tile, zero: false });
            entries.push(stream(vec![Mode::Fwd], n, tag, None));
        }
        let mut layer = new_layer(drv, w.view(), x.view(), None, Phase::Forward);
        run(drv, entries, &mut layer);
        Ok(layer.y)
    }

    fn backward(
        &self,
        drv: &mut Driver,
        schedule: Backward,
        w: ArrayView2<i64>,
        x: ArrayView2<i64>,
        dy: ArrayView2<i64>,
        sink: DwSink,
    ) -> Result<BackwardResult, DriveError> {
        if schedule == Backward::Interleaved && !drv.cfg().interleaved() {
            return Err(DriveError::NotInterleaved);
        }
        checked(drv, "W", w)?;
        checked(drv, "dY", dy)?;
        checked(drv, "X", x)?;
        if x.ncols() == 0 {
            return Err(DriveError::EmptyStream);
        }
        let (m, k, n) = (w.nrows(), w.ncols(), x.ncols());
        let (passes, dx_phase) = match schedule {
            Backward::Interleaved => (vec![Mode::BwdIl], Phase::BackwardInterleaved),
            Backward::Sequential => (vec![Mode::BwdDx, Mode::BwdDw], Phase::BackwardDx),
        };
        let lr = match sink {
            DwSink::Update { lr_shift } => Some(lr_shift as u8),
            DwSink::Drain => None,
        };
        let mut entries = Vec::new();
        for (t, tile) in layer_tiles(drv, m, k).into_iter().enumerate() {
            let tag = tile.tag;
            entries.push(Entry::Load { tile, zero: false });
            // Each stream swaps out the tile before it, updated on the way.
            entries.push(stream(passes.clone(), n, tag, lr.filter(|_| t > 0)));
            if lr.is_none() {
                entries.push(Entry::Drain {
                    marks: Marks::default(),
                    tag,
                });
            }
        }
        if lr.is_some() && !entries.is_empty() {
            // The last tile leaves updated: a tile of zeros swaps it out, and
            // a second one sends it out of the array.
            entries.extend([zero_load(), Entry::Swap { evict_update: lr }, zero_load()]);
        }
        let mut layer = new_layer(drv, w.view(), x.view(), Some(dy.view()), dx_phase);
        match sink {
            DwSink::Drain => layer.dw = Some(Array2::zeros((m, k))),
            DwSink::Update { .. } => layer.w_new = Some(Array2::zeros((m, k))),
        }
        run(drv, entries, &mut layer);
        Ok(BackwardResult {
            dx: layer.dx,
            dw: layer.dw,
            w: layer.w_new,
        })
    }
}

/// Where a tile sits in the layer: its first row of M and column of K.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    m0: usize,
    k0: usize,
}

/// The layer's operands and results, and the counters of the words moved.
struct Layer<'a> {
    w: ArrayView2<'a, i64>,
    x: ArrayView2<'a, i64>,
    dy: Option<ArrayView2<'a, i64>>,
    y: Array2<i64>,
    dx: Array2<i64>,
    dw: Option<Array2<i64>>,
    w_new: Option<Array2<i64>>,
    /// The phase the dX writes of the schedule are charged to.
    dx_phase: Phase,
    numbers: Numbers,
    stats: Stats,
}

impl Layer<'_> {
    /// `dst = part` for the first tile of a sum, `acc_add` for later ones,
    /// counted as `gemm` counts the accumulator buffer.
    fn accumulate(
        &mut self,
        phase: Phase,
        first: bool,
        lanes: usize,
        write: impl Fn(&mut Self, usize, bool),
    ) {
        for l in 0..lanes {
            write(self, l, first);
        }
        let st = self.stats.phase_mut(phase);
        let n = lanes as u64;
        if first {
            match phase {
                Phase::Forward => st.y_writes += n,
                _ => st.dx_writes += n,
            }
        } else {
            st.acc_reads += n;
            st.acc_writes += n;
        }
    }
}

impl Waves<At> for Layer<'_> {
    fn slot(&mut self, tile: &Tile<At>, row: usize, w: &mut [i64]) {
        let At { m0, k0 } = tile.tag;
        if row < tile.k {
            for (j, lane) in w.iter_mut().enumerate().take(tile.m) {
                *lane = self.w[[m0 + j, k0 + row]];
            }
            self.stats.phase_mut(Phase::Load).w_reads += tile.m as u64;
        }
    }

    fn column(
        &mut self,
        at: &At,
        mode: Mode,
        _pass: usize,
        t: usize,
        (m, k): (usize, usize),
        x: &mut [i64],
        dy: &mut [i64],
    ) -> bool {
        let phase = phase_of(mode);
        if mode.streams_x() {
            for (i, lane) in x.iter_mut().enumerate().take(k) {
                *lane = self.x[[at.k0 + i, t]];
            }
            self.stats.phase_mut(phase).x_reads += k as u64;
        }
        if mode == Mode::Fwd {
            return false;
        }
        let d = self.dy.expect("backward passes have dY");
        for (j, lane) in dy.iter_mut().enumerate().take(m) {
            *lane = d[[at.m0 + j, t]];
        }
        self.stats.phase_mut(phase).dy_reads += m as u64;
        true
    }

    fn result(&mut self, at: &At, mode: Mode, t: usize, (m, k): (usize, usize), array: &Array) {
        let numbers = self.numbers;
        // A first tile's part is stored as it is: the fold from 0 (+0.0)
        // gives it back (a part is never -0.0: the chain starts at +0.0).
        let add = |dst: &mut i64, v: i64, first: bool| {
            *dst = if first {
                v
            } else {
                super::acc_add(&numbers, *dst, v)
            };
        };
        if mode == Mode::Fwd {
            self.accumulate(Phase::Forward, at.k0 == 0, m, |s, j, first| {
                add(&mut s.y[[at.m0 + j, t]], array.y_out()[j], first)
            });
        } else {
            let phase = self.dx_phase;
            self.accumulate(phase, at.m0 == 0, k, |s, i, first| {
                add(&mut s.dx[[at.k0 + i, t]], array.dx_out()[i], first)
            });
        }
    }

    fn evicted(&mut self, tile: &Tile<At>, row: usize, array: &Array) {
        let At { m0, k0 } = tile.tag;
        let w_out = array.w_out();
        if let Some(w_new) = &mut self.w_new {
            for j in 0..tile.m {
                w_new[[m0 + j, k0 + row]] = w_out[j];
            }
        }
        self.stats.phase_mut(Phase::Load).w_writes += tile.m as u64;
    }

    fn drained(&mut self, at: &At, (m, k): (usize, usize), step: usize, array: &Array) {
        let c = array.cols();
        // DRAIN cycle `step` shows column C-1-step at the east edge.
        let j = c - 1 - step;
        if j < m {
            let dw = self.dw.as_mut().expect("the Drain sink keeps dW");
            for i in 0..k {
                dw[[at.m0 + j, at.k0 + i]] = array.dw_east(i);
            }
            self.stats.phase_mut(Phase::Drain).dw_writes += k as u64;
        }
    }

    fn requant(&mut self, _: &At, _: usize) {
        unreachable!("gemm does not requantize")
    }
}

/// Every tile of the layer, in `gemm`'s order.
fn layer_tiles(drv: &Driver, m: usize, k: usize) -> Vec<Tile<At>> {
    let (r, c) = (drv.array.rows(), drv.array.cols());
    let mut v = Vec::new();
    for (m0, mt) in tiles(m, c) {
        for (k0, kt) in tiles(k, r) {
            v.push(Tile {
                m: mt,
                k: kt,
                lines: None,
                tag: At { m0, k0 },
            });
        }
    }
    v
}

/// Runs `entries` (ended by a Stop) on the driver's array; a layer
/// without tiles (M or K is 0) runs nothing.
fn run(drv: &mut Driver, entries: Vec<Entry<At>>, layer: &mut Layer) {
    if entries.is_empty() {
        return;
    }
    let (r, c) = (drv.array.rows(), drv.array.cols());
    let mut issuer = Issuer::new(r, c);
    issuer.queue.extend(entries);
    issuer.queue.push_back(Entry::Stop { update_first: None });
    while !issuer.cycle(drv, layer) {}
    drv.stats += &std::mem::take(&mut layer.stats);
}

fn checked(drv: &Driver, what: &'static str, t: ArrayView2<i64>) -> Result<(), DriveError> {
    crate::driver::check_values(&drv.cfg(), what, t)
}

fn stream(passes: Vec<Mode>, n: usize, tag: At, evict_update: Option<u8>) -> Entry<At> {
    Entry::Stream {
        passes,
        n,
        marks: Marks {
            swap: true,
            evict_update,
            update_first: None,
        },
        tag,
    }
}

fn new_layer<'a>(
    drv: &Driver,
    w: ArrayView2<'a, i64>,
    x: ArrayView2<'a, i64>,
    dy: Option<ArrayView2<'a, i64>>,
    dx_phase: Phase,
) -> Layer<'a> {
    let (m, k, n) = (w.nrows(), w.ncols(), x.ncols());
    Layer {
        w,
        x,
        dy,
        y: Array2::zeros((m, n)),
        dx: Array2::zeros((k, n)),
        dw: None,
        w_new: None,
        dx_phase,
        numbers: drv.cfg().numbers(),
        stats: Stats::default(),
    }
}

fn zero_load() -> Entry<At> {
    Entry::zero_load(At { m0: 0, k0: 0 })
}
