//! The array's counters for a layer of any size without stepping every
//! tile: the counters of `gemm::forward` / `gemm::backward` are a sum over
//! weight tiles of what the driver does for one tile (load, stream, drain
//! or update), and that depends only on the tile's shape (M' x K') and the
//! stream length N, never on the data. So each distinct tile shape (at most
//! four: full, short in M, short in K, short in both) is run once, cycle by
//! cycle, on a fresh array, and multiplied by how often it occurs. What
//! `gemm` adds on the host side (the accumulator buffer's partial-sum
//! traffic, storing updated weights, the final zero LOAD that shifts the
//! last updated tile out) is added with the formulas `gemm` uses.
//!
//! `tests/tile_counts.rs` checks every counter of every phase against the
//! full cycle-stepped `gemm` run on small layers; [`Exactness::Stepped`]
//! runs that full path for any layer.

use super::topology::Gemm;
use crate::error::{Result, WorkloadError};
use ndarray::Array2;
use std::collections::HashMap;
use sysgrad_config::{ArrayConfig, Backward};
use sysgrad_emulator::gemm::{self, tiles, DwSink};
use sysgrad_emulator::{Counters, Driver, Mode, Phase, Stats};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exactness {
    /// One representative tile per tile shape, multiplied.
    RepresentativeTiles,
    /// Every tile of the layer, cycle by cycle (slow for big layers).
    Stepped,
}

/// The three costs of one layer: forward, and the backward pass in each
/// schedule (dX and dW, then the dW sink).
#[derive(Debug, Clone, PartialEq)]
pub struct LayerCost {
    pub forward: Stats,
    pub backward_interleaved: Stats,
    pub backward_sequential: Stats,
    /// Weight tiles of the layer and their mean PE occupancy.
    pub tiles: usize,
    pub mapping_efficiency: f64,
}

fn scaled(c: &Counters, k: u64) -> Counters {
    Counters {
        cycles: c.cycles * k,
        macs: c.macs * k,
        w_reads: c.w_reads * k,
        x_reads: c.x_reads * k,
        dy_reads: c.dy_reads * k,
        w_writes: c.w_writes * k,
        y_writes: c.y_writes * k,
        dx_writes: c.dx_writes * k,
        dw_writes: c.dw_writes * k,
        acc_reads: c.acc_reads * k,
        acc_writes: c.acc_writes * k,
    }
}

fn add_scaled(dst: &mut Stats, src: &Stats, k: u64) {
    for (p, c) in src.iter() {
        *dst.phase_mut(p) += scaled(c, k);
    }
}

/// (tile length, how many tiles have it) for a dimension `n` cut by `step`.
fn tile_classes(n: usize, step: usize) -> Vec<(usize, u64)> {
    let mut v = vec![];
    if n / step > 0 {
        v.push((step, (n / step) as u64));
    }
    if !n.is_multiple_of(step) {
        v.push((n % step, 1));
    }
    v
}

/// `DwSink` as a hashable key: `None` drains, `Some(lr_shift)` updates.
type SinkKey = Option<u32>;

