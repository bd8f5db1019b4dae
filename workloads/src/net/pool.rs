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

/// Average pooling over `kh x kw` windows with stride `(sh, sw)`: each
/// output is the mean of its window ([`Arith::mean`]); the gradient of
/// each window's output is divided by the window size the same way and
/// added (saturating) onto every input of the window. Global average
/// pooling is the window of the whole map.
#[derive(Debug, Clone)]
pub struct AvgPool {
    /// `None` for global average pooling (the window is the input's size).
    pub window: Option<(usize, usize)>,
    /// Input dims, for the backward pass.
    cache: Option<Dims4>,
}

impl AvgPool {
    pub fn new(size: usize, stride: usize) -> Self {
        AvgPool {
            window: Some((size, stride)),
            cache: None,
        }
    }

    pub fn global() -> Self {
        AvgPool {
            window: None,
            cache: None,
        }
    }

    /// Window height and width, stride on both axes, for an `h x w` input.
    fn geometry(&self, h: usize, w: usize) -> (usize, usize, usize, usize) {
        match self.window {
            Some((k, s)) => (k, k, s, s),
            None => (h, w, h.max(1), w.max(1)),
        }
    }

    pub fn forward<A: Arith>(&mut self, ar: &A, x: &Tensor<A::V>, training: bool) -> Tensor<A::V> {
        let (c, n, h, w) = x.dim();
        let (kh, kw, sh, sw) = self.geometry(h, w);
        let (ho, wo) = ((h - kh) / sh + 1, (w - kw) / sw + 1);
        let mut window = Vec::with_capacity(kh * kw);
        let y = Array4::from_shape_fn((c, n, ho, wo), |(ci, b, oy, ox)| {
            window.clear();
            for i in 0..kh {
                for j in 0..kw {
                    window.push(x[[ci, b, oy * sh + i, ox * sw + j]]);
                }
            }
            ar.mean(&window, kh * kw)
        });
        if training {
            self.cache = Some((c, n, h, w));
        }
        y
    }

    pub fn backward<A: Arith>(&mut self, ar: &A, dy: &Tensor<A::V>) -> Option<Tensor<A::V>> {
        let (c, n, h, w) = self.cache.take()?;
        let (kh, kw, sh, sw) = self.geometry(h, w);
        let mut dx = Array4::from_elem((c, n, h, w), ar.zero());
        for ((ci, b, oy, ox), &g) in dy.indexed_iter() {
            let share = ar.mean(&[g], kh * kw);
            for i in 0..kh {
                for j in 0..kw {
                    let p = [ci, b, oy * sh + i, ox * sw + j];
                    dx[p] = ar.add(dx[p], share);
                }
            }
        }
        Some(dx)
    }
}
