//! Activations are 4-D arrays `(C, N, H, W)`: channels, columns, height,
//! width. N is the batch, or time steps x batch (column `t * B + b`) for
//! spiking models, so that every layer but LIF can treat time like batch.
//! A dense activation is `(features, N, 1, 1)`, i.e. the `K x N` operand
//! of the array as it is.

use ndarray::{Array2, Array4, ArrayView2};

pub type Tensor<V> = Array4<V>;

/// The `C x N` matrix of a flat `(C, N, 1, 1)` tensor.
pub fn as_matrix<V: Copy>(t: &Tensor<V>) -> ArrayView2<'_, V> {
    let (c, n, h, w) = t.dim();
    debug_assert_eq!((h, w), (1, 1), "dense operands are flat");
    t.view()
        .into_shape_with_order((c, n))
        .expect("a standard-layout flat tensor is a matrix")
}

/// The flat tensor of a `C x N` matrix.
pub fn from_matrix<V: Copy>(m: Array2<V>) -> Tensor<V> {
    let (c, n) = m.dim();
    m.as_standard_layout()
        .to_owned()
        .into_shape_with_order((c, n, 1, 1))
        .expect("sizes agree")
}

/// `(C, N, H, W)` to `(C*H*W, N, 1, 1)` with feature index `(c*H + h)*W + w`.
pub fn flatten<V: Copy>(t: &Tensor<V>) -> Tensor<V> {
    let (c, n, h, w) = t.dim();
    let chw_n = t.view().permuted_axes([0, 2, 3, 1]);
    chw_n
        .as_standard_layout()
        .into_owned()
        .into_shape_with_order((c * h * w, n, 1, 1))
        .expect("sizes agree")
}

/// The inverse of [`flatten`] for an input of shape `(c, n, h, w)`.
pub fn unflatten<V: Copy>(t: &Tensor<V>, dims: (usize, usize, usize, usize)) -> Tensor<V> {
    let (c, n, h, w) = dims;
    let chwn = t
        .view()
        .into_shape_with_order((c, h, w, n))
        .expect("sizes agree")
        .permuted_axes([0, 3, 1, 2]);
    chwn.as_standard_layout().into_owned()
}
