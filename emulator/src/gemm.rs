//! Layer-level products on the array: a layer larger than the array is cut
//! into `cols` x `rows` weight tiles (M x K); partial sums of tiles are
//! added in the accumulator buffer with the same saturating rule as the PEs.

use crate::driver::{DriveError, Driver};
use crate::stats::Phase;
use ndarray::{s, Array2, ArrayView2};
use sysgrad_config::{fixed, ArrayConfig, Backward};
use sysgrad_isa::Mode;

/// Where the weight gradient goes after the backward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DwSink {
    /// Shift dW out of the array (e.g. for an optimizer on the host).
    Drain,
    /// Update W in place with `W -= 2^-lr_shift dW` and store it back.
    Update { lr_shift: u32 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackwardResult {
    /// dX = W^T dY, K x N raw accumulators.
    pub dx: Array2<i64>,
    /// dW = dY X^T, M x K raw accumulators, with [`DwSink::Drain`].
    pub dw: Option<Array2<i64>>,
    /// The updated weights, M x K, with [`DwSink::Update`].
    pub w: Option<Array2<i64>>,
}

/// The (start, len) of each tile of a dimension of size `n` cut by `step`.
pub fn tiles(n: usize, step: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..n).step_by(step).map(move |s| (s, step.min(n - s)))
}

pub(crate) fn check_inner(
    what: &'static str,
    got: usize,
    expected: usize,
) -> Result<(), DriveError> {
    if got != expected {
        return Err(DriveError::StreamLength {
            what,
            got,
            expected,
        });
    }
    Ok(())
}

/// Adds a tile's partial result into the accumulator buffer.
fn accumulate(
    drv: &mut Driver,
    phase: Phase,
    first: bool,
    dst: &mut ndarray::ArrayViewMut2<i64>,
    part: ArrayView2<i64>,
    count_write: fn(&mut crate::stats::Counters) -> &mut u64,
) {
    let aw = drv.cfg().format().acc_bits;
    dst.zip_mut_with(&part, |a, p| *a = fixed::acc_add(*a, *p, aw));
    let st = drv.stats.phase_mut(phase);
    let n = part.len() as u64;
    if first {
        *count_write(st) += n;
    } else {
        st.acc_reads += n;
        st.acc_writes += n;
    }
}

/// `Y = W X` (W: M x K, X: K x N) as raw accumulators, M x N.
pub fn forward(
    drv: &mut Driver,
    w: ArrayView2<i64>,
    x: ArrayView2<i64>,
) -> Result<Array2<i64>, DriveError> {
    let (r, c) = (drv.array.rows(), drv.array.cols());
    let (m, k) = w.dim();
    check_inner("X rows", x.nrows(), k)?;
    if drv.cfg().dense() {
        return crate::dense_gemm::forward(drv, w, x);
    }
    let mut y = Array2::zeros((m, x.ncols()));
    for (m0, mt) in tiles(m, c) {
        for (k0, kt) in tiles(k, r) {
            drv.load(w.slice(s![m0..m0 + mt, k0..k0 + kt]))?;
            let part = drv.forward(x.slice(s![k0..k0 + kt, ..]))?;
            let mut dst = y.slice_mut(s![m0..m0 + mt, ..]);
            accumulate(
                drv,
                Phase::Forward,
                k0 == 0,
                &mut dst,
                part.slice(s![..mt, ..]),
                |c| &mut c.y_writes,
            );
        }
    }
    Ok(y)
}

/// The checks a backward pass makes before it touches the array: the inner
/// dimensions agree and the learning-rate shift fits its port.
pub(crate) fn check_backward(
    cfg: &ArrayConfig,
    w: ArrayView2<i64>,
    x: ArrayView2<i64>,
    dy: ArrayView2<i64>,
    sink: DwSink,
) -> Result<(), DriveError> {
    check_inner("X rows", x.nrows(), w.ncols())?;
    check_inner("dY rows", dy.nrows(), w.nrows())?;
    check_inner("dY columns", dy.ncols(), x.ncols())?;
    check_lr_shift(cfg, sink)
}

