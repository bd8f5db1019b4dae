//! 2-D convolution lowered to one GEMM by im2col: the `(C*k*k + 1) x
//! (N*Ho*Wo)` patch matrix (plus the bias row of ones) is streamed through
//! the `Co x (C*k*k + 1)` weights. The backward pass is one interleaved
//! product on the same operands (dX of the patch matrix and dW together);
//! the host scatters dX back onto the image (col2im) in accumulator
//! precision and requantizes once.

use super::activity::Activity;
use super::dense::{missing_forward, pinned_of, requantize_all, unpinned, with_bias_row};
use super::tensor::Tensor;
use crate::arith::{Arith, Site};
use crate::error::Result;
use ndarray::{s, Array2, Array4, ArrayView2, Axis};
use rayon::prelude::*;
use sysgrad_accel::conv::out_size;

/// Sizes of one convolution (square kernel, same stride and padding on both axes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ConvGeom {
    pub c_in: usize,
    pub h: usize,
    pub w: usize,
    pub kernel: usize,
    pub stride: usize,
    pub padding: usize,
}

impl ConvGeom {
    pub fn out_h(&self) -> usize {
        out_size(self.h, self.kernel, self.stride, self.padding)
    }
    pub fn out_w(&self) -> usize {
        out_size(self.w, self.kernel, self.stride, self.padding)
    }
    /// Rows of the patch matrix (without the bias row).
    pub fn patch_len(&self) -> usize {
        self.c_in * self.kernel * self.kernel
    }

    /// Input pixel `(y, x)` read by kernel tap `(i, j)` at output `(oy, ox)`,
    /// or `None` in the zero padding.
    fn source(&self, oy: usize, ox: usize, i: usize, j: usize) -> Option<(usize, usize)> {
        let y = (oy * self.stride + i).checked_sub(self.padding)?;
        let x = (ox * self.stride + j).checked_sub(self.padding)?;
        (y < self.h && x < self.w).then_some((y, x))
    }
}

/// The patch matrix of `x` (C, N, H, W): row `(c*k + i)*k + j`, column
/// `(n*Ho + oy)*Wo + ox`. Rows are filled on rayon's threads.
pub fn im2col<V: Copy + Send + Sync>(g: &ConvGeom, x: &Tensor<V>, zero: V) -> Array2<V> {
    let n = x.dim().1;
    let (ho, wo, k) = (g.out_h(), g.out_w(), g.kernel);
    let mut cols = Array2::from_elem((g.patch_len(), n * ho * wo), zero);
    cols.axis_iter_mut(Axis(0))
        .into_par_iter()
        .enumerate()
        .for_each(|(row, mut out)| {
            let (c, i, j) = (row / (k * k), row / k % k, row % k);
            for b in 0..n {
                for oy in 0..ho {
                    for ox in 0..wo {
                        if let Some((y, xx)) = g.source(oy, ox, i, j) {
                            out[(b * ho + oy) * wo + ox] = x[[c, b, y, xx]];
                        }
                    }
                }
            }
        });
    cols
}

/// Adds every patch-matrix entry back onto the pixel it came from; each
/// input channel on one of rayon's threads (the adds into a pixel keep
/// their order, so saturating adds give the same result on any number of
/// threads).
pub fn col2im<V: Copy + Send + Sync>(
    g: &ConvGeom,
    cols: ArrayView2<V>,
    n: usize,
    zero: V,
    add: impl Fn(V, V) -> V + Sync,
) -> Tensor<V> {
    let (ho, wo, k) = (g.out_h(), g.out_w(), g.kernel);
    let mut x = Array4::from_elem((g.c_in, n, g.h, g.w), zero);
    x.axis_iter_mut(Axis(0))
        .into_par_iter()
        .enumerate()
        .for_each(|(c, mut xc)| {
            for i in 0..k {
                for j in 0..k {
                    let row = (c * k + i) * k + j;
                    for b in 0..n {
                        for oy in 0..ho {
                            for ox in 0..wo {
                                if let Some((y, xx)) = g.source(oy, ox, i, j) {
                                    let v = cols[[row, (b * ho + oy) * wo + ox]];
                                    xc[[b, y, xx]] = add(xc[[b, y, xx]], v);
                                }
                            }
                        }
                    }
                }
            }
        });
    x
}

