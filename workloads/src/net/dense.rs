//! Fully connected layer `y = W x + b` on the array. The bias is the last
//! column of W and meets a constant-1 row appended to X, so the bias, its
//! gradient and its update all go through the PEs like any weight.

use super::activity::Activity;
use super::tensor::{as_matrix, from_matrix, Tensor};
use crate::arith::{Arith, Site};
use crate::error::{Result, WorkloadError};
use ndarray::{s, Array2, ArrayView2};

/// X with a row of ones below it (`K+1 x N`).
pub fn with_bias_row<A: Arith>(ar: &A, x: ArrayView2<A::V>) -> Array2<A::V> {
    let (k, n) = x.dim();
    let one = ar.quantize(1.0);
    let mut out = Array2::from_elem((k + 1, n), one);
    out.slice_mut(s![..k, ..]).assign(&x);
    out
}

/// Accumulators to data, element-wise.
pub fn requantize_all<A: Arith, D: ndarray::Dimension>(
    ar: &A,
    acc: ndarray::ArrayView<A::V, D>,
) -> ndarray::Array<A::V, D> {
    let mut out = acc.to_owned();
    ar.requantize_in_place(
        out.as_slice_mut()
            .expect("an owned array in standard layout"),
    );
    out
}

/// Which outputs of `y` the forward pass left pinned at the format's limit
/// ([`Arith::pinned`]), in `y`'s logical order; `None` when none is.
pub fn pinned_of<A: Arith>(ar: &A, y: &Array2<A::V>) -> Option<Vec<i8>> {
    let p: Vec<i8> = y.iter().map(|&v| ar.pinned(v)).collect();
    p.iter().any(|&v| v != 0).then_some(p)
}

/// `dy` (logical order as in the forward output) with the outward
/// gradients of pinned outputs dropped ([`Arith::unpin`]).
pub fn unpinned<A: Arith>(ar: &A, dy: ArrayView2<A::V>, pinned: Option<&[i8]>) -> Array2<A::V> {
    let mut d = dy.to_owned();
    if let Some(p) = pinned {
        ar.unpin(
            p,
            d.as_slice_mut().expect("an owned array in standard layout"),
        );
    }
    d
}

pub(crate) fn missing_forward(layer: usize) -> WorkloadError {
    WorkloadError::model(
        format!("layers[{layer}]"),
        "backward pass without a training forward pass",
    )
}

#[derive(Debug, Clone)]
pub struct Dense<V> {
    /// M x (K+1): weights, then the bias column.
    pub w: Array2<V>,
    pub velocity: Option<Array2<V>>,
    pub activity: Activity,
    x_aug: Option<Array2<V>>,
    /// The outputs the training forward pass pinned at the format's limit.
    pinned: Option<Vec<i8>>,
}

impl<V: Copy + PartialEq + Default> Dense<V> {
    pub fn new(w: Array2<V>, momentum: bool) -> Self {
        Dense {
            velocity: momentum.then(|| Array2::default(w.dim())),
            w,
            activity: Activity::default(),
            x_aug: None,
            pinned: None,
        }
    }

    pub fn forward<A: Arith<V = V>>(
        &mut self,
        ar: &mut A,
        site: Site,
        x: &Tensor<V>,
    ) -> Result<Tensor<V>> {
        let xm = as_matrix(x);
        let x_aug = with_bias_row(ar, xm);
        let y = ar.matmul_data(site, self.w.view(), x_aug.view())?;
        if site.training {
            let (zero, one) = (ar.zero(), ar.quantize(1.0));
            self.activity
                .count_inputs(xm.iter().copied(), zero, one, self.w.nrows());
            self.x_aug = Some(x_aug);
            self.pinned = pinned_of(ar, &y);
        }
        Ok(from_matrix(y))
    }

    /// dX of the input (`None` when `need_dx` is false: no earlier layer
    /// learns, so only the weights are updated).
    pub fn backward<A: Arith<V = V>>(
        &mut self,
        ar: &mut A,
        layer: usize,
        dy: &Tensor<V>,
        need_dx: bool,
    ) -> Result<Option<Tensor<V>>> {
        let x_aug = self.x_aug.take().ok_or_else(|| missing_forward(layer))?;
        let dym = unpinned(ar, as_matrix(dy), self.pinned.take().as_deref());
        let dym = dym.view();
        self.activity
            .count_gradients(dym.iter().copied(), ar.zero());
        let (w, v) = (&mut self.w, self.velocity.as_mut());
        if !need_dx {
            ar.backward_weights_only(layer, w, v, x_aug.view(), dym)?;
            return Ok(None);
        }
        let dx = ar.backward_data(layer, w, v, x_aug.view(), dym)?;
        let k = x_aug.nrows() - 1;
        Ok(Some(from_matrix(dx.slice(s![..k, ..]).to_owned())))
    }
}