/// The learning-rate shift of an update must be one the array accepts
/// ([`ArrayConfig::accepts_lr_shift`]).
pub(crate) fn check_lr_shift(cfg: &ArrayConfig, sink: DwSink) -> Result<(), DriveError> {
    match sink {
        DwSink::Update { lr_shift } if !cfg.accepts_lr_shift(lr_shift) => {
            Err(DriveError::LrShift(lr_shift))
        }
        _ => Ok(()),
    }
}

/// The backward pass of `Y = W X` given dY (M x N): dX, and dW drained or
/// applied in place. `schedule` picks interleaved or the sequential baseline.
pub fn backward(
    drv: &mut Driver,
    schedule: Backward,
    w: ArrayView2<i64>,
    x: ArrayView2<i64>,
    dy: ArrayView2<i64>,
    sink: DwSink,
) -> Result<BackwardResult, DriveError> {
    let (r, c) = (drv.array.rows(), drv.array.cols());
    let (m, k) = w.dim();
    let n = x.ncols();
    check_backward(&drv.cfg(), w, x, dy, sink)?;
    if drv.cfg().dense() {
        return crate::dense_gemm::backward(drv, schedule, w, x, dy, sink);
    }
    let mut dx = Array2::zeros((k, n));
    let mut dw = matches!(sink, DwSink::Drain).then(|| Array2::zeros((m, k)));
    let mut w_new = matches!(sink, DwSink::Update { .. }).then(|| Array2::zeros((m, k)));
    // The tile whose updated weights are still in the array.
    let mut pending: Option<(usize, usize, usize, usize)> = None;

    for (m0, mt) in tiles(m, c) {
        for (k0, kt) in tiles(k, r) {
            let old = drv.load(w.slice(s![m0..m0 + mt, k0..k0 + kt]))?;
            store(drv, &mut w_new, pending.take(), &old);
            let dy_t = dy.slice(s![m0..m0 + mt, ..]);
            let x_t = x.slice(s![k0..k0 + kt, ..]);
            let (part, phase) = match schedule {
                Backward::Interleaved => (
                    drv.backward(Mode::BwdIl, dy_t, Some(x_t))?,
                    Phase::BackwardInterleaved,
                ),
                Backward::Sequential => {
                    let part = drv.backward(Mode::BwdDx, dy_t, None)?;
                    drv.backward(Mode::BwdDw, dy_t, Some(x_t))?;
                    (part, Phase::BackwardDx)
                }
            };
            let part = part.expect("dX modes return dX");
            let mut dst = dx.slice_mut(s![k0..k0 + kt, ..]);
            accumulate(
                drv,
                phase,
                m0 == 0,
                &mut dst,
                part.slice(s![..kt, ..]),
                |c| &mut c.dx_writes,
            );
            match sink {
                DwSink::Drain => {
                    let tile = drv.drain();
                    if let Some(dw) = &mut dw {
                        dw.slice_mut(s![m0..m0 + mt, k0..k0 + kt])
                            .assign(&tile.slice(s![..mt, ..kt]));
                    }
                }
                DwSink::Update { lr_shift } => {
                    drv.update(lr_shift)?;
                    pending = Some((m0, mt, k0, kt));
                }
            }
        }
    }
    if pending.is_some() {
        // Shift the last updated tile out by loading zeros.
        let zeros = Array2::zeros((0, 0));
        let old = drv.load(zeros.view())?;
        store(drv, &mut w_new, pending, &old);
    }
    Ok(BackwardResult { dx, dw, w: w_new })
}

/// Writes the weights that a LOAD shifted out back to the weight buffer.
fn store(
    drv: &mut Driver,
    w_new: &mut Option<Array2<i64>>,
    tile: Option<(usize, usize, usize, usize)>,
    old: &Array2<i64>,
) {
    if let (Some(w_new), Some((m0, mt, k0, kt))) = (w_new, tile) {
        w_new
            .slice_mut(s![m0..m0 + mt, k0..k0 + kt])
            .assign(&old.slice(s![..mt, ..kt]));
        drv.stats.phase_mut(Phase::Load).w_writes += (mt * kt) as u64;
    }
}