#[derive(Debug, Clone)]
pub struct Conv2d<V> {
    pub geom: ConvGeom,
    /// Co x (C*k*k + 1): one filter per row, then its bias.
    pub w: Array2<V>,
    pub velocity: Option<Array2<V>>,
    pub activity: Activity,
    /// The patch matrix with its bias row, the image, and the batch size.
    cache: Option<(Array2<V>, Tensor<V>, usize)>,
    /// The outputs the training forward pass pinned at the format's limit.
    pinned: Option<Vec<i8>>,
}

impl<V: Copy + PartialEq + Default + Send + Sync> Conv2d<V> {
    pub fn new(geom: ConvGeom, w: Array2<V>, momentum: bool) -> Self {
        Conv2d {
            geom,
            velocity: momentum.then(|| Array2::default(w.dim())),
            w,
            activity: Activity::default(),
            cache: None,
            pinned: None,
        }
    }

    pub fn forward<A: Arith<V = V>>(
        &mut self,
        ar: &mut A,
        site: Site,
        x: &Tensor<V>,
    ) -> Result<Tensor<V>> {
        let n = x.dim().1;
        let patches = im2col(&self.geom, x, ar.zero());
        let cols = with_bias_row(ar, patches.view());
        let y = match ar.conv_forward(site, &self.geom, self.w.view(), x)? {
            Some(y) => y,
            None => ar.matmul_data(site, self.w.view(), cols.view())?,
        };
        if site.training {
            let (zero, one) = (ar.zero(), ar.quantize(1.0));
            self.activity
                .count_inputs(patches.iter().copied(), zero, one, self.w.nrows());
            self.cache = Some((cols, x.clone(), n));
            self.pinned = pinned_of(ar, &y);
        }
        let (co, ho, wo) = (self.w.nrows(), self.geom.out_h(), self.geom.out_w());
        Ok(y.into_shape_with_order((co, n, ho, wo))
            .expect("Co x (N*Ho*Wo) is (Co, N, Ho, Wo) in standard layout"))
    }

    /// dX of the input image (`None` when `need_dx` is false, e.g. for the
    /// first layer; the array computes it anyway, the host skips col2im).
    pub fn backward<A: Arith<V = V>>(
        &mut self,
        ar: &mut A,
        layer: usize,
        dy: &Tensor<V>,
        need_dx: bool,
    ) -> Result<Option<Tensor<V>>> {
        let (cols, image, n) = self.cache.take().ok_or_else(|| missing_forward(layer))?;
        let co = dy.dim().0;
        let dym = dy
            .view()
            .into_shape_with_order((co, dy.len() / co))
            .expect("(Co, N, Ho, Wo) is Co x (N*Ho*Wo)");
        let dym = unpinned(ar, dym, self.pinned.take().as_deref());
        let dym = dym.view();
        self.activity
            .count_gradients(dym.iter().copied(), ar.zero());
        let (w, velocity) = (&mut self.w, self.velocity.as_mut());
        if let Some(dx) = ar.conv_backward(layer, &self.geom, w, velocity, &image, dym, need_dx)? {
            let g = &self.geom;
            return Ok(dx.map(|dx| {
                dx.into_shape_with_order((g.c_in, n, g.h, g.w))
                    .expect("c_in x (n h w) is (c_in, n, h, w) in standard layout")
            }));
        }
        if !need_dx {
            ar.backward_weights_only(layer, &mut self.w, self.velocity.as_mut(), cols.view(), dym)?;
            return Ok(None);
        }
        let dcols = ar.backward(layer, &mut self.w, self.velocity.as_mut(), cols.view(), dym)?;
        let p = self.geom.patch_len();
        let acc = col2im(
            &self.geom,
            dcols.slice(s![..p, ..]),
            n,
            ar.zero(),
            ar.acc_adder(),
        );
        Ok(Some(requantize_all(ar, acc.view())))
    }
}
