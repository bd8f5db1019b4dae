//! A layer on an array without pipelining: for each weight tile in
//! turn, LOAD, the streaming passes, then DRAIN or UPDATE, each a driver
//! operation; the tile an UPDATE changed leaves during the next LOAD.

use super::layer::{tiles, BackwardResult, DwSink, Layers};
use crate::driver::{DriveError, Driver};
use crate::stats::{Counters, Phase};
use ndarray::{s, Array2, ArrayView2, ArrayViewMut2};
use sysgrad_config::Backward;
use sysgrad_isa::Mode;

/// The schedule of a `none` array.
pub(super) struct NoneLayers;

impl Layers for NoneLayers {
    /// `Y = W X` (W: M x K, X: K x N) as raw accumulators, M x N.
    fn forward(
        &self,
        drv: &mut Driver,
        w: ArrayView2<i64>,
        x: ArrayView2<i64>,
    ) -> Result<Array2<i64>, DriveError> {
        let (r, c) = (drv.array.rows(), drv.array.cols());
        let (m, k) = w.dim();
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

    /// The backward pass of `Y = W X` given dY (M x N): dX, and dW drained or
    /// applied in place. `schedule` picks interleaved or the sequential baseline.
    fn backward(
        &self,
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
}

/// Adds a tile's partial result into the accumulator buffer.
fn accumulate(
    drv: &mut Driver,
    phase: Phase,
    first: bool,
    dst: &mut ArrayViewMut2<i64>,
    part: ArrayView2<i64>,
    count_write: fn(&mut Counters) -> &mut u64,
) {
    let numbers = drv.cfg().numbers();
    dst.zip_mut_with(&part, |a, p| *a = super::acc_add(&numbers, *a, *p));
    let st = drv.stats.phase_mut(phase);
    let n = part.len() as u64;
    if first {
        *count_write(st) += n;
    } else {
        st.acc_reads += n;
        st.acc_writes += n;
    }
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
