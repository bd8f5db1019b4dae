//! Layer-level products on the array: a layer larger than the array is cut
//! into `cols` x `rows` weight tiles (M x K); partial sums of tiles are
//! added in the accumulator buffer with the same rule as the PEs
//! ([`acc_add`]: saturating in fixed point, `add32` in floating point).
//!
//! Each pipelining schedules the tiles its own way behind one trait
//! (`layer.rs`, with the types both share): `none.rs` runs the driver's
//! tile operations one after the other, `dense.rs` queues the tiles on the
//! issue engine (`crate::issue`). The bits are the same; the cycles differ.

mod dense;
mod layer;
mod none;

use crate::driver::{DriveError, Driver};
use layer::Layers;
pub(crate) use layer::{check_backward, check_inner, check_lr_shift};
pub use layer::{tiles, BackwardResult, DwSink};
use ndarray::{Array2, ArrayView2};
use sysgrad_config::{fixed, float, ArrayConfig, Backward, Numbers, Pipelining};

/// The accumulator buffer's add of a tile's partial result `p` into `a`
/// (the PEs' accumulate): `sat(a + p, AW)` in fixed point, `add32` in
/// floating point (`docs/ARCHITECTURE.md`, Sum orders).
#[inline]
pub(crate) fn acc_add(numbers: &Numbers, a: i64, p: i64) -> i64 {
    match numbers {
        Numbers::Fixed(f) => fixed::acc_add(a, p, f.widths.acc_bits),
        Numbers::Float(_) => i64::from(float::add32(a as u32, p as u32)),
    }
}

/// The schedule of `cfg`'s pipelining.
fn layers(cfg: &ArrayConfig) -> &'static dyn Layers {
    match cfg.pipelining() {
        Pipelining::None => &none::NoneLayers,
        Pipelining::Dense => &dense::DenseLayers,
    }
}

/// `Y = W X` (W: M x K, X: K x N) as raw accumulators, M x N.
pub fn forward(
    drv: &mut Driver,
    w: ArrayView2<i64>,
    x: ArrayView2<i64>,
) -> Result<Array2<i64>, DriveError> {
    check_inner("X rows", x.nrows(), w.ncols())?;
    layers(&drv.cfg()).forward(drv, w, x)
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
    check_backward(&drv.cfg(), w, x, dy, sink)?;
    layers(&drv.cfg()).backward(drv, schedule, w, x, dy, sink)
}
