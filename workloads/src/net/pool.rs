//! Host-side layers without weights: ReLU and max pooling. They only
//! compare and move values, so they are exact in either number system.

use super::tensor::Tensor;
use crate::arith::Arith;
use ndarray::Array4;

#[derive(Debug, Clone, Default)]
pub struct Relu {
    mask: Option<Array4<bool>>,
}

impl Relu {
    pub fn forward<A: Arith>(&mut self, ar: &A, x: &Tensor<A::V>, training: bool) -> Tensor<A::V> {
        let zero = ar.zero();
        if training {
            self.mask = Some(x.mapv(|v| v > zero));
        }
        x.mapv(|v| if v > zero { v } else { zero })
    }

    pub fn backward<A: Arith>(&mut self, ar: &A, dy: &Tensor<A::V>) -> Option<Tensor<A::V>> {
        let mask = self.mask.take()?;
        let mut dx = dy.clone();
        dx.zip_mut_with(&mask, |d, &m| {
            if !m {
                *d = ar.zero()
            }
        });
        Some(dx)
    }
}

/// Dims of a `(C, N, H, W)` tensor.
pub type Dims4 = (usize, usize, usize, usize);

#[derive(Debug, Clone)]
pub struct MaxPool {
    pub size: usize,
    pub stride: usize,
    /// Input dims and, per output, the flat input index of its maximum.
    cache: Option<(Dims4, Vec<usize>)>,
}

impl MaxPool {
    pub fn new(size: usize, stride: usize) -> Self {
        MaxPool {
            size,
            stride,
            cache: None,
        }
    }

    fn out(&self, n: usize) -> usize {
        (n - self.size) / self.stride + 1
    }

    pub fn forward<A: Arith>(&mut self, x: &Tensor<A::V>, training: bool) -> Tensor<A::V> {
        let (c, n, h, w) = x.dim();
        let (ho, wo) = (self.out(h), self.out(w));
        let mut y = Array4::default((c, n, ho, wo));
        let mut arg = Vec::with_capacity(y.len());
        for ((ci, b, oy, ox), out) in y.indexed_iter_mut() {
            // The first maximum in row-major window order wins ties.
            let mut best = (oy * self.stride, ox * self.stride);
            for i in 0..self.size {
                for j in 0..self.size {
                    let p = (oy * self.stride + i, ox * self.stride + j);
                    if x[[ci, b, p.0, p.1]] > x[[ci, b, best.0, best.1]] {
                        best = p;
                    }
                }
            }
            *out = x[[ci, b, best.0, best.1]];
            arg.push(((ci * n + b) * h + best.0) * w + best.1);
        }
        if training {
            self.cache = Some(((c, n, h, w), arg));
        }
        y
    }

    pub fn backward<A: Arith>(&mut self, ar: &A, dy: &Tensor<A::V>) -> Option<Tensor<A::V>> {
        let (dims, arg) = self.cache.take()?;
        let mut dx = Array4::from_elem(dims, ar.zero());
        let flat = dx.as_slice_mut().expect("fresh arrays are contiguous");
        for (&i, &g) in arg.iter().zip(dy.iter()) {
            // Overlapping windows (stride < size) can pick the same input twice.
            flat[i] = ar.add(flat[i], g);
        }
        Some(dx)
    }
}
