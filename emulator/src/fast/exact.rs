//! The fast exact mode's products: the numbers from the kernel
//! (`kernel.rs`), the counters from the ledger of the array's pipelining
//! (`ledger.rs` for `none`, `dense.rs` for dense), chosen here.

use super::operands::{Layer, Operands, Shapes, Views};
use super::{dense, ledger, numbers};
use crate::driver::DriveError;
use crate::gemm::{self, check_inner, BackwardResult, DwSink};
use crate::stats::Stats;
use ndarray::{Array2, ArrayView2};
use sysgrad_config::float::StochasticBits;
use sysgrad_config::{ArrayConfig, Backward, Pipelining};

/// The counters of `layer` (M x K x N) on `cfg`'s array, by the ledger of
/// its pipelining (inner sizes and `lr_shift` already checked).
fn count(
    stats: &mut Stats,
    cfg: &ArrayConfig,
    mkn: (usize, usize, usize),
    layer: Layer,
    ops: &impl Operands,
) -> Result<(), DriveError> {
    match cfg.pipelining() {
        Pipelining::None => ledger::count(stats, cfg, mkn, layer, ops),
        Pipelining::Dense => dense::count(stats, cfg, mkn, layer, ops),
    }
}

/// [`count`] without data: the shape ledger's closed form on a `none`
/// array (checked, at once however large the layer).
fn count_shapes(
    stats: &mut Stats,
    cfg: &ArrayConfig,
    mkn: (usize, usize, usize),
    layer: Layer,
) -> Result<(), DriveError> {
    match cfg.pipelining() {
        Pipelining::None => ledger::shapes(stats, cfg, mkn, layer),
        Pipelining::Dense => dense::count(stats, cfg, mkn, layer, &Shapes),
    }
}

/// `Y = W X` (W: M x K, X: K x N) as raw accumulators, M x N: what
/// [`crate::gemm::forward`] returns, with the same counters added to `stats`.
pub fn forward(
    stats: &mut Stats,
    cfg: &ArrayConfig,
    w: ArrayView2<i64>,
    x: ArrayView2<i64>,
) -> Result<Array2<i64>, DriveError> {
    let (m, k) = w.dim();
    check_inner("X rows", x.nrows(), k)?;
    // `.view()` reborrows all three at one lifetime (views are invariant).
    let ops = Views {
        w: w.view(),
        x: x.view(),
        dy: None,
        cfg: *cfg,
    };
    // The counters and the numbers are independent: a rayon join.
    let (counted, y) = rayon::join(
        || count(stats, cfg, (m, k, x.ncols()), Layer::Forward, &ops),
        || numbers::of(cfg).forward(w, x, cfg.rows()),
    );
    counted?;
    Ok(y)
}

/// The backward pass of `Y = W X` given dY: what [`crate::gemm::backward`]
/// returns, with the same counters added to `stats`. A float format's
/// stochastic update draws as an array fresh from reset does (see
/// [`backward_on`] for one whose generators have stepped before).
pub fn backward(
    stats: &mut Stats,
    cfg: &ArrayConfig,
    schedule: Backward,
    w: ArrayView2<i64>,
    x: ArrayView2<i64>,
    dy: ArrayView2<i64>,
    sink: DwSink,
) -> Result<BackwardResult, DriveError> {
    let mut gens = generators(cfg);
    backward_on(stats, cfg, &mut gens, schedule, w, x, dy, sink)
}

/// The stochastic-rounding generators of `cfg`'s PEs after reset (none
/// for a format that rounds its update to nearest).
pub fn generators(cfg: &ArrayConfig) -> Vec<StochasticBits> {
    numbers::of(cfg).generators(cfg.rows(), cfg.cols())
}

/// [`backward`] on an array whose PEs' generators are `gens` (from
/// [`generators`]), stepped as the array steps them.
#[allow(clippy::too_many_arguments)]
pub fn backward_on(
    stats: &mut Stats,
    cfg: &ArrayConfig,
    gens: &mut [StochasticBits],
    schedule: Backward,
    w: ArrayView2<i64>,
    x: ArrayView2<i64>,
    dy: ArrayView2<i64>,
    sink: DwSink,
) -> Result<BackwardResult, DriveError> {
    let (m, k) = w.dim();
    let n = x.ncols();
    gemm::check_backward(cfg, w, x, dy, sink)?;
    let ops = Views {
        w: w.view(),
        x: x.view(),
        dy: Some(dy.view()),
        cfg: *cfg,
    };
    // dX partial sums run east along a PE row, i.e. along M in tiles of
    // `cols`; dW accumulates in each PE over the whole stream, from 0 (a
    // tile's dw starts drained or cleared by UPDATE). The counters and the
    // two products are independent: rayon joins.
    let nums = numbers::of(cfg);
    let (counted, (dx, dw)) = rayon::join(
        || count(stats, cfg, (m, k, n), Layer::Backward(schedule, sink), &ops),
        || rayon::join(|| nums.dx(w, dy, cfg.cols()), || nums.dw(dy, x)),
    );
    counted?;
    Ok(match sink {
        DwSink::Drain => BackwardResult {
            dx,
            dw: Some(dw),
            w: None,
        },
        DwSink::Update { lr_shift } => BackwardResult {
            dx,
            dw: None,
            w: Some(nums.update(cfg, gens, w, dw.view(), lr_shift)),
        },
    })
}

/// The counters of [`forward`] on an M x K x N layer, without data:
/// checked ([`DriveError::Overflow`] when one exceeds `u64`).
pub fn count_forward(
    stats: &mut Stats,
    cfg: &ArrayConfig,
    (m, k, n): (usize, usize, usize),
) -> Result<(), DriveError> {
    count_shapes(stats, cfg, (m, k, n), Layer::Forward)
}

/// The counters of [`backward`] on an M x K x N layer, without data.
pub fn count_backward(
    stats: &mut Stats,
    cfg: &ArrayConfig,
    schedule: Backward,
    (m, k, n): (usize, usize, usize),
    sink: DwSink,
) -> Result<(), DriveError> {
    gemm::check_lr_shift(cfg, sink)?;
    count_shapes(stats, cfg, (m, k, n), Layer::Backward(schedule, sink))
}
