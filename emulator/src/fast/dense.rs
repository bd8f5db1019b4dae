//! The cycles of a layer on a dense array, in closed form: what the issue
//! engine (`crate::issue`) does with a layer's entries
//! (`docs/ARCHITECTURE.md`, Scheduling a layer on a dense array).
//! `tests/fast_vs_cycle.rs` checks every phase against the clocked run.

use super::ledger;
use super::operands::{Layer, Operands};
use crate::driver::DriveError;
use crate::gemm::DwSink;
use crate::stats::{Phase, Stats};
use sysgrad_config::{ArrayConfig, Backward};
use sysgrad_isa::count::{Count, Overflow};
use sysgrad_isa::timing;

/// The counters of `layer` (M x K x N) on a dense array (inner sizes and
/// `lr_shift` already checked): the operands are checked as the dense
/// `gemm` checks them, whole, before any cycle.
pub fn count(
    stats: &mut Stats,
    cfg: &ArrayConfig,
    (m, k, n): (usize, usize, usize),
    layer: Layer,
    ops: &impl Operands,
) -> Result<(), DriveError> {
    if let Layer::Backward(Backward::Interleaved, _) = layer {
        if !cfg.interleaved() {
            return Err(DriveError::NotInterleaved);
        }
    }
    ops.check_w((0, m), (0, k))?;
    if let Layer::Backward(..) = layer {
        ops.check_dy((0, m))?;
    }
    ops.check_x((0, k))?;
    dense_layer(stats, cfg, (m, k, n), layer)
}

/// Cycles per phase of a dense layer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cycles {
    per_phase: Vec<(Phase, u64)>,
}

impl Cycles {
    pub fn get(&self, p: Phase) -> u64 {
        self.per_phase
            .iter()
            .find(|(q, _)| *q == p)
            .map_or(0, |(_, c)| *c)
    }
}

/// The waves of one tile's stream and the phase of each pass.
fn passes(layer: Layer) -> &'static [Phase] {
    match layer {
        Layer::Forward => &[Phase::Forward],
        Layer::Backward(Backward::Interleaved, _) => &[Phase::BackwardInterleaved],
        Layer::Backward(Backward::Sequential, _) => &[Phase::BackwardDx, Phase::BackwardDw],
    }
}

/// The cycles of `tiles` tiles of `n` columns on an `r` x `c` dense array
/// (`tiles` >= 1), checked.
pub fn cycles(
    r: usize,
    c: usize,
    tiles: usize,
    n: usize,
    layer: Layer,
) -> Result<Cycles, Overflow> {
    let lat = timing::RESULT_LATENCY.count(r, c, 0, 0);
    let (r, c, t, n) = (r as u64, c as u64, Count::from(tiles), Count::from(n));
    let phases = passes(layer);
    let w = n * phases.len();
    // Each tile's slots start at the swap of the one before: a tile takes
    // max(R, W) waves, and W < R leaves R - W cycles of slots alone.
    let step = w.max(r.into());
    let gap = match w.value() {
        Some(w) => Count::from(r.saturating_sub(w)),
        None => Count::ZERO,
    };
    let (total, load, drain) = match layer {
        Layer::Forward => (
            step * (t - 1u64) + r + w + lat + 1u64,
            gap * (t - 1u64) + r,
            Count::ZERO,
        ),
        Layer::Backward(_, DwSink::Update { .. }) => {
            // A tile of zeros swaps the last one out (max(W, R) after its
            // swap), R more zero slots send it out of the array.
            let last_swap = step * (t - 1u64) + r;
            let zero_swap = last_swap + step;
            (zero_swap + r + lat + 1u64, gap * t + r + r, Count::ZERO)
        }
        Layer::Backward(_, DwSink::Drain) => {
            // Loads come after each DRAIN: slots, waves, the wait until
            // everything is out, C DRAIN cycles.
            let per_tile = w + r + lat + c;
            (t * per_tile + 1u64, t * r, t * c)
        }
    };
    let what = |p: Phase| format!("the {} cycles of a dense layer", p.name());
    let mut per_phase = Vec::new();
    for &p in phases {
        per_phase.push((p, (t * n).get(what(p))?));
    }
    let busy = load + drain + t * w;
    per_phase.extend([
        (Phase::Load, load.get(what(Phase::Load))?),
        (Phase::Drain, drain.get(what(Phase::Drain))?),
        (Phase::Idle, (total - busy).get(what(Phase::Idle))?),
    ]);
    Ok(Cycles { per_phase })
}

/// A dense layer: the words and MACs of the `none` walk (they do not depend
/// on the schedule), the cycles of the dense schedule.
fn dense_layer(
    stats: &mut Stats,
    cfg: &ArrayConfig,
    (m, k, n): (usize, usize, usize),
    layer: Layer,
) -> Result<(), DriveError> {
    if n == 0 {
        return Err(DriveError::EmptyStream);
    }
    let mut words = Stats::default();
    ledger::shapes(&mut words, cfg, (m, k, n), layer)?;
    let tiles = m.div_ceil(cfg.cols()) * k.div_ceil(cfg.rows());
    if tiles == 0 {
        return Ok(());
    }
    let cycles = cycles(cfg.rows(), cfg.cols(), tiles, n, layer)?;
    for p in Phase::ALL {
        words.phase_mut(p).cycles = cycles.get(p);
    }
    words.checked_totals()?;
    stats.checked_add(&words)?;
    Ok(())
}