fn sink_key(sink: DwSink) -> SinkKey {
    match sink {
        DwSink::Drain => None,
        DwSink::Update { lr_shift } => Some(lr_shift),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum TileOp {
    Forward,
    Backward(Backward, SinkKey),
    /// The LOAD of an empty tile that ends an in-place update.
    FlushLoad,
}

/// Measured per-tile counters, shared across layers with the same shapes.
pub struct TileCounter {
    cfg: ArrayConfig,
    cache: HashMap<(TileOp, usize, usize, usize), Stats>,
}

fn array_err(source: sysgrad_emulator::DriveError) -> WorkloadError {
    WorkloadError::Array {
        layer: 0,
        what: "representative tile",
        source,
    }
}

impl TileCounter {
    pub fn new(cfg: ArrayConfig) -> Self {
        TileCounter {
            cfg,
            cache: HashMap::new(),
        }
    }

    /// Runs one tile operation on a fresh array, cycle by cycle.
    fn measure(&mut self, op: TileOp, mt: usize, kt: usize, n: usize) -> Result<Stats> {
        if let Some(s) = self.cache.get(&(op, mt, kt, n)) {
            return Ok(s.clone());
        }
        let mut cfg = self.cfg;
        if let TileOp::Backward(schedule, _) = op {
            cfg = cfg.with_backward(schedule);
        }
        let mut drv = Driver::new(cfg);
        let (w, x, dy) = (
            Array2::<i64>::zeros((mt, kt)),
            Array2::<i64>::zeros((kt, n)),
            Array2::<i64>::zeros((mt, n)),
        );
        match op {
            TileOp::Forward => {
                drv.load(w.view()).map_err(array_err)?;
                drv.forward(x.view()).map_err(array_err)?;
            }
            TileOp::Backward(schedule, sink) => {
                drv.load(w.view()).map_err(array_err)?;
                match schedule {
                    Backward::Interleaved => {
                        drv.backward(Mode::BwdIl, dy.view(), Some(x.view()))
                            .map_err(array_err)?;
                    }
                    Backward::Sequential => {
                        drv.backward(Mode::BwdDx, dy.view(), None)
                            .map_err(array_err)?;
                        drv.backward(Mode::BwdDw, dy.view(), Some(x.view()))
                            .map_err(array_err)?;
                    }
                }
                match sink {
                    None => {
                        drv.drain();
                    }
                    Some(lr_shift) => drv.update(lr_shift).map_err(array_err)?,
                }
            }
            TileOp::FlushLoad => {
                drv.load(Array2::<i64>::zeros((0, 0)).view())
                    .map_err(array_err)?;
            }
        }
        self.cache.insert((op, mt, kt, n), drv.stats.clone());
        Ok(drv.stats)
    }

    fn sum_tiles(&mut self, op: TileOp, g: Gemm) -> Result<Stats> {
        let (r, c) = (self.cfg.rows(), self.cfg.cols());
        let mut st = Stats::default();
        for (mt, cm) in tile_classes(g.m, c) {
            for (kt, ck) in tile_classes(g.k, r) {
                let tile = self.measure(op, mt, kt, g.n)?;
                add_scaled(&mut st, &tile, cm * ck);
            }
        }
        Ok(st)
    }

    /// The counters of `gemm::forward` on an M x K x N layer.
    pub fn forward(&mut self, g: Gemm) -> Result<Stats> {
        let mut st = self.sum_tiles(TileOp::Forward, g)?;
        // Partial sums of K tiles meet in the accumulator buffer: the first
        // K tile of every M tile writes Y, each further one reads and writes.
        let k_tiles = g.k.div_ceil(self.cfg.rows()) as u64;
        let mn = (g.m * g.n) as u64;
        let f = st.phase_mut(Phase::Forward);
        f.y_writes += mn;
        f.acc_reads += (k_tiles - 1) * mn;
        f.acc_writes += (k_tiles - 1) * mn;
        Ok(st)
    }

    /// The counters of `gemm::backward` on an M x K x N layer.
    pub fn backward(&mut self, schedule: Backward, g: Gemm, sink: DwSink) -> Result<Stats> {
        let mut st = self.sum_tiles(TileOp::Backward(schedule, sink_key(sink)), g)?;
        // dX partial sums over M tiles, charged to the pass that made them.
        let phase = match schedule {
            Backward::Interleaved => Phase::BackwardInterleaved,
            Backward::Sequential => Phase::BackwardDx,
        };
        let m_tiles = g.m.div_ceil(self.cfg.cols()) as u64;
        let kn = (g.k * g.n) as u64;
        let p = st.phase_mut(phase);
        p.dx_writes += kn;
        p.acc_reads += (m_tiles - 1) * kn;
        p.acc_writes += (m_tiles - 1) * kn;
        if let DwSink::Update { .. } = sink {
            // Every updated tile is shifted out by the next LOAD and stored;
            // one last LOAD of nothing shifts the final tile out.
            st.phase_mut(Phase::Load).w_writes += (g.m * g.k) as u64;
            let flush = self.measure(TileOp::FlushLoad, 0, 0, 0)?;
            st += &flush;
        }
        Ok(st)
    }
}

/// Mean share of the PEs a weight tile occupies.
pub fn mapping_efficiency(cfg: &ArrayConfig, g: Gemm) -> (usize, f64) {
    let (r, c) = (cfg.rows(), cfg.cols());
    let mut used = 0usize;
    let mut count = 0usize;
    for (_, mt) in tiles(g.m, c) {
        for (_, kt) in tiles(g.k, r) {
            used += mt * kt;
            count += 1;
        }
    }
    (count, used as f64 / (count * r * c) as f64)
}

/// The full cycle-stepped run of the layer on zero operands.
pub fn stepped(cfg: &ArrayConfig, g: Gemm, sink: DwSink) -> Result<LayerCost> {
    let (w, x, dy) = (
        Array2::<i64>::zeros((g.m, g.k)),
        Array2::<i64>::zeros((g.k, g.n)),
        Array2::<i64>::zeros((g.m, g.n)),
    );
    let mut fwd = Driver::new(*cfg);
    gemm::forward(&mut fwd, w.view(), x.view()).map_err(array_err)?;
    let backward = |schedule: Backward| -> Result<Stats> {
        let mut c = *cfg;
        c = c.with_backward(schedule);
        let mut d = Driver::new(c);
        gemm::backward(&mut d, schedule, w.view(), x.view(), dy.view(), sink).map_err(array_err)?;
        Ok(d.stats)
    };
    let (bil, bseq) = (
        backward(Backward::Interleaved)?,
        backward(Backward::Sequential)?,
    );
    let (tiles, mapping_efficiency) = mapping_efficiency(cfg, g);
    Ok(LayerCost {
        forward: fwd.stats,
        backward_interleaved: bil,
        backward_sequential: bseq,
        tiles,
        mapping_efficiency,
    })
}

/// The cost of one layer, by representative tiles or fully stepped.
pub fn layer_cost(
    counter: &mut TileCounter,
    g: Gemm,
    sink: DwSink,
    how: Exactness,
) -> Result<LayerCost> {
    if how == Exactness::Stepped {
        return stepped(&counter.cfg, g, sink);
    }
    let (tiles, mapping_efficiency) = mapping_efficiency(&counter.cfg, g);
    Ok(LayerCost {
        forward: counter.forward(g)?,
        backward_interleaved: counter.backward(Backward::Interleaved, g, sink)?,
        backward_sequential: counter.backward(Backward::Sequential, g, sink)?,
        tiles,
        mapping_efficiency,
    })
}
