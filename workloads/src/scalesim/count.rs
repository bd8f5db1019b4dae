//! The array's counters for a layer of any size, without data: the fast
//! exact mode's ledger (`sysgrad_emulator::fast::count_forward` /
//! `count_backward`) walks the tiles in `gemm`'s order and charges what the
//! driver would for each, so these counts are the cycle-accurate ones by
//! construction (`emulator/tests/fast_vs_cycle.rs` checks the ledger
//! against the clocked driver). [`Exactness::Stepped`] instead runs the
//! layer cycle by cycle on zero operands (slow on big layers;
//! `tests/tile_counts.rs` checks that both agree).

use super::topology::Gemm;
use crate::error::{Result, WorkloadError};
use ndarray::Array2;
use sysgrad_config::{ArrayConfig, Backward};
use sysgrad_emulator::gemm::{self, tiles, DwSink};
use sysgrad_emulator::{fast, Driver, Stats};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exactness {
    /// The fast mode's ledger: counters per tile, no cycles stepped.
    FastLedger,
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

fn array_err(source: sysgrad_emulator::DriveError) -> WorkloadError {
    WorkloadError::array(0, "layer count")(source)
}

/// The fast mode's counters of the forward pass and of the backward pass
/// in each schedule.
pub fn counted(cfg: &ArrayConfig, g: Gemm, sink: DwSink) -> Result<LayerCost> {
    let dims = (g.m, g.k, g.n);
    let mut forward = Stats::default();
    fast::count_forward(&mut forward, cfg, dims).map_err(array_err)?;
    let backward = |schedule: Backward| -> Result<Stats> {
        let mut st = Stats::default();
        let c = cfg.with_backward(schedule);
        fast::count_backward(&mut st, &c, schedule, dims, sink).map_err(array_err)?;
        Ok(st)
    };
    let (tiles, mapping_efficiency) = mapping_efficiency(cfg, g);
    Ok(LayerCost {
        forward,
        backward_interleaved: backward(Backward::Interleaved)?,
        backward_sequential: backward(Backward::Sequential)?,
        tiles,
        mapping_efficiency,
    })
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
        let mut d = Driver::new(cfg.with_backward(schedule));
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

/// The cost of one layer, counted by the ledger or fully stepped.
pub fn layer_cost(cfg: &ArrayConfig, g: Gemm, sink: DwSink, how: Exactness) -> Result<LayerCost> {
    match how {
        Exactness::FastLedger => counted(cfg, g, sink),
        Exactness::Stepped => stepped(cfg, g, sink),
    }
}
