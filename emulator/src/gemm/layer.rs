//! What both schedules of a layer share: where dW goes, what a backward
//! pass returns, how a dimension is cut into tiles, the checks made before
//! the array is touched, and the [`Layers`] trait each pipelining's
//! schedule implements (`none.rs`, `dense.rs`).

use crate::driver::{DriveError, Driver};
use ndarray::{Array2, ArrayView2};
use sysgrad_config::{ArrayConfig, Backward};

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

/// A layer's products on one pipelining's array, with operands whose
/// inner dimensions (and, for a backward pass, `lr_shift`) are checked.
pub(crate) trait Layers {
    /// `Y = W X` (W: M x K, X: K x N) as raw accumulators, M x N.
    fn forward(
        &self,
        drv: &mut Driver,
        w: ArrayView2<i64>,
        x: ArrayView2<i64>,
    ) -> Result<Array2<i64>, DriveError>;

    /// The backward pass of `Y = W X` given dY (M x N).
    fn backward(
        &self,
        drv: &mut Driver,
        schedule: Backward,
        w: ArrayView2<i64>,
        x: ArrayView2<i64>,
        dy: ArrayView2<i64>,
        sink: DwSink,
    ) -> Result<BackwardResult, DriveError>;
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
